"""rockusb backend: command construction and the real rkdeveloptool's no-device path (no RK3588 in
maskrom mode exists on this machine; the tool itself is real)."""

from __future__ import annotations

import shutil

import pytest

from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash import runner_class
from seedfw.flash.rockusb import RockusbRunner


def test_registry_maps_board_backend():
    assert runner_class(boards.get("rk3588").flash_backend) is RockusbRunner


def test_command_lines(tmp_path):
    runner = RockusbRunner(boards.get("rk3588"), loader=tmp_path / "loader.bin")
    img = tmp_path / "idbloader.img"
    img.write_bytes(b"RKNS" + bytes(2044))          # an idblock image: sector 64 by default
    assert runner.commands(img) == [["rkdeveloptool", "db", str(tmp_path / "loader.bin")],
                                    ["rkdeveloptool", "wl", "64", str(img)],
                                    ["rkdeveloptool", "rd"]]


def test_missing_loader_is_clear(tmp_path):
    img = tmp_path / "a.img"
    img.write_bytes(b"x")
    with pytest.raises(SeedfwError, match="needs the maskrom loader"):
        RockusbRunner(boards.get("rk3588")).flash(img)


@pytest.mark.skipif(shutil.which("rkdeveloptool") is None, reason="rkdeveloptool not installed")
def test_no_device_error_from_real_tool(tmp_path):
    loader, img = tmp_path / "loader.bin", tmp_path / "a.img"
    loader.write_bytes(b"\0" * 512)
    img.write_bytes(b"\0" * 512)
    with pytest.raises(SeedfwError) as err:
        RockusbRunner(boards.get("rk3588"), loader=loader, sector=64, log=lambda *_: None).flash(img)
    assert err.value.line() == ("usb: no Rockchip device in maskrom mode on USB (hold the maskrom key and "
                                "power-cycle the board)")
