"""Coverage-guided fuzzing of the Python readers of outside bytes (atheris, libFuzzer's engine),
the Python half of `invoke fuzz` (seedfw.fuzz runs the C parsers).

The contract under test (docs/hostile-input.md): for ANY input bytes a reader returns or raises
SeedfwError — nothing else. Every other exception is a crash: atheris stops, writes the input to
output/pyfuzz/<target>/crashes/, and the campaign reports it. Each crash found is kept in
tests/hostile_crashes/<target>/ (tests/test_hostile_inputs.py replays them all).

Targets (one reader each; seeds are seedfw.images.samples' real images and the boards' files):

  py-inspect   inspect's dispatch on any bytes: FIT, boot package, GPT disk, RKNS images
  py-fdt       fdt.parse (FIT/DTB structure, duplicates, names)
  py-package   package.decode
  py-gpt       gpt.parse
  py-idblock   idblock.parse
  py-lz4       compress.container.read_container
  py-dvfs      dvfs.decode
  py-rknn      models.check_rknn (framing + bounded JSON)
  py-yaml      yamlfile.load (duplicate keys, aliases, sizes)
  py-json      reading.loads_json (size/depth)
  py-pubkey    fit_sig.load_keys (public-key DTB)
  py-ext4      ext4_list.listing (superblock, inodes, extents, block maps, directory blocks;
               seeds: small ext2 and ext4 made by mke2fs -d, padded to their size with zeros)
  py-agentlog  counters.perf_live: a log file's agent lines (parse_log) and the same bytes as
               QEMU UART lines (run.uart.split_lines, then parse)
  py-report    the report's inputs and the renderers of their sections (report/fuzzing.py)

Run: `invoke fuzz --target py-fdt --runs 1000000` (or --seconds). Executions and crashes are
atheris/libFuzzer's own final counters (measured).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError
from ..paths import BOARD_DIR, ROOT

TARGETS = ("py-inspect", "py-fdt", "py-package", "py-gpt", "py-idblock", "py-lz4", "py-dvfs",
           "py-rknn", "py-yaml", "py-json", "py-pubkey", "py-ext4", "py-agentlog", "py-report")
# -max_len per target: the seeds fit (samples are small on purpose); shorter inputs keep the
# executions per second up, which is what reaching 1 M runs per reader on 2 cores needs.
MAX_LEN = {"py-inspect": 16384, "py-fdt": 8192, "py-pubkey": 8192, "py-package": 4096,
           "py-gpt": 20480, "py-idblock": 8192, "py-lz4": 4096, "py-dvfs": 4096,
           "py-rknn": 1024, "py-yaml": 512, "py-json": 2048, "py-planted": 64,
           "py-ext4": 40960, "py-agentlog": 5000, "py-report": 2048}
EXT4_SEED_SIZE = 128 << 10     # py-ext4: inputs are the head of a file system this large
CRASHES_KEPT = ROOT / "tests" / "hostile_crashes"


def reader(target: str):
    """The function a campaign calls with each input (bytes → anything, or SeedfwError)."""
    from ..images import fdt, gpt, idblock, package
    from .. import reading
    if target == "py-inspect":
        from ..images import inspect as inspect_mod

        def run(data: bytes):
            if data[:4] == b"LDR ":      # the maskrom loader has its own owner and campaign
                return None
            return inspect_mod._inspect(Path("fuzz.bin"), data, None, False, None)
        return run
    if target == "py-fdt":
        return lambda d: fdt.parse(d, "fuzz")
    if target == "py-package":
        return lambda d: package.decode(d, "fuzz")
    if target == "py-gpt":
        return lambda d: gpt.parse(d, "fuzz")
    if target == "py-idblock":
        return lambda d: idblock.parse(d, 0, "fuzz")
    if target == "py-lz4":
        from ..compress import container
        return lambda d: container.read_container(d, None, "fuzz")
    if target == "py-dvfs":
        from .. import dvfs
        return lambda d: dvfs.decode(d, "fuzz")
    if target == "py-rknn":
        from .. import models
        return lambda d: models.check_rknn(d, "fuzz")
    if target == "py-json":
        return lambda d: reading.loads_json(d, "fuzz")
    if target == "py-ext4":
        from ..images import ext4_list
        # the tail of a small file system is zeros: the input is its head, padded back
        return lambda d: ext4_list.listing(d.ljust(EXT4_SEED_SIZE, b"\0"), source="fuzz",
                                           deadline=5.0)
    if target == "py-pubkey":
        from ..images import fit_sig
        return lambda d: fit_sig.load_keys(d, "fuzz")
    if target == "py-agentlog":
        from ..counters import perf_live
        from ..run import uart

        prefix = perf_live.PREFIX.encode()

        def agentlog(data: bytes):
            # The three readers of agent lines; where all accept the bytes they must agree:
            # the log file streamed in 1, 2, 4 … 128 chunks (lines span chunk boundaries; the
            # last byte picks), the same bytes found in one buffer, and the UART's split (a
            # differential).
            step = max(1, len(data) >> (data[-1] % 8 if data else 0))
            streamed = list(reading.stream_lines(io.BytesIO(data), len(data), "fuzz", prefix,
                                                 perf_live.MAX_LINE, chunk_size=step))
            found = list(reading.find_lines(data, prefix, perf_live.MAX_LINE))
            if streamed != found:
                raise AssertionError(f"streamed lines differ (chunk {step}): {streamed} != "
                                     f"{found}")
            got = []
            lines, rest = uart.split_lines(b"", data)
            for parse in (lambda: perf_live.parse_log(found, "fuzz"),
                          lambda: perf_live.parse([raw.decode(errors="replace").rstrip("\r")
                                                   for raw in lines + [rest]], "fuzz")):
                try:
                    got.append(parse())
                except SeedfwError:
                    got.append(None)
            if None not in got and got[0] != got[1]:
                raise AssertionError(f"log and UART readers disagree: {got[0]} != {got[1]}")
            return got[0]
        return agentlog
    if target == "py-report":
        from ..report import fuzzing
        return fuzzing.reader()
    if target == "py-planted":
        # The negative control (tests/test_hostile_inputs.py): a reader with a planted bug —
        # an IndexError behind a 3-byte prefix — that a working campaign must find.
        def planted(data: bytes):
            if data[:1] == b"S" and data[1:2] == b"F" and data[2:3] == b"W":
                return [][len(data)]
            return reading.loads_json(data, "fuzz")
        return planted
    if target == "py-yaml":
        from .. import yamlfile
        scratch = Path(tempfile.mkdtemp(prefix="seedfw-pyfuzz-")) / "in.yaml"

        def run(data: bytes):
            scratch.write_bytes(data)
            return yamlfile.load(scratch)
        return run
    raise SeedfwError(f"unknown Python fuzz target '{target}' (known: {', '.join(TARGETS)})",
                      field="--target")


def seeds(target: str, out: Path) -> Path:
    """Write the seed inputs of `target` into out/ (real images and files, cut to MAX_LEN)."""
    from ..images import samples
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="seedfw-pyfuzz-seeds-"))
    try:
        s = samples.make_all(work)
        itb, pkg, idb = (s[k].read_bytes() for k in ("fit", "package", "idbloader"))
        es = {e.name: e for e in samples.entries()}
        small_disk = samples.gpt_disk([("firmware", 64, itb)], pad_lbas=1)
        by_target = {
            "py-inspect": [itb, pkg, idb, small_disk],
            "py-fdt": [itb], "py-pubkey": [itb], "py-package": [pkg],
            "py-gpt": [small_disk[:34 * 512]], "py-idblock": [idb],
            "py-lz4": [es["labels"].data], "py-dvfs": [es["dvfs"].data],
            "py-rknn": [_rknn_seed()],
            "py-yaml": [p.read_bytes() for p in sorted(BOARD_DIR.glob("*/*.yaml"))],
            "py-json": [b'{"a": [1, 2.5, "x", {"b": null}], "c": true}'],
            "py-planted": [b"[1]"],
            "py-report": _report_seeds(),
            "py-agentlog": _agentlog_seeds(),
        }.get(target)
        if target == "py-ext4":
            by_target = _ext4_seeds(work)
        limit = MAX_LEN[target]
        for i, data in enumerate(by_target):
            (out / f"seed-{i}").write_bytes(data[:limit])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _ext4_seeds(work: Path) -> list[bytes]:
    """Small ext2 (block maps) and ext4 (extents) file systems of a tree with a file, a
    setuid one, a symlink and nested directories (mke2fs -d, 1 KiB blocks), trailing zeros cut."""
    tree = work / "ext4-tree"
    (tree / "d" / "e").mkdir(parents=True)
    (tree / "f").write_text("hi\n")
    (tree / "s").write_text("x")
    (tree / "s").chmod(0o4755)
    (tree / "l").symlink_to("f")
    out = []
    for i, opts in enumerate(("-t ext2 -O ^resize_inode",
                              "-t ext4 -O ^has_journal,^resize_inode,^metadata_csum")):
        img = work / f"seed-{i}.ext4"
        subprocess.run(["mke2fs", "-q", "-F", *opts.split(), "-b", "1024", "-N", "16", "-d",
                        str(tree), str(img), f"{EXT4_SEED_SIZE >> 10}K"], check=True,
                       capture_output=True)
        out.append(img.read_bytes().rstrip(b"\0"))
    return out


def _agentlog_seeds() -> list[bytes]:
    """The agent's own line shapes (firmware/agent/perf_window.c), in a console log and alone."""
    lines = [b"agent: perf armv8_pmuv3_0 window=idle ns=100000000 cpu_cycles=1200 "
             b"inst_retired=900",
             b"agent: perf rockchip_ddr window=verify ns=5000 read-bytes=77 write-bytes=unreadable",
             b"agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs "
             b"CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)",
             b"agent: perf armv8_pmuv3_0 cpu_cycles unavailable (perf_event_open: ENOENT)",
             b"agent: perf bad spec 'x' (want PMU/EVENT,EVENT/KCONFIG)"]
    return [b"$ qemu-system-aarch64 -M virt\r\n[    1.0] Linux\r\n" + b"\r\n".join(lines)
            + b"\r\nagent: ok\r\n", *lines]


