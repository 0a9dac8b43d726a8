"""Boot the OS in QEMU: TF-A → U-Boot → the pinned Debian kernel → Buildroot initramfs → agent.

Two ways, the first whenever the build made what it needs:
  * chain: QEMU starts TF-A (BL1 → BL2 → BL31) from the secure flash, BL31 starts U-Boot,
    which verifies the firmware FIT from the virtio disk, copies the boot package to the board's
    "boot-package" region, verifies the OS FIT (declared role "os-fit") from the "boot"
    partition and runs its boot script: reserved-memory (no-map) over the package, then booti.
    The command line is `invoke run`'s (seedfw.run.qemu, mode "firmware").
  * direct (a build without U-Boot or the OS FIT): QEMU loads kernel, initramfs and DT itself
    (mode "os": the artifacts declared with qemu modes "os") and puts the boot package where the
    bootloader would. The DT is QEMU's own (`-machine …,dumpdtb=`) plus the same reserved-memory
    node and, with `fdtoverlay`, the OPP overlay U-Boot would apply (declared "dtb-overlay").
Either way the kernel never uses the package's pages and — not being System RAM to it — /dev/mem
may read them under STRICT_DEVMEM, which is how the agent reads what the bootloader left there.

Success is observable, not assumed: QEMU must exit 0 (the agent's `poweroff -f` → PSCI
SYSTEM_OFF) *and* the UART must carry `agent: ok`. Anything else is an error naming the line that
explains it (U-Boot's hash error, `agent: FAILED …`, the kernel's panic line, or the time-out).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import qemu
from .target import Target

KERNEL_ARGS = "console=ttyAMA0 panic=-1"
# Lines that explain a failed boot, most specific first.
FAILURE_LINES = (re.compile(r"Bad hash value.*"), re.compile(r"seedfw: OS FIT rejected.*"),
                 re.compile(r"seedfw: firmware FIT rejected.*"),
                 re.compile(r"seedfw: OPP overlay did not apply.*"),
                 re.compile(r'"Synchronous Abort" handler.*'),
                 re.compile(r"agent: dt opp: .*mismatch.*"), re.compile(r"agent: FAILED.*"),
                 re.compile(r"agent: \S+ \S+ sha256 BAD"),
                 re.compile(r"Initramfs unpacking failed: .*"),
                 re.compile(r"Kernel panic - not syncing: .*"))
# Each pattern's literal head: `first_match` tries a pattern only where its head first occurs
# in a line. Plain re.search restarts at every occurrence, and `agent: dt opp: .*mismatch`
# then rescans the rest of the line each time: a 64 KiB line of `agent: dt opp: ` repeats took
# 0.9 s. From the first head the match is the same for these patterns (what follows is `.*` or
# a token or two), and the cost is linear.
_HEADS = {rx: re.match(r"[^\\.*+?()\[\]{}|^$]*", rx.pattern).group() for rx in FAILURE_LINES}


def first_match(rx: re.Pattern, line: str):
    at = line.find(_HEADS[rx])
    return rx.match(line, at) if at >= 0 else None


@dataclass
class BootResult:
    returncode: int | None
    seconds: float
    lines: list[str] = field(default_factory=list)
    log: Path | None = None
    chain: bool = False                  # through TF-A and U-Boot (else QEMU loaded the kernel)

    def agent_lines(self) -> list[str]:
        return [line for line in self.lines if line.startswith("agent: ")]


def region(board, name="boot-package"):
    r = next((m for m in board.memory if m.name == name), None)
    if r is None:
        raise SeedfwError(f"no memory region '{name}' (where the bootloader leaves the boot "
                          "package for the agent)", board.dir / "board.yaml", "memory")
    return r


def make_dtb(board, work: Path, log: Path, overlay: Path | None = None) -> Path:
    """QEMU's DT for this machine (as mode "os" starts it) plus the reserved boot-package region
    (and `overlay`)."""
    raw, dts, dtb = work / "qemu.dtb", work / "seedfw.dts", work / "seedfw.dtb"
    util.run(_os_machine(board, raw), log=log)
    text = util.run(["dtc", "-q", "-I", "dtb", "-O", "dts", raw], log=None).stdout.decode()
    r = region(board)
    text += ("\n/ {\n\treserved-memory {\n\t\t#address-cells = <2>;\n\t\t#size-cells = <2>;\n"
             f"\t\tranges;\n\t\tseedfw-boot-package@{r.base:x} {{\n"
             f"\t\t\treg = <0x0 0x{r.base:x} 0x0 0x{r.size:x}>;\n\t\t\tno-map;\n\t\t}};\n"
             "\t};\n};\n")
    dts.write_text(text)
    util.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb, dts], log=log)
    if overlay is not None and overlay.is_file():
        applied = work / "seedfw-overlaid.dtb"
        util.run(["fdtoverlay", "-i", dtb, "-o", applied, overlay], log=log)
        return applied
    return dtb


def _os_machine(board, raw: Path) -> list[str]:
    # The machine exactly as mode "os" runs it (secure=on dropped), told to dump its DT and exit.
    return qemu.machine_args(board, secure=False, machine_extra=f"dumpdtb={raw}") + ["-nographic"]


# The Kconfig symbol that turns the OS on (kconfig/Kconfig.buildroot; KERNEL follows it).
OS_SYMBOL = "BUILDROOT"


def refuse(board, outdir: Path) -> None:
    """One error line when this board or build cannot boot an OS in QEMU: a board without a
    `qemu` section (rk3588: its OS is booted in QEMU virt from its disk image, tests/
    test_os_root.py), or a build configured with the OS off (naming the symbol that turns it
    on). Reads only; writes nothing."""
    qemu.qemu_section(board)
    cfg = Path(outdir) / "config.json"
    if not cfg.exists():
        return                  # not configured: qemu.command says "not built yet"
    values = util.read_json(cfg, " of Kconfig values")
    values = values.get("values", values) if isinstance(values.get("values"), dict) else values
    if not values.get(OS_SYMBOL) or not values.get("KERNEL"):
        symbol = OS_SYMBOL if not values.get(OS_SYMBOL) else "KERNEL"
        raise SeedfwError(f"the OS is off in this build: CONFIG_{symbol}=y turns it on (invoke "
                          f"build --board {board.name} --fragment configs/buildroot.fragment, "
                          "or menuconfig)", cfg, f"CONFIG_{symbol}")


def chained(board, outdir: Path) -> bool:
    """Whether the build holds what the chain boot needs: an OS FIT (declared role "os-fit")
    and a firmware run that gives the guest a drive to read it from."""
    outdir = Path(outdir)
    if not qemu.declares_role(outdir, "os-fit"):
        return False
    loads = [ld for ld in qemu.declared(board, outdir) if "firmware" in ld.modes]
    return any(ld.load == "drive" and ld.path.is_file() for ld in loads) and \
        all(ld.path.is_file() for ld in loads)


def overlay_file(board, outdir: Path, images: Path | None) -> Path | None:
    return next((ld.path for ld in qemu.declared(board, outdir, images)
                 if ld.load == "dtb-overlay" and "os" in ld.modes), None)


def boot(board, outdir: Path, timeout: float = 90.0, echo=None, rootfs: Path | None = None,
         images: Path | None = None, chain: bool | None = None, extra_args=()) -> BootResult:
    """Boot and check; returns the result on success, raises SeedfwError otherwise.
    `chain` None: through TF-A and U-Boot when the build made them (see the module doc);
    `images`/`rootfs` (tests' tampered copies) apply to the direct boot; `extra_args` go to
    QEMU either way (e.g. the traffic counter's, seedfw.counters.emulated.qemu_args)."""
    outdir = Path(outdir)
    work = outdir / "build" / "os-boot"
    log = outdir / "logs" / "os-boot.log"
    # Everything that can refuse the boot is checked before anything is written: a refused
    # boot leaves no empty log and no work directory behind (issue 33).
    refuse(board, outdir)
    if chain is None:
        chain = images is None and rootfs is None and chained(board, outdir)
    if not chain:
        region(board)
        overlay = overlay_file(board, outdir, images)
        qemu.command(board, outdir, "os", images=images,
                     overrides={"initrd": rootfs} if rootfs else None)   # refuses a missing file
    work.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    if chain:
        # -no-reboot: a reset (a crash in U-Boot, a kernel panic) ends the run instead of looping.
        cmd = qemu.command(board, outdir, "firmware", extra=["-no-reboot"])
    else:
        dtb = make_dtb(board, work, log, overlay)
        cmd = qemu.command(board, outdir, "os", images=images,
                           overrides={"initrd": rootfs} if rootfs else None,
                           dtb=dtb, append=KERNEL_ARGS, extra=["-no-reboot"])
    cmd += list(extra_args)
    return run_checked(cmd, board, log, echo, timeout, chain)


def run_checked(cmd: list, board, log: Path, echo, timeout: float, chain: bool) -> BootResult:
    """Run one OS boot to its end (QEMU stopped however this ends), then `check` it."""
    echo = echo or (lambda s: print(s, flush=True))
    started = time.monotonic()
    with Target(cmd, board, log, echo, append=True) as target:
        timed_out = not target.wait_end(timeout)
        if not timed_out:
            target.reap(5)
    result = BootResult(None if timed_out else target.returncode, time.monotonic() - started,
                        target.lines, log, chain)
    check(result, timeout)
    return result


def check(result: BootResult, timeout: float) -> None:
    if result.returncode == 0 and "agent: ok" in result.lines:
        return
    reason = None
    for pattern in FAILURE_LINES:            # the matching part: no kernel timestamp
        reason = next((m.group(0) for ln in result.lines if (m := first_match(pattern, ln))),
                      None)
        if reason:
            break
    if reason is None:
        reason = (f"the guest did not power off within {timeout:g} s"
                  if result.returncode is None else "no 'agent: ok' from the agent")
    status = "stopped" if result.returncode is None else f"exit status {result.returncode}"
    err = SeedfwError(f"OS boot failed: {reason.strip()} (QEMU {status})", result.log)
    err.tail = result.lines[-15:]
    raise err
