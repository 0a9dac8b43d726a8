"""Small shared helpers: atomic writes, hashing, subprocess runs with logs.

Why atomic writes everywhere: a build interrupted half-way must leave the previous good outputs
intact, so nothing is ever written in place; it goes to a temporary file in the same directory and
is renamed over the target (rename is atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator

from .errors import SeedfwError
from .secrets import line_scrubber, scrub


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
    except OSError as exc:
        raise os_error(exc, target) from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike, first_wins: bool = False) -> Iterator[Path]:
    """Yield a temporary directory next to `target`; it replaces `target` on success (an
    interrupted unpack never leaves a half-filled tree under the final name).

    `first_wins`: a content-addressed entry someone else published meanwhile is kept and this
    one dropped, so every reader of a key sees the same bytes even when the producer is not
    reproducible (the RKNN compiler) and two processes made the entry at once."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        yield tmp
        if first_wins:
            try:
                os.rename(tmp, target)        # fails on an existing non-empty directory
            except OSError:
                if not target.is_dir():
                    raise
            return
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


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


def read_json(path: str | os.PathLike, object_of: str | None = None):
    """A JSON file, or one error line naming it (and the line of a syntax error). With
    `object_of`, the document must be an object: 'must be a JSON object' + object_of."""
    from . import reading           # regular files only, size and depth limits
    raw = reading.read_bytes(path, "json")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise SeedfwError("not valid JSON: not UTF-8 text", path) from None
    data = reading.loads_json(text, path)
    if object_of is not None and not isinstance(data, dict):
        raise SeedfwError(f"must be a JSON object{object_of}", path)
    return data


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run(cmd: Iterable, *, cwd=None, env=None, log: str | os.PathLike | None = None,
        check: bool = True, adopt=None, release=None, pass_fds=()) -> subprocess.CompletedProcess:
    """Run a command; append its command line and output to `log` as it comes.

    The command runs in a process group of its own, so that stopping it (Ctrl-C, a build being
    interrupted) also stops every process it started — make's compilers, for instance. `adopt` and
    `release` are told about the process (seedfw.plan uses them to end all groups on SIGINT).
    `pass_fds`: descriptors the command inherits (a shared make jobserver's pipe, seedfw.plan.jobserver).
    On failure raises SeedfwError naming the command and the log, with `.tail` = last 30 lines.
    """
    cmd = [str(c) for c in cmd]
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update({k: str(v) for k, v in env.items()})
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
    output = bytearray()
    clean = line_scrubber()
    with open(log, "ab") if log is not None else contextlib.nullcontext() as logf:
        if logf:
            # A log is an artifact (handed over with the output directory): no credential, no
            # home directory in it (seedfw.secrets); the output kept for errors stays as is.
            logf.write(f"$ {scrub(shlex.join(cmd))}\n".encode())
            logf.flush()
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True, pass_fds=tuple(pass_fds))
        except FileNotFoundError:
            raise SeedfwError(f"command not found: {cmd[0]} (run 'invoke setup')") from None
        if adopt:
            adopt(proc)
        try:
            for line in proc.stdout:
                output += line
                if logf:
                    try:
                        logf.write(clean(line))
                        logf.flush()
                    except OSError as exc:       # a full disk: say which file, stop the command
                        stop_group(proc)
                        raise os_error(exc, log) from None
            proc.wait()
        except BaseException:
            # Its own process group does not get the terminal's SIGINT: end it here.
            stop_group(proc)
            raise
        finally:
            if release:
                release(proc)
    result = subprocess.CompletedProcess(cmd, proc.returncode, bytes(output), None)
    if check and proc.returncode != 0:
        raise command_failed(result, log)
    return result


def command_failed(result: subprocess.CompletedProcess, log=None) -> SeedfwError:
    where = f" (log: {log})" if log is not None else ""
    err = SeedfwError(f"'{shlex.join(result.args[:3])}…' failed with exit code "
                      f"{result.returncode}{where}")
    err.tail = result.stdout.decode(errors="replace").strip().splitlines()[-TAIL_LINES:]
    return err


TAIL_LINES = 30
KILL_GRACE = 3.0


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Signal the process group `proc` leads (run() starts each command as its own group)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass                            # already gone


def stop_group(proc: subprocess.Popen) -> None:
    signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(KILL_GRACE)
    except subprocess.TimeoutExpired:
        signal_group(proc, signal.SIGKILL)
        proc.wait()


def source_date_epoch() -> int:
    """Timestamp for reproducible outputs: $SOURCE_DATE_EPOCH or a fixed project epoch."""
    return int(os.environ.get("SOURCE_DATE_EPOCH", "1700000000"))


