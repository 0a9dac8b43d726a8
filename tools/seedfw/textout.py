"""Tables for the terminal that stay readable at 80 columns and when piped.

A table whose natural width fits is printed as aligned columns. One that does not becomes one
record per row, the way `git log` or `systemctl status` print: the row's first cells aligned on
its first line, the others after it, indented, packed whole into lines that fit. A cell is
never cut or split across lines, so a pipe into grep sees every value on one line. `--json`
stays the machine interface; this is for people.
"""

from __future__ import annotations

import shutil

INDENT = "    "
GAP = "  "


def width() -> int:
    """The terminal's width ($COLUMNS first); 80 when stdout is not a terminal."""
    return shutil.get_terminal_size((80, 24)).columns


def natural_width(rows: list[tuple], header: tuple | None = None) -> int:
    table = ([header] if header else []) + [tuple(map(str, r)) for r in rows]
    if not table:
        return 0
    cols = len(table[0])
    return sum(max(len(str(r[i])) for r in table) for i in range(cols)) + len(GAP) * (cols - 1)


def aligned(rows: list[tuple], header: tuple | None = None) -> list[str]:
    table = ([header] if header else []) + [tuple(map(str, r)) for r in rows]
    if not table:
        return []
    cols = len(table[0])
    widths = [max(len(r[i]) for r in table) for i in range(cols)]
    return [GAP.join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]


def records(rows: list[tuple], first: int, labels: tuple = (), cols: int | None = None) -> list[str]:
    """One record per row: cells [0, first) aligned on the first line, the rest ("label value"
    when the column has a label) packed into indented lines of at most `cols` characters."""
    cols = cols or width()
    rows = [tuple("" if c is None else str(c) for c in r) for r in rows]
    heads = [r[:first] for r in rows]
    widths = [max((len(h[i]) for h in heads), default=0) for i in range(first)]
    out = []
    for row in rows:
        out.append(GAP.join(c.ljust(w) for c, w in zip(row[:first], widths)).rstrip())
        line = ""
        for i, cell in enumerate(row[first:], start=first):
            if not cell:
                continue
            label = labels[i - first] if i - first < len(labels) else None
            text = f"{label} {cell}" if label else cell
            if line and len(INDENT) + len(line) + len(GAP) + len(text) > cols:
                out.append(INDENT + line)
                line = ""
            line = f"{line}{GAP}{text}" if line else text
        if line:
            out.append(INDENT + line)
    return out


def table(rows: list[tuple], header: tuple | None = None, first: int = 1, labels: tuple = (),
          cols: int | None = None) -> str:
    """Aligned columns when they fit in `cols` (default: the terminal's width), else records.
    Every cell is shown plain (seedfw.reading.plain): names read from files never reach
    the terminal with their control characters."""
    from .reading import plain
    rows = [tuple(plain(c) for c in r) for r in rows]
    cols = cols or width()
    if natural_width(rows, header) <= cols:
        return "\n".join(aligned(rows, header))
    return "\n".join(records(rows, first, labels, cols))

