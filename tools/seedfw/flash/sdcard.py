"""`sdcard` runner: write the disk image to an SD card (or eMMC in a reader, or a file) with
`bmaptool copy`, which writes only the mapped ranges and checks each range's sha256 from the
.bmap as it goes. Selected by `invoke flash --to TARGET` (any board with a disk image).

Options: to (a block device such as /dev/sdX, or a regular file standing for one).
Refused before anything is written (seedfw.flash.in_use, no override): a target in use — the disk
that holds /, a mounted device or one with a mounted partition, one LVM/dm-crypt/md is built on,
active swap, a file that backs a loop device — since overwriting a file system in use corrupts it
and whatever the host still writes; then a block device the kernel will not open exclusively
(O_EXCL); then a target smaller than the image. Capabilities: flash, verify. After the copy the
runner reads every mapped range back from the target (through an O_EXCL descriptor for a device)
and compares it (bmaptool checks the image it reads, not what the card stored).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from ..errors import SeedfwError
from .. import util
from . import bmap as bmap_mod
from . import in_use
from .base import FlashResult, FlashRunner, first_mismatch


def target_size(target: Path) -> int:
    st = os.stat(target)
    if stat.S_ISBLK(st.st_mode):
        with in_use.exclusive(target) as fd:
            return os.lseek(fd, 0, os.SEEK_END)
    if stat.S_ISREG(st.st_mode):
        return st.st_size
    raise SeedfwError("neither a block device nor a regular file", target, "--to")


class SdcardRunner(FlashRunner):
    """Copy a disk image onto a card or file with bmaptool; capabilities: flash, verify."""

    name = "sdcard"
    capabilities = frozenset({"flash", "verify"})
    tool = "bmaptool"
    tool_package = "bmap-tools"
    options = {"to": "write the disk image to this card (/dev/sdX) or file with bmaptool"}
    selected_by = "to"                  # --to picks this runner whatever the board's backend

    def __init__(self, board, probe_uid=None, log=print, to: str | Path | None = None,
                 host: in_use.Host = in_use.Host()):
        super().__init__(board, probe_uid, log)
        if not to:
            raise SeedfwError("no target given", None, "--to")
        self.target = Path(to)
        self.host = host                # where /proc and /sys are (a crafted tree in tests)

    def check_target(self, image: Path) -> None:
        if not self.target.exists():
            raise SeedfwError("does not exist (a card reader's device, or a file to write into)",
                              self.target, "--to")
        mode = os.stat(self.target).st_mode
        if not (stat.S_ISBLK(mode) or stat.S_ISREG(mode)):
            raise SeedfwError("neither a block device nor a regular file", self.target, "--to")
        in_use.refuse_in_use(self.target, self.host)
        have, need = target_size(self.target), image.stat().st_size
        if have < need:
            raise SeedfwError(f"is {have:,} bytes, smaller than the {need:,}-byte image",
                              self.target, "--to")

    def flash(self, image, verify=True) -> FlashResult:
        image = self.check_image(image)
        self.check_target(image)
        bmap = image.with_name(image.name + ".bmap")
        started = time.monotonic()
        cmd = ["bmaptool", "copy"] + (["--bmap", bmap] if bmap.is_file() else ["--nobmap"]) + \
            [image, self.target]
        self.log("$ " + " ".join(str(c) for c in cmd))
        util.run(cmd)
        ranges = bmap_mod.load(bmap).ranges if bmap.is_file() else ((0, image.stat().st_size),)
        result = FlashResult(image=image, backend=self.name, regions=list(ranges),
                             programmed_bytes=sum(n for _, n in ranges))
        if verify:
            # door: the image just written, read again for the verify pass (next line)
            with open(image, "rb") as src, in_use.exclusive(self.target) as fd, \
                    os.fdopen(os.dup(fd), "rb") as dst:
                for offset, length in ranges:
                    src.seek(offset)
                    dst.seek(offset)
                    want, got = src.read(length), dst.read(length)
                    bad = first_mismatch(want, got)
                    if bad is not None:
                        raise SeedfwError(f"verify failed: byte 0x{offset + bad:x} (sector "
                                          f"{(offset + bad) // 512}) of the target differs from "
                                          "the image", self.target, "--to")
                    result.verified_bytes += length
        result.seconds = time.monotonic() - started
        return result
