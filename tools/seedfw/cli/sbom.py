"""SBOM tasks: sbom (write a built output's SBOM again), cve (offline vulnerability matching and
the VEX). `invoke legal` (the licence bundle, from the same component list) is in os_tasks."""

from __future__ import annotations

import os

from . import command
from .config import default_board
from ..errors import SeedfwError

__all__ = ["sbom", "cve"]


def _context(board, output):
    from .. import config as kcfg
    from ..parts import BuildContext

    name = default_board(board)
    cfg = kcfg.resolve(name, output)
    if not (cfg.outdir / "config.json").is_file():
        raise SeedfwError(f"no build yet (run 'invoke build --board {name}')", cfg.outdir)
    cfg.values = kcfg.load_values(cfg.outdir)       # what was built (fragments included)
    return BuildContext(cfg)


@command(help={"board": "board name", "output": "output directory (default output/<board>/)"})
def sbom(c, board=None, output=None):
    """Write the SBOM of a built output directory.

    Write <out>/sbom/sbom.cdx.json (CycloneDX 1.6) and sbom.spdx.json (SPDX 3.0.1) of a built
    output directory, as every build does, and list them in its manifest.json again; print the
    component counts and coverage."""
    from .. import sbom as sbom_mod
    from .. import reading

    ctx = _context(board, output)
    got = sbom_mod.write(ctx, print)
    if sbom_mod.relist(ctx.outdir):
        print(f"  {'wrote':<7} {'manifest':<24} its sbom entries, for the documents written now")
    doc = reading.loads_json_strict(reading.read_bytes(got["cdx"], "json"), got["cdx"])
    for kind, r in sbom_mod.coverage(doc).items():
        print(f"  {kind:<36} {r['count']:>4}  purl {r['purl_percent']:>5}%  CPE "
              f"{r['cpe_percent']:>5}%  SHA-512 {r['sha512_percent']:>5}%")
    for note in got["notes"]:
        print(f"  left out: {note}")


@command(help={"board": "board name", "output": "output directory (default output/<board>/)",
               "db": "vulnerability database directory: NVD 2.0 records "
                     "(CVE-<year>/CVE-<year>-<NN>xx/*.json) or CVE 5 records (cves/...); "
                     "default $SEEDFW_CVE_DB",
               "vex": "triage file to apply (default board/<board>/vex.yaml)"})
def cve(c, board=None, output=None, db=None, vex=None):
    """Match the SBOM against a local CVE database; write a VEX.

    Match a built output's SBOM offline (Bootlin's sbom-cve-check, --offline-mode) against a
    local database, apply board/<b>/vex.yaml (and Buildroot's own ignore lists), write
    <out>/sbom/vex.cdx.json (CycloneDX VEX) and cve.json (the report's vulnerabilities
    section)."""
    from ..sbom import cve as cve_mod

    db = db or os.environ.get("SEEDFW_CVE_DB")
    if not db:
        raise SeedfwError("no vulnerability database: give --db DIR or set SEEDFW_CVE_DB",
                          field="--db")
    ctx = _context(board, output)
    cve_mod.match(ctx, db, triage_file=vex)
