"""Part of the bandwidth report section: measured (emulated) memory traffic per boot phase.

Input: every counters document `invoke run/boot --counters` left in <out>/counters/emulated-*.json
(seedfw.counters.emulated). Output: report["bandwidth"]["emulated"], a per-phase table of byte
and instruction counts (kind measured, provenance emulated) for each document, rendered as a
Markdown table and, in HTML, a table plus an inline SVG bar chart. Bytes and instructions only:
emulated time is not board time, so no rate is shown.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from ..counters import provenance as counter_provenance
from . import documents, provenance as report_provenance, safe
from .format import html_table, table
from .safe import Md, mdf

COLUMNS = (("dram", "load_bytes", "DRAM read"), ("dram", "store_bytes", "DRAM written"),
           ("flash", "load_bytes", "flash read"), ("sram", "load_bytes", "SRAM read"),
           ("sram", "store_bytes", "SRAM written"), ("mmio", "loads", "MMIO reads"),
           ("mmio", "stores", "MMIO writes"))
NOT_COUNTED = ("other", "after_stop")


def _doc_rows(doc: dict) -> list[dict]:
    kinds = {r["name"]: r["kind"] for r in doc["settings"]["regions"]}
    declared = {p["name"]: p for p in doc["settings"]["phases_declared"]}
    rows = []
    # boot order (the declared phases' order), then the two buckets outside every phase
    order = list(declared) + [n for n in NOT_COUNTED if n in doc["readings"]["phases"]]
    for name in order:
        p = doc["readings"]["phases"].get(name)
        if p is None:
            continue
        d = declared.get(name, {})
        cells = {}
        for kind, field, _ in COLUMNS:
            cells[f"{kind}.{field}"] = sum(v.get(field, 0) for r, v in p["regions"].items()
                                           if kinds.get(r) == kind)
        status = ("no symbols: " + d["missing"]) if d.get("missing") else \
            ("ran" if d.get("ran") else "did not run") if d else \
            {"other": "outside every phase", "after_stop": "after the power-off request "
             "(varies run to run)"}[name]
        rows.append({"phase": name, "status": status, "by": d.get("by", ""),
                     "insns": p["instructions"],
                     "excluded_insns": p.get("excluded", {}).get("instructions", 0),
                     **cells})
    return rows


def section(outdir: Path) -> dict:
    docs = sorted(Path(outdir).glob("counters/emulated-*.json"))
    docs = [d for d in docs if d.name.count(".") == 1]       # not the raw/plan/trace files
    if not docs:
        return {"available": False, "note": "not available: no 'invoke run/boot --counters' "
                                            "in this output directory"}
    items = []
    for path in docs:
        # through the door and schema-checked (report/documents.py): a document that is not
        # one is an error naming its file and field, never a row of NaN or a traceback
        doc = documents.emulated(path)
        prov = doc["provenance"]
        items.append({"source": path.name, "boot": doc["settings"].get("boot"),
                      "kind": "measured", "provenance": report_provenance.for_figure(prov),
                      "method": prov.get("how"), "note": doc["settings"].get("note"),
                      "rows": _doc_rows(doc), "dma": doc["readings"]["dma"]["virtio-blk"],
                      "excluded_code": doc["settings"].get("excluded_code", []),
                      # a board's own OS image on QEMU virt (rk3588): what is not the board
                      "differs": _differs(prov)})
    return {"available": True, "items": items, "perf": _perf(outdir)}


def _differs(prov: dict) -> list[str]:
    got = prov.get("differs_from_board")
    if not isinstance(got, dict):
        return []
    return [f"{k}: {v}" for k, v in got.items() if isinstance(k, str) and isinstance(v, str)]


def _perf(outdir: Path) -> dict | None:
    """The OS agent's perf windows (counters/perf-boot.json, seedfw.counters.perf_live)."""
    found = documents.perf_boot(outdir)
    if found is None:
        return None
    path, doc = found
    rows = [{"window": w, "pmu": pmu, **vals}
            for w, pmus in doc["readings"]["windows"].items() for pmu, vals in pmus.items()]
    return {"source": path.name, "provenance": report_provenance.for_figure(doc["provenance"]),
            "rows": rows, "absent": (doc.get("settings") or {}).get("absent", {})}


def _perf_lines(perf: dict) -> list[str]:
    out = [f"agent perf windows ({perf['source']}, measured ({perf['provenance']['label']})): "
           + "; ".join(f"{r['window']} {r['pmu']}: " + ", ".join(
               f"{k} {v:,}" for k, v in r.items() if k not in ("window", "pmu"))
               for r in perf["rows"])]
    out += [f"absent PMU {pmu}: {why}" for pmu, why in perf["absent"].items()]
    return out


