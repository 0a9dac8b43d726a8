"""report.html: one self-contained page (inline CSS, inline SVG plots we draw ourselves).

No scripts, fonts, stylesheets or images are fetched: CI artifacts are opened offline and from
archives, and a page that phones home would leak build data. The page is the title and kinds
legend, each section's HTML (report/sections/, in registry order; a section absent from the
report is skipped; plots: section sizes per ELF, compression per section, size deltas,
bandwidth — drawn by report/format.bar_chart), then the notes.
"""

from __future__ import annotations

from .format import KINDS_LINE
from .safe import html, literal
from .sections import sections

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.2em .5em}
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.85em}
.kind-estimated{color:#b35c00;font-weight:bold}.kind-measured{color:#2a7a2a;font-weight:bold}
.na{color:#777;font-style:italic}figure.plot{margin:1em 0}svg text{font-size:12px}
span[data-synthetic]{color:#b00020;font-weight:bold}.warn{color:#b00020;font-weight:bold}
"""

# The page is one autoescaping template (report/safe.py): the board name, the notes and
# anything a section returns that is not Markup are shown as text. CSS is trusted source.
PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>seedfw report: \
{{ board }}</title><style>{{ css }}</style></head><body>
<h1>seedfw report: {{ board }}</h1>
<p>{{ kinds }}</p>
{% for part in parts %}{{ part }}
{% endfor %}{% if notes %}<h2>Notes</h2><ul>{% for n in notes %}<li>{{ n }}</li>{% endfor %}\
</ul>
{% endif %}</body></html>
"""


def render(report: dict) -> str:
    parts = [section.html(report[section.name]) for section in sections()
             if section.name in report]
    return str(html(PAGE, board=report["board"], css=literal(CSS), parts=parts,
                    kinds=KINDS_LINE.replace("**", ""), notes=report["notes"])) + "\n"
