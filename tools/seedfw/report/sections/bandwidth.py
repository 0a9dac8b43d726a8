"""The report's `bandwidth` section (reference page: the class docstring)."""

from __future__ import annotations

from pathlib import Path

from .. import inputs as report_inputs, provenance
from ..format import (bar_chart, html_table, kind_cell, kind_fig, num, plot, settings_text,
                      table)
from ..safe import Md, html, join, mdf
from .base import Inputs, Section, computed, figure, unavailable

PARTS = ("boot", "images", "models", "measured")


class Bandwidth(Section):
    """Bytes moved at boot and per inference, and what was measured at run time.

    - cycles_per_byte: the linked LZ4 decoder's cost (seedfw.decoder_speed: measured only by this
      host's bench/lz4_speed.py for that decoder variant, else estimated).
    - boot: per compressed section, bytes read from storage, bytes expanded to (computed from
      compression.json) and decompression cycles (estimated: raw bytes × cycles/byte); totals
      charge the dictionary once.
    - images: bytes read from storage per boot image (manifest role=boot; without roles every
      non-ELF image) and, where compression.json names the image, what it expands to (computed).
    - models: DDR bytes the NPU reads per inference and per second at config MODEL_FRAME_RATE
      (estimated: every weight byte once per inference; the compressed figure assumes a
      streaming decompressor), from manifest `models`, <out>/models/ or the board's models.yaml.
      Synthetic filler blobs (seedfw.models_synth) are flagged on every figure they feed.
    - measured: every numeric reading of a counters JSON (`invoke counters --json`, given with
      --counters) as a measured figure with its provenance (live / emulated / recorded /
      synthetic / unknown); counter settings are listed apart, never as figures.

    report.html: a "bandwidth" bar chart of the byte figures, coloured by kind.
    Each of the four parts is unavailable on its own (its note joins the report's notes).
    """

    name = "bandwidth"

    def data(self, inputs: Inputs) -> dict:
        outdir, config = inputs.outdir, inputs.config
        comp_rows, comp_summary, _ = inputs.compression
        cpb = report_inputs.read_decompress_speed(outdir)
        # read_decompress_speed calls a figure measured only for a benchmark run (bench/
        # lz4_speed.py) on this host: that is its provenance unless it gives its own.
        cpb = provenance.ensure(cpb, {"source": "benchmark", "where": cpb.get("host")})
        out = dict(cycles_per_byte=cpb)
        # bytes (computed) x cycles/byte is an estimate even when cycles/byte was measured.
        cost_src = (f"raw bytes x {cpb['value']} cycles/byte ({provenance.kind_text(cpb)}: "
                    f"{cpb['source']})")
        cost_note = "estimate: bytes x cycles/byte, not a measurement"
        if comp_rows is None:
            out["boot"] = unavailable(report_inputs.not_available(
                "no compression results, so nothing is expanded at boot"))
        else:
            items = []
            for r in comp_rows:
                items.append(dict(
                    section=r["section"], image=r["image"], owner=r.get("owner"),
                    storage_read=computed(r["compressed"],
                                          source="compression.json: stored container"),
                    expanded=computed(r["raw"], source="compression.json: raw"),
                    decompress_cycles=figure(round(r["raw"] * cpb["value"]), "cycles",
                                             "estimated", cost_src, cost_note)))
            dict_total = comp_summary["dict_total"]
            read = sum(i["storage_read"]["value"] for i in items) + dict_total
            expanded = sum(i["expanded"]["value"] for i in items)
            out["boot"] = dict(available=True, items=items, totals=dict(
                dictionary_read=computed(dict_total,
                                         source="compression.json: dictionary stored"),
                storage_read=computed(read, source="sum of containers + dictionary"),
                expanded=computed(expanded, source="sum of raw sections"),
                saved=computed(expanded - read, source="expanded - storage_read"),
                decompress_cycles=figure(round(expanded * cpb["value"]), "cycles", "estimated",
                                         cost_src, cost_note)))
        out["images"] = _images(inputs.images[0], comp_rows)
        out["models"] = _models(outdir, config, inputs.manifest, inputs.board)
        counters = inputs.counters
        measured, note = report_inputs.read_counters(counters)
        out["measured"] = unavailable(note) if measured is None else \
            dict(available=True, source=Path(counters).name, **measured)
        if measured is not None:
            warning = _measured_warning(measured["provenance"], Path(counters).name)
            if warning:
                out["measured"]["warning"] = warning
        from .. import traffic     # <out>/counters/emulated-*.json (invoke run/boot --counters)
        out["emulated"] = traffic.section(outdir)
        out["available"] = any(out[k]["available"] for k in (*PARTS, "emulated"))
        return out

    def notes(self, bw: dict) -> list[str]:
        notes = []
        for key in PARTS:
            part = bw[key]
            if not part["available"]:
                notes.append(f"bandwidth.{key}: {part['note']}")
            elif part.get("warning"):
                notes.append(f"bandwidth.{key}: {part['warning']}")
        return notes

    def markdown(self, bw: dict) -> list[str]:
        lines = [Md("## Bandwidth"), Md("")]
        rows = [[label, num(f["value"]), f["unit"], kind_cell(f), f.get("source", "")]
                for label, f in rows_of(bw)]
        lines += table(["figure", "value", "unit", "kind", "source"], rows, {1})
        for key in PARTS:
            if not bw[key]["available"]:
                lines.append(mdf("- {}: _{}_", key, bw[key]["note"]))
            elif bw[key].get("warning"):
                lines.append(mdf("- {}: **{}**", key, bw[key]["warning"]))
        if bw["models"]["available"]:
            lines.append(mdf("- models: {}",
                             next(iter(bw["models"]["per_inference"].values()))["note"]))
        m = bw["measured"]
        if m["available"]:
            lines.append(mdf("- measured: {} is {}", m["source"],
                             provenance.describe(m["provenance"])))
            if m["settings"]:
                lines.append(mdf("- counter settings (configuration, not measurements): {}",
                                 settings_text(m["settings"])))
        from .. import traffic
        return lines + [Md("")] + traffic.markdown({"bandwidth": bw})

    def html(self, bw: dict) -> str:
        groups = groups_of(bw)
        svg = bar_chart("Bandwidth", groups, "bytes",
                        legend=("computed", "estimated", "measured")) if groups else None
        h = [html("<h2>Bandwidth</h2>"), plot("bandwidth", svg, "no byte figures available"),
             html_table(["figure", "value", "unit", "kind", "source"],
                        [[label, num(f["value"]), f["unit"], kind_fig(f), f.get("source", "")]
                         for label, f in rows_of(bw)], {1})]
        for key in ("models", "measured"):
            if bw[key]["available"] and bw[key].get("warning"):
                h.append(html('<p class="warn">{{ k }}: {{ w }}</p>', k=key,
                              w=bw[key]["warning"]))
        m = bw["measured"]
        if m["available"]:
            h.append(html("<p>measured: {{ s }} is {{ d }}</p>", s=m["source"],
                          d=provenance.describe(m["provenance"])))
            if m["settings"]:
                h.append(html("<p>counter settings (configuration, not measurements): "
                              "{{ s }}</p>", s=settings_text(m["settings"])))
        from .. import traffic
        return join(h + traffic.html({"bandwidth": bw}), "\n")


