#!/usr/bin/env python3
"""Decompression speed: every build of seedfw's LZ4 decoder the firmware can link vs liblz4.

Builds bench/lz4_speed.c once per decoder variant (make -C firmware/lz4 bench: the decoder
host-compiled with the variant's own flags, VARIANT_fast / VARIANT_small, against the system
liblz4-dev) into a temporary directory, writes containers with seedfw.compress for each input x
block size x dictionary, and runs each variant's lz4_speed on them: it times
lz4blk_decompress_block and liblz4's LZ4_decompress_safe_usingDict on the very same blocks
(alternating passes, fastest pass of each counts). Per variant it prints MB/s, the ratio to
liblz4 and the .text size of the aarch64 -mstrict-align object the firmware links; the
"firmware" line is the variant the configuration links (kconfig LZ4_DECODER).

Inputs: ELF sections given as ELF[:SECTION,...] arguments; by default U-Boot qemu_arm64 from
Debian's u-boot-qemu (sha256-pinned, seedfw.compress.corpus) .rodata and .data, plus TF-A BL31
.rodata/.text of any ELF found under output/*/ (build with `invoke build`). Sections with the
same bytes (BL31 in the build tree and in images/) are measured once.

Results go to the per-host, per-variant cache (seedfw.compress.decoder_speed:
$SEEDFW_CACHE_DIR/bench/lz4_speed/<host>-<variant>.json, default ~/.cache/seedfw), never into
the source tree. `invoke report` does not read that cache; give it one result with
`--decoder-bench FILE` to show it, labelled as measured on the host, not the board. Exit status: 0, 1 on error, 2 when the linked variant misses the goal
(geometric-mean ratio >= 0.9 of liblz4).

    python3 bench/lz4_speed.py [ELF[:.rodata,.text] ...] [--seconds 1] [--variants fast,small]
        [--config output/rk3588/config.json] [--no-save]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from seedfw.compress import decoder_speed
from seedfw import util
from seedfw.compress.container import write_container
from seedfw.compress.sections import read_elf_sections
from seedfw.compress.train import elf_label
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT

from lz4_inputs import PROJECT_DICT, default_inputs, parse_input

GOAL = 0.9
LZ4DIR = ROOT / "firmware" / "lz4"
# The aarch64 objects as BL31 and the payload link each variant (firmware/lz4/Makefile).
CROSS_OBJ = {"fast": "aarch64-strict", "small": "aarch64-small"}


def cpu_info() -> tuple[str | None, float | None]:
    """(model name, nominal MHz) from /proc/cpuinfo; None where absent (not Linux, arm64)."""
    model = mhz = None
    try:
        for line in open("/proc/cpuinfo"):
            key, _, val = line.partition(":")
            if key.strip() == "model name" and model is None:
                model = val.strip()
            elif key.strip() == "cpu MHz" and mhz is None:
                mhz = float(val)
    except (OSError, ValueError):
        pass
    return model, mhz


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def unique_sections(inputs, log=print) -> list[tuple[str, bytes]]:
    """(label, bytes) per input section, each distinct content once (by sha256): the same
    BL31 in the build tree and in images/ must not count twice."""
    seen: dict[str, str] = {}
    out = []
    for elf, names in inputs:
        found = read_elf_sections(elf, names)
        for name in names:
            label = f"{elf_label(elf)}:{name}"
            if name not in found:
                log(f"{label}: not present, skipped")
                continue
            data = found[name][1]
            digest = hashlib.sha256(data).hexdigest()
            if digest in seen:
                log(f"{label} ({elf}): same bytes as {seen[digest]}, skipped")
                continue
            seen[digest] = label
            out.append((label, data))
    return out


def variant_flags(variant: str) -> str:
    p = subprocess.run(["make", "-s", "-C", str(LZ4DIR), f"variant-flags-{variant}"],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def build(tmp: Path, variants: list[str]) -> dict[str, int | None]:
    """Host bench binaries and the aarch64 objects; returns .text bytes per variant (None when
    the cross compiler is missing: the speed is still measured)."""
    subprocess.run(["make", "-s", "-C", str(LZ4DIR), f"O={tmp}",
                    *[f"{tmp}/bench-{v}/lz4_speed" for v in variants]], check=True)
    sizes: dict[str, int | None] = {}
    for v in variants:
        obj = tmp / CROSS_OBJ[v] / "lz4blk.o"
        p = subprocess.run(["make", "-s", "-C", str(LZ4DIR), f"O={tmp}", str(obj)],
                           capture_output=True, text=True)
        size = subprocess.run(["aarch64-linux-gnu-size", "-A", str(obj)], capture_output=True,
                              text=True) if p.returncode == 0 else None
        sizes[v] = None
        if size is not None and size.returncode == 0:
            sizes[v] = sum(int(f[1]) for f in (ln.split() for ln in size.stdout.splitlines())
                           if len(f) >= 2 and f[0].startswith(".text") and f[1].isdigit())
    return sizes


def linked(config_path: Path | None) -> tuple[str, str]:
    """(variant, where from): the configuration's LZ4_DECODER, else the Kconfig default."""
    if config_path is None:
        return decoder_speed.DEFAULT_VARIANT, "Kconfig default (no --config)"
    try:
        data = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SeedfwError(f"cannot read configuration: {exc}", config_path) from None
    if isinstance(data, dict) and isinstance(data.get("values"), dict):
        data = data["values"]
    return decoder_speed.linked_variant(data if isinstance(data, dict) else {}), str(config_path)


