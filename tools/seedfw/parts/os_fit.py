"""The OS FIT U-Boot boots (board capability os-fit): kernel + initramfs + boot script + overlay."""

from __future__ import annotations

from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from .base import Output, Part, Placement
from .layout import OS_FIT_ADDR as FIT_ADDR
from .overlay import OVERLAY, make_overlay, overlay_dts  # noqa: F401  (tests use them from here)

DOC = """OS FIT (board capability os-fit): kernel + Buildroot initramfs + boot script + OPP overlay,
each with a sha256, for U-Boot to verify and boot. The disk part writes it raw into the "boot"
partition; U-Boot's boot command (seedfw.parts.uboot) finds it there.

Why a FIT and not extlinux.conf: U-Boot verifies every image's sha256 before using it (`iminfo`),
the same way it already treats our firmware FIT, so a corrupted kernel or rootfs stops the boot
in U-Boot with its own "Bad hash value" line instead of reaching Linux; and a raw partition
needs no filesystem in the image and no filesystem driver in U-Boot.

The boot script (image "boot", run by `source <addr>:boot`) works on a copy of U-Boot's own DT —
QEMU's, with the PSCI node TF-A added, i.e. the only DT that knows what TF-A provides — adds a
`no-map` reserved-memory node over the boot package U-Boot has just copied out of the firmware
FIT (so the kernel leaves it alone and the agent may read it through /dev/mem), applies the
OPP overlay (`fdt apply`), extracts the kernel and initramfs (extracting verifies their hashes
again) and runs `booti`.

The OPP overlay (images/dvfs/opp.dtbo, image "opp" of type flat_dt): the OPP tables of the
build's DVFS fragment (images/dvfs/opp.dtb, seedfw.dvfs.to_dts) as a DT overlay with one
fragment, `target-path = "/"` — the tables are self-contained (no phandle references in or
out), so the overlay needs no __fixups__/__symbols__ and applies to any base DT. It comes from
the same board file as the DVFS table in the boot package but reaches Linux by another route,
which is why the agent (`--dt-opp /proc/device-tree`) compares the two.

Kconfig symbols read: BUILDROOT, KERNEL, UBOOT, BUILDROOT_ROOTFS_CPIO, KERNEL_PACKAGE.
Board: capability os-fit, memory "boot-package". Needs roles: kernel, rootfs-cpio, opp-fragment.
Output: images/<board>-os.itb (role os-fit), images/dvfs/opp.dtbo (role dtb-overlay).
"""

VERSION = "2"           # 2: the OPP overlay (image "opp", applied by the boot script)
# Where U-Boot unpacks the OS FIT it read at FIT_ADDR (seedfw.parts.uboot.OS_FIT_ADDR).
KERNEL_ADDR = 0x40400000
RAMDISK_ADDR = 0x4C000000
# qemu_arm64's environment has no fdt_addr_r; the DT copy goes below the FIT (read up to 64 MiB).
FDT_ADDR = 0x47000000
FDT_COPY_SIZE = 0x100000
OVERLAY_ADDR = 0x46F00000            # the overlay, just below the DT copy
KERNEL_ARGS = "console=ttyAMA0 panic=-1"


def name(ctx) -> str:
    return f"{ctx.board.name}-os.itb"


def script(ctx, ramdisk_size: int) -> str:
    r = next((m for m in ctx.board.memory if m.name == "boot-package"), None)
    if r is None:
        raise SeedfwError("no memory region 'boot-package'", ctx.board.dir / "board.yaml",
                          "memory")
    node = f"/reserved-memory/seedfw-boot-package@{r.base:x}"
    return "\n".join([
        f"echo seedfw: Linux with the boot package at 0x{r.base:x} reserved (no-map)",
        f"fdt move ${{fdtcontroladdr}} 0x{FDT_ADDR:x} 0x{FDT_COPY_SIZE:x}",
        "fdt mknode / reserved-memory",
        "fdt set /reserved-memory '#address-cells' <2>",
        "fdt set /reserved-memory '#size-cells' <2>",
        "fdt set /reserved-memory ranges",
        f"fdt mknode /reserved-memory seedfw-boot-package@{r.base:x}",
        f"fdt set {node} reg <0x0 0x{r.base:x} 0x0 0x{r.size:x}>",
        f"fdt set {node} no-map",
        f"imxtract 0x{FIT_ADDR:x} opp 0x{OVERLAY_ADDR:x}",
        # A failed apply leaves the DT unusable (U-Boot's own warning): stop, do not boot it.
        f"if fdt apply 0x{OVERLAY_ADDR:x}; then echo seedfw: OPP overlay applied to the DT; "
        "else echo seedfw: OPP overlay did not apply, not booting Linux; poweroff; fi",
        f"imxtract 0x{FIT_ADDR:x} kernel 0x{KERNEL_ADDR:x}",
        f"imxtract 0x{FIT_ADDR:x} ramdisk 0x{RAMDISK_ADDR:x}",
        f"setenv bootargs {KERNEL_ARGS}",
        f"booti 0x{KERNEL_ADDR:x} 0x{RAMDISK_ADDR:x}:0x{ramdisk_size:x} 0x{FDT_ADDR:x}",
        "echo seedfw: booti returned; not booting Linux", ""])


