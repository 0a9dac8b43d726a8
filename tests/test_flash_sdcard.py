"""The sdcard runner: `invoke flash --to FILE` writes the disk image with `bmaptool copy` and
reads it back; it refuses a target smaller than the image (a target in use:
tests/test_flash_inuse.py)."""

from __future__ import annotations

import pytest

import builds
from cli import invoke, one_error_line
from seedfw.flash import bmap
from seedfw.images import gpt


@pytest.mark.slow
def test_flash_onto_a_file(rk3588_build, tmp_path):
    card = tmp_path / "card.img"
    with open(card, "wb") as f:
        f.truncate(256 << 20)               # the image is 128 MiB + the backup GPT
    proc = invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir, "--to", card)
    assert proc.returncode == 0, proc.stderr
    disk = builds.image(rk3588_build, "rk3588-disk.img")
    ranges = bmap.load(disk.with_name(disk.name + ".bmap")).ranges
    mapped = sum(n for _, n in ranges)
    assert f"via sdcard ({mapped} bytes, {mapped} verified)" in proc.stdout
    image, written = disk.read_bytes(), card.read_bytes()
    assert written[:len(image)] == image                        # holes are zero on both sides
    assert gpt.parse(written).ok and written[64 * 512:64 * 512 + 4] == b"RKNS"


@pytest.mark.slow
def test_refuses_a_target_smaller_than_the_image(rk3588_build, tmp_path):
    card = tmp_path / "small.img"
    with open(card, "wb") as f:
        f.truncate(32 << 20)
    line = one_error_line(invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir,
                                 "--to", card))
    size = builds.image(rk3588_build, "rk3588-disk.img").stat().st_size     # 128 MiB + backup GPT
    assert line == f"error: {card}: --to: is 33,554,432 bytes, smaller than the {size:,}-byte image"
    line = one_error_line(invoke("flash", "--board", "rk3588", "--output", rk3588_build.outdir,
                                 "--to", tmp_path / "nope"))
    assert line.endswith("nope: --to: does not exist (a card reader's device, or a file to write "
                         "into)")
