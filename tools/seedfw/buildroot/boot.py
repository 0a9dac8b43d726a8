"""Boot the OS in QEMU: TF-A → U-Boot → the pinned Debian kernel → Buildroot initramfs → agent.

Two ways, the first whenever the build made what it needs:
  * chain: QEMU starts TF-A (BL1 → BL2 → BL31) from the secure flash, BL31 starts U-Boot 2025.01,
    which verifies the firmware FIT from the virtio disk, copies the boot package to the board's
    "boot-package" region, verifies the OS FIT (seedfw.buildroot.osimage) from the "boot"
    partition and runs its boot script: reserved-memory (no-map) over the package, then booti.
    The command line is `invoke run`'s (seedfw.qemu.command).
  * direct (a build without U-Boot or the OS FIT): QEMU loads kernel, initramfs and DT itself
    (-kernel/-initrd/-dtb) and puts the boot package where the bootloader would. The DT is QEMU's
    own (`-machine …,dumpdtb=`) plus the same reserved-memory node and, with `fdtoverlay`, the
    OPP overlay U-Boot would apply (images/dvfs/opp.dtbo, when the build made one).
Either way the kernel never uses the package's pages and — not being System RAM to it — /dev/mem
may read them under STRICT_DEVMEM, which is how the agent reads what the bootloader left there.

Success is observable, not assumed: QEMU must exit 0 (the agent's `poweroff -f` → PSCI
SYSTEM_OFF) *and* the UART must carry `agent: ok`. Anything else is an error naming the line that
explains it (U-Boot's hash error, `agent: FAILED …`, the kernel's panic line, or the time-out).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import qemu, util
from ..errors import SeedfwError

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


def machine(board) -> list[str]:
    """board.yaml's QEMU machine without secure=on: Linux is started by QEMU itself here, at
    EL1/EL2, with PSCI through HVC (with secure=on QEMU would expect firmware at EL3)."""
    cmd = qemu.machine_args(board)
    i = cmd.index("-machine")
    cmd[i + 1] = ",".join(p for p in cmd[i + 1].split(",") if p != "secure=on")
    return cmd + (["-nographic"] if "-nographic" not in cmd else [])


def make_dtb(board, work: Path, log: Path, overlay: Path | None = None) -> Path:
    """QEMU's DT for this machine plus the reserved boot-package region (and `overlay`)."""
    cmd = machine(board)
    raw, dts, dtb = work / "qemu.dtb", work / "seedfw.dts", work / "seedfw.dtb"
    i = cmd.index("-machine")
    dump = cmd[:i + 1] + [f"{cmd[i + 1]},dumpdtb={raw}"] + cmd[i + 2:]
    util.run(dump, log=log)
    text = util.run(["dtc", "-q", "-I", "dtb", "-O", "dts", raw], log=None).stdout.decode()
    r = region(board)
    text += ("\n/ {\n\treserved-memory {\n\t\t#address-cells = <2>;\n\t\t#size-cells = <2>;\n"
             f"\t\tranges;\n\t\tseedfw-boot-package@{r.base:x} {{\n"
             f"\t\t\treg = <0x0 0x{r.base:x} 0x0 0x{r.size:x}>;\n\t\t\tno-map;\n\t\t}};\n"
             "\t};\n};\n")
    dts.write_text(text)
    util.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", dtb, dts], log=log)
    if overlay is not None and overlay.is_file():
        applied = work / "seedfw-opp.dtb"
        util.run(["fdtoverlay", "-i", dtb, "-o", applied, overlay], log=log)
        return applied
    return dtb


def command(board, images: Path, dtb: Path, rootfs: Path | None = None) -> list[str]:
    r = region(board)
    package = images / f"{board.name}-boot.pkg"
    need = [images / "Image", rootfs or images / "rootfs.cpio", package]
    for f in need:
        if not f.is_file():
            raise SeedfwError(f"not built yet (enable CONFIG_BUILDROOT and run 'invoke build "
                              f"--board {board.name}')", f)
    return machine(board) + [
        "-kernel", str(need[0]), "-initrd", str(need[1]), "-dtb", str(dtb),
        "-append", KERNEL_ARGS, "-no-reboot",
        "-device", f"loader,file={package},addr=0x{r.base:x},force-raw=on"]


def chained(board, outdir: Path) -> bool:
    """Whether the build holds what the chain boot needs (U-Boot, the OS FIT in the disk)."""
    images = Path(outdir) / "images"
    return all((images / n).is_file() for n in
               ("u-boot.bin", "qemu_fw.bios", f"{board.name}-os.itb", f"{board.name}-disk.img"))


def boot(board, outdir: Path, timeout: float = 90.0, echo=None, rootfs: Path | None = None,
         images: Path | None = None, chain: bool | None = None, extra_args=()) -> BootResult:
    """Boot and check; returns the result on success, raises SeedfwError otherwise.
    `chain` None: through TF-A and U-Boot when the build made them (see the module doc);
    `images`/`rootfs` (tests' tampered copies) apply to the direct boot; `extra_args` go to
    QEMU either way (e.g. the traffic counter's, seedfw.counters.emulated.qemu_args)."""
    outdir = Path(outdir)
    images = images or outdir / "images"
    work = outdir / "build" / "os-boot"
    work.mkdir(parents=True, exist_ok=True)
    log = outdir / "logs" / "os-boot.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    if chain is None:
        chain = images == outdir / "images" and rootfs is None and chained(board, outdir)
    if chain:
        # -no-reboot: a reset (a crash in U-Boot, a kernel panic) ends the run instead of looping.
        cmd = qemu.command(board, outdir, ["-no-reboot"])
    else:
        cmd = command(board, images, make_dtb(board, work, log, images / "dvfs" / "opp.dtbo"),
                      rootfs)
    cmd += list(extra_args)
    echo = echo or (lambda s: print(s, flush=True))
    lines: list[str] = []
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    with open(log, "a") as f:
        f.write(f"$ {shlex.join(cmd)}\n")

        def pump():
            for raw in proc.stdout:
                text = raw.decode(errors="replace").rstrip("\r\n")
                lines.append(text)
                f.write(text + "\n")
                f.flush()
                echo(text)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            qemu.stop(proc)
        finally:
            if proc.poll() is None:
                qemu.stop(proc)
            reader.join(5)
    result = BootResult(None if timed_out else proc.returncode, time.monotonic() - started,
                        lines, log, chain)
    check(result, timeout)
    return result


def check(result: BootResult, timeout: float) -> None:
    if result.returncode == 0 and "agent: ok" in result.lines:
        return
    reason = None
    for pattern in FAILURE_LINES:            # the matching part: no kernel timestamp
        reason = next((m.group(0) for m in map(pattern.search, result.lines) if m), None)
        if reason:
            break
    if reason is None:
        reason = (f"the guest did not power off within {timeout:g} s"
                  if result.returncode is None else "no 'agent: ok' from the agent")
    status = "stopped" if result.returncode is None else f"exit status {result.returncode}"
    err = SeedfwError(f"OS boot failed: {reason.strip()} (QEMU {status})", result.log)
    err.tail = result.lines[-15:]
    raise err
