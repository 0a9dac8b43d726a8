"""`rockusb` runner: RK3588 storage through the maskrom USB protocol, driven by `rkdeveloptool`.

Options: loader (the maskrom loader for `db`; default: the one the build declares, role
"loader"), sector (where the image goes; default: the offset the build's manifest places it at
(`placement.offset`, seedfw.manifest), checked against the image's magic bytes; for a loose
image or a manifest without placements, from the bytes alone: a GPT disk image at 0, an RKNS
boot image — u-boot-rockchip.bin — at 64, a FIT at the firmware partition, 32768). Probe id:
unused (rkdeveloptool talks to the first maskrom device). Capabilities: flash, verify, reset.

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


# What each kind of image is, by its first bytes, and the one sector it belongs at on eMMC/SD
# (the boot ROM's fixed sectors; every other place comes from board.yaml image.partitions through the manifest).
KINDS = {"gpt": ("a GPT disk image", 0), "rkns": ("an RKNS idblock image", 64),
         "fit": ("a FIT", None)}


def _kind(image: Path) -> str | None:
    from .. import reading
    head = reading.head(image, 1024)
    if head[512:520] == b"EFI PART":
        return "gpt"
    if head[:4] == b"RKNS":
        return "rkns"
    if head[:4] == b"\xd0\x0d\xfe\xed":
        return "fit"
    return None


def default_sector(image: Path, board=None) -> int:
    """Where an image belongs on the card when the build does not place it (a loose image, or a
    manifest written before placements): by its magic bytes, a GPT disk image at sector 0, an
    RKNS idblock image (u-boot-rockchip.bin) at 64; a FIT only where a manifest places it."""
    kind = _kind(image)
    if kind == "fit":
        # A FIT's place is the board's partition table (board.yaml image.partitions), which the
        # manifest's placement carries; without one, the board's "firmware" partition (the one
        # that holds the firmware FIT) when board.yaml places it at a fixed offset.
        entry = next((e for e in (board.partitions if board else ())
                      if e["name"] == "firmware" and e.get("offset") is not None), None)
        if entry is None:
            raise SeedfwError("a FIT that no build manifest places: give --sector (the start "
                              "sector of the partition it belongs in)", image)
        return int(entry["offset"]) // SECTOR
    if kind is not None:
        return KINDS[kind][1]
    raise SeedfwError("not a GPT disk image, an RKNS boot image or a FIT: give --sector", image)


def placed_sector(image: Path) -> int | None:
    """The sector the build's manifest places the image at (placement.offset), checked against
    its bytes: a GPT disk image placed anywhere but sector 0, or an idblock image anywhere but
    64, is one error line (the manifest and the file disagree: flashing would brick the card).
    None when the image is not in a manifest or its entry has no offset."""
    from ..manifest import Manifest
    manifest = Manifest.beside(image)
    entry = manifest.by_path(image) if manifest is not None else None
    if entry is None or entry.placement.offset is None:
        return None
    offset = entry.placement.offset
    where = f"{entry.where}.placement.offset"
    if offset % SECTOR:
        raise SeedfwError(f"offset {offset} is not a whole {SECTOR}-byte sector", manifest.path,
                          where)
    kind = _kind(image)
    if kind is not None and KINDS[kind][1] is not None and offset != KINDS[kind][1] * SECTOR:
        what, sector = KINDS[kind]
        raise SeedfwError(f"the build places {image.name} at byte {offset} (sector "
                          f"{offset // SECTOR}), but it is {what}, which belongs at sector "
                          f"{sector}", manifest.path, where)
    return offset // SECTOR


# Placement storages rockusb cannot write (seedfw.manifest.Placement.storage, as the parts name
# them): rkdeveloptool's `wl` writes the medium the maskrom loader opened, the eMMC or SD card
# (board.yaml boot.storage "sd-emmc"; "mmc" in older manifests). It has no storage switch and
# this runner sends none, so an image placed elsewhere would land on the eMMC instead.
NOT_WRITTEN = {"spi-nor": "SPI NOR", "usb": "USB (sent to the boot ROM, never stored)",
               "pflash": "parallel flash"}


def check_storage(image: Path) -> None:
    """Refuse an image the build's manifest places on a medium rockusb cannot write. The case
    that matters: u-boot-rockchip-spi.bin (placement spi-nor, offset 0) would be written at
    sector 0 of the eMMC, over its GPT, and verify "ok" (the read-back reads the same eMMC).
    Loose images (no manifest entry, or no storage in it) are judged by their bytes instead
    (default_sector)."""
    from ..manifest import Manifest
    manifest = Manifest.beside(image)
    entry = manifest.by_path(image) if manifest is not None else None
    storage = entry.placement.storage if entry is not None else None
    if storage not in NOT_WRITTEN:
        return
    raise SeedfwError(f"the build places {image.name} on {NOT_WRITTEN[storage]}, but rockusb "
                      "writes the eMMC/SD medium the maskrom loader opens (it cannot select "
                      f"{storage}); nothing written (docs/bringup-rock5b.md: SPI NOR)",
                      manifest.path, f"{entry.where}.placement.storage")


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
        sector = self.sector_for(image)
        return [[self.tool, "db", str(self.loader)],
                [self.tool, "wl", str(sector), str(image)],
                [self.tool, "rd"]]

    def sector_for(self, image: Path) -> int:
        """--sector, else the build's placement of the image, else its magic bytes' guess; an
        image the build places on another storage is refused first, --sector or not."""
        check_storage(image)
        if self.sector is not None:
            return self.sector
        placed = placed_sector(image)
        return placed if placed is not None else default_sector(image, self.board)

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
        base = self.sector_for(image)
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