def its(board: str, kernel_release: str) -> str:
    def image(node, desc, data, kind, extra=""):
        return (f"\t\t{node} {{\n\t\t\tdescription = \"{desc}\";\n"
                f"\t\t\tdata = /incbin/(\"{data}\");\n\t\t\ttype = \"{kind}\";\n"
                f"\t\t\tarch = \"arm64\";\n{extra}\t\t\tcompression = \"none\";\n"
                "\t\t\thash-1 {\n\t\t\t\talgo = \"sha256\";\n\t\t\t};\n\t\t};\n")
    linux = '\t\t\tos = "linux";\n'
    return ("/dts-v1/;\n\n/ {\n"
            f"\tdescription = \"seedfw {board} OS (Linux {kernel_release}, Buildroot rootfs)\";\n"
            "\t#address-cells = <1>;\n\n\timages {\n"
            + image("kernel", f"Linux {kernel_release}", "Image", "kernel",
                    linux + f"\t\t\tload = <0x{KERNEL_ADDR:x}>;\n\t\t\tentry = <0x{KERNEL_ADDR:x}>;\n")
            + image("ramdisk", "Buildroot initramfs", "rootfs.cpio", "ramdisk", linux)
            + image("boot", "seedfw boot script", "boot.cmd", "script")
            + image("opp", "seedfw OPP overlay (from the DVFS table)", OVERLAY, "flat_dt")
            + "\t};\n\n\tconfigurations {\n\t\tdefault = \"conf-1\";\n\t\tconf-1 {\n"
            f"\t\t\tdescription = \"seedfw {board} OS\";\n\t\t\tkernel = \"kernel\";\n"
            "\t\t\tramdisk = \"ramdisk\";\n\t\t};\n\t};\n};\n")


def enabled_by(ctx) -> bool:
    v = ctx.values
    return bool(v.get("BUILDROOT") and v.get("KERNEL") and v.get("UBOOT") and
                v.get("BUILDROOT_ROOTFS_CPIO") and ctx.capable("os-fit"))


class OsFitPart(Part):
    __doc__ = DOC
    name = "os-fit"
    symbols = ("BUILDROOT", "KERNEL", "UBOOT", "BUILDROOT_ROOTFS_CPIO", "KERNEL_PACKAGE")
    provides = ("os-fit", "dtb-overlay")
    when = "BUILDROOT, KERNEL, UBOOT and BUILDROOT_ROOTFS_CPIO are y on a board with capability os-fit"

    def enabled(self, ctx):
        return enabled_by(ctx)

    def steps(self, ctx):
        return _steps(ctx)

    def outputs(self, ctx):
        step = "os-fit.build"
        return [Output(ctx.images / name(ctx), step, ("os-fit",),
                       carries=("kernel", "rootfs-cpio", "dtb-overlay"),
                       placement=Placement(storage=ctx.board.boot["storage"], partition="boot"),
                       kind="os-fit", read_by="U-Boot (iminfo, then its boot script)",
                       location="disk partition \"boot\" (raw)"),
                # Applied by U-Boot from the OS FIT; the direct OS boot (seedfw.run.os_boot)
                # applies this copy to QEMU's own DT with fdtoverlay (the overlay is in the
                # manifest for it).
                Output(ctx.images / "dvfs" / OVERLAY, step, ("dtb-overlay",), kind="dtb-overlay",
                       read_by="U-Boot (fdt apply) or fdtoverlay before QEMU",
                       location="image \"opp\" of the OS FIT", at_boot=False, qemu="dtb-overlay",
                       qemu_modes=("os",))]


def _steps(ctx) -> list:
    out = ctx.images / name(ctx)
    # the files of the FIT, by role, under the names its .its gives them
    inputs_from = {"Image": "kernel", "rootfs.cpio": "rootfs-cpio", "dvfs/opp.dtb": "opp-fragment"}
    overlay = ctx.images / "dvfs" / OVERLAY

    def inputs():
        return {"images": {n: util.sha256_file(ctx.file(r)) if ctx.file(r).is_file()
                           else None for n, r in inputs_from.items()},
                "epoch": util.source_date_epoch(), "board": ctx.board.name,
                "script": script(ctx, 0), "its": its(ctx.board.name, ""),
                "memory": [[m.name, m.base, m.size] for m in ctx.board.memory]}

    def run(step):
        work = ctx.build_dir("os-fit")
        if work.exists():
            import shutil
            shutil.rmtree(work)
        work.mkdir(parents=True)
        for n, r in inputs_from.items():
            util.copy_file(ctx.file(r), work / Path(n).name)
        make_overlay(work / "opp.dtb", work / OVERLAY, step.log)
        release = (ctx.values.get("KERNEL_PACKAGE") or "").removeprefix("linux-image-")
        size = (work / "rootfs.cpio").stat().st_size
        # In a FIT a script image's data is the script text itself (`source addr:boot`).
        (work / "boot.cmd").write_text(script(ctx, size))
        (work / "os.its").write_text(its(ctx.board.name, release))
        # Streamed (seedfw.images.fit_stream): the kernel and initramfs are copied and hashed
        # once, never held whole in memory; the bytes are what `mkimage -f os.its` writes.
        from ..images import fit_stream
        fit_stream.write_its(work / "os.its", work / name(ctx), util.source_date_epoch())
        ctx.progress(f"  os-fit: {name(ctx)} {(work / name(ctx)).stat().st_size:,} bytes "
                     f"(kernel, initramfs {size:,} bytes, boot script, OPP overlay)")
        step.install({out: work / name(ctx), overlay: work / OVERLAY})

    return [plan_mod.Step("os-fit.build", run, needs=tuple(inputs_from.values()),
                          inputs=inputs, version=VERSION, package="os-fit",
                          tools=("mkimage", "dtc"))]
