"""Where counter values came from: every `invoke counters --json` document says it.

A counters document is
    {"provenance": {...}, "settings": {...}, "readings": {...}}
readings: what was read back (the only part a report may call measured);
settings: the configuration the read used and identifiers of what was read (sampling interval,
          DDR type, ELF, block address, the firmware's declared counter frequency): not
          measurements, so the report lists them apart;
provenance.source:
  live      read from a real board's memory through a debug probe;
  recorded  register values replayed from a recording file; `recording` is that file's own
            provenance (who/where/when, `synthetic: true` for made-up values), or null when the
            file says nothing ("provenance unknown": never taken for live);
  emulated  read from a guest running in QEMU (version and machine given): the code ran, but
            cycle counts are an emulator's, not a chip's.

  recorded with `user_supplied: true`: a log file handed to seedfw (`--agent-log`) that seedfw
            did not capture: "recorded (user-supplied log)", whatever the text in it says.

Logs earn their provenance: seedfw writes a capture record `<log>.seedfw-capture.json` beside
every log it captures (a board's serial console: seedfw.run.console, `live`; a QEMU UART:
seedfw.run.uart, `emulated`) holding the log's size and sha256. `of_log` gives the record's
source only while the log still matches it; a log without a record, or edited since, is
user-supplied. The record is a claim seedfw makes, checked against the bytes so that an edited
log loses it — not a signature: someone who writes both files by hand can still lie.

`label(provenance)` is the short text shown next to the kind in reports and on the terminal,
e.g. "recorded, synthetic" or "emulated in QEMU 7.2.22, virt".
"""

from __future__ import annotations

import datetime
import functools
import re
import socket
import subprocess

SOURCES = ("live", "recorded", "emulated")
EMULATED_NOTE = ("cycle counts come from the emulator (instruction counting or the host clock), "
                 "not from a chip")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def _host() -> str:
    return socket.gethostname()


def shown_path(path) -> str:
    """A path relative to the seedfw tree when inside it (documents are compared across
    checkouts), else as given."""
    from pathlib import Path

    from ..paths import ROOT

    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


@functools.lru_cache(maxsize=4)
def qemu_version(binary: str | None) -> str | None:
    """'7.2.22' from `<binary> --version`, None when it cannot be run or parsed."""
    if not binary:
        return None
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"version (\d+(?:\.\d+)+)", out)
    return m.group(1) if m else None


def live(probe: str, target: str | None = None) -> dict:
    return {"source": "live", "how": "read from the board's memory through a debug probe (pyOCD)",
            "probe": probe, "target": target, "host": _host(), "when": now()}


def emulated(board, how: str, target: str | None = None, started: bool = True) -> dict:
    """`started`: this command started the QEMU (its version is the board's binary's); a QEMU
    someone else started is taken at its address and its version is not known."""
    # a board without a QEMU model whose OS image is proven on QEMU virt: that QEMU (qemu_os)
    q = board.qemu or board.raw.get("qemu_os") or {}
    version = qemu_version(q.get("binary")) if started else None
    return {"source": "emulated", "how": how, "emulator": "QEMU", "qemu_version": version,
            "qemu_binary": q.get("binary"), "machine": q.get("machine"), "cpu": q.get("cpu"),
            "started_by_seedfw": started, "target": target, "note": EMULATED_NOTE,
            "host": _host(), "when": now(),
            # the board's own OS image on QEMU virt: what is not the board goes with the figures
            **({"differs_from_board": dict(q["differs"])}
               if not board.qemu and q.get("differs") else {})}


def through_pyocd(board, uid: str, target: str | None, started_qemu: bool) -> dict:
    """A read through pyOCD: the qemu probe plug-in (qemu:HOST:PORT, or qemu:auto which started
    QEMU just now) is an emulator behind pyOCD, not a board, so only other probes are live."""
    if started_qemu or uid.lower().startswith("qemu:"):
        return emulated(board, "stats block read through pyOCD's qemu probe plug-in (QEMU's GDB "
                               "stub)", target=uid, started=started_qemu)
    return live(uid, target)


def recorded(path, recording: dict | None) -> dict:
    """`recording`: the recording file's own provenance (None: the file does not say)."""
    return {"source": "recorded",
            "how": "register values replayed from a recording file and decoded by seedfw",
            "file": shown_path(path), "recording": recording,
            "synthetic": None if recording is None else bool(recording.get("synthetic")),
            "host": _host(), "when": now()}


