"""Input helpers: what a step's stamp is made of (file hashes, source trees, the Kconfig symbols
a step reads, the toolchain's version). Re-exported by seedfw.plan, where parts find them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Iterable

from . import util
from .errors import SeedfwError

def file_hashes(files: Iterable[Path], root: Path | None = None) -> dict:
    """{name: sha256} of files (names relative to `root` when given, so stamps hold no absolute paths)."""
    out = {}
    for f in sorted(Path(p) for p in files):
        key = os.path.relpath(f, root) if root else f.name
        out[key] = util.sha256_file(f) if f.exists() else None
    return out


def tree_hash(root: Path, exclude: Iterable[str] = ()) -> str:
    """sha256 over every file below `root` (relative names + contents). For small source trees only."""
    h = hashlib.sha256()
    skip = set(exclude)
    for path in sorted(Path(root).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(part in skip for part in path.relative_to(root).parts):
            h.update(rel.encode() + b"\0" + util.sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def symbols(values: dict, names: Iterable[str]) -> dict:
    """The Kconfig symbols a step reads (absent ones as None, so enabling one changes the stamp)."""
    return {n: values.get(n) for n in names}


_toolchain_lock = threading.Lock()


def toolchain_version(compiler: str, cache_dir: Path) -> str:
    """`<compiler> --version` first line, cached in `cache_dir` keyed by the compiler's path and mtime.

    Why cached: starting gcc costs ~10 ms each, and the no-op build must stay well under a second.
    """
    path = shutil.which(compiler)
    if path is None:
        raise SeedfwError(f"compiler not found: {compiler} (run 'invoke setup')")
    real = os.path.realpath(path)
    key = f"{real}:{os.stat(real).st_mtime_ns}"
    cache_file = Path(cache_dir) / "toolchains.json"
    with _toolchain_lock:
        try:
            cache = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            cache = {}
        if key not in cache:
            proc = subprocess.run([real, "--version"], stdout=subprocess.PIPE, text=True)
            cache[key] = proc.stdout.splitlines()[0] if proc.stdout else "unknown"
            util.write_json(cache_file, cache)
        return cache[key]
