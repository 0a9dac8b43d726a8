"""Read a bmaptool block map (.bmap, format 2.0): which block ranges of an image hold data.

Why: a 64 MiB card image is mostly holes; writing (and reading back) only the mapped ranges is
what bmaptool itself does for `copy`, and what the rockusb runner does over USB.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError


@dataclass(frozen=True)
class BlockMap:
    block_size: int
    image_size: int
    ranges: tuple[tuple[int, int], ...]       # (byte offset, byte length), in order

    @property
    def mapped_bytes(self) -> int:
        return sum(n for _, n in self.ranges)


def load(path: str | Path) -> BlockMap:
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
        block = int(root.findtext("BlockSize"))
        size = int(root.findtext("ImageSize"))
        ranges = []
        for r in root.iter("Range"):
            first, _, last = r.text.strip().partition("-")
            first, last = int(first), int(last or first)
            start = first * block
            ranges.append((start, min((last + 1) * block, size) - start))
    except (OSError, ET.ParseError, TypeError, ValueError) as exc:
        raise SeedfwError(f"not a readable block map: {exc}", path) from None
    if not ranges:
        raise SeedfwError("block map lists no ranges", path)
    return BlockMap(block, size, tuple(ranges))
