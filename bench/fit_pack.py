#!/usr/bin/env python3
"""FIT packing of large blobs: seedfw's streaming writer against `mkimage -f`, same .its (issue 33).

For each size (MiB, default 16 64 256) one .its of the OS FIT's shape (seedfw.parts.os_fit.its:
kernel, initramfs, boot script, OPP overlay) whose initramfs is a blob of that size (random
bytes, written once; the kernel is 1 MiB). Both tools run as child processes on the same .its in
the same directory, alternating, --runs times each:

  reference  `mkimage -f os.its mk.itb` (Debian's u-boot-tools, as `invoke doctor` lists it)
  seedfw     `python -c` running seedfw.images.fit_stream.write_its (interpreter start-up
             and imports included)

Printed per size: median wall time of each (time.perf_counter around the child), peak RSS of
each (GNU time's %M: the kernel's ru_maxrss of that one process),
the time ratio seedfw / mkimage (goal <= 0.4x) and seedfw's peak RSS (goal <= 64 MiB at
256 MiB). The two outputs are compared by sha256 in every run: a differing byte fails the bench.
Exit status 0 when every goal holds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seedfw.parts import os_fit

TIME = "/usr/bin/time"           # GNU time (Debian's `time` package)
GOAL_TIME = 0.4
GOAL_RSS_MIB = 64
EPOCH = "1700000000"
SEEDFW = ("import sys\nfrom seedfw.images import fit_stream\n"
          "fit_stream.write_its(sys.argv[1], sys.argv[2], int(sys.argv[3]))")


def child(cmd, cwd) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of one child process. The RSS is GNU time's %M (the
    kernel's ru_maxrss of the command): through /usr/bin/time, not os.wait4 of our own child,
    because a child forked from this interpreter starts its maximum at the interpreter's RSS
    (~23 MiB here), which would hide a small mkimage run. Both tools pay the same wrapper."""
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH)
    t0 = time.perf_counter()
    p = subprocess.run([TIME, "-f", "%M", *cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.strip()}")
    return elapsed, int(p.stderr.strip().splitlines()[-1]) * 1024     # %M is KiB


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def prepare(work: Path, mib: int) -> None:
    with open(work / "rootfs.cpio", "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
    (work / "Image").write_bytes(os.urandom(1 << 20))
    (work / "boot.cmd").write_text("echo seedfw bench\n")
    (work / os_fit.OVERLAY).write_bytes(b"\xd0\x0d\xfe\xed" + bytes(60))
    (work / "os.its").write_text(os_fit.its("bench", "bench"))


def measure(work: Path, mib: int, runs: int) -> dict:
    prepare(work, mib)
    ref_cmd = ["mkimage", "-f", "os.its", "mk.itb"]
    our_cmd = [sys.executable, "-c", SEEDFW, "os.its", "ours.itb", EPOCH]
    child(ref_cmd, work), child(our_cmd, work)        # untimed: page cache and bytecode warm
    ref, ours = [], []
    for _ in range(runs):
        ref.append(child(ref_cmd, work))
        ours.append(child(our_cmd, work))
        if digest(work / "mk.itb") != digest(work / "ours.itb"):
            raise SystemExit(f"{mib} MiB: seedfw's FIT differs from mkimage's")
    out = {"mib": mib, "fit_bytes": (work / "ours.itb").stat().st_size,
           "ref_s": statistics.median(t for t, _ in ref), "ref_rss": max(r for _, r in ref),
           "our_s": statistics.median(t for t, _ in ours), "our_rss": max(r for _, r in ours)}
    for name in ("rootfs.cpio", "mk.itb", "ours.itb"):
        (work / name).unlink()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256], help="blob sizes, MiB")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each tool per size")
    ap.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir)")
    args = ap.parse_args(argv)
    for tool, package in (("mkimage", "u-boot-tools"), (TIME, "time")):
        if not shutil.which(tool):
            print(f"{tool} not found (Debian package {package})", file=sys.stderr)
            return 2
    ok = True
    with tempfile.TemporaryDirectory(prefix="fit-pack-", dir=args.dir) as tmp:
        for mib in args.sizes:
            r = measure(Path(tmp), mib, args.runs)
            ratio = r["our_s"] / r["ref_s"]
            rss = r["our_rss"] / (1 << 20)
            judged_rss = mib >= 256
            ok &= ratio <= GOAL_TIME and (rss <= GOAL_RSS_MIB or not judged_rss)
            print(f"{mib:4d} MiB blob, FIT {r['fit_bytes']:,} bytes (identical, sha256), "
                  f"medians of {args.runs}")
            print(f"      mkimage -f          {r['ref_s'] * 1000:9.1f} ms   peak RSS "
                  f"{r['ref_rss'] / (1 << 20):7.1f} MiB")
            print(f"      seedfw fit_stream   {r['our_s'] * 1000:9.1f} ms   peak RSS {rss:7.1f} MiB"
                  f"   time ratio {ratio:.2f}x (goal <= {GOAL_TIME}x)"
                  + (f", RSS goal <= {GOAL_RSS_MIB} MiB" if judged_rss else ""))
    print(f"fit_pack: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
