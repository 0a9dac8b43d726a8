#!/usr/bin/env python3
"""seedfw tune speed: what one trial of `invoke tune` costs, against a cold build.

Measured on qemu-aarch64, in one run so that both sides see the same machine load:
  cold      a build of the study's base (defconfig + the study's pins: build id "tune", no
            U-Boot) into an empty output directory; downloads come from the shared cache, as
            for every build after the first on a machine
  trials    seedfw.tune.trial.run, the function `invoke tune` calls per trial, on configurations
            of two kinds:
              compression-only  HC level and block size changed, decoder unchanged (--compress N)
              decoder change    the other LZ4 decoder variant: TF-A and the payload recompile
                                (--decoder N)
            each split into seed (copying the base's output directory), rebuild (the build,
            only the steps whose stamps changed) and boot (QEMU under -icount)
Printed per trial: seconds, the rebuild and boot fractions, steps that ran (from the trial's
logs/steps.jsonl). Goal: the median compression-only trial costs <= 10 % of the cold build.
Exit status 0 when the goal is met. --json FILE writes the figures (kind: measured, host, date).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from seedfw import boards, config
from seedfw.tune import objectives, space, trial

BOARD = "qemu-aarch64"
GOAL = 0.10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compress", type=int, default=4, help="compression-only trials (default 4)")
    ap.add_argument("--decoder", type=int, default=1, help="decoder-change trials (default 1)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    board = boards.get(BOARD)
    objs = objectives.parse(None, board)
    scratch = Path(tempfile.mkdtemp(prefix="tune-speed-"))
    try:
        tune_dir = scratch / "tune"
        started = time.monotonic()
        base = trial.ensure_base(board, tune_dir, say=lambda m: None)
        cold = time.monotonic() - started
        cold_steps = len(trial.step_counts(base)[0])
        print(f"cold build of the study base: {cold:.1f} s, {cold_steps} step(s) ran")
        kc = config.resolve(BOARD, base).kconf
        params = space.load(kc, ["COMPRESS_BLOCK", "COMPRESS_HC_LEVEL", "LZ4_DECODER_CHOICE"])
        default = space.current_values(kc, params)
        blocks = ["COMPRESS_BLOCK_4K", "COMPRESS_BLOCK_16K", "COMPRESS_BLOCK_64K"]
        plans = [("compression-only", dict(default, COMPRESS_HC_LEVEL=3 + 2 * i,
                                           COMPRESS_BLOCK=blocks[i % 3]))
                 for i in range(args.compress)]
        other = "LZ4_DECODER_SMALL" if default["LZ4_DECODER_CHOICE"] != "LZ4_DECODER_SMALL" \
            else "LZ4_DECODER_FAST"
        plans += [("decoder change", dict(default, LZ4_DECODER_CHOICE=other,
                                          COMPRESS_HC_LEVEL=12 - i)) for i in range(args.decoder)]
        rows = []
        print(f"{'kind':<17} {'total s':>8} {'seed s':>7} {'rebuild s':>9} {'boot s':>7} "
              f"{'rebuild':>8} {'boot':>6} {'/cold':>6}  steps ran")
        for i, (kind, values) in enumerate(plans):
            r = trial.run(board, params, values, objs, base, tune_dir / "trials" / f"{i:04d}")
            if r.error:
                print(f"{kind:<17} FAILED: {r.error}")
                return 1
            s = r.seconds
            row = dict(kind=kind, params=values, seconds=s, steps_ran=r.steps_ran,
                       rebuild_fraction=round(s["build"] / s["total"], 3),
                       boot_fraction=round(s.get("boot", 0) / s["total"], 3),
                       of_cold=round(s["total"] / cold, 3), objectives=r.values)
            rows.append(row)
            print(f"{kind:<17} {s['total']:8.2f} {s['seed']:7.2f} {s['build']:9.2f} "
                  f"{s.get('boot', 0):7.2f} {row['rebuild_fraction']:8.0%} "
                  f"{row['boot_fraction']:6.0%} {row['of_cold']:6.1%}  {len(r.steps_ran)}: "
                  + " ".join(r.steps_ran))
        comp = [r["seconds"]["total"] for r in rows if r["kind"] == "compression-only"]
        med = statistics.median(comp) if comp else float("nan")
        ok = bool(comp) and med <= GOAL * cold
        print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"compression-only trial: median {med:.2f} s = {med / cold:.1%} of the cold build "
              f"({cold:.1f} s); goal <= {GOAL:.0%}: {'PASS' if ok else 'FAIL'}")
        if args.json:
            args.json.write_text(json.dumps({
                "bench": "tune_speed", "kind": "measured", "host": socket.gethostname(),
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "board": BOARD, "load_average_1min": round(os.getloadavg()[0], 2),
                "cold_seconds": round(cold, 2), "cold_steps": cold_steps,
                "compression_only_median_seconds": round(med, 3),
                "compression_only_of_cold": round(med / cold, 4), "goal": GOAL, "pass": ok,
                "trials": rows}, indent=2) + "\n")
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
