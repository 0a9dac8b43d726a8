"""A GUID partition table reader (UEFI specification, "GUID Partition Table Disk Layout").

Why our own: inspect and the tests must check the table genimage wrote — the header and entry
array CRCs, and each partition's place — from the bytes, without sfdisk (not installed by default).

    LBA 0     protective MBR
    LBA 1     header: "EFI PART", revision, header size, header CRC32 (computed with the field
              zero), current/backup LBA, first/last usable LBA, disk GUID, entry array LBA,
              number of entries, entry size, entry array CRC32
    LBA 2..   entries: type GUID, unique GUID, first LBA, last LBA (inclusive), attributes,
              name (36 UTF-16LE code units)
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass, field

from ..errors import SeedfwError
from ..reading import CAPS, View

SECTOR = 512
SIGNATURE = b"EFI PART"
_HEADER = struct.Struct("<8sIIIIQQQQ16sQIII")      # up to and including the entry array CRC
_ENTRY = struct.Struct("<16s16sQQQ72s")


@dataclass
class GptPartition:
    index: int
    name: str
    type_guid: str
    guid: str
    first_lba: int
    last_lba: int

    @property
    def offset(self) -> int:
        return self.first_lba * SECTOR

    @property
    def size(self) -> int:
        return (self.last_lba - self.first_lba + 1) * SECTOR


@dataclass
class Gpt:
    disk_guid: str
    header_crc_ok: bool
    entries_crc_ok: bool
    first_usable_lba: int
    last_usable_lba: int = 0
    backup_lba: int = 0
    partitions: list[GptPartition] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.header_crc_ok and self.entries_crc_ok

    def partition(self, name: str) -> GptPartition:
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)


def is_gpt(blob) -> bool:
    return View.of(blob).peek(SECTOR, 8) == SIGNATURE


def parse(blob, source=None) -> Gpt:
    """The primary GPT of a disk image (bytes, mmap or reading.View).

    Hostile input: every LBA is checked against the header's usable range and the file — a
    partition ending at 2^64-1, starting after its end, outside the usable LBAs, or overlapping
    another is refused (CRCs can be recomputed by anyone; they prove nothing about sense)."""
    view = View.of(blob, source, "GPT")
    if not is_gpt(view):
        raise SeedfwError("no GPT header (\"EFI PART\") at LBA 1", source, f"offset 0x{SECTOR:x}")
    (_sig, _rev, hsize, hcrc, _res, _cur, _alt, first, last, disk, array_lba, count, esize,
     ecrc) = view.unpack(_HEADER, SECTOR, "GPT header")
    if not 92 <= hsize <= SECTOR or not _ENTRY.size <= esize <= 4096 or esize % 8 or \
            count > CAPS["gpt_entries"]:
        raise SeedfwError(f"GPT header size {hsize}, {count} entries of {esize} bytes "
                          f"(limit {CAPS['gpt_entries']} entries)", source,
                          f"offset 0x{SECTOR + 12:x}")
    disk_lbas = len(view) // SECTOR
    if not 2 <= first <= last or last >= disk_lbas + (1 << 40) or array_lba < 2 or \
            array_lba >= first:
        raise SeedfwError(f"GPT usable LBAs {first}..{last} / entry array at LBA {array_lba} "
                          f"are not a sane layout", source, f"offset 0x{SECTOR + 40:x}")
    header = bytearray(view.bytes(SECTOR, hsize, "GPT header"))
    header[16:20] = b"\0\0\0\0"
    if not view.has(array_lba * SECTOR, count * esize):
        raise SeedfwError("GPT partition array runs past the end of the file", source,
                          f"offset 0x{array_lba * SECTOR:x}")
    array = view.bytes(array_lba * SECTOR, count * esize)
    gpt = Gpt(str(uuid.UUID(bytes_le=disk)), zlib.crc32(header) == hcrc,
              zlib.crc32(array) == ecrc, first, last, _alt)
    for i in range(count):
        type_guid, guid, lo, hi, _attrs, name = _ENTRY.unpack_from(array, i * esize)
        if type_guid == bytes(16):
            continue
        where = f"partition entry {i + 1}"
        if not first <= lo <= hi <= last:
            raise SeedfwError(f"LBA {lo}..{hi} is not inside the usable LBAs {first}..{last}",
                              source, where)
        gpt.partitions.append(GptPartition(
            i + 1, name.decode("utf-16-le", errors="replace").split("\0")[0],
            str(uuid.UUID(bytes_le=type_guid)), str(uuid.UUID(bytes_le=guid)), lo, hi))
    spans = sorted(gpt.partitions, key=lambda p: p.first_lba)
    for a, b in zip(spans, spans[1:]):
        if b.first_lba <= a.last_lba:
            raise SeedfwError(f"partitions {a.index} and {b.index} overlap (LBA "
                              f"{a.first_lba}..{a.last_lba} and {b.first_lba}..{b.last_lba})",
                              source, f"partition entry {b.index}")
    return gpt
