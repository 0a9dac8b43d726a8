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
from ..reading import CAPS, View

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


def parse(blob, base: int = 0, source=None) -> IdBlock:
    """The idblock at byte `base` of `blob` (bytes, mmap or reading.View), every digest
    recomputed.

    SeedfwError (naming the offset) when there is no RKNS header or it describes images that are
    not in the file; digests that do not match are reported (hash_ok False), not raised, so that
    inspect can show which part is damaged."""
    view = View.of(blob, source, "idblock")
    if view.peek(base, 4) != MAGIC:
        got = view.peek(base, 4)
        raise SeedfwError(f"no RKNS idblock header (found {got.hex() or 'end of file'}): not a "
                          "bootable RK3588 image", source, f"offset 0x{base:x}")
    if not view.has(base, HEADER_SIZE):
        raise SeedfwError("RKNS header truncated", source, f"offset 0x{base:x}")
    size_and_nimage, boot_flag = view.unpack(_WORDS, base + 8, f"offset 0x{base + 8:x}")
    count, hash_words = size_and_nimage >> 16, size_and_nimage & 0xFFFF
    algo = boot_flag & 0xF
    if algo not in HASHES:
        raise SeedfwError(f"unknown hash type {algo}", source, f"offset 0x{base + 12:x}")
    digest_size = hashlib.new(HASH_NAMES[algo]).digest_size if HASH_NAMES[algo] else 0
    if not 1 <= count <= MAX_IMAGES or hash_words * 4 + digest_size > HEADER_SIZE or \
            hash_words * 4 < IMAGES_OFFSET + count * IMAGE_ENTRY_SIZE:
        raise SeedfwError(f"RKNS header describes {count} images, hash at word {hash_words}",
                          source, f"offset 0x{base + 8:x}")
    name = HASH_NAMES[algo]
    hash_at = base + hash_words * 4
    block = IdBlock(name, None if name is None else
                    view.sub(base, hash_words * 4, "idblock header").digest(name) ==
                    view.peek(hash_at, hashlib.new(name).digest_size))
    block.hash_algo = name or "none"
    for i in range(count):
        entry = base + IMAGES_OFFSET + i * IMAGE_ENTRY_SIZE
        (size_and_off,) = view.unpack(_WORD, entry, f"offset 0x{entry:x}")
        offset, size = (size_and_off & 0xFFFF) * SECTOR, (size_and_off >> 16) * SECTOR
        if not view.has(base + offset, size) or offset < HEADER_SIZE or size == 0:
            raise SeedfwError(f"idblock image {i} (offset 0x{offset:x}, {size} bytes) is not "
                              "inside the file", source, f"offset 0x{entry:x}")
        ok = None
        if name is not None:
            digest = view.sub(base + offset, size, f"idblock image {i}").digest(name)
            ok = digest == view.peek(entry + IMAGE_HASH_OFFSET, len(digest))
        block.images.append(IdImage(i, offset, size, ok))
    return block


_WORD = struct.Struct("<I")
_WORDS = struct.Struct("<II")
HASH_NAMES = {0: None, 1: "sha256", 2: "sha512"}


# ---- FIT images inside u-boot-rockchip.bin ------------------------------------------------------

def fit_images(blob, source=None) -> tuple[fdt.Node, dict[str, bytes]]:
    """The FIT at the start of `blob`: its root node and {image name: bytes} (embedded `data`,
    or external data at data-position / after the FDT + data-offset, as binman writes it).
    With a reading.View for `blob`, the values are Views (no copies)."""
    view = View.of(blob, source, "FIT")
    root = fdt.parse(view, source)
    fdt_size = view.u32be(4, "offset 0x4")
    images = root.children.get("images")
    if images is None:
        raise SeedfwError("FIT has no /images node", source)
    if len(images.children) > CAPS["fit_images"]:
        raise SeedfwError(f"{len(images.children)} images in the FIT is over the limit of "
                          f"{CAPS['fit_images']}", source, "/images")
    out = {}
    for name, node in images.children.items():
        if "data" in node.props and ("data-position" in node.props or
                                     "data-offset" in node.props):
            raise SeedfwError(f"FIT image '{name}' has both embedded and external data (U-Boot "
                              f"would load the external bytes): refused", source)
        if "data" in node.props:
            out[name] = node.props["data"]
            continue
        size = node.u32("data-size")
        if size is None:
            raise SeedfwError(f"FIT image '{name}' has no data", source)
        start = node.u32("data-position")
        if start is None:
            start = ((fdt_size + 3) & ~3) + (node.u32("data-offset") or 0)
        if not view.has(start, size):
            raise SeedfwError(f"FIT image '{name}' runs past the end of the file", source)
        out[name] = view.sub(start, size, f"/images/{name}") if isinstance(blob, View) \
            else view.bytes(start, size)
    return root, out


def fit_hash_ok(node: fdt.Node, data) -> bool | None:
    """True/False when the image has a sha256/sha1/md5 hash node; None when it has none.
    A hash node with another algorithm is a failure (it cannot be checked)."""
    data = View.of(data)
    checks = [h.str("algo", "") in ("sha256", "sha1", "md5") and
              data.digest(h.str("algo")) == h.props.get("value")
              for n, h in node.children.items() if n.startswith("hash")]
    return all(checks) if checks else None
