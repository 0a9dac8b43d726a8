"""`invoke run`: boot a built board's firmware in QEMU and wait for it to finish.

The run returns once the guest powers off (PSCI SYSTEM_OFF makes QEMU exit 0), or — for a guest
that never powers off, such as an MCU idling in WFI — once the UART printed a line matching the
board's `qemu.ready` regular expression (or the caller's `until`); QEMU is stopped then. Neither
in time is an error. The command line is seedfw.run.qemu's "firmware" mode.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..errors import SeedfwError
from . import qemu
from .target import Target


@dataclass
class RunResult:
    returncode: int | None           # QEMU's exit status; None when it was stopped at the ready line
    seconds: float
    lines: list[str] = field(default_factory=list)
    log: Path | None = None
    ready_line: str | None = None    # the UART line that matched the ready expression, if one did
    notes: list[str] = field(default_factory=list)   # e.g. booted from a flashed drive


def ready_pattern(board, until: str | None = None) -> re.Pattern | None:
    """`until` (from the command line) or the board's `qemu.ready`, compiled; None when neither."""
    text, file, where = until, None, "--until"
    if until is None:
        text, file, where = (board.qemu or {}).get("ready"), board.dir / "board.yaml", "qemu.ready"
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise SeedfwError(f"'{text}' is not a valid regular expression: {exc}", file, where) from None


def flashed_notes(board, outdir: Path) -> list[str]:
    """One line per flashed drive this run boots from (seedfw.flash.qemu_drive), saying when the
    build has changed since it was programmed."""
    from ..flash import qemu_drive

    return [qemu_drive.describe(board, outdir, name) for name in qemu.flashed(board, outdir)]


def run(board, outdir: Path, timeout: float = 30.0, log: Path | None = None,
        echo: Callable[[str], None] | None = None, extra_args: Iterable[str] = (),
        until: str | None = None) -> RunResult:
    """Boot the board's image and wait for the guest to power off or print its ready line.

    The UART goes line by line to `log` (default <out>/logs/run.log) and to `echo` (default: stdout;
    pass `lambda s: None` to keep quiet). `until` (a regular expression) overrides the board's
    `qemu.ready`; when one is in effect, the first UART line it matches (re.search) ends the run
    successfully and QEMU is stopped, and a guest that powers off without printing such a line is
    an error. Raises SeedfwError when neither happens within `timeout` seconds or QEMU exits
    non-zero.
    """
    outdir = Path(outdir)
    ready = ready_pattern(board, until)
    log = Path(log) if log else outdir / "logs" / "run.log"
    echo = echo or (lambda s: (sys.stdout.write(s + "\n"), sys.stdout.flush()))
    cmd = qemu.command(board, outdir, "firmware", extra=extra_args)
    notes = flashed_notes(board, outdir)
    for note in notes:
        echo(note)
    started = time.monotonic()
    matched = None
    with Target(cmd, board, log, echo) as target:      # QEMU never outlives this block
        if ready is not None:
            matched = target.wait_line(ready, timeout)
        else:
            target.wait_end(timeout)
        if matched is None and not target.ended:
            wanted = "power off" if ready is None else \
                f"power off or print a line matching '{ready.pattern}'"
            raise SeedfwError(f"guest did not {wanted} within {timeout:g} s", log)
        if matched is not None:
            target.stop()
        target.reap(5)
    stopped_at_ready = target.stopped
    seconds = time.monotonic() - started
    lines = target.lines
    returncode = target.returncode
    if matched and (stopped_at_ready or returncode == 0):
        return RunResult(None if stopped_at_ready else 0, seconds, lines, log, matched, notes)
    if returncode != 0:
        err = SeedfwError(f"QEMU exited with status {returncode}", log)
        err.tail = lines[-30:]
        raise err
    if ready is not None:
        err = SeedfwError(f"guest powered off without printing a line matching '{ready.pattern}'", log)
        err.tail = lines[-30:]
        raise err
    return RunResult(returncode, seconds, lines, log, notes=notes)
