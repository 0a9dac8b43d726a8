"""Shared by the tune tests: one base build per session, copied into each test's output dir."""

from __future__ import annotations

import shutil
from pathlib import Path

from seedfw import boards
from seedfw.tune import trial as trial_mod

_BASES: dict[str, Path] = {}


def base_build(board: str, tmp_path_factory) -> Path:
    """<dir>/tune/base built once (defconfig + the study pins, no U-Boot): what a study starts from."""
    if board not in _BASES:
        out = tmp_path_factory.mktemp(f"tune-base-{board}")
        trial_mod.ensure_base(boards.get(board), out / "tune", say=lambda m: None)
        _BASES[board] = out
    return _BASES[board]


def output_with_base(board: str, tmp_path_factory, dest: Path) -> Path:
    """A fresh output dir whose tune/base is a copy of the session's base (stamps carry no
    absolute paths, so the copy is up to date and `invoke tune` does not rebuild it)."""
    (dest / "tune").mkdir(parents=True)
    shutil.copytree(base_build(board, tmp_path_factory) / "tune" / "base", dest / "tune" / "base",
                    symlinks=True)
    return dest
