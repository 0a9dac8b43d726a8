"""Flat boot package (firmware/include/seedfw/pkg.h): writer and validating reader.

For boot stages that do not parse FDT: a fixed header, a table of fixed-size entries, then the
entries' data at aligned offsets. The reader checks structure strictly (magic, version, sizes,
header crc, bounds, overlaps) and raises on any of it — a package whose table cannot be trusted
has nothing to show — but reports per-entry hash results instead of raising, so `inspect` can
print which entry is damaged.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError
from ..util import write_bytes
from .entries import T_DVFS, TYPE_NAMES, Entry
from ..reading import CAPS, View

MAGIC = 0x474B5053
VERSION = 1
ALIGN = 64
HEADER = struct.Struct("<IHHHHIIIII")      # struct seedfw_pkg_header
ENTRY = struct.Struct("<HHI16sIIII32s")    # struct seedfw_pkg_entry
HEADER_CRC_OFFSET = 24


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def encode(entries: list[Entry]) -> bytes:
    """The package bytes for `entries` (in order)."""
    names = set()
    for e in entries:
        if e.name in names:
            raise SeedfwError(f"two package entries are named '{e.name}'")
        names.add(e.name)
    if len(entries) > 0xFFFF:
        raise SeedfwError("too many package entries")
    table_end = HEADER.size + ENTRY.size * len(entries)
    offset = table_end
    placed = []
    for e in entries:
        offset = _align(offset, max(ALIGN, e.alignment))
        placed.append(offset)
        offset += len(e.data)
    total = _align(offset, ALIGN)
    if total > 0xFFFFFFFF:
        raise SeedfwError(f"package of {total} bytes does not fit 32-bit offsets")
    out = bytearray(total)
    for i, (e, at) in enumerate(zip(entries, placed)):
        out[at:at + len(e.data)] = e.data
        ENTRY.pack_into(out, HEADER.size + i * ENTRY.size, e.type_id, e.subtype, e.flags,
                        e.name.encode().ljust(16, b"\0"), at, len(e.data), e.uncompressed_size,
                        zlib.crc32(e.data), hashlib.sha256(e.data).digest())
    HEADER.pack_into(out, 0, MAGIC, VERSION, HEADER.size, ENTRY.size, len(entries), total, ALIGN,
                     0, 0, 0)
    struct.pack_into("<I", out, HEADER_CRC_OFFSET, zlib.crc32(out[:table_end]))
    return bytes(out)


def write(entries: list[Entry], target: str | Path, partition_size: int | None = None) -> Path:
    blob = encode(entries)
    if partition_size is not None and len(blob) > partition_size:
        raise SeedfwError(f"boot package is {len(blob)} bytes, over the partition limit of "
                          f"{partition_size} bytes (0x{partition_size:x})", target)
    return write_bytes(target, blob)


@dataclass(frozen=True)
class PackageEntry:
    index: int
    type_id: int
    subtype: int
    flags: int
    name: str
    offset: int
    size: int
    uncompressed_size: int
    crc32: int
    sha256: bytes
    sha256_ok: bool
    crc32_ok: bool

    @property
    def kind(self) -> str:
        return TYPE_NAMES.get(self.type_id, f"type{self.type_id}")

    @property
    def ok(self) -> bool:
        return self.sha256_ok and self.crc32_ok


@dataclass(frozen=True)
class Package:
    total_size: int
    alignment: int
    entries: tuple[PackageEntry, ...]

    def data(self, blob, entry: PackageEntry) -> bytes:
        return bytes(View.of(blob).bytes(entry.offset, entry.size, f"entry {entry.index}"))


def decode(blob, source="boot package") -> Package:
    """Validate structure (raises SeedfwError) and check every entry's hashes (reported).

    `blob`: bytes, an mmap or a reading.View. Hostile input (docs/hostile-input.md): the entry
    count is capped and overlapping entries are refused before anything is hashed, so no
    table can make the hashing cost more than the file's size."""
    view = View.of(blob, source, "boot package")
    if len(view) < HEADER.size:
        raise SeedfwError(f"{len(view)} bytes is shorter than the {HEADER.size}-byte header", source)
    magic, version, header_size, entry_size, count, total, align, _flags, crc, _r = \
        view.unpack(HEADER, 0, "offset 0x0")
    if magic != MAGIC:
        raise SeedfwError(f"bad magic 0x{magic:08x} (expected 0x{MAGIC:08x} 'SPKG')", source,
                          "offset 0x0")
    if version != VERSION:
        raise SeedfwError(f"unsupported package version {version}", source, "offset 0x4")
    if header_size != HEADER.size or entry_size != ENTRY.size:
        raise SeedfwError(f"header/entry size {header_size}/{entry_size}, expected "
                          f"{HEADER.size}/{ENTRY.size}", source, "offset 0x6")
    if count > CAPS["package_entries"]:
        raise SeedfwError(f"{count} entries is over the limit of {CAPS['package_entries']}",
                          source, "offset 0xa")
    table_end = header_size + entry_size * count
    if total > len(view) or table_end > total:
        raise SeedfwError(f"total_size {total} (table ends at {table_end}) does not fit the "
                          f"{len(view)} bytes present", source, "offset 0xc")
    zeroed = bytearray(view.bytes(0, table_end))
    struct.pack_into("<I", zeroed, HEADER_CRC_OFFSET, 0)
    if zlib.crc32(zeroed) != crc:
        raise SeedfwError(f"header crc32 0x{crc:08x} does not match 0x{zlib.crc32(zeroed):08x}: "
                          f"the entry table is damaged", source, f"offset 0x{HEADER_CRC_OFFSET:x}")
    if align == 0 or align & (align - 1):
        raise SeedfwError(f"alignment {align} is not a power of two", source, "offset 0x10")
    rows = []
    spans = []
    for i in range(count):
        at = header_size + i * entry_size
        row = view.unpack(ENTRY, at, f"offset 0x{at:x}")
        t, sub, flags, name, off, size, usize, ecrc, sha = row
        label = name.split(b"\0", 1)[0].decode(errors="replace")
        if off % align or off < table_end or off + size > total:
            raise SeedfwError(f"entry {i} '{label}': offset {off} size {size} is misaligned or "
                              f"outside the package", source, f"offset 0x{at:x}")
        spans.append((off, off + size, label))
        rows.append((i, label, row))
    spans.sort()
    for (a0, a1, an), (b0, _b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            raise SeedfwError(f"entries '{an}' and '{bn}' overlap", source)
    entries = []
    for i, label, (t, sub, flags, _name, off, size, usize, ecrc, sha) in rows:
        data = view.sub(off, size, f"entry {i}")
        crc_now = 0
        mem = data.memory()
        for at in range(0, size, 4 << 20):
            crc_now = zlib.crc32(mem[at:at + (4 << 20)], crc_now)
        entries.append(PackageEntry(i, t, sub, flags, label, off, size, usize, ecrc, sha,
                                    data.digest("sha256") == sha, crc_now == ecrc))
    return Package(total, align, tuple(entries))


def expected_boot_lines(blob: bytes) -> list[str]:
    """The lines firmware/common/pkg_verify.c prints for a good package, computed on the host.

    The QEMU proof compares the payload's UART output with these (one source of truth: the bytes).
    """
    from .. import dvfs

    pkg = decode(blob)
    lines = [f"pkg: {len(pkg.entries)} entries, {pkg.total_size} bytes, header crc ok"]
    for e in pkg.entries:
        lines.append(f"{e.kind} {e.name} sha256 ok")
        if e.type_id == T_DVFS:
            table = dvfs.decode(pkg.data(blob, e))
            lines.append(f"dvfs: {len(table['domains'])} domains, {table['opp_count']} opps, "
                         f"profile={table['default_profile']}, crc ok")
            lines.append(f"dvfs: {len(table['hints'])} hints")
    lines.append("pkg: ok")
    return lines
