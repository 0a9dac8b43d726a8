"""`invoke inspect` for what the RK3588 boot ROM and SPL read: u-boot-rockchip.bin (and the SPI
variant), the GPT disk image, and the maskrom loader — every digest recomputed from the bytes.

Called by seedfw.images.inspect.inspect for files that are not a FIT or a boot package; returns
the same Report/Row shape, so the table, --json and the exit status work unchanged. A placeholder
built with --allow-missing-blobs is reported NON-FUNCTIONAL (a failing row), whatever its bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from ..errors import SeedfwError
from . import gpt, idblock

FDT_MAGIC = b"\xd0\x0d\xfe\xed"
EXT4_MAGIC_AT = 1024 + 56


def recognises(blob: bytes) -> bool:
    return blob[:4] in (idblock.MAGIC, b"LDR ") or gpt.is_gpt(blob) or \
        blob[idblock.SPI_IDBLOCK_OFFSET:idblock.SPI_IDBLOCK_OFFSET + 4] == idblock.MAGIC


def placeholder_reason(path: Path) -> str | None:
    """Why the build's manifest marks this file NON-FUNCTIONAL, or None."""
    for folder in list(Path(path).resolve().parents)[:3]:
        manifest = folder / "manifest.json"
        if manifest.is_file():
            try:
                doc = json.loads(manifest.read_text())
            except ValueError:
                return None
            return (doc.get("non_functional") or {}).get(Path(path).name)
    return None


def inspect(path: Path, blob: bytes, report_cls, row_cls, fit_reader):
    """Report for an RKNS image, a GPT disk image or an LDR loader. `fit_reader(path, blob)`
    reads a FIT (seedfw.images.inspect's, so FIT rows look the same everywhere)."""
    why = placeholder_reason(path)
    if blob[:4] == b"LDR ":
        from . import loader
        return loader.inspect_report(path, blob, report_cls, row_cls)
    if gpt.is_gpt(blob):
        report = report_cls(path, "gpt disk image")
        _disk_rows(report, row_cls, path, blob, fit_reader)
    else:
        report = report_cls(path, "rockchip boot image")
        base = 0 if blob[:4] == idblock.MAGIC else idblock.SPI_IDBLOCK_OFFSET
        fit_at = idblock.SD_FIT_OFFSET if base == 0 else idblock.SPI_FIT_OFFSET
        _rockchip_rows(report, row_cls, path, blob, base, fit_at, "")
    if why:
        report.rows.insert(0, row_cls("NON-FUNCTIONAL", "placeholder", len(blob), len(blob), "-",
                                      False, why))
        report.notes.append(f"NON-FUNCTIONAL: {why}")
    return report


def _rockchip_rows(report, row_cls, path, blob, base, fit_at, prefix) -> None:
    try:
        block = idblock.parse(blob, base, path)
    except SeedfwError as exc:
        report.rows.append(row_cls(f"{prefix}idblock", "rkns", 0, 0, "-", False,
                                   f"NON-FUNCTIONAL: {exc.message}"))
        return
    report.rows.append(row_cls(f"{prefix}idblock header", "rkns", idblock.HEADER_SIZE,
                               idblock.HEADER_SIZE, block.hash_algo, block.header_hash_ok is not False,
                               f"at 0x{base:x}, {len(block.images)} images"))
    for img in block.images:
        report.rows.append(row_cls(f"{prefix}{img.name}", "idblock image", img.size, img.size,
                                   block.hash_algo, img.hash_ok is not False,
                                   f"at 0x{base + img.offset:x} ({img.size // idblock.SECTOR} "
                                   "sectors)"))
    if blob[fit_at:fit_at + 4] != FDT_MAGIC:
        report.rows.append(row_cls(f"{prefix}u-boot.itb", "fit", 0, 0, "-", False,
                                   f"no FIT at 0x{fit_at:x}"))
        return
    root, images = idblock.fit_images(blob[fit_at:], path)
    nodes = root.children["images"].children
    for name, data in images.items():
        node = nodes[name]
        load = node.u32("load")
        ok = idblock.fit_hash_ok(node, data)
        report.rows.append(row_cls(f"{prefix}u-boot.itb/{name}", node.str("type", "?"), len(data),
                                   len(data), "sha256" if ok is not None else "none", ok is True,
                                   f"load 0x{load:x}" if load is not None else ""))
    report.notes.append(f"{prefix or ''}RKNS idblock at 0x{base:x}, u-boot.itb (FIT) at "
                        f"0x{fit_at:x}" + (" (written at sector 64: FIT at 8 MiB)" if base == 0
                                           and not prefix else ""))


