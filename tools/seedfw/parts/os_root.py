"""The OS's root on the ext4 "rootfs" partition: kernel modules, the small initramfs, and what
the rootfs carries besides Buildroot's tree (before seedfw.parts.os_boot_files).

Boot flow (rk3588; docs/os.md): U-Boot's bootstd reads /extlinux/extlinux.conf from the
bootable "boot" partition → Image + DT (OPP overlay applied) + initramfs.cpio → the
initramfs's /init loads the module closure (seedfw.os_modules), finds the partition whose GPT
unique GUID is `root=PARTUUID=` (the "rootfs" partition's, uuid5 of the board name:
seedfw.parts.layout.guid), mounts it ext4 and switch_roots to Buildroot's /sbin/init → the
agent (S99seedfw-agent) checks the boot package this rootfs carries → `agent: ok`.

What the disk stage adds to Buildroot's tree for the ext4 root (`rootfs_additions`):
  /lib/modules/<release>/…      images/os-modules.tar (the closure + depmod's index)
  /usr/share/seedfw/boot.pkg    images/<board>-boot.pkg: the build's boot package (DVFS table,
                                models). The agent reads it with --file: no bootloader of ours
                                places it in RAM on rk3588 (stock U-Boot, extlinux), and the
                                kernel's DT reserves nothing for it (seedfw.buildroot.external).

The kernel command line has no console=: Linux then takes the console from the DT's
/chosen/stdout-path (Rock 5B: serial2:1500000n8 → ttyS2 at 1.5 Mbaud; QEMU virt: its PL011),
so the same extlinux.conf line is right for the board and for the emulated proof, where only
the DT and the storage driver differ (tests/test_os_root.py).

Kconfig symbols read: OS_ROOT_EXT4, OS_MODULES, OS_MODULES_EMULATION, OS_MODULES_ALL,
OS_ROOT_WAIT, KERNEL_PACKAGE, BUILDROOT_ROOTFS_EXT4_SIZE (the full module set must fit).
Steps: os.modules (after kernel.extract), os.initramfs (after buildroot.build, os.modules).
Outputs: images/os-modules.tar, os-modules.json, initramfs.cpio, initramfs.json.
"""

from __future__ import annotations

from pathlib import Path

from .. import initramfs, os_modules
from .. import plan as plan_mod
from .. import util
from ..buildroot.external import PACKAGE_PATH
from ..errors import SeedfwError
from .base import Part

INITRAMFS_INFO = "initramfs.json"
VERSION = "1"


def wanted_by(v: dict) -> bool:
    return bool(v.get("OS_ROOT_EXT4") and v.get("BUILDROOT") and v.get("KERNEL") and
                v.get("BUILDROOT_ROOTFS_CPIO") and v.get("BUILDROOT_ROOTFS_EXT4"))


def wanted(ctx) -> bool:
    return wanted_by(ctx.values)


def release(ctx) -> str:
    return (ctx.values.get("KERNEL_PACKAGE") or "").removeprefix("linux-image-")


def partuuid(ctx) -> str:
    from . import layout
    return layout.guid(ctx, "part-rootfs")


def kernel_args(ctx) -> str:
    """The whole command line (extlinux.conf `append`): root by PARTUUID, no console= (the DT's
    stdout-path names it), panic=-1 (a failed boot resets instead of hanging)."""
    return f"root=PARTUUID={partuuid(ctx)} rootwait panic=-1"


def rootfs_additions(ctx) -> tuple[Path | None, dict[str, Path]]:
    """(tar to extract over the rootfs tree, {path in the rootfs: file}) for the disk stage."""
    if not wanted(ctx):
        return None, {}
    return ctx.images / os_modules.TAR, {PACKAGE_PATH.lstrip("/"):
                                         ctx.images / f"{ctx.board.name}-boot.pkg"}


def _where(ctx, symbol):
    return (Path(getattr(ctx, "outdir", ".")) / ".config", f"CONFIG_{symbol}")


