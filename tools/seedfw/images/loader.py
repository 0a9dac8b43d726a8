"""The maskrom loader (`rkdeveloptool db <loader>`), built by us from a boot_merger recipe.

Reference page (docs/loader.md). Builds: images/<the recipe's [OUTPUT] PATH> (default
rk3588_spl_loader_v1.18.113.bin) and images/loader.json (each entry, its sha256, the blob it is).
Kconfig: UBOOT, LOADER_RECIPE (the recipe: the pinned rkbin file's name, default
RK3588MINIALL.ini on rk3588, or a path to a local .ini; empty: no loader),
UBOOT_ALLOW_MISSING_BLOBS. Inputs: the recipe and the pinned rkbin blobs it names
(seedfw.sources.rkbin); SOURCE_DATE_EPOCH (the header's release time).

Why we write it ourselves: Rockchip's boot_merger is a binary-only x86 tool. The bytes are what
boot_merger 1.35 writes for the same recipe except the release time (0x0e..0x14) and so the CRC
(tests/test_loader.py compares with rkbin's own output). Format: seedfw.images.ldr_format,
recipe: seedfw.images.ldr_recipe. `inspect_report` reads any loader back for `invoke inspect`.

The build's step is the loader part's (seedfw.parts.loader).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from .. import util
from ..errors import SeedfwError
from . import idblock, ldr_recipe
from .. import reading
from .ldr_format import DATA_ALIGN, Loader, LoaderEntry, decode, encode, head_coverage

VERSION = "4"


def _rkbin():
    from ..sources import rkbin        # the pins (a codec module: imported when a loader is read)
    return rkbin


def pins() -> dict[str, str]:
    """File name -> sha256 of every blob a recipe may name."""
    return {f.name: f.sha256 for f in _rkbin().BLOBS}


RECIPE_CAP = 64 << 10         # boot_merger's recipes are ~1 KiB


def read_recipe(path: Path) -> str:
    """The recipe's text, through the reading door: a regular file only (a FIFO or a device
    named as the recipe would block the build forever), opened O_NONBLOCK, at most 64 KiB,
    strict UTF-8 (an error names the line)."""
    if reading.refuse_special(path).st_size > RECIPE_CAP:
        raise SeedfwError("larger than 64 KiB: not a loader recipe", path)
    text = reading.read_text(path, "kconfig")
    if len(text) > RECIPE_CAP:           # grew between the stat and the open
        raise SeedfwError("larger than 64 KiB: not a loader recipe", path)
    return text


def build_loader(recipe_path: Path, blobs: dict[str, Path], release: int) -> tuple[bytes, Loader, str]:
    """(file bytes, the loader, output name) for a recipe; read back and checked before return."""
    recipe = ldr_recipe.parse(read_recipe(recipe_path), recipe_path)
    loader = ldr_recipe.to_loader(recipe, blobs, pins(), release)
    blob = encode(loader)
    back = decode(blob)                 # what we wrote must read back as what we meant
    heads = check_heads(back)
    plain = [e for i, e in enumerate(back.entries) if i not in heads]
    if not back.crc_ok or not all(h.ok for h in heads.values()) or \
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
            head = heads[i]
            row = row_cls(e.name, "rkns", len(e.data), len(e.data), head.algo, head.ok,
                          f"{how} at 0x{e.offset:x}: {head.detail}")
            if head.unchecked and not head.ok and "BAD" not in head.detail:
                row.verdict = "unchecked"        # a failure, but say which kind
            report.rows.append(row)
            continue
        match = _pinned(e.data, _rkbin().BLOBS)
        detail = f"{how} at 0x{e.offset:x}, delay {e.delay} ms, "
        detail += f"= pinned {match}" if match else "matches no pinned blob"
        report.rows.append(row_cls(e.name, e.kind, len(e.data), len(e.data), "sha256",
                                   match is not None, detail))
    return report


class HeadCheck(NamedTuple):
    """What one UsbHead/FlashHead's RKNS header says: ok only when every digest was checked
    and matched; `unchecked` when a digest was missing (hash type none)."""

    ok: bool
    detail: str
    algo: str = "sha256"
    unchecked: bool = False


def check_heads(loader: Loader) -> dict[int, HeadCheck]:
    """{index of each UsbHead/FlashHead: (ok, what its RKNS header says)}: the header's own
    sha256, and each image's offset, size and sha256 against the entries that follow it.

    A header whose hash type is none (0) checks nothing: no digest of itself, none of its
    images. Unchecked counts as failed (ok False, "unchecked" in the detail): boot_merger 1.35
    writes sha256 (type 1) into both heads — the reference loader does — and the boot ROM of
    a board with secure boot relies on those digests, so a loader without them is not one we
    made and not one we can vouch for."""
    return {i: _check_head(loader.entries[i], covered)
            for i, covered in head_coverage(loader).items()}


def _check_head(head: LoaderEntry, covered: list[LoaderEntry]) -> HeadCheck:
    virtual = head.data + b"".join(e.data for e in covered)
    try:
        block = idblock.parse(virtual, 0, None)
    except SeedfwError as exc:
        return HeadCheck(False, exc.message)
    parts, ok = [], block.header_hash_ok is True
    at = len(head.data)
    for img, e in zip(block.images, covered):
        same = img.offset == at and img.size == len(e.data) and img.hash_ok is not False
        ok &= same and img.hash_ok is True
        at += len(e.data)
        parts.append(f"{e.name} {img.size // idblock.SECTOR} sectors "
                     f"{'BAD' if not same else 'ok' if img.hash_ok else 'unchecked'}")
    if len(block.images) != len(covered):
        ok = False
        parts.append(f"{len(block.images)} images for {len(covered)} entries")
    header = {True: "ok", False: "BAD", None: "unchecked (hash type none)"}[block.header_hash_ok]
    unchecked = block.header_hash_ok is None or any(i.hash_ok is None for i in block.images)
    return HeadCheck(ok, f"RKNS header {header}; " + ", ".join(parts), block.hash_algo, unchecked)
