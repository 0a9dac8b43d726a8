#!/usr/bin/env python3
"""seedfw stats vs `nm -S --size-sort` + `readelf -S` on large real AArch64 ELFs, same run.

Files: Debian's libasan8-arm64-cross libasan.so.8.0.0 (8 MB, .symtab with ~4.5 k sized
symbols, debug info: the largest unstripped AArch64 ELF in an Architecture: all package) and
u-boot-qemu's qemu_arm64/uboot.elf (stripped: sections only). Both pinned (seedfw.report.samples).

Printed per file, medians of --runs:
  reference  nm -S --size-sort FILE  +  readelf -S -W FILE   (two processes, output captured)
  library    seedfw.stats.read_elf(FILE) in this process (sections, segments, every sized
             symbol with its name, per-section top lists, totals) and serialising it to
             JSON text — text output, as nm and readelf produce
  cli        `invoke stats FILE --json` as a process (adds interpreter + Invoke start-up)
  ratio      library / reference (goal <= 1.5) and cli / reference
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from seedfw import stats
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.report import samples

PREFIX = "aarch64-linux-gnu-"


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def reference(path) -> None:
    for cmd in ([PREFIX + "nm", "-S", "--size-sort", str(path)],
                [PREFIX + "readelf", "-S", "-W", str(path)]):
        subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def cli(path) -> None:
    subprocess.run(["invoke", "stats", str(path), "--json"], cwd=ROOT, check=True,
                   stdout=subprocess.PIPE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--cli-runs", type=int, default=5)
    args = ap.parse_args()
    try:
        files = [samples.sample_elf(samples.LIBASAN_ELF), samples.sample_elf(samples.UBOOT_ARM64_ELF)]
    except SeedfwError as exc:
        print(f"skipped: cannot fetch the pinned Debian ELFs: {exc.line()}")
        return 0
    worst = 0.0
    for path in files:
        st = stats.read_elf(path)
        ref = timed(lambda: reference(path), args.runs)
        lib = timed(lambda: json.dumps(stats.stats_document([stats.read_elf(path)])), args.runs)
        whole = timed(lambda: cli(path), args.cli_runs)
        worst = max(worst, lib / ref)
        print(f"{path.name}: {path.stat().st_size:,} bytes, {len(st['sections'])} sections, "
              f"{len(st['symbols']):,} sized symbols")
        print(f"  reference nm+readelf {ref * 1e3:8.2f} ms")
        print(f"  seedfw read_elf+JSON {lib * 1e3:8.2f} ms   ratio {lib / ref:.2f}x (goal <= 1.5x)")
        print(f"  invoke stats --json  {whole * 1e3:8.2f} ms   ratio {whole / ref:.2f}x "
              f"(includes Python + Invoke start-up)")
    print(f"worst library ratio {worst:.2f}x: {'PASS' if worst <= 1.5 else 'FAIL'} (goal <= 1.5x)")
    return 0 if worst <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
