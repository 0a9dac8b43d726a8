"""The second RK3588-family board, added as board data only (issue 32): Radxa ROCK 5A builds, its
disk image inspects clean, and its own OS (Debian's kernel, the build's initramfs and ext4 root,
the boot package U-Boot would verify and hand over) boots in QEMU virt to `agent: ok`, the way
rk3588's does (tests/test_os_root.py; the same DIFFERENCE_DTB and DIFFERENCE_STORAGE apply)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import builds
from seedfw.images import fdt
from test_os_root import DIFFERENCE_DTB, DIFFERENCE_STORAGE, _debugfs, _partition, boot, \
    extract_os_parts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rock5a_build(tmp_path_factory):
    return builds.build_board("rock5a", tmp_path_factory)


@pytest.fixture(scope="module")
def rock5a_os(rock5a_build, tmp_path_factory):
    return extract_os_parts(rock5a_build, tmp_path_factory.mktemp("rock5a-os"))


def test_rock5a_disk_image_inspects_clean(rock5a_build):
    disk = builds.image(rock5a_build, "rock5a-disk.img")
    got = subprocess.run([sys.executable, "-m", "invoke", "inspect", str(disk)],
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    assert "all hashes ok" in got.stdout


def test_rock5a_boots_its_own_os_in_qemu_virt(rock5a_build, rock5a_os, tmp_path):
    # the board's own DT in its boot partition is the ROCK 5A's, not the 5B's
    boot_part = _partition(rock5a_os["disk"], "boot", tmp_path / "boot.ext4")
    conf = rock5a_os["extlinux/extlinux.conf"].read_text()
    dtb_name = re.search(r"^\s*fdt\s+/(\S+)", conf, re.M)[1]
    dt = fdt.parse(_debugfs(boot_part, f"cat /{dtb_name}"))
    assert dt.strings("compatible")[0] == "radxa,rock-5a"
    text, _ = boot(rock5a_os, rock5a_os["disk"], rock5a_os["initramfs.cpio"], tmp_path / "boot.log")
    uuid = rock5a_os["append"].split("root=PARTUUID=")[1].split()[0]
    pkg = builds.image(rock5a_build, "rock5a-boot.pkg")
    for line in (f"init: root PARTUUID={uuid} is /dev/vda3; mounting it (ext4, ro)",
                 f"agent: boot package at 0x{rock5a_os['region']:x}", "agent: ok"):
        assert line in text, (line, DIFFERENCE_DTB, DIFFERENCE_STORAGE)
    assert "agent: FAILED" not in text
    from test_clean_run import alarming       # the clean-run check, on this boot's whole log
    assert alarming(text) == []
    assert pkg.stat().st_size > 0
    manifest = json.loads((rock5a_build.outdir / "manifest.json").read_text())
    assert manifest["board"] == "rock5a"


def _os_stamp(board: str, tmp_path, fragments=()) -> str:
    """The stamp of `board`'s Buildroot step, as its build would compute it (nothing runs)."""
    from seedfw import config as config_mod, parts
    from seedfw.plan import Plan, stamp_of
    cfg = config_mod.configure(board, tmp_path / board, list(fragments), False)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(ctx.outdir, 1, None)
    parts.declare(ctx, plan)
    return stamp_of(plan.steps["buildroot.build"], {})[0]


def test_rock5a_takes_rk3588s_os_build(tmp_path):
    """board.yaml os_name: ROCK 5A's OS configuration is rk3588's under one name, so its
    Buildroot step has rk3588's stamp and the artifact store hands over the ~4-minute build;
    qemu-aarch64 with the OS (another CPU and console) is the negative control."""
    rk3588 = _os_stamp("rk3588", tmp_path)
    assert _os_stamp("rock5a", tmp_path) == rk3588
    assert _os_stamp("qemu-aarch64", tmp_path, [builds.BUILDROOT_FRAGMENT]) != rk3588
