"""The Rockchip maskrom loader container, as rkbin's boot_merger 1.35 writes it: write and read.

Layout: firmware/include/seedfw/ldr.h (container) and rkns.h (the UsbHead / FlashHead entries);
tests/test_loader.py checks the structs below against both with the C compiler. Every rule here
was read off boot_merger's output (docs/loader.md says which bytes show it); no code of Rockchip's.

`encode(Loader)` gives the file; `decode(bytes)` reads any file back with bounded work (each entry
inside the file, no two entries overlapping, counts capped) and SeedfwError naming the offset for
anything that does not add up, so `invoke inspect` of a hostile file is one line, not a traceback.
"""

from __future__ import annotations

import calendar
import hashlib
import struct
import time
from dataclasses import dataclass, field

from ..errors import SeedfwError

TAG, TAG_OLD = b"LDR ", b"BOOT"           # NEWIDB / not
HEADER = struct.Struct("<4sHII HBBBBB I BIB BIB BIB BBB 56s")
ENTRY = struct.Struct("<BI40sIII")
ENTRY_471, ENTRY_472, ENTRY_LOADER = 1, 2, 4
TYPE_NAMES = {ENTRY_471: "471", ENTRY_472: "472", ENTRY_LOADER: "loader"}
NAME_CHARS = 20
DATA_ALIGN = 2048
RC4_SECTOR = 512
MERGE_VERSION = 0x01000000
RC4_KEY = bytes.fromhex("7c4e0304550509072d2c7b38170d1711")
MAX_ENTRIES = 32                          # per table: rkbin's recipes use at most 4
MAX_FILE = 16 << 20                       # rkbin's loaders are < 1 MiB; bounds a hostile file's cost

# RKNS (rkns.h): header fields boot_merger fills; images follow it at 4 sectors
RKNS_MAGIC = b"RKNS"
RKNS_SIZE = 2048
RKNS_SECTOR = 512
RKNS_HASH_WORDS = 0x180                   # the header's sha256 at byte 0x600
RKNS_BOOT1_AT = 0x58                      # offsetof(struct rkns_header, boot1_param)
RKNS_BOOT1_WORDS = 8
RKNS_IMAGES_AT = 0x78                     # offsetof(struct rkns_header, images)
RKNS_IMAGE = struct.Struct("<IIII8s64s")  # struct rkns_image
RKNS_MAX_IMAGES = 4
RKNS_SHA256 = 1
HEADS = {ENTRY_471: "UsbHead", ENTRY_LOADER: "FlashHead"}


# ---- Rockchip's CRC32 (polynomial 0x04c10db7, MSB first, init 0, no final xor) ------------------

def _crc_table() -> list[int]:
    out = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C10DB7) if c & 0x80000000 else (c << 1)
        out.append(c & 0xFFFFFFFF)
    return out


_CRC = _crc_table()


def rk_crc32(data: bytes, crc: int = 0) -> int:
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ b) & 0xFF]
    return crc


# ---- RC4 with Rockchip's public key -------------------------------------------------------------

_stream_cache = b""


def _keystream(n: int) -> bytes:
    """The first n bytes of RC4(RC4_KEY): every scramble here starts the stream afresh, so one
    cached prefix serves all (n is bounded by the file being written or read)."""
    global _stream_cache
    if len(_stream_cache) < n:
        s, j = list(range(256)), 0
        for i in range(256):
            j = (j + s[i] + RC4_KEY[i % len(RC4_KEY)]) & 0xFF
            s[i], s[j] = s[j], s[i]
        out, i, j = bytearray(n), 0, 0
        for k in range(n):
            i = (i + 1) & 0xFF
            j = (j + s[i]) & 0xFF
            s[i], s[j] = s[j], s[i]
            out[k] = s[(s[i] + s[j]) & 0xFF]
        _stream_cache = bytes(out)
    return _stream_cache[:n]


def _xor(data: bytes, key: bytes) -> bytes:
    return (int.from_bytes(data, "little") ^ int.from_bytes(key[:len(data)], "little")).to_bytes(
        len(data), "little")


