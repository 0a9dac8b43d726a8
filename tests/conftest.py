"""Shared fixtures. Each board is built once per test session (tests/builds.py caches by board),
and every slow test that needs a board's images asks for these fixtures."""

import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import builds  # noqa: E402  (needs the path above)

# The Ctrl-C tests send SIGINT to builds and expect KeyboardInterrupt. A suite started in the
# background by a non-interactive shell (`cmd &`) inherits SIGINT *ignored*, and an ignored signal
# stays ignored in every child: Python then installs no KeyboardInterrupt handler at all. A
# handler here is reset to the default at exec, so our children get Python's usual behaviour.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The rkbin blobs (DDR init, usbplug, SPL) come from rkbin at a pinned commit or from a mirror
# directory; this machine keeps them in the shared mirror beside the tree. A value set by the
# caller wins; the invoke subprocesses of the tests inherit it.
_MIRROR = Path(__file__).resolve().parents[2] / "shared" / "mirror"
if _MIRROR.is_dir():
    os.environ.setdefault("SEEDFW_MIRROR_DIR", str(_MIRROR))

# The SBOM's creator (BSI TR-03183-2) for every build and SBOM of the session, set before the
# first: SEEDFW_SBOM_CREATOR is part of the SBOM's bytes and of its stamp, so one set half-way
# (tests/sbom_output.py used to) made a later build's SBOM, and the manifest listing it, differ
# from an earlier build's, and a no-op rebuild rewrite it.
os.environ.setdefault("SEEDFW_SBOM_CREATOR", "https://example.org/seedfw-security")


@pytest.fixture(scope="session")
def rk3588_build(tmp_path_factory):
    return builds.build_board("rk3588", tmp_path_factory)


@pytest.fixture(scope="session")
def qemu_aarch64_build(tmp_path_factory):
    return builds.build_board("qemu-aarch64", tmp_path_factory)


@pytest.fixture(scope="session")
def mps2_build(tmp_path_factory):
    return builds.build_board("mps2-an385", tmp_path_factory)


@pytest.fixture(scope="session")
def br_build(tmp_path_factory):
    """qemu-aarch64 with configs/buildroot.fragment (the OS), built once per session and shared
    by tests/test_buildroot.py and tests/test_part_deps.py: (BuildResult, its output)."""
    import io

    from rich.console import Console

    from seedfw import build as build_mod
    out = tmp_path_factory.mktemp("build-qemu-aarch64-buildroot")
    buf = io.StringIO()
    console = Console(file=buf, width=300, color_system=None, highlight=False, soft_wrap=True)
    # A real Buildroot run every session (the tests read its progress lines and package log), so
    # nothing taken from the artifact store; what it made goes into the store ("write"), where
    # the other test worker's `os_build` restores it instead of compiling it again.
    key = builds.os_key()
    with builds._run_lock(key):
        result = build_mod.build("qemu-aarch64", out, [builds.BUILDROOT_FRAGMENT],
                                 console=console, store="write")
    builds._BUILT.setdefault(key, result)
    return result, buf.getvalue()


@pytest.fixture(scope="session")
def os_build(tmp_path_factory):
    """qemu-aarch64 with the OS (configs/buildroot.fragment) for tests that only use its images:
    br_build's own output on br_build's worker, a restore of it on the other."""
    return builds.build_board("qemu-aarch64", tmp_path_factory, [builds.BUILDROOT_FRAGMENT])


def pytest_terminal_summary(terminalreporter):
    """How the CLI runs went (tests/warm.py): forked from a warm interpreter, or a fresh
    `python -m invoke` each. A rise in the second is where the fast suite's budget goes."""
    warm = sys.modules.get("warm")
    if warm is not None and any(warm.RUNS.values()):
        terminalreporter.write_line(f"CLI runs: {warm.RUNS['forked']} forked from a warm "
                                    f"interpreter, {warm.RUNS['real']} fresh (tests/warm.py)")


# ---- pytest-xdist (`invoke test` runs on every core) ---------------------------------------------
# Each test file runs on one worker, in its order (a module's fixtures are set up once), and the
# files that share a build nobody may restore (store=False: br_build; the cold "second" builds)
# share a worker. The heaviest groups are handed out first so that no worker is left with a long
# tail while the other idles (xdist's loadgroup hands out groups in collection order).
SHARED_WORKER = {
    "test_build.py": "cold-builds", "test_reproducible.py": "cold-builds",    # rk3588 "second"
    "test_buildroot_ccache.py": "cold-builds",                               # rk3588 "second"
    "test_buildroot.py": "buildroot",                                         # br_build
    # an incremental Buildroot change needs br_build's real output dir (a restored build has
    # none: it would be a whole Buildroot build, 250 s instead of 65)
    "test_part_deps.py": "buildroot"}
HEAVY_FIRST = ("cold-builds", "buildroot", "test_ccache.py", "test_part_deps.py",
               "test_bitflip.py", "test_readme.py", "test_signing.py",
               "test_artifact_cache_build.py", "test_lab.py", "test_os_root.py",
               "test_counters_emulated.py", "test_interrupt.py", "test_concurrency.py")


def _group(item) -> str:
    name = Path(str(item.fspath)).name
    return SHARED_WORKER.get(name, name)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):      # a plain run keeps the file order
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    rank = {g: i for i, g in enumerate(HEAVY_FIRST)}
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda it: (rank.get(_group(it), len(rank)), order[id(it)]))
