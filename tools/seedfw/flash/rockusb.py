"""`rockusb` runner: RK3588 storage through the maskrom USB protocol, driven by `rkdeveloptool`.

Options: loader (the maskrom loader for `db`; default: the one the build declares, role
"loader"), sector (where the image goes; default from the image itself: a GPT disk image at 0,
an RKNS boot image — u-boot-rockchip.bin — at 64, a FIT at the firmware partition, 32768). Probe id: unused (rkdeveloptool talks to the
first maskrom device). Capabilities: flash, verify, reset.

Sequence: `db <loader>` (the boot ROM runs the DDR init and the USB plug, so storage answers),
`wl <sector> <file>` — for an image with a .bmap beside it only the mapped ranges, each from a
temporary file — then, unless --no-verify, `rl <sector> <count> <file>` of every written range
and a byte comparison (a mismatch names the first differing sector), then `rd` (reset).
Why read back: rkdeveloptool reports the USB transfer, not what the medium stored; like pyOCD's
runner we trust only bytes read back.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from ..errors import SeedfwError
from . import bmap as bmap_mod
from .base import FlashResult, FlashRunner, first_mismatch

TOOL = "rkdeveloptool"
SECTOR = 512
NO_DEVICE_MARKERS = ("not found any devices", "did not find any rockusb device", "Creating Comm Object failed")


def default_sector(image: Path) -> int:
    """Where an image belongs on the card (seedfw.parts.disk's layout): a GPT disk image at
    sector 0, an RKNS idblock image (u-boot-rockchip.bin) at 64, a FIT (our firmware FIT) at the
    start of the firmware partition."""
    from ..parts import disk
    with open(image, "rb") as f:  # door: 1 KiB head of the image to flash
        head = f.read(1024)
    if head[512:520] == b"EFI PART":
        return 0
    if head[:4] == b"RKNS":
        return 64
    if head[:4] == b"\xd0\x0d\xfe\xed":
        return disk.FIRMWARE_OFFSET // SECTOR
    raise SeedfwError("not a GPT disk image, an RKNS boot image or a FIT: give --sector", image)


class RockusbRunner(FlashRunner):
    """Flash RK3588 storage in maskrom mode; capabilities: flash, verify, reset."""

    name = "rockusb"
    capabilities = frozenset({"flash", "verify", "reset"})
    tool = TOOL
    tool_package = "rkdeveloptool"
    options = {"loader": "maskrom loader for `rkdeveloptool db` (default: the build's)",
               "sector": "first sector to write (default: 0 for a disk image, 64 for "
                         "u-boot-rockchip.bin)"}

    def __init__(self, board, probe_uid=None, log=print, loader: str | Path | None = None,
                 sector: int | None = None, tool: str = TOOL):
        super().__init__(board, probe_uid, log)
        self.loader = Path(loader) if loader else None
        self.sector = None if sector is None else int(sector)
        self.tool = tool

    @classmethod
    def create(cls, board, args: dict, log=print) -> "RockusbRunner":
        """Without --loader, the maskrom loader the build declares (manifest role "loader")."""
        from .image_checks import default_loader
        args = dict(args)
        if not args.get("loader"):
            args["loader"] = default_loader(board, args.get("output"))
        return super().create(board, args, log)

    def commands(self, image: Path) -> list[list[str]]:
        """The rkdeveloptool command lines of a whole-image write, in order (no verify)."""
        if self.loader is None:
            raise SeedfwError("rockusb needs the maskrom loader (rk3588 *_spl_loader_*.bin)", None, "--loader")
        sector = self.sector if self.sector is not None else default_sector(image)
        return [[self.tool, "db", str(self.loader)],
                [self.tool, "wl", str(sector), str(image)],
                [self.tool, "rd"]]

    def _run(self, cmd: list) -> str:
        cmd = [str(c) for c in cmd]
        self.log("$ " + " ".join(cmd))
        res = subprocess.run(cmd, capture_output=True, text=True)
        out = (res.stdout + res.stderr).strip()
        if any(m.lower() in out.lower() for m in NO_DEVICE_MARKERS):
            raise SeedfwError("no Rockchip device in maskrom mode on USB (hold the maskrom key and "
                              "power-cycle the board)", None, "usb")
        if res.returncode != 0:
            raise SeedfwError(f"{' '.join(cmd[:2])} failed ({res.returncode}): {out[-200:]}", None, "usb")
        return out

    def ranges(self, image: Path) -> list[tuple[int, int]]:
        """(byte offset, length) of what to write: the .bmap's mapped ranges, or everything."""
        bmap = image.with_name(image.name + ".bmap")
        size = image.stat().st_size
        if not bmap.is_file():
            return [(0, size)]
        blocks = bmap_mod.load(bmap)
        if blocks.image_size != size:
            raise SeedfwError(f"block map is for a {blocks.image_size}-byte image, the image has "
                              f"{size}", bmap, "ImageSize")
        # rkdeveloptool writes whole sectors: the block size (4096) is a multiple of them.
        return list(blocks.ranges)

    def flash(self, image, verify=True) -> FlashResult:
        image = self.check_image(image)
        if self.loader is None:
            raise SeedfwError("rockusb needs the maskrom loader (rk3588 *_spl_loader_*.bin)", None, "--loader")
        if not self.loader.is_file():
            raise SeedfwError("loader file not found", self.loader, "--loader")
        base = self.sector if self.sector is not None else default_sector(image)
        start = time.monotonic()
        ranges = self.ranges(image)
        result = FlashResult(image=image, backend=self.name)
        self._run([self.tool, "db", self.loader])
        with open(image, "rb") as f, tempfile.TemporaryDirectory(prefix="rockusb-") as tmp:  # door: the image to flash, checked by image_checks
            for offset, length in ranges:
                f.seek(offset)
                data = f.read(length)
                data += bytes(-len(data) % SECTOR)
                part = Path(tmp) / "range.bin"
                part.write_bytes(data)
                first = base + offset // SECTOR
                self._run([self.tool, "wl", first, part])
                result.programmed_bytes += len(data)
                result.regions.append((first * SECTOR, len(data)))
                if verify:
                    back = Path(tmp) / "readback.bin"
                    back.unlink(missing_ok=True)
                    self._run([self.tool, "rl", first, len(data) // SECTOR, back])
                    got = back.read_bytes() if back.is_file() else b""  # door: rkdeveloptool's read-back
                    bad = first_mismatch(data, got)
                    if bad is not None:
                        raise SeedfwError(f"verify failed: sector {first + bad // SECTOR} read back "
                                          f"differs from the image (byte 0x{offset + bad:x} of it)",
                                          image, f"sector {first + bad // SECTOR}")
                    result.verified_bytes += len(data)
        self.reset()
        result.seconds = time.monotonic() - start
        return result

    def reset(self) -> None:
        self._run([self.tool, "rd"])
