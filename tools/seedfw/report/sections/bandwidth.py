"""The report's `bandwidth` section (reference page: the class docstring)."""

from __future__ import annotations

from pathlib import Path

from .. import documents, inputs as report_inputs, provenance
from ..format import (bar_chart, html_table, kind_cell, kind_fig, num, plot, settings_text,
                      table)
from ..safe import Md, html, join, mdf
from .base import Inputs, Section, computed, figure, unavailable

PARTS = ("boot", "images", "models", "measured")


class Bandwidth(Section):
    """Bytes moved at boot and per inference, and what was measured at run time.

    - cycles_per_byte: the linked LZ4 decoder's cost on the board, estimated (the documented
      constant, seedfw.compress.decoder_speed.board_estimate); no benchmark cache is read.
    - host_cycles_per_byte: only with `--decoder-bench FILE` (a bench/lz4_speed.py result):
      measured on the host (its architecture and CPU named), not the board; the boot estimates
      keep the constant.
    - boot: per compressed section, bytes read from storage, bytes expanded to (computed from
      compression.json) and decompression cycles (estimated: raw bytes × cycles/byte); totals
      charge the dictionary once.
    - images: bytes read from storage per boot image (manifest role=boot; without roles every
      non-ELF image) and, where compression.json names the image, what it expands to (computed).
    - models: one figure, the DDR bytes the NPU reads per inference (and per second at config
      MODEL_FRAME_RATE): the compiled models' weight bytes (images/models.json weight_bytes),
      estimated under the stated assumption (each weight byte once per inference, no on-chip
      reuse). Without model cards, the blobs in the output directory (manifest `models`,
      <out>/models/) stand in. Per model: file bytes, weight bytes, and a stored (compressed)
      size only for a model the build stores compressed (images/images.json). Synthetic filler
      blobs (seedfw.models_synth) are flagged on every figure they feed.
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
        # The board's cycles/byte is the documented constant (estimated); a host benchmark is
        # shown beside it only when given on the command line, and never feeds the estimates.
        cpb, host_cpb = report_inputs.read_decompress_speed(outdir, config, inputs.decoder_bench)
        out = dict(cycles_per_byte=cpb)
        if host_cpb is not None:
            out["host_cycles_per_byte"] = host_cpb
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
        out["models"] = _models(outdir, config, inputs.manifest)
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
    if bw.get("host_cycles_per_byte"):
        host = bw["host_cycles_per_byte"]
        rows.append((f"decompressor cycles/byte {host['provenance']['label']}", host))
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
        # One figure (the weights the NPU reads as they are); a report of an older build may
        # still carry a "compressed" one, which keeps its key in the label.
        for key, f in m["per_inference"].items():
            rows.append((_model_label("per inference", key), f))
        for key, f in m["per_second"].items():
            rows.append((_model_label("per second", key), f))
    if bw["measured"]["available"]:
        for c in bw["measured"]["counters"]:
            rows.append((f"counter {c['name']}", c))
    return rows


def _model_label(per: str, key: str) -> str:
    return f"model DDR read {per}" + ("" if key == "uncompressed" else f", {key}")


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


# One model-traffic figure, with its assumption (issue 33): the compiled weights, not the files.
WEIGHTS_ASSUMPTION = (
    "estimate: assumes the NPU reads every weight byte of each compiled model from DDR once per "
    "inference (no on-chip reuse across frames; activations not included); models are "
    "decompressed at load, so how a blob is stored does not change it")
BLOB_ASSUMPTION = (
    "estimate: no model cards (images/models.json), so each blob's size is taken as its weights; "
    "assumes the NPU reads every weight byte from DDR once per inference (no on-chip reuse)")


def _models(outdir, config, manifest) -> dict:
    """The model DDR traffic: from the model cards (images/models.json: the compiled models'
    weight_bytes) when the build wrote them, else from the blobs the output directory holds
    (manifest `models`, <out>/models/). Never from the board tree or a cache: the report reads
    the build. A `compressed` item figure only for a model the build stores compressed."""
    rate = (config or {}).get("MODEL_FRAME_RATE")
    cards = documents.model_cards(outdir)
    if cards is not None and cards[1].get("models"):
        items, total, source, assume = _card_items(outdir, cards[1]["models"])
        fake = []
    else:
        rows, note = report_inputs.read_models(outdir, manifest)
        if rows is None:
            return unavailable(note)
        items, fake = _blob_items(rows), [r["name"] for r in rows if r.get("synthetic")]
        total, source, assume = sum(i["size"]["value"] for i in items), "sum of blob sizes", \
            BLOB_ASSUMPTION
    if not isinstance(rate, int) or rate <= 0:
        return unavailable(report_inputs.not_available(
            "MODEL_FRAME_RATE not configured (config.json)"))
    if fake:
        # The figures are arithmetic on blob sizes: with filler blobs they describe the filler,
        # not the network a product would run. Said in the note, the figure and the notes list.
        assume = (f"for SYNTHETIC filler blobs ({', '.join(fake)}), not real model weights: "
                  + assume)
    # "uncompressed": the schema's key for bytes the NPU reads as they are (version 1 keeps it).
    per_inf = dict(uncompressed=figure(total, "bytes", "estimated", source, assume))
    per_sec = dict(uncompressed=figure(total * rate, "bytes/s", "estimated",
                                       f"per inference x {rate} frames/s", assume))
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


def _card_items(outdir, cards: list[dict]):
    """Items from the model cards, stored sizes from images/images.json (what the boot package
    holds: `stored_size` below `size` means stored compressed)."""
    stored = {e["name"]: e for e in documents.package_entries(outdir) if e["type"] == "model"}
    items, total, by_file = [], 0, []
    for c in cards:
        weights = c.get("weight_bytes")
        if weights is None:         # a card without the toolkit's total: its file, said so
            by_file.append(c["name"])
        total += c["file_bytes"] if weights is None else weights
        entry = stored.get(c["name"])
        packed = entry is not None and entry["stored_size"] < entry["size"]
        items.append(dict(
            name=c["name"],
            size=computed(c["file_bytes"], source="images/models.json: file_bytes"),
            weights=None if weights is None else computed(
                weights, source="images/models.json: weight_bytes (rknn-toolkit2)"),
            compressed=computed(entry["stored_size"], source="images/images.json: stored_size")
            if packed else None,
            synthetic=False))
    source = "images/models.json: sum of weight_bytes (the compiled models)"
    if by_file:
        source += f"; file_bytes for {', '.join(by_file)} (no weight_bytes)"
    return items, total, source, WEIGHTS_ASSUMPTION


def _blob_items(rows: list[dict]) -> list[dict]:
    items = []
    for r in rows:
        comp = r["compressed_size"]      # the manifest's stored size: stored compressed only
        item = dict(name=r["name"], size=computed(r["size"], source="model blob size"),
                    compressed=None if comp is None or comp >= r["size"] else
                    computed(comp, source="manifest compressed_size"),
                    synthetic=bool(r.get("synthetic")))
        if r.get("synthetic"):
            item["synthetic_why"] = r["synthetic"]
            for key in ("size", "compressed"):
                if item[key]:
                    item[key]["synthetic"] = "filler model blob"
        items.append(item)
    return items
