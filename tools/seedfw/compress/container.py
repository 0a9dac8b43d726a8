"""The lz4blk container: writer and validating reader.

The layout is defined once, in firmware/include/seedfw/lz4blk.h (tests/test_compress.py checks
this module against it with the host C compiler). In short, little-endian:

    header (40 bytes): magic "SLZ4", version 1, header_size 40, block_size, block_count,
                       original_size, dict_id (crc32 of the dictionary, 0 = none), dict_size,
                       crc32 of the original, payload_size, header_crc (crc32 of bytes 0..35
                       followed by the block table)
    table:             block_count x uint32: stored size | 0x80000000 when stored raw
    blocks:            concatenated

The reader checks everything the C decoder checks, in the same order, and raises SeedfwError
naming the source and the offset/field of the first problem, so a bad container is reported
the same way whether the host or the firmware finds it.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import lz4.block

from ..errors import SeedfwError
from .blocks import MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Block, check_block_size, compress_blocks

MAGIC = 0x345A4C53  # b"SLZ4"
VERSION = 1
HEADER = struct.Struct("<IHHIIIIIIII")
HEADER_SIZE = HEADER.size
HEADER_FIELDS = ("magic", "version", "header_size", "block_size", "block_count", "original_size",
                 "dict_id", "dict_size", "crc32", "payload_size", "header_crc")
# offsetof() of each header field, derived from the struct format (checked against the C header)
HEADER_OFFSETS = dict(zip(HEADER_FIELDS, (0, 4, 6, 8, 12, 16, 20, 24, 28, 32, 36)))
HEADER_CRC_SPAN = HEADER_OFFSETS["header_crc"]
TABLE_ENTRY = struct.Struct("<I")
STORED = 0x80000000
SIZE_MASK = 0x7FFFFFFF
MAX_ORIGINAL = 0xFFFFFFFF

BOOT_ENTRY = struct.Struct("<4Q")   # struct lz4blk_boot_entry: container, len, dest, capacity

assert HEADER_SIZE == 40


def crc32(data: bytes, crc: int = 0) -> int:
    """CRC-32 as in zlib (and lz4blk_crc32 in C)."""
    return zlib.crc32(data, crc) & 0xFFFFFFFF


def dictionary_crc(dictionary: bytes) -> int:
    return crc32(dictionary) if dictionary else 0


@dataclass
class ContainerInfo:
    """A parsed, validated container header and table.

    entries: per block (stored size, stored-raw flag, offset of its bytes in the container)
    """
    block_size: int
    block_count: int
    original_size: int
    dict_id: int
    dict_size: int
    crc32: int
    payload_size: int
    total_size: int
    entries: list[tuple[int, bool, int]] = field(default_factory=list)

    @property
    def stored_blocks(self) -> int:
        return sum(1 for _, stored, _ in self.entries if stored)


def _table_offset(i: int) -> int:
    return HEADER_SIZE + i * TABLE_ENTRY.size


def build_container(blocks: list[Block], original: bytes, block_size: int,
                    dictionary: bytes = b"") -> bytes:
    """Assemble header + table + blocks for blocks made by blocks.compress_blocks."""
    check_block_size(block_size)
    if len(original) > MAX_ORIGINAL:
        raise SeedfwError(f"{len(original)} bytes is too large for a container (max 4 GiB - 1)")
    table = b"".join(TABLE_ENTRY.pack(len(b.payload) | (STORED if b.stored else 0))
                     for b in blocks)
    payload_size = sum(len(b.payload) for b in blocks)
    head = HEADER.pack(MAGIC, VERSION, HEADER_SIZE, block_size, len(blocks), len(original),
                       dictionary_crc(dictionary), len(dictionary), crc32(original),
                       payload_size, 0)[:HEADER_CRC_SPAN]
    header_crc = crc32(table, crc32(head))
    return head + struct.pack("<I", header_crc) + table + b"".join(b.payload for b in blocks)


def write_container(data: bytes, block_size: int = 65536, level: int = 12,
                    dictionary: bytes = b"") -> bytes:
    """Compress `data` into a container (HC `level` 1..12, 0 = fast; empty dictionary = none)."""
    data = bytes(data)
    return build_container(compress_blocks(data, block_size, level, dictionary), data,
                           block_size, dictionary)


def pack_boot_table(entries: list[tuple[int, int, int, int]]) -> bytes:
    """Bytes of a struct lz4blk_boot_entry[] for lz4blk_boot_expand(): one
    (container address, container length, destination, capacity) tuple per section."""
    for i, (container, length, dest, capacity) in enumerate(entries):
        if container < dest + capacity and dest < container + length:
            raise SeedfwError(f"container 0x{container:x}+{length} overlaps its destination "
                              f"0x{dest:x}+{capacity}", field=f"boot table entry {i}")
    return b"".join(BOOT_ENTRY.pack(*e) for e in entries)


def _fail(source, offset: int, name: str, message: str):
    raise SeedfwError(message, file=source, field=f"offset 0x{offset:x} ({name})")


def parse_container(blob: bytes, source: str = "<container>",
                    allow_trailing: bool = False) -> ContainerInfo:
    """Validate header and table; raise SeedfwError on the first problem."""
    blob = memoryview(blob)
    if len(blob) < HEADER_SIZE:
        _fail(source, len(blob), "header",
              f"truncated: {len(blob)} bytes, a container header needs {HEADER_SIZE}")
    h = dict(zip(HEADER_FIELDS, HEADER.unpack_from(blob, 0)))
    off = HEADER_OFFSETS
    if h["magic"] != MAGIC:
        _fail(source, off["magic"], "magic",
              f"bad magic 0x{h['magic']:08x}, expected 0x{MAGIC:08x} ('SLZ4')")
    if h["version"] != VERSION:
        _fail(source, off["version"], "version",
              f"unsupported version {h['version']}, expected {VERSION}")
    if h["header_size"] != HEADER_SIZE:
        _fail(source, off["header_size"], "header_size",
              f"header size {h['header_size']}, expected {HEADER_SIZE}")
    bs = h["block_size"]
    if bs < MIN_BLOCK_SIZE or bs > MAX_BLOCK_SIZE or bs & (bs - 1):
        _fail(source, off["block_size"], "block_size",
              f"block size {bs} is not a power of two in {MIN_BLOCK_SIZE}..{MAX_BLOCK_SIZE}")
    from ..reading import CAPS      # decompressed-size cap (docs/hostile-input.md)
    if h["original_size"] > CAPS["lz4_output"]:
        _fail(source, off["original_size"], "original_size",
              f"expands to {h['original_size']} bytes, over the limit of {CAPS['lz4_output']}")
    if h["block_count"] > CAPS["lz4_blocks"]:
        _fail(source, off["block_count"], "block_count",
              f"{h['block_count']} blocks, over the limit of {CAPS['lz4_blocks']}")
    want = -(-h["original_size"] // bs)
    if h["block_count"] != want:
        _fail(source, off["block_count"], "block_count",
              f"{h['block_count']} blocks, but original size {h['original_size']} "
              f"in blocks of {bs} needs {want}")
    if h["dict_size"] == 0 and h["dict_id"] != 0:
        _fail(source, off["dict_id"], "dict_id",
              f"dictionary id 0x{h['dict_id']:08x} with dictionary size 0")
    table_end = _table_offset(h["block_count"])
    if len(blob) < table_end:
        _fail(source, len(blob), "block table",
              f"truncated: block table of {h['block_count']} entries ends at 0x{table_end:x}, "
              f"container has {len(blob)} bytes")
    got = crc32(bytes(blob[HEADER_SIZE:table_end]), crc32(bytes(blob[:HEADER_CRC_SPAN])))
    if got != h["header_crc"]:
        _fail(source, off["header_crc"], "header_crc",
              f"header checksum 0x{h['header_crc']:08x}, computed 0x{got:08x}")

    entries = []
    pos = table_end
    for i in range(h["block_count"]):
        (e,) = TABLE_ENTRY.unpack_from(blob, _table_offset(i))
        size, stored = e & SIZE_MASK, bool(e & STORED)
        raw = min(bs, h["original_size"] - i * bs)
        if stored and size != raw:
            _fail(source, _table_offset(i), f"block {i}",
                  f"stored block of {size} bytes, but the block holds {raw}")
        if not stored and not 0 < size < raw:
            _fail(source, _table_offset(i), f"block {i}",
                  f"compressed size {size} not in 1..{raw - 1} (raw block is {raw} bytes)")
        entries.append((size, stored, pos))
        pos += size
    if pos - table_end != h["payload_size"]:
        _fail(source, off["payload_size"], "payload_size",
              f"payload size {h['payload_size']}, table sums to {pos - table_end}")
    if len(blob) < pos:
        _fail(source, len(blob), f"block {len(entries) - 1}",
              f"truncated: blocks end at 0x{pos:x}, container has {len(blob)} bytes")
    if len(blob) > pos and not allow_trailing:
        _fail(source, pos, "end", f"{len(blob) - pos} unexpected bytes after the last block")
    return ContainerInfo(h["block_size"], h["block_count"], h["original_size"], h["dict_id"],
                         h["dict_size"], h["crc32"], h["payload_size"], pos, entries)


def read_container(blob: bytes, dictionary: bytes | None = None,
                   source: str = "<container>") -> bytes:
    """Validate and decompress a container; returns the original bytes."""
    info = parse_container(blob, source)
    dictionary = bytes(dictionary or b"")
    if info.dict_size:
        if len(dictionary) != info.dict_size or dictionary_crc(dictionary) != info.dict_id:
            _fail(source, HEADER_OFFSETS["dict_id"], "dict_id",
                  f"needs dictionary 0x{info.dict_id:08x} of {info.dict_size} bytes, got "
                  f"0x{dictionary_crc(dictionary):08x} of {len(dictionary)} bytes")
    else:
        dictionary = b""
    out = bytearray()          # one buffer: the expansion is never held twice
    blob = memoryview(blob)
    for i, (size, stored, pos) in enumerate(info.entries):
        raw = min(info.block_size, info.original_size - i * info.block_size)
        data = bytes(blob[pos:pos + size])
        if not stored:
            try:
                kwargs = {"dict": dictionary} if dictionary else {}
                data = lz4.block.decompress(data, uncompressed_size=raw, **kwargs)
            except lz4.block.LZ4BlockError as exc:
                _fail(source, pos, f"block {i}", f"corrupt LZ4 block: {exc}")
            if len(data) != raw:
                _fail(source, pos, f"block {i}", f"decompressed to {len(data)} bytes, expected {raw}")
        out += data
    result = bytes(out)
    del out
    if crc32(result) != info.crc32:
        _fail(source, HEADER_OFFSETS["crc32"], "crc32",
              f"checksum of the decompressed data 0x{crc32(result):08x}, "
              f"header says 0x{info.crc32:08x}")
    return result
