"""The report stage of `invoke build`: <out>/report/ (JSON, Markdown, HTML) after each build.

It runs after the manifest is written because the report describes exactly what the manifest
lists. Its stamp is the hash of what the report reads (manifest, compression results,
configuration): a no-op build does not re-read every ELF.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from .. import reading
from . import build_report, write_report

VERSION = "2"      # 2: provenance and synthetic flags (issue 11): rewrite older reports
INPUTS = ("manifest.json", "compression.json", "config.json",
          "sbom/sbom.cdx.json", "sbom/cve.json")     # the vulnerabilities section's inputs
OUTPUTS = ("report.json", "report.md", "report.html")


def after_build(outdir: Path, board: str) -> tuple[bool, Path]:
    """Write the report unless it is up to date; returns (written, report directory)."""
    outdir = Path(outdir)
    h = hashlib.sha256(VERSION.encode())
    for name in INPUTS:
        path = outdir / name
        # through the door: regular files within the JSON cap (the report reads them anyway)
        h.update(name.encode() + b"\0" + (reading.read_bytes(path, "json") if path.exists()
                                          else b"-"))
    digest = h.hexdigest()
    stamp = outdir / "stamps" / "report.stamp"     # same shape as the plan's step stamps
    target = outdir / "report"
    try:
        current = reading.loads_json(reading.read_bytes(stamp, "json"), stamp).get("stamp")
    except (SeedfwError, AttributeError):      # missing, deep, not JSON: not up to date
        current = None
    if current == digest and all((target / n).is_file() for n in OUTPUTS):
        return False, target
    write_report(build_report(outdir, board=board), outdir)
    util.write_json(stamp, {"stamp": digest, "deps": {}, "inputs": list(INPUTS)})
    return True, target
