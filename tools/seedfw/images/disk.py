"""The SD/eMMC (or virtio) disk image: genimage writes a GPT image, bmaptool its block map
(build.py STAGES entry "seedfw.images.disk", after the boot images).

Layout (one definition, `layout()`; tests read it back through seedfw.images.gpt):

    0           protective MBR, GPT header (LBA 1) and partition array (17 KiB in all)
    32 KiB      u-boot-rockchip.bin, outside the partition table (rk3588: the boot ROM reads the
                idblock at sector 64, SPL then u-boot.itb at 8 MiB)
    16 MiB      partition "firmware": our firmware FIT (models, DVFS table, OPP fragment) raw
    +16 MiB     partition "boot": empty until the OS issue fills it (kernel, DT, boot script)
    +16 MiB     partition "rootfs": a placeholder ext4 (label "rootfs") until the OS issue

Reproducible: the disk GUID, partition GUIDs, the ext4 UUID and hash seed are derived from the
board name (uuid5), mke2fs's clock and the ext4 timestamps from SOURCE_DATE_EPOCH. The .bmap
lists the mapped ranges with their sha256 (bmaptool checks them when copying); which ranges are
"mapped" depends on the holes of the file genimage wrote, so it describes this image file.

Kconfig symbols read: UBOOT. Board fields read: name, image.format.
Outputs: images/<board>-disk.img, images/<board>-disk.img.bmap.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..packages import BootArtifact, Package

VERSION = "2"
MIB = 1 << 20
UBOOT_OFFSET = 32 * 1024
FIRMWARE_OFFSET = 16 * MIB
PARTITION_SIZE = 16 * MIB
NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-000000000000")   # our uuid5 namespace


@dataclass(frozen=True)
class Partition:
    name: str
    image: str | None          # file in images/ (or the placeholder rootfs.ext4), None = empty
    offset: int | None
    size: int | None
    in_table: bool = True


def wanted(ctx) -> bool:
    """rk3588 with U-Boot (its SD card image); the qemu board's virtio disk (firmware FIT)."""
    return bool(ctx.values.get("UBOOT"))


def disk_name(ctx) -> str:
    return f"{ctx.board.name}-disk.img"


def firmware_image(ctx) -> str:
    return f"{ctx.board.name}.itb"


def own_fit(ctx) -> bool:
    """Boards whose image format is not a FIT (qemu-aarch64: a boot package) get one here for
    U-Boot: the payload and the boot package, each with a sha256 (seedfw.images.fit)."""
    return ctx.board.image["format"] != "fit"


def layout(ctx) -> list[Partition]:
    parts = []
    if ctx.board.soc == "rk3588":
        parts.append(Partition("u-boot", "u-boot-rockchip.bin", UBOOT_OFFSET, None, False))
    # The OS FIT (kernel + initramfs + boot script; seedfw.buildroot.osimage) goes raw into
    # "boot" when the configuration builds one; it needs more room than the firmware FIT.
    os_fit = os_image(ctx)
    parts += [Partition("firmware", firmware_image(ctx), FIRMWARE_OFFSET, PARTITION_SIZE),
              Partition("boot", os_fit, None, OS_PARTITION_SIZE if os_fit else PARTITION_SIZE),
              Partition("rootfs", "rootfs.ext4", None, None)]
    return parts


OS_PARTITION_SIZE = 64 * MIB


def os_image(ctx) -> str | None:
    from ..buildroot import osimage
    return osimage.name(ctx) if osimage.wanted(ctx) else None


