"""report.html: one self-contained page (inline CSS, inline SVG plots we draw ourselves).

No scripts, fonts, stylesheets or images are fetched: CI artifacts are opened offline and from
archives, and a page that phones home would leak build data. The SVG is written by hand
(horizontal bar charts only) so no plotting library is needed; every bar carries a <title>
with its exact value and kind. Plots: section sizes per ELF, compression per section,
bandwidth, size deltas. Inline <svg> in HTML needs no xmlns, so the page holds no URL at all.
"""

from __future__ import annotations

from html import escape

from .markdown import KINDS_LINE, bandwidth_rows, num, pct, settings_text, signed
from .provenance import describe, kind_text

COLOURS = {"ROM": "#4e79a7", "ROM+RAM": "#f28e2b", "RAM": "#59a14f", "raw": "#9aa7b4",
           "compressed": "#4e79a7", "dict": "#e15759", "grow": "#e15759", "shrink": "#59a14f",
           "computed": "#4e79a7", "estimated": "#f28e2b", "measured": "#59a14f"}
CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.2em .5em}
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.85em}
.kind-estimated{color:#b35c00;font-weight:bold}.kind-measured{color:#2a7a2a;font-weight:bold}
.na{color:#777;font-style:italic}figure.plot{margin:1em 0}svg text{font-size:12px}
span[data-synthetic]{color:#b00020;font-weight:bold}.warn{color:#b00020;font-weight:bold}
"""
LABEL_W, BAR_W, ROW_H = 300, 480, 18
LABEL_CHARS = 44          # ~6.5 px per character at 12 px: what fits in LABEL_W


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"


def bar_chart(title: str, groups: list[tuple[str, list[tuple[str, float, str, str]]]],
              unit: str, per_group_scale: bool = False, legend: tuple[str, ...] = ()) -> str:
    """Horizontal bars. groups: (heading, [(label, value, colour key, tooltip)]). Negative
    values (deltas) grow left from a centre line."""
    rows_total = sum(len(bars) + (1 if heading else 0) for heading, bars in groups)
    height = 28 + ROW_H * rows_total + 8 + (ROW_H if legend else 0)
    width = LABEL_W + BAR_W + 110
    every = [abs(v) for _, bars in groups for _, v, _, _ in bars] or [1]
    diverging = any(v < 0 for _, bars in groups for _, v, _, _ in bars)
    parts = [f'<svg class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
             f'<text x="0" y="16" font-weight="bold">{escape(title)} ({escape(unit)})</text>']
    y = 28
    for heading, bars in groups:
        if heading:
            parts.append(f'<text x="0" y="{y + 13}" font-style="italic">{escape(heading)}</text>')
            y += ROW_H
        top = max([abs(v) for _, v, _, _ in bars] or [1]) if per_group_scale else max(every)
        top = top or 1
        half = BAR_W / 2 if diverging else 0
        for label, value, colour, tip in bars:
            length = (BAR_W - half) * abs(value) / top
            x = LABEL_W + half - (length if value < 0 else 0)
            parts.append(f'<text x="{LABEL_W - 6}" y="{y + 13}" text-anchor="end">'
                         f'{escape(_short(label))}</text>')
            parts.append(f'<rect x="{x:.1f}" y="{y + 2}" width="{max(length, 0.5):.1f}" '
                         f'height="{ROW_H - 4}" fill="{COLOURS.get(colour, "#888")}">'
                         f'<title>{escape(tip)}</title></rect>')
            text = signed(value) if diverging else num(value)
            tx = LABEL_W + half + (length if value >= 0 else 0) + 4
            parts.append(f'<text x="{tx:.1f}" y="{y + 13}">{escape(text)}</text>')
            y += ROW_H
    if diverging:
        parts.append(f'<line x1="{LABEL_W + BAR_W / 2}" y1="26" x2="{LABEL_W + BAR_W / 2}" '
                     f'y2="{y}" stroke="#444"/>')
    x = LABEL_W
    for key in legend:           # colour key under the bars
        parts.append(f'<rect x="{x}" y="{y + 5}" width="10" height="10" '
                     f'fill="{COLOURS.get(key, "#888")}"/><text x="{x + 14}" y="{y + 14}">'
                     f'{escape(key)}</text>')
        x += 24 + 7 * len(key)
    parts.append("</svg>")
    return "".join(parts)


def _plot(name: str, svg: str | None, missing: str) -> str:
    body = svg if svg else f'<p class="na">{escape(missing)}</p>'
    return f'<figure class="plot" id="plot-{name}" data-plot="{name}">{body}</figure>'


def plots(report: dict) -> dict[str, str | None]:
    """SVG per plot name, None when the data is not available."""
    out: dict[str, str | None] = {}
    elfs = report["elfs"]
    if elfs["available"]:
        groups = []
        for e in elfs["items"]:
            secs = sorted((s for s in e["sections"] if s["class"] and s["size"]),
                          key=lambda s: -s["size"])[:12]
            groups.append((f"{e['path']}", [(s["name"], s["size"], s["class"],
                                              f"{s['name']}: {s['size']:,} bytes, {s['class']}"
                                              f", computed") for s in secs]))
        out["section-sizes"] = bar_chart("Section sizes per ELF (each ELF to its own scale)",
                                         groups, "bytes", True, ("ROM", "ROM+RAM", "RAM"))
    else:
        out["section-sizes"] = None
    comp = report["compression"]
    if comp["available"]:
        groups = []
        for c in comp["items"]:
            label = c["section"] + (f" ({c['image']})" if c["image"] else "")
            bars = [("raw", c["raw"]["value"], "raw", f"raw {c['raw']['value']:,} bytes")]
            if c["compressed_no_dict"]:
                v = c["compressed_no_dict"]["value"]
                bars.append(("compressed, no dict", v, "raw", f"no dictionary {v:,} bytes"))
            if c["compressed_dict"]:
                v = c["compressed_dict"]["value"]
                bars.append(("compressed, with dict", v, "raw", f"with dictionary {v:,} bytes"))
            bars.append(("stored", c["compressed"]["value"], "compressed",
                         f"stored container {c['compressed']['value']:,} bytes"))
            if c["dict_bytes"]["value"]:
                bars.append(("dictionary stored", c["dict_bytes"]["value"], "dict",
                             f"dictionary {c['dict_bytes']['value']:,} bytes"))
            groups.append((label, bars))
        out["compression"] = bar_chart("Compression per section", groups, "bytes",
                                       legend=("raw", "compressed", "dict"))
    else:
        out["compression"] = None
    groups = bandwidth_groups(report["bandwidth"])
    out["bandwidth"] = bar_chart("Bandwidth", groups, "bytes",
                                 legend=("computed", "estimated", "measured")) if groups else None
    deltas = report["deltas"]
    if deltas["available"]:
        groups = [("images", [(i["file"], i["delta"]["value"],
                               "grow" if i["delta"]["value"] > 0 else "shrink",
                               f"{i['file']}: {signed(i['delta']['value'])} bytes")
                              for i in deltas["images"]])]
        for e in deltas["elfs"]:
            groups.append((e["file"], [(s["name"], s["delta"],
                                        "grow" if s["delta"] > 0 else "shrink",
                                        f"{s['name']}: {signed(s['delta'])} bytes")
                                       for s in e["sections"]]))
        groups = [g for g in groups if g[1]]
        out["size-deltas"] = bar_chart("Size deltas vs baseline", groups, "bytes") \
            if groups else None
    else:
        out["size-deltas"] = None
    return out


def bandwidth_groups(bw: dict) -> list[tuple[str, list]]:
    """Byte figures of the bandwidth part, grouped so labels stay short; colour = kind."""
    def bar(label, f):
        return (label, f["value"], f["kind"],
                f"{label}: {f['value']:,} {f['unit']}, {kind_text(f)}")
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


def _table(header, rows, numeric=()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f'<td class="n">{escape(str(c))}</td>' if i in numeric else f"<td>{c}</td>"
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _kind(kind: str) -> str:
    return f'<span class="kind-{kind}">{escape(kind)}</span>'


def _kind_fig(f: dict) -> str:
    """A figure's kind with its provenance / synthetic qualifier (report/provenance.py)."""
    extra = f' data-synthetic="{escape(f["synthetic"])}"' if f.get("synthetic") else ""
    return f'<span class="kind-{f["kind"]}"{extra}>{escape(kind_text(f))}</span>'


def render(report: dict) -> str:
    p = plots(report)
    e = escape
    h = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         f"<title>seedfw report: {e(report['board'])}</title><style>{CSS}</style></head><body>",
         f"<h1>seedfw report: {e(report['board'])}</h1>",
         f"<p>{e(KINDS_LINE.replace('**', ''))}</p>"]
    img = report["images"]
    h.append("<h2>Images</h2>")
    if img["available"]:
        h.append(_table(["image", "format", "size (bytes)", "sha256", "manifest"],
                        [[e(i["file"]), e(i["format"] or "–"), num(i["size"]["value"]),
                          f"<code>{i['sha256']}</code>",
                          {True: "matches", False: "<b>MISMATCH</b>", None: "not listed"}[
                              i["sha256_matches_manifest"]]] for i in img["items"]], {2}))
    else:
        h.append(f'<p class="na">{e(img["note"])}</p>')
    h.append("<h2>Section sizes</h2>")
    h.append(_plot("section-sizes", p["section-sizes"], report["elfs"].get("note", "")))
    if report["elfs"]["available"]:
        for x in report["elfs"]["items"]:
            t = x["totals"]
            h.append(f"<h3>{e(x['path'])} ({e(x['machine'])})</h3><p>ROM "
                     f"{num(t['rom']['value'])} · RAM {num(t['ram']['value'])} · loaded "
                     f"{num(t['alloc']['value'])} bytes ({_kind(x['kind'])})</p>")
            h.append(_table(["section", "type", "flags", "address", "size", "class"],
                            [[e(s["name"]), s["type"], s["flags"], f"0x{s['address']:x}",
                              num(s["size"]), s["class"]] for s in x["sections"] if s["class"]],
                            {4}))
            h += [f"<p>warning: {e(w)}</p>" for w in x["warnings"]]
    comp = report["compression"]
    h.append("<h2>Compression per section</h2>")
    h.append(_plot("compression", p["compression"], comp.get("note", "")))
    if comp["available"]:
        h.append(_table(["section", "image", "raw", "no dict", "with dict", "stored",
                         "dict bytes", "net gain", "kind"],
                        [[e(c["section"]), e(c["image"] or "–"), num(c["raw"]["value"]),
                          num(c["compressed_no_dict"]["value"]) if c["compressed_no_dict"]
                          else "–",
                          num(c["compressed_dict"]["value"]) if c["compressed_dict"] else "–",
                          num(c["compressed"]["value"]), num(c["dict_bytes"]["value"]),
                          signed(c["net_gain"]["value"]), _kind(c["compressed"]["kind"])]
                         for c in comp["items"]], {2, 3, 4, 5, 6, 7}))
    d = report["deltas"]
    h.append("<h2>Size deltas</h2>")
    h.append(_plot("size-deltas", p["size-deltas"], d.get("note", "no size changes")))
    if d["available"]:
        h.append(f"<p>Against baseline <code>{e(d['baseline'])}</code>.</p>")
        h.append(_table(["image", "status", "baseline", "now", "delta", "%"],
                        [[e(i["file"]), i["status"], num(i["old"]["value"]) if i["old"] else "–",
                          num(i["new"]["value"]) if i["new"] else "–",
                          signed(i["delta"]["value"]),
                          pct(i["percent"]["value"] if i["percent"] else None)]
                         for i in d["images"]], {2, 3, 4, 5}))
    bw = report["bandwidth"]
    h.append("<h2>Bandwidth</h2>")
    h.append(_plot("bandwidth", p["bandwidth"], "no byte figures available"))
    h.append(_table(["figure", "value", "unit", "kind", "source"],
                    [[e(label), num(f["value"]), e(f["unit"]), _kind_fig(f),
                      e(f.get("source", ""))] for label, f in bandwidth_rows(bw)], {1}))
    for key in ("models", "measured"):
        if bw[key]["available"] and bw[key].get("warning"):
            h.append(f'<p class="warn">{e(key)}: {e(bw[key]["warning"])}</p>')
    m = bw["measured"]
    if m["available"]:
        h.append(f"<p>measured: {e(m['source'])} is {e(describe(m['provenance']))}</p>")
        if m["settings"]:
            h.append(f"<p>counter settings (configuration, not measurements): "
                     f"{e(settings_text(m['settings']))}</p>")
    from . import traffic                                # invoke run/boot --counters
    h += traffic.html(report)
    from ..buildroot import report as os_report          # the OS, when the build made a rootfs
    h += os_report.html(report)
    from . import cache as cache_report
    h += cache_report.html(report)
    if report["notes"]:
        h.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in report["notes"])
                 + "</ul>")
    h.append("</body></html>\n")
    return "\n".join(h)
