"""The golden check: every figure a page marks, regenerated from the builds and compared.

The marker (one line, opening and closing tag on the same line, the figure's text between them):

    <!-- figure: PRODUCER board=BOARD [fmt=grouped|plain] [PARAM=VALUE ...] -->TEXT<!-- /figure -->

PRODUCER is a name of seedfw.figures.REGISTRY, BOARD a board whose build is `ROOT/BOARD/` (the
layout `invoke ci` leaves in output/ci/), fmt how the integer is written (grouped: 1,232, the
manual's style and the default; plain: 1232, as a tool prints it). TEXT must be exactly the
rendered value. `check` gives one line per figure that disagrees (or cannot be produced),
`page:line: figure SPEC: the page says X, the build gives Y`; `regenerate` writes the builds'
values into the pages. Pages are docs/**/*.md except the generated docs/reference/; a marker
inside a fenced code block or an inline code span is an example, not a figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError
from . import REGISTRY

__all__ = ["Marker", "markers", "check", "regenerate", "summary"]

MARK = re.compile(r"<!--\s*figure:\s*(?P<spec>[^>]*?)\s*-->(?P<text>[^<]*)<!--\s*/figure\s*-->")
OPEN = re.compile(r"<!--\s*figure:")
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
FORMATS = {"grouped": "{:,}", "plain": "{}"}


@dataclass(frozen=True)
class Marker:
    """One marked figure: where it is, what produces it, and the text the page has."""

    page: str               # the page as shown: docs/compression.md
    path: Path
    line: int
    spec: str               # the marker's text after "figure:", as written
    board: str
    producer: object        # a seedfw.figures.producers.Producer
    fmt: str
    text: str
    span: tuple[int, int]   # of `text` within the line

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def render(self, value: int) -> str:
        return FORMATS[self.fmt].format(value)

    def produce(self, root: Path) -> int:
        outdir = Path(root) / self.board
        if not (outdir / "manifest.json").is_file():
            raise SeedfwError(f"no build of {self.board} (no manifest.json)", outdir)
        return self.producer.value(outdir)


def pages(docs_dir: Path) -> list[Path]:
    docs_dir = Path(docs_dir)
    return sorted(p for p in docs_dir.rglob("*.md")
                  if p.relative_to(docs_dir).parts[0] != "reference")


def _parse(spec: str, page: Path, shown: str, number: int, text: str, span) -> Marker:
    from .. import boards

    def bad(message: str):
        return SeedfwError(f"figure {spec}: {message}", page, f"line {number}")

    words = spec.split()
    if not words:
        raise bad("no producer named")
    args = {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not (key and eq and value):
            raise bad(f"'{word}' is not PARAM=VALUE")
        args[key] = value
    cls = REGISTRY.get(words[0], page, f"line {number}")
    board = args.pop("board", None)
    if board is None:
        raise bad("board=BOARD missing")
    if board not in boards.names():
        raise bad(f"no board '{board}' (known: {', '.join(boards.names())})")
    fmt = args.pop("fmt", "grouped")
    if fmt not in FORMATS:
        raise bad(f"fmt={fmt}: not {' or '.join(FORMATS)}")
    try:
        producer = cls(args)
    except ValueError as exc:
        raise bad(str(exc)) from None
    return Marker(shown, page, number, spec, board, producer, fmt, text, span)


def markers(docs_dir: Path) -> list[Marker]:
    """Every marked figure of the manual, in page and line order; a malformed marker (an
    unknown producer or board, a missing parameter, no closing tag on its line) is one
    SeedfwError naming page:line."""
    docs_dir = Path(docs_dir)
    out = []
    for page in pages(docs_dir):
        shown = page.relative_to(docs_dir.parent).as_posix()
        fence = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            run = FENCE.match(line)
            if run and (fence is None or (run[1][0] == fence[0] and len(run[1]) >= len(fence)
                                          and not line.strip()[len(run[1]):])):
                fence = run[1] if fence is None else None
                continue
            if fence is not None:        # an example in a code block, not a figure
                continue
            # a marker in an inline code span is an example too: masked, spans kept
            masked = CODE_SPAN.sub(lambda m: " " * len(m[0]), line)
            found = list(MARK.finditer(masked))
            if len(OPEN.findall(masked)) != len(found):
                raise SeedfwError("figure marker without its <!-- /figure --> on the same line",
                                  page, f"line {number}")
            out += [_parse(m["spec"], page, shown, number, line[slice(*m.span("text"))],
                           m.span("text"))
                    for m in found]
    return out


def check(docs_dir: Path, root: Path) -> tuple[list[str], list[Marker]]:
    """(one line per figure that disagrees with the builds under `root` or cannot be produced
    from them, every marker checked)."""
    found = markers(docs_dir)
    bad = []
    for m in found:
        try:
            want = m.render(m.produce(root))
        except SeedfwError as exc:
            bad.append(f"{m.where}: figure {m.spec}: {exc.line()}")
            continue
        if want != m.text:
            bad.append(f"{m.where}: figure {m.spec}: the page says {m.text}, the build gives "
                       f"{want}")
    return bad, found


def regenerate(docs_dir: Path, root: Path) -> list[str]:
    """Write the builds' values into the pages; one line per figure changed. A figure that
    cannot be produced is an error before any page is written."""
    found = markers(docs_dir)
    values = {}
    for m in found:
        try:
            values[m] = m.render(m.produce(root))
        except SeedfwError as exc:
            raise SeedfwError(f"figure {m.spec}: {exc.line()}", m.path, f"line {m.line}") from None
    changed = []
    for page in sorted({m.path for m in found}):
        lines = page.read_text().split("\n")
        before = len(changed)
        # right to left within a line, so earlier spans stay valid
        for m in sorted((m for m in found if m.path == page), key=lambda m: (m.line, -m.span[0])):
            if values[m] == m.text:
                continue
            text = lines[m.line - 1]
            lines[m.line - 1] = text[:m.span[0]] + values[m] + text[m.span[1]:]
            changed.append(f"{m.where}: figure {m.spec}: {m.text} -> {values[m]}")
        if len(changed) > before:
            page.write_text("\n".join(lines))
    return changed


def summary(found: list[Marker], root: Path) -> str:
    boards = sorted({m.board for m in found})
    return (f"golden: {len(found)} figures on {len({m.page for m in found})} pages agree with "
            f"the builds of {', '.join(boards)} in {root}")
