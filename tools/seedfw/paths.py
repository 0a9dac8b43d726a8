"""Where things are: the source tree (found from this package) and the output directory.

The package is installed editable from `tools/`, so the tree root is two levels up; data that
belongs to the tree (boards, configs, firmware) is read from there, never copied into site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOARD_DIR = ROOT / "board"
CONFIG_DIR = ROOT / "configs"
FIRMWARE_DIR = ROOT / "firmware"
KCONFIG = ROOT / "Kconfig"


def output_dir(board: str, output: str | os.PathLike | None = None) -> Path:
    """`--output DIR` wins (Buildroot's O=); the default is output/<board>/ in the tree."""
    if output:
        return Path(output).resolve()
    return ROOT / "output" / board


def download_dir() -> Path:
    """Shared download cache, reused across output directories."""
    return Path(os.environ.get("SEEDFW_DL_DIR", Path.home() / ".cache" / "seedfw" / "dl"))
