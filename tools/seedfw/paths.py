"""Where things are: the source tree (found from this package) and the output directory.

The package is installed editable from `tools/`, so the tree root is two levels up; data that
belongs to the tree (boards, configs, firmware) is read from there, never copied into site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import SeedfwError

ROOT = Path(__file__).resolve().parents[2]
BOARD_DIR = ROOT / "board"
CONFIG_DIR = ROOT / "configs"
FIRMWARE_DIR = ROOT / "firmware"
KCONFIG = ROOT / "Kconfig"


def output_dir(board: str, output: str | os.PathLike | None = None) -> Path:
    """`--output DIR` wins (Buildroot's O=); the default is output/<board>/ in the tree."""
    if output:
        return Path(output).resolve()
    import re
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", str(board)):   # a name, never a path
        raise SeedfwError(f"'{board}' is not a board name (lower-case letters, digits, '-')")
    return ROOT / "output" / board


# Variables that hold paths. Each is made absolute once, at the edge (`absolute_environment`, run
# by every Invoke task before its body), so that a relative value means "relative to where the user
# ran the command" even for code that runs in another directory (apt's private state, make -C) and
# for child processes; an empty value means unset, as in a shell's ${VAR:-default}.
PATH_VARIABLES = ("SEEDFW_DL_DIR", "SEEDFW_MIRROR_DIR", "SEEDFW_BENCH", "SEEDFW_CACHE_DIR",
                  "KCONFIG_CONFIG", "SEEDFW_RKNN_VENV", "SEEDFW_MODEL_CACHE")


def env_path(name: str) -> Path | None:
    """The path in environment variable `name`, absolute; None when unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    return Path(os.path.abspath(os.path.expanduser(value)))


# Those that name directories: one that exists as something else is refused at once, naming the
# variable, instead of failing later inside a build step with a less helpful message.
DIR_VARIABLES = ("SEEDFW_DL_DIR", "SEEDFW_MIRROR_DIR", "SEEDFW_CACHE_DIR")


def absolute_environment() -> None:
    """Rewrite the path variables in os.environ as absolute paths; drop the empty ones."""
    for name in PATH_VARIABLES:
        path = env_path(name)
        if path is None:
            os.environ.pop(name, None)
            continue
        if name in DIR_VARIABLES and path.exists() and not path.is_dir():
            raise SeedfwError("not a directory", path, name)
        if name == "SEEDFW_MIRROR_DIR" and not path.exists():
            raise SeedfwError("no such directory", path, name)
        os.environ[name] = str(path)


def cache_dir() -> Path:
    """seedfw's per-user cache ($SEEDFW_CACHE_DIR, else $XDG_CACHE_HOME/seedfw, else ~/.cache/seedfw)."""
    xdg = env_path("XDG_CACHE_HOME")
    return env_path("SEEDFW_CACHE_DIR") or (xdg or Path.home() / ".cache") / "seedfw"


def download_dir() -> Path:
    """Shared download cache, reused across output directories ($SEEDFW_DL_DIR, else <cache>/dl)."""
    return env_path("SEEDFW_DL_DIR") or cache_dir() / "dl"


def mirror_dir() -> Path | None:
    """A local directory of pinned files for offline machines ($SEEDFW_MIRROR_DIR), or None."""
    return env_path("SEEDFW_MIRROR_DIR")


# `clean` and `distclean` remove only directories carrying this file, which seedfw writes when it
# creates an output directory (or adopts an empty one, or one of its own from before the marker
# existed: .config and config.json both present). A directory that merely has a `.config`, or a
# Buildroot-like tree with build/ and images/, is never touched.
OUTPUT_MARKER = ".seedfw-output"
MARKER_TEXT = "seedfw output directory: 'invoke clean/distclean' may remove what is in here\n"


def mark_output_dir(outdir: Path) -> None:
    outdir = Path(outdir)
    marker = outdir / OUTPUT_MARKER
    if marker.is_file():
        return
    adopt = not outdir.exists() or all(p.name == ".lock" for p in outdir.iterdir()) or \
        ((outdir / ".config").is_file() and (outdir / "config.json").is_file())
    outdir.mkdir(parents=True, exist_ok=True)
    if adopt:
        marker.write_text(MARKER_TEXT)


def is_output_dir(outdir: Path) -> bool:
    marker = Path(outdir) / OUTPUT_MARKER
    try:
        return marker.is_file() and not marker.is_symlink() and \
            marker.read_text() == MARKER_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def confined(folder: Path, rel: str, source, field, allow_outside: bool = False) -> Path:
    """`rel` (a path written in a manifest) resolved inside `folder`: no absolute path, no
    `..`, no symlink leading out of the folder — whatever a manifest names would be read,
    hashed and embedded in a firmware image. Every path field of models.yaml goes through it
    (`path:` in seedfw.models, `compile.source.onnx` in seedfw.models.rknn.compile). `allow_outside`
    (invoke models --allow-outside, or SEEDFW_ALLOW_OUTSIDE_PATHS=1 for builds) lifts the
    symlink rule only."""
    if not rel or Path(rel).is_absolute() or ".." in Path(rel).parts or "\0" in rel:
        raise SeedfwError(f"path '{rel}' must be relative to {folder.name}/ without '..'",
                          source, field)
    target = folder / rel
    allow_outside = allow_outside or os.environ.get("SEEDFW_ALLOW_OUTSIDE_PATHS") == "1"
    if not allow_outside:
        real, base = target.resolve(), folder.resolve()
        if real != base and base not in real.parents:
            raise SeedfwError(f"path '{rel}' leads out of {folder.name}/ (through a symlink, to "
                              f"{real}); set SEEDFW_ALLOW_OUTSIDE_PATHS=1 to allow it",
                              source, field)
    return target


def shown(path) -> str:
    """A path as the CLI prints it: relative when it is below the current directory (short, and
    what the user typed), else absolute — never `../../tmp/x`, which names the same file only
    from where the command ran."""
    p = Path(path)
    rel = os.path.relpath(p)
    return rel if not rel.startswith("..") else os.path.abspath(p)
