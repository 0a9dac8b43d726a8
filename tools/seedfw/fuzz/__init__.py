"""libFuzzer campaigns for the C parsers that run at boot: build, seed, run, read the verdict.

Targets (one class each would be overkill: a target is a build recipe, a seed recipe and a
length limit, so they are rows of TARGETS):

  lz4-block      firmware/lz4/fuzz/fuzz_block.c      raw LZ4 block decoder, with dictionary
  lz4-container  firmware/lz4/fuzz/fuzz_container.c  lz4blk container parser + decompressor
  pkg            firmware/common/fuzz/fuzz_pkg.c     boot-package verifier (pkg_verify.c)

Every binary is clang-14 with -fsanitize=fuzzer,address,undefined and no sanitizer recovery, so
an out-of-bounds access, an overflow or undefined behaviour aborts and libFuzzer keeps the input.

Why seeds from real data: a decoder fuzzed from nothing spends its time rejecting headers. The
seeds are what the firmware really parses: LZ4 blocks and containers of real ELF sections (the
TF-A BL31, payload and MCU ELFs of earlier builds under output/, else a small program we
cross-build), and boot packages written by images/package.py from the boards' real DVFS tables
and section bytes. Seeds are rebuilt on every run (cheap, deterministic); the corpus that
libFuzzer grows is kept in output/fuzz/<target>/corpus and reused by the next run.

Layout under output/fuzz/<target>/: build/ (binary), seeds/, corpus/, crashes/, fuzz.log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import lz4.block

from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR, ROOT
from ..util import run, write_bytes

CLANG = "clang-14"
# The fixed 64-byte dictionary fuzz_container.c passes to the decompressor: containers written
# against it exercise the dictionary path of the decoder.
CONTAINER_DICT = bytes((i * 7 + 1) & 0xFF for i in range(64))
SECTIONS = (".text", ".rodata", ".ro", ".data", ".text_pmusram")
CRASH_PREFIXES = ("crash-", "leak-", "timeout-", "oom-")


@dataclass(frozen=True)
class Target:
    name: str
    source: str            # the harness, relative to the tree
    what: str              # one line for --list
    max_len: int           # libFuzzer -max_len: keeps exec/s high; seeds are made to fit


TARGETS = {
    "lz4-block": Target("lz4-block", "firmware/lz4/fuzz/fuzz_block.c",
                        "raw LZ4 block decoder (lz4blk_decompress_block), dictionary reach-back",
                        8192),
    "lz4-container": Target("lz4-container", "firmware/lz4/fuzz/fuzz_container.c",
                            "lz4blk container parser + decompressor (lz4blk_decompress)", 20000),
    "pkg": Target("pkg", "firmware/common/fuzz/fuzz_pkg.c",
                  "boot-package verifier (seedfw_pkg_verify), DVFS table included", 4096),
}


@dataclass
class FuzzResult:
    """What one campaign did. Numbers are libFuzzer's own final stats (measured, summed over
    workers); `crashes` are the artifact files it wrote during this run."""

    target: str
    seconds: float
    executions: int
    exec_per_sec: int
    new_units: int
    corpus_files: int
    crashes: list[Path] = field(default_factory=list)
    log: Path | None = None
    binary: Path | None = None


def get(name: str) -> Target:
    if name not in TARGETS:
        raise SeedfwError(f"unknown fuzz target '{name}' (known: {', '.join(TARGETS)})",
                          field="--target")
    return TARGETS[name]


def workdir(target: str, root: str | Path | None = None) -> Path:
    return Path(root) if root else ROOT / "output" / "fuzz" / target


# --------------------------------------------------------------------------- build

def build(target: str, outdir: str | Path, planted: bool = False, log=None) -> Path:
    """Compile the libFuzzer binary into <outdir>/build/ and return its path.

    planted=True builds the pkg harness with SEEDFW_FUZZ_PLANTED_OOB (an injected out-of-bounds
    read; the negative control that shows the fuzzer can see a bug)."""
    t = get(target)
    if shutil.which(CLANG) is None:
        raise SeedfwError(f"{CLANG} not found (apt package clang-14; run 'invoke setup')")
    out = Path(outdir).resolve() / "build"
    env = {"CLANG": CLANG}
    if t.name == "pkg":
        binary = out / ("fuzz_pkg_planted" if planted else "fuzz_pkg")
        make = ["make", "-f", FIRMWARE_DIR / "common" / "fuzz" / "Makefile", f"O={out}", binary]
    else:
        if planted:
            raise SeedfwError("a planted-bug build exists for target 'pkg' only", field="--target")
        binary = out / "fuzz" / Path(t.source).stem
        make = ["make", "-f", FIRMWARE_DIR / "lz4" / "Makefile", f"O={out}", binary]
    run(make, env=env, log=log or Path(outdir) / "build.log")
    return binary


# --------------------------------------------------------------------------- seeds

# Real firmware sources linked into the fallback seed ELF: the code that runs at boot.
FALLBACK_SOURCES = ("common/pkg_verify.c", "common/sha256.c", "common/crc32.c",
                    "lz4/lz4blk_decode.c", "lz4/lz4blk_container.c")


def _small_elf(workdir: Path, log) -> Path:
    """For when no earlier build left ELFs under output/: firmware/common and the lz4 decoder
    cross-compiled for aarch64 and linked relocatably (-r) with a small program of our own
    (lookup table, strings, data), so the sections hold real AArch64 code and constants."""
    src = workdir / "seed.c"
    elf = workdir / "seed.elf"
    if elf.is_file():
        return elf
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(
        "#include <stdint.h>\n"
        "const char banner[] = \"seedfw fuzz seed: boot stage, DVFS table, model blobs ok\\n\";\n"
        "const uint32_t table[256] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233};\n"
        "uint32_t state[32] = {7, 7, 7};\n"
        "uint32_t mix(uint32_t x) { for (int i = 0; i < 8; i++) x = x * 33 + table[x & 255]"
        " + banner[i]; return x; }\n"
        "void _start(void) { for (int i = 0; i < 32; i++) state[i] = mix(state[i]); for (;;) ; }\n")
    run(["aarch64-linux-gnu-gcc", "-O2", "-ffreestanding", "-nostdlib", "-r",
         "-Wl,--build-id=none", f"-I{FIRMWARE_DIR / 'include'}", f"-I{FIRMWARE_DIR / 'common'}",
         f"-I{FIRMWARE_DIR / 'lz4'}", "-o", elf, src,
         *(FIRMWARE_DIR / s for s in FALLBACK_SOURCES)], log=log)
    return elf


def seed_elfs(workdir: Path, log=None, seed_from=()) -> list[Path]:
    """Real ELFs to cut sections from: the images/*.elf of the given build output directories
    (default: every board's under output/), else a small cross-built one."""
    dirs = [Path(d) for d in seed_from] or sorted((ROOT / "output").glob("*"))
    found = sorted(p for d in dirs for p in d.glob("images/*.elf") if p.is_file())
    return found or [_small_elf(workdir / "elf", log)]


def seed_sections(workdir: Path, log=None, limit: int = 65536,
                  seed_from=()) -> list[tuple[str, bytes]]:
    from ..compress.sections import read_elf_sections

    out = []
    for elf in seed_elfs(workdir, log, seed_from):
        try:
            secs = read_elf_sections(elf, list(SECTIONS))
        except SeedfwError:
            continue
        for name, (_addr, data) in sorted(secs.items()):
            if len(data) >= 256:
                out.append((f"{elf.parent.parent.name}-{elf.stem}{name}", data[:limit]))
    if not out:
        raise SeedfwError("no ELF sections to seed from", workdir)
    return out


def _lz4_block_seeds(sections) -> dict[str, bytes]:
    """fuzz_block.c input: [dict_len][capacity / 64][block][dictionary tail]."""
    seeds = {}
    for name, data in sections:
        for i in range(0, min(len(data), 4 * 4096), 4096):
            chunk = data[i:i + 4096]
            chunk = chunk[:len(chunk) // 64 * 64]
            if len(chunk) < 256:
                continue
            comp = lz4.block.compress(chunk, mode="high_compression", compression=9,
                                      store_size=False)
            seeds[f"{name}-{i}"] = bytes([0, len(chunk) // 64]) + comp
            if i >= 255:   # the 255 bytes before the chunk are its dictionary, as in a section
                d = data[i - 255:i]
                comp = lz4.block.compress(chunk, mode="high_compression", compression=9,
                                          store_size=False, dict=d)
                seeds[f"{name}-{i}-dict"] = bytes([255, len(chunk) // 64]) + comp + d
    return seeds


def _container_seeds(sections) -> dict[str, bytes]:
    """Containers of real sections; one extra byte makes the length odd, so fuzz_container.c
    fixes up the header crc of the mutated descendants (even ones test the crc check itself)."""
    from ..compress.container import write_container

    seeds = {}
    for name, data in sections:
        for block_size, size, dictionary in ((1024, 4096, b""), (4096, 16384, b""),
                                             (1024, 3000, CONTAINER_DICT)):
            c = write_container(data[:size], block_size, 9, dictionary)
            tag = f"{name}-{block_size}-{size}{'-dict' if dictionary else ''}"
            seeds[tag] = c
            seeds[tag + "-odd"] = c + b"\0"
    return seeds


def _pkg_seeds(sections, log=None, seed_from=()) -> dict[str, bytes]:
    """Boot packages from package.py: each board's real DVFS table, firmware cut from real
    sections, a raw and an lz4-compressed model; padded to an odd length for the harness's
    hash fix-ups. Also the boards' own packages from earlier builds when they fit max_len."""
    from .. import boards, dvfs
    from ..compress.container import write_container
    from ..images import package
    from ..images.entries import DvfsEntry, FirmwareEntry, ModelEntry

    seeds = {}
    built = [Path(d) for d in seed_from] or sorted((ROOT / "output").glob("*"))
    for bname in boards.names():
        board = boards.get(bname)
        try:
            table = dvfs.encode(dvfs.load(board.dvfs_file), "balanced")
        except (SeedfwError, OSError):
            continue
        for i, (sname, data) in enumerate(sections[:4]):
            fw = data[:512 + 128 * i]
            model = data[-700:]
            entries = [FirmwareEntry("payload", fw), DvfsEntry("dvfs", table),
                       ModelEntry("m-raw", model, len(model), 64),
                       ModelEntry("m-lz4", write_container(model, 1024, 9), len(model), 64,
                                  compression="lz4")]
            blob = package.encode(entries)
            seeds[f"{bname}-{sname}"] = blob
            seeds[f"{bname}-{sname}-odd"] = blob + b"\0"
        blob = package.encode([DvfsEntry("dvfs", table)])
        seeds[f"{bname}-dvfs-only-odd"] = blob + b"\0"
    limit = TARGETS["pkg"].max_len
    for p in sorted(q for d in built for q in d.glob("images/*-boot.pkg")):
        if p.stat().st_size < limit:
            seeds[f"built-{p.stem}"] = p.read_bytes()
            seeds[f"built-{p.stem}-odd"] = p.read_bytes() + b"\0"
    return seeds


def make_seeds(target: str, outdir: str | Path, log=None, seed_from=()) -> Path:
    """(Re)write <outdir>/seeds/ for the target; returns the directory."""
    t = get(target)
    outdir = Path(outdir)
    seeds_dir = outdir / "seeds"
    shutil.rmtree(seeds_dir, ignore_errors=True)
    seeds_dir.mkdir(parents=True)
    sections = seed_sections(outdir, log, seed_from=seed_from)
    if t.name == "lz4-block":
        seeds = _lz4_block_seeds(sections)
    elif t.name == "lz4-container":
        seeds = _container_seeds(sections)
    else:
        seeds = _pkg_seeds(sections, log, seed_from)
    for name, blob in seeds.items():
        if len(blob) <= t.max_len:
            write_bytes(seeds_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", name), blob)
    if not any(seeds_dir.iterdir()):
        raise SeedfwError(f"no seed fits -max_len={t.max_len}", seeds_dir)
    return seeds_dir


# --------------------------------------------------------------------------- run and verdict

_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
_DONE = re.compile(r"^Done (\d+) runs in (\d+) second", re.M)
_PROGRESS = re.compile(r"^#(\d+)\s+\w+.*?exec/s: (\d+)", re.M)


def parse_stats(text: str) -> dict[str, int]:
    """libFuzzer's final numbers from its log: the stat:: lines of -print_final_stats=1, else
    the 'Done N runs' line, else the last '#N … exec/s:' progress line."""
    stats = {k: int(v) for k, v in _STAT.findall(text)}
    if "number_of_executed_units" not in stats:
        done = _DONE.findall(text)
        progress = _PROGRESS.findall(text)
        if done:
            runs, secs = map(int, done[-1])
            stats["number_of_executed_units"] = runs
            stats["average_exec_per_sec"] = runs // max(secs, 1)
        elif progress:
            stats["number_of_executed_units"] = int(progress[-1][0])
            stats["average_exec_per_sec"] = int(progress[-1][1])
    return stats


def run_campaign(target: str, seconds: int, *, jobs: int = 1, corpus: str | Path | None = None,
                 outdir: str | Path | None = None, planted: bool = False,
                 max_len: int | None = None, seed_from=()) -> FuzzResult:
    """Build, seed and run one target for `seconds`; return the measured result (crashes are
    reported in the result, not raised: the caller decides)."""
    t = get(target)
    if int(seconds) < 1:
        raise SeedfwError(f"--seconds must be at least 1, not {seconds}", field="--seconds")
    if int(jobs) < 1:
        raise SeedfwError(f"--jobs must be at least 1, not {jobs}", field="--jobs")
    outdir = workdir(target, outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    log = outdir / "fuzz.log"
    binary = build(target, outdir, planted=planted, log=outdir / "build.log")
    seeds = make_seeds(target, outdir, log=outdir / "build.log", seed_from=seed_from)
    corpus = Path(corpus).resolve() if corpus else outdir / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    crashes = outdir / "crashes"
    crashes.mkdir(exist_ok=True)
    before = {p.name for p in crashes.iterdir()}
    cmd = [str(binary), f"-max_total_time={int(seconds)}", "-print_final_stats=1",
           f"-max_len={max_len or t.max_len}", "-timeout=10", f"-artifact_prefix={crashes}/",
           str(corpus), str(seeds)]
    logs_dir = outdir / "logs"
    shutil.rmtree(logs_dir, ignore_errors=True)
    logs_dir.mkdir()
    if int(jobs) > 1:
        # Independent workers sharing the corpus; each writes logs/fuzz-<i>.log.
        cmd[1:1] = [f"-jobs={int(jobs)}", f"-workers={int(jobs)}"]
    started = time.monotonic()
    with open(log, "wb") as f:
        subprocess.run(cmd, cwd=logs_dir, stdout=f, stderr=subprocess.STDOUT,
                       env=dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1"))
    elapsed = time.monotonic() - started
    texts = [log.read_text(errors="replace")]
    texts += [p.read_text(errors="replace") for p in sorted(logs_dir.glob("fuzz-*.log"))]
    runs = [parse_stats(x) for x in (texts[1:] if int(jobs) > 1 else texts[:1])]
    new = sorted(p for p in crashes.iterdir()
                 if p.name not in before and p.name.startswith(CRASH_PREFIXES))
    executions = sum(r.get("number_of_executed_units", 0) for r in runs)
    # libFuzzer's average is over whole seconds (0 for a run that crashed in the first one):
    # then it is computed from the executions and our own wall-clock time instead.
    rate = sum(r.get("average_exec_per_sec", 0) for r in runs) or int(executions / elapsed)
    return FuzzResult(target, elapsed, executions, rate,
                      sum(r.get("new_units_added", 0) for r in runs),
                      sum(1 for _ in corpus.iterdir()), new, log, binary)


def first_finding(log: Path) -> str | None:
    """The sanitizer's one-line summary of a crash ('SUMMARY: AddressSanitizer: …'), if any."""
    text = log.read_text(errors="replace") if log and log.is_file() else ""
    for d in [text] + [p.read_text(errors="replace") for p in log.parent.glob("logs/fuzz-*.log")]:
        m = re.search(r"^SUMMARY: (.*)$", d, re.M) or re.search(r"runtime error: (.*)$", d, re.M)
        if m:
            return m.group(1).strip()
    return None
