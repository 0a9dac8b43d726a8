"""Run `invoke …` the way a user does and capture what they would see."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args, cwd=ROOT, env=None, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "invoke", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_error_line(proc) -> str:
    """The contract for bad input: non-zero exit, exactly one 'error:' line, no traceback."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]
