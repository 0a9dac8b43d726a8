"""Gather the report of one board output directory into one JSON-ready dict (schema
seedfw-report/1, documented by report/schema/report-v1.json).

The header (schema, board, build id, SOURCE_DATE_EPOCH) is read here; every other top-level key
is one section (report/sections/, in registry order), and the notes list gathers the header's
notes and then each section's. The figure rules (computed / estimated / measured, provenance,
synthetic) are in report/sections/base.py.
"""

from __future__ import annotations

from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import inputs
from .sections import sections
from .sections.base import Inputs

REPORT_SCHEMA = "seedfw-report/1"


def build_report(outdir, baseline=None, counters=None, board: str | None = None,
                 decoder_bench=None, ccache_bench=None) -> dict:
    """The report of output directory `outdir`: a function of that directory and these
    arguments only (no benchmark cache, nothing under $HOME).

    baseline: another output directory (size deltas against it) or None.
    counters: a counters JSON file from `invoke counters --json`, or None.
    decoder_bench: a bench/lz4_speed.py result file (shown as measured on the host), or None.
    ccache_bench: a bench/cache_speed.py result file (the time a warm remote saves), or None.
    """
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise SeedfwError("output directory not found (run 'invoke build' first)", outdir)
    config, config_note = inputs.read_config(outdir)
    manifest, manifest_note = inputs.read_manifest(outdir)
    notes = [n for n in (config_note, manifest_note) if n]
    # Placeholder images (built with --allow-missing-blobs) must not pass for firmware here either.
    notes += [f"NON-FUNCTIONAL {name}: {why}" for name, why in
              ((manifest or {}).get("non_functional") or {}).items()]
    board = board or (config or {}).get("BOARD") or (manifest or {}).get("board") or outdir.name
    report = dict(schema=REPORT_SCHEMA, board=board,
                  build_id=(config or {}).get("BUILD_ID") or (manifest or {}).get("build_id"),
                  source_date_epoch=util.source_date_epoch())
    ins = Inputs(outdir, config, manifest, board, baseline=baseline, counters=counters,
                 decoder_bench=decoder_bench, ccache_bench=ccache_bench)
    for section in sections():
        data = section.data(ins)
        if data is not None:          # None: the build has nothing for it (no rootfs, ...)
            report[section.name] = data
            notes += section.notes(data)
    report["notes"] = notes
    return report
