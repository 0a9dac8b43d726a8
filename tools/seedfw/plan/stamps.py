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

from .. import util
from ..errors import SeedfwError

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


# ---- the step's own code -------------------------------------------------------------------------
# Why a step's stamp covers its code and not only a `version` someone bumps: the artifact store
# outlives the code that filled it (last week's CI, another branch). A generator edited without a
# bump (the initramfs's /init) was served stale from it, and no rebuild in a fresh output
# directory would have shown it. So the stamp names the sha256 of the module that defines the
# step's run function and of every seedfw module it imports, transitively, down to the framework
# below. The framework (the plan, the part base, reading, util, the cache, config, the CLI and
# the report) builds no bytes of an image: a change there that does alters them bumps
# seedfw.cache.KEY_SALT. File granularity errs towards a rebuild (a comment counts), never
# towards stale bytes.
_SEEDFW = Path(__file__).resolve().parent.parent
FRAMEWORK = frozenset({"seedfw", "seedfw.parts", "seedfw.parts.base", "seedfw.errors",
                       "seedfw.paths", "seedfw.reading", "seedfw.textout", "seedfw.secrets",
                       "seedfw.registry", "seedfw.util", "seedfw.yamlfile", "seedfw.manifest",
                       "seedfw.sbom.model"})
FRAMEWORK_PACKAGES = ("seedfw.plan", "seedfw.cache", "seedfw.config", "seedfw.cli",
                      "seedfw.report", "seedfw.sources", "seedfw.host")
_code_lock = threading.Lock()
_code_memo: dict = {}        # module name -> (mtime_ns, size, sha256, seedfw imports)


def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "seedfw":
        return None
    p = _SEEDFW.joinpath(*parts[1:])
    for f in (p.with_suffix(".py"), p / "__init__.py"):
        if f.is_file():
            return f
    return None


_FRAMEWORK_PREFIXES = tuple(p + "." for p in FRAMEWORK_PACKAGES)


def _framework(name: str) -> bool:
    return name in FRAMEWORK or name in FRAMEWORK_PACKAGES or name.startswith(_FRAMEWORK_PREFIXES)


def _scan(name: str, path: Path) -> tuple[str, set]:
    """(sha256, the seedfw modules it imports, lazily or not) of one module, memoised by stat."""
    import ast
    st = path.stat()
    with _code_lock:
        got = _code_memo.get(name)
        if got and got[0] == (st.st_mtime_ns, st.st_size):
            return got[1], got[2]
    data = path.read_bytes()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set = set()
    # Parsed under the lock: CPython 3.11's AST constructor keeps its recursion depth per
    # interpreter, and two plan threads parsing at once fail with "AST constructor recursion
    # depth mismatch" (python/cpython#106905).
    with _code_lock:
        tree = ast.parse(data, str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "seedfw"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "seedfw":
                continue
            for a in node.names:       # `from ..linux import initramfs` names a module
                sub = f"{mod}.{a.name}"
                found.add(sub if _module_file(sub) else mod)
    digest = hashlib.sha256(data).hexdigest()
    with _code_lock:
        _code_memo[name] = ((st.st_mtime_ns, st.st_size), digest, found)
    return digest, found


def code_digest(module: str | None) -> dict:
    """{path below tools/seedfw: sha256[:16]} of `module` and the seedfw modules it reaches
    (see above). A module outside the seedfw package (a plug-in tree's part) is hashed by its
    own file and what of seedfw it imports."""
    import sys
    out: dict = {}
    if not module:
        return out
    todo, seen = [module], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            mod = sys.modules.get(name)
            path = Path(mod.__file__) if mod is not None and getattr(mod, "__file__", None) \
                else None
            if path is None or not path.is_file():
                continue
            shown = path.name
        else:
            shown = path.relative_to(_SEEDFW).as_posix()
        digest, imports = _scan(name, path)
        out[shown] = digest[:16]
        todo += [i for i in imports if not _framework(i)]
    return dict(sorted(out.items()))
