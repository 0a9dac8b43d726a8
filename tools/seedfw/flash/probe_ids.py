"""Probe unique ids, checked before anything is started or pyOCD is imported.

Forms (pyOCD's, plus ours):
  qemu:auto        start QEMU on a loopback port for the duration of the task (seedfw)
  qemu:HOST:PORT   a running QEMU's GDB stub (the `qemu` pyOCD probe plug-in)
  TYPE:ID          a pyOCD probe of type TYPE (cmsisdap, stlink, jlink, …) with unique id ID
  ID               a pyOCD probe unique id (serial number) of any type

Why check here: pyOCD answers a malformed `qemu:` id with "probe not found" and an unknown type
with an exception that the flash runner can only attribute to the image; a mistyped id deserves
its own line naming --probe. The known types come from the `pyocd.probe` entry points, read from
package metadata, so the check costs no pyOCD import.
"""

from __future__ import annotations

from ..errors import SeedfwError


def parse_qemu_uid(uid: str) -> tuple[str, int]:
    """`HOST:PORT` (optionally prefixed by `qemu:`) -> (host, port); ValueError otherwise."""
    text = uid[5:] if uid.lower().startswith("qemu:") else uid
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"qemu probe id must be qemu:HOST:PORT, got '{uid}'")
    return host, int(port)


def probe_types() -> list[str]:
    """pyOCD probe types installed here (entry point group `pyocd.probe`)."""
    from importlib.metadata import entry_points

    return sorted({ep.name.lower() for ep in entry_points(group="pyocd.probe")})


def check_probe_uid(uid: str, field: str = "--probe", file=None) -> str:
    """Return `uid` unchanged when it has one of the forms above; SeedfwError otherwise."""
    text = uid.strip()
    if not text:
        raise SeedfwError("empty probe id", file, field)
    kind, sep, rest = text.partition(":")
    if not sep:
        return uid                              # a bare pyOCD unique id (probe serial number)
    if kind.lower() == "qemu":
        if rest.lower() == "auto":
            return uid
        try:
            parse_qemu_uid(text)
        except ValueError:
            raise SeedfwError(f"'{uid}' is not a QEMU probe id (expected qemu:auto or "
                              "qemu:HOST:PORT with a numeric port)", file, field) from None
        return uid
    known = probe_types()
    if kind.lower() not in known:
        raise SeedfwError(f"unknown probe type '{kind}' in '{uid}' (known: {', '.join(known)})",
                          file, field)
    if not rest:
        raise SeedfwError(f"'{uid}' names no probe after '{kind}:'", file, field)
    return uid
