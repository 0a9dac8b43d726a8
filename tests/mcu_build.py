"""Build the wake-controller firmware and its flash algorithms once per test session.

`mcu_build(tmp_path_factory)` returns the output directory (mcu.elf/.bin/.hex, flashalgo/*.elf).
The lead may turn this into a session fixture in conftest.py; until then tests call it from their own
fixtures and the module-level cache keeps it to one build per session.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_ID = "pytest-1"
_cache: dict[str, Path] = {}


def mcu_build(tmp_path_factory) -> Path:
    if "out" not in _cache:
        out = tmp_path_factory.mktemp("mcu")
        for goal in ("all", "flashalgo"):
            subprocess.run(["make", "-s", "-C", str(ROOT / "firmware" / "mcu"), f"O={out}",
                            "CROSS_COMPILE=arm-none-eabi-", f"BUILD_ID={BUILD_ID}", goal],
                           check=True, capture_output=True, text=True)
        _cache["out"] = out
    return _cache["out"]
