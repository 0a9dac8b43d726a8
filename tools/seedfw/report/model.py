"""Gather the report of one board output directory into one JSON-ready dict (schema
seedfw-report/1, documented by report/schema/report-v1.json).

Honesty rule: every number that is a result (a size, a ratio, a byte count per second, a
cycle count) is a *figure* {value, unit, kind, source[, note]} where kind is
  computed  - derived exactly from artifacts on disk (file sizes, ELF headers, compression
              results) or arithmetic on such figures;
  estimated - involves an assumption or a constant (decompression cycles from a cycles/byte
              constant, DDR traffic models);
  measured  - read back from hardware or an emulator at run time (counters JSON) or from a
              benchmark run (the decompressor benchmark's cycles/byte).
A measured figure always carries `provenance` {source: live|recorded|emulated|benchmark|unknown,
label, synthetic}, and a figure made from synthetic inputs (test register values, filler model
blobs) says so in `synthetic`; renderers print both next to the kind (report/provenance.py).
Counter settings (sampling interval, DDR type, ...) are listed apart, never as figures.
A computed figure combined with an estimated one is estimated; nothing we compute is ever
labelled measured. Row tables of ELF sections carry one `kind` for the whole table.
Sections whose input is missing carry available=false and note "not available: <why>".
"""

from __future__ import annotations

from pathlib import Path

from .. import stats, stats_diff, util
from ..errors import SeedfwError
from . import inputs, provenance

REPORT_SCHEMA = "seedfw-report/1"
TOP_SYMBOLS = 5


def figure(value, unit: str, kind: str, source: str, note: str | None = None) -> dict:
    fig = dict(value=value, unit=unit, kind=kind, source=source)
    if note:
        fig["note"] = note
    return fig


def _comp(value, unit="bytes", source="artifacts", note=None):
    return figure(value, unit, "computed", source, note)


def _percent(part, whole):
    return round(100.0 * part / whole, 2) if whole else None


def unavailable(note: str) -> dict:
    return dict(available=False, note=note)


def build_report(outdir, baseline=None, counters=None, board: str | None = None) -> dict:
    """The report of output directory `outdir`.

    baseline: another output directory (size deltas against it) or None.
    counters: a counters JSON file from `invoke counters --json`, or None.
    """
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise SeedfwError("output directory not found (run 'invoke build' first)", outdir)
    config, config_note = inputs.read_config(outdir)
    manifest, manifest_note = inputs.read_manifest(outdir)
    notes = [n for n in (config_note, manifest_note) if n]
    # Placeholder images (built with --allow-missing-blobs) must not pass for firmware here either.
    notes += [f"NON-FUNCTIONAL {name}: {why}" for name, why in
              ((manifest or {}).get("non_functional") or {}).items()]
    images_rows, images_note = inputs.list_images(outdir, manifest)
    elf_paths = inputs.find_elfs(outdir, manifest)

    report = dict(
        schema=REPORT_SCHEMA,
        board=board or (config or {}).get("BOARD") or (manifest or {}).get("board") or outdir.name,
        build_id=(config or {}).get("BUILD_ID") or (manifest or {}).get("build_id"),
        source_date_epoch=util.source_date_epoch(),
        images=_images(images_rows, images_note),
        elfs=_elfs(elf_paths, outdir),
    )
    comp_rows, comp_summary, comp_note = inputs.read_compression(outdir)
    report["compression"] = _compression(comp_rows, comp_summary, comp_note)
    report["deltas"] = _deltas(outdir, images_rows, elf_paths, baseline)
    report["bandwidth"] = _bandwidth(outdir, config, manifest, images_rows, comp_rows,
                                     comp_summary, counters, report["board"])
    from ..buildroot import report as os_report      # the OS, when the build made a rootfs
    os_section = os_report.section(outdir)
    if os_section:
        report["os"] = os_section
    from . import cache as cache_report              # ccache figures, when the build compiled
    cache_section = cache_report.section(outdir)
    if cache_section:
        report["cache"] = cache_section
    for key in ("images", "elfs", "compression", "deltas"):
        if not report[key]["available"]:
            notes.append(f"{key}: {report[key]['note']}")
    for key in ("boot", "images", "models", "measured"):
        part = report["bandwidth"][key]
        if not part["available"]:
            notes.append(f"bandwidth.{key}: {part['note']}")
        elif part.get("warning"):
            notes.append(f"bandwidth.{key}: {part['warning']}")
    report["notes"] = notes
    return report