def _num(v) -> str:
    return f"{v:,}"


def _header() -> list[str]:
    return ["phase", "status", "instructions"] + [f"{c[2]} ({'B' if 'bytes' in c[1] else 'n'})"
                                                  for c in COLUMNS] + ["excluded instr."]


def _cells(r: dict) -> list[str]:
    return [r["phase"], r["status"], _num(r["insns"])] + \
        [_num(r[f"{k}.{f}"]) for k, f, _ in COLUMNS] + [_num(r["excluded_insns"])]


def markdown(report: dict) -> list[Md]:
    sec = report.get("bandwidth", {}).get("emulated")
    if not sec:
        return []
    lines = [Md("### Memory traffic per boot phase (measured, emulated)"), Md("")]
    if not sec["available"]:
        return lines + [mdf("_{}_", sec["note"]), Md("")]
    for item in sec["items"]:
        if "error" in item:
            lines += [mdf("- {}: **{}**", item["source"], item["error"]), Md("")]
            continue
        lines += [mdf("**{}** ({}) — kind: measured ({}); {}.", item["source"], item["boot"],
                      item["provenance"]["label"], item["method"]), Md("")]
        lines += table(_header(), [_cells(r) for r in item["rows"]],
                       set(range(3, len(COLUMNS) + 4)))[:-1]
        d = item["dma"]
        lines += [Md(""), mdf("- device DMA (virtio-blk, from QEMU trace events, not CPU "
                              "traffic): {} B read in {} requests, {} B written",
                              _num(d["read_bytes"]), _num(d["reads"]), _num(d["write_bytes"])),
                  mdf("- {}", item["note"]),
                  mdf("- excluded (counted apart, not in the phase's figures): {}",
                      "; ".join(item["excluded_code"]) or "nothing")]
        lines += [mdf("- differs from the board: {}", d) for d in item.get("differs", [])]
        lines += [Md("")]
    if sec.get("perf"):
        lines += [mdf("- {}", t) for t in _perf_lines(sec["perf"])] + [Md("")]
    return lines


def plot(item: dict) -> Markup:
    from .format import bar_chart

    groups = []
    for r in item["rows"]:
        if r["phase"] in NOT_COUNTED or r["status"] != "ran":
            continue
        bars = [(label, r[f"{k}.{f}"], "measured",
                 f"{r['phase']}: {label} {r[f'{k}.{f}']:,} bytes, measured "
                 f"({item['provenance']['label']})")
                for k, f, label in COLUMNS if "bytes" in f and r[f"{k}.{f}"]]
        if bars:
            groups.append((r["phase"], bars))
    return bar_chart(f"CPU memory traffic per boot phase, {item['boot']} (emulated counts, "
                     "not board time)", groups, "bytes")


_ITEM = """<p><b>{{ i.source }}</b> ({{ i.boot }}): <span class="kind-measured">measured \
({{ i.provenance.label }})</span>; {{ i.method }}.</p>
<figure class="plot" id="plot-traffic-{{ name }}" data-plot="traffic-{{ name }}">{{ svg }}</figure>
{{ table }}
<p>device DMA (virtio-blk, from QEMU trace events, not CPU traffic): {{ rb }} B read in \
{{ reads }} requests, {{ wb }} B written</p>
<p>{{ i.note }}</p>
<p>excluded (counted apart): {{ excluded }}</p>
{% for d in differs %}<p>differs from the board: {{ d }}</p>
{% endfor %}"""


def html(report: dict) -> list[Markup]:
    sec = report.get("bandwidth", {}).get("emulated")
    if not sec:
        return []
    h = [safe.html("<h3>Memory traffic per boot phase (measured, emulated)</h3>")]
    if not sec["available"]:
        return h + [safe.html('<p class="na">{{ n }}</p>', n=sec["note"])]
    for item in sec["items"]:
        if "error" in item:
            h.append(safe.html('<p class="warn">{{ s }}: {{ e }}</p>', s=item["source"],
                               e=item["error"]))
            continue
        d = item["dma"]
        h.append(safe.html(
            _ITEM, i=item, name=Path(item["source"]).stem,   # unique per document in <out>
            svg=plot(item), table=html_table(_header(), [_cells(r) for r in item["rows"]]),
            rb=_num(d["read_bytes"]), reads=_num(d["reads"]), wb=_num(d["write_bytes"]),
            excluded="; ".join(item["excluded_code"]) or "nothing", differs=item.get("differs", [])))
    if sec.get("perf"):
        h += [safe.html("<p>{{ t }}</p>", t=t) for t in _perf_lines(sec["perf"])]
    return h


def label(doc: dict) -> str:
    return counter_provenance.label(doc.get("provenance"))
