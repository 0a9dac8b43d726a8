"""Output escaping by construction: the only place report text becomes HTML, Markdown or
terminal output (docs/hostile-input.md, "Report outputs").

Every string a report shows may come from outside: an ELF section name, a model card, a counters
document, a manifest. The renderers never decide case by case what to escape; they build output
from *trusted* fragments (written in seedfw's source) and *values* (anything else), and only
this module joins the two:

- HTML: `html(TEMPLATE, **values)` renders a Jinja2 template with autoescape on. The template
  text is trusted; every value is escaped unless it is `Markup` that an earlier `html()` call
  returned (a table cell, an SVG chart). A plain `str` put into a page is therefore shown as
  text, never parsed as markup — forgetting to escape cannot happen, at worst a fragment shows
  its tags.
- Markdown: `Md` marks Markdown written by seedfw; `md(value)` escapes anything else (pipes,
  newlines and control bytes, HTML, `#`, backticks, emphasis and link brackets) so it renders
  as the same text on GitHub; `mdf(TEMPLATE, *values)` is the Markdown analogue of `html()`
  (the template trusted, each `{}` an escaped value). markdown.render passes every line through
  md(), so a line a renderer built with a plain f-string is escaped whole, not trusted.
- Terminal: `term(value)` is reading.plain (control bytes shown as \\xNN) plus the bidirectional
  overrides (U+202E shows text reversed), for the lines `invoke report` prints.
"""

from __future__ import annotations

import functools
import re

import jinja2
from markupsafe import Markup

from ..reading import plain

# Bidirectional controls reorder what a reader sees (U+202E "RIGHT-TO-LEFT OVERRIDE" makes
# "exe.txt" look like "txt.exe"): shown as \\uXXXX, like the control bytes plain() escapes.
_BIDI = {c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                    *range(0x2066, 0x206A), 0x2028, 0x2029)}

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


@functools.lru_cache(maxsize=256)
def _template(source: str) -> jinja2.Template:
    return _ENV.from_string(source)


def html(template: str, **values) -> Markup:
    """`template` (trusted source text, Jinja2 syntax) with `values` escaped into it."""
    return Markup(_template(template).render(**values))


def literal(source: str) -> Markup:
    """A constant of seedfw's own source (the page's CSS) used as HTML as it is; never a value
    read from anywhere."""
    return Markup(source)


def join(parts, sep: str = "") -> Markup:
    """Fragments joined; any part that is not Markup is escaped (markupsafe's join)."""
    return Markup(sep).join(parts)


def text(value) -> str:
    """A value as display text: control bytes and bidi overrides made visible."""
    return plain(value).translate(_BIDI)


term = text         # what `invoke report` prints: the same visible escapes


class Md(str):
    """Markdown written by seedfw (trusted): md() leaves it as it is."""

    __slots__ = ()


# HTML is written as entities (GitHub renders raw tags); Markdown punctuation is backslashed.
# `_` only where it could open or close emphasis (not between letters: read_bytes stays as is).
_MD = re.compile(r"[\\`*\[\]<>&|#~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_MD_SUB = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def md(value) -> Md:
    """`value` as Markdown that renders as its text: Md passes, anything else is escaped and
    fits on one line (a newline is shown as \\x0a, never a new block)."""
    if isinstance(value, Md):
        return value
    return Md(_MD.sub(lambda m: _MD_SUB.get(m.group(), "\\" + m.group()), text(value)))


def mdf(template: str, *values) -> Md:
    """`template` (trusted Markdown with `{}` fields) with each value md()-escaped."""
    return Md(template.format(*(md(v) for v in values)))


_CODE_SAFE = re.compile(r"[^`|\\\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+")


def mdcode(value) -> Md:
    """`value` as inline code when it can be (no backtick, pipe, backslash or control
    character: a code span shows everything else literally), else as escaped text."""
    value = str(value)
    return Md(f"`{value}`") if _CODE_SAFE.fullmatch(value) else md(value)
