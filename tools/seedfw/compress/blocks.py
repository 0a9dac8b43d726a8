"""Split a buffer into fixed-size blocks and LZ4-compress each one independently.

Why independent blocks: the boot decoder can expand any block alone (no history crosses a
block edge), which bounds its working set and lets a later stage decompress lazily. Each
block may reach into the same dictionary, which logically precedes every block.

A block whose LZ4 form is not smaller than the raw bytes is stored raw (flagged in the
container table), so incompressible data never grows by more than the 4-byte table entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import lz4.block

from ..errors import SeedfwError

BLOCK_SIZES = (4096, 16384, 65536)
MIN_BLOCK_SIZE = 1 << 10
MAX_BLOCK_SIZE = 1 << 22
# liblz4 only ever uses the last 64 KiB of a dictionary (the maximum match offset).
MAX_DICT_REACH = 65535


@dataclass(frozen=True)
class Block:
    """One block of the container.

    raw_size: bytes of original data in the block
    payload:  what is stored (LZ4 block, or the raw bytes when `stored`)
    stored:   True when kept uncompressed because LZ4 did not make it smaller
    """
    raw_size: int
    payload: bytes
    stored: bool


def check_block_size(block_size: int) -> None:
    if (block_size < MIN_BLOCK_SIZE or block_size > MAX_BLOCK_SIZE
            or block_size & (block_size - 1)):
        raise SeedfwError(f"block size {block_size} is not a power of two in "
                          f"{MIN_BLOCK_SIZE}..{MAX_BLOCK_SIZE}", field="block_size")


def check_level(level: int) -> None:
    if not 0 <= level <= 12:
        raise SeedfwError(f"HC level {level} outside 0..12 (0 = fast mode)", field="level")


def compress_block(raw: bytes, level: int = 12, dictionary: bytes = b"") -> bytes:
    """One raw LZ4 block (no size prefix). level 0 = fast mode, 1..12 = HC levels."""
    kwargs = {"store_size": False}
    if dictionary:
        kwargs["dict"] = bytes(dictionary)
    if level == 0:
        return lz4.block.compress(raw, mode="default", **kwargs)
    return lz4.block.compress(raw, mode="high_compression", compression=level, **kwargs)


def compress_blocks(data: bytes, block_size: int = 65536, level: int = 12,
                    dictionary: bytes = b"") -> list[Block]:
    """Compress `data` block by block; store raw any block LZ4 does not shrink."""
    check_block_size(block_size)
    check_level(level)
    blocks = []
    for start in range(0, len(data), block_size):
        raw = bytes(data[start:start + block_size])
        packed = compress_block(raw, level, dictionary)
        if len(packed) >= len(raw):
            blocks.append(Block(len(raw), raw, True))
        else:
            blocks.append(Block(len(raw), packed, False))
    return blocks
