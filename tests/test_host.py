"""The host package list against Debian's metadata, and `invoke doctor`.

Why a closure test: wave 1 passed CI on a machine that had two packages `invoke setup` never
installs (ipxe-qemu for QEMU's efi-virtio.rom, libclang-rt-14-dev for libFuzzer): both are only
*Recommends* of what the list named. Here every host file a task uses (host.NEEDS plus the data
files QEMU itself says it loads for our boards) must be shipped by a package in the Depends /
Pre-Depends closure of the list — what `apt-get install --no-install-recommends` brings.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from seedfw.host import doctor
from seedfw import host
from seedfw.host import Need

from cli import invoke

pytestmark = pytest.mark.skipif(shutil.which("apt-cache") is None or shutil.which("dpkg-query") is None,
                                reason="not a Debian machine (no apt-cache / dpkg-query)")

# The list `invoke setup` installed in wave 1, kept as the negative control.
WAVE1_PACKAGES = ["gcc-aarch64-linux-gnu", "binutils-aarch64-linux-gnu", "gcc-arm-none-eabi",
                  "qemu-system-arm", "device-tree-compiler", "u-boot-tools", "lz4", "zstd",
                  "liblz4-dev", "clang", "libssl-dev", "rkdeveloptool", "make", "patch", "xz-utils"]


def wave1_qemu_args(args: list[str]) -> list[str]:
    """A board's QEMU arguments as wave 1 passed them: without `-nic none`."""
    i = args.index("-nic")
    return args[:i] + args[i + 2:]


@pytest.fixture(scope="module")
def board_args():
    return doctor.board_qemu_args()


def test_every_host_file_is_in_the_closure_of_the_setup_list(board_args):
    needs = list(host.NEEDS) + doctor.qemu_needs(board_args)
    assert doctor.outside_closure(needs, host.APT_PACKAGES) == []


def test_negative_control_wave1_list_misses_the_rom_and_the_fuzzer_runtime(board_args):
    """With wave 1's list and QEMU arguments, the check names exactly the two files the fresh
    machine lacked (whether or not this machine happens to have them installed)."""
    old = {b: wave1_qemu_args(a) for b, a in board_args.items()}
    qemu_rows = doctor.qemu_needs(old)
    assert any(n.what.endswith("/efi-virtio.rom") for n in qemu_rows), qemu_rows
    problems = doctor.outside_closure(list(host.NEEDS) + qemu_rows, WAVE1_PACKAGES)
    joined = "\n".join(problems)
    assert "efi-virtio.rom" in joined
    assert "libclang_rt.fuzzer-x86_64.a" in joined


def test_our_qemu_arguments_load_no_data_file(board_args):
    """`-nic none`: no board needs QEMU's option ROMs, so ipxe-qemu is not a dependency."""
    for board, args in board_args.items():
        files, error = doctor.qemu_probe(args)
        assert (files, error) == (set(), None), board


def test_closure_excludes_recommends():
    """The closure is Depends/Pre-Depends only: ipxe-qemu is a Recommends of qemu-system-arm."""
    assert "qemu-system-arm" in doctor.closure(["qemu-system-arm"])
    assert "ipxe-qemu" not in doctor.closure(["qemu-system-arm"])


def test_owner_follows_symlinks():
    cc = shutil.which("cc")
    assert doctor.owner(cc).startswith("gcc")          # /usr/bin/cc -> alternatives -> gcc-12
    assert doctor.owner("/nonexistent/seedfw") is None


def test_apt_list_is_derived_from_the_needs():
    assert host.APT_PACKAGES == list(dict.fromkeys(n.package for n in host.NEEDS))
    assert "libclang-rt-14-dev" in host.APT_PACKAGES


def test_doctor_passes_here():
    res = invoke("doctor")
    assert res.returncode == 0, res.stderr
    assert "MISSING" not in res.stdout
    assert "doctor: all" in res.stdout


def test_doctor_names_package_and_install_line_for_a_missing_row(monkeypatch, capsys):
    monkeypatch.setattr(host, "NEEDS", host.NEEDS + [
        Need("seedfw-no-such-tool", "seedfw-no-such-package", "test: negative control")])
    from seedfw.cli.host import _doctor
    from seedfw.errors import SeedfwError
    with pytest.raises(SeedfwError) as err:
        _doctor(quiet=True)
    out = capsys.readouterr().out
    assert "MISSING  seedfw-no-such-tool" in out
    assert "ok " not in out                             # quiet: only what is missing
    assert str(err.value).endswith(
        "apt-get install -y --no-install-recommends seedfw-no-such-package")
