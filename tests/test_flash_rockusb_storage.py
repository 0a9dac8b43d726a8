"""rockusb refuses an image the build places on a medium it cannot write (seedfw.flash.rockusb
`check_storage`; docs/bringup-rock5b.md "SPI NOR").

rkdeveloptool's `wl` writes the medium the maskrom loader opened (eMMC/SD); the runner sends no
storage switch. Before the check, `invoke flash --image …/u-boot-rockchip-spi.bin` (placement
spi-nor, offset 0) wrote the SPI image at sector 0 of the eMMC, over its GPT, and said "ok".
Fast: a crafted output directory (manifest.json + image) and the stand-in rkdeveloptool
(tests/standins/rkdeveloptool_filebacked.py) with its storage in a file, so "nothing written"
is the storage's bytes read back unchanged and the stand-in's empty command log.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from cli import invoke, one_error_line

STANDIN = Path(__file__).resolve().parent / "standins" / "rkdeveloptool_filebacked.py"
GPT_HEAD = bytes(512) + b"EFI PART"


@pytest.fixture
def bench(tmp_path):
    """An rk3588 output dir with one image (SPI-NOR-shaped: RKNS at 0x8000), a loader, and a
    stand-in "eMMC" that already holds a GPT at sector 0 (what the SPI image would overwrite)."""
    out = tmp_path / "out"
    (out / "images").mkdir(parents=True)
    spi = bytearray(0x10000)
    spi[0x8000:0x8004] = b"RKNS"
    image = out / "images" / "u-boot-rockchip-spi.bin"
    image.write_bytes(bytes(spi))
    loader = tmp_path / "loader.bin"
    loader.write_bytes(b"LDR ".ljust(512, b"\0"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "rkdeveloptool"
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    tool.chmod(0o755)
    emmc = tmp_path / "emmc.bin"
    emmc.write_bytes(GPT_HEAD.ljust(1 << 20, b"\0"))
    log = tmp_path / "commands.log"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}",
               STANDIN_RKDEV_STORAGE=str(emmc), STANDIN_RKDEV_LOG=str(log))
    return out, image, loader, emmc, log, env


def _manifest(out: Path, image: Path, storage: str | None) -> Path:
    entry = {"name": image.name, "path": f"images/{image.name}", "size": image.stat().st_size,
             "sha256": hashlib.sha256(image.read_bytes()).hexdigest()}
    if storage is not None:
        entry["placement"] = {"storage": storage, "offset": 0}
    path = out / "manifest.json"
    path.write_text(json.dumps({"board": "rk3588", "artifacts": [entry]}))
    return path


def _flash(image, loader, env, *extra):
    return invoke("flash", "--board", "rk3588", "--image", image, "--loader", loader, *extra,
                  env=env)


def test_an_image_placed_on_spi_nor_is_refused_and_nothing_is_written(bench):
    out, image, loader, emmc, log, env = bench
    manifest = _manifest(out, image, "spi-nor")
    before = emmc.read_bytes()
    line = one_error_line(_flash(image, loader, env))
    assert line == (f"error: {manifest}: artifacts[0].placement.storage: the build places "
                    "u-boot-rockchip-spi.bin on SPI NOR, but rockusb writes the eMMC/SD medium "
                    "the maskrom loader opens (it cannot select spi-nor); nothing written "
                    "(docs/bringup-rock5b.md: SPI NOR)")
    assert emmc.read_bytes() == before and not log.exists()     # not even `db` ran
    # --sector does not make it right: the medium is wrong, not the sector.
    assert one_error_line(_flash(image, loader, env, "--sector", "0")) == line
    assert emmc.read_bytes() == before


def test_the_loader_placed_on_usb_is_refused_as_an_image(bench):
    out, image, loader, emmc, log, env = bench
    manifest = _manifest(out, image, "usb")
    line = one_error_line(_flash(image, loader, env))
    assert line.startswith(f"error: {manifest}: artifacts[0].placement.storage: the build "
                           "places u-boot-rockchip-spi.bin on USB (sent to the boot ROM, never "
                           "stored), but rockusb writes")
    assert not log.exists()


def test_negative_control_the_same_bytes_placed_on_the_emmc_are_written(bench):
    """sd-emmc (the board's boot.storage) passes the check: the image is written at the
    placement's sector 0 and read back, so the refusal above is the storage's doing."""
    out, image, loader, emmc, log, env = bench
    _manifest(out, image, "sd-emmc")
    proc = _flash(image, loader, env)
    assert proc.returncode == 0, proc.stderr
    size = image.stat().st_size
    assert proc.stdout.splitlines()[-1] == \
        f"ok: {image} -> rk3588 via rockusb ({size} bytes, {size} verified)"
    assert emmc.read_bytes()[:size] == image.read_bytes()         # over the old GPT, as asked
    assert [l.split()[0] for l in log.read_text().splitlines()] == ["db", "wl", "rl", "rd"]
