"""U-Boot environment images: written (the disk's default env) and read back (`invoke inspect`).

Format (U-Boot env/common.c, tools/env/fw_env.c): a 4-byte little-endian CRC-32 (zlib's) of the
data area, then, for a redundant environment, one flag byte (the copy with the higher flag is
current), then the data area: "name=value" strings, each NUL-terminated, an empty string ends
them, the rest up to the env size is padding (0x00 here, as U-Boot's own saveenv leaves it). The
CRC covers the whole data area including the padding, so the size must be U-Boot's
CONFIG_ENV_SIZE exactly.

Why seedfw writes one: a disk without a valid env makes U-Boot print "*** Warning - bad CRC,
using default environment" on every good boot (issue 34), and fw_printenv on the target refuses
an env whose CRC is bad — the boot counter could then never be read or written from Linux.

The reader is for outside bytes: it goes through seedfw.reading (bounded View), caps the
variable count, and a wrong CRC, a missing terminator or a non-UTF-8 name is one SeedfwError
naming the file and the field.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from ..errors import SeedfwError
from .. import reading

MAX_ENV_SIZE = 1 << 20        # U-Boot's environments are KiBs; refuse anything over 1 MiB
MAX_VARS = 4096
_NAME_OK = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-:")


@dataclass(frozen=True)
class Env:
    vars: dict[str, str]
    size: int
    crc: int
    redundant: bool
    flag: int | None = None


def encode(variables: dict[str, str], size: int, redundant: bool = False, flag: int = 1) -> bytes:
    """The env image of `size` bytes (CRC + [flag] + data). A variable that does not fit, a name
    with '=' or a value with NUL is an error: U-Boot would read something else back."""
    head = 5 if redundant else 4
    body = bytearray()
    for name, value in variables.items():
        if not name or any(c not in _NAME_OK for c in name.encode()):
            raise SeedfwError(f"U-Boot env variable name '{reading.plain(name)}' is not "
                              "[A-Za-z0-9_.:-]+", field=name)
        if "\0" in value:
            raise SeedfwError("U-Boot env value holds a NUL byte", field=name)
        body += f"{name}={value}".encode() + b"\0"
    body += b"\0"
    if len(body) > size - head:
        raise SeedfwError(f"the U-Boot environment needs {len(body)} bytes, more than the "
                          f"{size - head} of an env of {size} bytes", field="env size")
    data = bytes(body.ljust(size - head, b"\0"))
    crc = struct.pack("<I", zlib.crc32(data))
    return crc + (bytes([flag]) if redundant else b"") + data


def decode(buf, source=None, redundant: bool = False) -> Env:
    """Parse an env image; the CRC is checked first (a bad CRC is U-Boot's "bad CRC")."""
    view = reading.View.of(buf, source=source, what="U-Boot env")
    size = len(view)
    head = 5 if redundant else 4
    if size <= head + 1:
        view.fail("size", f"U-Boot env: {size} bytes is too small for an environment")
    if size > MAX_ENV_SIZE:
        view.fail("size", f"U-Boot env: {size} bytes is over the {MAX_ENV_SIZE} bytes seedfw "
                          "reads")
    want = struct.unpack("<I", view.bytes(0, 4, "crc"))[0]
    data = view.bytes(head, size - head, "data")
    got = zlib.crc32(data)
    if got != want:
        view.fail("crc", f"U-Boot env: CRC-32 0x{got:08x} of the {size - head} data bytes is not "
                         f"the stored 0x{want:08x} (U-Boot says 'bad CRC' and uses its default)")
    out: dict[str, str] = {}
    at = 0
    while True:
        end = data.find(b"\0", at)
        if end < 0:
            view.fail(f"offset 0x{head + at:x}", "U-Boot env: variable without its NUL terminator")
        if end == at:                   # the empty string: end of the variables
            break
        if len(out) >= MAX_VARS:
            view.fail(f"offset 0x{head + at:x}", f"U-Boot env: more than {MAX_VARS} variables")
        entry = data[at:end]
        name, eq, value = entry.partition(b"=")
        field = f"offset 0x{head + at:x}"
        if not eq or not name:
            view.fail(field, f"U-Boot env: '{reading.escaped_name(entry[:40])}' is not name=value")
        try:
            out[name.decode("utf-8")] = value.decode("utf-8")
        except UnicodeDecodeError:
            view.fail(field, "U-Boot env: a variable is not UTF-8")
        at = end + 1
    return Env(out, size, want, redundant, data_flag(view) if redundant else None)


def data_flag(view) -> int:
    return view.bytes(4, 1, "flag")[0]


def looks_like_env(view, redundant: bool = False) -> bool:
    """A file is an env image when its first 4 bytes are the CRC of the rest (no magic exists;
    a redundant copy's CRC starts after its flag byte)."""
    n, head = len(view), 5 if redundant else 4
    if n < 8 or n > MAX_ENV_SIZE:
        return False
    return struct.unpack("<I", view.bytes(0, 4))[0] == zlib.crc32(view.bytes(head, n - head))


def boot_vars(slots: tuple[str, ...], attempts: int) -> dict[str, str]:
    """The counters RAUC's uboot backend reads and writes (BOOT_ORDER, BOOT_<x>_LEFT)."""
    out = {"BOOT_ORDER": " ".join(slots)}
    out.update({f"BOOT_{s}_LEFT": str(attempts) for s in slots})
    return out


def default_env(plan, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The factory environment of an A/B disk (seedfw.update.slots.Plan): slot A is what was
    flashed and counts as confirmed (seedfw_good=A), both counters full, the slots' PARTUUIDs
    for firmware/uboot/rauc-bootcount.cmd. `extra`: the board's own variables (bootcmd, …)."""
    out = dict(extra or {})
    out.update(boot_vars(plan.bootnames, plan.attempts))
    out.update({"seedfw_good": plan.bootnames[0], "seedfw_attempts": str(plan.attempts)})
    out.update({f"seedfw_root_{s.bootname}": s.partuuid for s in plan.slots})
    return out


def copies(plan) -> list[tuple[int, bytes]]:
    """(device offset, bytes) of each raw copy of the factory env (the disk part writes them):
    the first current (flag 1), a redundant second obsolete (flag 0), the same variables;
    [] for a FAT place (a file, not raw copies)."""
    place = plan.env
    if place.kind != "raw":
        return []
    variables = default_env(plan)
    red = place.redundant_offset is not None
    out = [(place.offset, encode(variables, place.size, red, 1))]
    if red:
        out.append((place.redundant_offset, encode(variables, place.size, True, 0)))
    return out


def image(plan, extra: dict[str, str] | None = None) -> bytes:
    """The env image for the plan's env place (redundant on a raw place with a second copy)."""
    place = plan.env
    return encode(default_env(plan, extra), place.size,
                  redundant=place.kind == "raw" and place.redundant_offset is not None)