def os_error(exc: OSError, path=None) -> SeedfwError:
    """An OSError as the one-line error: the file it concerns (the one we were writing when the
    exception does not name one) and the system's words, e.g. 'No space left on device'."""
    where = exc.filename or path
    return SeedfwError(exc.strerror or str(exc), os.fspath(where) if where else None)


# ---- locks ---------------------------------------------------------------------------------------

_held: dict[str, list] = {}             # lock path -> [threading.RLock, fd or None, depth]
_held_guard = threading.Lock()


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, what: str, say=None) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created if needed) for the duration of the block.

    Why flock: it is released by the kernel when the holder dies, so a killed build never leaves a
    stale lock behind. Re-entrant within this process (the build's worker threads share one
    holder; a thread waits for another thread of the same build on a threading lock), because flock
    does not exclude a second descriptor of the same process reliably for our purposes.
    When another process holds it, `say` (default: stderr) is told once who holds it — the holder
    writes its pid and command line into the lock file — and we wait.
    """
    path = os.path.abspath(path)
    with _held_guard:
        entry = _held.setdefault(path, [threading.RLock(), None, 0])
    rlock = entry[0]
    with rlock:
        if entry[2] == 0:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise os_error(exc, path) from None
                holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
                (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
                    f"waiting for {what}: locked by {holder}")
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:                # who holds it, for the next one waiting; best effort (full disk)
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()} ({_command_line()})\n".encode(), 0)
            except OSError:
                pass
            entry[1] = fd
        entry[2] += 1
        try:
            yield
        finally:
            entry[2] -= 1
            if entry[2] == 0:
                fd, entry[1] = entry[1], None
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


def _command_line() -> str:
    argv = [os.path.basename(sys.argv[0])] + sys.argv[1:] if sys.argv and sys.argv[0] else ["python"]
    return shlex.join(argv)[:300]


# Symbols that change how the build runs, never what it makes (the compiler cache, whose hits
# are the compiler's own objects): kept out of the hash, so the build id the firmware prints,
# and with it every image, is the same with the cache on, off, local or remote.
NOT_HASHED = ("CCACHE", "CCACHE_DIR", "CCACHE_REMOTE_STORAGE")


def config_hash(values: dict) -> str:
    values = {k: v for k, v in values.items() if k not in NOT_HASHED}
    return sha256_bytes(json.dumps(values, sort_keys=True).encode())


def openssl(args: list[str], what: str) -> bytes:
    """Run the host's openssl (certificates, keys, CMS); its stdout, or one error line. openssl's
    stderr never carries key material; only its last line is kept."""
    try:
        proc = subprocess.run(["openssl", *args], capture_output=True)
    except FileNotFoundError:
        raise SeedfwError("openssl not found (apt package openssl)") from None
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise SeedfwError(f"openssl {what} failed: {last}")
    return proc.stdout


class StatCache:
    """`compute(file)` (a digest, or a dict of digests), reused while the file's (size,
    mtime_ns, inode) is what it was when computed: a no-op build then rereads none of the
    ~200 MB an OS build leaves in images/. A rebuilt file is installed by rename (seedfw.plan),
    which gives it a new inode and mtime, so a stale entry never matches. `save()` writes the
    table back when it changed (the manifest's sha256s, the SBOM's SHA-256/SHA-512)."""

    def __init__(self, path: Path, compute):
        self.path, self.compute = Path(path), compute
        try:
            self.old = json.loads(self.path.read_text())   # door: our own cache file
        except (OSError, ValueError):
            self.old = {}
        self.new: dict[str, list] = {}

    def __call__(self, file: Path):
        st = os.stat(file)
        key = [st.st_size, st.st_mtime_ns, st.st_ino]
        got = self.old.get(str(file))
        value = got[3] if isinstance(got, list) and len(got) == 4 and got[:3] == key \
            else self.compute(Path(file))
        self.new[str(file)] = key + [value]
        return dict(value) if isinstance(value, dict) else value

    def save(self) -> None:
        if self.new != self.old and self.path.parent.is_dir():
            write_json(self.path, self.new)


@contextlib.contextmanager
def environ(changes: dict) -> Iterator[None]:
    """os.environ with `changes` applied ({name: value, or None to unset}) for the block, then
    every name as it was. For code that must hand a setting to a library that reads only the
    environment (kconfiglib's srctree, the artifact store's directory); not thread-safe."""
    saved = {k: os.environ.get(k) for k in changes}
    for k, v in changes.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
