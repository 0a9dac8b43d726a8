#!/usr/bin/env python3
"""Boot-package verification speed: firmware/common's C verifier (sha256 + crc32 of every entry,
as the payload runs it) against Python's hashlib.sha256 + zlib.crc32 (OpenSSL/zlib, optimised
assembly) over the same bytes, in the same run. Prints MiB/s of both and the ratio (C / reference).

The C code is compiled for the host with -O2 (portable C, no SHA instructions), so the figure is a
property of the code, not of the board; on a Cortex-A at boot expect the same order of magnitude
divided by the clock ratio.

    python3 bench/pkg_verify_speed.py [--mib 8] [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=8, help="model blob size in MiB")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from seedfw.images import package
    from seedfw.images.entries import ModelEntry

    data = os.urandom(args.mib << 20)
    blob = package.encode([ModelEntry("bench", data, model_type="raw")])
    common = ROOT / "firmware" / "common"
    with tempfile.TemporaryDirectory(prefix="seedfw-pkgbench-") as tmp:
        exe, pkg = Path(tmp) / "verify", Path(tmp) / "pkg.bin"
        pkg.write_bytes(blob)
        subprocess.run(["cc", "-std=c11", "-O2", f"-I{ROOT / 'firmware/include'}", f"-I{common}",
                        "-o", str(exe), str(common / "host" / "pkg_verify_host.c"),
                        *(str(common / f) for f in ("sha256.c", "crc32.c", "pkg_verify.c"))],
                       check=True)
        out = subprocess.run([str(exe), "bench", str(pkg), str(args.repeat)], capture_output=True,
                             text=True, check=True).stdout.split()
        c_seconds = float(out[0])
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        hashlib.sha256(data).digest()
        zlib.crc32(data)
        best = min(best, time.perf_counter() - t0)
    mib = len(data) / (1 << 20)
    print(f"package: {len(blob)} bytes, one {args.mib} MiB entry")
    print(f"C verifier (sha256+crc32): {c_seconds * 1e3:8.1f} ms  {mib / c_seconds:8.1f} MiB/s")
    print(f"reference hashlib+zlib   : {best * 1e3:8.1f} ms  {mib / best:8.1f} MiB/s")
    print(f"ratio C/reference time   : {c_seconds / best:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
