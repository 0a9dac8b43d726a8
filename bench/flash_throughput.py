#!/usr/bin/env python3
"""Flash throughput through pyOCD + the qemu probe plug-in, as a ratio to the raw transport.

Reference (same run, same QEMU build): writing and reading back the same bytes with bare GDB-stub
`M`/`m` packets — the floor any probe layered on the stub can reach. Measured: seconds and KiB/s of
both, the ratio (pyOCD path / reference) and, counted, the GDB packets each sent (last run; counts
do not vary with host load, times do). Image: the MCU firmware padded with seeded random bytes to
--size, so it still boots after the flash.

    python3 bench/flash_throughput.py [--size 131072] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128 * 1024)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from seedfw import boards
    from seedfw.lab.inventory import QemuGdbTarget
    from seedfw.flash.pyocd_runner import PyocdRunner
    from seedfw.flash.qemu_probe import rsp as rspmod
    from seedfw.flash.qemu_probe.rsp import RspClient

    board = boards.get("mps2-an385")
    with tempfile.TemporaryDirectory(prefix="seedfw-flashbench-") as tmp:
        tmp = Path(tmp)
        subprocess.run(["make", "-s", "-C", str(ROOT / "firmware/mcu"), f"O={tmp}", "BUILD_ID=bench"],
                       check=True, capture_output=True)
        fw = (tmp / "mcu.bin").read_bytes()
        rng = random.Random(1)
        image = fw + bytes(rng.getrandbits(8) for _ in range(args.size - len(fw)))
        img = tmp / "image.bin"
        img.write_bytes(image)

        ref, ours = [], []
        for _ in range(args.repeat):
            with QemuGdbTarget(board, extra_args=["-icount", "shift=3"]) as q:
                rsp = RspClient("127.0.0.1", q.port)
                rspmod.SENT.clear()
                t0 = time.perf_counter()
                rsp.write_memory(0, image)
                assert rsp.read_memory(0, len(image)) == image
                ref.append(time.perf_counter() - t0)
                ref_packets = dict(rspmod.SENT)
                rsp.close()
            with QemuGdbTarget(board, extra_args=["-icount", "shift=3"]) as q:
                rspmod.SENT.clear()
                t0 = time.perf_counter()
                res = PyocdRunner(board, q.uid, target="seedfw_mps2_an385", log=lambda *_: None).flash(img)
                ours.append(time.perf_counter() - t0)
                our_packets = dict(rspmod.SENT)
                assert res.verified_bytes == len(image)
    kib = len(image) / 1024
    r, o = min(ref), min(ours)
    print(f"image {len(image)} bytes, best of {args.repeat}")
    print(f"reference  raw stub M+m       {r:7.3f} s  {kib / r:8.1f} KiB/s")
    print(f"seedfw     pyOCD flash+verify {o:7.3f} s  {kib / o:8.1f} KiB/s  (incl. connect, erase, reset)")
    print(f"ratio      {o / r:.2f}x the reference time")
    # counted, not timed: the same on a quiet or a loaded host
    for name, sent in (("reference", ref_packets), ("seedfw", our_packets)):
        kinds = " ".join(f"{k}:{n}" for k, n in sorted(sent.items(), key=lambda kv: -kv[1]))
        print(f"packets    {name:9s} {sum(sent.values()):4d}  ({kinds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
