"""Formatting helpers every report section shares (the one place for them): numbers, Markdown
and HTML tables, kind labels, and the hand-drawn SVG bar chart of report.html.

Numbers are printed with thousands separators and nothing else (no rounding to KiB), so a
reader — or tests/test_report.py — can match every cell with report.json.

The SVG is written by hand (horizontal bar charts only) so no plotting library is needed; every
bar carries a <title> with its exact value and kind. Inline <svg> in HTML needs no xmlns, so
the page holds no URL at all.
"""

from __future__ import annotations

from html import escape

from .provenance import flagged, kind_text

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

def table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    """A GitHub-flavoured Markdown table (columns in `right` right-aligned), then a blank line."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out + [""]


def missing(part: dict) -> list[str]:
    """The Markdown body of a section whose input is missing: its note, in italics."""
    return [f"_{part['note']}_", ""]


def kind_cell(f: dict) -> str:
    """The kind with its provenance / synthetic qualifier, bold unless plainly computed."""
    text = kind_text(f)
    return f"**{text}**" if flagged(f) else text


# --- HTML ----------------------------------------------------------------------------------

def html_table(header, rows, numeric=()) -> str:
    """An HTML table; cells are HTML already (escape them), columns in `numeric` are escaped
    here and right-aligned."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f'<td class="n">{escape(str(c))}</td>' if i in numeric else f"<td>{c}</td>"
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def kind_span(kind: str) -> str:
    return f'<span class="kind-{kind}">{escape(kind)}</span>'


def kind_fig(f: dict) -> str:
    """A figure's kind with its provenance / synthetic qualifier (report/provenance.py)."""
    extra = f' data-synthetic="{escape(f["synthetic"])}"' if f.get("synthetic") else ""
    return f'<span class="kind-{f["kind"]}"{extra}>{escape(kind_text(f))}</span>'


def plot(name: str, svg: str | None, missing_text: str) -> str:
    """A named plot, or the reason it is missing."""
    body = svg if svg else f'<p class="na">{escape(missing_text)}</p>'
    return f'<figure class="plot" id="plot-{name}" data-plot="{name}">{body}</figure>'


COLOURS = {"ROM": "#4e79a7", "ROM+RAM": "#f28e2b", "RAM": "#59a14f", "raw": "#9aa7b4",
           "compressed": "#4e79a7", "dict": "#e15759", "grow": "#e15759", "shrink": "#59a14f",
           "computed": "#4e79a7", "estimated": "#f28e2b", "measured": "#59a14f"}
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
