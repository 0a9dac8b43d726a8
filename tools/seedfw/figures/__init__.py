"""Figures the manual publishes that a build determines, and the golden check that keeps them true.

A page marks such a figure where it stands, in prose or in a table cell, with the producer that
regenerates it from a build output and the board whose build that is:

    BL31's loaded bytes go from <!-- figure: elf-load-bytes board=rk3588 file=images/bl31.elf -->147,702<!-- /figure --> ...

`invoke docs --golden DIR` regenerates every marked figure from the builds `DIR/<board>/` (what
`invoke ci` leaves in output/ci/) and fails with one line per disagreement, naming the page
(path:line) and the figure; `invoke ci` runs it after its builds and counted boots;
`--regenerate` writes the build's values into the pages instead. Only figures a build
determines are marked: sizes (computed), compressor outputs (computed), instruction and byte
counts of a counted QEMU run (measured, emulated: `-icount` makes them deterministic). Timed
figures (seconds, rates, anything measured on a machine under load) carry their date, machine
and load instead and are never marked.

The producers are this plug-in kind's registry: one class per way of reading a figure out of a
build output (seedfw.figures.producers), each through the readers the rest of seedfw uses
(seedfw.stats for ELFs, seedfw.reading for JSON and file sizes). The marker grammar and the
check are seedfw.figures.golden.
"""

from __future__ import annotations

from ..registry import Registry

__all__ = ["REGISTRY"]

REGISTRY = Registry("figure", {
    "file-bytes": "seedfw.figures.producers:FileBytes",
    "elf-section-bytes": "seedfw.figures.producers:ElfSectionBytes",
    "elf-load-bytes": "seedfw.figures.producers:ElfLoadBytes",
    "compressed-section": "seedfw.figures.producers:CompressedSection",
    "emulated-phase": "seedfw.figures.producers:EmulatedPhase",
    "emulated-dma": "seedfw.figures.producers:EmulatedDma",
})
