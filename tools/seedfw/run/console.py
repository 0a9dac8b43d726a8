"""Capture a board's serial console into a log, with seedfw's capture record: the only way a
log earns `live` provenance (seedfw.counters.provenance; `invoke counters --serial DEVICE`).

Before this module seedfw never read a board's console: the bench file names a `serial:`
device, and `--agent-log` took any file and called it live. Now a capture is something seedfw
does: the device must be a terminal (a USB serial adapter such as /dev/ttyUSB0; a regular file,
FIFO or socket is refused — a capture reads a board, not a file), opened O_NOCTTY|O_NONBLOCK,
set raw at the console's rate (termios from the standard library: the RK3588's debug UART runs
at 1500000 8N1, what U-Boot and the kernel use), and read with select until the agent's last
line (`agent: ok` / `agent: FAILED`), the timeout, or the log cap (reading.SIZE_CAPS['log']).
Lines go through the QEMU UART's splitter (seedfw.run.uart.split_lines: at most MAX_LINE bytes
each). When the log is closed its capture record is written beside it.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import termios
import time
import tty
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import SeedfwError
from .uart import MAX_LINE, split_lines

END_LINES = ("agent: ok", "agent: FAILED")
DEFAULT_BAUD = 1500000


@dataclass
class Capture:
    log: Path
    ended: bool             # the agent's last line arrived (else: timeout, hang-up or the cap)
    seconds: float
    bytes: int


def _open_tty(device: Path, baud: int) -> int:
    try:
        st = os.stat(device)
    except OSError as exc:
        raise SeedfwError(f"cannot open: {exc.strerror}", device, "--serial") from None
    if not stat.S_ISCHR(st.st_mode):
        raise SeedfwError("is not a character device (a serial console): refused", device,
                          "--serial")
    speed = getattr(termios, f"B{baud}", None)
    if speed is None:
        raise SeedfwError(f"{baud} is not a baud rate this host's termios knows", device,
                          "--baud")
    try:
        fd = os.open(device, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SeedfwError(f"cannot open: {exc.strerror}", device, "--serial") from None
    try:
        if not os.isatty(fd):
            raise SeedfwError("is not a terminal (a serial console): refused", device, "--serial")
        tty.setraw(fd, termios.TCSANOW)     # keep what the board sent before we opened
        attrs = termios.tcgetattr(fd)
        attrs[4] = attrs[5] = speed
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (OSError, termios.error) as exc:
        os.close(fd)
        raise SeedfwError(f"cannot set up the serial line: {exc}", device, "--serial") from None
    except SeedfwError:
        os.close(fd)
        raise
    return fd


def capture(board, device, log, timeout: float = 120.0, baud: int = DEFAULT_BAUD,
            echo: Callable[[str], None] | None = None) -> Capture:
    """Read `device` into `log` until the agent's last line or `timeout`; write the record."""
    from ..counters import provenance
    from ..reading import SIZE_CAPS

    device, log = Path(device), Path(log)
    fd = _open_tty(device, baud)
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline, total, ended, partial = started + timeout, 0, False, b""
    try:
        with open(log, "wb") as f:

            def put(raw: bytes) -> bool:
                raw = raw.rstrip(b"\r")
                f.write(raw + b"\n")       # the bytes as sent: the record hashes what came
                text = raw.decode(errors="replace")
                if echo is not None:
                    echo(text)
                return text.startswith(END_LINES)

            # stop a line short of the cap, so that the log stays readable by --agent-log
            while not ended and total < SIZE_CAPS["log"] - 2 * MAX_LINE:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready, _, _ = select.select([fd], [], [], min(left, 0.5))
                if not ready:
                    continue
                try:
                    chunk = os.read(fd, 4096)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    if exc.errno == errno.EIO:      # hang-up: the adapter went away
                        break
                    raise SeedfwError(f"read failed: {exc.strerror}", device, "--serial") \
                        from None
                if not chunk:
                    break
                total += len(chunk)
                lines, partial = split_lines(partial, chunk)
                ended = any([put(raw) for raw in lines])
            if partial:
                put(partial)
    finally:
        os.close(fd)
    provenance.write_capture(log, "live", f"serial console {device} captured by seedfw at "
                             f"{baud} baud", board=board.name, device=str(device))
    return Capture(log, ended, time.monotonic() - started, total)
