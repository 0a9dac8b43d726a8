"""The maskrom loader (`rkdeveloptool db <loader>`), built by us from a boot_merger recipe.

Reference page (docs/loader.md). Builds: images/<the recipe's [OUTPUT] PATH> (default
rk3588_spl_loader_v1.18.113.bin) and images/loader.json (each entry, its sha256, the blob it is).
Kconfig: UBOOT, LOADER_RECIPE (the recipe: the pinned rkbin file's name, default
RK3588MINIALL.ini on rk3588, or a path to a local .ini; empty: no loader),
UBOOT_ALLOW_MISSING_BLOBS. Inputs: the recipe and the pinned rkbin blobs it names
(seedfw.parts.rkbin); SOURCE_DATE_EPOCH (the header's release time).

Why we write it ourselves: Rockchip's boot_merger is a binary-only x86 tool. The bytes are what
boot_merger 1.35 writes for the same recipe except the release time (0x0e..0x14) and so the CRC
(tests/test_loader.py compares with rkbin's own output). Format: seedfw.images.ldr_format,
recipe: seedfw.images.ldr_recipe. `inspect_report` reads any loader back for `invoke inspect`.

The build's step is the loader part's (seedfw.parts.loader).
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import idblock, ldr_recipe
from .ldr_format import DATA_ALIGN, Loader, LoaderEntry, decode, encode, head_coverage

VERSION = "4"


def _rkbin():
    from ..parts import rkbin        # the pins (a codec module: imported when a loader is read)
    return rkbin


def pins() -> dict[str, str]:
    """File name -> sha256 of every blob a recipe may name."""
    return {f.name: f.sha256 for f in _rkbin().BLOBS}


def read_recipe(path: Path) -> str:
    if path.stat().st_size > 64 << 10:
        raise SeedfwError("larger than 64 KiB: not a loader recipe", path)
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise SeedfwError("not a text file: not a loader recipe", path) from None


def build_loader(recipe_path: Path, blobs: dict[str, Path], release: int) -> tuple[bytes, Loader, str]:
    """(file bytes, the loader, output name) for a recipe; read back and checked before return."""
    recipe = ldr_recipe.parse(read_recipe(recipe_path), recipe_path)
    loader = ldr_recipe.to_loader(recipe, blobs, pins(), release)
    blob = encode(loader)
    back = decode(blob)                 # what we wrote must read back as what we meant
    heads = check_heads(back)
    plain = [e for i, e in enumerate(back.entries) if i not in heads]
    if not back.crc_ok or not all(ok for ok, _ in heads.values()) or \
            [(e.type, e.name, e.data[:len(o.data)]) for e, o in zip(plain, loader.entries)] != \
            [(o.type, o.name, o.data) for o in loader.entries]:
        raise SeedfwError("the loader does not read back as written", recipe_path)
    return blob, loader, recipe.output


# ---- inspect -----------------------------------------------------------------------------------

def _pinned(data: bytes, blobs) -> str | None:
    """The pinned blob these (descrambled, padded) bytes are, or None."""
    for pin in blobs:
        if len(data) == -(-pin.size // DATA_ALIGN) * DATA_ALIGN and \
                util.sha256_bytes(data[:pin.size]) == pin.sha256 and not data[pin.size:].strip(b"\0"):
            return pin.name
    return None


def inspect_report(path, blob, report_cls, row_cls):
    """Header + CRC, each UsbHead/FlashHead RKNS header (its digests and whether its images are the
    entries after it), and every entry descrambled and matched against the pinned blobs."""
    loader = decode(blob, path)
    report = report_cls(path, "rockchip maskrom loader")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(loader.release))
    report.rows.append(row_cls("header + CRC32", "ldr", len(blob), len(blob), "rk-crc32",
                               loader.crc_ok, f"{blob[:4].decode()} {loader.chip} "
                               f"v{loader.version[0]}.{loader.version[1]}, released {when} UTC, "
                               f"rc4 flags {int(loader.rc4_off)}/{int(loader.rc4_471_off)}, "
                               f"{len(loader.entries)} entries"))
    heads = check_heads(loader)
    for i, e in enumerate(loader.entries):
        how = "rc4" if e.scrambled else "plain"
        if i in heads:
            ok, detail = heads[i]
            report.rows.append(row_cls(e.name, "rkns", len(e.data), len(e.data), "sha256", ok,
                                       f"{how} at 0x{e.offset:x}: {detail}"))
            continue
        match = _pinned(e.data, _rkbin().BLOBS)
        detail = f"{how} at 0x{e.offset:x}, delay {e.delay} ms, "
        detail += f"= pinned {match}" if match else "matches no pinned blob"
        report.rows.append(row_cls(e.name, e.kind, len(e.data), len(e.data), "sha256",
                                   match is not None, detail))
    return report


def check_heads(loader: Loader) -> dict[int, tuple[bool, str]]:
    """{index of each UsbHead/FlashHead: (ok, what its RKNS header says)}: the header's own
    sha256, and each image's offset, size and sha256 against the entries that follow it."""
    return {i: _check_head(loader.entries[i], covered)
            for i, covered in head_coverage(loader).items()}


def _check_head(head: LoaderEntry, covered: list[LoaderEntry]) -> tuple[bool, str]:
    virtual = head.data + b"".join(e.data for e in covered)
    try:
        block = idblock.parse(virtual, 0, None)
    except SeedfwError as exc:
        return False, exc.message
    parts, ok = [], block.header_hash_ok is not False
    at = len(head.data)
    for img, e in zip(block.images, covered):
        same = img.offset == at and img.size == len(e.data) and img.hash_ok is not False
        ok &= same
        at += len(e.data)
        parts.append(f"{e.name} {img.size // idblock.SECTOR} sectors {'ok' if same else 'BAD'}")
    if len(block.images) != len(covered):
        ok = False
        parts.append(f"{len(block.images)} images for {len(covered)} entries")
    return ok, (f"RKNS header {'ok' if block.header_hash_ok is not False else 'BAD'}; "
                + ", ".join(parts))
