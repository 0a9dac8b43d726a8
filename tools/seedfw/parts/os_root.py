"""The OS's root on the ext4 "rootfs" partition: kernel modules, the small initramfs, and what
the rootfs carries besides Buildroot's tree (before seedfw.parts.os_boot_files).

Boot flow (rk3588; docs/os.md): U-Boot's bootstd reads /extlinux/extlinux.conf from the
bootable "boot" partition → Image + DT (OPP overlay applied) + initramfs.cpio → the
initramfs's /init loads the module closure (seedfw.linux.modules), finds the partition whose GPT
unique GUID is `root=PARTUUID=` (the "rootfs" partition's, uuid5 of the board name:
seedfw.parts.layout.guid), mounts it ext4 and switch_roots to Buildroot's /sbin/init → the
agent (S99seedfw-agent) checks the boot package U-Boot verified and left in the reserved
"boot-package" region (seedfw.parts.fit_verify; `--mem`) → `agent: ok`.

What the disk stage adds to Buildroot's tree for the ext4 root (Output role rootfs-overlay,
extracted at "/" of partition "rootfs", and the Place of role boot-package):
  /lib/modules/<release>/…      images/os-modules.tar (the closure + depmod's index)
  /usr/share/seedfw/boot.pkg    images/<board>-boot.pkg, only on a board without a
                                "boot-package" memory region (no U-Boot of ours hands it over
                                in RAM): the agent then reads it with --file
                                (seedfw.buildroot.external). rk3588 has the region.

The kernel command line has no console=: Linux then takes the console from the DT's
/chosen/stdout-path (Rock 5B: serial2:1500000n8 → ttyS2 at 1.5 Mbaud; QEMU virt: its PL011),
so the same extlinux.conf line is right for the board and for the emulated proof, where only
the DT and the storage driver differ (tests/test_os_root.py).

Kconfig symbols read: OS_ROOT_EXT4, OS_MODULES, OS_MODULES_EMULATION, OS_MODULES_ALL,
OS_ROOT_WAIT, KERNEL_PACKAGE, BUILDROOT_ROOTFS_EXT4_SIZE (the full module set must fit).
Steps: os-root.modules (after kernel.extract), os-root.initramfs (after buildroot.build,
os-root.modules).
Outputs: images/os-modules.tar, os-modules.json, initramfs.cpio, initramfs.json.
"""

from __future__ import annotations

from pathlib import Path

from ..linux import initramfs, modules as os_modules
from .. import plan as plan_mod
from .. import util
from ..buildroot.external import PACKAGE_PATH
from ..errors import SeedfwError
from .base import Output, Part, Place, Placement

INITRAMFS_INFO = "initramfs.json"
VERSION = "1"


def wanted_by(v: dict) -> bool:
    from .layout import ext4_root
    return ext4_root(v)


def release(ctx) -> str:
    return (ctx.values.get("KERNEL_PACKAGE") or "").removeprefix("linux-image-")


def partuuid(ctx) -> str:
    from . import layout
    return layout.guid(ctx, "part-" + layout.root_partition(ctx))


def kernel_args(ctx) -> str:
    from . import layout
    return layout.kernel_args(ctx)


def _where(ctx, symbol):
    return (Path(getattr(ctx, "outdir", ".")) / ".config", f"CONFIG_{symbol}")


