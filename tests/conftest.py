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
    by tests/test_buildroot.py and tests/test_buildroot_ccache.py: (BuildResult, its output)."""
    import io

    from rich.console import Console

    from seedfw import build as build_mod
    out = tmp_path_factory.mktemp("build-qemu-aarch64-buildroot")
    buf = io.StringIO()
    console = Console(file=buf, width=300, color_system=None, highlight=False, soft_wrap=True)
    # A real Buildroot run every session (the tests read its progress lines and package log), so
    # not from the artifact store.
    result = build_mod.build("qemu-aarch64", out, [builds.BUILDROOT_FRAGMENT], console=console,
                             store=False)
    return result, buf.getvalue()
