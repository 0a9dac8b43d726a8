"""report.md: the CI summary (GitHub-flavoured Markdown tables).

The title, build id and the kinds legend, then each section's Markdown (report/sections/, in
registry order; a section absent from the report is skipped), then the notes. Every table that
holds figures has a `kind` column or states the kind in its heading.
"""

from __future__ import annotations

from .format import KINDS_LINE
from .sections import sections


def render(report: dict) -> str:
    lines = [f"# seedfw report: {report['board']}", ""]
    if report.get("build_id"):
        lines += [f"Build id: `{report['build_id']}`", ""]
    lines += [KINDS_LINE, ""]
    for section in sections():
        if section.name in report:
            lines += section.markdown(report[section.name])
    if report["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in report["notes"]] + [""]
    return "\n".join(lines).rstrip() + "\n"
