"""The disk layout facts more than one part needs: partition GUIDs (uuid5 of the board name) and
the rootfs partition's size. Here, not in the disk part, because the parts that fill the disk
(the ext4 root's kernel command line names the rootfs PARTUUID) must not import the part that
assembles it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from ..errors import SeedfwError

MIB = 1 << 20
# Where qemu_arm64's boot command reads the OS FIT (seedfw.parts.uboot) and the OS FIT's boot
# script unpacks it from (seedfw.parts.os_fit): RAM from 0x40000000; the firmware FIT's payload
# sits at 0x60000000, the boot package at 0x60400000.
OS_FIT_ADDR = 0x48000000
PARTITION_SIZE = 16 * MIB          # a partition with nothing to hold (placeholder)
NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-000000000000")   # our uuid5 namespace


def rootfs_cpio(ctx) -> Path | None:
    """The file providing role "rootfs-cpio" (Buildroot's) when the "rootfs" partition is to
    hold it (BUILDROOT_ROOTFS_EXT4), else None."""
    v = ctx.values
    if v.get("BUILDROOT") and v.get("BUILDROOT_ROOTFS_CPIO") and v.get("BUILDROOT_ROOTFS_EXT4"):
        return ctx.file("rootfs-cpio")
    return None


def ext4_root(values: dict) -> bool:
    """The OS's root is the ext4 "rootfs" partition (OS_ROOT_EXT4: the os-root part builds
    the initramfs that mounts it; os-boot-files writes the command line below)."""
    v = values
    return bool(v.get("OS_ROOT_EXT4") and v.get("BUILDROOT") and v.get("KERNEL") and
                v.get("BUILDROOT_ROOTFS_CPIO") and v.get("BUILDROOT_ROOTFS_EXT4"))


def kernel_args(ctx) -> str:
    """The ext4 root's whole kernel command line (extlinux.conf `append`): root by PARTUUID,
    no console= (the DT's stdout-path names it), panic=-1 (a failed boot resets instead of
    hanging)."""
    return f"root=PARTUUID={guid(ctx, 'part-' + root_partition(ctx))} rootwait panic=-1"


def ab_slots(ctx) -> tuple[str, ...] | None:
    """The slot partitions (A, B) the "rootfs" entry becomes under CONFIG_UPDATE (board.yaml
    update.slots; seedfw.update.slots), None without the A/B layout."""
    u = ctx.board.update
    return tuple(u["slots"]) if ctx.values.get("UPDATE") and u else None


def root_partition(ctx) -> str:
    """The GPT name of the partition the OS's root is on: slot A under CONFIG_UPDATE (the
    factory env boots A first), else "rootfs"."""
    slots = ab_slots(ctx)
    return slots[0] if slots else "rootfs"


def rootfs_size(ctx) -> int:
    """BUILDROOT_ROOTFS_EXT4_SIZE ("32M", "65536K", ...) in bytes when the rootfs is
    Buildroot's; the placeholder is PARTITION_SIZE."""
    if rootfs_cpio(ctx) is None:
        return PARTITION_SIZE
    text = str(ctx.values.get("BUILDROOT_ROOTFS_EXT4_SIZE") or "32M")
    m = re.fullmatch(r"(\d+)([KMG])", text.strip())
    size = int(m.group(1)) << {"K": 10, "M": 20, "G": 30}[m.group(2)] if m else 0
    if size < MIB or size % MIB:
        raise SeedfwError(f"'{text}' is not a size in whole MiB of at least 1M (e.g. 32M)",
                          Path(getattr(ctx, "outdir", ".")) / ".config",
                          "CONFIG_BUILDROOT_ROOTFS_EXT4_SIZE")
    return size


def guid(ctx, what: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{ctx.board.name}/{what}"))


def dvfs_region(board):
    """board.yaml memory region "dvfs": where SPL loads the DVFS table (reserved in the DT)."""
    region = next((r for r in board.memory if r.name == "dvfs"), None)
    if region is None:
        raise SeedfwError("no memory region 'dvfs' (where SPL loads the DVFS table)",
                          board.dir / "board.yaml", "memory")
    return region


def read_dot_config(path: Path) -> dict[str, str]:
    """CONFIG_* of a Kconfig .config (strings unquoted): U-Boot's, for the parts that check
    what was compiled (role u-boot-build names its build directory)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            key, value = line.split("=", 1)
            out[key[7:]] = value[1:-1] if value.startswith('"') else value
    return out


def extlinux_os(ctx) -> bool:
    """The "boot" partition holds an OS U-Boot boots through extlinux.conf (os-boot-files):
    here because the part providing the overlay extlinux.conf names (fit-verify) is enabled by
    the same condition and must not import os-boot-files."""
    v = ctx.values
    return bool(v.get("BUILDROOT") and v.get("KERNEL") and v.get("UBOOT") and
                v.get("BUILDROOT_ROOTFS_CPIO") and ctx.capable("extlinux"))