class OsRootPart(Part):
    """Ext4 root (OS_ROOT_EXT4): the OS pieces — the kernel module closure (os.modules) and the
    initramfs that loads it (os.initramfs). Kconfig symbols: see `symbols`. Inputs: the
    pinned kernel .deb (seedfw.parts.kernel), images/rootfs.cpio (BusyBox and its
    libraries). Outputs: images/os-modules.tar/.json, images/initramfs.cpio/.json. Options:
    OS_MODULES (names; closure added), OS_MODULES_EMULATION (virtio_blk: the QEMU proof),
    OS_MODULES_ALL (every module into the rootfs), OS_ROOT_WAIT (seconds)."""

    name = "os"
    symbols = ("OS_ROOT_EXT4", "OS_MODULES", "OS_MODULES_EMULATION", "OS_MODULES_ALL",
               "OS_ROOT_WAIT", "KERNEL_PACKAGE")

    def enabled(self, values) -> bool:
        return wanted_by(values)

    def check_config(self, ctx) -> None:
        if not os_modules.wanted_names(ctx.values):
            raise SeedfwError("no module names: the initramfs could not mount an ext4 root on "
                              "a kernel that has ext4 as a module", *_where(ctx, "OS_MODULES"))

    def artifacts(self, ctx) -> list[Path]:
        return [ctx.images / n for n in (os_modules.TAR, os_modules.INFO, initramfs.NAME,
                                         INITRAMFS_INFO)]

    # boot_artifacts(): none; the boot partition's files are declared by os-boot-files.
    # sbom(): none; the modules are the kernel package's record, BusyBox/libc Buildroot's.

    def steps(self, ctx) -> list[plan_mod.Step]:
        from . import kernel
        v = ctx.values
        say = lambda m: ctx.progress(f"  os: {m}")          # noqa: E731
        all_modules = bool(v.get("OS_MODULES_ALL"))
        wait = int(v.get("OS_ROOT_WAIT") or 15)

        def modules(step):
            k = kernel.KernelPart().pin(ctx)
            deb = kernel.fetch(k, step.log, say)
            work = Part.fresh_dir(ctx.build_dir("os-modules"))
            mods, root = os_modules.prepare(deb, k.release, os_modules.wanted_names(v),
                                            all_modules, work, step.log,
                                            _where(ctx, "OS_MODULES"))
            tar = os_modules.write_tar(root, work / os_modules.TAR)
            from . import layout
            if tar.stat().st_size > layout.rootfs_size(ctx) // 2:
                raise SeedfwError(f"the modules ({tar.stat().st_size:,} bytes) take over half of "
                                  "the rootfs partition; raise it", *_where(
                                      ctx, "BUILDROOT_ROOTFS_EXT4_SIZE"))
            doc = os_modules.describe(mods, k.release, root, all_modules)
            util.write_json(work / os_modules.INFO, doc)
            say(f"{len(mods.order)} modules from {', '.join(n for n, _ in os_modules.wanted_names(v))}"
                f" + dependencies ({sum(m['size'] for m in doc['modules'].values()):,} bytes of .ko)"
                f"; {os_modules.TAR} {tar.stat().st_size:,} bytes")
            step.install({ctx.images / os_modules.TAR: tar,
                          ctx.images / os_modules.INFO: work / os_modules.INFO})

        def build_initramfs(step):
            info = os_modules.load_info(ctx.images)
            data, doc = initramfs.build(ctx.images / "rootfs.cpio", ctx.images / os_modules.TAR,
                                        info["order"], info["release"], wait)
            work = Part.fresh_dir(ctx.build_dir("initramfs"))
            (work / initramfs.NAME).write_bytes(data)
            util.write_json(work / INITRAMFS_INFO, doc)
            say(f"{initramfs.NAME} {len(data):,} bytes (BusyBox + {len(doc['userspace']) - 1} "
                f"libraries, {len(doc['modules'])} modules, /init)")
            step.install({ctx.images / initramfs.NAME: work / initramfs.NAME,
                          ctx.images / INITRAMFS_INFO: work / INITRAMFS_INFO})

        names = os_modules.wanted_names(v)
        return [
            plan_mod.Step("os.modules", modules, package="os", version=os_modules.VERSION,
                          needs=(ctx.images / "Image",),          # after kernel.extract
                          inputs={"kernel": v.get("KERNEL_PACKAGE"), "names": names,
                                  "all": all_modules,
                                  "size": str(v.get("BUILDROOT_ROOTFS_EXT4_SIZE"))},
                          outputs=(ctx.images / os_modules.TAR, ctx.images / os_modules.INFO)),
            plan_mod.Step("os.initramfs", build_initramfs, package="os",
                          version=initramfs.VERSION + "." + VERSION,
                          needs=(ctx.images / "rootfs.cpio", ctx.images / os_modules.TAR),
                          inputs=lambda: {"wait": wait, "files": {
                              n: util.sha256_file(ctx.images / n) if (ctx.images / n).is_file()
                              else None for n in ("rootfs.cpio", os_modules.TAR)}},
                          outputs=(ctx.images / initramfs.NAME, ctx.images / INITRAMFS_INFO)),
        ]
