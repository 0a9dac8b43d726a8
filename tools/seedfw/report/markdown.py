"""report.md: the CI summary (GitHub-flavoured Markdown tables).

The title, build id and the kinds legend, then each section's Markdown (report/sections/, in
registry order; a section absent from the report is skipped), then the notes. Every table that
holds figures has a `kind` column or states the kind in its heading.
"""

from __future__ import annotations

from .format import KINDS_LINE
from .safe import Md, md, mdcode, mdf
from .sections import sections


def render(report: dict) -> str:
    """Every line a section returns goes through safe.md: a line that is not Md (seedfw's own
    Markdown) is escaped whole, so outside text can never become a heading, a table row or HTML."""
    lines = [mdf("# seedfw report: {}", report["board"]), Md("")]
    if report.get("build_id"):
        lines += [mdf("Build id: {}", mdcode(report["build_id"])), Md("")]
    lines += [Md(KINDS_LINE), Md("")]
    for section in sections():
        if section.name in report:
            lines += section.markdown(report[section.name])
    if report["notes"]:
        lines += [Md("## Notes"), Md("")] + [mdf("- {}", n) for n in report["notes"]] + [Md("")]
    return "\n".join(md(line) for line in lines).rstrip() + "\n"
