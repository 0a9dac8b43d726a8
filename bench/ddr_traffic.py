#!/usr/bin/env python3
"""DRAM traffic of the qemu-aarch64 boot with and without each compression knob, measured
(emulated) by seedfw's QEMU TCG plugin — the seed's claim "compressing .rodata lowers DDR read
traffic", tested on the chain seedfw builds, with whatever result it gives.

Variants (each a build of qemu-aarch64 from its defconfig plus a fragment):
  off             every compression knob off (the reference)
  tfa-rodata      CONFIG_TFA_COMPRESS_RODATA=y (BL31's .rodata; it selects COMPRESS_SECTIONS,
                  so the payload's .rodata is compressed too — the defconfig's setting)
  payload-rodata  CONFIG_COMPRESS_SECTIONS=y alone (the payload's .rodata only)
  models          CONFIG_MODELS_COMPRESS=y (the boot package's model blobs stored LZ4-compressed)
Each is booted once with the counter (`-icount shift=0`: one image gives the same counts every
time, so one boot suffices); per boot phase the script prints the DRAM bytes the CPU read with
the knob on, off, and the ratio on/off, plus flash bytes and instructions in total. Device DMA
(virtio-blk, from trace events) is printed apart: it is not CPU traffic.

Plugin overhead: the `off` image booted --runs times each way — as `invoke run` does (no
icount), with -icount only, and with -icount + the plugin — host wall-clock medians and the
ratios. That is host time of the emulator, not board time.

Usage: PYTHONPATH=tools python3 bench/ddr_traffic.py [--output DIR] [--runs 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from seedfw import boards
from seedfw.run import payload as qemu
from seedfw import build as build_mod
from seedfw.counters import emulated
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT

BOARD = "qemu-aarch64"
OFF = ["# CONFIG_TFA_COMPRESS_RODATA is not set", "# CONFIG_COMPRESS_SECTIONS is not set",
       "# CONFIG_MODELS_COMPRESS is not set"]
VARIANTS = {
    "off": OFF,
    "tfa-rodata": ["CONFIG_TFA_COMPRESS_RODATA=y", "CONFIG_COMPRESS_SECTIONS=y",
                   "# CONFIG_MODELS_COMPRESS is not set"],
    "payload-rodata": ["# CONFIG_TFA_COMPRESS_RODATA is not set", "CONFIG_COMPRESS_SECTIONS=y",
                       "# CONFIG_MODELS_COMPRESS is not set"],
    "models": ["# CONFIG_TFA_COMPRESS_RODATA is not set", "# CONFIG_COMPRESS_SECTIONS is not set",
               "CONFIG_MODELS_COMPRESS=y"],
}


def build(variant: str, root: Path) -> Path:
    out = root / variant
    frag = root / f"{variant}.fragment"
    frag.parent.mkdir(parents=True, exist_ok=True)
    frag.write_text("\n".join(VARIANTS[variant]) + "\n")
    build_mod.build(BOARD, out, [frag])
    return out


def counted(board, out: Path) -> dict:
    doc_file = emulated.default_file(out, "bench")
    qemu.run(board, out, timeout=180, echo=lambda s: None,
             extra_args=emulated.qemu_args(board, out, doc_file))
    return emulated.collect(board, out, doc_file, "bench")


def by_kind(doc: dict) -> dict:
    """{phase: {dram_read, flash_read, sram_read, insns}} over the phases that ran."""
    kinds = {r["name"]: r["kind"] for r in doc["settings"]["regions"]}
    ran = [p["name"] for p in doc["settings"]["phases_declared"] if p["ran"]]
    out = {}
    for name in ran:
        p = doc["readings"]["phases"][name]
        row = {"insns": p["instructions"], "dram_read": 0, "flash_read": 0, "sram_read": 0}
        for region, v in p["regions"].items():
            key = f"{kinds.get(region)}_read"
            if key in row:
                row[key] += v["load_bytes"]
        out[name] = row
    return out


def ratio(on: int, off: int) -> str:
    return f"{on / off:.3f}" if off else ("–" if not on else "new")


def timed(cmd_extra, board, out: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.monotonic()
        qemu.run(board, out, timeout=180, echo=lambda s: None, extra_args=cmd_extra())
        times.append(time.monotonic() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--output", default=str(ROOT / "output" / "bench-ddr"))
    ap.add_argument("--runs", type=int, default=3, help="boots per way for the overhead")
    ap.add_argument("--json", help="also write the figures as JSON here")
    args = ap.parse_args()
    root = Path(args.output)
    board = boards.get(BOARD)
    figures = {}
    for variant in VARIANTS:
        print(f"building {variant} …", flush=True)
        out = build(variant, root)
        doc = counted(board, out)
        figures[variant] = {"phases": by_kind(doc), "dma": doc["readings"]["dma"]["virtio-blk"],
                            "method": doc["provenance"]["how"]}
    print(f"\nmethod: {figures['off']['method']}")
    print("all figures: CPU data loads counted in QEMU (emulated); bytes and instructions, not "
          "board time\n")
    ref = figures["off"]["phases"]
    for variant in list(VARIANTS)[1:]:
        cur = figures[variant]["phases"]
        print(f"## {variant} on / off  ({', '.join(VARIANTS[variant])})")
        print(f"{'phase':18} {'DRAM read on':>14} {'DRAM read off':>14} {'ratio':>7} "
              f"{'flash read on':>14} {'off':>10} {'insns on':>12} {'insns off':>12}")
        tot = {"on": [0, 0, 0], "off": [0, 0, 0]}
        for name in dict.fromkeys([*ref, *cur]):
            a, b = cur.get(name, {}), ref.get(name, {})
            g = lambda d, k: d.get(k, 0)       # noqa: E731
            print(f"{name:18} {g(a, 'dram_read'):>14,} {g(b, 'dram_read'):>14,} "
                  f"{ratio(g(a, 'dram_read'), g(b, 'dram_read')):>7} {g(a, 'flash_read'):>14,} "
                  f"{g(b, 'flash_read'):>10,} {g(a, 'insns'):>12,} {g(b, 'insns'):>12,}")
            for k, side in (("on", a), ("off", b)):
                tot[k][0] += g(side, "dram_read")
                tot[k][1] += g(side, "flash_read")
                tot[k][2] += g(side, "insns")
        print(f"{'total':18} {tot['on'][0]:>14,} {tot['off'][0]:>14,} "
              f"{ratio(tot['on'][0], tot['off'][0]):>7} {tot['on'][1]:>14,} {tot['off'][1]:>10,} "
              f"{tot['on'][2]:>12,} {tot['off'][2]:>12,}")
        da, db = figures[variant]["dma"]["read_bytes"], figures["off"]["dma"]["read_bytes"]
        print(f"device DMA (virtio-blk, trace events): {da:,} B on, {db:,} B off\n")
    out = root / "off"
    print(f"plugin overhead (host wall-clock, median of {args.runs} boots of the 'off' image; "
          "emulator time, not board time):")
    plain = timed(lambda: [], board, out, args.runs)
    icount = timed(lambda: list(emulated.ICOUNT), board, out, args.runs)
    doc_file = emulated.default_file(out, "overhead")
    plugin = timed(lambda: emulated.qemu_args(board, out, doc_file), board, out, args.runs)
    print(f"  as invoke run (no icount) {plain:.2f} s; -icount {icount:.2f} s; -icount + plugin "
          f"{plugin:.2f} s; plugin/icount {plugin / icount:.2f}x, plugin/plain "
          f"{plugin / plain:.2f}x")
    figures["overhead_s"] = {"plain": plain, "icount": icount, "plugin": plugin}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeedfwError as exc:
        print(exc.line() if hasattr(exc, "line") else f"error: {exc}", file=sys.stderr)
        sys.exit(1)
