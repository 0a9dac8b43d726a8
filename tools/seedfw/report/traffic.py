"""Part of the bandwidth report section: measured (emulated) memory traffic per boot phase.

Input: every counters document `invoke run/boot --counters` left in <out>/counters/emulated-*.json
(seedfw.counters.emulated). Output: report["bandwidth"]["emulated"], a per-phase table of byte
and instruction counts (kind measured, provenance emulated) for each document, rendered as a
Markdown table and, in HTML, a table plus an inline SVG bar chart. Bytes and instructions only:
emulated time is not board time, so no rate is shown.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from ..counters import provenance as counter_provenance
from . import provenance as report_provenance

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
            cells[f"{kind}.{field}"] = sum(v[field] for r, v in p["regions"].items()
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
        try:
            doc = json.loads(path.read_text())
            prov = doc["provenance"]
            rows = _doc_rows(doc)
            dma = doc["readings"]["dma"]["virtio-blk"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            items.append({"source": path.name, "error": f"unreadable: {exc}"})
            continue
        items.append({"source": path.name, "boot": doc["settings"].get("boot"),
                      "kind": "measured", "provenance": report_provenance.for_figure(prov),
                      "method": prov.get("how"), "note": doc["settings"].get("note"),
                      "rows": rows, "dma": dma,
                      "excluded_code": doc["settings"].get("excluded_code", [])})
    return {"available": True, "items": items, "perf": _perf(outdir)}


def _perf(outdir: Path) -> dict | None:
    """The OS agent's perf windows (counters/perf-boot.json, seedfw.counters.perf_live)."""
    path = Path(outdir) / "counters" / "perf-boot.json"
    try:
        doc = json.loads(path.read_text())
        rows = [{"window": w, "pmu": pmu, **vals}
                for w, pmus in doc["readings"]["windows"].items() for pmu, vals in pmus.items()]
        return {"source": path.name, "provenance": report_provenance.for_figure(doc["provenance"]),
                "rows": rows, "absent": doc["settings"].get("absent", {})}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


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


def markdown(report: dict) -> list[str]:
    sec = report.get("bandwidth", {}).get("emulated")
    if not sec:
        return []
    lines = ["### Memory traffic per boot phase (measured, emulated)", ""]
    if not sec["available"]:
        return lines + [f"_{sec['note']}_", ""]
    for item in sec["items"]:
        if "error" in item:
            lines += [f"- {item['source']}: **{item['error']}**", ""]
            continue
        lines += [f"**{item['source']}** ({item['boot']}) — kind: measured "
                  f"({item['provenance']['label']}); {item['method']}.", ""]
        lines.append("| " + " | ".join(_header()) + " |")
        lines.append("|" + "---|" * 3 + "---:|" * (len(COLUMNS) + 1))
        for r in item["rows"]:
            lines.append("| " + " | ".join(_cells(r)) + " |")
        d = item["dma"]
        lines += ["", f"- device DMA (virtio-blk, from QEMU trace events, not CPU traffic): "
                      f"{_num(d['read_bytes'])} B read in {d['reads']} requests, "
                      f"{_num(d['write_bytes'])} B written",
                  f"- {item['note']}",
                  "- excluded (counted apart, not in the phase's figures): "
                  + "; ".join(item["excluded_code"]), ""]
    if sec.get("perf"):
        lines += [f"- {t}" for t in _perf_lines(sec["perf"])] + [""]
    return lines


def plot(item: dict) -> str:
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


def html(report: dict) -> list[str]:
    sec = report.get("bandwidth", {}).get("emulated")
    if not sec:
        return []
    e = escape
    h = ["<h3>Memory traffic per boot phase (measured, emulated)</h3>"]
    if not sec["available"]:
        return h + [f'<p class="na">{e(sec["note"])}</p>']
    for item in sec["items"]:
        if "error" in item:
            h.append(f'<p class="warn">{e(item["source"])}: {e(item["error"])}</p>')
            continue
        h.append(f"<p><b>{e(item['source'])}</b> ({e(str(item['boot']))}): "
                 f'<span class="kind-measured">measured ({e(item["provenance"]["label"])})'
                 f"</span>; {e(item['method'])}.</p>")
        name = e(Path(item["source"]).stem)          # unique per document in <out>/counters
        h.append(f'<figure class="plot" id="plot-traffic-{name}" '
                 f'data-plot="traffic-{name}">{plot(item)}</figure>')
        head = "".join(f"<th>{e(c)}</th>" for c in _header())
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in _cells(r)) + "</tr>"
                       for r in item["rows"])
        h.append(f"<table><tr>{head}</tr>{body}</table>")
        d = item["dma"]
        h.append(f"<p>device DMA (virtio-blk, from QEMU trace events, not CPU traffic): "
                 f"{_num(d['read_bytes'])} B read in {d['reads']} requests, "
                 f"{_num(d['write_bytes'])} B written</p>")
        h.append(f"<p>{e(item['note'])}</p>")
        h.append("<p>excluded (counted apart): " + e("; ".join(item["excluded_code"])) + "</p>")
    if sec.get("perf"):
        h += [f"<p>{e(t)}</p>" for t in _perf_lines(sec["perf"])]
    return h


def label(doc: dict) -> str:
    return counter_provenance.label(doc.get("provenance"))
