"""The report's `compression` section (reference page: the class docstring)."""

from __future__ import annotations

from ..format import (bar_chart, fig, html_table, kind_span, missing, num, pct_plain, plot,
                      signed, table)
from ..safe import Md, html, join
from .base import Inputs, Section, computed, percent, unavailable

SOURCE = "compression.json"


class Compression(Section):
    """What the compression stage did to each ELF section it compressed, and what it gained.

    Per section (owner and name, the image it went into, blocks, block size): raw bytes, the
    container without and with the shared dictionary, the one stored ("chosen"), the dictionary
    bytes charged to this section alone, the dictionary's net gain for it (no dict − with dict −
    dictionary) and the net gain (raw − stored − dictionary bytes), stored as % of raw. Totals
    charge a shared dictionary once. All computed from <out>/compression.json
    (seedfw.compress.sections.write_report; field aliases in report/inputs.read_compression).

    report.html: a "compression" bar chart (raw, no dict, with dict, stored, dictionary).
    Unavailable when compression.json is missing or lists no section.
    """

    name = "compression"

    def data(self, inputs: Inputs) -> dict:
        rows, summary, note = inputs.compression
        if rows is None:
            return unavailable(note)
        items = []
        for r in rows:
            gain = r["raw"] - r["compressed"] - r["dict_bytes"]
            opt = {k: None if r[k] is None else computed(r[k], source=SOURCE)
                   for k in ("compressed_no_dict", "compressed_dict")}
            items.append(dict(
                section=r["section"], image=r["image"], blocks=r["blocks"],
                block_size=r["block_size"], uses_dict=r["uses_dict"],
                raw=computed(r["raw"], source=SOURCE),
                compressed=computed(r["compressed"], source=SOURCE,
                                    note="container bytes stored"),
                **opt,
                dict_bytes=computed(r["dict_bytes"], source=SOURCE,
                                    note="dictionary bytes charged to this section alone"),
                dict_net_gain=None if r["dict_net_gain"] is None else
                computed(r["dict_net_gain"], source=SOURCE,
                         note="no_dict - with_dict - dictionary"),
                net_gain=computed(gain, source="raw - compressed - dict_bytes"),
                percent=computed(percent(r["compressed"], r["raw"]), "%",
                                 source="compressed / raw")))
        raw = sum(r["raw"] for r in rows)
        comp = sum(r["compressed"] for r in rows)
        dict_total = summary["dict_total"]
        totals = dict(raw=computed(raw, source=SOURCE), compressed=computed(comp, source=SOURCE),
                      dict_bytes=computed(dict_total, source=SOURCE,
                                          note="dictionary stored once for all sections using "
                                               "it"),
                      net_gain=computed(raw - comp - dict_total,
                                        source="raw - compressed - dict_bytes"),
                      percent=computed(percent(comp + dict_total, raw), "%",
                                       source="(compressed + dict_bytes) / raw"))
        return dict(available=True, items=items, totals=totals,
                    dictionary=summary["dictionary"])

    def markdown(self, part: dict) -> list[str]:
        lines = [Md("## Compression per section"), Md("")]
        if not part["available"]:
            return lines + missing(part)
        rows = [[c["section"], c["image"] or "–", fig(c["raw"]), fig(c["compressed_no_dict"]),
                 fig(c["compressed_dict"]), fig(c["compressed"]), fig(c["dict_bytes"]),
                 signed(c["dict_net_gain"]["value"]) if c["dict_net_gain"] else "–",
                 signed(c["net_gain"]["value"]), pct_plain(c["percent"]["value"]),
                 num(c["blocks"]), c["compressed"]["kind"]] for c in part["items"]]
        t = part["totals"]
        rows.append([Md("**total**"), "", fig(t["raw"]), "", "", fig(t["compressed"]),
                     fig(t["dict_bytes"]), "", signed(t["net_gain"]["value"]),
                     pct_plain(t["percent"]["value"]), "", t["compressed"]["kind"]])
        return lines + table(["section", "image", "raw", "no dict", "with dict", "stored",
                              "dict bytes", "dict net gain", "net gain", "stored %", "blocks",
                              "kind"], rows, set(range(2, 11))) + \
            [Md("Stored = the container the image carries (with or without the dictionary, "
                "whichever the compressor chose). Dict net gain = no dict − with dict − "
                "dictionary bytes: what the dictionary earns for this section alone. Net gain = "
                "raw − stored − dictionary bytes; the total row charges a shared dictionary "
                "once."), Md("")]

    def html(self, part: dict) -> str:
        h = [html("<h2>Compression per section</h2>"),
             plot("compression", self.plot(part), part.get("note", ""))]
        if part["available"]:
            h.append(html_table(
                ["section", "image", "raw", "no dict", "with dict", "stored", "dict bytes",
                 "net gain", "kind"],
                [[c["section"], c["image"] or "–", num(c["raw"]["value"]),
                  num(c["compressed_no_dict"]["value"]) if c["compressed_no_dict"] else "–",
                  num(c["compressed_dict"]["value"]) if c["compressed_dict"] else "–",
                  num(c["compressed"]["value"]), num(c["dict_bytes"]["value"]),
                  signed(c["net_gain"]["value"]), kind_span(c["compressed"]["kind"])]
                 for c in part["items"]], {2, 3, 4, 5, 6, 7}))
        return join(h, "\n")

    @staticmethod
    def plot(part: dict) -> str | None:
        if not part["available"]:
            return None
        groups = []
        for c in part["items"]:
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
        return bar_chart("Compression per section", groups, "bytes",
                         legend=("raw", "compressed", "dict"))
