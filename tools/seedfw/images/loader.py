"""The RK3588 maskrom loader (`rkdeveloptool db <loader>`), built by us from rkbin's recipe.

Layout: firmware/include/seedfw/ldr.h (the one definition; tests/test_loader.py checks the
structs below against it). Recipe: rkbin's RKBOOT/RK3588MINIALL.ini (pinned, in
seedfw.parts.rkbin): CODE471 = DDR init blob (Sleep=1 ms), CODE472 = USB plug, loaders
FlashData = DDR init and FlashBoot = Rockchip SPL; RC4 off. The output keeps the .ini's name
([OUTPUT] PATH, rk3588_spl_loader_v1.18.113.bin), since that is the file users know.

Why we write it ourselves: Rockchip's boot_merger is a binary-only x86 tool; the container is a
102-byte header, 57-byte entries, the blobs and a CRC32. `decode` reads one back (inspect, tests)
and rejects any damage (bad tag, sizes, offsets outside the file, CRC).

The build's step is the loader part's (seedfw.parts.loader).
"""

from __future__ import annotations

import calendar
import configparser
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import util
from ..errors import SeedfwError

TAG = b"LDR "
HEADER = struct.Struct("<4sHII HBBBBB I BIB BIB BIB BB 57s")
ENTRY = struct.Struct("<BI40sIII")
ENTRY_471, ENTRY_472, ENTRY_LOADER = 1, 2, 4
TYPE_NAMES = {ENTRY_471: "471 (DDR init)", ENTRY_472: "472 (USB plug)", ENTRY_LOADER: "loader"}
DATA_ALIGN = 2048
MERGER_VERSION = 0x01030000
VERSION = "3"


# ---- Rockchip's CRC32 (polynomial 0x04c10db7, MSB first, init 0, no final xor) ------------------

def _table() -> list[int]:
    out = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C10DB7) if c & 0x80000000 else (c << 1)
        out.append(c & 0xFFFFFFFF)
    return out


_CRC = _table()


def rk_crc32(data: bytes, crc: int = 0) -> int:
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ b) & 0xFF]
    return crc


# ---- the container --------------------------------------------------------------------------------

@dataclass
class LoaderEntry:
    type: int
    name: str
    data: bytes
    delay: int = 0
    offset: int = 0          # set by encode / decode

    @property
    def kind(self) -> str:
        return TYPE_NAMES.get(self.type, f"type {self.type}")


@dataclass
class Loader:
    chip: str                # e.g. "RK3588"
    version: tuple[int, int]
    entries: list[LoaderEntry] = field(default_factory=list)
    release: int = 0         # seconds since the epoch
    crc_ok: bool = True


def _bcd(n: int) -> int:
    return int(str(n), 16)


def _chip_type(chip: str) -> int:
    code = chip.upper().removeprefix("RK")[:4].ljust(4, "\0").encode()
    return int.from_bytes(code, "big")