def rc4_stream(data: bytes) -> bytes:
    """One RC4 stream over all of `data` (471/472 entries when 471_RC4_OFF=false)."""
    return _xor(data, _keystream(len(data)))


def rc4_sectors(data: bytes) -> bytes:
    """RC4 restarted every 512 bytes (loader entries, always). Its own inverse, as is rc4_stream."""
    key = _keystream(RC4_SECTOR) * (-(-len(data) // RC4_SECTOR))
    return _xor(data, key)


# ---- RKNS headers (UsbHead / FlashHead) ----------------------------------------------------------

def rkns_header(images: list[bytes], boot1: tuple[int, ...] = (0,) * RKNS_BOOT1_WORDS) -> bytes:
    """The 2 KiB header describing `images` (each already padded to whole sectors) laid out right
    after it: offsets and sizes in sectors, sha256 of each, then sha256 of the header itself."""
    if not 1 <= len(images) <= RKNS_MAX_IMAGES:
        raise SeedfwError(f"an RKNS header holds 1 to {RKNS_MAX_IMAGES} images, not {len(images)}")
    h = bytearray(RKNS_SIZE)
    h[0:4] = RKNS_MAGIC
    struct.pack_into("<II", h, 8, (len(images) << 16) | RKNS_HASH_WORDS, RKNS_SHA256)
    struct.pack_into(f"<{RKNS_BOOT1_WORDS}I", h, RKNS_BOOT1_AT, *boot1)
    at = RKNS_SIZE // RKNS_SECTOR
    for i, img in enumerate(images):
        sectors = len(img) // RKNS_SECTOR
        if len(img) % RKNS_SECTOR or at + sectors > 0xFFFF or sectors > 0xFFFF:
            raise SeedfwError(f"RKNS image {i} ({len(img)} bytes) does not fit the header's fields")
        RKNS_IMAGE.pack_into(h, RKNS_IMAGES_AT + i * RKNS_IMAGE.size, (sectors << 16) | at,
                             0xFFFFFFFF, 0, i + 1, bytes(8), hashlib.sha256(img).digest())
        at += sectors
    h[RKNS_HASH_WORDS * 4:RKNS_HASH_WORDS * 4 + 32] = hashlib.sha256(h[:RKNS_HASH_WORDS * 4]).digest()
    return bytes(h)


# ---- the container --------------------------------------------------------------------------------

@dataclass
class LoaderEntry:
    type: int
    name: str
    data: bytes              # plain (descrambled) bytes, padded to DATA_ALIGN when read back
    delay: int = 0
    offset: int = 0          # set by encode / decode
    scrambled: bool = False  # set by encode / decode: stored RC4-scrambled

    @property
    def kind(self) -> str:
        return TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass
class Loader:
    chip: str                # e.g. "RK3588"
    version: tuple[int, int]
    entries: list[LoaderEntry] = field(default_factory=list)   # without UsbHead/FlashHead
    release: int = 0         # seconds since the epoch, UTC
    newidb: bool = True
    rc4_off: bool = True     # [FLAG] RC4_OFF: the header's rc4 flag only
    rc4_471_off: bool = True  # [FLAG] 471_RC4_OFF: 471/472 entries stored plain
    boot1: tuple[int, ...] = (0,) * RKNS_BOOT1_WORDS
    crc_ok: bool = True      # set by decode


def _pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % DATA_ALIGN)


def chip_code(chip: str) -> bytes:
    """"RK3588" -> b"8853": the four characters after RK, last first (as boot_merger stores it)."""
    rest = chip.upper().removeprefix("RK")
    if len(rest) != 4 or not rest.isascii() or not rest.isalnum():
        raise SeedfwError(f"chip name {chip!r} is not RK followed by four letters or digits")
    return rest[::-1].encode()


def groups(loader: Loader) -> list[list[LoaderEntry]]:
    """The three tables in file order, with UsbHead / FlashHead in front when NEWIDB says so."""
    out = [[e for e in loader.entries if e.type == t] for t in (ENTRY_471, ENTRY_472, ENTRY_LOADER)]
    if loader.newidb:
        covered = {ENTRY_471: out[0] + out[1], ENTRY_LOADER: out[2]}
        for index, etype in ((0, ENTRY_471), (2, ENTRY_LOADER)):
            images = [_pad(e.data) for e in covered[etype]]
            delay = out[index][0].delay if index == 0 and out[0] else 0
            out[index].insert(0, LoaderEntry(etype, HEADS[etype], rkns_header(images, loader.boot1),
                                             delay))
    return out


def encode(loader: Loader) -> bytes:
    """The container bytes: header, the three entry tables, each entry's padded (and, where the
    flags say, scrambled) data in table order, CRC."""
    tables = groups(loader)
    if any(len(g) > MAX_ENTRIES for g in tables):
        raise SeedfwError(f"more than {MAX_ENTRIES} entries in one table")
    table_at, data_at = [], HEADER.size
    for g in tables:
        table_at.append(data_at)
        data_at += len(g) * ENTRY.size
    entry_bytes, blobs = bytearray(), bytearray()
    for g in tables:
        for e in g:
            name = e.name.encode("ascii")
            if not name or len(name) > NAME_CHARS:
                raise SeedfwError(f"entry name {e.name!r} is not 1 to {NAME_CHARS} characters")
            data = _pad(e.data)
            if e.type == ENTRY_LOADER:
                data, e.scrambled = rc4_sectors(data), True
            elif not loader.rc4_471_off:
                data, e.scrambled = rc4_stream(data), True
            e.offset = data_at + len(blobs)
            entry_bytes += ENTRY.pack(ENTRY.size, e.type, e.name.encode("utf-16-le").ljust(40, b"\0"),
                                      e.offset, len(data), e.delay)
            blobs += data
    t = time.gmtime(loader.release)
    major, minor = loader.version
    if not (0 <= major <= 0xFF and 0 <= minor <= 0xFF):
        raise SeedfwError(f"version {major}.{minor}: MAJOR and MINOR are one byte each")
    header = HEADER.pack(TAG if loader.newidb else TAG_OLD, HEADER.size, (major << 8) | minor,
                         MERGE_VERSION, t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min,
                         t.tm_sec, int.from_bytes(chip_code(loader.chip), "little"),
                         len(tables[0]), table_at[0], ENTRY.size,
                         len(tables[1]), table_at[1], ENTRY.size,
                         len(tables[2]), table_at[2], ENTRY.size,
                         0, int(loader.rc4_off), int(loader.rc4_471_off), bytes(56))
    body = header + entry_bytes + blobs
    return bytes(body) + struct.pack("<I", rk_crc32(body))


def _release(f, source) -> int:
    year, month, day, hour, minute, second = f[4:10]
    if not (1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31 and hour < 24
            and minute < 60 and second < 60):
        raise SeedfwError(f"release time {year}-{month}-{day} {hour}:{minute}:{second} is not a "
                          "date and time", source, "offset 0xe")
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))


