#!/usr/bin/env python3
"""Power cuts during an update: seeded random cut points, does the device end in a good slot?

Each run: a device flashed with slot A (confirmed), an update to B, then boots until it settles.
One cut falls at a seeded random point (seedfw.update.bootcount.CUT_POINTS): during the install
(before or after RAUC's env write), during the first boot of B (before saveenv, after saveenv but
before mark-good, between mark-good and seedfw_good), or on a later boot of the confirmed B.
The boot-count decision of every boot is made by firmware/uboot/rauc-bootcount.cmd in a real
U-Boot (Debian's 2023.01 qemu_arm64 in QEMU virt); the env that persists and RAUC's/the agent's
writes are modelled (bootcount.Device). A run survives when, after the cut, the device boots a
slot that reaches mark-good within 6 boots, and a slot that was confirmed before the cut is the
one it boots (a cut never makes a good slot count as bad).

Not modelled here (stated, not measured): RAUC writing the slot itself (a cut mid-copy leaves
the inactive slot half-written; it is never booted, since BOOT_ORDER changes only after the copy
— RAUC's order), and the data partition (no write to it happens in this model: "0 lost" would
be a tautology, so it is not printed as a figure).

    python3 bench/update_powercut.py [--cuts 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from seedfw.update import bootcount  # noqa: E402

GOOD = {"A": True, "B": True}


def one(shell, rnd) -> tuple[str, bool, list[str]]:
    point = rnd.choice(bootcount.CUT_POINTS)
    d = bootcount.Device()
    confirmed = None
    if point == "install: before RAUC's env write":
        pass                                         # the install never took effect
    else:
        d.install("B")
    cut = {"first boot: before saveenv": "before saveenv",
           "first boot: after saveenv, before mark-good": "before mark-good",
           "first boot: after mark-good, before seedfw_good": "before seedfw_good"}.get(point)
    d.boot(shell, GOOD, cut=cut)
    if point.startswith("confirmed boot"):
        confirmed = d.env.get("seedfw_good")
        d.boot(shell, GOOD, cut="before saveenv" if "saveenv" in point else None)
    for _ in range(5):
        d.boot(shell, GOOD)
    final = d.history[-1]
    ok = d.env["seedfw_good"] == final and d.env[f"BOOT_{final}_LEFT"] == str(3)
    if confirmed:
        ok = ok and final == confirmed
    return point, ok, d.history


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    started = time.monotonic()
    survived = 0
    with bootcount.UBootShell() as shell:
        for i in range(args.cuts):
            point, ok, history = one(shell, rnd)
            survived += ok
            print(f"cut {i + 1:2}: {point:48} boots {' '.join(history):20} "
                  f"{'survived' if ok else 'LOST'}")
    print(f"survived {survived}/{args.cuts} (seed {args.seed}; boot decisions by U-Boot 2023.01 "
          f"in QEMU, {time.monotonic() - started:.1f} s)")
    return 0 if survived == args.cuts else 1


if __name__ == "__main__":
    sys.exit(main())
