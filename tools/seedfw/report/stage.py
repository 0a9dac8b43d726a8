"""The report stage of `invoke build`: <out>/report/ (JSON, Markdown, HTML) after each build.

It runs after the manifest is written because the report describes exactly what the manifest
lists. Its stamp is the hash of what the report reads (manifest, compression results,
configuration): a no-op build does not re-read every ELF.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import util
from . import build_report, write_report

VERSION = "2"      # 2: provenance and synthetic flags (issue 11): rewrite older reports
INPUTS = ("manifest.json", "compression.json", "config.json")
OUTPUTS = ("report.json", "report.md", "report.html")


def after_build(outdir: Path, board: str) -> tuple[bool, Path]:
    """Write the report unless it is up to date; returns (written, report directory)."""
    outdir = Path(outdir)
    h = hashlib.sha256(VERSION.encode())
    for name in INPUTS:
        path = outdir / name
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
    digest = h.hexdigest()
    stamp = outdir / "stamps" / "report.stamp"     # same shape as the plan's step stamps
    target = outdir / "report"
    try:
        current = json.loads(stamp.read_text()).get("stamp")
    except (OSError, ValueError, AttributeError):
        current = None
    if current == digest and all((target / n).is_file() for n in OUTPUTS):
        return False, target
    write_report(build_report(outdir, board=board), outdir)
    util.write_json(stamp, {"stamp": digest, "deps": {}, "inputs": list(INPUTS)})
    return True, target