def rows_of(bw: dict) -> list[tuple[str, dict]]:
    """(label, figure) pairs of the bandwidth table; report.md and report.html show the same."""
    rows = [("decompressor cycles/byte", bw["cycles_per_byte"])]
    if bw["boot"]["available"]:
        for i in bw["boot"]["items"]:
            where = f"{i['section']}" + (f" ({i['image']})" if i["image"] else "")
            rows += [(f"boot {where}: read from storage", i["storage_read"]),
                     (f"boot {where}: expanded to", i["expanded"]),
                     (f"boot {where}: decompression cycles", i["decompress_cycles"])]
        t = bw["boot"]["totals"]
        rows += [("boot total: read from storage", t["storage_read"]),
                 ("boot total: expanded to", t["expanded"]),
                 ("boot total: storage bytes saved", t["saved"]),
                 ("boot total: decompression cycles", t["decompress_cycles"])]
    if bw["images"]["available"]:
        for i in bw["images"]["items"]:
            rows.append((f"image {i['file']}: read from storage", i["storage_read"]))
            if i["expanded"]:
                rows.append((f"image {i['file']}: expanded to", i["expanded"]))
    if bw["models"]["available"]:
        m = bw["models"]
        rows.append(("model frame rate", m["frame_rate"]))
        for key, f in m["per_inference"].items():
            rows.append((f"model DDR read per inference, {key}", f))
        for key, f in m["per_second"].items():
            rows.append((f"model DDR read per second, {key}", f))
    if bw["measured"]["available"]:
        for c in bw["measured"]["counters"]:
            rows.append((f"counter {c['name']}", c))
    return rows


