"""Real ELFs and a real output directory for the stats and report tests.

Everything here is made by the real tools: the cross compilers (aarch64-linux-gnu-gcc,
arm-none-eabi-gcc), objcopy, mkimage (a FIT image), and seedfw's own compression stage (LZ4
block containers) — no hand-written placeholder numbers. Plain functions with a per-session
cache; the test modules wrap them in session fixtures.

Two variants of the same program differ by exactly one known change, so diffs can be asserted
to the byte: variant "b" grows the const table `lut` by 64 bytes, drops `old_fn` and adds
`new_fn`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import lz4.block

from seedfw import util

PROGRAM = r"""
#include <stdint.h>
#ifndef LUT_EXTRA
#define LUT_EXTRA 0
#endif
const uint8_t lut[1024 + LUT_EXTRA] = {1, 2, 3, 4, 5, 6, 7, 8};
const char banner[64] = "seedfw stats test image: sizes are read back";
uint32_t counters[64] = {1, 2, 3};
uint8_t scratch[4096];
#ifdef VARIANT_B
int new_fn(int x) { return x * 3 + lut[x & 7] + banner[x & 15]; }
#define FN new_fn
#else
int old_fn(int x) { return x * 5 + counters[x & 3] - banner[x & 7]; }
#define FN old_fn
#endif
void _start(void)
{
	volatile int r = 0;
	for (int i = 0; i < 64; i++) {
		scratch[i] = (uint8_t)FN(i);
		r += lut[i] + (int)counters[i];
	}
	for (;;)
		;
}
"""

COMPILERS = {
    "aarch64": ["aarch64-linux-gnu-gcc", "-no-pie", "-mgeneral-regs-only"],
    "arm": ["arm-none-eabi-gcc", "-mcpu=cortex-m3", "-mthumb"],
}
_CACHE: dict = {}


def cross_build(workdir: Path, arch: str, variant: str = "a") -> Path:
    """Compile and link PROGRAM freestanding for `arch`; returns the ELF path."""
    key = (arch, variant)
    if key in _CACHE:
        return _CACHE[key]
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "prog.c"
    src.write_text(PROGRAM)
    elf = workdir / f"{'payload' if arch == 'aarch64' else 'mcu'}.elf"
    flags = ["-DVARIANT_B", "-DLUT_EXTRA=64"] if variant == "b" else []
    cmd = COMPILERS[arch] + ["-O1", "-ffreestanding", "-nostdlib", "-static", "-fno-common",
                             "-Wl,--build-id=none", *flags, "-o", str(elf), str(src)]
    subprocess.run(cmd, check=True, cwd=workdir)
    _CACHE[key] = elf
    return elf


def _write_compression(outdir: Path, elf: Path, mcu_elf: Path, sections: list[str]) -> None:
    """compression.json from seedfw's compression stage (real LZ4 block containers), with a
    dictionary file cut from another image (the MCU ELF's .rodata) — stored, so it has a cost."""
    from seedfw.compress import sections as comp
    from seedfw.compress.dictionary import Dictionary
    dict_file = outdir.parent / f"{outdir.name}-mcu-rodata.dict"
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "--only-section=.rodata",
                    str(mcu_elf), str(dict_file)], check=True)
    dictionary = Dictionary.from_file(dict_file, 2048)
    results = comp.compress_elf_sections(elf, sections, block_size=4096, hc_level=9,
                                         dictionary=dictionary)
    comp.write_report(outdir, results, elf, 4096, 9, dictionary)


def weights_blob(n: int = 16384) -> bytes:
    """A raw model blob: float32 weights of a deterministic smooth kernel (compressible the
    way quantised weights are, but no made-up sizes: the blob is what it is)."""
    return b"".join(struct.pack("<f", round(math.sin(i / 37.0) * 4) / 4) for i in range(n))


def make_output_dir(root: Path, variant: str = "a", with_counters: bool = True) -> Path:
    """A board output directory from real artifacts: build/…/*.elf, images/ (raw binary + FIT
    via mkimage), manifest.json, compression.json, models/, config.json, counters.json."""
    out = root / f"out-{variant}"
    if out.exists():
        shutil.rmtree(out)
    build = root / f"build-{variant}"
    payload = cross_build(build / "payload", "aarch64", variant)
    mcu = cross_build(build / "mcu", "arm", variant)
    (out / "build" / "payload").mkdir(parents=True)
    (out / "build" / "mcu").mkdir(parents=True)
    shutil.copy(payload, out / "build" / "payload" / "payload.elf")
    shutil.copy(mcu, out / "build" / "mcu" / "mcu.elf")
    images = out / "images"
    images.mkdir()
    subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", str(payload),
                    str(images / "payload.bin")], check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", str(mcu),
                    str(images / "mcu.bin")], check=True)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(util.source_date_epoch()))
    subprocess.run(["mkimage", "-f", "auto", "-A", "arm64", "-O", "linux", "-T", "kernel",
                    "-C", "none", "-a", "0x60000000", "-e", "0x60000000", "-n", "payload",
                    "-d", str(images / "payload.bin"), str(images / "payload.itb")],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    (out / "models").mkdir()
    (out / "models" / "kernel.raw").write_bytes(weights_blob())
    _write_compression(out, out / "build" / "payload" / "payload.elf", mcu, [".rodata", ".text"])
    # The ELFs are declared outputs too (the report lists the manifest's ELFs, never a walk).
    declared = sorted(images.iterdir()) + [out / "build" / "payload" / "payload.elf",
                                           out / "build" / "mcu" / "mcu.elf"]
    manifest = {"board": "qemu-aarch64", "build_id": f"test-{variant}", "artifacts": [
        {"name": p.name, "path": str(p.relative_to(out)), "size": p.stat().st_size,
         "sha256": util.sha256_file(p)} for p in declared]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (out / "config.json").write_text(json.dumps({
        "MODELS": True, "MODEL_FRAME_RATE": 30, "MODELS_COMPRESS": True,
        "COMPRESS_HC_LEVEL": 9, "BUILD_ID": f"test-{variant}"}))
    return out


def host_counters(outdir: Path, target: Path) -> Path:
    """A counters JSON whose values are really measured — on the host, by decompressing the
    model blob with liblz4 (python-lz4) — standing in for `invoke counters --json` until a
    board run is wired in. The report must show these as measured and nothing else."""
    blob = (outdir / "models" / "kernel.raw").read_bytes()
    packed = lz4.block.compress(blob, store_size=False)
    t0 = time.perf_counter_ns()
    out = lz4.block.decompress(packed, uncompressed_size=len(blob))
    elapsed = time.perf_counter_ns() - t0
    target.write_text(json.dumps({"source": "host liblz4 run", "stats": {
        "bytes_read_from_storage": len(packed), "bytes_decompressed": len(out),
        "decompress_ns": elapsed}}))
    return target
