#!/usr/bin/env python3
"""Decompression speed: seedfw's freestanding LZ4 decoder vs liblz4, same blocks, same process.

Builds bench/lz4_speed.c (make -C firmware/lz4 bench, against the system liblz4-dev) into a
temporary directory, writes containers with seedfw.compress for each input x block size x
dictionary, and runs lz4_speed on each: it times lz4blk_decompress_block and liblz4's
LZ4_decompress_safe_usingDict on the very same blocks (alternating passes, fastest pass of
each counts) and prints MB/s of decompressed output and the ratio ours/liblz4 (goal >= 0.9).

Inputs: ELF sections given as ELF[:SECTION,...] arguments; by default U-Boot qemu_arm64 from
Debian's u-boot-qemu (sha256-pinned, seedfw.compress.corpus) .rodata and .data, plus TF-A BL31
.rodata/.text of any ELF found under output/*/ (build with `invoke build`).

    python3 bench/lz4_speed.py [ELF[:.rodata,.text] ...] [--seconds 1] [--level 12]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from seedfw.compress.container import write_container
from seedfw.compress.sections import read_elf_sections
from seedfw.compress.train import elf_label
from seedfw.errors import SeedfwError
from seedfw import util
from seedfw.paths import ROOT

from lz4_inputs import PROJECT_DICT, default_inputs, parse_input



def host_mhz() -> float | None:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1])
    except OSError:
        pass
    return None


def save_result(speeds: list[float], ratio: float, path: str) -> None:
    """The figure `invoke report` uses for decompression cost: cycles per output byte on this
    host = host clock / our throughput. A target core differs, so the report calls the cost an
    estimate; this file says how the number was made."""
    mhz = host_mhz()
    if not path or not speeds or mhz is None:
        return
    mbps = math.exp(sum(map(math.log, speeds)) / len(speeds))
    result = {"cycles_per_byte": round(mhz / mbps, 3), "host_cpu_mhz": mhz,
              "ours_mb_per_s_geomean": round(mbps, 1), "ratio_vs_liblz4_geomean": round(ratio, 3),
              "cases": len(speeds),
              "how": "host clock (/proc/cpuinfo) / our decoder's throughput (geometric mean, "
                     "bench/lz4_speed.py); measured on the build host, not on the target core"}
    util.write_json(ROOT / path, result)
    print(f"wrote {path}: {result['cycles_per_byte']} cycles/byte at {mhz:.0f} MHz")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", help="ELF[:SECTION,...] (default: see above)")
    ap.add_argument("--seconds", type=float, default=1.0, help="timing per case (default 1)")
    ap.add_argument("--level", type=int, default=12, help="LZ4 HC level of the blocks")
    ap.add_argument("--block-sizes", default="4096,16384,65536")
    ap.add_argument("--save", default="bench/results/lz4_speed.json",
                    help="where to record cycles/byte for the reports ('' = do not save)")
    args = ap.parse_args(argv)
    try:
        inputs = [parse_input(a) for a in args.inputs] or default_inputs()
    except SeedfwError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return 1
    dic = PROJECT_DICT.read_bytes()
    with tempfile.TemporaryDirectory(prefix="lz4speed.") as tmp:
        tmp = Path(tmp)
        subprocess.run(["make", "-s", "-C", str(ROOT / "firmware/lz4"), f"O={tmp}", "bench"],
                       check=True)
        exe = tmp / "bench" / "lz4_speed"
        ratios, speeds = [], []
        print(f"{'input':<44}{'block':>7}{'dict':>6}{'ours MB/s':>11}{'liblz4 MB/s':>13}"
              f"{'ratio':>7}")
        for elf, names in inputs:
            found = read_elf_sections(elf, names)
            for name in names:
                if name not in found:
                    print(f"{elf.name}:{name}: not present, skipped")
                    continue
                data = found[name][1]
                for bs in map(int, args.block_sizes.split(",")):
                    for d in (b"", dic):
                        c = tmp / "c.lz4blk"
                        c.write_bytes(write_container(data, bs, args.level, d))
                        (tmp / "d").write_bytes(d)
                        p = subprocess.run([exe, c, tmp / "d" if d else "-", str(args.seconds)],
                                           capture_output=True, text=True)
                        label = f"{elf_label(elf)}:{name} ({len(data)} B)"
                        if p.returncode != 0:
                            print(f"{label:<44}{bs:>7}{len(d):>6}  {p.stderr.strip()}")
                            continue
                        ours, lib, _, ratio = p.stdout.split()
                        ratios.append(float(ratio))
                        speeds.append(float(ours))
                        print(f"{label:<44}{bs:>7}{len(d):>6}{float(ours):>11.0f}"
                              f"{float(lib):>13.0f}{float(ratio):>7.3f}")
        if ratios:
            geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
            print(f"ratio ours/liblz4: geometric mean {geo:.3f}, min {min(ratios):.3f}, "
                  f"max {max(ratios):.3f} over {len(ratios)} cases (goal >= 0.9)")
            save_result(speeds, geo, args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
