"""Real third-party ELFs for stats tests and benchmarks (pinned packages: seedfw.sources.debs)."""

from __future__ import annotations

from pathlib import Path

from ..sources import debs

UBOOT_ARM64_ELF = (debs.UBOOT_QEMU, "usr/lib/u-boot/qemu_arm64/uboot.elf")
LIBASAN_ELF = (debs.LIBASAN_ARM64, "usr/aarch64-linux-gnu/lib/libasan.so.8.0.0")


def sample_elf(which: tuple, cache: Path | None = None) -> Path:
    """Fetched once into the download cache; SeedfwError when that is impossible."""
    deb, member = which
    return debs.member(deb, member)