def _report_seeds() -> list[bytes]:
    from ..report import fuzzing
    return fuzzing.seeds()


def _rknn_seed() -> bytes:
    """A minimal well-formed RKNN framing (format version 6: 64-byte header, a payload, the
    trailing JSON) for the rknn reader's corpus."""
    import json
    import struct

    from ..models.format import rknn_header_size
    head = struct.pack("<4s4xQQ", b"RKNN", 6, 64).ljust(rknn_header_size(6), b"\0")
    text = json.dumps({"target_platform": ["rk3588"], "version": "2.5.0"}).encode()
    return head + bytes(64) + struct.pack("<Q", len(text)) + text


def harness(target: str, argv: list[str]) -> None:
    """Inside the campaign process: instrument seedfw, run atheris."""
    import atheris

    with atheris.instrument_imports(include=["seedfw"]):
        fn = reader(target)
    if target == "py-planted":      # defined here, in __main__, so instrumented explicitly
        fn = atheris.instrument_func(fn)

    def one(data: bytes):
        try:
            fn(data)
        except SeedfwError:
            pass

    atheris.Setup([sys.argv[0], *argv], one)
    atheris.Fuzz()


@dataclass
class PyFuzzResult:
    target: str
    seconds: float
    executions: int
    crashes: list[Path] = field(default_factory=list)
    log: Path | None = None


