"""Buildroot, driven by seedfw: the OS side (toolchain, rootfs, our agent) of a firmware build.

seedfw does not re-implement Buildroot; it prepares what a pinned Buildroot needs to build offline
and reproducibly, then runs it:

  tree.py       the pinned Buildroot tree (sha256 of the release tarball; a modified tree is refused)
  toolchain.py  Debian's cross gcc 12, relocated once into the cache as an external custom toolchain
  hosttar.py    GNU tar >= 1.35 (Buildroot's requirement; bookworm has 1.34), built from Debian source
  mirror.py     Buildroot's download dir from Debian origs (verified against Buildroot's .hash files)
                plus BR2_PACKAGE_OVERRIDE_FILE source overrides where no identical tarball exists
  rauc.py       the 25 sources RAUC adds (CONFIG_UPDATE_RAUC): 4 Debian origs, 21 from the mirror
  external.py   seedfw's Kconfig menu → a Buildroot defconfig in a generated BR2_EXTERNAL tree
  make.py       `make` in the output dir: log streaming, per-package progress, failure reports

Everything shared between output directories (tree, toolchain, host tar, override sources) lives in
`cache_root()`; downloads in `<download cache>/buildroot-downloads`.
"""

from __future__ import annotations

from pathlib import Path

from .. import paths

VERSION = "2025.02.16"


def cache_root() -> Path:
    """<seedfw cache>/buildroot: the unpacked tree, the relocated toolchain, host tools, overrides."""
    return paths.cache_dir() / "buildroot"


def dl_root() -> Path:
    """<download cache>/buildroot-downloads: BR2_DL_DIR (dl/) and the file:// primary site
    (primary/), beside the per-source folders of seedfw.sources."""
    return paths.download_dir() / "buildroot-downloads"
