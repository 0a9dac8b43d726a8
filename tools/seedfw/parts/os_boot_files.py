"""The OS as files for U-Boot's extlinux boot method (board capability extlinux)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..images import fdt
from . import layout
from .base import OS_PARTITION_SIZE, Output, Part, Place, Placement
from .overlay import OVERLAY, make_overlay

DOC = """OS boot files (board capability extlinux): the pinned kernel, the board's DT (board.yaml
boot.dtb, checked for boot.compatible) with our OPP overlay applied, the initramfs and an
extlinux.conf, for U-Boot's bootstd to find. The part places them (roles kernel, dtb, initrd,
extlinux) in the "boot" partition at the paths extlinux.conf names; the disk part makes that
partition an ext4 file system (board.yaml image.partitions) with GPT's legacy-BIOS-bootable
attribute set.

Why extlinux.conf and not a FIT + boot script (qemu-aarch64's way, seedfw.parts.os_fit):
the board's U-Boot (e.g. rk3588's rock5b-rk3588_defconfig) has its own boot command, bootstd's
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
The one overlay U-Boot does apply (`fdtoverlays`) is the reserved region for the boot package
(role boot-package-overlay, seedfw.parts.fit_verify): it belongs with the hand-over U-Boot's
seedfw_verify makes at boot, so the DT file itself stays what the kernel gets from any
bootloader. This part places it at /<its name> of "boot" and names it in extlinux.conf.

Why an initramfs: Debian's generic kernel has ext4 and the SD/eMMC host drivers as modules
(CONFIG_EXT4_FS=m, CONFIG_MMC_DW_ROCKCHIP=m, CONFIG_MMC_SDHCI_OF_DWCMSHC=m). With OS_ROOT_EXT4
it is the small images/initramfs.cpio (role initrd, os-root) that loads them and switch_roots
to the ext4 "rootfs" partition (the append line is layout.kernel_args); without it,
Buildroot's whole rootfs.cpio, which the kernel runs from RAM.

Kconfig symbols read: BUILDROOT, BUILDROOT_ROOTFS_CPIO, BUILDROOT_CONSOLE, KERNEL,
KERNEL_PACKAGE, UBOOT, OS_ROOT_EXT4. Needs roles: kernel, board-dtb, initrd, u-boot-elf,
u-boot-build, opp-fragment. Places: kernel, initrd, boot-package-overlay (when provided).
Outputs: images/<board DT>-seedfw.dtb, images/extlinux.conf,
images/dvfs/opp.dtbo (the overlay applied), images/<board>-os.json (what was checked, with the
figures and where they come from).
"""

VERSION = "2"           # 2: the ext4 root (initramfs.cpio, root=PARTUUID)
CONF = "extlinux.conf"
# What extlinux needs of U-Boot: bootstd with its extlinux method, ext4, booti for an arm64 Image.
UBOOT_NEEDS = ("BOOTSTD", "BOOTMETH_EXTLINUX", "FS_EXT4", "CMD_BOOTI")
MIB = 1 << 20
# The one overlay U-Boot applies itself (extlinux fdtoverlays): the boot package's reserved region.
VERIFY_OVERLAY = "boot-package-overlay"


def enabled_by(ctx) -> bool:
    return layout.extlinux_os(ctx)


def dtb_name(ctx) -> str:
    """The DT this part writes: the board's (board.yaml boot.dtb) with the OPP overlay."""
    return f"{Path(kernel_dtb(ctx)).stem}-seedfw.dtb"


def info_name(ctx) -> str:
    return f"{ctx.board.name}-os.json"


def kernel_dtb(ctx) -> str:
    """The board's DT (board.yaml boot.dtb) as the kernel part installs it into images/."""
    want = ctx.board.boot.get("dtb") or ""
    if not want:
        raise SeedfwError("no device tree for the extlinux boot (board.yaml boot.dtb)",
                          ctx.board.dir / "board.yaml", "boot.dtb")
    return Path(want).name


def initrd(ctx) -> str:
    """The initramfs (role initrd): os-root's small one that mounts the ext4 root, else
    Buildroot's whole rootfs.cpio."""
    got = ctx.file("initrd")
    return got.name if got is not None else "initrd"


def boot_files(ctx) -> dict[str, str]:
    """{path in the boot partition: role} in extlinux.conf's order."""
    return {"Image": "kernel", kernel_dtb(ctx): "dtb", initrd(ctx): "initrd",
            f"extlinux/{CONF}": "extlinux", **verify_overlay(ctx)}