def workdir(target: str) -> Path:
    return ROOT / "output" / "pyfuzz" / target


def run_campaign(target: str, runs: int = 1_000_000, seconds: int = 0,
                 root: Path | None = None) -> PyFuzzResult:
    """One campaign in a child process (atheris exits on the first crash); returns the
    counters. Crash inputs are copied to tests/hostile_crashes/<target>/."""
    reader(target)                               # unknown target: one error line, now
    wd = Path(root or workdir(target))
    corpus, crashes = wd / "corpus", wd / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    corpus.mkdir(parents=True, exist_ok=True)
    seed_dir = seeds(target, wd / "seeds")
    log = wd / "fuzz.log"
    args = [f"-runs={runs}", f"-max_len={MAX_LEN[target]}",
            f"-artifact_prefix={crashes}/", "-rss_limit_mb=1024", "-timeout=10",
            str(corpus), str(seed_dir)]
    if seconds:
        args.insert(0, f"-max_total_time={seconds}")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    before = set(crashes.iterdir())
    start = time.monotonic()
    with open(log, "wb") as f:
        subprocess.run([sys.executable, "-m", "seedfw.fuzz.pyfuzz", target, *args], stdout=f,
                       stderr=subprocess.STDOUT, env=env, cwd=wd)
    took = time.monotonic() - start
    text = log.read_text(errors="replace")
    done = re.findall(r"Done (\d+) runs", text)
    execs = int(done[-1]) if done else max([int(n) for n in re.findall(r"#(\d+)\s", text)] or [0])
    found = sorted(set(crashes.iterdir()) - before)
    if found and target != "py-planted":
        keep = CRASHES_KEPT / target
        keep.mkdir(parents=True, exist_ok=True)
        for p in found:
            shutil.copy(p, keep / p.name)
    return PyFuzzResult(target, took, execs, found, log)


if __name__ == "__main__":
    harness(sys.argv[1], sys.argv[2:])