def result(variant: str, flags: str, size: int | None, cases: list[dict], args) -> dict:
    model, mhz = cpu_info()
    ours = geomean([c["ours"] for c in cases])
    lib = geomean([c["liblz4"] for c in cases])
    ratios = [c["ratio"] for c in cases]
    return {
        "host": decoder_speed.host_name(), "cpu_model": model, "cpu_mhz": mhz,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "variant": variant, "flags": flags, "platform": platform.platform(),
        "machine": platform.machine(),
        "aarch64_text_bytes": size,
        "mb_per_s": round(ours, 1), "liblz4_mb_per_s": round(lib, 1),
        "ratio_vs_liblz4": round(geomean(ratios), 3),
        "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
        "cycles_per_byte": round(mhz / ours, 3) if mhz else None,
        "cases": cases, "seconds_per_case": args.seconds, "level": args.level,
        "how": "host clock (/proc/cpuinfo 'cpu MHz', nominal) / this variant's decompression "
               "throughput (geometric mean over the cases; fastest pass of each, alternating "
               "with liblz4 in the same process), bench/lz4_speed.py; the decoder host-compiled "
               f"with the firmware's flags for it ({flags}); host core, not the target",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", help="ELF[:SECTION,...] (default: see above)")
    ap.add_argument("--seconds", type=float, default=1.0, help="timing per case (default 1)")
    ap.add_argument("--level", type=int, default=12, help="LZ4 HC level of the blocks")
    ap.add_argument("--block-sizes", default="4096,16384,65536")
    ap.add_argument("--variants", default=",".join(decoder_speed.VARIANTS),
                    help="decoder variants to measure (default: all the firmware can link)")
    ap.add_argument("--config", type=Path,
                    help="config.json of a build: which variant is 'firmware' (default: "
                         "output/rk3588/config.json if present, else the Kconfig default)")
    ap.add_argument("--no-save", action="store_true", help="do not write the result cache")
    args = ap.parse_args(argv)
    try:
        variants = [v for v in args.variants.split(",") if v]
        bad = [v for v in variants if v not in decoder_speed.VARIANTS]
        if bad or not variants:
            raise SeedfwError(f"unknown decoder variant(s) {bad}; known: "
                              f"{', '.join(decoder_speed.VARIANTS)}", field="--variants")
        cfg = args.config
        if cfg is None and (ROOT / "output/rk3588/config.json").is_file():
            cfg = ROOT / "output/rk3588/config.json"
        fw, fw_from = linked(cfg)
        sections = unique_sections([parse_input(a) for a in args.inputs] or default_inputs())
    except SeedfwError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return 1
    if fw not in variants:
        variants.append(fw)
    dic = PROJECT_DICT.read_bytes()
    cases: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="lz4speed.") as tmp:
        tmp = Path(tmp)
        sizes = build(tmp, variants)
        flags = {v: variant_flags(v) for v in variants}
        head = "".join(f"{v + ' MB/s':>12}{'ratio':>7}" for v in variants)
        print(f"{'input':<40}{'block':>7}{'dict':>6}{head}{'liblz4 MB/s':>13}")
        for label, data in sections:
            for bs in map(int, args.block_sizes.split(",")):
                for d in (b"", dic):
                    c = tmp / "c.lz4blk"
                    c.write_bytes(write_container(data, bs, args.level, d))
                    (tmp / "d").write_bytes(d)
                    row, libs = "", []
                    for v in variants:
                        p = subprocess.run([tmp / f"bench-{v}" / "lz4_speed", c,
                                            tmp / "d" if d else "-", str(args.seconds)],
                                           capture_output=True, text=True)
                        if p.returncode != 0:
                            row += f"  {v}: {p.stderr.strip()}"
                            continue
                        ours, lib, _, ratio = p.stdout.split()
                        cases[v].append(dict(input=label, bytes=len(data), block=bs,
                                             dict=len(d), ours=float(ours),
                                             liblz4=float(lib), ratio=float(ratio)))
                        libs.append(float(lib))
                        row += f"{float(ours):>12.0f}{float(ratio):>7.3f}"
                    lib_s = f"{geomean(libs):>13.0f}" if libs else ""
                    print(f"{label + f' ({len(data)} B)':<40}{bs:>7}{len(d):>6}{row}{lib_s}")
    model, mhz = cpu_info()
    print(f"\nhost {decoder_speed.host_name()}, {model or 'CPU model unknown'}, "
          f"{f'{mhz:.0f} MHz' if mhz else 'clock unknown'}; aarch64 .text: -mstrict-align "
          "object of decoder + container, as BL31 and the payload link it")
    print(f"{'variant':<22}{'flags':<22}{'MB/s':>8}{'liblz4':>8}{'ratio':>7}{'min':>7}"
          f"{'.text B':>9}{'cyc/B':>7}")
    status = 0
    for v in variants + ["firmware"]:
        var = fw if v == "firmware" else v
        if not cases[var]:
            print(f"{v:<22}no successful cases")
            status = 1
            continue
        res = result(var, flags[var], sizes.get(var), cases[var], args)
        name = f"firmware ({var})" if v == "firmware" else v
        size = res["aarch64_text_bytes"]
        cpb = res["cycles_per_byte"]
        print(f"{name:<22}{res['flags']:<22}{res['mb_per_s']:>8.0f}{res['liblz4_mb_per_s']:>8.0f}"
              f"{res['ratio_vs_liblz4']:>7.3f}{res['ratio_min']:>7.3f}"
              f"{size if size is not None else '?':>9}{cpb if cpb is not None else '?':>7}")
        if v == "firmware":
            print(f"firmware links '{var}' ({fw_from}); goal: ratio >= {GOAL} of liblz4")
            if res["ratio_vs_liblz4"] < GOAL:
                status = status or 2
        elif cpb is None and not args.no_save:
            print(f"{'':<22}not saved: host clock unknown, so no cycles/byte")
        elif not args.no_save:
            path = decoder_speed.result_path(var)
            util.write_json(path, res)
            print(f"{'':<22}saved {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