def verify_overlay(ctx) -> dict[str, str]:
    """{name: role} of the overlay reserving the boot package U-Boot verified (role
    boot-package-overlay, seedfw.parts.fit_verify: provided on a board with a "boot-package"
    region); {} when no enabled part provides it."""
    got = ctx.file(VERIFY_OVERLAY)
    return {got.name: VERIFY_OVERLAY} if got is not None else {}


def opp_fragment(ctx) -> Path:
    """The build's OPP fragment (role opp-fragment, the image part's); made an overlay the way
    the OS FIT does it (seedfw.parts.overlay: one fragment on "/")."""
    return ctx.file("opp-fragment")


def extlinux(ctx, release: str, console: str) -> str:
    dtb = kernel_dtb(ctx)
    root = layout.ext4_root(ctx.values)
    args = layout.kernel_args(ctx) if root else f"console={console} panic=-1"
    what = "ext4 root" if root else "Buildroot initramfs"
    return "\n".join([
        f"# seedfw {ctx.board.name}: read by U-Boot's bootstd (extlinux boot method) from partition",
        "# \"boot\"; generated by seedfw (os-boot-files).",
        "default seedfw",
        "label seedfw",
        f"\tmenu label Linux {release} + {what} (seedfw agent)",
        "\tkernel /Image",
        f"\tfdt /{dtb}",
        f"\tinitrd /{initrd(ctx)}",
        # applied by U-Boot at boot: the reserved-memory node of seedfw.parts.fit_verify
        *(f"\tfdtoverlays /{name}" for name in verify_overlay(ctx)),
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
    """CONFIG_* of the U-Boot that was built (role u-boot-build: its build's .config)."""
    cache = json.loads(ctx.file("u-boot-build").read_text())
    return layout.read_dot_config(Path(cache["build"]) / ".config")


class OsBootFilesPart(Part):
    __doc__ = DOC
    name = "os-boot-files"
    symbols = ("BUILDROOT", "BUILDROOT_ROOTFS_CPIO", "BUILDROOT_CONSOLE", "KERNEL",
               "KERNEL_PACKAGE", "UBOOT")
    provides = ("dtb", "extlinux", "dtb-overlay", "os-boot-info")
    when = ("BUILDROOT, KERNEL, UBOOT and BUILDROOT_ROOTFS_CPIO are y on a board with "
            "capability extlinux")

    def enabled(self, ctx):
        return enabled_by(ctx)

    def steps(self, ctx):
        return _steps(ctx)

    def outputs(self, ctx):
        step = "os-boot-files.extlinux"
        where = 'disk partition "boot" (ext4)'
        storage = ctx.board.boot["storage"]
        return [Output(ctx.images / dtb_name(ctx), step, ("dtb",),
                       placement=Placement(storage=storage, partition="boot",
                                           path=f"/{kernel_dtb(ctx)}"),
                       kind="dtb", read_by="U-Boot (extlinux fdt), then Linux",
                       location=f"{where}: /{kernel_dtb(ctx)}"),
                Output(ctx.images / CONF, step, ("extlinux",),
                       placement=Placement(storage=storage, partition="boot",
                                           path=f"/extlinux/{CONF}"),
                       kind="extlinux", read_by="U-Boot bootstd (extlinux boot method)",
                       location=f"{where}: /extlinux/{CONF}"),
                Output(ctx.images / info_name(ctx), step, ("os-boot-info",)),
                Output(ctx.images / "dvfs" / OVERLAY, step, ("dtb-overlay",))]

    def places(self, ctx):
        """The kernel and the initramfs at the paths extlinux.conf names."""
        storage = ctx.board.boot["storage"]
        return [Place("kernel", Placement(storage=storage, partition="boot", path="/Image")),
                Place("initrd", Placement(storage=storage, partition="boot",
                                          path=f"/{initrd(ctx)}"),
                      kind="initramfs", read_by="U-Boot (extlinux initrd), then Linux",
                      location=f'disk partition "boot" (ext4): /{initrd(ctx)}', qemu="initrd",
                      qemu_modes=("os",)),
                *[Place(role, Placement(storage=storage, partition="boot", path=f"/{name}"),
                        kind="dtb-overlay",
                        read_by="U-Boot (extlinux fdtoverlays), then Linux (reserved-memory)",
                        location=f'disk partition "boot" (ext4): /{name}; reserves '
                                 + _reserves(ctx))
                  for name, role in verify_overlay(ctx).items()]]


def _reserves(ctx) -> str:
    r = next((r for r in ctx.board.memory if r.name == "boot-package"), None)
    return f"0x{r.base:x}+0x{r.size:x}" if r else "the boot-package region"


def _steps(ctx) -> list:
    DTB, INFO = dtb_name(ctx), info_name(ctx)
    dtb_in = kernel_dtb(ctx)
    roles = ("kernel", "board-dtb", "initrd", "u-boot-elf")

    def inputs():
        files = {r: ctx.file(r) for r in roles}
        files["opp"] = opp_fragment(ctx)
        return {"files": {n: util.sha256_file(p) if p is not None and p.is_file() else None
                          for n, p in files.items()},
                "kernel": ctx.values.get("KERNEL_PACKAGE"),
                "console": ctx.values.get("BUILDROOT_CONSOLE"), "version": VERSION,
                "extlinux": extlinux(ctx, "", "")}

    def run(step):
        say = lambda m: ctx.progress(f"  os-boot-files: {m}")      # noqa: E731
        work = ctx.build_dir(f"{ctx.board.name}-os")
        Part.fresh_dir(work)
        config = uboot_config(ctx)
        uboot_elf = ctx.file("u-boot-elf")
        missing = [n for n in UBOOT_NEEDS if config.get(n) != "y"]
        if missing:
            raise SeedfwError(f"the {ctx.board.name} U-Boot cannot boot extlinux.conf: "
                              + ", ".join(f"CONFIG_{n}" for n in missing) + " not set",
                              uboot_elf)
        if not opp_fragment(ctx).is_file():
            raise SeedfwError("the OPP fragment was not built", opp_fragment(ctx))
        overlay = make_overlay(opp_fragment(ctx), work / OVERLAY, step.log)
        board_dtb = ctx.file("board-dtb")
        plan_mod.run_command(["fdtoverlay", "-i", board_dtb, "-o", work / DTB,
                              overlay], log=step.log)
        dt = fdt.parse((work / DTB).read_bytes(), work / DTB)
        compatible = ctx.board.boot.get("compatible")
        if compatible and compatible not in dt.strings("compatible"):
            raise SeedfwError(f"{dtb_in} is not compatible {compatible} (board.yaml "
                              f"boot.compatible; the DT says {dt.strings('compatible')})",
                              board_dtb)
        release = (ctx.values.get("KERNEL_PACKAGE") or "").removeprefix("linux-image-")
        util.write_text(work / CONF, extlinux(ctx, release, console_arg(ctx, dt)))
        image = ctx.file("kernel").read_bytes()
        initrd_file = ctx.file("initrd")
        memory = check_memory(uboot_environment(uboot_elf), image,
                              (work / DTB).stat().st_size, initrd_file.stat().st_size)
        files = {"kernel": ctx.file("kernel"), "dtb": work / DTB, "initrd": initrd_file,
                 "extlinux": work / CONF}
        total = sum(f.stat().st_size for f in files.values())
        # ext4 metadata (inode tables, journal: 4 MiB) takes ~10 % of a 64 MiB file system
        if total > OS_PARTITION_SIZE * 9 // 10:
            raise SeedfwError(f"the boot files ({total:,} bytes: kernel, DT, initramfs) do not "
                              f"fit the {OS_PARTITION_SIZE // MIB} MiB boot partition "
                              "with room for ext4's metadata", initrd_file)
        names = {"kernel": "Image", "dtb": DTB, "initrd": initrd_file.name, "extlinux": CONF,
                 **{role: name for name, role in verify_overlay(ctx).items()}}
        doc = {"boot_files": {p: names[r] for p, r in boot_files(ctx).items()},
               "boot_bytes": total, "dtb": {"from": dtb_in, "overlay": overlay.name,
                                            "applied_with": "fdtoverlay"},
               "uboot_config": {f"CONFIG_{n}": config.get(n) for n in UBOOT_NEEDS},
               "uboot_bootcmd": config.get("BOOTCOMMAND"), "memory": memory}
        util.write_json(work / INFO, doc)
        say(f"{DTB} ({dtb_in} + {overlay.name}), {CONF}; kernel at {memory['kernel']['start']}"
            f"..{memory['kernel']['end']} below fdt_addr_r {memory['fdt_addr_r']} (computed)")
        step.install({**{ctx.images / n: work / n for n in (DTB, CONF, INFO)},
                      ctx.images / "dvfs" / overlay.name: overlay})

    needs = (*roles, "u-boot-build", "opp-fragment")
    return [plan_mod.Step("os-boot-files.extlinux", run, needs=needs, inputs=inputs,
                          version=VERSION, package="os-boot-files", tools=("fdtoverlay", "dtc"))]
