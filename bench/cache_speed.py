#!/usr/bin/env python3
"""Cold build vs warm-remote build (ccache remote storage on Redis), same run, fresh output dirs.

Starts a real redis-server on a free loopback port (an empty team cache), then builds --board
(default qemu-aarch64: TF-A + U-Boot) twice, each into a fresh output directory with its own,
empty seedfw cache directory (so U-Boot's own compile cache cannot answer and U-Boot really
compiles twice, and the local ccache is empty both times):
  cold   remote empty: every compile misses and is written to the remote
  warm   remote filled by the cold build: compiles are remote hits
U-Boot's patched source tree is unpacked once, before both, into a seed cache and hard-linked
into each run's empty cache dir (U-Boot builds out of tree, O=, and never writes to it): the
unpack is not a compile and would weigh the same in both runs. Each run's tree is at its own
path, so ccache's base_dir is what makes the warm run hit.
Timed: the plan's step times of the compile steps (uboot.build — defconfig and make —,
tfa.build, tfa.fip when the board has it) and U-Boot's make alone (its "compiled U-Boot ... in
N s" line). Steps of one build run two at a time (the plan's job limit), so a step's time is
wall time on a shared machine.
Goal: warm >= 3x faster than cold for the compile steps. The images of both builds are compared
byte for byte (they must be equal).

Result: printed, and written to the seedfw cache, $SEEDFW_CACHE_DIR/bench/cache_speed/<host>.json
(default ~/.cache/seedfw), never into the tree; the report's "cache" section quotes it as
measured by this bench (host, date). Downloads come from the normal download cache.

    python3 bench/cache_speed.py [--board qemu-aarch64] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seedfw import build, paths, util
from seedfw.cache import ccache

COMPILE_STEPS = ("uboot.build", "tfa.build", "tfa.fip")


class Lines:
    """A console for seedfw.build that keeps the progress lines (U-Boot's make time is one)."""

    def __init__(self):
        self.lines: list[str] = []

    def print(self, msg="", **_):
        msg = re.sub(r"\[/?(?:bold )?(?:bold|green|yellow|red|dim|cyan)?\]", "", str(msg))
        self.lines.append(msg)
        print(msg, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed_uboot_source(seed: Path) -> Path | None:
    """U-Boot's patched source tree, unpacked once into `seed`/u-boot (None without U-Boot)."""
    from seedfw.parts import uboot
    os.environ["SEEDFW_CACHE_DIR"] = str(seed)
    src = uboot.source("2025.01")
    return uboot.UbootPart().source_tree(src, seed / "unpack.log", print)


def one_build(board: str, out: Path, cache: Path, fragment: Path, tree: Path | None) -> dict:
    if tree is not None:
        (cache / "u-boot").mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(tree), str(cache / "u-boot" / tree.name)], check=True)
    os.environ["SEEDFW_CACHE_DIR"] = str(cache)
    console = Lines()
    t0 = time.perf_counter()
    result = build.build(board, out, [fragment], console=console)
    total = time.perf_counter() - t0
    steps = {r["step"]: r["seconds"] for r in result.records
             if r["action"] == "ran" and r["step"] in COMPILE_STEPS}
    make = next((float(m.group(1)) for line in console.lines
                 if (m := re.search(r"compiled U-Boot \S+ in (\d+) s", line))), None)
    return {"total_s": round(total, 1), "steps_s": steps,
            "compile_s": round(sum(steps.values()), 1), "uboot_make_s": make,
            "ccache": ccache.summary(out)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="qemu-aarch64")
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    args = ap.parse_args()
    redis = shutil.which("redis-server")
    if redis is None:
        print("redis-server is not installed (invoke setup)", file=sys.stderr)
        return 1
    # The result goes to the caller's seedfw cache; the builds get their own empty ones.
    result_path = ccache.bench_path()
    os.environ.setdefault("SEEDFW_DL_DIR", str(paths.download_dir()))
    work = Path(args.keep or tempfile.mkdtemp(prefix="seedfw-cache-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen([redis, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                               "--appendonly", "no", "--dir", str(work)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if ccache.probe(f"redis://127.0.0.1:{port}") is None:
                break
            time.sleep(0.05)
        fragment = work / "remote.fragment"
        fragment.write_text(f'CONFIG_CCACHE=y\nCONFIG_CCACHE_REMOTE_STORAGE="redis://127.0.0.1:'
                            f'{port}"\n')
        tree = seed_uboot_source(work / "seed-cache")
        runs = {}
        for name in ("cold", "warm"):
            print(f"== {name}: {args.board} into {work / name} (seedfw cache {work / (name + '-cache')})",
                  flush=True)
            runs[name] = one_build(args.board, work / name, work / f"{name}-cache", fragment,
                                   tree)
    finally:
        server.terminate()
        server.wait(10)
    cold, warm = runs["cold"], runs["warm"]
    differ = [p.name for p in sorted((work / "cold" / "images").iterdir())
              if p.is_file() and p.name != ccache.STATS_FILE and
              (work / "warm" / "images" / p.name).read_bytes() != p.read_bytes()]
    ratio = round(cold["compile_s"] / warm["compile_s"], 2) if warm["compile_s"] else None
    doc = {"host": socket.gethostname(), "date": datetime.date.today().isoformat(),
           "board": args.board, "cold_s": cold["compile_s"], "warm_s": warm["compile_s"],
           "ratio": ratio, "goal": ">= 3x", "cold": cold, "warm": warm,
           "images_differ": differ, "cpus": os.cpu_count(), "ccache": ccache.ccache_version(),
           "how": "bench/cache_speed.py: plan step wall times of " + ", ".join(COMPILE_STEPS) +
                  ", fresh output and cache dirs (U-Boot's source pre-unpacked, hard-linked), "
                  "remote = redis-server on loopback"}
    util.write_json(result_path, doc)
    print(f"\ncompile steps ({', '.join(COMPILE_STEPS)}), measured on {doc['host']} "
          f"({doc['cpus']} cpus), {doc['date']}:")
    print(f"  cold (empty remote):       {cold['compile_s']:7.1f} s  {cold['steps_s']}")
    print(f"  warm (remote hits):        {warm['compile_s']:7.1f} s  {warm['steps_s']}")
    print(f"  ratio cold/warm:           {ratio}x  (goal >= 3x)")
    if cold["uboot_make_s"] and warm["uboot_make_s"]:
        print(f"  U-Boot make alone:         {cold['uboot_make_s']:.0f} s -> "
              f"{warm['uboot_make_s']:.0f} s "
              f"({cold['uboot_make_s'] / max(warm['uboot_make_s'], 1):.1f}x)")
    w = warm["ccache"] or {}
    print(f"  warm build's ccache:       {w.get('hits')} hits ({w.get('remote_hits')} remote), "
          f"{w.get('misses')} misses")
    print(f"  images equal byte for byte: {'yes' if not differ else 'NO: ' + ', '.join(differ)}")
    print(f"  result: {result_path}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
