"""Host tasks: setup (apt packages) and test (the suite)."""

from __future__ import annotations

import shlex
import sys

from . import command
from .. import host
from ..paths import ROOT

__all__ = ["setup", "test"]


@command(help={"no_update": "skip 'apt-get update' before installing"})
def setup(c, no_update=False):
    """Install the host packages (cross-compilers, QEMU, dtc, mkimage, lz4, clang) with apt."""
    installed = host.setup(update=not no_update)
    print(f"installed: {' '.join(installed)}" if installed else "host packages: all present")


@command(help={"fast": "skip the slow end-to-end tests (real builds, QEMU boots)",
               "k": "only tests matching this expression (pytest -k)",
               "x": "stop at the first failure"})
def test(c, fast=False, k=None, x=False):
    """Run the test suite (pytest); --fast skips the slow end-to-end tests."""
    args = [sys.executable, "-m", "pytest"]
    if fast:
        args += ["-m", "not slow"]
    if k:
        args += ["-k", k]
    if x:
        args.append("-x")
    c.run(shlex.join(args), pty=False, echo=True, env={"PYTHONPATH": str(ROOT / "tools")})
