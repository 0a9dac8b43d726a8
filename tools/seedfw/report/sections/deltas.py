"""The report's `deltas` section (reference page: the class docstring)."""

from __future__ import annotations

from pathlib import Path

from ... import stats
from ...stats import diff as stats_diff
from ...errors import SeedfwError
from .. import inputs as report_inputs
from ..format import bar_chart, fig, html_table, missing, num, pct, plot, signed, table
from ..safe import Md, html, join, mdcode, mdf
from .base import Inputs, Section, computed, unavailable

SOURCE = "file sizes (this build vs baseline)"


class Deltas(Section):
    """Size changes against a baseline build (`invoke report --baseline DIR`).

    Per image of either build: status (new / gone / changed / same), baseline and current size,
    the delta and its percentage. Per ELF present in both (matched by file name): the total and
    per-section changes (sections that did not change are left out) and the symbol changes
    (grown / shrunk / new / gone, seedfw.stats.diff). All computed from the files.

    report.html: a "size-deltas" diverging bar chart (images, then each ELF's sections).
    Unavailable without --baseline; a baseline that is a file or missing is an error.
    """

    name = "deltas"

    def data(self, inputs: Inputs) -> dict:
        baseline = inputs.baseline
        if baseline is None:
            return unavailable(report_inputs.not_available("no baseline given (--baseline DIR)"))
        baseline = Path(baseline)
        if baseline.exists() and not baseline.is_dir():
            raise SeedfwError("is a file; --baseline takes another build's output directory",
                              baseline)
        if not baseline.is_dir():
            raise SeedfwError("baseline output directory not found", baseline)
        base_manifest, _ = report_inputs.read_manifest(baseline)
        base_images, _ = report_inputs.list_images(baseline, base_manifest)
        images_rows, _ = inputs.images
        old = {r["file"]: r["size"] for r in base_images or []}
        new = {r["file"]: r["size"] for r in images_rows or []}
        images = []
        for name in list(new) + [n for n in old if n not in new]:
            ch = stats_diff.change(old.get(name), new.get(name))
            images.append(dict(
                file=name, status="new" if name not in old else "gone" if name not in new else
                "changed" if ch["delta"] else "same",
                old=None if ch["old"] is None else computed(ch["old"], source=SOURCE),
                new=None if ch["new"] is None else computed(ch["new"], source=SOURCE),
                delta=computed(ch["delta"], source=SOURCE),
                percent=None if ch["percent"] is None else
                computed(ch["percent"], "%", source=SOURCE)))
        base_elfs = {p.name: p for p in report_inputs.find_elfs(baseline, base_manifest)}
        elfs = []
        for path in inputs.elf_paths:
            if path.name not in base_elfs:
                continue
            d = stats_diff.diff_stats(stats.read_elf(base_elfs[path.name]),
                                      stats.read_elf(path), top=10)
            elfs.append(dict(file=path.name, kind="computed", totals=d["totals"],
                             sections=[s for s in d["sections"] if s["status"] != "same"],
                             symbols=d["symbols"], summary=d["summary"],
                             symbols_available=d["symbols_available"]))
        return dict(available=True, baseline=baseline.name, images=images, elfs=elfs)

    def markdown(self, part: dict) -> list[str]:
        lines = [Md("## Size deltas"), Md("")]
        if not part["available"]:
            return lines + missing(part)
        lines += [mdf("Against baseline {} (computed from the files).",
                      mdcode(part["baseline"])), Md("")]
        rows = [[i["file"], i["status"], fig(i["old"]), fig(i["new"]),
                 signed(i["delta"]["value"]),
                 pct(i["percent"]["value"] if i["percent"] else None)] for i in part["images"]]
        lines += table(["image", "status", "baseline", "now", "delta", "%"], rows, {2, 3, 4, 5})
        for e in part["elfs"]:
            lines += [mdf("### {}", e["file"]), Md("")]
            rows = [[f"total {k}", num(c["old"]), num(c["new"]), signed(c["delta"]),
                     pct(c["percent"])] for k, c in e["totals"].items()]
            rows += [[s["name"], num(s["old"]), num(s["new"]), signed(s["delta"]),
                      pct(s["percent"])] for s in e["sections"]]
            lines += table(["section", "baseline", "now", "delta", "%"], rows, {1, 2, 3, 4})
            if e["symbols_available"]:
                sm = e["summary"]
                lines += [mdf("Symbols: {} grown ({}), {} shrunk ({}), {} new ({}), {} gone "
                              "({}).", sm["grown"], signed(sm["grown_bytes"]), sm["shrunk"],
                              signed(sm["shrunk_bytes"]), sm["new"], signed(sm["new_bytes"]),
                              sm["gone"], signed(sm["gone_bytes"])), Md("")]
                rows = [[kind, s["name"], s["section"], num(s["old"]), num(s["new"]),
                         signed(s["delta"])]
                        for kind, syms in e["symbols"].items() for s in syms[:5]]
                if rows:
                    lines += table(["change", "symbol", "section", "baseline", "now", "delta"],
                                   rows, {3, 4, 5})
        return lines

    def html(self, part: dict) -> str:
        h = [html("<h2>Size deltas</h2>"),
             plot("size-deltas", self.plot(part), part.get("note", "no size changes"))]
        if part["available"]:
            h.append(html("<p>Against baseline <code>{{ b }}</code>.</p>", b=part["baseline"]))
            h.append(html_table(["image", "status", "baseline", "now", "delta", "%"],
                                [[i["file"], i["status"],
                                  num(i["old"]["value"]) if i["old"] else "–",
                                  num(i["new"]["value"]) if i["new"] else "–",
                                  signed(i["delta"]["value"]),
                                  pct(i["percent"]["value"] if i["percent"] else None)]
                                 for i in part["images"]], {2, 3, 4, 5}))
        return join(h, "\n")

    @staticmethod
    def plot(part: dict) -> str | None:
        if not part["available"]:
            return None
        groups = [("images", [(i["file"], i["delta"]["value"],
                               "grow" if i["delta"]["value"] > 0 else "shrink",
                               f"{i['file']}: {signed(i['delta']['value'])} bytes")
                              for i in part["images"]])]
        for e in part["elfs"]:
            groups.append((e["file"], [(s["name"], s["delta"],
                                        "grow" if s["delta"] > 0 else "shrink",
                                        f"{s['name']}: {signed(s['delta'])} bytes")
                                       for s in e["sections"]]))
        groups = [g for g in groups if g[1]]
        return bar_chart("Size deltas vs baseline", groups, "bytes") if groups else None
