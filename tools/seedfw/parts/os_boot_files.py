"""The OS as files for U-Boot's extlinux boot method (board boot.flow: extlinux)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..images import fdt
from . import os_fit as osimage
from .base import OS_PARTITION_SIZE, BootArtifact, Part

DOC = """OS boot files (board boot.flow: extlinux): the pinned kernel, the board's DT (board.yaml
boot.dtb, checked for boot.compatible) with our OPP overlay applied, the Buildroot initramfs and an
extlinux.conf, for U-Boot's bootstd to find. The disk part makes the "boot" partition an ext4 file
system holding `boot_files()`, with GPT's legacy-BIOS-bootable attribute set.

Why extlinux.conf and not a FIT + boot script (qemu-aarch64's way, seedfw.parts.os_fit):
the rk3588 U-Boot is rock5b-rk3588_defconfig with its own boot command, bootstd's
`bootflow scan -lb`, whose extlinux boot method finds /extlinux/extlinux.conf on the bootable
partition of the SD card or eMMC by itself. A FIT would need a boot command of ours, which no
board here could test; extlinux is also the layout Debian and Armbian images use, so a user can
swap the kernel with `cp`. The price: U-Boot checks no hash of these files (the disk's .bmap and
`invoke inspect` do). The step checks that the U-Boot we build has what extlinux needs, and
that kernel, DT and initramfs fit between the load addresses of its default environment.

Why fdtoverlay at build time and not extlinux's `fdtoverlays` (U-Boot applying it at boot): the
DT the kernel gets is then a file in the image, which a test reads back without a board; an
overlay that does not apply fails the build, where U-Boot would print an error and boot the DT
without it; and nothing depends on CONFIG_OF_LIBFDT_OVERLAY. Debian's own DT stays in images/.

Why an initramfs: Debian's generic kernel has ext4 and the rk3588 SD/eMMC host drivers as
modules (CONFIG_EXT4_FS=m, CONFIG_MMC_DW_ROCKCHIP=m, CONFIG_MMC_SDHCI_OF_DWCMSHC=m). With
OS_ROOT_EXT4 (default) it is the small images/initramfs.cpio that loads them and switch_roots to
the ext4 "rootfs" partition (seedfw.os_root, seedfw.initramfs; the append line is
os_root.kernel_args); without it, Buildroot's whole rootfs.cpio, which the kernel runs from RAM.

Kconfig symbols read: BUILDROOT, BUILDROOT_ROOTFS_CPIO, BUILDROOT_CONSOLE, KERNEL,
KERNEL_PACKAGE, UBOOT, OS_ROOT_EXT4. Outputs: images/rk3588-rock-5b-seedfw.dtb, images/extlinux.conf,
images/dvfs/opp.dtbo (the overlay applied), images/rk3588-os.json (what was checked, with the
figures and where they come from).
"""

VERSION = "2"           # 2: the ext4 root (initramfs.cpio, root=PARTUUID)
DTB = "rk3588-rock-5b-seedfw.dtb"
CONF = "extlinux.conf"
INFO = "rk3588-os.json"
# What extlinux needs of U-Boot: bootstd with its extlinux method, ext4, booti for an arm64 Image.
UBOOT_NEEDS = ("BOOTSTD", "BOOTMETH_EXTLINUX", "FS_EXT4", "CMD_BOOTI")
MIB = 1 << 20


def wanted(ctx) -> bool:
    v = ctx.values
    return bool(v.get("BUILDROOT") and v.get("KERNEL") and v.get("UBOOT") and
                v.get("BUILDROOT_ROOTFS_CPIO") and ctx.board.boot["flow"] == "extlinux")


def kernel_dtb(ctx) -> str:
    """The board's DT (board.yaml boot.dtb) as the kernel package installed it into images/."""
    from . import kernel
    pin = kernel.KernelPart().pin(ctx)
    want = ctx.board.boot.get("dtb") or ""
    if not want or not any(d.endswith("/" + want) for d in pin.dtbs):
        raise SeedfwError(f"kernel package {pin.package} has no device tree {want or '(none)'} "
                          "(board.yaml boot.dtb; pin a kernel that ships it)",
                          ctx.outdir / ".config", "CONFIG_KERNEL_PACKAGE")
    return Path(want).name


def initrd(ctx) -> str:
    """The initramfs in images/: the small one that mounts the ext4 root (OS_ROOT_EXT4,
    seedfw.initramfs), else Buildroot's whole rootfs.cpio."""
    from .. import initramfs
    from . import os_root
    return initramfs.NAME if os_root.wanted(ctx) else "rootfs.cpio"


def boot_files(ctx) -> dict[str, str]:
    """{path in the boot partition: file in images/}; {} when this stage is off."""
    if not wanted(ctx):
        return {}
    return {"Image": "Image", kernel_dtb(ctx): DTB, initrd(ctx): initrd(ctx),
            f"extlinux/{CONF}": CONF}


def opp_fragment(ctx) -> Path:
    """The build's OPP fragment (seedfw.dvfs, images stage); made an overlay the way the
    qemu-aarch64 OS FIT does it (seedfw.parts.os_fit.make_overlay: one fragment on "/")."""
    return ctx.images / "dvfs" / "opp.dtb"


def extlinux(ctx, release: str, console: str) -> str:
    from . import os_root
    dtb = kernel_dtb(ctx)
    args = os_root.kernel_args(ctx) if os_root.wanted(ctx) else f"console={console} panic=-1"
    what = "ext4 root" if os_root.wanted(ctx) else "Buildroot initramfs"
    return "\n".join([
        "# seedfw rk3588: read by U-Boot's bootstd (extlinux boot method) from partition",
        "# \"boot\"; generated by seedfw (os-boot-files).",
        "default seedfw",
        "label seedfw",
        f"\tmenu label Linux {release} + {what} (seedfw agent)",
        "\tkernel /Image",
        f"\tfdt /{dtb}",
        f"\tinitrd /{initrd(ctx)}",
        f"\tappend {args}", ""])


def console_arg(ctx, dt: fdt.Node) -> str:
    """console=<tty>,<baud>: the tty Buildroot's getty uses, the rate of the DT's stdout-path
    (rock-5b: "serial2:1500000n8"), so kernel and getty talk at the rate U-Boot used."""
    tty = ctx.values.get("BUILDROOT_CONSOLE") or "ttyS2"
    chosen = dt.children.get("chosen")
    path = chosen.str("stdout-path") if chosen else None
    rate = path.split(":", 1)[1] if path and ":" in path else "1500000n8"
    return f"{tty},{rate}"


def uboot_environment(elf: Path) -> dict[str, int]:
    """kernel_addr_r, fdt_addr_r, ramdisk_addr_r of U-Boot's compiled-in default environment."""
    return uboot_environment_from(elf.read_bytes(), elf)


def uboot_environment_from(data: bytes, source=None) -> dict[str, int]:
    """The same from the bytes holding the environment (NUL-separated "name=value" strings)."""
    out = {}
    for name in ("kernel_addr_r", "fdt_addr_r", "ramdisk_addr_r"):
        m = re.search(rb"\0" + name.encode() + rb"=(0x[0-9a-fA-F]+)\0", data)
        if not m:
            raise SeedfwError(f"U-Boot's default environment has no {name}", source)
        out[name] = int(m.group(1), 16)
    return out


def check_memory(env: dict[str, int], image: bytes, dtb_size: int, initrd_size: int) -> dict:
    """Where booti puts the kernel (kernel_addr_r rounded up to 2 MiB + text_offset, as U-Boot's
    booti_setup relocates an Image whose address is not 2 MiB aligned) and that its image_size
    (header: memory it occupies, BSS included) ends below the DT and the initramfs."""
    if image[56:60] != b"ARM\x64":
        raise SeedfwError("images/Image is not an arm64 Image (no ARM\\x64 magic at 56)")
    text_offset, image_size = struct.unpack_from("<QQ", image, 8)
    start = ((env["kernel_addr_r"] + 2 * MIB - 1) & ~(2 * MIB - 1)) + text_offset
    end = start + image_size
    fdt_room = env["ramdisk_addr_r"] - env["fdt_addr_r"]
    doc = {"source": "computed from u-boot.elf's default environment and the Image header",
           **{k: f"0x{v:x}" for k, v in env.items()},
           "kernel": {"start": f"0x{start:x}", "end": f"0x{end:x}", "image_size": image_size},
           "dtb": {"size": dtb_size, "room": fdt_room}, "initrd": {"size": initrd_size}}
    if end > min(env["fdt_addr_r"], env["ramdisk_addr_r"]):
        raise SeedfwError(f"the kernel (0x{start:x}..0x{end:x}) overlaps fdt_addr_r / "
                          "ramdisk_addr_r of U-Boot's environment")
    if env["fdt_addr_r"] < env["ramdisk_addr_r"] and dtb_size > fdt_room:
        raise SeedfwError(f"the DT ({dtb_size:,} bytes) does not fit below ramdisk_addr_r")
    return doc


def uboot_config(ctx) -> dict[str, str]:
    from . import uboot_rockchip as rockchip
    cache = json.loads((ctx.build_dir("u-boot") / "cache.json").read_text())
    return rockchip.uboot_config(Path(cache["build"]))


class OsBootFilesPart(Part):
    __doc__ = DOC
    name = "os-boot-files"
    symbols = ("BUILDROOT", "BUILDROOT_ROOTFS_CPIO", "BUILDROOT_CONSOLE", "KERNEL",
               "KERNEL_PACKAGE", "UBOOT")

    def enabled(self, values):
        return bool(values.get("BUILDROOT") and values.get("KERNEL") and values.get("UBOOT"))

    def steps(self, ctx):
        return _steps(ctx) if wanted(ctx) else []

    def artifacts(self, ctx):
        if not wanted(ctx):
            return []
        return [ctx.images / n for n in (DTB, CONF, INFO)] + [ctx.images / "dvfs" / osimage.OVERLAY]

    def boot_artifacts(self, ctx):
        return _boot_artifacts(ctx)


def _boot_artifacts(ctx):
    if not wanted(ctx):
        return []
    where = 'disk partition "boot" (ext4)'
    return [BootArtifact(CONF, "extlinux", "U-Boot bootstd (extlinux boot method)",
                         f"{where}: /extlinux/{CONF}", partition="boot"),
            BootArtifact(DTB, "dtb", "U-Boot (extlinux fdt), then Linux",
                         f"{where}: /{kernel_dtb(ctx)}", partition="boot"),
            BootArtifact(initrd(ctx), "initramfs", "U-Boot (extlinux initrd), then Linux",
                         f"{where}: /{initrd(ctx)}", qemu="initrd", qemu_modes=("os",),
                         partition="boot")]


def _steps(ctx) -> list:
    outs = [ctx.images / n for n in (DTB, CONF, INFO)] + [ctx.images / "dvfs" / osimage.OVERLAY]
    dtb_in = kernel_dtb(ctx)
    inputs_from = ("Image", dtb_in, initrd(ctx), "u-boot.elf")

    def inputs():
        files = {n: ctx.images / n for n in inputs_from}
        files["opp"] = opp_fragment(ctx)
        return {"files": {n: util.sha256_file(p) if p.is_file() else None
                          for n, p in files.items()},
                "kernel": ctx.values.get("KERNEL_PACKAGE"),
                "console": ctx.values.get("BUILDROOT_CONSOLE"), "version": VERSION,
                "extlinux": extlinux(ctx, "", "")}

    def run(step):
        say = lambda m: ctx.progress(f"  os: {m}")      # noqa: E731
        work = ctx.build_dir("rk3588-os")
        Part.fresh_dir(work)
        config = uboot_config(ctx)
        missing = [n for n in UBOOT_NEEDS if config.get(n) != "y"]
        if missing:
            raise SeedfwError("the rk3588 U-Boot cannot boot extlinux.conf: "
                              + ", ".join(f"CONFIG_{n}" for n in missing) + " not set",
                              ctx.images / "u-boot.elf")
        if not opp_fragment(ctx).is_file():
            raise SeedfwError("the OPP fragment was not built", opp_fragment(ctx))
        overlay = osimage.make_overlay(opp_fragment(ctx), work / osimage.OVERLAY, step.log)
        plan_mod.run_command(["fdtoverlay", "-i", ctx.images / dtb_in, "-o", work / DTB,
                              overlay], log=step.log)
        dt = fdt.parse((work / DTB).read_bytes(), work / DTB)
        compatible = ctx.board.boot.get("compatible")
        if compatible and compatible not in dt.strings("compatible"):
            raise SeedfwError(f"{dtb_in} is not compatible {compatible} (board.yaml "
                              f"boot.compatible; the DT says {dt.strings('compatible')})",
                              ctx.images / dtb_in)
        release = (ctx.values.get("KERNEL_PACKAGE") or "").removeprefix("linux-image-")
        util.write_text(work / CONF, extlinux(ctx, release, console_arg(ctx, dt)))
        image = (ctx.images / "Image").read_bytes()
        memory = check_memory(uboot_environment(ctx.images / "u-boot.elf"), image,
                              (work / DTB).stat().st_size,
                              (ctx.images / initrd(ctx)).stat().st_size)
        files = {n: (work / n if n in (DTB, CONF) else ctx.images / n)
                 for n in boot_files(ctx).values()}
        total = sum(f.stat().st_size for f in files.values())
        # ext4 metadata (inode tables, journal: 4 MiB) takes ~10 % of a 64 MiB file system
        if total > OS_PARTITION_SIZE * 9 // 10:
            raise SeedfwError(f"the boot files ({total:,} bytes: kernel, DT, initramfs) do not "
                              f"fit the {OS_PARTITION_SIZE // MIB} MiB boot partition "
                              "with room for ext4's metadata", ctx.images / initrd(ctx))
        doc = {"boot_files": boot_files(ctx), "boot_bytes": total, "dtb": {"from": dtb_in, "overlay": overlay.name,
                                                      "applied_with": "fdtoverlay"},
               "uboot_config": {f"CONFIG_{n}": config.get(n) for n in UBOOT_NEEDS},
               "uboot_bootcmd": config.get("BOOTCOMMAND"), "memory": memory}
        util.write_json(work / INFO, doc)
        say(f"{DTB} ({dtb_in} + {overlay.name}), {CONF}; kernel at {memory['kernel']['start']}"
            f"..{memory['kernel']['end']} below fdt_addr_r {memory['fdt_addr_r']} (computed)")
        step.install({**{ctx.images / n: work / n for n in (DTB, CONF, INFO)},
                      ctx.images / "dvfs" / overlay.name: overlay})

    needs = (*(ctx.images / n for n in inputs_from), opp_fragment(ctx))
    return [plan_mod.Step("os.rk3588", run, needs=needs, inputs=inputs, version=VERSION,
                          package="os", outputs=tuple(outs))]
