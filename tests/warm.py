"""`python -m invoke ARGS` as a real process, forked from a warm interpreter (issue 27's budget).

Most fast tests assert what the CLI prints and how it exits, and each used to start a fresh
interpreter that spent ~0.5-1.5 s (more under load) importing invoke, seedfw and their
dependencies before doing a few milliseconds of work. Here one server process per import
environment imports all that once; each run is a `fork()` of it that sets up exactly what a
fresh process would have — its own cwd, environment, stdin from /dev/null, stdout and stderr to
files, RLIMIT_AS when asked — and then runs invoke's `__main__` as `python -m invoke` does, exits
through the interpreter's normal shutdown (atexit, flushes, KeyboardInterrupt -> SIGINT). So each
case still gets its own process: its own exit status, pid, peak RSS (wait4) and address-space
limit, and a hang is killed at its timeout without touching the next case. Nothing is shared
between cases: each child starts from the server's pristine state, never from a previous case.

What a fork cannot reproduce falls back to a plain subprocess (`real_invoke`):
  * an environment that changes how the interpreter starts (PYTHON*, locale, a HOME whose user
    site-packages exist) gets a server of its own, started with that environment;
  * a cwd outside this tree (a fresh clone's tasks.py would import its own seedfw), stdin input;
  * SEEDFW_TEST_EXEC=1 sends every run through a plain subprocess (to compare the two).
The one thing children share is the server's hash seed (PYTHONHASHSEED); a test that compares two
runs for determinism across seeds passes `real=True`. tests/test_suite_budget.py runs the same
cases both ways and asserts identical results.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_HERE = Path(__file__).resolve().parent


@dataclass
class Result:
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float
    max_rss_kib: int
    timed_out: bool
    forked: bool


def _startup_env(env: dict) -> tuple:
    """The part of an environment that the interpreter reads when it starts (before any test code
    runs): two environments with the same startup part may share a warm server."""
    keys = [k for k in env if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE")]
    import site
    if os.path.isdir(site.getusersitepackages()) or "HOME" in env and os.path.isdir(
            os.path.join(env["HOME"], ".local", "lib")):
        keys.append("HOME")
    return tuple(sorted((k, env[k]) for k in keys))


def _within_tree(cwd) -> bool:
    try:
        Path(cwd).resolve().relative_to(ROOT)
        return True
    except ValueError:
        return False


class _Server:
    """One warm interpreter (tests/warm_server.py) serving one run at a time over two pipes."""

    def __init__(self, env: dict):
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        self.tmp = tempfile.mkdtemp(prefix="seedfw-warm-")
        self.proc = subprocess.Popen(
            [sys.executable, str(_HERE / "warm_server.py"), str(req_r), str(rep_w), self.tmp],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.tmp, "server.err"), "wb"), pass_fds=(req_r, rep_w))
        os.close(req_r)
        os.close(rep_w)
        self._w = os.fdopen(self._req_w, "w", buffering=1)
        self._r = os.fdopen(self._rep_r, "r")
        ready = self._r.readline()
        if ready.strip() != "ready":
            raise RuntimeError("warm server did not start: "
                               + Path(self.tmp, "server.err").read_text(errors="replace"))

    def run(self, request: dict) -> dict:
        self._w.write(json.dumps(request) + "\n")
        line = self._r.readline()
        if not line:
            raise RuntimeError("warm server died: "
                               + Path(self.tmp, "server.err").read_text(errors="replace"))
        return json.loads(line)

    def close(self):
        try:
            self._w.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)


_LOCK = threading.Lock()
_IDLE: dict[tuple, list[_Server]] = {}
_ALL: list[_Server] = []
RUNS = {"forked": 0, "real": 0}        # how many runs went which way (test_suite_budget reads it)


@atexit.register
def _close_all():
    for server in _ALL:
        server.close()


def _take(key, env) -> _Server:
    with _LOCK:
        if _IDLE.get(key):
            return _IDLE[key].pop()
    server = _Server(env)              # concurrent callers each get their own server
    with _LOCK:
        _ALL.append(server)
    return server


def _give(key, server):
    with _LOCK:
        _IDLE.setdefault(key, []).append(server)


def run_invoke(args, *, cwd=ROOT, env=None, timeout=None, as_limit=None,
               real=False, code=None) -> Result:
    """Run `python -m invoke ARGS` in `cwd` with `env` (default: this process's), killed after
    `timeout` seconds, under RLIMIT_AS = `as_limit` bytes when given. With `code`, the child
    runs that Python source instead (`python -c CODE`), for tests of the harness itself."""
    env = dict(os.environ if env is None else env)
    args = [str(a) for a in args]
    if (real or os.environ.get("SEEDFW_TEST_EXEC") == "1" or not _within_tree(cwd)) and code is None:
        return real_invoke(args, cwd=cwd, env=env, timeout=timeout, as_limit=as_limit)
    key = (sys.executable, _startup_env(env))
    server = _take(key, env)
    try:
        request = {"args": args, "cwd": str(cwd), "env": env, "timeout": timeout,
                   "as_limit": as_limit}
        if code is not None:
            request["code"] = code
        rep = server.run(request)
    except BaseException:
        server.close()                  # a half-spoken protocol is not reused
        raise
    _give(key, server)
    RUNS["forked"] += 1
    # A child killed at once (a timeout of a millisecond) may die before it opened its files.
    out, err = (Path(rep[k]).read_bytes() if Path(rep[k]).exists() else b""
                for k in ("stdout", "stderr"))
    for k in ("stdout", "stderr"):
        Path(rep[k]).unlink(missing_ok=True)
    return Result(rep["returncode"], out, err, rep["seconds"], rep["max_rss_kib"],
                  rep["timed_out"], True)


def real_invoke(args, *, cwd=ROOT, env=None, timeout=None, as_limit=None) -> Result:
    """The same run as a plain `python -m invoke` subprocess (the end-to-end reference)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    RUNS["real"] += 1
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "invoke", *map(str, args)], cwd=cwd,
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                preexec_fn=limit if as_limit else None)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        took = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Result(proc.returncode, out.read(), err.read(), took, usage.ru_maxrss,
                      bool(timeout) and took >= timeout, False)


def text(data: bytes) -> str:
    """Bytes as subprocess's text=True gives them: the locale's codec, universal newlines."""
    import locale
    s = data.decode(locale.getpreferredencoding(False))
    return s.replace("\r\n", "\n").replace("\r", "\n")
