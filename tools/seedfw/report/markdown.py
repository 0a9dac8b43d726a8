"""report.md: the CI summary (GitHub-flavoured Markdown tables).

Numbers are printed with thousands separators and nothing else (no rounding to KiB), so a
reader — or tests/test_report.py — can match every cell with report.json. Every table that
holds figures has a `kind` column or states the kind in its heading.
"""

from __future__ import annotations

from .provenance import describe, flagged, kind_text

KINDS_LINE = ("Kinds: **computed** = derived exactly from build artifacts; **estimated** = "
              "involves an assumption or a constant; **measured** = read back at run time or "
              "by a benchmark, always with where from: *live* (a board, through a debug probe), "
              "*emulated* (a guest in QEMU: emulator cycle counts, not a chip's), *recorded* "
              "(register values replayed from a file; *synthetic* = made up for tests, not "
              "captured from hardware), *benchmark*, or *provenance unknown*. \"for synthetic "
              "…\" marks figures made from synthetic inputs (e.g. filler model blobs).")


def num(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{int(value):,}"


def signed(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+,.2f}"
    return f"{value:+,d}"


def pct(value) -> str:
    return "–" if value is None else f"{value:+.2f} %"


def fig(f) -> str:
    return "–" if f is None else num(f["value"])


def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out + [""]


def render(report: dict) -> str:
    lines = [f"# seedfw report: {report['board']}", ""]
    if report.get("build_id"):
        lines += [f"Build id: `{report['build_id']}`", ""]
    lines += [KINDS_LINE, ""]
    from ..buildroot import report as os_report
    from . import cache as cache_report
    from . import traffic
    for part in (_images, _elfs, _compression, _deltas, _bandwidth, traffic.markdown,
                 os_report.markdown,
                 cache_report.markdown):
        lines += part(report)
    if report["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in report["notes"]] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _missing(part: dict) -> list[str]:
    return [f"_{part['note']}_", ""]


def _images(report) -> list[str]:
    part = report["images"]
    lines = ["## Images", ""]
    if not part["available"]:
        return lines + _missing(part)
    rows = []
    for i in part["items"]:
        check = {True: "matches", False: "**MISMATCH**", None: "not listed"}[
            i["sha256_matches_manifest"]]
        rows.append([i["file"], i["format"] or "–", fig(i["size"]), f"`{i['sha256']}`", check])
    rows.append(["**total**", "", fig(part["total"]), "", ""])
    return lines + ["Sizes computed from the files; sha256 of the bytes on disk.", ""] + \
        table(["image", "format", "size (bytes)", "sha256", "manifest"], rows, {2})


def _elfs(report) -> list[str]:
    part = report["elfs"]
    lines = ["## ELF sections", ""]
    if not part["available"]:
        return lines + _missing(part)
    for e in part["items"]:
        t = e["totals"]
        lines += [f"### {e['path']} ({e['machine']})", "",
                  f"ROM {num(t['rom']['value'])} · RAM {num(t['ram']['value'])} · loaded "
                  f"{num(t['alloc']['value'])} bytes ({e['kind']}, from the section headers)", ""]
        rows = [[s["name"], s["type"], s["flags"], f"0x{s['address']:x}", num(s["size"]),
                 s["class"] or "–"] for s in e["sections"] if s["class"]]
        lines += table(["section", "type", "flags", "address", "size (bytes)", "class"], rows, {4})
        for w in e["warnings"]:
            lines += [f"- warning: {w}"]
        if e["warnings"]:
            lines.append("")
    return lines


def _compression(report) -> list[str]:
    part = report["compression"]
    lines = ["## Compression per section", ""]
    if not part["available"]:
        return lines + _missing(part)
    rows = [[c["section"], c["image"] or "–", fig(c["raw"]), fig(c["compressed_no_dict"]),
             fig(c["compressed_dict"]), fig(c["compressed"]), fig(c["dict_bytes"]),
             signed(c["dict_net_gain"]["value"]) if c["dict_net_gain"] else "–",
             signed(c["net_gain"]["value"]), _pct_plain(c["percent"]["value"]),
             num(c["blocks"]), c["compressed"]["kind"]] for c in part["items"]]
    t = part["totals"]
    rows.append(["**total**", "", fig(t["raw"]), "", "", fig(t["compressed"]),
                 fig(t["dict_bytes"]), "", signed(t["net_gain"]["value"]),
                 _pct_plain(t["percent"]["value"]), "", t["compressed"]["kind"]])
    return lines + table(["section", "image", "raw", "no dict", "with dict", "stored",
                          "dict bytes", "dict net gain", "net gain", "stored %", "blocks",
                          "kind"], rows, set(range(2, 11))) + \
        ["Stored = the container the image carries (with or without the dictionary, whichever "
         "the compressor chose). Dict net gain = no dict − with dict − dictionary bytes: what "
         "the dictionary earns for this section alone. Net gain = raw − stored − dictionary "
         "bytes; the total row charges a shared dictionary once.", ""]


def _pct_plain(value) -> str:
    return "–" if value is None else f"{value:.2f} %"


def _deltas(report) -> list[str]:
    part = report["deltas"]
    lines = ["## Size deltas", ""]
    if not part["available"]:
        return lines + _missing(part)
    lines += [f"Against baseline `{part['baseline']}` (computed from the files).", ""]
    rows = [[i["file"], i["status"], fig(i["old"]), fig(i["new"]), signed(i["delta"]["value"]),
             pct(i["percent"]["value"] if i["percent"] else None)] for i in part["images"]]
    lines += table(["image", "status", "baseline", "now", "delta", "%"], rows, {2, 3, 4, 5})
    for e in part["elfs"]:
        lines += [f"### {e['file']}", ""]
        rows = [[f"total {k}", num(c["old"]), num(c["new"]), signed(c["delta"]), pct(c["percent"])]
                for k, c in e["totals"].items()]
        rows += [[s["name"], num(s["old"]), num(s["new"]), signed(s["delta"]), pct(s["percent"])]
                 for s in e["sections"]]
        lines += table(["section", "baseline", "now", "delta", "%"], rows, {1, 2, 3, 4})
        if e["symbols_available"]:
            sm = e["summary"]
            lines += [f"Symbols: {sm['grown']} grown ({signed(sm['grown_bytes'])}), {sm['shrunk']} "
                      f"shrunk ({signed(sm['shrunk_bytes'])}), {sm['new']} new "
                      f"({signed(sm['new_bytes'])}), {sm['gone']} gone ({signed(sm['gone_bytes'])}).",
                      ""]
            rows = [[kind, s["name"], s["section"], num(s["old"]), num(s["new"]), signed(s["delta"])]
                    for kind, syms in e["symbols"].items() for s in syms[:5]]
            if rows:
                lines += table(["change", "symbol", "section", "baseline", "now", "delta"], rows,
                               {3, 4, 5})
    return lines


def bandwidth_rows(bw: dict) -> list[tuple[str, dict]]:
    """(label, figure) pairs of the bandwidth table; html.py draws the same rows."""
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


def kind_cell(f: dict) -> str:
    """The kind with its provenance / synthetic qualifier, bold unless plainly computed."""
    text = kind_text(f)
    return f"**{text}**" if flagged(f) else text


def settings_text(settings: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in settings.items())


def _bandwidth(report) -> list[str]:
    bw = report["bandwidth"]
    lines = ["## Bandwidth", ""]
    rows = [[label, num(f["value"]), f["unit"], kind_cell(f), f.get("source", "")]
            for label, f in bandwidth_rows(bw)]
    lines += table(["figure", "value", "unit", "kind", "source"], rows, {1})
    for key in ("boot", "images", "models", "measured"):
        if not bw[key]["available"]:
            lines.append(f"- {key}: _{bw[key]['note']}_")
        elif bw[key].get("warning"):
            lines.append(f"- {key}: **{bw[key]['warning']}**")
    if bw["models"]["available"]:
        lines.append(f"- models: {next(iter(bw['models']['per_inference'].values()))['note']}")
    m = bw["measured"]
    if m["available"]:
        lines.append(f"- measured: {m['source']} is {describe(m['provenance'])}")
        if m["settings"]:
            lines.append(f"- counter settings (configuration, not measurements): "
                         f"{settings_text(m['settings'])}")
    return lines + [""]
