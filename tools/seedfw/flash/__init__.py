"""Flash runners (west-runner style): one class per runner, same interface (see base.py).

`REGISTRY` is the only list of runner names: board.yaml's `flash.backend` enum (seedfw.boards)
and `invoke flash`'s options (seedfw.cli.flash, from each runner's declared `options`) are
generated from it. Adding a runner is one module plus one line here.
"""

from __future__ import annotations

from ..registry import Registry

REGISTRY = Registry("flash backend", {
    "pyocd": "seedfw.flash.pyocd_runner:PyocdRunner",
    "rockusb": "seedfw.flash.rockusb:RockusbRunner",
    "sdcard": "seedfw.flash.sdcard:SdcardRunner",
    "qemu": "seedfw.flash.qemu_drive:QemuDriveRunner",
})


def runner_class(name: str, board_file=None):
    return REGISTRY.get(name, board_file, "flash.backend")
