"""Formatting helpers every report section shares (the one place for them): numbers, Markdown
and HTML tables, kind labels, and the hand-drawn SVG bar chart of report.html.

Numbers are printed with thousands separators and nothing else (no rounding to KiB), so a
reader — or tests/test_report.py — can match every cell with report.json.

The SVG is written by hand (horizontal bar charts only) so no plotting library is needed; every
bar carries a <title> with its exact value and kind. Inline <svg> in HTML needs no xmlns, so
the page holds no URL at all.
"""

from __future__ import annotations

from markupsafe import Markup

from .provenance import flagged, kind_text
from .safe import Md, html, join, md, mdf

KINDS_LINE = ("Kinds: **computed** = derived exactly from build artifacts; **estimated** = "
              "involves an assumption or a constant; **measured** = read back at run time or "
              "by a benchmark, always with where from: *live* (a board, through a debug probe), "
              "*emulated* (a guest in QEMU: emulator cycle counts, not a chip's), *recorded* "
              "(register values replayed from a file; *synthetic* = made up for tests, not "
              "captured from hardware), *benchmark*, or *provenance unknown*. \"for synthetic "
              "…\" marks figures made from synthetic inputs (e.g. filler model blobs).")


# --- numbers -------------------------------------------------------------------------------

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
    """A percentage change: always signed."""
    return "–" if value is None else f"{value:+.2f} %"


def pct_plain(value) -> str:
    """A percentage share: no sign."""
    return "–" if value is None else f"{value:.2f} %"


def fig(f) -> str:
    """A figure's value, or – for an absent figure."""
    return "–" if f is None else num(f["value"])


def settings_text(settings: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in settings.items())


# --- Markdown ------------------------------------------------------------------------------
# Every cell and line goes through report/safe.py: outside text is escaped (md), seedfw's own
# Markdown is marked (Md) — see safe.py for why this is by construction.

def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[Md]:
    """A GitHub-flavoured Markdown table (columns in `right` right-aligned), then a blank line.
    Cells are text (escaped here: a `|` or newline cannot break the table) unless they are Md."""
    out = [Md("| " + " | ".join(md(h) for h in header) + " |"),
           Md("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")]
    out += [Md("| " + " | ".join(md(c) for c in row) + " |") for row in rows]
    return out + [Md("")]


def missing(part: dict) -> list[Md]:
    """The Markdown body of a section whose input is missing: its note, in italics."""
    return [mdf("_{}_", part["note"]), Md("")]


def kind_cell(f: dict) -> Md:
    """The kind with its provenance / synthetic qualifier, bold unless plainly computed."""
    text = kind_text(f)
    return mdf("**{}**", text) if flagged(f) else md(text)


# --- HTML ----------------------------------------------------------------------------------
# Built only by safe.html (Jinja2, autoescape): a str value is always shown as text; Markup
# (what an earlier safe.html returned) is kept as HTML.

_TABLE = ('<table><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr>'
          '{% for row in rows %}<tr>{% for c in row %}{% if loop.index0 in numeric %}'
          '<td class="n">{{ c }}</td>{% else %}<td>{{ c }}</td>{% endif %}{% endfor %}</tr>'
          '{% endfor %}</table>')


def html_table(header, rows, numeric=()) -> Markup:
    """An HTML table; every cell is text (escaped) unless it is Markup from safe.html; columns
    in `numeric` are right-aligned."""
    return html(_TABLE, header=header, rows=rows, numeric=set(numeric))


def kind_span(kind: str) -> Markup:
    return html('<span class="kind-{{ k }}">{{ k }}</span>', k=kind)


def kind_fig(f: dict) -> Markup:
    """A figure's kind with its provenance / synthetic qualifier (report/provenance.py)."""
    return html('<span class="kind-{{ kind }}"{% if syn %} data-synthetic="{{ syn }}"{% endif %}>'
                '{{ text }}</span>', kind=f["kind"], syn=f.get("synthetic"), text=kind_text(f))


def plot(name: str, svg, missing_text: str) -> Markup:
    """A named plot, or the reason it is missing."""
    return html('<figure class="plot" id="plot-{{ name }}" data-plot="{{ name }}">{% if svg %}'
                '{{ svg }}{% else %}<p class="na">{{ why }}</p>{% endif %}</figure>',
                name=name, svg=svg, why=missing_text)


