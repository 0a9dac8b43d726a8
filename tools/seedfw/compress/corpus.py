"""Reference images for dictionary training and benchmarks: Debian's u-boot-qemu (pinned in
seedfw.sources.debs), whose AArch64 firmware ELFs are other images than the ones we compress."""

from __future__ import annotations

from pathlib import Path

from ..sources import debs

UBOOT_QEMU_DEB = debs.UBOOT_QEMU.file


def uboot_qemu_dir(log: Path | None = None, progress=lambda s: None) -> Path:
    """Fetch (cached, verified) and unpack u-boot-qemu; return its usr/lib/u-boot directory."""
    return debs.extract(debs.UBOOT_QEMU, log, progress) / "usr" / "lib" / "u-boot"


def uboot_qemu_elf(board: str = "qemu_arm64", log: Path | None = None) -> Path:
    """Path of u-boot-qemu's ELF for `board` (qemu_arm64, qemu_arm, ...)."""
    return debs.member(debs.UBOOT_QEMU, f"usr/lib/u-boot/{board}/uboot.elf", log)
