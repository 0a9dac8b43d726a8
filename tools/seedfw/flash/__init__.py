"""Flash backends (west-runner style): one class per backend, same interface (see base.py).

Registry: backend name (board.yaml `flash.backend`) -> "module:Class", imported on use so that
listing backends does not import pyOCD.
"""

from __future__ import annotations

import importlib

from ..errors import SeedfwError

BACKENDS = {
    "pyocd": "seedfw.flash.pyocd_runner:PyocdRunner",
    "rockusb": "seedfw.flash.rockusb:RockusbRunner",
    "sdcard": "seedfw.flash.sdcard:SdcardRunner",
}


def runner_class(name: str, board_file=None):
    if name not in BACKENDS:
        raise SeedfwError(f"no flash backend '{name}' (known: {', '.join(sorted(BACKENDS))})",
                          board_file, "flash.backend")
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)
