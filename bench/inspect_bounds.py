#!/usr/bin/env python3
"""`invoke inspect` on large hostile files: every one must finish in <= 20 s and <= 512 MiB
peak RSS (issue 24; docs/hostile-input.md).

The corpus (written to a scratch directory, up to 256 MiB each; sparse where the content is
zeros): a zero-filled file, a GPT disk whose one partition spans it, a FIT whose embedded image
is 250 MiB of random bytes, a FIT of 200 images all pointing at one 250 MiB span (overlap), a
boot package with a 250 MiB entry, a package whose LZ4 model expands to the 128 MiB cap, an
RKNS image whose four 32 MiB idblock images overlap, and the same 256 MiB file as the issue's
"/dev/zero" stand-in. Each is run as a user runs it (`python -m invoke inspect FILE` in a
child); time is wall time, RSS is the child's own peak (wait4's ru_maxrss) — measured, on this
machine, shared with other work.

    python3 bench/inspect_bounds.py [--keep DIR] [--size-mib 256]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

TIME_LIMIT, RSS_LIMIT_MIB = 20.0, 512


def corpus(out: Path, size: int) -> dict[str, Path]:
    from hostile import fdt, fit, s, u32
    from seedfw.compress import container
    from seedfw.images import package, samples
    from seedfw.images.entries import Entry, ModelEntry
    files = {}
    big = size - (6 << 20)

    def sparse(name, head: bytes = b"", at_end: bytes = b""):
        p = out / name
        with open(p, "wb") as f:
            f.write(head)
            f.truncate(size)
            if at_end:
                f.seek(size - len(at_end))
                f.write(at_end)
        files[name] = p

    sparse("zeros.bin")
    # one partition over the whole disk; the GPT's backup array/header at its end (sparse)
    disk = samples.gpt_disk([("firmware", 2048, b"\0")], lbas=size // 512, pad_lbas=big // 512)
    files["disk-one-partition.img"] = out / "disk-one-partition.img"
    with open(files["disk-one-partition.img"], "wb") as f:
        f.write(disk[:64 << 10])
        f.seek(size - (33 * 512))
        f.write(disk[-33 * 512:])
    del disk
    rnd = os.urandom(big)
    image = ("big", [("data", rnd), ("type", s("firmware"))],
             [("hash-1", [("algo", s("sha256")), ("value", hashlib.sha256(rnd).digest())], [])])
    (out / "fit-embedded.itb").write_bytes(fit([image]))
    files["fit-embedded.itb"] = out / "fit-embedded.itb"
    head = fit([(f"i{i}", [("data-position", u32(1 << 20)), ("data-size", u32(big)),
                           ("type", s("firmware"))],
                 [("hash-1", [("algo", s("sha256")), ("value", bytes(32))], [])])
                for i in range(200)])
    with open(out / "fit-overlap.itb", "wb") as f:
        f.write(head.ljust(1 << 20, b"\0"))
        f.write(rnd)
    files["fit-overlap.itb"] = out / "fit-overlap.itb"
    (out / "package-big.pkg").write_bytes(package.encode([Entry("big", rnd)]))
    files["package-big.pkg"] = out / "package-big.pkg"
    del rnd
    from seedfw.images.reading import CAPS
    zeros = bytes(CAPS["lz4_output"])
    stored = container.write_container(zeros, block_size=1 << 20, level=0)
    del zeros
    (out / "package-lz4-cap.pkg").write_bytes(package.encode(
        [ModelEntry("m", stored, CAPS["lz4_output"], 64, model_type="raw", compression="lz4")]))
    files["package-lz4-cap.pkg"] = out / "package-lz4-cap.pkg"
    # four idblock images of the largest size the header can say (65535 sectors), all at the
    # same offset: 128 MiB hashed from one 32 MiB span (overlap is bounded, not refused)
    idb = bytearray(samples.idblock_bytes([b"x"] * 4))
    for i in range(4):
        struct.pack_into("<I", idb, 120 + i * 88, (0xFFFF << 16) | 4)
    sparse("rkns-4x32mib.img", bytes(idb[:2048]))
    return files


def measure(path: Path) -> tuple[int, float, float, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "inspect", str(path), "--json"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _pid, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - start
    line = next((l for l in err.splitlines() if l.startswith("error: ")), "")
    return os.waitstatus_to_exitcode(status), took, usage.ru_maxrss / 1024, line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="write the corpus here and keep it")
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--generate", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:               # in a child: its memory must not count as the runs' peak
        corpus(Path(args.generate), args.size_mib << 20)
        return 0
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="seedfw-bounds-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        # Linux keeps a process's peak RSS across fork+exec, so the files are written by a
        # child and this process stays small: each run's ru_maxrss is then its own.
        subprocess.run([sys.executable, __file__, "--generate", str(out), "--size-mib",
                        str(args.size_mib)], check=True)
        files = {p.name: p for p in sorted(out.iterdir())}
        worst_t, worst_r, bad = (0.0, ""), (0.0, ""), []
        print(f"{'file':26} {'MiB':>5} {'exit':>4} {'s':>6} {'RSS MiB':>8}  error line")
        for name, path in files.items():
            rc, took, rss, line = measure(path)
            print(f"{name:26} {path.stat().st_size >> 20:5} {rc:4} {took:6.2f} {rss:8.1f}  "
                  f"{line[:90]}")
            worst_t = max(worst_t, (took, name))
            worst_r = max(worst_r, (rss, name))
            if took > TIME_LIMIT or rss > RSS_LIMIT_MIB or "Traceback" in line:
                bad.append(name)
        print(f"worst time {worst_t[0]:.2f} s ({worst_t[1]}), worst RSS {worst_r[0]:.1f} MiB "
              f"({worst_r[1]}); limits {TIME_LIMIT} s / {RSS_LIMIT_MIB} MiB; measured on "
              f"{os.uname().nodename}, wall time on a shared machine")
        return 1 if bad else 0
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
