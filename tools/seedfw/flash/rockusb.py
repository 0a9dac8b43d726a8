"""`rockusb` backend: RK3588 storage through the maskrom USB protocol with `rkdeveloptool`.

Properties: loader (the SPL/DDR "download boot" blob, `db`), sector (where `wl` writes; 64 = 32 KiB,
where the RK3588 boot ROM looks for idbloader on eMMC/SD). Probe id: unused (rkdeveloptool talks to
the first maskrom device); kept for the common interface.

Sequence: `rkdeveloptool db <loader>` (run the loader so DRAM and storage work), `wl 64 <image>`,
`rd` (reset). rkdeveloptool has no readback-and-compare of its own; `rl` could read back, but
on this backend verification is left to the boot itself (not available without hardware).
pyOCD cannot do this: it drives Cortex-M cores, not the RK3588 boot ROM.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from ..errors import SeedfwError
from .base import FlashResult, FlashRunner

TOOL = "rkdeveloptool"
NO_DEVICE_MARKERS = ("not found any devices", "did not find any rockusb device", "Creating Comm Object failed")


class RockusbRunner(FlashRunner):
    """Flash RK3588 storage in maskrom mode; capabilities: flash, reset."""

    name = "rockusb"
    capabilities = frozenset({"flash", "reset"})

    def __init__(self, board, probe_uid=None, log=print, loader: str | Path | None = None, sector: int = 64,
                 tool: str = TOOL):
        super().__init__(board, probe_uid, log)
        self.loader = Path(loader) if loader else None
        self.sector = sector
        self.tool = tool

    def commands(self, image: Path) -> list[list[str]]:
        """The rkdeveloptool command lines, in order (tests check them)."""
        if self.loader is None:
            raise SeedfwError("rockusb needs the maskrom loader (rk3588 *_spl_loader_*.bin)", None, "--loader")
        return [[self.tool, "db", str(self.loader)],
                [self.tool, "wl", str(self.sector), str(image)],
                [self.tool, "rd"]]

    def _run(self, cmd: list[str]) -> str:
        if shutil.which(cmd[0]) is None:
            raise SeedfwError(f"{cmd[0]} is not installed (Debian package rkdeveloptool)", None, "flash.backend")
        res = subprocess.run(cmd, capture_output=True, text=True)
        out = (res.stdout + res.stderr).strip()
        if res.returncode != 0 or any(m.lower() in out.lower() for m in NO_DEVICE_MARKERS):
            if any(m.lower() in out.lower() for m in NO_DEVICE_MARKERS):
                raise SeedfwError("no Rockchip device in maskrom mode on USB (hold the maskrom key and "
                                  "power-cycle the board)", None, "usb")
            raise SeedfwError(f"{' '.join(cmd[:2])} failed ({res.returncode}): {out[-200:]}", None, "usb")
        return out

    def flash(self, image, verify=True) -> FlashResult:
        image = self.check_image(image)
        if self.loader is not None and not self.loader.is_file():
            raise SeedfwError("loader file not found", self.loader, "--loader")
        start = time.monotonic()
        for cmd in self.commands(image):
            self.log("$ " + " ".join(cmd))
            self._run(cmd)
        size = image.stat().st_size
        return FlashResult(image=image, backend=self.name, programmed_bytes=size,
                           seconds=time.monotonic() - start, regions=[(self.sector * 512, size)])
