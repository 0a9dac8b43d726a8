"""Small shared helpers: atomic writes, hashing, subprocess runs with logs.

Why atomic writes everywhere: a build interrupted half-way must leave the previous good outputs
intact, so nothing is ever written in place; it goes to a temporary file in the same directory and
is renamed over the target (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .errors import SeedfwError


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `target`; rename it over `target` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return Path(target)


def write_text(target: str | os.PathLike, text: str) -> Path:
    return write_bytes(target, text.encode())


def write_json(target: str | os.PathLike, obj) -> Path:
    return write_text(target, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def copy_file(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    return write_bytes(dst, Path(src).read_bytes())


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run(cmd: Iterable[str], *, cwd=None, env=None, log: str | os.PathLike | None = None,
        check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run a command; append its command line and output to `log` when given.

    On failure raises SeedfwError naming the command (and the log, whose tail the caller may show).
    """
    cmd = [str(c) for c in cmd]
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update({k: str(v) for k, v in env.items()})
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=full_env, input=input,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise SeedfwError(f"command not found: {cmd[0]} (run 'invoke setup')") from None
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as f:
            f.write(f"$ {shlex.join(cmd)}\n".encode())
            f.write(proc.stdout)
    if check and proc.returncode != 0:
        where = f" (log: {log})" if log else ""
        tail = proc.stdout.decode(errors="replace").strip().splitlines()[-30:]
        err = SeedfwError(f"'{shlex.join(cmd[:3])}…' failed with exit code {proc.returncode}{where}")
        err.tail = tail
        raise err
    return proc


def source_date_epoch() -> int:
    """Timestamp for reproducible outputs: $SOURCE_DATE_EPOCH or a fixed project epoch."""
    return int(os.environ.get("SOURCE_DATE_EPOCH", "1700000000"))