class OsRootPart(Part):
    """Ext4 root (OS_ROOT_EXT4): the OS pieces — the kernel module closure (os-root.modules) and the
    initramfs that loads it (os-root.initramfs). Kconfig symbols: see `symbols`. Inputs: the
    pinned kernel .deb (seedfw.parts.kernel), images/rootfs.cpio (BusyBox and its
    libraries). Outputs: images/os-modules.tar/.json, images/initramfs.cpio/.json. Options:
    OS_MODULES (names; closure added), OS_MODULES_EMULATION (virtio_blk: the QEMU proof),
    OS_MODULES_AGENT (rootfs only: the agent's init script loads them), OS_MODULES_ALL (every
    module into the rootfs), OS_ROOT_WAIT (seconds)."""

    name = "os-root"
    symbols = ("OS_ROOT_EXT4", "OS_MODULES", "OS_MODULES_EMULATION", "OS_MODULES_AGENT",
               "OS_MODULES_ALL",
               "OS_ROOT_WAIT", "KERNEL_PACKAGE")
    provides = ("rootfs-overlay", "os-modules-info", "initrd", "initramfs-info")
    when = "OS_ROOT_EXT4=y (with BUILDROOT_ROOTFS_CPIO and BUILDROOT_ROOTFS_EXT4)"

    def enabled(self, ctx) -> bool:
        return wanted_by(ctx.values)

    def check_config(self, ctx) -> None:
        if not os_modules.wanted_names(ctx.values):
            raise SeedfwError("no module names: the initramfs could not mount an ext4 root on "
                              "a kernel that has ext4 as a module", *_where(ctx, "OS_MODULES"))

    def outputs(self, ctx):
        rootfs = Placement(storage=ctx.board.boot["storage"], partition="rootfs", path="/")
        return [Output(ctx.images / os_modules.TAR, "os-root.modules", ("rootfs-overlay",),
                       placement=rootfs),
                Output(ctx.images / os_modules.INFO, "os-root.modules", ("os-modules-info",)),
                Output(ctx.images / initramfs.NAME, "os-root.initramfs", ("initrd",)),
                Output(ctx.images / INITRAMFS_INFO, "os-root.initramfs", ("initramfs-info",))]

    def places(self, ctx):
        """The build's boot package goes into the rootfs, where the agent reads it (--file),
        unless the board has a "boot-package" region: U-Boot then hands it over verified, in
        RAM (seedfw.parts.fit_verify; the agent reads --mem), and a second copy in the rootfs
        would be one nobody reads."""
        if any(r.name == "boot-package" for r in ctx.board.memory):
            return []
        return [Place("boot-package", Placement(storage=ctx.board.boot["storage"],
                                                partition="rootfs", path=PACKAGE_PATH))]

    # The boot partition's files are declared by os-boot-files.
    # sbom(): none; the modules are the kernel package's record, BusyBox/libc Buildroot's.

    def steps(self, ctx) -> list[plan_mod.Step]:
        from . import kernel
        v = ctx.values
        say = lambda m: ctx.progress(f"  os-root: {m}")     # noqa: E731
        all_modules = bool(v.get("OS_MODULES_ALL"))
        wait = int(v.get("OS_ROOT_WAIT") or 15)

        def modules(step):
            k = kernel.KernelPart().pin(ctx)
            deb = kernel.fetch(k, step.log, say)
            work = Part.fresh_dir(ctx.build_dir("os-modules"))
            mods, root = os_modules.prepare(deb, k.release, os_modules.wanted_names(v),
                                            all_modules, work, step.log,
                                            _where(ctx, "OS_MODULES"),
                                            agent=os_modules.agent_names(v))
            tar = os_modules.write_tar(root, work / os_modules.TAR)
            from . import layout
            if tar.stat().st_size > layout.rootfs_size(ctx) // 2:
                raise SeedfwError(f"the modules ({tar.stat().st_size:,} bytes) take over half of "
                                  "the rootfs partition; raise it", *_where(
                                      ctx, "BUILDROOT_ROOTFS_EXT4_SIZE"))
            doc = os_modules.describe(mods, k.release, root, all_modules)
            util.write_json(work / os_modules.INFO, doc)
            say(f"{len(mods.order)} modules from {', '.join(n for n, _ in os_modules.wanted_names(v))}"
                f" + dependencies" + (f", {' '.join(mods.agent)} for the agent (rootfs only)"
                                      if mods.agent else "") +
                f" ({sum(m['size'] for m in doc['modules'].values()):,} bytes of .ko)"
                f"; {os_modules.TAR} {tar.stat().st_size:,} bytes")
            step.install({ctx.images / os_modules.TAR: tar,
                          ctx.images / os_modules.INFO: work / os_modules.INFO})

        def build_initramfs(step):
            info = os_modules.load_info(ctx.images)
            data, doc = initramfs.build(ctx.file("rootfs-cpio"), ctx.images / os_modules.TAR,
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
            plan_mod.Step("os-root.modules", modules, package=self.name, version=os_modules.VERSION,
                          needs=("kernel",),          # after kernel.extract
                          inputs={"kernel": v.get("KERNEL_PACKAGE"), "names": names,
                                  "agent": os_modules.agent_names(v),
                                  "all": all_modules,
                                  "size": str(v.get("BUILDROOT_ROOTFS_EXT4_SIZE"))}),
            plan_mod.Step("os-root.initramfs", build_initramfs, package=self.name,
                          version=initramfs.VERSION + "." + VERSION, deps=("os-root.modules",),
                          needs=("rootfs-cpio",),
                          inputs=lambda: {"wait": wait, "files": {
                              n: util.sha256_file(p) if p.is_file() else None
                              for n, p in (("rootfs.cpio", ctx.file("rootfs-cpio")),
                                           (os_modules.TAR, ctx.images / os_modules.TAR))}}),
        ]