COLOURS = {"ROM": "#4e79a7", "ROM+RAM": "#f28e2b", "RAM": "#59a14f", "raw": "#9aa7b4",
           "compressed": "#4e79a7", "dict": "#e15759", "grow": "#e15759", "shrink": "#59a14f",
           "computed": "#4e79a7", "estimated": "#f28e2b", "measured": "#59a14f"}
LABEL_W, BAR_W, ROW_H = 300, 480, 18
LABEL_CHARS = 44          # ~6.5 px per character at 12 px: what fits in LABEL_W


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"


_SVG_HEAD = ('<svg class="chart" width="{{ w }}" height="{{ h }}" viewBox="0 0 {{ w }} {{ h }}" '
             'role="img" aria-label="{{ title }}"><text x="0" y="16" font-weight="bold">'
             '{{ title }} ({{ unit }})</text>')
_SVG_HEADING = '<text x="0" y="{{ y }}" font-style="italic">{{ text }}</text>'
_SVG_BAR = ('<text x="{{ lx }}" y="{{ ty }}" text-anchor="end">{{ label }}</text>'
            '<rect x="{{ "%.1f"|format(x) }}" y="{{ ry }}" width="{{ "%.1f"|format(w) }}" '
            'height="{{ rh }}" fill="{{ fill }}"><title>{{ tip }}</title></rect>'
            '<text x="{{ "%.1f"|format(tx) }}" y="{{ ty }}">{{ value }}</text>')
_SVG_AXIS = '<line x1="{{ x }}" y1="26" x2="{{ x }}" y2="{{ y }}" stroke="#444"/>'
_SVG_KEY = ('<rect x="{{ x }}" y="{{ y + 5 }}" width="10" height="10" fill="{{ fill }}"/>'
            '<text x="{{ x + 14 }}" y="{{ y + 14 }}">{{ key }}</text>')


def bar_chart(title: str, groups: list[tuple[str, list[tuple[str, float, str, str]]]],
              unit: str, per_group_scale: bool = False, legend: tuple[str, ...] = ()) -> Markup:
    """Horizontal bars. groups: (heading, [(label, value, colour key, tooltip)]). Negative
    values (deltas) grow left from a centre line. Every piece is a safe.html template."""
    rows_total = sum(len(bars) + (1 if heading else 0) for heading, bars in groups)
    height = 28 + ROW_H * rows_total + 8 + (ROW_H if legend else 0)
    width = LABEL_W + BAR_W + 110
    every = [abs(v) for _, bars in groups for _, v, _, _ in bars] or [1]
    diverging = any(v < 0 for _, bars in groups for _, v, _, _ in bars)
    parts = [html(_SVG_HEAD, w=width, h=height, title=title, unit=unit)]
    y = 28
    for heading, bars in groups:
        if heading:
            parts.append(html(_SVG_HEADING, y=y + 13, text=heading))
            y += ROW_H
        top = max([abs(v) for _, v, _, _ in bars] or [1]) if per_group_scale else max(every)
        top = top or 1
        half = BAR_W / 2 if diverging else 0
        for label, value, colour, tip in bars:
            length = (BAR_W - half) * abs(value) / top
            parts.append(html(
                _SVG_BAR, lx=LABEL_W - 6, ty=y + 13, label=_short(label), ry=y + 2,
                x=LABEL_W + half - (length if value < 0 else 0), w=max(length, 0.5),
                rh=ROW_H - 4, fill=COLOURS.get(colour, "#888"), tip=tip,
                tx=LABEL_W + half + (length if value >= 0 else 0) + 4,
                value=signed(value) if diverging else num(value)))
            y += ROW_H
    if diverging:
        parts.append(html(_SVG_AXIS, x=LABEL_W + BAR_W / 2, y=y))
    x = LABEL_W
    for key in legend:           # colour key under the bars
        parts.append(html(_SVG_KEY, x=x, y=y, fill=COLOURS.get(key, "#888"), key=key))
        x += 24 + 7 * len(key)
    parts.append(html("</svg>"))
    return join(parts)
