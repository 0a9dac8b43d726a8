"""Start and stop QEMU for a board (board.yaml `qemu`), with the UART captured to a log and the terminal.

Two entry points:
  * `start(board, outdir, extra_args)` → a running `subprocess.Popen` (stdout = the guest UART), for
    callers that drive the guest themselves (e.g. the pyOCD probe with `-gdb tcp:127.0.0.1:PORT -S`);
  * `run(board, outdir, timeout, log)` → boots, streams the UART, and returns once the guest powers
    off (PSCI SYSTEM_OFF makes QEMU exit 0), or — for a guest that never powers off, such as an
    MCU idling in WFI — once the UART printed a line matching the board's `qemu.ready` regular
    expression (or the caller's `until`); QEMU is stopped then. Neither in time is an error.
"""

from __future__ import annotations

import re
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
    return [how, str(image)] + package_args(board, images)


def package_args(board, images: Path) -> list[str]:
    """Load the boot package where the payload looks for it. Semihosting lets the payload exit
    with a status (PSCI SYSTEM_OFF carries none), so a failed package check fails the run."""
    region = next((r for r in board.memory if r.name == "boot-package"), None)
    package = images / f"{board.name}-boot.pkg"
    disk = images / f"{board.name}-disk.img"
    if (images / "u-boot.bin").is_file() and disk.is_file():
        # U-Boot is BL33: it reads the firmware FIT (payload + package) from this virtio disk,
        # as a board reads its SD card (seedfw.parts.disk; the boot script: packages/uboot.py).
        return ["-semihosting-config", "enable=on,target=native",
                "-drive", f"if=none,format=raw,file={disk},id=seedfw-disk",
                "-device", "virtio-blk-device,drive=seedfw-disk"]
    if region is None or not package.is_file():
        return []
    return ["-semihosting-config", "enable=on,target=native",
            "-device", f"loader,file={package},addr={hex(region.base)}"]


NETWORK_OPTIONS = ("-nic", "-net", "-netdev")


def machine_args(board) -> list[str]:
    """QEMU, the machine, cpu, memory and board.yaml's args: everything but the images.

    `-nic none` unless board.yaml configures a network: without it QEMU creates the machine's
    default NIC (virtio-net-pci on `virt`), which makes it load `efi-virtio.rom` from the
    ipxe-qemu package — a mere Recommends of qemu-system-arm, absent on a fresh machine — and no
    board here boots over the network. `invoke doctor` asks QEMU which data files these arguments
    still load.
    """
    q = board.qemu
    if not q:
        raise SeedfwError(f"board '{board.name}' cannot run in QEMU (no 'qemu' section)",
                          board.dir / "board.yaml", "qemu")
    cmd = [q["binary"], "-machine", q["machine"], "-cpu", q["cpu"]]
    if q.get("memory"):
        cmd += ["-m", str(q["memory"])]
    cmd += list(q.get("args", []))
    if not any(a in NETWORK_OPTIONS for a in cmd):
        cmd += ["-nic", "none"]
    return cmd


def command(board, outdir: Path, extra_args: Iterable[str] = ()) -> list[str]:
    """The full QEMU command line for a board (machine, cpu, memory and args from board.yaml)."""
    cmd = machine_args(board)
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


_QEMU_TERMINATING = re.compile(r"^qemu-system-\S+: terminating on signal \d+")


@dataclass
class RunResult:
    returncode: int | None           # QEMU's exit status; None when it was stopped at the ready line
    seconds: float
    lines: list[str] = field(default_factory=list)
    log: Path | None = None
    ready_line: str | None = None    # the UART line that matched the ready expression, if one did


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
    log.parent.mkdir(parents=True, exist_ok=True)
    echo = echo or (lambda s: (sys.stdout.write(s + "\n"), sys.stdout.flush()))
    lines: list[str] = []
    matched: list[str] = []
    seen_ready = threading.Event()
    stopping = threading.Event()            # set before we stop QEMU ourselves
    stopped_at_ready = False
    started = time.monotonic()
    proc = start(board, outdir, extra_args)
    with open(log, "w") as f:
        f.write(f"$ {shlex.join(proc.args)}\n")

        def pump():
            for raw in proc.stdout:
                text = raw.decode(errors="replace").rstrip("\r\n")
                if stopping.is_set() and _QEMU_TERMINATING.match(text):
                    continue                # QEMU's own note that we stopped it: not guest output
                lines.append(text)
                f.write(text + "\n")
                f.flush()
                echo(text)
                if ready is not None and not matched and ready.search(text):
                    matched.append(text)
                    seen_ready.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            deadline = started + timeout
            # Poll both ends: the reader sees the ready line, QEMU's exit is the power-off.
            while not seen_ready.wait(0.02) and proc.poll() is None:
                if time.monotonic() >= deadline:
                    stopping.set()
                    stop(proc)
                    reader.join(2)
                    wanted = "power off" if ready is None else \
                        f"power off or print a line matching '{ready.pattern}'"
                    raise SeedfwError(f"guest did not {wanted} within {timeout:g} s", log)
            if matched and proc.poll() is None:
                stopping.set()
                stop(proc)
                stopped_at_ready = True
        finally:
            if proc.poll() is None:         # e.g. KeyboardInterrupt: never leave QEMU behind
                stopping.set()
                stop(proc)
        reader.join(5)
    seconds = time.monotonic() - started
    if matched and (stopped_at_ready or proc.returncode == 0):
        return RunResult(None if stopped_at_ready else 0, seconds, lines, log, matched[0])
    if proc.returncode != 0:
        err = SeedfwError(f"QEMU exited with status {proc.returncode}", log)
        err.tail = lines[-30:]
        raise err
    if ready is not None:
        err = SeedfwError(f"guest powered off without printing a line matching '{ready.pattern}'", log)
        err.tail = lines[-30:]
        raise err
    return RunResult(proc.returncode, seconds, lines, log)
