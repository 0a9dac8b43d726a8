"""One target lifecycle: start QEMU, pump its UART, stop it — always, whatever ends the `with`.

Every caller that boots a board (`invoke run`: seedfw.run.payload; the OS boot: run.os_boot;
the GDB-probe target: run.bench; the counters read-back: counters.readback) used to repeat
start → UART → stop with its own try/finally, and one of them waited for the UART outside it (a
Ctrl-C there left QEMU running). Now they write

    with Target(cmd, board, log=log, echo=echo) as t:
        t.wait_line(pattern, timeout)     # or wait_end / wait_text
        ...                               # t.stop() ends QEMU early (its note is not guest output)
    t.returncode, t.lines                 # QEMU's exit status (None: we stopped it), the UART

and leaving the block — normally, by an exception, a timeout the caller raises, or
KeyboardInterrupt — stops the process if it still runs (SIGTERM, then SIGKILL after `grace`),
reaps it, joins the UART pump (which writes the log's capture record) and closes the pipe.
(Not PR_SET_PDEATHSIG: it fires when the *thread* that started QEMU ends, and tune trials
start targets from worker threads.)
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Callable

from . import qemu
from .uart import Uart


class Target:
    """A QEMU started from `cmd` (seedfw.run.qemu.command) with its UART on `log`/`echo`."""

    def __init__(self, cmd: list[str], board=None, log: str | os.PathLike | None = None,
                 echo: Callable[[str], None] | None = None, append: bool = False,
                 grace: float = 2.0):
        self.cmd = [str(c) for c in cmd]
        self.board = board
        self.log = Path(log) if log is not None else None
        self.echo = echo
        self.append = append
        self.grace = grace
        self.proc: subprocess.Popen | None = None
        self.uart: Uart | None = None
        self.stopped = False            # we ended it (returncode then is our signal's)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "Target":
        self.proc = qemu.start(self.cmd, self.board)
        try:
            self.uart = Uart(self.proc, self.log, self.echo, append=self.append,
                             board=getattr(self.board, "name", None))
        except BaseException:           # the log could not be opened: do not keep QEMU
            qemu.stop(self.proc, self.grace)
            self.proc.stdout.close()
            raise
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """Stop QEMU if it still runs (its termination note is not taken for guest output);
        returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.stopped = True
            if self.uart is not None:
                self.uart.stopping()
            qemu.stop(self.proc, self.grace)
        return self.proc.returncode

    def reap(self, timeout: float = 5.0) -> int | None:
        """Wait up to `timeout` s for a QEMU that is ending by itself; stop it after that."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.stop()
        return self.returncode

    def close(self) -> None:
        """Stop, reap, join the UART pump, close the pipe; safe to call twice."""
        try:
            self.stop()
        finally:
            if self.uart is not None:
                self.uart.close()
            if self.proc is not None and self.proc.stdout is not None:
                self.proc.stdout.close()

    def __enter__(self) -> "Target":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    # -- the UART ------------------------------------------------------------------------------
    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def lines(self) -> list[str]:
        return self.uart.lines if self.uart is not None else []

    @property
    def ended(self) -> bool:
        """The UART ended: QEMU exited by itself (or was stopped)."""
        return self.uart is not None and self.uart.ended

    def text(self) -> str:
        return self.uart.text() if self.uart is not None else ""

    def wait_line(self, pattern: re.Pattern | str, timeout: float) -> str | None:
        return self.uart.wait_line(pattern, timeout)

    def wait_text(self, text: str, timeout: float) -> bool:
        return self.uart.wait_text(text, timeout)

    def wait_end(self, timeout: float) -> bool:
        return self.uart.wait_end(timeout)
