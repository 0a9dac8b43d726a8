"""Run `invoke …` the way a user does and capture what they would see.

Each run is its own process, forked from a warm interpreter (tests/warm.py: the same exit code,
stdout and stderr as a fresh `python -m invoke`, without paying its ~1 s of imports each time);
`real=True` starts a fresh interpreter instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args, cwd=ROOT, env=None, timeout=600, real=False) -> subprocess.CompletedProcess:
    import warm
    cmd = [sys.executable, "-m", "invoke", *map(str, args)]
    run = warm.run_invoke(args, cwd=cwd, env=env, timeout=timeout, real=real)
    out, err = warm.text(run.stdout), warm.text(run.stderr)
    if run.timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout, out, err)
    return subprocess.CompletedProcess(cmd, run.returncode, out, err)


def one_error_line(proc) -> str:
    """The contract for bad input: non-zero exit, exactly one 'error:' line, no traceback."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that name `text` (e.g. a make or gcc working in an outdir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if text in cmdline and state != "Z":
                found.append(cmdline)
    return found
