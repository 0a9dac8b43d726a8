"""The warm interpreter of tests/warm.py: imports invoke and seedfw's tasks once, then for each
request forks a child that becomes `python -m invoke ARGS` (see warm.py for what is and is not
the same as a fresh process). Single-threaded, so fork() is safe; one request at a time.

Run as `python warm_server.py REQUEST_FD REPLY_FD TMPDIR` by warm.py only."""

import json
import os
import select
import signal
import sys
import time


def preload():
    """What `python -m invoke` imports before it runs a task: invoke itself and tasks.py's
    modules (seedfw.cli.*). Imported here, they are in every child for free."""
    import importlib
    import pkgutil
    import runpy  # noqa: F401
    import invoke.main  # noqa: F401
    import seedfw.cli
    for info in pkgutil.iter_modules(seedfw.cli.__path__):
        importlib.import_module(f"seedfw.cli.{info.name}")


def child(req: dict, pipes, out_path: str, err_path: str):
    """In the forked child: become the requested process, then run invoke as __main__."""
    for pipe in pipes:                  # the server's protocol is not the child's business
        pipe.close()
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for src, dst in ((null, 0), (out, 1), (err, 2)):
        os.dup2(src, dst)
        os.close(src)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    if req.get("as_limit"):
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (req["as_limit"], req["as_limit"]))
    # As in a fresh `python -m`: sys.path[0] is the cwd, SIGINT raises KeyboardInterrupt.
    sys.path[0] = os.getcwd()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if "code" in req:                   # `python -c CODE` (tests/test_suite_budget.py's guards)
        sys.argv = ["-c", *req["args"]]
        exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__"})
        return
    import runpy
    sys.argv = ["invoke", *req["args"]]
    runpy.run_module("invoke", run_name="__main__", alter_sys=True)
    # Falling off the end (no SystemExit) is exit 0, as for the real module; SystemExit and
    # uncaught exceptions propagate to the top level and end the process as they would there.


def wait(pid: int, timeout):
    """(exit code, peak RSS in KiB, timed out?) of child `pid`, killing it after `timeout` s."""
    timed_out = False
    if timeout:
        pidfd = os.pidfd_open(pid)
        try:
            ready, _, _ = select.select([pidfd], [], [], timeout)
        finally:
            os.close(pidfd)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
    _pid, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss, timed_out


def main():
    req_fd, rep_fd, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sys.path[0] = os.getcwd()
    preload()
    requests = os.fdopen(req_fd, "r")
    replies = os.fdopen(rep_fd, "w", buffering=1)
    replies.write("ready\n")
    n = 0
    for line in requests:
        req = json.loads(line)
        n += 1
        out_path, err_path = (os.path.join(tmp, f"{n}.{k}") for k in ("out", "err"))
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            child(req, (requests, replies), out_path, err_path)
            raise SystemExit(0)
        code, rss, timed_out = wait(pid, req.get("timeout"))
        replies.write(json.dumps({"returncode": code, "seconds": time.monotonic() - start,
                                  "max_rss_kib": rss, "timed_out": timed_out,
                                  "stdout": out_path, "stderr": err_path}) + "\n")


if __name__ == "__main__":
    main()
