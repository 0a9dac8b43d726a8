"""The rockusb runner end to end through `invoke flash`, against a STAND-IN rkdeveloptool
(tests/standins/rkdeveloptool_filebacked.py: storage in a file; no RK3588 is attached here), plus
its corrupting variant as the negative control, and the runner base's refusals."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import builds
from cli import invoke, one_error_line
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash import bmap
from seedfw.flash.rockusb import RockusbRunner
from seedfw.flash.sdcard import SdcardRunner
from seedfw.sources import rkbin

STANDIN = Path(__file__).resolve().parent / "standins" / "rkdeveloptool_filebacked.py"


@pytest.fixture
def standin(tmp_path):
    """PATH with the stand-in first, named rkdeveloptool; returns (env, storage, command log)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "rkdeveloptool"
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    tool.chmod(0o755)
    storage = tmp_path / "emmc.bin"
    with open(storage, "wb") as f:
        f.truncate(256 << 20)                           # a 256 MiB "eMMC" (the image: 128 MiB + GPT)
    log = tmp_path / "commands.log"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}",
               STANDIN_RKDEV_STORAGE=str(storage), STANDIN_RKDEV_LOG=str(log))
    return env, storage, log


@pytest.mark.slow
def test_flash_disk_image_reads_back(rk3588_build, standin):
    env, storage, log = standin
    proc = invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir, env=env)
    assert proc.returncode == 0, proc.stderr
    disk = builds.image(rk3588_build, "rk3588-disk.img")
    ranges = bmap.load(disk.with_name(disk.name + ".bmap")).ranges
    written = sum(-(-n // 512) * 512 for _, n in ranges)
    assert f"-> rk3588 via rockusb ({written} bytes, {written} verified)" in proc.stdout
    commands = [l.split()[0] for l in log.read_text().splitlines()]
    assert commands[0] == "db" and commands[-1] == "rd"
    assert commands.count("wl") == commands.count("rl") == len(ranges)
    loader = log.read_text().splitlines()[0].split()[1]
    assert loader.endswith(f"images/{rkbin.LOADER_NAME}")          # the build's own loader
    image, stored = disk.read_bytes(), storage.read_bytes()
    for offset, length in ranges:
        assert stored[offset:offset + length] == image[offset:offset + length]
    assert stored[64 * 512:64 * 512 + 4] == b"RKNS"                  # idblock at sector 64


@pytest.mark.slow
def test_corrupting_medium_fails_verify_with_the_sector(rk3588_build, standin):
    env, storage, log = standin
    env["STANDIN_RKDEV_CORRUPT_SECTOR"] = "100"                 # inside the DDR init blob
    line = one_error_line(invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir,
                                 env=env))
    assert line == (f"error: {builds.image(rk3588_build, 'rk3588-disk.img')}: sector 100: verify "
                    "failed: sector 100 read back differs from the image (byte 0xc807 of it)")
    assert "rd" not in log.read_text().split()                   # stopped at the failure
    # no verify: the same bad medium is written without complaint (why verify is the default)
    proc = invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir, "--no-verify",
                  env=env)
    assert proc.returncode == 0 and ", 0 verified)" in proc.stdout, proc.stderr


@pytest.mark.slow
def test_u_boot_rockchip_bin_goes_to_sector_64(rk3588_build, standin):
    env, storage, log = standin
    image = builds.image(rk3588_build, "u-boot-rockchip.bin")
    proc = invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir, "--image", image,
                  env=env)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().splitlines()[1].split()[:2] == ["wl", "64"]
    blob = image.read_bytes()
    assert storage.read_bytes()[64 * 512:64 * 512 + len(blob)] == blob


def test_runner_base_refuses_what_a_runner_cannot_do(tmp_path):
    board = boards.get("rk3588")
    with pytest.raises(SeedfwError) as err:
        RockusbRunner(board, loader=tmp_path / "l.bin").run("erase")
    assert err.value.line() == "flash.backend: the rockusb runner cannot erase (it can: flash, " \
                               "reset, verify)"
    (tmp_path / "card").write_bytes(b"")
    with pytest.raises(SeedfwError, match="the sdcard runner cannot reset"):
        SdcardRunner(board, to=tmp_path / "card").run("reset")
    runner = RockusbRunner(board, loader=tmp_path / "l.bin", tool="rkdeveloptool-not-here")
    with pytest.raises(SeedfwError) as err:
        runner.run("flash", tmp_path / "card")
    assert err.value.line() == ("flash.backend: rkdeveloptool-not-here is not installed (Debian "
                                "package rkdeveloptool; run 'invoke setup')")
    assert set(RockusbRunner.options) == {"loader", "sector"} and SdcardRunner.options.keys() == {"to"}