def label(prov: dict | None) -> str:
    """Short text for the kind column: 'live, probe X', 'recorded, synthetic', 'emulated in
    QEMU 7.2.22, virt', 'provenance unknown'."""
    if not isinstance(prov, dict) or prov.get("source") not in SOURCES:
        return "provenance unknown"
    src = prov["source"]
    if src == "live":
        if prov.get("serial"):
            return "live, serial console"
        return f"live, probe {prov['probe']}" if prov.get("probe") else "live"
    if src == "emulated":
        version = prov.get("qemu_version")
        text = f"emulated in QEMU {version}" if version else "emulated in QEMU (version unknown)"
        # the machine type without its options (virt,secure=on → virt); the detail keeps all
        machine = str(prov.get("machine") or "").split(",")[0]
        return text + (f", {machine}" if machine else "")
    if prov.get("user_supplied"):
        return USER_LOG
    rec = prov.get("recording")
    if not isinstance(rec, dict):
        return "recorded, provenance unknown"
    if rec.get("synthetic"):
        return "recorded, synthetic"
    where = f" on {rec['where']}" if rec.get("where") else ""
    when = f", {rec['when']}" if rec.get("when") else ""
    return f"recorded{where}{when}"


def is_synthetic(prov: dict | None) -> bool:
    return isinstance(prov, dict) and prov.get("source") == "recorded" and \
        isinstance(prov.get("recording"), dict) and bool(prov["recording"].get("synthetic"))


# ---- logs: capture records (see the module doc) ---------------------------------------------
USER_LOG = "recorded (user-supplied log)"
CAPTURE_SUFFIX = ".seedfw-capture.json"
CAPTURE_SOURCES = ("live", "emulated")


def capture_record(log):
    from pathlib import Path
    return Path(str(log) + CAPTURE_SUFFIX)


def write_capture(log, source: str, how: str, **detail) -> None:
    """Beside a log seedfw has just captured (and closed): who captured it and the log's size
    and sha256, so that `of_log` can tell the log is still what seedfw wrote."""
    from .. import util
    from ..reading import digest_file

    assert source in CAPTURE_SOURCES
    size, digest = digest_file(log, "log")
    util.write_json(capture_record(log), {"seedfw_capture": 1, "source": source, "how": how,
                                          "bytes": size, "sha256": digest, "host": _host(),
                                          "when": now(), **detail})


def user_log(path, note: str) -> dict:
    return {"source": "recorded", "label": USER_LOG, "user_supplied": True, "recording": None,
            "synthetic": None,
            "how": "read from a log file given to seedfw, which did not capture it: nothing "
                   "shows that it came from a board",
            "file": shown_path(path), "note": note, "host": _host(), "when": now()}


def _record(path) -> dict:
    """The capture record beside `path`, read through the door and checked field by field."""
    from ..errors import SeedfwError
    from ..reading import loads_json, read_bytes

    rec_path = capture_record(path)
    rec = loads_json(read_bytes(rec_path, "json"), rec_path)
    if not isinstance(rec, dict) or rec.get("seedfw_capture") != 1:
        raise SeedfwError("not a seedfw capture record (seedfw_capture: 1)", rec_path)
    if rec.get("source") not in CAPTURE_SOURCES:
        raise SeedfwError(f"must be one of {', '.join(CAPTURE_SOURCES)}", rec_path, "source")
    for key, kind in (("bytes", int), ("sha256", str), ("how", str), ("board", str)):
        if not isinstance(rec.get(key), kind) or isinstance(rec.get(key), bool):
            raise SeedfwError(f"must be a {kind.__name__}", rec_path, key)
    for key in ("host", "when", "device", "qemu_binary"):
        if not isinstance(rec.get(key, ""), str):
            raise SeedfwError("must be a string", rec_path, key)
    return rec


def of_log(board, path, sha256: str, how: str) -> dict:
    """The provenance a log earns (`sha256`: of its bytes as they were read): its capture
    record's source while the log matches the record's sha256, else recorded (user-supplied
    log)."""
    import os

    from ..errors import SeedfwError

    rec_path = capture_record(path)
    if not os.path.lexists(rec_path):
        return user_log(path, f"no seedfw capture record ({rec_path.name}) beside it")
    rec = _record(path)
    if rec["sha256"] != sha256:
        return user_log(path, f"the capture record {rec_path.name} does not match it (the log "
                              "changed after seedfw captured it)")
    if rec["board"] and rec["board"] != board.name:
        raise SeedfwError(f"captured from board '{rec['board']}', not '{board.name}'", rec_path,
                          "board")
    from ..reading import plain        # the record is a file too: shown escaped
    if rec["source"] == "emulated":
        prov = emulated(board, how + " (QEMU's emulated PMU); UART captured by seedfw")
    else:
        prov = {"source": "live", "how": how + " (on the board); " + plain(rec["how"]),
                "probe": None, "serial": plain(rec.get("device") or "") or True,
                "target": board.name, "host": plain(rec.get("host", "")),
                "when": plain(rec.get("when", ""))}
    prov["capture"] = shown_path(rec_path)
    return prov