def encode(loader: Loader) -> bytes:
    """The container bytes (header, entry tables in 471/472/loader order, aligned data, CRC)."""
    groups = [[e for e in loader.entries if e.type == t] for t in (ENTRY_471, ENTRY_472, ENTRY_LOADER)]
    table_at, offsets = HEADER.size, []
    for g in groups:
        offsets.append(table_at)
        table_at += len(g) * ENTRY.size
    data_at = -(-table_at // DATA_ALIGN) * DATA_ALIGN
    tables, blobs = bytearray(), bytearray()
    for g in groups:
        for e in g:
            e.offset = data_at + len(blobs)
            padded = e.data + bytes(-len(e.data) % DATA_ALIGN)
            if len(e.name) > 19:
                raise SeedfwError(f"entry name '{e.name}' is longer than 19 characters")
            name = e.name.encode("utf-16-le").ljust(40, b"\0")
            tables += ENTRY.pack(ENTRY.size, e.type, name, e.offset, len(padded), e.delay)
            blobs += padded
    t = time.gmtime(loader.release)
    major, minor = loader.version
    header = HEADER.pack(TAG, HEADER.size, (_bcd(major) << 8) | _bcd(minor), MERGER_VERSION,
                         t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                         _chip_type(loader.chip),
                         len(groups[0]), offsets[0], ENTRY.size,
                         len(groups[1]), offsets[1], ENTRY.size,
                         len(groups[2]), offsets[2], ENTRY.size,
                         0, 1, bytes(57))
    body = header + tables + bytes(data_at - table_at) + blobs
    return body + struct.pack("<I", rk_crc32(body))


def decode(blob: bytes, source=None) -> Loader:
    """Read a loader back; SeedfwError (naming the offset) for anything that does not add up.
    A CRC mismatch is reported in `crc_ok`, not raised, so inspect can show the entries."""
    if blob[:4] != TAG:
        raise SeedfwError(f"not a Rockchip loader (tag {blob[:4]!r}, expected b'LDR ')", source,
                          "offset 0x0")
    if len(blob) < HEADER.size + 4:
        raise SeedfwError("truncated loader header", source)
    f = HEADER.unpack_from(blob)
    if f[1] != HEADER.size:
        raise SeedfwError(f"header size {f[1]}, expected {HEADER.size}", source, "offset 0x4")
    version = f[2]
    chip = "RK" + f[10].to_bytes(4, "big").decode(errors="replace").rstrip("\0")
    try:
        release = calendar.timegm((f[4], f[5], f[6], f[7], f[8], f[9], 0, 0, 0))
    except (OverflowError, ValueError):
        release = 0
    loader = Loader(chip, (int(f"{version >> 8:x}"), int(f"{version & 0xFF:x}")), [], release)
    body = len(blob) - 4
    for count, table_at, size, where in ((f[11], f[12], f[13], 0x1a), (f[14], f[15], f[16], 0x20),
                                         (f[17], f[18], f[19], 0x26)):
        if count and (size != ENTRY.size or table_at + count * size > body):
            raise SeedfwError(f"entry table at 0x{table_at:x} ({count} x {size} bytes) does not "
                              "fit the file", source, f"offset 0x{where:x}")
        for i in range(count):
            at = table_at + i * size
            esize, etype, name, offset, dsize, delay = ENTRY.unpack_from(blob, at)
            if offset + dsize > body or offset < HEADER.size:
                raise SeedfwError(f"entry data at 0x{offset:x} ({dsize} bytes) is outside the "
                                  "file", source, f"offset 0x{at + 45:x}")
            loader.entries.append(LoaderEntry(
                etype, name.decode("utf-16-le", errors="replace").split("\0")[0],
                blob[offset:offset + dsize], delay, offset))
    (stored,) = struct.unpack_from("<I", blob, body)
    loader.crc_ok = rk_crc32(blob[:body]) == stored
    return loader


# ---- the recipe --------------------------------------------------------------------------------

def from_ini(ini_text: str, files: dict[str, Path], release: int, source=None) -> tuple[Loader, str]:
    """(the loader rkbin's .ini describes, its output name). `files`: pinned blobs by file name;
    a path in the .ini naming any other file is an error (we only pack pinned bytes)."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.optionxform = str                       # keys are case-sensitive (Path1, FlashData)
    try:
        ini.read_string(ini_text)
        chip = ini["CHIP_NAME"]["NAME"]
        version = (int(ini["VERSION"]["MAJOR"]), int(ini["VERSION"]["MINOR"]))
        output = ini["OUTPUT"]["PATH"]
    except (configparser.Error, KeyError, ValueError) as exc:
        raise SeedfwError(f"not a loader recipe: {exc}", source) from None
    for flag in ("RC4_OFF", "471_RC4_OFF"):
        if ini.get("FLAG", flag, fallback="false").lower() != "true":
            raise SeedfwError(f"[FLAG] {flag} is not true: seedfw writes plain (RC4-off) loaders",
                              source, f"FLAG.{flag}")

    def blob(path: str, where: str) -> bytes:
        name = Path(path).name
        if name not in files:
            raise SeedfwError(f"{path} is not a pinned rkbin file", source, where)
        return files[name].read_bytes()

    loader = Loader(chip, version, release=release)
    for section, etype in (("CODE471_OPTION", ENTRY_471), ("CODE472_OPTION", ENTRY_472)):
        opts = ini[section]
        for i in range(1, int(opts.get("NUM", "0")) + 1):
            path = opts[f"Path{i}"]
            # names hold 19 UTF-16 characters: the stem's start ("rk3588_ddr_lp4_2112")
            loader.entries.append(LoaderEntry(etype, Path(path).stem[:19],
                                              blob(path, f"{section}.Path{i}"),
                                              int(opts.get("Sleep", "0") or 0)))
    opts = ini["LOADER_OPTION"]
    for i in range(1, int(opts.get("NUM", "0")) + 1):
        name = opts[f"LOADER{i}"]
        loader.entries.append(LoaderEntry(ENTRY_LOADER, name, blob(opts[name], f"LOADER_OPTION.{name}")))
    return loader, output


# ---- inspect -----------------------------------------------------------------------------------

def inspect_report(path, blob, report_cls, row_cls):
    from ..parts import rkbin
    loader = decode(blob, path)
    known = {p.sha256: p.name for p in (rkbin.DDR, rkbin.USBPLUG, rkbin.SPL)}
    report = report_cls(path, "rockchip maskrom loader")
    report.rows.append(row_cls("header + CRC32", "ldr", len(blob), len(blob), "rk-crc32",
                               loader.crc_ok, f"{loader.chip} v{loader.version[0]}."
                               f"{loader.version[1]}, {len(loader.entries)} entries"))
    for e in loader.entries:
        match = next((n for s, n in known.items()
                      if util.sha256_bytes(e.data[:_pin_size(n)]) == s
                      and not e.data[_pin_size(n):].strip(b"\0")), None)
        detail = f"at 0x{e.offset:x}, delay {e.delay} ms"
        detail += f", = pinned {match}" if match else ", not a pinned rkbin blob"
        report.rows.append(row_cls(e.name, e.kind, len(e.data), len(e.data), "rk-crc32",
                                   loader.crc_ok, detail))
    return report


def _pin_size(name: str) -> int:
    from ..parts import rkbin
    return next(p.size for p in (rkbin.DDR, rkbin.USBPLUG, rkbin.SPL) if p.name == name)