def _images(rows, note) -> dict:
    if rows is None:
        return unavailable(note)
    items = []
    for r in rows:
        ok = None if r["manifest_sha256"] is None else r["manifest_sha256"] == r["sha256"]
        items.append(dict(file=r["file"], format=r["format"], sha256=r["sha256"],
                          size=_comp(r["size"], source="file size"),
                          manifest_sha256=r["manifest_sha256"], sha256_matches_manifest=ok))
    total = sum(r["size"] for r in rows)
    return dict(available=True, items=items, total=_comp(total, source="sum of image sizes"))


def _elfs(paths, outdir) -> dict:
    if not paths:
        return unavailable(inputs.not_available("no target ELF files found in the output "
                                                "directory"))
    items = []
    for path in paths:
        st = stats.read_elf(path, top=TOP_SYMBOLS)
        totals = {k: _comp(st["totals"][k], source="ELF section headers")
                  for k in ("rom", "ram", "alloc", "size_a")}
        items.append(dict(
            file=st["file"], path=str(path.relative_to(outdir)), machine=st["elf"]["machine"],
            kind="computed",
            sections=[{k: s[k] for k in ("name", "type", "flags", "address", "size",
                                         "file_size", "class")}
                      for s in st["sections"] if s["type"] != "NULL"],
            segments=[{k: g[k] for k in ("type", "vaddr", "paddr", "file_size", "mem_size",
                                         "flags", "sections")} for g in st["segments"]],
            totals=totals, top_symbols=st["top_symbols"], warnings=st["warnings"]))
    return dict(available=True, items=items)


def _compression(rows, summary, note) -> dict:
    if rows is None:
        return unavailable(note)
    src = "compression.json"
    items = []
    for r in rows:
        gain = r["raw"] - r["compressed"] - r["dict_bytes"]
        opt = {k: None if r[k] is None else _comp(r[k], source=src)
               for k in ("compressed_no_dict", "compressed_dict")}
        items.append(dict(
            section=r["section"], image=r["image"], blocks=r["blocks"],
            block_size=r["block_size"], uses_dict=r["uses_dict"],
            raw=_comp(r["raw"], source=src),
            compressed=_comp(r["compressed"], source=src, note="container bytes stored"),
            **opt,
            dict_bytes=_comp(r["dict_bytes"], source=src,
                             note="dictionary bytes charged to this section alone"),
            dict_net_gain=None if r["dict_net_gain"] is None else
            _comp(r["dict_net_gain"], source=src, note="no_dict - with_dict - dictionary"),
            net_gain=_comp(gain, source="raw - compressed - dict_bytes"),
            percent=_comp(_percent(r["compressed"], r["raw"]), "%",
                          source="compressed / raw")))
    raw = sum(r["raw"] for r in rows)
    comp = sum(r["compressed"] for r in rows)
    dict_total = summary["dict_total"]
    totals = dict(raw=_comp(raw, source=src), compressed=_comp(comp, source=src),
                  dict_bytes=_comp(dict_total, source=src,
                                   note="dictionary stored once for all sections using it"),
                  net_gain=_comp(raw - comp - dict_total, source="raw - compressed - dict_bytes"),
                  percent=_comp(_percent(comp + dict_total, raw), "%",
                                source="(compressed + dict_bytes) / raw"))
    return dict(available=True, items=items, totals=totals, dictionary=summary["dictionary"])


def _deltas(outdir, images_rows, elf_paths, baseline) -> dict:
    if baseline is None:
        return unavailable(inputs.not_available("no baseline given (--baseline DIR)"))
    baseline = Path(baseline)
    if baseline.exists() and not baseline.is_dir():
        raise SeedfwError("is a file; --baseline takes another build's output directory", baseline)
    if not baseline.is_dir():
        raise SeedfwError("baseline output directory not found", baseline)
    base_manifest, _ = inputs.read_manifest(baseline)
    base_images, _ = inputs.list_images(baseline, base_manifest)
    src = "file sizes (this build vs baseline)"
    old = {r["file"]: r["size"] for r in base_images or []}
    new = {r["file"]: r["size"] for r in images_rows or []}
    images = []
    for name in list(new) + [n for n in old if n not in new]:
        ch = stats_diff.change(old.get(name), new.get(name))
        images.append(dict(
            file=name, status="new" if name not in old else "gone" if name not in new else
            "changed" if ch["delta"] else "same",
            old=None if ch["old"] is None else _comp(ch["old"], source=src),
            new=None if ch["new"] is None else _comp(ch["new"], source=src),
            delta=_comp(ch["delta"], source=src),
            percent=None if ch["percent"] is None else _comp(ch["percent"], "%", source=src)))
    base_elfs = {p.name: p for p in inputs.find_elfs(baseline, base_manifest)}
    elfs = []
    for path in elf_paths:
        if path.name not in base_elfs:
            continue
        d = stats_diff.diff_stats(stats.read_elf(base_elfs[path.name]), stats.read_elf(path),
                                  top=10)
        elfs.append(dict(file=path.name, kind="computed", totals=d["totals"],
                         sections=[s for s in d["sections"] if s["status"] != "same"],
                         symbols=d["symbols"], summary=d["summary"],
                         symbols_available=d["symbols_available"]))
    return dict(available=True, baseline=baseline.name, images=images, elfs=elfs)


