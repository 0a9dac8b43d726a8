"""The report's `elfs` section (reference page: the class docstring)."""

from __future__ import annotations

from ... import stats
from .. import inputs as report_inputs
from ..format import bar_chart, html_table, kind_span, missing, num, plot, table
from ..safe import Md, html, join, mdf
from .base import Inputs, Section, computed, unavailable

TOP_SYMBOLS = 5


class Elfs(Section):
    """Section, segment and symbol sizes of every target ELF of the build.

    Per ELF the build declares (manifest `elfs`, else the manifest's artifacts that are ARM/AArch64
    executables or shared objects, one per content hash; never a directory walk, so an ELF
    the build leaves in build/ that is not a product, e.g. the MCU's negative-control
    flash algorithm, is not listed): its sections (name, type, flags, address, size,
    file size, ROM/RAM class as Zephyr's size_report), program headers, the ROM / RAM / loaded /
    `size -A` totals, the 5 largest symbols and the reader's warnings. All computed from the ELF
    headers (seedfw.stats.read_elf); one `kind` for each whole table.

    report.md: a table of classed sections per ELF. report.html: a "section-sizes" bar chart
    (each ELF to its own scale, 12 largest sections) and the same tables.
    Unavailable when the build has no target ELF.
    """

    name = "elfs"

    def data(self, inputs: Inputs) -> dict:
        paths = inputs.elf_paths
        if not paths:
            return unavailable(report_inputs.not_available(
                "the manifest declares no target ELF" if inputs.manifest is not None else
                "no manifest.json (the build's declared outputs)"))
        items = []
        for path in paths:
            st = stats.read_elf(path, top=TOP_SYMBOLS)
            totals = {k: computed(st["totals"][k], source="ELF section headers")
                      for k in ("rom", "ram", "alloc", "size_a")}
            items.append(dict(
                file=st["file"], path=str(path.relative_to(inputs.outdir)),
                machine=st["elf"]["machine"], kind="computed",
                sections=[{k: s[k] for k in ("name", "type", "flags", "address", "size",
                                             "file_size", "class")}
                          for s in st["sections"] if s["type"] != "NULL"],
                segments=[{k: g[k] for k in ("type", "vaddr", "paddr", "file_size", "mem_size",
                                             "flags", "sections")} for g in st["segments"]],
                totals=totals, top_symbols=st["top_symbols"], warnings=st["warnings"]))
        return dict(available=True, items=items)

    def markdown(self, part: dict) -> list[str]:
        lines = [Md("## ELF sections"), Md("")]
        if not part["available"]:
            return lines + missing(part)
        for e in part["items"]:
            t = e["totals"]
            lines += [mdf("### {} ({})", e["path"], e["machine"]), Md(""),
                      mdf("ROM {} · RAM {} · loaded {} bytes ({}, from the section headers)",
                          num(t["rom"]["value"]), num(t["ram"]["value"]),
                          num(t["alloc"]["value"]), e["kind"]), Md("")]
            rows = [[s["name"], s["type"], s["flags"], f"0x{s['address']:x}", num(s["size"]),
                     s["class"] or "–"] for s in e["sections"] if s["class"]]
            lines += table(["section", "type", "flags", "address", "size (bytes)", "class"],
                           rows, {4})
            for w in e["warnings"]:
                lines += [mdf("- warning: {}", w)]
            if e["warnings"]:
                lines.append(Md(""))
        return lines

    def html(self, part: dict) -> str:
        h = [html("<h2>Section sizes</h2>"),
             plot("section-sizes", self.plot(part), part.get("note", ""))]
        if part["available"]:
            for x in part["items"]:
                t = x["totals"]
                h.append(html("<h3>{{ path }} ({{ machine }})</h3><p>ROM {{ rom }} · RAM {{ ram }}"
                              " · loaded {{ alloc }} bytes ({{ kind }})</p>", path=x["path"],
                              machine=x["machine"], rom=num(t["rom"]["value"]),
                              ram=num(t["ram"]["value"]), alloc=num(t["alloc"]["value"]),
                              kind=kind_span(x["kind"])))
                h.append(html_table(["section", "type", "flags", "address", "size", "class"],
                                    [[s["name"], s["type"], s["flags"],
                                      f"0x{s['address']:x}", num(s["size"]), s["class"]]
                                     for s in x["sections"] if s["class"]], {4}))
                h += [html("<p>warning: {{ w }}</p>", w=w) for w in x["warnings"]]
        return join(h, "\n")

    @staticmethod
    def plot(part: dict) -> str | None:
        if not part["available"]:
            return None
        groups = []
        for e in part["items"]:
            secs = sorted((s for s in e["sections"] if s["class"] and s["size"]),
                          key=lambda s: -s["size"])[:12]
            groups.append((f"{e['path']}", [(s["name"], s["size"], s["class"],
                                              f"{s['name']}: {s['size']:,} bytes, {s['class']}"
                                              f", computed") for s in secs]))
        return bar_chart("Section sizes per ELF (each ELF to its own scale)", groups, "bytes",
                         True, ("ROM", "ROM+RAM", "RAM"))
