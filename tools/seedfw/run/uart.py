"""The one UART pump: a thread reads a QEMU's stdout (the guest UART) and hands every line to the
log file, an echo callback and a list, and callers wait for a line, some text, or the end.

Why a thread: a pipe read cannot time out by itself, and a guest that stops printing must not
hang the caller. Why chunks rather than lines: a guest may print a prompt without a newline
("mcu: idle" before WFI); `wait_text` sees it, lines are still whole lines.

Bounded work: a line is at most MAX_LINE bytes (longer output is cut into MAX_LINE pieces, as a
terminal wraps it), so a guest that prints megabytes without a newline costs linear time and
no regex of a caller sees more than MAX_LINE; waits scan only what arrived since they last
looked. On close the log gets seedfw's capture record (seedfw.counters.provenance): a log
seedfw wrote from a QEMU it started is `emulated`, whatever its text claims.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
import time
from pathlib import Path
from typing import Callable

# QEMU's own note that we stopped it: not guest output.
QEMU_TERMINATING = re.compile(r"^qemu-system-\S+: terminating on signal \d+")
# QEMU's own messages (stderr shares the pipe), e.g. a "warning: ..." about the machine: kept in
# the log and `lines`, never taken for the guest's line by `wait_line`.
QEMU_MESSAGE = re.compile(r"^qemu-system-\S+: ")
MAX_LINE = 64 * 1024        # bytes of one line; longer output is cut into pieces of this size


def split_lines(partial: bytes, chunk: bytes) -> tuple[list[bytes], bytes]:
    """(whole lines, the unfinished rest) of `partial + chunk`, every piece <= MAX_LINE bytes
    (the rest is < MAX_LINE, so joining it to the next chunk stays linear)."""
    *whole, rest = (partial + chunk).split(b"\n")
    out = []
    for raw in whole:
        out += [raw[i:i + MAX_LINE] for i in range(0, max(len(raw), 1), MAX_LINE)]
    while len(rest) >= MAX_LINE:
        out.append(rest[:MAX_LINE])
        rest = rest[MAX_LINE:]
    return out, rest


class Uart:
    """Pump `proc.stdout` into `lines`, `log` (written as it arrives) and `echo`."""

    def __init__(self, proc, log: Path | None = None, echo: Callable[[str], None] | None = None,
                 append: bool = False, board: str | None = None):
        self.proc = proc
        self.board = board          # named in the capture record (the log's board)
        self.log = Path(log) if log else None
        self.echo = echo
        self.lines: list[str] = []
        self._partial = b""
        self._cond = threading.Condition(threading.RLock())   # text() inside a wait
        self._eof = False
        self._stopping = False
        self._file = None
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.log, "a" if append else "w")
            self._file.write(f"$ {shlex.join(str(a) for a in proc.args)}\n")
            self._file.flush()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    # -- the pump ----------------------------------------------------------------------------
    def _pump(self) -> None:
        fd = self.proc.stdout.fileno()
        try:
            while True:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                with self._cond:
                    whole, self._partial = split_lines(self._partial, chunk)
                    for raw in whole:
                        self._line(raw)
                    self._cond.notify_all()
        except OSError:
            pass                                # the pipe was closed under us: the end
        with self._cond:
            if self._partial:
                self._line(self._partial)
                self._partial = b""
            self._eof = True
            self._cond.notify_all()

    def _line(self, raw: bytes) -> None:
        text = raw.decode(errors="replace").rstrip("\r")
        if self._stopping and QEMU_TERMINATING.match(text):
            return
        self.lines.append(text)
        if self._file is not None:
            self._file.write(text + "\n")
            self._file.flush()
        if self.echo is not None:
            self.echo(text)

    # -- what callers ask ----------------------------------------------------------------------
    def text(self) -> str:
        """Everything so far, the unfinished last line included."""
        with self._cond:
            tail = self._partial.decode(errors="replace")
            return "".join(line + "\n" for line in self.lines) + tail

    @property
    def ended(self) -> bool:
        return self._eof

    def _wait(self, found: Callable[[], object], timeout: float):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                hit = found()
                if hit is not None or self._eof:
                    return hit
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.1))

    def wait_line(self, pattern: re.Pattern | str, timeout: float) -> str | None:
        """The first whole guest line (not QEMU's own message) matching `pattern` (re.search),
        once one arrived; None when the UART ended or `timeout` passed first (`ended` tells which)."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        seen = 0                    # each line is searched once, not once per wake-up

        def found():
            nonlocal seen
            for ln in self.lines[seen:]:
                seen += 1
                if rx.search(ln) and not QEMU_MESSAGE.match(ln):
                    return ln
            return None
        return self._wait(found, timeout)

    def wait_text(self, text: str, timeout: float) -> bool:
        """Whether `text` appeared (partial line included) within `timeout`."""
        seen, carry = 0, ""         # lines already looked at; the end of them a match may span

        def found():
            nonlocal seen, carry
            new = "".join(line + "\n" for line in self.lines[seen:])
            seen = len(self.lines)
            hay = carry + new
            if text in hay + self._partial.decode(errors="replace"):
                return True
            carry = hay[-len(text):] if text else ""
            return None
        return bool(self._wait(found, timeout))

    def wait_end(self, timeout: float) -> bool:
        """Whether the UART ended (QEMU exited) within `timeout`."""
        self._wait(lambda: None, timeout)
        return self._eof

    def stopping(self) -> None:
        """We are about to stop QEMU: its termination note is not guest output."""
        self._stopping = True

    def close(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)
        if self._file is not None:
            with self._cond:
                self._file.close()
                self._file = None
            from ..counters import provenance
            from ..errors import SeedfwError
            try:
                provenance.write_capture(self.log, "emulated", "UART of a QEMU that seedfw "
                                         "started", board=self.board or "",
                                         qemu_binary=str(self.proc.args[0]) if self.proc.args
                                         else "")
            except SeedfwError:     # a log over the log cap: nothing will read it as a log
                pass