def _disk_rows(report, row_cls, path, blob, fit_reader) -> None:
    table = gpt.parse(blob, path)
    report.rows.append(row_cls("GPT header", "gpt", 92, 92, "crc32", table.header_crc_ok,
                               f"disk {table.disk_guid}"))
    report.rows.append(row_cls("GPT entries", "gpt", 0, 0, "crc32", table.entries_crc_ok,
                               f"{len(table.partitions)} partitions"))
    for p in table.partitions:
        data = blob[p.offset:p.offset + p.size]
        detail = f"LBA {p.first_lba}..{p.last_lba} (offset {p.offset // 1024} KiB)"
        if data[:4] == FDT_MAGIC:
            detail += ", FIT"
        elif data[EXT4_MAGIC_AT:EXT4_MAGIC_AT + 2] == b"\x53\xef":
            label = data[1024 + 120:1024 + 136].split(b"\0")[0].decode(errors="replace")
            detail += f", ext4 '{label}'"
        elif not data.strip(b"\0"):
            detail += ", empty"
        report.rows.append(row_cls(f"partition {p.index} {p.name}", "partition", p.size, p.size,
                                   "-", True, detail))
        if ", ext4" in detail:
            _ext4_rows(report, row_cls, p.name, data)
    at = 32 * 1024
    if any(p.offset < at + idblock.HEADER_SIZE for p in table.partitions):
        return
    _rockchip_rows(report, row_cls, path, blob[at:], 0, idblock.SD_FIT_OFFSET,
                   "boot@32K/")
    report.notes.append("u-boot-rockchip.bin at 32 KiB (sector 64), outside the partition table")
    try:
        fw = table.partition("firmware")
    except KeyError:
        return
    data = blob[fw.offset:fw.offset + fw.size]
    if data[:4] == FDT_MAGIC:
        size = struct.unpack_from(">I", data, 4)[0]
        inner = fit_reader(path, data[:max(size, _external_end(data))])
        for r in inner.rows:
            r.name = f"firmware/{r.name}"
            report.rows.append(r)
        report.notes.append(f"firmware partition: our FIT ({len(inner.rows)} images)")


def _ext4_rows(report, row_cls, name: str, data: bytes) -> None:
    """One row per file of an ext4 partition (seedfw.images.ext4_list: bounded)."""
    from . import ext4_list
    files, more = ext4_list.listing(data)
    for f in files:
        report.rows.append(row_cls(f"{name}:{f.path}", f.kind, f.size, f.size, "-", True,
                                   f"mode {f.mode & 0o7777:04o} uid {f.uid} gid {f.gid}"))
    report.notes.append(f"partition {name}: ext4, {len(files)} entries listed (up to "
                        f"{ext4_list.MAX_DEPTH} levels)" + (f", {more} more not listed" if more else ""))


def _external_end(data: bytes) -> int:
    """End of a FIT's external data (mkimage -E), so the partition's zero padding is cut off."""
    from . import fdt
    root = fdt.parse(data)
    size = struct.unpack_from(">I", data, 4)[0]
    end = size
    for node in (root.children.get("images") or fdt.Node("")).children.values():
        if node.u32("data-size") is not None:
            start = node.u32("data-position")
            if start is None:
                start = ((size + 3) & ~3) + (node.u32("data-offset") or 0)
            end = max(end, start + node.u32("data-size"))
    return end
