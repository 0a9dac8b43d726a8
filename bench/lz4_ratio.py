#!/usr/bin/env python3
"""Compressed size: seedfw's LZ4 block containers vs the lz4 CLI run the way binman runs it, and
vs zstd -19, on the same section bytes, same run.

Per section (raw bytes extracted with pyelftools):
  binman     `lz4 --no-frame-crc -B4 -5 -c` (binman's lz4 bintool arguments): frame bytes
  zstd-19    `zstd -19 -c`: frame bytes (a ratio reference LZ4 cannot reach)
  ours       seedfw container (header 40 B + 4 B per block + blocks), HC12, for each block size,
             without a dictionary and with the project dictionary
             (firmware/lz4/dict/aarch64-rodata.dict); "+dict" adds the dictionary's 2048 stored
             bytes (what an image carrying it pays), "resident" does not (dictionary already in
             memory / shared by several images)
  ratio      ours / binman (goal <= 0.85)

Inputs: ELF[:SECTION,...] arguments; by default U-Boot qemu_arm64 from Debian's u-boot-qemu
(sha256-pinned, seedfw.compress.corpus) and every bl31.elf / payload ELF under output/.

    python3 bench/lz4_ratio.py [ELF[:.rodata,.text] ...] [--block-sizes 4096,65536]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from seedfw.compress.container import write_container
from seedfw.compress.sections import read_elf_sections
from seedfw.compress.train import elf_label
from seedfw.errors import SeedfwError

from lz4_inputs import PROJECT_DICT, default_inputs, parse_input

BINMAN_LZ4 = ["lz4", "--no-frame-crc", "-B4", "-5", "-c"]
ZSTD = ["zstd", "-19", "-c", "-q"]


def tool_bytes(cmd: list[str], data: bytes) -> int:
    return len(subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              check=True).stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", help="ELF[:SECTION,...] (default: see above)")
    ap.add_argument("--block-sizes", default="4096,16384,65536")
    ap.add_argument("--level", type=int, default=12)
    args = ap.parse_args(argv)
    for tool in ("lz4", "zstd"):
        if shutil.which(tool) is None:
            print(f"error: {tool} not installed (apt-get install {tool})", file=sys.stderr)
            return 1
    try:
        inputs = [parse_input(a) for a in args.inputs] or default_inputs(with_payload=True)
    except SeedfwError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return 1
    dic = PROJECT_DICT.read_bytes()
    print(f"{'section':<40}{'raw':>8}{'binman':>8}{'zstd19':>8}{'block':>7}{'ours':>8}"
          f"{'+dict':>8}{'resident':>9}  ratio ours/binman (no dict, +dict, resident)")
    for elf, names in inputs:
        try:
            found = read_elf_sections(elf, names)
        except SeedfwError as exc:
            print(f"error: {exc.line()}", file=sys.stderr)
            return 1
        for name in names:
            if name not in found:
                continue
            data = found[name][1]
            binman = tool_bytes(BINMAN_LZ4, data)
            zstd = tool_bytes(ZSTD, data)
            label = f"{elf_label(elf)}:{name}"
            for bs in map(int, args.block_sizes.split(",")):
                plain = len(write_container(data, bs, args.level))
                withd = len(write_container(data, bs, args.level, dic))
                stored = withd + len(dic)
                print(f"{label:<40}{len(data):>8}{binman:>8}{zstd:>8}{bs:>7}{plain:>8}{stored:>8}"
                      f"{withd:>9}  {plain / binman:.3f} {stored / binman:.3f} "
                      f"{withd / binman:.3f}")
            print(f"{'':<40}{'':>8}{100 * binman / len(data):>7.1f}%{100 * zstd / len(data):>7.1f}%"
                  f"  (binman and zstd as % of raw)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
