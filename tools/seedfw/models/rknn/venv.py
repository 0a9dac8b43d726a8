"""rknn-toolkit2's own virtual environment, made by `invoke setup` and checked by `invoke doctor`.

Why a venv of its own: rknn-toolkit2 2.5.0 caps numpy at 1.26.4, onnx at 1.18.0 and protobuf at
4.25.4, which clash with the project's environment; the project never imports it. seedfw talks to
it only through `python <driver script>` with JSON in and out (seedfw.models.rknn.compile).

What goes in: `requirements.lock` next to this file — every distribution by version and the sha256
of its wheel, installed in one `pip install --no-deps --require-hashes` (no resolver run, nothing
unpinned). The rknn wheel declares torch<=2.4.0, whose Linux build is the CUDA one (several GB);
the toolkit only imports torch, so a CPU build is installed instead: the torch requirement is a
setting, $SEEDFW_RKNN_TORCH (default `torch==2.13.0`, which on this kind of machine is a CPU
wheel on local disk). A requirement other than the default is installed without a hash pin
(docs/models.md says what each choice costs).

Where: <seedfw cache>/rknn-venv-<pinhash>, the hash taken over the lock, the torch requirement
and the Python version, so changing any pin makes a new venv next to the old one instead of
mutating it. A venv is complete only once `seedfw-venv.json` (written last) exists; a half-made one
is removed and made again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ... import paths, util
from ...errors import SeedfwError

HERE = Path(__file__).resolve().parent
LOCK = HERE / "requirements.lock"
TOOLKIT = "rknn-toolkit2"
TOOLKIT_VERSION = "2.5.0"
TORCH_DEFAULT = "torch==2.13.0"
MARKER = "seedfw-venv.json"
PYTHON_VERSION = (3, 11)        # the rknn wheel pinned in the lock is cp311


def torch_requirement() -> str:
    return os.environ.get("SEEDFW_RKNN_TORCH", "").strip() or TORCH_DEFAULT


def requirements() -> list[str]:
    """The lock's lines (comments dropped), with the torch line replaced by the setting."""
    out = []
    torch = torch_requirement()
    for line in LOCK.read_text().splitlines():
        line = line.split("    #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.split("==", 1)[0] == "torch" and torch != TORCH_DEFAULT:
            continue                        # a user's torch: installed on its own, below
        out.append(line)
    return out


def pin_hash() -> str:
    doc = {"lock": util.sha256_bytes(LOCK.read_bytes()), "torch": torch_requirement(),
           "python": list(PYTHON_VERSION)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


def venv_dir() -> Path:
    """$SEEDFW_RKNN_VENV, else <seedfw cache>/rknn-venv-<pin hash>. (The variable lets a build
    with a cache dir of its own, e.g. a compiler-cache experiment, use the machine's venv.)"""
    return paths.env_path("SEEDFW_RKNN_VENV") or paths.cache_dir() / f"rknn-venv-{pin_hash()}"


def python() -> Path:
    return venv_dir() / "bin" / "python"


def info() -> dict | None:
    """The marker of a complete venv ({toolkit, torch, seconds, bytes, ...}), None when absent."""
    marker = venv_dir() / MARKER
    try:
        return json.loads(marker.read_text())
    except (OSError, ValueError):
        return None


def base_python() -> str:
    """A CPython 3.11 to make the venv from: this one when it is 3.11, else python3.11 on PATH."""
    if sys.version_info[:2] == PYTHON_VERSION:
        return sys.executable
    found = shutil.which("python%d.%d" % PYTHON_VERSION)
    if not found:
        raise SeedfwError("rknn-toolkit2 %s needs CPython %d.%d (its wheel is cp311); none found"
                          % ((TOOLKIT_VERSION,) + PYTHON_VERSION), LOCK, "python")
    return found


def ensure(progress=print, log: Path | None = None) -> dict:
    """Make the venv when it is missing or incomplete; return its marker."""
    target = venv_dir()
    with util.file_lock(paths.cache_dir() / ".rknn-venv.lock", f"the rknn venv {target}",
                        say=progress):
        done = info()
        if done is not None:
            return done
        if target.exists():
            progress(f"{target}: incomplete venv (no {MARKER}); making it again")
            shutil.rmtree(target)
        started = time.monotonic()
        progress(f"rknn-toolkit2 {TOOLKIT_VERSION}: making its venv {target} (torch: "
                 f"{torch_requirement()})")
        reqs = target.parent / f".{target.name}.requirements.txt"
        reqs.parent.mkdir(parents=True, exist_ok=True)
        reqs.write_text("\n".join(requirements()) + "\n")
        steps = [[base_python(), "-m", "venv", str(target)],
                 [str(target / "bin/python"), "-m", "pip", "install", "--no-deps",
                  "--require-hashes", "--no-input", "-q", "-r", str(reqs)]]
        if torch_requirement() != TORCH_DEFAULT:
            steps.append([str(target / "bin/python"), "-m", "pip", "install", "--no-deps",
                          "--no-input", "-q", torch_requirement()])
        try:
            for cmd in steps:
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if log is not None:
                    with open(log, "a") as f:
                        f.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
                if proc.returncode != 0:
                    tail = [l for l in (proc.stderr or proc.stdout).splitlines()
                            if l.strip() and not l.startswith("WARNING: Location")]
                    raise SeedfwError(f"'{' '.join(cmd[-4:])}' failed (exit {proc.returncode}): "
                                      f"{tail[-1] if tail else 'no output'}", LOCK)
            version = probe(target / "bin/python")
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            reqs.unlink(missing_ok=True)
        doc = {"toolkit": TOOLKIT, "version": version, "torch": torch_requirement(),
               "pin_hash": pin_hash(), "install_seconds": round(time.monotonic() - started, 1),
               "bytes": tree_bytes(target)}
        util.write_json(target / MARKER, doc)
        return doc


PROBE = ("import json, rknn.api, importlib.metadata as m; "
         "print(json.dumps({'rknn': m.version('rknn-toolkit2'), 'torch': m.version('torch'), "
         "'numpy': m.version('numpy'), 'onnx': m.version('onnx')}))")


def probe(py: Path) -> dict:
    """Import rknn.api in the venv (as the compiler does) and return the installed versions."""
    try:
        proc = subprocess.run([str(py), "-c", PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SeedfwError(f"cannot run the rknn venv's python: {exc}", py) from None
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        raise SeedfwError(f"'import rknn.api' fails in the rknn venv: "
                          f"{lines[-1] if lines else 'exit ' + str(proc.returncode)}", py)
    return json.loads(proc.stdout.strip().splitlines()[-1])


PROBED = ".seedfw-probed.json"


def _probe_once(py: Path, marker: dict) -> dict:
    """probe(), or its answer for this very venv state: importing torch and rknn takes ~2 s,
    and the doctor runs on every setup and in many tests. The key is what an install or a
    removal in the venv changes (the marker, and the mtimes of site-packages and of each
    package directory in it); anything else probes again."""
    site = sorted(venv_dir().glob("lib/python*/site-packages"))
    if not site:
        return probe(py)
    entries = sorted(site[0].iterdir())
    key = util.sha256_bytes(json.dumps(
        [marker, site[0].stat().st_mtime_ns, [(e.name, e.stat().st_mtime_ns) for e in entries]],
        sort_keys=True, default=str).encode())
    record = venv_dir() / PROBED
    try:
        doc = json.loads(record.read_text())
        if doc.get("key") == key:
            return doc["versions"]
    except (OSError, ValueError, AttributeError):
        pass
    versions = probe(py)
    util.write_json(record, {"key": key, "versions": versions})
    return versions


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def doctor_line() -> tuple[bool, str]:
    """(ok, one line) for `invoke doctor`: the venv exists and imports rknn.api."""
    marker = info()
    if marker is None:
        return False, (f"MISSING  rknn-toolkit2 {TOOLKIT_VERSION} venv {venv_dir()} (run 'invoke "
                       f"setup'; needed by build: NPU models)")
    try:
        v = _probe_once(python(), marker)
    except SeedfwError as exc:
        return False, f"BROKEN   rknn venv {venv_dir()}: {exc.message} (remove it and run 'invoke setup')"
    return True, (f"ok       rknn-toolkit2 {v['rknn']} in {venv_dir()} (torch {v['torch']}, numpy "
                  f"{v['numpy']}, onnx {v['onnx']}; {marker['bytes'] / 2**20:.0f} MiB)")


def require() -> Path:
    """The venv's python, or the error a build shows when setup has not made it."""
    if info() is None:
        raise SeedfwError(f"rknn-toolkit2 {TOOLKIT_VERSION} is not set up ({venv_dir()} missing); "
                          "run 'invoke setup'", LOCK)
    return python()