def _bandwidth(outdir, config, manifest, images_rows, comp_rows, comp_summary,
               counters, board) -> dict:
    cpb = inputs.read_decompress_speed(outdir)
    # read_decompress_speed calls a figure measured only for a benchmark run (bench/
    # lz4_speed.py) on this host: that is its provenance unless it gives its own.
    cpb = provenance.ensure(cpb, {"source": "benchmark", "where": cpb.get("host")})
    out = dict(cycles_per_byte=cpb)
    # bytes (computed) x cycles/byte is an estimate even when cycles/byte was measured.
    cost_src = (f"raw bytes x {cpb['value']} cycles/byte ({provenance.kind_text(cpb)}: "
                f"{cpb['source']})")
    cost_note = "estimate: bytes x cycles/byte, not a measurement"
    if comp_rows is None:
        out["boot"] = unavailable(inputs.not_available("no compression results, so nothing is "
                                                       "expanded at boot"))
    else:
        items = []
        for r in comp_rows:
            items.append(dict(
                section=r["section"], image=r["image"], owner=r.get("owner"),
                storage_read=_comp(r["compressed"], source="compression.json: stored container"),
                expanded=_comp(r["raw"], source="compression.json: raw"),
                decompress_cycles=figure(round(r["raw"] * cpb["value"]), "cycles", "estimated",
                                         cost_src, cost_note)))
        dict_total = comp_summary["dict_total"]
        read = sum(i["storage_read"]["value"] for i in items) + dict_total
        expanded = sum(i["expanded"]["value"] for i in items)
        out["boot"] = dict(available=True, items=items, totals=dict(
            dictionary_read=_comp(dict_total, source="compression.json: dictionary stored"),
            storage_read=_comp(read, source="sum of containers + dictionary"),
            expanded=_comp(expanded, source="sum of raw sections"),
            saved=_comp(expanded - read, source="expanded - storage_read"),
            decompress_cycles=figure(round(expanded * cpb["value"]), "cycles", "estimated",
                                     cost_src, cost_note)))
    out["images"] = _bandwidth_images(images_rows, comp_rows)
    out["models"] = _bandwidth_models(outdir, config, manifest, board)
    measured, note = inputs.read_counters(counters)
    out["measured"] = unavailable(note) if measured is None else \
        dict(available=True, source=Path(counters).name, **measured)
    if measured is not None:
        warning = _measured_warning(measured["provenance"], Path(counters).name)
        if warning:
            out["measured"]["warning"] = warning
    from . import traffic          # <out>/counters/emulated-*.json (invoke run/boot --counters)
    out["emulated"] = traffic.section(outdir)
    out["available"] = any(out[k]["available"] for k in ("boot", "images", "models", "measured",
                                                         "emulated"))
    return out


def _measured_warning(prov: dict, name: str) -> str | None:
    """What a reader of the counters must not miss: synthetic, emulated or unknown origin."""
    from ..counters.provenance import EMULATED_NOTE
    if prov["synthetic"]:
        return (f"the counters in {name} are decoded from SYNTHETIC recorded register values "
                "(test data), not read from hardware")
    if prov["source"] == "unknown":
        return f"{name} does not say where its values came from (provenance unknown)"
    if prov["source"] == "recorded" and prov["label"].endswith("provenance unknown"):
        return f"the counters in {name} are replayed from a recording that does not say where " \
               "or how it was made"
    if prov["source"] == "emulated":
        return f"the counters in {name} were read in an emulator ({prov['label']}): {EMULATED_NOTE}"
    return None


