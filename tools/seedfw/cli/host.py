"""Host tasks: setup (apt packages), doctor (is everything there?) and test (the suite)."""

from __future__ import annotations

import os
import shlex
import sys

from . import command
from .. import host
from ..errors import SeedfwError
from ..paths import ROOT

__all__ = ["doctor", "setup", "test"]


@command(help={"no_update": "skip 'apt-get update' before installing"})
def setup(c, no_update=False):
    """Install apt packages and Python extras, then run the doctor.

    Install the host packages (cross-compilers, QEMU, dtc, mkimage, lz4, clang) with apt, the
    Python extras the tasks and the tests use (docs, fuzz) with pip, the rknn venv, then run the
    doctor."""
    installed = host.setup(update=not no_update)
    print(f"installed: {' '.join(installed)}" if installed else "host packages: all present")
    py = host.setup_python()
    print(f"installed Python packages: {' '.join(py)}" if py else "Python extras: all present")
    from ..update import hosttool     # the host's rauc 1.8: pinned .debs, unpacked privately
    print(f"host rauc: {hosttool.ensure(progress=lambda m: None)} ({hosttool.status()[1]})")
    from ..models.rknn import venv           # rknn-toolkit2's own venv (NPU models), never the project's
    made = venv.ensure()
    print(f"rknn venv: {venv.venv_dir()} (rknn-toolkit2 {made['version']['rknn']}, "
          f"{made['bytes'] / 2**20:.0f} MiB, made in {made['install_seconds']} s)")
    _doctor(quiet=True)


@command(help={"quiet": "print only what is missing",
               "config": "a .config whose CONFIG_CCACHE_REMOTE_STORAGE to check (repeatable; "
                         "default: output/*/.config in the tree)"}, iterable=["config"])
def doctor(c, quiet=False, config=None):
    """Check every host program and file the tasks use.

    Check every host program and file the tasks use (and QEMU's firmware files for our boards),
    and ccache's remote back-end when a configuration names a remote."""
    _doctor(quiet, config)


def _doctor(quiet: bool, configs=None) -> None:
    from ..host import doctor as doc
    checks = doc.run_checks()
    missing = doc.missing_packages(checks)
    if not quiet or missing:
        print(doc.table([ch for ch in checks if not quiet or not ch.ok]))
    errors, notes = doc.ccache_remote_checks(doc.configured_remotes(
        configs or sorted((ROOT / "output").glob("*/.config"))))
    for line in notes:
        print(line)
    for line in doc.artifact_store_lines():      # the step-output store and its remote
        print(line)
        if line.startswith("error: "):
            errors.append(line.removeprefix("error: "))
    from ..counters import plugin_build        # the emulated traffic counter's QEMU plugin ABI
    ok, line = plugin_build.check_installed(plugin_build.built_plugin(ROOT / "output"))
    print(f"{'ok' if ok else 'error'}: QEMU traffic plugin: {line}")
    if not ok:
        errors.append(f"QEMU traffic plugin: {line}")
    from ..update import hosttool              # invoke bundle's rauc (not an apt package)
    rauc_ok, rauc_line = hosttool.status()
    print(f"{'ok' if rauc_ok else 'error'}: host rauc (invoke bundle): {rauc_line}")
    if not rauc_ok:
        errors.append(f"host rauc (invoke bundle): {rauc_line}")
    from ..models.rknn import venv
    rknn_ok, rknn_line = venv.doctor_line()
    if not quiet or not rknn_ok:
        print(rknn_line)
    py_missing = host.missing_python()
    for module, req, why in py_missing:
        print(f"missing Python package {module} ({why}): pip install '{req}' or 'invoke setup'")
    if errors:
        raise SeedfwError(errors[0])
    if missing:
        raise SeedfwError(f"{sum(not ch.ok for ch in checks)} host program(s)/file(s) missing, from "
                          f"package(s) {', '.join(missing)}; run as root: apt-get update && "
                          f"{shlex.join(host.install_command(missing))}")
    if py_missing:
        reqs = " ".join(shlex.quote(req) for _m, req, _w in py_missing)
        raise SeedfwError(f"{len(py_missing)} Python package(s) missing; run: invoke setup, or "
                          f"{shlex.quote(sys.executable)} -m pip install {reqs}")
    if not rknn_ok:
        raise SeedfwError(rknn_line.split(None, 1)[1])
    print(f"doctor: all {len(checks)} host programs and files present, the Python extras "
          f"({', '.join(m for m, _r, _w in host.PY_NEEDS)}) and the rknn venv")


@command(help={"fast": "skip the slow end-to-end tests (real builds, QEMU boots)",
               "k": "only tests matching this expression (pytest -k)",
               "x": "stop at the first failure",
               "jobs": "test workers (pytest-xdist; default: one per CPU, at most 4; 1: one "
                       "process, in file order)"})
def test(c, fast=False, k=None, x=False, jobs=0):
    """Run the test suite; --fast skips the slow tests.

    Run the test suite (pytest, one worker per CPU); --fast skips the slow end-to-end tests."""
    # The 30 slowest tests, every run (CI's log and a user's terminal alike): where the suite's
    # time goes is read from there when it nears its budget (issue 27).
    args = [sys.executable, "-m", "pytest", "--durations=30"]
    # Why workers: most of the suite waits on one single-threaded process at a time (QEMU's
    # TCG, a Python reader, a CLI run), so a second core halves it; tests/conftest.py keeps
    # each file on one worker and the files that share an unrestorable build together.
    workers = int(jobs) if int(jobs or 0) > 0 else min(os.cpu_count() or 1, 4)
    if workers > 1:
        import importlib.util
        if importlib.util.find_spec("xdist") is None:     # the 'test' extra brings it
            print("invoke test: pytest-xdist is not installed (python3 -m pip install -e "
                  "'.[test]'), running in one process", file=sys.stderr)
        else:
            args += ["-n", str(workers), "--dist", "loadgroup"]
    if fast:
        args += ["-m", "not slow"]
    if k:
        args += ["-k", k]
    if x:
        args.append("-x")
    c.run(shlex.join(args), pty=False, echo=True, env={"PYTHONPATH": str(ROOT / "tools")})
