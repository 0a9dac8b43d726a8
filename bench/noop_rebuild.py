#!/usr/bin/env python3
"""Cold build vs no-op rebuild of one board, same run, same output directory.

Measures, for --board (default rk3588) in a fresh temporary output directory:
  cold   the first build (configure, extract TF-A, compile; the download cache is reused if warm,
         and the script says whether the pinned archive was already cached)
  noop   the median of --runs further builds with nothing changed (stamps skip every step)
  cli    one no-op `invoke build` as a process (adds interpreter and Invoke start-up)
  ratio  noop / cold (and cli / cold)
Goal: noop <= 1 s and no step runs. The numbers are measured here, not computed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seedfw import build, paths
from seedfw.parts import tfa


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="rk3588")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    archive = tfa.source("2.12.1").cache_dir() / tfa.VERSIONS["2.12.1"]["files"][0].name
    cache = "warm" if archive.is_file() else "cold (will download)"
    with tempfile.TemporaryDirectory(prefix="seedfw-bench-") as tmp:
        out = Path(tmp) / args.board
        t0 = time.perf_counter()
        first = build.build(args.board, out)
        cold = time.perf_counter() - t0
        noops = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            again = build.build(args.board, out)
            noops.append(time.perf_counter() - t0)
            if again.ran:
                print(f"FAIL: no-op build ran {again.ran}", file=sys.stderr)
                return 1
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "invoke", "build", "--board", args.board,
                        "--output", str(out)], cwd=paths.ROOT, check=True, capture_output=True)
        cli = time.perf_counter() - t0
    noop = statistics.median(noops)
    print(f"board {args.board}: download cache {cache}; cold build ran {len(first.ran)} steps")
    print(f"cold   {cold:8.3f} s")
    print(f"noop   {noop:8.3f} s  (median of {args.runs}, in process)  ratio noop/cold {noop / cold:.4f}")
    print(f"cli    {cli:8.3f} s  (invoke build as a process)   ratio cli/cold  {cli / cold:.4f}")
    print(f"goal noop <= 1 s: {'met' if noop <= 1.0 and cli <= 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
