#!/usr/bin/env python3
"""Cost of counting (issue 33): the qemu-aarch64 chain boot (TF-A → U-Boot → payload → power
off) under `-icount` alone, and with each plug-in, host wall-clock and host CPU time, measured in
one run on this host — so the ratios compare like with like whatever the machine's load.

Ways, each booted --runs times, interleaved (one boot of each way per round), medians:
  icount      -icount shift=0,sleep=off only (the reference: what a counted run cannot avoid)
  before      + the counter plug-in as in git revision --before (default: main), compiled here
  after       + the counter plug-in of this tree (firmware/qemu-plugin/)
  floor       + bench/qemu_null_plugin.c: an empty callback per executed block, no memory hook
  loaded      + the same plug-in registering nothing (the cost of loading a plug-in at all)
The counts of every boot of `before` and `after` are compared (the plug-in's JSON): an
optimisation that changes a count fails the bench. Left out of the comparison, by design: the
"excluded" bucket (U-Boot's virtio-blk completion poll, which spins at the host's pace — a faster
plug-in makes it spin fewer times), "after_stop" (the tail after the power-off request, which
varies too) and "blocks" (block executions, which include the poll's);
the bench prints their spread over the boots of each way. Times are the emulator's on this host, not
board time.

Usage: PYTHONPATH=tools python3 bench/counter_overhead.py [--output DIR] [--runs 7]
       [--before REV] [--existing OUTDIR]   (OUTDIR: an already built qemu-aarch64 output dir)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seedfw import boards
from seedfw import build as build_mod
from seedfw.counters import emulated, plugin_build
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.run import payload as qemu

BOARD = "qemu-aarch64"
NULL_PLUGIN = Path(__file__).resolve().parent / "qemu_null_plugin.c"


def compile_so(src: Path, include: Path, out: Path) -> Path:
    subprocess.run(["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                    "-I", str(include), "-o", str(out), str(src)], check=True)
    return out


def with_plugin(args: list[str], so: Path, extra: str = "") -> list[str]:
    """The counted run's arguments with the -plugin file= swapped for `so` (or the whole
    plug-in argument replaced by `extra` for the floor plug-in)."""
    out = list(args)
    i = out.index("-plugin")
    if extra is not None and extra != "":
        out[i + 1] = f"file={so},{extra}"
    elif extra == "":
        head, _, rest = out[i + 1].partition(",")
        out[i + 1] = f"file={so},{rest}"
    return out


def counted_part(raw: dict):
    """The plug-in's document without what is host-paced by design (see the top)."""
    if isinstance(raw, dict):
        return {k: counted_part(v) for k, v in raw.items() if k not in ("blocks", "excluded", "after_stop")}
    if isinstance(raw, list):
        return [counted_part(v) for v in raw]
    return raw


def differences(a, b, path: str = "") -> list[str]:
    """Paths where two counted parts differ, with both values."""
    if isinstance(a, dict):
        return [d for k in a for d in differences(a[k], b.get(k), f"{path}/{k}")]
    if isinstance(a, list):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a} vs {b}"]


def host_paced(raw: dict) -> int:
    return sum(p["excluded"]["insns"] for p in raw["phases"])


def boot(board, outdir: Path, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of QEMU) for one boot."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    qemu.run(board, outdir, timeout=300, echo=lambda s: None, extra_args=extra)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--output", default=str(ROOT / "output" / "bench-counters"))
    ap.add_argument("--existing", help="use this built qemu-aarch64 output directory")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", default="main", help="git revision of the reference plug-in")
    args = ap.parse_args()
    board = boards.get(BOARD)
    outdir = Path(args.existing) if args.existing else Path(args.output)
    if not args.existing:
        build_mod.build(BOARD, outdir)
    tmp = Path(tempfile.mkdtemp(prefix="seedfw-counter-bench-"))
    include = tmp / "include"
    plugin_build.header(include, progress=lambda s: None)
    old_src = tmp / "traffic-before.c"
    old_src.write_bytes(subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.before}:firmware/qemu-plugin/traffic.c"],
        capture_output=True, check=True).stdout)
    sos = {"before": compile_so(old_src, include, tmp / "before.so"),
           "after": plugin_build.compile_plugin(include, tmp / "after.so"),
           "floor": compile_so(NULL_PLUGIN, include, tmp / "null.so")}
    counted = {}
    ways = {"icount": lambda: list(emulated.ICOUNT)}
    for name in ("before", "after"):
        doc = tmp / f"{name}.json"
        counted[name] = emulated.files(doc)["raw"]
        ways[name] = (lambda doc=doc, so=sos[name]:
                      with_plugin(emulated.qemu_args(board, outdir, doc), so))
    ways["floor"] = lambda: list(emulated.ICOUNT) + ["-plugin", f"file={sos['floor']}"]
    ways["loaded"] = lambda: list(emulated.ICOUNT) + ["-plugin", f"file={sos['floor']},none=1"]
    times = {w: [] for w in ways}
    docs = {"before": [], "after": []}
    for _ in range(args.runs):
        for w, extra in ways.items():
            times[w].append(boot(board, outdir, extra()))
            if w in docs:
                docs[w].append(json.loads(counted[w].read_text()))  # door: this run's plug-in output
    ref = counted_part(docs["before"][0])
    same = all(counted_part(d) == ref for w in docs for d in docs[w])
    load = os.getloadavg()
    print(f"{BOARD} chain boot, {args.runs} boots per way interleaved, medians; host "
          f"{os.uname().nodename}, {os.cpu_count()} cores, load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f} at the end (measured on this host; emulator time, "
          "not board time)")
    ref_w = statistics.median(t[0] for t in times["icount"])
    ref_c = statistics.median(t[1] for t in times["icount"])
    print(f"{'way':8} {'wall s':>8} {'/icount':>8} {'CPU s':>8} {'/icount':>8}")
    for w, ts in times.items():
        wall = statistics.median(t[0] for t in ts)
        cpu = statistics.median(t[1] for t in ts)
        print(f"{w:8} {wall:8.3f} {wall / ref_w:7.2f}x {cpu:8.3f} {cpu / ref_c:7.2f}x")
    insns = sum(p["insns"] for p in ref["phases"])
    print(f"counts of all {2 * args.runs} counted boots (before and after) identical: "
          f"{'yes' if same else 'NO'} ({insns:,} instructions over {len(ref['phases'])} phases, "
          "loads/stores per region)")
    for w in docs:
        for i, d in enumerate(docs[w]):
            diff = differences(ref, counted_part(d))
            if diff:
                print(f"  {w} boot {i + 1} differs from before boot 1: {'; '.join(diff[:4])}")
        xs = [host_paced(d) for d in docs[w]]
        print(f"  {w}: host-paced virtio poll (excluded by design) {min(xs):,} … {max(xs):,} "
              "instructions")
    return 0 if same else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeedfwError as exc:
        print(exc.line() if hasattr(exc, "line") else f"error: {exc}", file=sys.stderr)
        sys.exit(1)