def guid(ctx, what: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{ctx.board.name}/{what}"))


def genimage_config(ctx) -> str:
    """The genimage configuration for this board (also written to build/disk/genimage.cfg)."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(util.source_date_epoch()))
    lines = ["image rootfs.ext4 {", "\text4 {", "\t\tuse-mke2fs = true", '\t\tlabel = "rootfs"',
             f'\t\tfs-timestamp = "{stamp}"',
             f'\t\textraargs = "-U {guid(ctx, "rootfs-fs")} -E hash_seed={guid(ctx, "hash-seed")}"',
             "\t}", f"\tsize = {PARTITION_SIZE // MIB}M", "}", "",
             f"image {disk_name(ctx)} {{", "\thdimage {", '\t\tpartition-table-type = "gpt"',
             f'\t\tdisk-uuid = "{guid(ctx, "disk")}"', "\t}"]
    for p in layout(ctx):
        lines.append(f"\tpartition {p.name} {{")
        if not p.in_table:
            lines.append('\t\tin-partition-table = "false"')
        else:
            lines.append(f'\t\tpartition-uuid = "{guid(ctx, "part-" + p.name)}"')
        if p.image:
            lines.append(f'\t\timage = "{p.image}"')
        if p.offset is not None:
            lines.append(f"\t\toffset = {p.offset // 1024}K")
        if p.size is not None:
            lines.append(f"\t\tsize = {p.size // 1024}K")
        lines.append("\t}")
    lines += ["}", ""]
    return "\n".join(lines)


def boot_artifacts(ctx):
    if not wanted(ctx):
        return []
    where = "SD card / eMMC (whole device)" if ctx.board.soc == "rk3588" else "QEMU virtio disk"
    # The disk image is what is written to storage, not itself read at boot (its parts are,
    # and are declared by whoever makes them): at_boot=False keeps it out of the boot-bytes
    # figures of the report while `invoke flash` still finds it.
    out = [BootArtifact(disk_name(ctx), "disk", "the board's storage, as written",
                        where, flash=("rockusb", "sdcard"), at_boot=False)]
    if own_fit(ctx):
        # Read by U-Boot at boot, but it carries the boot package the report already counts
        # (images.steps declares it): at_boot=False until the report follows the U-Boot path.
        out.append(BootArtifact(firmware_image(ctx), "firmware-fit",
                                "U-Boot (iminfo / imxtract verify every hash)",
                                "partition 'firmware' of the disk image", at_boot=False))
    return out


def qemu_fit(ctx, target: Path, log) -> Path:
    """<board>.itb for U-Boot on QEMU: the payload (at the bl33 region, conf `firmware`) and the
    boot package (a loadable at the boot-package region)."""
    from . import fit
    from .entries import FirmwareEntry, read
    board = ctx.board
    entries = [FirmwareEntry("payload", read(ctx.images / "bl33.bin"), arch="arm64",
                             load=board.region("bl33").base),
               FirmwareEntry("package", read(ctx.images / f"{board.name}-boot.pkg"), arch="arm64",
                             load=board.region("boot-package").base)]
    return fit.build(entries, target, description=f"seedfw {board.name} firmware", log=log)


def make(ctx, work: Path, log, say=lambda m: None) -> dict[Path, Path]:
    """Write the disk image (and, for boards without one, the firmware FIT) under `work`;
    returns {final path in images/: built file}. Usable outside a build (tests rebuild a
    tampered twin with it)."""
    Package.fresh_dir(work)
    inputs = work / "in"
    for d in ("root", "tmp", "out", "in"):
        (work / d).mkdir()
    products = {}
    if own_fit(ctx):
        fit_path = qemu_fit(ctx, inputs / firmware_image(ctx), log)
        products[ctx.images / firmware_image(ctx)] = fit_path
    for p in layout(ctx):
        if p.image and p.image != "rootfs.ext4" and not (inputs / p.image).exists():
            if not (ctx.images / p.image).is_file():
                raise SeedfwError(f"the disk image needs {p.image}, which was not built",
                                  ctx.images / p.image)
            (inputs / p.image).symlink_to(ctx.images / p.image)
    util.write_text(work / "genimage.cfg", genimage_config(ctx))
    epoch = str(util.source_date_epoch())
    plan_mod.run_command(["genimage", "--config", work / "genimage.cfg", "--rootpath", work / "root",
                          "--tmppath", work / "tmp", "--inputpath", inputs,
                          "--outputpath", work / "out"], cwd=work, log=log,
                         env={"SOURCE_DATE_EPOCH": epoch, "E2FSPROGS_FAKE_TIME": epoch})
    img = work / "out" / disk_name(ctx)
    bmap = work / "out" / f"{img.name}.bmap"
    plan_mod.run_command(["bmaptool", "create", img, "-o", bmap], log=log)
    say(f"{img.name} {img.stat().st_size // MIB} MiB (GPT: "
        f"{', '.join(p.name for p in layout(ctx) if p.in_table)}) + .bmap")
    products[ctx.images / img.name] = img
    products[ctx.images / bmap.name] = bmap
    return products


def add_steps(plan, ctx) -> list[Path]:
    if not wanted(ctx):
        return []
    out = [ctx.images / disk_name(ctx), ctx.images / f"{disk_name(ctx)}.bmap"]
    if own_fit(ctx):
        out.append(ctx.images / firmware_image(ctx))
    sources = ["bl33.bin", f"{ctx.board.name}-boot.pkg"] if own_fit(ctx) else \
        [p.image for p in layout(ctx) if p.image and p.image != "rootfs.ext4"]
    if own_fit(ctx) and os_image(ctx):
        sources.append(os_image(ctx))

    def inputs():
        return {"config": genimage_config(ctx), "own_fit": own_fit(ctx),
                "epoch": util.source_date_epoch(),
                "images": {n: util.sha256_file(ctx.images / n) if (ctx.images / n).is_file()
                           else None for n in sources}}

    def run(step):
        step.install(make(ctx, ctx.build_dir("disk"), step.log,
                          lambda m: ctx.progress(f"  disk: {m}")))

    deps = tuple(s for s in ("image.pack", "uboot.binman", "os.fit") if s in plan.steps)
    plan.add(plan_mod.Step("disk.image", run, deps=deps, inputs=inputs, version=VERSION,
                           package="disk", outputs=tuple(out)))
    return out
