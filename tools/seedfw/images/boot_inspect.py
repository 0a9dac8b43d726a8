"""`invoke inspect` for what the RK3588 boot ROM and SPL read: u-boot-rockchip.bin (and the SPI
variant), the GPT disk image, and the maskrom loader — every digest recomputed from the bytes.

Called by seedfw.images.inspect.inspect for files that are not a FIT or a boot package; returns
the same Report/Row shape, so the table, --json and the exit status work unchanged. A placeholder
built with --allow-missing-blobs is reported NON-FUNCTIONAL (a failing row), whatever its bytes.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError
from . import gpt, idblock
from .. import reading
from ..reading import View

FDT_MAGIC = b"\xd0\x0d\xfe\xed"
EXT4_MAGIC_AT = 1024 + 56
LOADER_CAP = 64 << 20        # a maskrom loader is < 1 MiB; larger is refused before decoding


def recognises(blob) -> bool:
    view = View.of(blob)
    return view.peek(0, 4) in (idblock.MAGIC, b"LDR ", b"BOOT") or gpt.is_gpt(view) or \
        view.peek(idblock.SPI_IDBLOCK_OFFSET, 4) == idblock.MAGIC


def placeholder_reason(path: Path) -> str | None:
    """Why the build's manifest marks this file NON-FUNCTIONAL, or None. The manifest is read
    as hostile input too (seedfw.manifest: size and depth limits, the schema)."""
    from ..manifest import Manifest
    manifest = Manifest.beside(path)
    why = manifest.non_functional.get(Path(path).name) if manifest is not None else None
    return str(why) if why else None


def inspect(path: Path, blob, report_cls, row_cls, fit_reader, keys=None, budget=None):
    """Report for an RKNS image, a GPT disk image or an LDR loader. `fit_reader(path, view)`
    reads a FIT (seedfw.images.inspect's, so FIT rows look the same everywhere; it checks
    signatures when `keys` were given)."""
    view = View.of(blob, path, "image")
    why = placeholder_reason(path)
    if view.peek(0, 4) in (b"LDR ", b"BOOT"):          # maskrom loader with / without NEWIDB
        from . import loader
        if len(view) > LOADER_CAP:
            raise SeedfwError(f"{len(view)} bytes is over the {LOADER_CAP >> 20} MiB limit for "
                              "a maskrom loader", path)
        report = loader.inspect_report(path, view.bytes(), report_cls, row_cls)
        if keys is not None:
            _no_key(report, row_cls, "a maskrom loader carries no signatures")
        return report
    if gpt.is_gpt(view):
        report = report_cls(path, "gpt disk image")
        _disk_rows(report, row_cls, path, view, fit_reader, keys)
        if keys is not None:
            report.notes.append("--key: the firmware partition's FIT signatures were checked; "
                                "U-Boot's own u-boot.itb (boot@32K) is not signed by seedfw, so "
                                "it has hashes only")
    else:
        report = report_cls(path, "rockchip boot image")
        base = 0 if view.peek(0, 4) == idblock.MAGIC else idblock.SPI_IDBLOCK_OFFSET
        fit_at = idblock.SD_FIT_OFFSET if base == 0 else idblock.SPI_FIT_OFFSET
        _rockchip_rows(report, row_cls, path, view, base, fit_at, "")
        if keys is not None:
            _no_key(report, row_cls, "U-Boot's u-boot.itb is not signed by seedfw")
    if why:
        report.rows.insert(0, row_cls("NON-FUNCTIONAL", "placeholder", len(view), len(view), "-",
                                      False, why))
        report.notes.append(f"NON-FUNCTIONAL: {why}")
    return report


def _no_key(report, row_cls, why) -> None:
    report.rows.append(row_cls("signature", "signature", 0, 0, "none", False,
                               f"--key given, but {why}: nothing to verify"))


def _rockchip_rows(report, row_cls, path, view, base, fit_at, prefix) -> None:
    try:
        block = idblock.parse(view, base, path)
    except SeedfwError as exc:
        report.rows.append(row_cls(f"{prefix}idblock", "rkns", 0, 0, "-", False,
                                   f"NON-FUNCTIONAL: {exc.message}"))
        return
    unhashed = block.header_hash_ok is None
    report.rows.append(row_cls(f"{prefix}idblock header", "rkns", idblock.HEADER_SIZE,
                               idblock.HEADER_SIZE, block.hash_algo, block.header_hash_ok is True,
                               f"at 0x{base:x}, {len(block.images)} images"
                               + (", hash type 'none': cannot be checked" if unhashed else "")))
    for img in block.images:
        report.rows.append(row_cls(f"{prefix}{img.name}", "idblock image", img.size, img.size,
                                   block.hash_algo, img.hash_ok is True,
                                   f"at 0x{base + img.offset:x} ({img.size // idblock.SECTOR} "
                                   "sectors)" + (", no hash: cannot be checked"
                                                 if img.hash_ok is None else "")))
    idblock_end = base + max(i.offset + i.size for i in block.images)
    if not prefix and base == 0 and len(view) == idblock_end:
        # The file is exactly an idblock (U-Boot's idbloader.img): no u-boot.itb belongs here.
        report.notes.append(f"RKNS idblock at 0x0, {len(block.images)} images; the file ends "
                            "with the idblock (idbloader.img: u-boot.itb is written separately)")
        return
    if view.peek(fit_at, 4) != FDT_MAGIC:
        found = view.peek(fit_at, 4)
        report.rows.append(row_cls(f"{prefix}u-boot.itb", "fit", 0, 0, "-", False,
                                   f"no FIT at 0x{fit_at:x} (" + (f"magic {found.hex()}" if found
                                                                  else "past the end of the file")
                                   + ")"))
        return
    try:
        root, images = idblock.fit_images(view.tail(fit_at, f"offset 0x{fit_at:x}", "FIT"), path)
    except SeedfwError as exc:
        report.rows.append(row_cls(f"{prefix}u-boot.itb", "fit", 0, 0, "-", False,
                                   f"BAD: {exc.message}"))
        return
    nodes = root.children["images"].children
    for name, data in images.items():
        node = nodes[name]
        load = node.u32("load")
        ok = idblock.fit_hash_ok(node, data)
        report.rows.append(row_cls(f"{prefix}u-boot.itb/{name}", node.str("type", "?"), len(data),
                                   len(data), "sha256" if ok is not None else "none", ok is True,
                                   (f"load 0x{load:x}" if load is not None else "")
                                   + ("no hash: cannot be checked" if ok is None else "")))
    report.notes.append(f"{prefix or ''}RKNS idblock at 0x{base:x}, u-boot.itb (FIT) at "
                        f"0x{fit_at:x}" + (" (written at sector 64: FIT at 8 MiB)" if base == 0
                                           and not prefix else ""))


def _disk_rows(report, row_cls, path, view, fit_reader, keys) -> None:
    table = gpt.parse(view, path)
    report.rows.append(row_cls("GPT header", "gpt", 92, 92, "crc32", table.header_crc_ok,
                               f"disk {table.disk_guid}"))
    report.rows.append(row_cls("GPT entries", "gpt", 0, 0, "crc32", table.entries_crc_ok,
                               f"{len(table.partitions)} partitions"))
    backup = table.backup_lba * gpt.SECTOR
    report.rows.append(row_cls("GPT backup header", "gpt", 92, 92, "signature",
                               view.peek(backup, 8) == gpt.SIGNATURE,
                               f"LBA {table.backup_lba}" + ("" if view.has(backup, gpt.SECTOR)
                                                            else ": past the end of the file "
                                                                 "(truncated image)")))
    ext4_budget = None                   # one deadline and row cap for all ext4 listings
    for p in table.partitions:
        detail = f"LBA {p.first_lba}..{p.last_lba} (offset {p.offset // 1024} KiB)"
        if not view.has(p.offset, p.size):
            report.rows.append(row_cls(f"partition {p.index} {p.name}", "partition", p.size, 0,
                                       "-", False, detail + ": runs past the end of the file "
                                                            "(truncated image)"))
            continue
        data = view.sub(p.offset, p.size, f"partition {p.index}")
        if data.peek(0, 4) == FDT_MAGIC:
            detail += ", FIT"
        elif data.peek(EXT4_MAGIC_AT, 2) == b"\x53\xef":
            label = reading.escaped_name(data.peek(1024 + 120, 16).split(b"\0")[0])
            detail += f", ext4 '{label}'"
        elif data.is_zero():
            detail += ", empty"
        # in bounds and recognised, nothing more: its contents have their own rows
        report.rows.append(row_cls(f"partition {p.index} {p.name}", "partition", p.size, p.size,
                                   "-", True, detail, checked=False))
        if ", ext4" in detail:
            from .ext4_list import Budget
            ext4_budget = ext4_budget or Budget()
            _ext4_rows(report, row_cls, path, p.name, data, ext4_budget)
    at = 32 * 1024
    first = min((p.offset for p in table.partitions), default=len(view))
    boot_area = view.sub(at, max(min(first, len(view)) - at, 0), "offset 0x8000", "boot area") \
        if len(view) > at else View(b"")
    if boot_area.peek(0, 4) == idblock.MAGIC:
        _rockchip_rows(report, row_cls, path, view.tail(at, "offset 0x8000"), 0,
                       idblock.SD_FIT_OFFSET, "boot@32K/")
        report.notes.append("u-boot-rockchip.bin at 32 KiB (sector 64), outside the partition "
                            "table")
    elif boot_area.is_zero():
        report.notes.append("nothing between the partition table and the first partition "
                            "(no Rockchip boot loader at 32 KiB)")
    else:
        report.rows.append(row_cls("boot@32K", "rkns", 0, 0, "-", False,
                                   "data at 32 KiB that is not an RKNS idblock: cannot be checked"))
    fw = next((p for p in table.partitions if p.name == "firmware"), None)
    if fw is None:
        report.notes.append("no 'firmware' partition")
        return
    if not view.has(fw.offset, fw.size):
        return                          # already a failing row above (truncated)
    data = view.sub(fw.offset, fw.size, "partition firmware", "FIT")
    if data.peek(0, 4) != FDT_MAGIC:
        report.rows.append(row_cls("firmware", "fit", 0, 0, "-", False,
                                   f"partition 'firmware' holds no FIT (magic "
                                   f"{data.peek(0, 4).hex()}): cannot be checked"))
        return
    try:
        end = _external_end(data, path)
        inner = fit_reader(path, data.sub(0, end, "partition firmware", "FIT"))
    except SeedfwError as exc:
        report.rows.append(row_cls("firmware", "fit", 0, 0, "-", False,
                                   f"partition 'firmware': {exc.message}"))
        return
    for r in inner.rows:
        r.name = f"firmware/{r.name}"
        report.rows.append(r)
    report.notes += [f"firmware/{n}" for n in inner.notes]
    report.notes.append(f"firmware partition: our FIT ({len(inner.rows)} rows)")


def _ext4_rows(report, row_cls, path, name: str, data: View, budget) -> None:
    """One row per listed entry of an ext4 partition (seedfw.images.ext4_list: read in place,
    bounded, every entry counted). Nothing here is verified: the rows are `listed` (checked
    False), never "ok"; setuid/setgid/world-writable entries always get a row and a count."""
    from . import ext4_list
    try:
        got = ext4_list.listing(data, source=path, budget=budget)
    except SeedfwError as exc:
        raise SeedfwError(f"ext4: {exc.message}", path, f"partition {name}"
                          + (f", {exc.field}" if exc.field else "")) from None
    for f in got.files + got.flagged:
        report.rows.append(row_cls(f"{name}:{f.path}", f.kind, f.size, f.size, "-", True,
                                   ", ".join([f"mode {f.mode & 0o7777:04o} uid {f.uid} "
                                              f"gid {f.gid}"] + f.flags), checked=False))
    c = got.counts
    flagged = c["setuid"] + c["setgid"] + c["world-writable"]
    report.notes.append(
        f"partition {name}: ext4, {got.total} entries counted ({got.dirs} directories, "
        f"{got.file_bytes} bytes in files), {len(got.files)} listed (up to "
        f"{ext4_list.MAX_DEPTH} levels), {got.more} not listed; {c['setuid']} setuid, "
        f"{c['setgid']} setgid, {c['world-writable']} world-writable"
        + (f" ({len(got.flagged)} of them outside the listing have rows too)" if got.flagged
           else "") + "; nothing in it is verified (rows 'listed')")
    if flagged:
        report.notes.append(f"warning: partition {name} holds {flagged} setuid, setgid or "
                            "world-writable entries (flagged in their rows)")


def _external_end(data: View, path) -> int:
    """End of a FIT's external data (mkimage -E), so the partition's zero padding is cut off;
    an end past the partition is an error (the FIT reader would say so too)."""
    from . import fdt
    root = fdt.parse(data, path)
    size = data.u32be(4, "offset 0x4")
    end = size
    for node in (root.children.get("images") or fdt.Node("")).children.values():
        if node.u32("data-size") is not None:
            start = node.u32("data-position")
            if start is None:
                start = ((size + 3) & ~3) + (node.u32("data-offset") or 0)
            end = max(end, start + node.u32("data-size"))
    if end > len(data):
        raise SeedfwError(f"FIT data ends at 0x{end:x}, past the {len(data)}-byte partition",
                          path, "partition firmware")
    return end
