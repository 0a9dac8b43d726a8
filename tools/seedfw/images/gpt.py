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
    partitions: list[GptPartition] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.header_crc_ok and self.entries_crc_ok

    def partition(self, name: str) -> GptPartition:
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(name)


def is_gpt(blob: bytes) -> bool:
    return blob[SECTOR:SECTOR + 8] == SIGNATURE


def parse(blob: bytes, source=None) -> Gpt:
    if not is_gpt(blob):
        raise SeedfwError("no GPT header (\"EFI PART\") at LBA 1", source, f"offset 0x{SECTOR:x}")
    (_sig, _rev, hsize, hcrc, _res, _cur, _alt, first, _last, disk, array_lba, count, esize,
     ecrc) = _HEADER.unpack_from(blob, SECTOR)
    if not 92 <= hsize <= SECTOR or esize < _ENTRY.size or count > 1024:
        raise SeedfwError(f"GPT header size {hsize}, {count} entries of {esize} bytes", source,
                          f"offset 0x{SECTOR + 12:x}")
    header = bytearray(blob[SECTOR:SECTOR + hsize])
    header[16:20] = b"\0\0\0\0"
    array = blob[array_lba * SECTOR:array_lba * SECTOR + count * esize]
    if len(array) != count * esize:
        raise SeedfwError("GPT partition array runs past the end of the file", source,
                          f"offset 0x{array_lba * SECTOR:x}")
    gpt = Gpt(str(uuid.UUID(bytes_le=disk)), zlib.crc32(header) == hcrc,
              zlib.crc32(array) == ecrc, first)
    for i in range(count):
        type_guid, guid, lo, hi, _attrs, name = _ENTRY.unpack_from(array, i * esize)
        if type_guid == bytes(16):
            continue
        gpt.partitions.append(GptPartition(
            i + 1, name.decode("utf-16-le", errors="replace").split("\0")[0],
            str(uuid.UUID(bytes_le=type_guid)), str(uuid.UUID(bytes_le=guid)), lo, hi))
    return gpt
