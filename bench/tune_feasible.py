#!/usr/bin/env python3
"""seedfw tune feasibility: a real `invoke tune` study, and how many trials the build refused.

Runs `invoke tune --board qemu-aarch64 --trials N --sampler S --seed K` (defaults 20, tpe, 1) as a
user would, in a scratch output directory: every trial is a real incremental build plus a
deterministic QEMU boot (-icount), and the steps a trial's options do not touch are restored from
the artifact store (~/.cache/seedfw/artifacts) or found up to date in the study's base.

The search space follows Kconfig's visibility (seedfw.tune.space.Space), so a trial is never a
combination Kconfig refuses; the build's own refusals (e.g. "BL31 has no resident dictionary")
stay as a safety net and must not fire. Printed: trials, infeasible (FAIL, not interrupted) with
their error lines, trials told a twin's objectives (same resolved configuration), front size
(distinct points), wall time, and the parameter names the sampler saw (a restricted choice shows
its visible members). Exit status 0 when no trial is infeasible. --json FILE writes the figures
(kind: measured, host, date, load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOARD = "qemu-aarch64"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="the study's budget (default 20)")
    ap.add_argument("--sampler", default="tpe", help="tpe (default), nsga2 or random")
    ap.add_argument("--seed", type=int, default=1, help="sampler seed (default 1)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tune-feasible-"))
    out = scratch / "out"
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "invoke", "tune", "--board", BOARD, "--output", str(out),
             "--trials", str(args.trials), "--sampler", args.sampler, "--seed", str(args.seed)],
            cwd=ROOT, text=True, capture_output=True)
        wall = time.monotonic() - started
        sys.stdout.write(proc.stdout)
        if proc.returncode:
            sys.stdout.write(proc.stderr)
            print(f"invoke tune exited {proc.returncode}")
            return 1
        doc = json.loads((out / "tune" / "tune.json").read_text())
        trials = doc["trials"]
        infeasible = [t for t in trials if t["state"] == "FAIL" and not t.get("interrupted")]
        twins = [t for t in trials if "same_as" in t]
        distinct = {tuple(by["objectives"].values()) for by in trials
                    if by["number"] in doc["front"]}
        rebuilt = [t for t in trials if t["state"] == "COMPLETE" and "same_as" not in t]
        print()
        print(f"{'board':<14} {'sampler':<8} {'trials':>6} {'infeasible':>10} {'twins':>5} "
              f"{'built':>5} {'front':>5} {'wall s':>7}")
        print(f"{BOARD:<14} {args.sampler:<8} {len(trials):>6} {len(infeasible):>10} "
              f"{len(twins):>5} {len(rebuilt):>5} {len(distinct):>5} {wall:>7.0f}")
        for t in infeasible:
            print(f"  infeasible #{t['number']}: {t.get('error')}  {t['params']}")
        print(f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, "
              f"on {os.cpu_count()} cores")
        if args.json:
            args.json.write_text(json.dumps({
                "bench": "tune_feasible", "kind": "measured", "host": socket.gethostname(),
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "board": BOARD, "sampler": args.sampler, "seed": args.seed,
                "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "trials": len(trials), "infeasible": len(infeasible), "twins": len(twins),
                "front_distinct": len(distinct), "wall_seconds": round(wall, 1),
                "failed": [{"number": t["number"], "error": t.get("error"),
                            "params": t["params"]} for t in infeasible]}, indent=2) + "\n")
        return 0 if not infeasible else 1
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
