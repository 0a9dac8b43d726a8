"""Reports of a board output directory: report.json (versioned schema), report.md (the CI
summary) and report.html (self-contained, inline SVG plots).

    report = build_report(outdir, baseline=None, counters=None)   # model.py
    paths = write_report(report, outdir)                            # → <out>/report/*

Each top-level part of the report is one section (report/sections/, one module each, in the
order of their registry); model.py gathers their JSON parts, markdown.py and html.py render
them in that order, json_out.py checks the whole against the schema and writes it. Formatting
helpers the sections share are in format.py.
"""

from __future__ import annotations

from pathlib import Path

from .. import util
from .model import REPORT_SCHEMA, build_report  # noqa: F401  (public API)


def write_report(report: dict, outdir) -> dict:
    """Render all three files first, then write each atomically into <outdir>/report/; a
    failure while rendering leaves the previous report untouched. Returns {kind: path}."""
    from . import html, json_out, markdown
    texts = {"json": json_out.render(report), "md": markdown.render(report),
             "html": html.render(report)}
    target = Path(outdir) / "report"
    return {kind: util.write_text(target / f"report.{kind}", text)
            for kind, text in texts.items()}
