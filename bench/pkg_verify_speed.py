#!/usr/bin/env python3
"""Boot-package verification speed, two ways, in one run.

Emulated (the AArch64 code the board runs): firmware/common's SHA-256 built both ways sha256.c
offers — portable C (-mgeneral-regs-only, as the payload) and the ARMv8 SHA2 instructions
(-march=armv8-a+crypto) — run bare-metal in qemu-system-aarch64 -cpu cortex-a76 under -icount,
instructions counted by seedfw's TCG plug-in (firmware/qemu-plugin/) over the program's code.
Per byte = (count at N2 - count at N1) / (N2 - N1), so start-up and padding drop out; the same
for the whole verifier (sha256 + crc32 of a package with one model entry). These are emulated
instruction counts, not board time: an A76 retires SHA256H at its own rate, which no emulator
shows.

Host (labelled so): the same verifier compiled for this host with -O2 (portable C) against
Python's hashlib.sha256 + zlib.crc32 over the same bytes, MiB/s and ratio; a property of the
code on this host, not of the board.

    PYTHONPATH=tools python3 bench/pkg_verify_speed.py [--mib 8] [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMON = ROOT / "firmware" / "common"
PKG_ADDR = 0x60400000
# the two builds of sha256.c (see its head comment): the compiler's target picks the block function
BUILDS = {"portable": ["-mgeneral-regs-only"], "armv8-sha2": ["-march=armv8-a+crypto"]}
SIZES = (64 << 10, 1 << 20)          # N1, N2 for the per-byte slope


def cross(dest: Path, name: str, flags: list[str], sources: list[Path]) -> Path:
    elf = dest / f"{name}.elf"
    subprocess.run(["aarch64-linux-gnu-gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-ffreestanding", "-nostdlib", "-mstrict-align", *flags,
                    f"-DPKG_ADDR={PKG_ADDR:#x}UL", "-DPKG_MAX=0x00400000UL",
                    f"-I{ROOT / 'firmware/include'}", f"-I{COMMON}", "-T", str(COMMON / "qemu/link.ld"),
                    "-Wl,--no-warn-rwx-segments", "-o", str(elf), str(COMMON / "qemu/start.S"),
                    str(COMMON / "qemu/main.c"), *map(str, sources)], check=True)
    return elf


def counted(elf: Path, blob: Path, plugin: Path, tmp: Path) -> tuple[int, list[str]]:
    """(instructions executed in the ELF's code, UART lines) of one boot."""
    from seedfw.counters.emulated import ICOUNT, _elf_info

    (start, end), _ = _elf_info(elf)
    out = tmp / "count.json"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a76", "-m", "1024", "-nographic",
         "-nic", "none", "-monitor", "none", "-semihosting-config", "enable=on,target=native",
         *ICOUNT, "-plugin", f"file={plugin},out={out},region=dram:dram:0x40000000:0x40000000,"
         f"phase=prog:{start:#x}:{end:#x}", "-kernel", str(elf),
         "-device", f"loader,file={blob},addr={PKG_ADDR:#x}"],
        capture_output=True, text=True, timeout=600)
    lines = [ln.rstrip("\r") for ln in proc.stdout.splitlines()]
    if proc.returncode != 0:
        raise SystemExit(f"{elf.name}: QEMU exited {proc.returncode}: {lines[-1:]}")
    from seedfw import util

    doc = util.read_json(out)      # door: the plug-in's JSON of this boot
    return doc["phases"][0]["insns"], lines


def emulated(tmp: Path) -> dict:
    """Instructions per byte of sha256 alone and of the whole verifier, both builds."""
    from seedfw.counters import plugin_build
    from seedfw.images import package
    from seedfw.images.entries import ModelEntry

    plugin_build.header(tmp / "include", progress=lambda s: None)
    plugin = plugin_build.compile_plugin(tmp / "include", tmp / "traffic.so")
    rng = __import__("random").Random(33)
    data = {n: rng.randbytes(n) for n in SIZES}
    res = {}
    for impl, flags in BUILDS.items():
        hasher = cross(tmp, f"hash-{impl}", [*flags, "-DHASH_ONLY"], [COMMON / "sha256.c"])
        verifier = cross(tmp, f"verify-{impl}", flags,
                         [COMMON / f for f in ("sha256.c", "crc32.c", "pkg_verify.c")])
        row = {}
        for what, elf in (("sha256", hasher), ("verify", verifier)):
            counts = []
            for n in SIZES:
                blob = tmp / "in.bin"
                if what == "sha256":
                    blob.write_bytes(n.to_bytes(8, "little") + bytes(56) + data[n])
                else:
                    blob.write_bytes(package.encode([ModelEntry("bench", data[n], model_type="raw")]))
                insns, lines = counted(elf, blob, plugin, tmp)
                want = f"{impl} {hashlib.sha256(data[n]).hexdigest()}"
                if what == "sha256" and lines != [want]:
                    raise SystemExit(f"{impl}: digest {lines} is not hashlib's {want}")
                if what == "verify" and "model bench sha256 ok" not in lines:
                    raise SystemExit(f"{impl}: the verifier did not pass: {lines}")
                counts.append(insns)
            row[what] = {"counts": counts, "per_byte": (counts[1] - counts[0]) / (SIZES[1] - SIZES[0])}
        res[impl] = row
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=8, help="model blob size in MiB")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the figures here")
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
    with tempfile.TemporaryDirectory(prefix="seedfw-pkgbench-emu-") as tmp:
        emu = emulated(Path(tmp))
    print(f"emulated: qemu-system-aarch64 -cpu cortex-a76 -icount, instructions counted by "
          f"seedfw's TCG plug-in over the program's code; per byte = slope between "
          f"{SIZES[0]:,} and {SIZES[1]:,} B of random data (emulated instruction counts, not "
          "board time)")
    print(f"{'build':12} {'sha256 insns/B':>15} {'verify insns/B':>15}   counts at N1, N2")
    for impl, row in emu.items():
        print(f"{impl:12} {row['sha256']['per_byte']:15.3f} {row['verify']['per_byte']:15.3f}   "
              f"sha256 {row['sha256']['counts']}, verify {row['verify']['counts']}")
    p, c = emu["portable"], emu["armv8-sha2"]
    print(f"ratio portable / armv8-sha2 (instructions): sha256 "
          f"{p['sha256']['per_byte'] / c['sha256']['per_byte']:.2f}x, whole verifier "
          f"{p['verify']['per_byte'] / c['verify']['per_byte']:.2f}x")
    print(f"host ({os.uname().nodename}, portable C -O2, wall clock): package {len(blob)} bytes, "
          f"one {args.mib} MiB entry")
    print(f"  host C verifier (sha256+crc32): {c_seconds * 1e3:8.1f} ms  {mib / c_seconds:8.1f} MiB/s")
    print(f"  host reference hashlib+zlib   : {best * 1e3:8.1f} ms  {mib / best:8.1f} MiB/s")
    print(f"  host ratio C/reference time   : {c_seconds / best:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"emulated": emu, "host_c_s": c_seconds,
                                               "host_ref_s": best}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