def _bandwidth_images(images_rows, comp_rows) -> dict:
    """Per image read from storage at boot: bytes read (the file) and what they expand to, where
    the compression results name the image a section went into. When the manifest marks roles,
    only role=boot images count (ELFs, intermediate binaries and tables are not read at boot);
    without roles, every non-ELF image is listed (older output directories)."""
    if images_rows is None:
        return unavailable(inputs.not_available("no images"))
    with_roles = any(r.get("role") for r in images_rows)
    items = []
    for r in images_rows:
        if with_roles and r.get("role") != "boot":
            continue
        if not with_roles and r["format"] == "elf":   # ELF copies ship for debugging
            continue
        mine = [c for c in comp_rows or [] if c["image"] and Path(str(c["image"])).name ==
                Path(r["file"]).name]
        growth = sum(c["raw"] - c["compressed"] for c in mine)
        items.append(dict(
            file=r["file"], role=r.get("role"),
            storage_read=_comp(r["size"], source="image file size"),
            expanded=_comp(r["size"] + growth, source="image size + sum(raw - stored) of its "
                           "compressed sections") if mine else None,
            compressed_sections=[c["section"] for c in mine],
            section_bytes=[dict(section=c["section"], owner=c.get("owner"),
                                read=_comp(c["compressed"], source="compression.json: chosen"),
                                expands_to=_comp(c["raw"], source="compression.json: raw"))
                           for c in mine]))
    part = dict(available=True, items=items,
                selection="manifest role=boot" if with_roles else "every non-ELF image")
    if not any(i["expanded"] for i in items):
        part["note"] = "no compressed section is attributed to an image; expanded sizes omitted"
    return part


def _bandwidth_models(outdir, config, manifest, board) -> dict:
    rows, note = inputs.read_models(outdir, manifest, board, config)
    if rows is None:
        return unavailable(note)
    rate = (config or {}).get("MODEL_FRAME_RATE")
    if not isinstance(rate, int) or rate <= 0:
        return unavailable(inputs.not_available("MODEL_FRAME_RATE not configured (config.json)"))
    level = (config or {}).get("COMPRESS_HC_LEVEL", 12)
    items = []
    for r in rows:
        comp = r["compressed_size"]
        source = "manifest compressed_size"
        if comp is None and r["path"] is not None:
            comp, method = _lz4_size(r["path"], level)
            source = f"{method} of the blob, computed by the report"
        item = dict(name=r["name"], size=_comp(r["size"], source="model blob size"),
                    compressed=None if comp is None else _comp(comp, source=source),
                    synthetic=bool(r.get("synthetic")))
        if r.get("synthetic"):
            item["synthetic_why"] = r["synthetic"]
            for key in ("size", "compressed"):
                if item[key]:
                    item[key]["synthetic"] = "filler model blob"
        items.append(item)
    fake = [i["name"] for i in items if i["synthetic"]]
    raw = sum(i["size"]["value"] for i in items)
    have_comp = all(i["compressed"] for i in items)
    comp = sum(i["compressed"]["value"] for i in items) if have_comp else None
    assume = ("estimate: assumes the NPU reads every weight byte from DDR once per inference; "
              "compressed figures assume a streaming decompressor in front of the NPU (no DDR "
              "write-back); a blob decompressed into DDR once at load costs the uncompressed "
              "figure per inference")
    if fake:
        # The figures are arithmetic on blob sizes: with filler blobs they describe the filler,
        # not the network a product would run. Said in the note, the figure and the notes list.
        assume = (f"for SYNTHETIC filler blobs ({', '.join(fake)}), not real model weights: "
                  + assume)
    per_inf = dict(uncompressed=figure(raw, "bytes", "estimated", "sum of blob sizes", assume))
    per_sec = dict(uncompressed=figure(raw * rate, "bytes/s", "estimated",
                                       f"per inference x {rate} frames/s", assume))
    if comp is not None:
        per_inf["compressed"] = figure(comp, "bytes", "estimated", "sum of compressed sizes",
                                       assume)
        per_sec["compressed"] = figure(comp * rate, "bytes/s", "estimated",
                                       f"per inference x {rate} frames/s", assume)
    if fake:
        for f in list(per_inf.values()) + list(per_sec.values()):
            f["synthetic"] = "filler model blobs"
    part = dict(available=True, frame_rate=figure(rate, "frames/s", "computed",
                                                  "config MODEL_FRAME_RATE"),
                compress_enabled=bool((config or {}).get("MODELS_COMPRESS")),
                items=items, per_inference=per_inf, per_second=per_sec,
                synthetic_models=fake)
    if fake:
        part["warning"] = (f"{len(fake)} of {len(items)} model blobs are SYNTHETIC filler "
                           f"({', '.join(fake)}): the model DDR figures describe filler, not "
                           "real networks")
    return part


def _lz4_size(path: Path, level: int) -> tuple[int, str]:
    import lz4.block
    data = path.read_bytes()
    if level and len(data) <= (16 << 20):    # HC is 7-40 MB/s through Python: cap its input
        return len(lz4.block.compress(data, mode="high_compression", compression=level,
                                      store_size=False)), f"LZ4 HC level {level}"
    return len(lz4.block.compress(data, store_size=False)), "LZ4 fast mode"
