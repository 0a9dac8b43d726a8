"""Small, real images of every kind `invoke inspect` reads, made by the library itself: the seeds
of the Python fuzz campaigns (seedfw.fuzz.pyfuzz), the originals the hostile-input corpus and the
bit-flip sweep mutate (tests/test_hostile_inputs.py, tests/test_bitflip.py), the bench's inputs.

Why not full builds: a qemu/rk3588 build takes minutes; these take well under a second each and
use the same writers the build uses (package.encode, fit.build → fit_stream, dvfs.encode, the
lz4blk container writer, models_synth) — only the GPT and the RKNS idblock are assembled here
(genimage and binman are the build's writers; their layouts are read back by gpt.py/idblock.py
and defined once in firmware/include/seedfw/rkns.h).

`make_all(dir)` writes, each with the name the build gives it where there is one:
  tiny.itb          FIT (mkimage), external-free, firmware + dvfs + opp + lz4 model
  tiny-boot.pkg     boot package of the same entries
  tiny-idbloader.img RKNS idblock (sha256), two images — what idbloader.img is
  tiny-u-boot-rockchip.bin  idblock + a FIT at 0x7f8000 (sparse file)
  tiny-disk.img     GPT disk: u-boot-rockchip.bin at 32 KiB, partition "firmware" = tiny.itb
"""

from __future__ import annotations

import hashlib
import struct
import uuid
import zlib
from pathlib import Path

from .. import dvfs
from ..paths import BOARD_DIR
from . import fit, idblock, package
from .entries import DvfsEntry, FdtEntry, FirmwareEntry, ModelEntry

SECTOR = 512


def entries() -> list:
    """A firmware binary, the rk3588 DVFS table, a small FDT and an lz4-compressed raw model."""
    from ..compress import container
    table = dvfs.load(BOARD_DIR / "rk3588" / "dvfs.yaml")
    dvfs_bin = dvfs.encode(table, "balanced")
    fdt_blob = _tiny_dtb()
    model = bytes(range(256)) * 16
    stored = container.write_container(model, block_size=1024)
    return [FirmwareEntry("bl31", b"\x00\x00\xa0\xe1" * 64, arch="arm64", load=0x40000),
            DvfsEntry("dvfs", dvfs_bin), FdtEntry("opp", fdt_blob),
            ModelEntry("labels", stored, len(model), 64, model_type="raw", compression="lz4")]