def groups_of(bw: dict) -> list[tuple[str, list]]:
    """Byte figures of the bandwidth part, grouped so labels stay short; colour = kind."""
    def bar(label, f):
        return (label, f["value"], f["kind"],
                f"{label}: {f['value']:,} {f['unit']}, {provenance.kind_text(f)}")
    groups = []
    if bw["boot"]["available"]:
        bars = []
        for i in bw["boot"]["items"]:
            bars += [bar(f"{i['section']} read", i["storage_read"]),
                     bar(f"{i['section']} expanded", i["expanded"])]
        t = bw["boot"]["totals"]
        bars += [bar("total read", t["storage_read"]), bar("total expanded", t["expanded"])]
        groups.append(("boot: bytes read from storage vs expanded", bars))
    if bw["images"]["available"] and bw["images"]["items"]:
        groups.append(("images: bytes read from storage", [
            bar(i["file"], i["storage_read"]) for i in bw["images"]["items"]]))
    if bw["models"]["available"]:
        m = bw["models"]
        filler = ", SYNTHETIC filler blobs" if m.get("synthetic_models") else ""
        groups.append((f"models: DDR bytes per inference at {m['frame_rate']['value']} "
                       f"frames/s{filler}",
                       [bar(k, f) for k, f in m["per_inference"].items()]))
    if bw["measured"]["available"]:
        bars = [bar(c["name"], c) for c in bw["measured"]["counters"] if c["unit"] == "bytes"]
        if bars:
            groups.append((f"measured ({bw['measured']['provenance']['label']}; "
                           f"{bw['measured']['source']})", bars))
    return groups


def _measured_warning(prov: dict, name: str) -> str | None:
    """What a reader of the counters must not miss: synthetic, emulated or unknown origin."""
    from ...counters.provenance import EMULATED_NOTE, USER_LOG
    if prov["label"] == USER_LOG:
        return (f"the counters in {name} come from a log file handed to seedfw, not one it "
                "captured from a board: recorded, not measured on the board")
    if prov["synthetic"]:
        return (f"the counters in {name} are decoded from SYNTHETIC recorded register values "
                "(test data), not read from hardware")
    if prov["source"] == "unknown":
        return f"{name} does not say where its values came from (provenance unknown)"
    if prov["source"] == "recorded" and prov["label"].endswith("provenance unknown"):
        return f"the counters in {name} are replayed from a recording that does not say where " \
               "or how it was made"
    if prov["source"] == "emulated":
        return (f"the counters in {name} were read in an emulator ({prov['label']}): "
                f"{EMULATED_NOTE}")
    return None


def _images(images_rows, comp_rows) -> dict:
    """Per image read from storage at boot: bytes read (the file) and what they expand to, where
    the compression results name the image a section went into. When the manifest marks roles,
    only role=boot images count (ELFs, intermediate binaries and tables are not read at boot);
    without roles, every non-ELF image is listed (older output directories)."""
    if images_rows is None:
        return unavailable(report_inputs.not_available("no images"))
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
            storage_read=computed(r["size"], source="image file size"),
            expanded=computed(r["size"] + growth, source="image size + sum(raw - stored) of its "
                              "compressed sections") if mine else None,
            compressed_sections=[c["section"] for c in mine],
            section_bytes=[dict(section=c["section"], owner=c.get("owner"),
                                read=computed(c["compressed"], source="compression.json: chosen"),
                                expands_to=computed(c["raw"], source="compression.json: raw"))
                           for c in mine]))
    part = dict(available=True, items=items,
                selection="manifest role=boot" if with_roles else "every non-ELF image")
    if not any(i["expanded"] for i in items):
        part["note"] = "no compressed section is attributed to an image; expanded sizes omitted"
    return part


def _models(outdir, config, manifest, board) -> dict:
    rows, note = report_inputs.read_models(outdir, manifest, board, config)
    if rows is None:
        return unavailable(note)
    rate = (config or {}).get("MODEL_FRAME_RATE")
    if not isinstance(rate, int) or rate <= 0:
        return unavailable(report_inputs.not_available(
            "MODEL_FRAME_RATE not configured (config.json)"))
    level = (config or {}).get("COMPRESS_HC_LEVEL", 12)
    items = []
    for r in rows:
        comp = r["compressed_size"]
        source = "manifest compressed_size"
        if comp is None and r["path"] is not None:
            comp, method = _lz4_size(r["path"], level)
            source = f"{method} of the blob, computed by the report"
        item = dict(name=r["name"], size=computed(r["size"], source="model blob size"),
                    compressed=None if comp is None else computed(comp, source=source),
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


LZ4_CAP = 256 << 20        # a blob the report compresses itself (a 3 GiB sparse file is not)


def _lz4_size(path: Path, level: int) -> tuple[int | None, str]:
    import lz4.block

    from ...images import reading
    if path.stat().st_size > LZ4_CAP:
        return None, f"not computed: blob over {LZ4_CAP >> 20} MiB"
    data = reading.read_input(path, "image")
    if level and len(data) <= (16 << 20):    # HC is 7-40 MB/s through Python: cap its input
        return len(lz4.block.compress(data, mode="high_compression", compression=level,
                                      store_size=False)), f"LZ4 HC level {level}"
    return len(lz4.block.compress(data, store_size=False)), "LZ4 fast mode"
