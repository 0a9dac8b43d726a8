"""A board's own OS image booted on QEMU virt: `invoke boot` for a board QEMU has no model of.

rk3588 (board.yaml `qemu_os`) has no QEMU machine, but what its disk image holds runs on QEMU
virt: the image's own kernel, initramfs and ext4 "rootfs" partition, read out of the image
itself — the "boot" partition cut where the GPT says it is, its files read with debugfs — so
what boots is byte for byte what is flashed. What is not the board, and nothing else (board.yaml
`qemu_os.differs`, printed with every result and kept in every counters document):
  dtb      QEMU virt's own DT (dumped with `-machine …,dumpdtb=`) with the build's OPP overlay
           and the image's boot-package overlay applied (fdtoverlay), as U-Boot's extlinux
           `fdtoverlays` would to rk3588-rock-5b.dtb;
  storage  virtio_blk (Kconfig OS_MODULES_EMULATION, in the same initramfs) drives the root
           disk — the whole image, read-only (snapshot=on), so root=PARTUUID= finds its GPT;
  loader   QEMU's loader puts the "package" image of the disk's own firmware FIT at the
           board's "boot-package" region, where U-Boot's seedfw_verify copies it;
  cpu      one emulated core (one vCPU: -icount counts repeat, and a CPU PMU window counts the
           CPU the agent runs on).
The machine string carries `dtb-randomness=off`: the dumped DT then has no kaslr-seed/rng-seed
(a random one would move the kernel and change every count), counted or not.

Success is what seedfw.run.os_boot checks for every OS boot: QEMU exits 0 (the agent's
`poweroff -f`, PSCI through HVC) and the UART carries `agent: ok`. Everything that can refuse
is checked before anything is written (issue 33): a refused boot leaves nothing behind.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import os_boot

SECTION = "qemu_os"
OPP_ROLE = "dtb-overlay"        # the OPP overlay (seedfw.parts.overlay), found by its role


def section(board) -> dict | None:
    """board.yaml `qemu_os`, or None (the board has a QEMU model, or no OS proof)."""
    return board.raw.get(SECTION)


def differs(board) -> dict[str, str]:
    return dict((section(board) or {}).get("differs") or {})


def disk_image(board, outdir: Path) -> Path:
    return Path(outdir) / "images" / f"{board.name}-disk.img"


def refuse(board, outdir: Path, disk: Path | None = None) -> None:
    """One error line when this build has no OS image to boot; reads only, writes nothing.
    `disk`: the image to boot (default the build's, `disk_image`)."""
    outdir = Path(outdir)
    cfg = outdir / "config.json"
    if not cfg.exists():
        raise SeedfwError(f"not built yet (run 'invoke build --board {board.name}')", cfg)
    values = util.read_json(cfg, " of Kconfig values")
    values = values.get("values", values) if isinstance(values.get("values"), dict) else values
    for symbol in (os_boot.OS_SYMBOL, "KERNEL", "OS_ROOT_EXT4"):
        if not values.get(symbol):
            raise SeedfwError(f"the OS is off in this build: CONFIG_{symbol}=y turns it on (the "
                              f"board's defconfig has it; invoke build --board {board.name}, or "
                              "menuconfig)", cfg, f"CONFIG_{symbol}")
    for path in (disk or disk_image(board, outdir), opp_overlay(outdir)):
        if not path.is_file():
            raise SeedfwError(f"not built yet (run 'invoke build --board {board.name}')", path)
    os_boot.region(board)
    for tool in ("debugfs", "fdtoverlay", section(board)["binary"]):
        if shutil.which(tool) is None:
            raise SeedfwError(f"command not found: {tool} (run 'invoke setup')")


def machine(board, dump: Path | None = None) -> list[str]:
    """QEMU, the machine, cpu, memory and `args` of board.yaml `qemu_os`; no NIC (its option ROM
    is a data file the host may lack, and nothing here boots over a network)."""
    q = section(board)
    m = q["machine"] + (f",dumpdtb={dump}" if dump else "")
    return [q["binary"], "-machine", m, "-cpu", q["cpu"], "-m", str(q["memory"]),
            *q.get("args", []), "-nic", "none"]


def _debugfs(fs: Path, name: str, dest: Path) -> Path:
    # stdout alone (util.run joins stderr, where debugfs prints its banner, to the output)
    proc = subprocess.run(["debugfs", "-R", f"cat /{name}", str(fs)], capture_output=True,
                          stdin=subprocess.DEVNULL, check=False)
    data = proc.stdout if proc.returncode == 0 else b""
    if not data:
        raise SeedfwError(f"no /{name} in the image's \"boot\" partition", fs)
    dest.write_bytes(data)
    return dest


def extract(board, outdir: Path, work: Path, log: Path, disk: Path | None = None) -> dict:
    """What QEMU virt needs, out of the build's disk image (or `disk`): {Image, initrd,
    package, dtb, append, disk}."""
    from ..images import gpt, idblock
    from ..parts import fit_verify
    from ..reading import read_input

    disk = Path(disk) if disk else disk_image(board, outdir)
    view = read_input(disk, "image")
    table = gpt.parse(view, disk)

    def cut(name: str) -> Path:
        p = table.partition(name)
        dest = work / f"{name}.part"
        dest.write_bytes(view[p.offset:p.offset + p.size])
        return dest

    boot = cut("boot")
    got = {"disk": disk, "Image": _debugfs(boot, "Image", work / "Image"),
           "initrd": _debugfs(boot, "initramfs.cpio", work / "initramfs.cpio")}
    conf = _debugfs(boot, "extlinux/extlinux.conf", work / "extlinux.conf").read_text()
    got["append"] = next((line.split(None, 1)[1] for line in conf.splitlines()
                          if line.strip().startswith("append ")), "")
    overlay = _debugfs(boot, fit_verify.OVERLAY, work / fit_verify.OVERLAY)
    firmware = cut("firmware")
    _root, images = idblock.fit_images(firmware.read_bytes(), firmware)
    if "package" not in images:
        raise SeedfwError("the firmware FIT has no image \"package\" (the boot package U-Boot "
                          "copies for the agent)", disk, "firmware")
    got["package"] = work / "package.bin"
    got["package"].write_bytes(bytes(images["package"]))
    for path in (boot, firmware):
        path.unlink()
    raw = work / "virt.dtb"
    util.run(machine(board, raw) + ["-display", "none"], log=log)
    got["dtb"] = work / "virt-seedfw.dtb"
    util.run(["fdtoverlay", "-i", raw, "-o", got["dtb"],
              opp_overlay(outdir), overlay], log=log)
    return got


def command(board, got: dict) -> list[str]:
    r = os_boot.region(board)
    return machine(board) + [
        "-nographic", "-kernel", str(got["Image"]), "-initrd", str(got["initrd"]),
        "-dtb", str(got["dtb"]), "-append", got["append"], "-no-reboot",
        # the whole image, so root=PARTUUID= finds the GPT entry; snapshot: never written
        "-drive", f"file={got['disk']},format=raw,if=none,id=seedfw-root,snapshot=on",
        "-device", "virtio-blk-pci,drive=seedfw-root",
        "-device", f"loader,file={got['package']},addr=0x{r.base:x},force-raw=on"]


def prepare(board, outdir: Path, disk: Path | None = None, log: Path | None = None) -> list[str]:
    """Refuse (nothing written) or extract what the boot needs into <out>/build/os-virt: the
    QEMU command line of the boot (`command`). `disk`: the image to boot, by default the
    build's; `log`: where the extraction's tools log (default <out>/logs/os-boot.log, emptied).
    `boot` and the farm's QEMU driver (seedfw.lab.drivers, mode "os") both start this line."""
    outdir = Path(outdir)
    refuse(board, outdir, disk)
    work = outdir / "build" / "os-virt"
    log = Path(log) if log else outdir / "logs" / "os-boot.log"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    return command(board, extract(board, outdir, work, log, disk))


def boot(board, outdir: Path, timeout: float = 180.0, echo=None,
         extra_args=()) -> os_boot.BootResult:
    """Boot and check (see the module doc); `extra_args` go to QEMU (the traffic counter's,
    seedfw.counters.emulated.virt_args). Raises SeedfwError when the boot fails."""
    log = Path(outdir) / "logs" / "os-boot.log"
    cmd = prepare(board, outdir, log=log) + list(extra_args)
    return os_boot.run_checked(cmd, board, log, echo, timeout, False)


def opp_overlay(outdir: Path) -> Path:
    """The build's OPP overlay, by its role in the manifest (never by a file name)."""
    from ..manifest import Manifest
    manifest = Manifest.load(Path(outdir))
    found = manifest.by_role(OPP_ROLE)
    if not found:
        raise SeedfwError(f"the manifest lists no {OPP_ROLE} (the OPP overlay)",
                          Path(outdir) / "manifest.json")
    return manifest.file(found[0])


def differs_line(board) -> str:
    return "; ".join(f"{k}: {v}" for k, v in differs(board).items())
