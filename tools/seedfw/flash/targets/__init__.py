"""pyOCD target definitions added by seedfw, registered into pyOCD's target table.

pyOCD 0.46 has no plug-in group for targets; `pyocd.target.TARGET` is the table every session
looks names up in (`--target`, `target_override`). `register()` adds ours; it runs when the `qemu`
probe plug-in is imported (pyOCD imports every `pyocd.probe` entry point at start-up), so plain
`pyocd flash -t seedfw_mps2_an385` works too. Real-board users can call it from a pyOCD user script.
"""

from __future__ import annotations


def register() -> None:
    from pyocd.target import TARGET

    from .mps2_an385 import MPS2AN385

    TARGET.setdefault(MPS2AN385.TARGET_NAME, MPS2AN385)
