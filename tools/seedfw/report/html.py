"""report.html: one self-contained page (inline CSS, inline SVG plots we draw ourselves).

No scripts, fonts, stylesheets or images are fetched: CI artifacts are opened offline and from
archives, and a page that phones home would leak build data. The page is the title and kinds
legend, each section's HTML (report/sections/, in registry order; a section absent from the
report is skipped; plots: section sizes per ELF, compression per section, size deltas,
bandwidth — drawn by report/format.bar_chart), then the notes.
"""

from __future__ import annotations

from html import escape

from .format import KINDS_LINE
from .sections import sections

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.2em .5em}
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.85em}
.kind-estimated{color:#b35c00;font-weight:bold}.kind-measured{color:#2a7a2a;font-weight:bold}
.na{color:#777;font-style:italic}figure.plot{margin:1em 0}svg text{font-size:12px}
span[data-synthetic]{color:#b00020;font-weight:bold}.warn{color:#b00020;font-weight:bold}
"""


def render(report: dict) -> str:
    e = escape
    h = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         f"<title>seedfw report: {e(report['board'])}</title><style>{CSS}</style></head><body>",
         f"<h1>seedfw report: {e(report['board'])}</h1>",
         f"<p>{e(KINDS_LINE.replace('**', ''))}</p>"]
    for section in sections():
        if section.name in report:
            h.append(section.html(report[section.name]))
    if report["notes"]:
        h.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in report["notes"])
                 + "</ul>")
    h.append("</body></html>\n")
    return "\n".join(h)
