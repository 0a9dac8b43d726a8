"""A QEMU for a board, halted at reset with its GDB stub on 127.0.0.1:<ephemeral port>: the
target the pyOCD probe (`qemu:auto`) programs and reads (seedfw.flash.reach, counters).

Mode "bare" of seedfw.run.qemu: nothing loaded (a system reset would reload a -kernel over the
flashed data, so the flash starts erased and the image arrives through the probe); the machine,
memory and `-nic none` are the board's as for every other run. The UART goes through the one
pump (seedfw.run.uart) into `uart_log`.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

from ..errors import SeedfwError
from . import qemu
from .target import Target

# How long to wait for an emulated board's event (its GDB stub listening, a UART line). These are
# waits for an event, so a generous bound costs nothing when the event comes; it only has to
# outlast a loaded host (QEMU's threads descheduled), where 5 s did not always (issue 27).
EMULATED_WAIT = 30.0


def free_port() -> int:
    """An ephemeral loopback port (the OS picks it; the tiny reuse race is retried by the caller)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class QemuGdbTarget:
    """QEMU halted at reset behind its GDB stub; a context manager (start/stop)."""

    def __init__(self, board, uart_log: str | os.PathLike | None = None, extra_args=()):
        self.board = board
        qemu.qemu_section(board)
        self._tmp = None
        if uart_log is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="seedfw-qemu-")
            uart_log = Path(self._tmp.name) / "uart.log"
        self.uart_log = Path(uart_log)
        self.extra_args = list(extra_args)
        self.port = 0
        self._target: Target | None = None

    @property
    def uid(self) -> str:
        return f"qemu:127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return qemu.command(self.board, None, "bare", halted=True, gdb=self.port,
                            extra=self.extra_args)

    @property
    def proc(self):
        return self._target.proc if self._target is not None else None

    def start(self) -> "QemuGdbTarget":
        for _ in range(3):
            self.port = free_port()
            self._target = Target(self.command(), self.board, self.uart_log, grace=5).start()
            if self._wait_listening():
                return self
            self.stop()
        raise SeedfwError("QEMU did not open its GDB stub", self.board.dir / "board.yaml", "qemu")

    def _wait_listening(self, timeout: float = EMULATED_WAIT) -> bool:
        # Look for the listening socket without connecting: a gdbstub connection pauses the guest.
        deadline = time.monotonic() + timeout
        needle = f":{self.port:04X} 00000000:0000 0A"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with open("/proc/net/tcp") as f:
                if any(needle in line for line in f):
                    return True
            time.sleep(0.01)
        return False

    def uart(self) -> str:
        return self._target.text() if self._target else ""

    def wait_uart(self, text: str, timeout: float = EMULATED_WAIT) -> str:
        if self._target is not None and self._target.wait_text(text, timeout):
            return self.uart()
        raise SeedfwError(f"'{text}' did not appear on the UART within {timeout} s", self.uart_log, "uart")

    def wait_line(self, pattern: str, timeout: float = EMULATED_WAIT) -> str:
        """The first whole UART line matching `pattern`."""
        line = self._target.wait_line(pattern, timeout) if self._target else None
        if line is None:
            raise SeedfwError(f"no UART line matching '{pattern}' within {timeout} s",
                              self.uart_log, "uart")
        return line

    def stop(self) -> None:
        if self._target is not None:
            self._target.close()
        self._target = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:       # __exit__ does not run when __enter__ raises
            self.__exit__()
            raise

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            if self._tmp:
                self._tmp.cleanup()
        return False
