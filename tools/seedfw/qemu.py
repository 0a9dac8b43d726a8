"""Start and stop QEMU for a board (board.yaml `qemu`), with the UART captured to a log and the terminal.

Two entry points:
  * `start(board, outdir, extra_args)` → a running `subprocess.Popen` (stdout = the guest UART), for
    callers that drive the guest themselves (e.g. the pyOCD probe with `-gdb tcp:127.0.0.1:PORT -S`);
  * `run(board, outdir, timeout, log)` → boots, streams the UART, and returns once the guest powers
    off (PSCI SYSTEM_OFF makes QEMU exit 0); a guest that does not power off in time is an error.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .errors import SeedfwError


def boot_args(board, outdir: Path) -> list[str]:
    """How this board's firmware is handed to QEMU: the TF-A flash image, or the MCU ELF."""
    images = Path(outdir) / "images"
    if board.tfa:
        image, how = images / "qemu_fw.bios", "-bios"
    elif board.arch == "armv7m":
        image, how = images / "mcu.elf", "-kernel"
    else:
        raise SeedfwError(f"board '{board.name}' has no image QEMU can boot",
                          board.dir / "board.yaml", "qemu")
    if not image.is_file():
        raise SeedfwError(f"not built yet (run 'invoke build --board {board.name}')", image)
    return [how, str(image)]


def command(board, outdir: Path, extra_args: Iterable[str] = ()) -> list[str]:
    """The full QEMU command line for a board (machine, cpu, memory and args from board.yaml)."""
    q = board.qemu
    if not q:
        raise SeedfwError(f"board '{board.name}' cannot run in QEMU (no 'qemu' section)",
                          board.dir / "board.yaml", "qemu")
    cmd = [q["binary"], "-machine", q["machine"], "-cpu", q["cpu"]]
    if q.get("memory"):
        cmd += ["-m", str(q["memory"])]
    cmd += list(q.get("args", []))
    if "-nographic" not in cmd:
        cmd.append("-nographic")
    return cmd + boot_args(board, outdir) + list(extra_args)


def start(board, outdir: Path, extra_args: Iterable[str] = ()) -> subprocess.Popen:
    """Start QEMU; the caller owns the process (and must stop it with `stop`)."""
    cmd = command(board, outdir, extra_args)
    try:
        # stdin is not the terminal: with -nographic QEMU would otherwise put the tty in raw mode.
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise SeedfwError(f"command not found: {cmd[0]} (run 'invoke setup')") from None


def stop(proc: subprocess.Popen, grace: float = 2.0) -> int:
    """Terminate a QEMU started by `start` (and only that process); return its exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


@dataclass
class RunResult:
    returncode: int
    seconds: float
    lines: list[str] = field(default_factory=list)
    log: Path | None = None


def run(board, outdir: Path, timeout: float = 30.0, log: Path | None = None,
        echo: Callable[[str], None] | None = None, extra_args: Iterable[str] = ()) -> RunResult:
    """Boot the board's image and wait for the guest to power off.

    The UART goes line by line to `log` (default <out>/logs/run.log) and to `echo` (default: stdout;
    pass `lambda s: None` to keep quiet). Raises SeedfwError when the guest does not power off within
    `timeout` seconds or QEMU exits non-zero.
    """
    outdir = Path(outdir)
    log = Path(log) if log else outdir / "logs" / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    echo = echo or (lambda s: (sys.stdout.write(s + "\n"), sys.stdout.flush()))
    lines: list[str] = []
    started = time.monotonic()
    proc = start(board, outdir, extra_args)
    with open(log, "w") as f:
        f.write(f"$ {shlex.join(proc.args)}\n")

        def pump():
            for raw in proc.stdout:
                text = raw.decode(errors="replace").rstrip("\r\n")
                lines.append(text)
                f.write(text + "\n")
                f.flush()
                echo(text)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            reader.join(2)
            raise SeedfwError(f"guest did not power off within {timeout:g} s", log) from None
        finally:
            if proc.poll() is None:         # e.g. KeyboardInterrupt: never leave QEMU behind
                stop(proc)
        reader.join(5)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        err = SeedfwError(f"QEMU exited with status {proc.returncode}", log)
        err.tail = lines[-30:]
        raise err
    return RunResult(proc.returncode, seconds, lines, log)
