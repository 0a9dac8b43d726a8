"""What a report section is, and what every section reads: `Section`, `Inputs`, figure helpers.

A section owns one top-level key of report.json and its part of report.md and report.html.
Adding one is one module under report/sections/ and one line in the registry
(report/sections/__init__.py); the three renderers loop over that registry in its order.

Honesty rule (figures): every number that is a result (a size, a ratio, a byte count per second,
a cycle count) is a *figure* {value, unit, kind, source[, note]} where kind is
  computed  - derived exactly from artifacts on disk (file sizes, ELF headers, compression
              results) or arithmetic on such figures;
  estimated - involves an assumption or a constant (decompression cycles from a cycles/byte
              constant, DDR traffic models);
  measured  - read back from hardware or an emulator at run time (counters JSON) or from a
              benchmark run given on the command line (bench/lz4_speed.py's cycles/byte,
              measured on the host and labelled so, never the board's).
A measured figure always carries `provenance` {source: live|recorded|emulated|benchmark|unknown,
label, synthetic}, and a figure made from synthetic inputs says so in `synthetic`
(report/provenance.py). A computed figure combined with an estimated one is estimated; nothing
we compute is ever labelled measured. Sections whose input is missing carry available=false and
note "not available: <why>".
"""

from __future__ import annotations

import functools
from pathlib import Path

from .. import inputs


def figure(value, unit: str, kind: str, source: str, note: str | None = None) -> dict:
    fig = dict(value=value, unit=unit, kind=kind, source=source)
    if note:
        fig["note"] = note
    return fig


def computed(value, unit="bytes", source="artifacts", note=None) -> dict:
    return figure(value, unit, "computed", source, note)


def percent(part, whole):
    return round(100.0 * part / whole, 2) if whole else None


def unavailable(note: str) -> dict:
    return dict(available=False, note=note)


class Inputs:
    """What the report of one output directory reads, each read once and only when a section
    asks for it (so the first bad input to raise is the one the first section needs, in
    registry order). config, manifest and board are read up front: the report's header needs
    them. Nothing outside the output directory is read but the files named here (baseline,
    counters, benchmark results: command-line arguments)."""

    def __init__(self, outdir: Path, config: dict | None, manifest: dict | None, board: str,
                 baseline=None, counters=None, decoder_bench=None, ccache_bench=None):
        self.outdir = Path(outdir)
        self.config = config
        self.manifest = manifest
        self.board = board
        self.baseline = baseline
        self.counters = counters
        # Host benchmark results, only as given on the command line: a section never looks for
        # one in the benchmark cache (the report is a function of the build and its arguments).
        self.decoder_bench = decoder_bench
        self.ccache_bench = ccache_bench

    @functools.cached_property
    def images(self) -> tuple[list[dict] | None, str | None]:
        """(rows, note) of inputs.list_images."""
        return inputs.list_images(self.outdir, self.manifest)

    @functools.cached_property
    def elf_paths(self) -> list[Path]:
        return inputs.find_elfs(self.outdir, self.manifest)

    @functools.cached_property
    def compression(self) -> tuple[list[dict] | None, dict | None, str | None]:
        """(rows, summary, note) of inputs.read_compression."""
        return inputs.read_compression(self.outdir)


class Section:
    """Subclasses MUST have a class docstring: it is the section's reference page (what it shows,
    which files it reads, the kinds of its figures); tests/test_report_sections.py enforces it."""

    name = ""           # its key in report.json

    def data(self, inputs: Inputs) -> dict | None:
        """Its JSON part; None leaves the key out of report.json (a section that only exists
        for some builds, e.g. the OS)."""
        raise NotImplementedError

    def notes(self, data: dict) -> list[str]:
        """Lines for the report's "notes" list: by default, why the section is unavailable."""
        return [] if data.get("available", True) else [f"{self.name}: {data['note']}"]

    def markdown(self, data: dict) -> list[str]:
        raise NotImplementedError

    def html(self, data: dict) -> str:
        raise NotImplementedError
