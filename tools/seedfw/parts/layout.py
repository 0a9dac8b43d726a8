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
PARTITION_SIZE = 16 * MIB          # a partition with nothing to hold (placeholder)
NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-000000000000")   # our uuid5 namespace


def rootfs_cpio(ctx) -> Path | None:
    """Buildroot's rootfs.cpio when the "rootfs" partition is to hold it, else None."""
    v = ctx.values
    if v.get("BUILDROOT") and v.get("BUILDROOT_ROOTFS_CPIO") and v.get("BUILDROOT_ROOTFS_EXT4"):
        return ctx.images / "rootfs.cpio"
    return None


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
