"""The RK3588 boot ROM's idblock ("RKNS" header v2) and the images around it, read back and checked.

Layout: firmware/include/seedfw/rkns.h (the one definition; tests/test_uboot.py checks the
offsets below against it with the C compiler). Used by the build (never trust binman's exit code:
with missing blobs it exits 0 and writes an image without this header) and by `invoke inspect`.

Also here: the layout of U-Boot's `u-boot-rockchip.bin` (idblock at byte 0, written at storage
sector 64; u-boot.itb at 0x7f8000, so that it lands at 8 MiB = sector 16384) and of the SPI
variant, and a FIT reader that returns each image's bytes (embedded or external data).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

from ..errors import SeedfwError
from . import fdt

MAGIC = b"RKNS"
SECTOR = 512
HEADER_SIZE = 2048
IMAGES_OFFSET = 120          # offsetof(struct rkns_header, images)
IMAGE_ENTRY_SIZE = 88        # sizeof(struct rkns_image)
IMAGE_HASH_OFFSET = 24       # offsetof(struct rkns_image, hash)
MAX_IMAGES = 4
HASHES = {0: None, 1: hashlib.sha256, 2: hashlib.sha512}
IMAGE_NAMES = ("DDR init (TPL)", "U-Boot SPL")

# u-boot-rockchip.bin (eMMC/SD, written at sector 64) and u-boot-rockchip-spi.bin (SPI NOR at 0)
SD_SECTOR = 64
SD_FIT_OFFSET = 0x7F8000     # CONFIG_SPL_PAD_TO: + 32 KiB = 8 MiB on the card
SPI_IDBLOCK_OFFSET = 0x8000
SPI_FIT_OFFSET = 0x60000     # CONFIG_SYS_SPI_U_BOOT_OFFS


@dataclass
class IdImage:
    index: int
    offset: int              # bytes from the header
    size: int                # bytes (whole sectors)
    hash_ok: bool | None     # None: the header says "no hash"

    @property
    def name(self) -> str:
        return IMAGE_NAMES[self.index] if self.index < len(IMAGE_NAMES) else f"image {self.index}"


@dataclass
class IdBlock:
    hash_algo: str
    header_hash_ok: bool | None
    images: list[IdImage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.header_hash_ok is not False and all(i.hash_ok is not False for i in self.images)

    def image_bytes(self, blob: bytes, index: int, base: int = 0) -> bytes:
        img = self.images[index]
        return blob[base + img.offset:base + img.offset + img.size]


def parse(blob: bytes, base: int = 0, source=None) -> IdBlock:
    """The idblock at byte `base` of `blob`, with every digest recomputed.

    SeedfwError (naming the offset) when there is no RKNS header or it describes images that are
    not in the file; digests that do not match are reported (hash_ok False), not raised, so that
    inspect can show which part is damaged."""
    if blob[base:base + 4] != MAGIC:
        got = blob[base:base + 4]
        raise SeedfwError(f"no RKNS idblock header (found {got.hex() or 'end of file'}): not a "
                          "bootable RK3588 image", source, f"offset 0x{base:x}")
    if len(blob) < base + HEADER_SIZE:
        raise SeedfwError("RKNS header truncated", source, f"offset 0x{base:x}")
    size_and_nimage, boot_flag = struct.unpack_from("<II", blob, base + 8)
    count, hash_words = size_and_nimage >> 16, size_and_nimage & 0xFFFF
    algo = boot_flag & 0xF
    if algo not in HASHES:
        raise SeedfwError(f"unknown hash type {algo}", source, f"offset 0x{base + 12:x}")
    if not 1 <= count <= MAX_IMAGES or hash_words * 4 + 32 > HEADER_SIZE:
        raise SeedfwError(f"RKNS header describes {count} images, hash at word {hash_words}",
                          source, f"offset 0x{base + 8:x}")
    fn = HASHES[algo]
    hash_at = base + hash_words * 4
    block = IdBlock({0: "none", 1: "sha256", 2: "sha512"}[algo],
                    None if fn is None else
                    fn(blob[base:hash_at]).digest() == blob[hash_at:hash_at + fn().digest_size])
    for i in range(count):
        entry = base + IMAGES_OFFSET + i * IMAGE_ENTRY_SIZE
        (size_and_off,) = struct.unpack_from("<I", blob, entry)
        offset, size = (size_and_off & 0xFFFF) * SECTOR, (size_and_off >> 16) * SECTOR
        if base + offset + size > len(blob) or offset < HEADER_SIZE:
            raise SeedfwError(f"idblock image {i} (offset 0x{offset:x}, {size} bytes) is not "
                              "inside the file", source, f"offset 0x{entry:x}")
        ok = None
        if fn is not None:
            digest = fn(blob[base + offset:base + offset + size]).digest()
            stored = blob[entry + IMAGE_HASH_OFFSET:entry + IMAGE_HASH_OFFSET + len(digest)]
            ok = digest == stored
        block.images.append(IdImage(i, offset, size, ok))
    return block


# ---- FIT images inside u-boot-rockchip.bin ------------------------------------------------------

def fit_images(blob: bytes, source=None) -> tuple[fdt.Node, dict[str, bytes]]:
    """The FIT at the start of `blob`: its root node and {image name: bytes} (embedded `data`,
    or external data at data-position / after the FDT + data-offset, as binman writes it)."""
    root = fdt.parse(blob, source)
    (fdt_size,) = struct.unpack_from(">I", blob, 4)
    images = root.children.get("images")
    if images is None:
        raise SeedfwError("FIT has no /images node", source)
    out = {}
    for name, node in images.children.items():
        if "data" in node.props:
            out[name] = node.props["data"]
            continue
        size = node.u32("data-size")
        if size is None:
            raise SeedfwError(f"FIT image '{name}' has no data", source)
        start = node.u32("data-position")
        if start is None:
            start = ((fdt_size + 3) & ~3) + (node.u32("data-offset") or 0)
        if start + size > len(blob):
            raise SeedfwError(f"FIT image '{name}' runs past the end of the file", source)
        out[name] = blob[start:start + size]
    return root, out


def fit_hash_ok(node: fdt.Node, data: bytes) -> bool | None:
    """True/False when the image has a sha256/sha1/md5 hash node; None when it has none."""
    algos = {"sha256": hashlib.sha256, "sha1": hashlib.sha1, "md5": hashlib.md5}
    checks = [algos[h.str("algo", "")](data).digest() == h.props.get("value")
              for n, h in node.children.items() if n.startswith("hash") and h.str("algo") in algos]
    return all(checks) if checks else None