def decode(blob: bytes, source=None) -> Loader:
    """Read a loader back: header, entries (data descrambled), CRC (reported in `crc_ok`, not
    raised, so inspect can show the entries). UsbHead / FlashHead stay in `entries`."""
    if blob[:4] not in (TAG, TAG_OLD):
        raise SeedfwError(f"not a Rockchip loader (tag {blob[:4]!r}, expected b'LDR ' or b'BOOT')",
                          source, "offset 0x0")
    if len(blob) > MAX_FILE:
        raise SeedfwError(f"{len(blob):,} bytes: larger than any loader ({MAX_FILE:,} at most)",
                          source)
    if len(blob) < HEADER.size + 4:
        raise SeedfwError(f"truncated loader ({len(blob)} bytes, the header alone is "
                          f"{HEADER.size + 4})", source)
    f = HEADER.unpack_from(blob)
    if f[1] != HEADER.size:
        raise SeedfwError(f"header size {f[1]}, expected {HEADER.size}", source, "offset 0x4")
    if f[2] >> 16:
        raise SeedfwError(f"version 0x{f[2]:08x} is not (MAJOR << 8) | MINOR", source, "offset 0x6")
    code = f[10].to_bytes(4, "little")
    if not (code.isascii() and code.isalnum()):
        raise SeedfwError(f"chip code {code!r} is not four letters or digits", source, "offset 0x15")
    loader = Loader("RK" + code.decode()[::-1], (f[2] >> 8, f[2] & 0xFF), [], _release(f, source),
                    newidb=blob[:4] == TAG, rc4_off=f[21] == 1, rc4_471_off=f[22] == 1)
    body = len(blob) - 4
    spans = []
    for count, table_at, size, where in ((f[11], f[12], f[13], 0x19), (f[14], f[15], f[16], 0x1f),
                                         (f[17], f[18], f[19], 0x25)):
        if count > MAX_ENTRIES:
            raise SeedfwError(f"{count} entries in one table (at most {MAX_ENTRIES})", source,
                              f"offset 0x{where:x}")
        if count and (size != ENTRY.size or table_at < HEADER.size
                      or table_at + count * size > body):
            raise SeedfwError(f"entry table at 0x{table_at:x} ({count} x {size} bytes) does not "
                              "fit the file", source, f"offset 0x{where:x}")
        for i in range(count):
            at = table_at + i * size
            _, etype, raw_name, offset, dsize, delay = ENTRY.unpack_from(blob, at)
            if offset < HEADER.size or offset + dsize > body:
                raise SeedfwError(f"entry data at 0x{offset:x} ({dsize} bytes) is outside the "
                                  "file", source, f"offset 0x{at + 45:x}")
            try:
                name = raw_name.decode("utf-16-le").split("\0")[0]
            except UnicodeDecodeError:
                name = ""
            if not name or not name.isascii() or not name.isprintable():
                raise SeedfwError(f"entry name {raw_name.hex()} is not printable UTF-16LE text",
                                  source, f"offset 0x{at + 5:x}")
            if etype not in TYPE_NAMES or etype != (ENTRY_471, ENTRY_472, ENTRY_LOADER)[
                    (0x19, 0x1f, 0x25).index(where)]:
                raise SeedfwError(f"entry {name}: type {etype} in the wrong table", source,
                                  f"offset 0x{at + 1:x}")
            spans.append((offset, dsize, at))
            data = blob[offset:offset + dsize]
            scrambled = etype == ENTRY_LOADER or not loader.rc4_471_off
            if scrambled:
                data = rc4_sectors(data) if etype == ENTRY_LOADER else rc4_stream(data)
            loader.entries.append(LoaderEntry(etype, name, data, delay, offset, scrambled))
    spans.sort()
    for (o1, s1, _), (o2, s2, at) in zip(spans, spans[1:]):
        if o1 + s1 > o2:       # overlapping entries would let a small file claim huge totals
            raise SeedfwError(f"entry data at 0x{o2:x} ({s2} bytes) overlaps the entry at "
                              f"0x{o1:x} ({s1} bytes)", source, f"offset 0x{at + 45:x}")
    (stored,) = struct.unpack_from("<I", blob, body)
    loader.crc_ok = rk_crc32(blob[:body]) == stored
    return loader


def head_coverage(loader: Loader) -> dict[int, list[LoaderEntry]]:
    """{index of a UsbHead/FlashHead entry: the entries its RKNS images should be}."""
    out = {}
    es = loader.entries
    for i, e in enumerate(es):
        if e.name == HEADS.get(e.type) and (i == 0 or es[i - 1].type != e.type):
            kinds = (ENTRY_471, ENTRY_472) if e.type == ENTRY_471 else (ENTRY_LOADER,)
            out[i] = [x for x in es[i + 1:] if x.type in kinds]
    return out