def _tiny_dtb() -> bytes:
    """A one-node FDT written by hand (header, one property, strings): no dtc needed."""
    name = b"compatible\0"
    value = b"seedfw,tiny\0"
    struct_block = (struct.pack(">I", 1) + b"\0\0\0\0" +
                    struct.pack(">III", 3, len(value), 0) + value.ljust(-(-len(value) // 4) * 4,
                                                                        b"\0") +
                    struct.pack(">II", 2, 9))
    off_struct = 40 + 16
    off_strings = off_struct + len(struct_block)
    total = off_strings + len(name)
    head = struct.pack(">10I", 0xD00DFEED, total, off_struct, off_strings, 40, 17, 16, 0,
                       len(name), len(struct_block))
    return head + bytes(16) + struct_block + name


def idblock_bytes(images: list[bytes], algo: int = 1) -> bytes:
    """An RKNS header (rkns.h) + images at whole sectors, digests filled in."""
    header = bytearray(idblock.HEADER_SIZE)
    header[0:4] = idblock.MAGIC
    hash_words = 1536 // 4
    struct.pack_into("<II", header, 8, (len(images) << 16) | hash_words, algo)
    fn = {0: None, 1: hashlib.sha256, 2: hashlib.sha512}[algo]
    body = bytearray()
    at = idblock.HEADER_SIZE // SECTOR
    for i, img in enumerate(images):
        img = img.ljust(-(-len(img) // SECTOR) * SECTOR, b"\0")
        entry = idblock.IMAGES_OFFSET + i * idblock.IMAGE_ENTRY_SIZE
        struct.pack_into("<IIII", header, entry, ((len(img) // SECTOR) << 16) | at, 0xFFFFFFFF,
                         0, i + 1)
        if fn:
            d = fn(img).digest()
            header[entry + idblock.IMAGE_HASH_OFFSET:entry + idblock.IMAGE_HASH_OFFSET + len(d)] = d
        at += len(img) // SECTOR
        body += img
    if fn:
        d = fn(bytes(header[:hash_words * 4])).digest()
        header[hash_words * 4:hash_words * 4 + len(d)] = d
    return bytes(header + body)


def _guid(what: str) -> bytes:
    return uuid.uuid5(uuid.NAMESPACE_DNS, f"seedfw-sample/{what}").bytes_le


def gpt_disk(parts: list[tuple[str, int, bytes]], boot: bytes = b"", lbas: int | None = None,
             pad_lbas: int = 64) -> bytes:
    """A GPT disk image (UEFI layout: protective MBR, header at LBA 1, 128 entries at LBA 2,
    backup array and header at the end); `parts` = (name, first LBA, content); `boot` is
    written at 32 KiB (where u-boot-rockchip.bin goes)."""
    end = max(first + -(-max(len(c), 1) // SECTOR) + pad_lbas for _, first, c in parts)
    lbas = lbas or end + 33
    disk = bytearray(lbas * SECTOR)
    disk[446:462] = bytes([0, 0, 2, 0, 0xEE, 0xFF, 0xFF, 0xFF]) + struct.pack("<II", 1, lbas - 1)
    disk[510:512] = b"\x55\xaa"
    array = bytearray(128 * 128)
    for i, (name, first, content) in enumerate(parts):
        last = first + -(-max(len(content), 1) // SECTOR) + pad_lbas - 1
        struct.pack_into("<16s16sQQQ72s", array, i * 128, _guid("type"), _guid(name), first,
                         last, 0, name.encode("utf-16-le"))
        disk[first * SECTOR:first * SECTOR + len(content)] = content
    if boot:
        disk[32 * 1024:32 * 1024 + len(boot)] = boot

    def header(current, backup, array_lba):
        return _gpt_header(current, backup, array_lba, lbas, array)

    disk[SECTOR:SECTOR + 92] = header(1, lbas - 1, 2)
    disk[2 * SECTOR:2 * SECTOR + len(array)] = array
    disk[(lbas - 33) * SECTOR:(lbas - 1) * SECTOR] = array
    disk[(lbas - 1) * SECTOR:(lbas - 1) * SECTOR + 92] = header(lbas - 1, 1, lbas - 33)
    return bytes(disk)


def make_all(out: Path) -> dict[str, Path]:
    """Write every sample into `out`; returns {kind: path}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    es = entries()
    paths = {}
    paths["fit"] = fit.build(es, out / "tiny.itb", description="seedfw tiny")
    (out / "tiny.itb.its").unlink(missing_ok=True)
    paths["package"] = out / "tiny-boot.pkg"
    paths["package"].write_bytes(package.encode(es))
    idb = idblock_bytes([b"TPL" * 300, b"SPL" * 700])
    paths["idbloader"] = out / "tiny-idbloader.img"
    paths["idbloader"].write_bytes(idb)
    itb = paths["fit"].read_bytes()  # door: a sample this module made
    rockchip = bytearray(idblock.SD_FIT_OFFSET + len(itb))
    rockchip[:len(idb)] = idb
    rockchip[idblock.SD_FIT_OFFSET:] = itb
    paths["rockchip"] = out / "tiny-u-boot-rockchip.bin"
    paths["rockchip"].write_bytes(bytes(rockchip))
    paths["disk"] = out / "tiny-disk.img"
    # u-boot-rockchip.bin at 32 KiB puts its FIT at 8 MiB; "firmware" follows at 12 MiB
    paths["disk"].write_bytes(gpt_disk([("firmware", 24576, itb)], boot=bytes(rockchip)))
    return paths


def write_sparse_gpt_disk(path, parts: list[tuple[str, int, Path]], lbas: int) -> Path:
    """A GPT disk image of `lbas` sectors written sparse: `parts` = (name, first LBA, file),
    each partition exactly its file's size, and only the file's data (not its holes: SEEK_DATA)
    copied — so a 3 GiB file system that holds a few MiB costs a few MiB here (the hostile
    ext4 corpus and bench/inspect_bounds.py). The tables are gpt_disk's, for a disk this
    large (gpt_disk builds the whole disk in memory)."""
    import os
    sizes = [(name, first, Path(f).stat().st_size) for name, first, f in parts]
    array = bytearray(128 * 128)
    for i, (name, first, size) in enumerate(sizes):
        struct.pack_into("<16s16sQQQ72s", array, i * 128, _guid("type"), _guid(name), first,
                         first + -(-size // SECTOR) - 1, 0, name.encode("utf-16-le"))

    def header(current, backup, array_lba):
        return _gpt_header(current, backup, array_lba, lbas, array)

    mbr = bytearray(512)
    mbr[446:462] = bytes([0, 0, 2, 0, 0xEE, 0xFF, 0xFF, 0xFF]) + struct.pack(
        "<II", 1, min(lbas - 1, 0xFFFFFFFF))
    mbr[510:512] = b"\x55\xaa"
    with open(path, "wb") as out:
        out.truncate(lbas * SECTOR)
        out.write(bytes(mbr) + header(1, lbas - 1, 2).ljust(SECTOR, b"\0") + bytes(array))
        out.seek((lbas - 33) * SECTOR)
        out.write(bytes(array) + header(lbas - 1, 1, lbas - 33))
        for (_name, first, f) in parts:
            with open(f, "rb") as src:  # door: a sample this module made
                fd, end, at = src.fileno(), os.fstat(src.fileno()).st_size, 0
                while at < end:
                    try:
                        at = os.lseek(fd, at, os.SEEK_DATA)
                    except OSError:          # ENXIO: only a hole is left
                        break
                    hole = os.lseek(fd, at, os.SEEK_HOLE)
                    while at < hole:
                        chunk = os.pread(fd, min(hole - at, 1 << 20), at)
                        out.seek(first * SECTOR + at)
                        out.write(chunk)
                        at += len(chunk)
    return Path(path)


def _gpt_header(current: int, backup: int, array_lba: int, lbas: int, array) -> bytes:
    """A GPT header (92 bytes, CRCs filled in) for a disk of `lbas` sectors and its entry array."""
    h = bytearray(struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x10000, 92, 0, 0, current,
                              backup, 34, lbas - 34, _guid("disk"), array_lba, 128, 128,
                              zlib.crc32(array)))
    struct.pack_into("<I", h, 16, zlib.crc32(h))
    return bytes(h)
