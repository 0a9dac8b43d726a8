#!/usr/bin/env python3
"""`invoke inspect` on large hostile files: every one must finish in <= 20 s and <= 512 MiB
peak RSS (issue 24; docs/hostile-input.md).

The corpus (written to a scratch directory, up to 256 MiB each; sparse where the content is
zeros): a zero-filled file, a GPT disk whose one partition spans it, a FIT whose embedded image
is 250 MiB of random bytes, a FIT of 200 images all pointing at one 250 MiB span (overlap), a
boot package with a 250 MiB entry, a package whose LZ4 model expands to the 128 MiB cap, an
RKNS image whose four 32 MiB idblock images overlap, and the same 256 MiB file as the issue's
"/dev/zero" stand-in. The ext4 listing's cases (issue 28; tests/test_hostile_ext4.py has one of
each): a 3 GiB ext4 in a sparse disk image of a few MiB, an ext2 directory whose double-indirect
block points at itself (60 MiB declared), 100,000 entries in 100 directories plus 5,000 in one,
and names that hid and forged rows with setuid files beyond the listing's caps (--no-ext4: skip
them; --ext4-only: only them). The agent-log reader and `invoke stats` (issue 28): the corpus'
own cases for the 239-byte backtracking line, a log at the 256 MiB cap, a 2 GiB one, the most
work the caps allow and a 5,000-digit count; the 65,000 x 65,000 ELF. Each is run as a user runs it (`python -m invoke inspect FILE` in a
child); time is wall time, RSS is the child's own peak (wait4's ru_maxrss) — measured, on this
machine, shared with other work.

    python3 bench/inspect_bounds.py [--keep DIR] [--size-mib 256] [--no-ext4 | --ext4-only]
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
    from seedfw.reading import CAPS
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


def ext4_corpus(out: Path) -> dict[str, Path]:
    """The ext4 listing's crafted disks (mke2fs -d from trees written here, debugfs -w)."""
    from seedfw.images import samples
    files = {}
    work = out / "ext4-work"

    def mkfs(name, tree, size, *opts):
        fs = work / f"{name}.fs"
        subprocess.run(["mke2fs", "-q", "-F", *opts, "-d", str(tree), str(fs), size], check=True,
                       capture_output=True)
        return fs

    def disk(name, fs):
        p = out / name
        samples.write_sparse_gpt_disk(p, [("rootfs", 2048, fs)],
                                      2048 + -(-fs.stat().st_size // 512) + 34)
        files[name] = p
        fs.unlink()

    def tree(name):
        t = work / name
        t.mkdir(parents=True)
        return t

    t = tree("small")
    (t / "etc").mkdir()
    (t / "etc" / "hostname").write_text("board\n")
    disk("ext4-sparse-3gib.img", mkfs("sparse", t, "3G", "-t", "ext4", "-O", "^has_journal"))
    t = tree("loop")
    (t / "loop").mkdir()
    for i in range(80):
        (t / "loop" / (f"{i:03}" + "n" * 200)).write_text("")
    fs = mkfs("loop", t, "2M", "-t", "ext2", "-b", "1024")
    free = int(subprocess.run(["debugfs", "-R", "ffb 1 1500", str(fs)], capture_output=True,
                              text=True, check=True).stdout.split()[-1])
    with open(fs, "r+b") as f:
        f.seek(free * 1024)
        f.write(struct.pack("<256I", *[free] * 256))
    for req in (f"sif /loop block[DIND] {free}", f"sif /loop size {60 << 20}"):
        subprocess.run(["debugfs", "-w", "-R", req, str(fs)], check=True, capture_output=True)
    disk("ext4-loop-dir.img", fs)
    t = tree("many")
    for d in range(100):
        (t / f"d{d:03}").mkdir()
        for i in range(1000):
            (t / f"d{d:03}" / f"e{i:04}").touch()
    (t / "big").mkdir()
    for i in range(5000):
        (t / "big" / f"entry-{i:05}").touch()
    disk("ext4-many-entries.img", mkfs("many", t, "128M", "-t", "ext4", "-N", "110000"))
    t = tree("forged")
    (t / "bin").mkdir()
    for i in range(30):
        (t / "bin" / f"tool{i:02}").write_text("x")
    (t / "bin" / "zz-suid").write_text("x")
    (t / "bin" / "zz-suid").chmod(0o4755)
    for name in (b"two\nlines", b"esc\x1b[2J", "\u202eexe.txt".encode(), b'q"x', b"bad\xff"):
        (Path(os.fsdecode(os.path.join(os.fsencode(t), name)))).write_text("x")
    disk("ext4-forged-names.img", mkfs("forged", t, "4M", "-t", "ext4"))
    shutil.rmtree(work)
    return files


# The other readers of issue 28, as their corpus cases build them (tests/test_hostile_*.py):
# each an `invoke` command line over files in the scratch directory.
AGENTLOG_CASES = ("unbounded_backtrack_239", "unbounded_log_at_cap", "silent_2gib_log",
                  "unbounded_most_work_allowed", "traceback_5000_digits")


def reader_cases(out: Path) -> dict[str, list[str]]:
    import test_hostile_agentlog as agentlog
    import test_hostile_stats as st
    cases = {}
    for name in AGENTLOG_CASES:
        d = out / f"agentlog-{name}"
        d.mkdir(parents=True, exist_ok=True)
        cases[f"agentlog {name}"] = [str(a) for a in agentlog.CASES[name](d)[0]]
    n = 65000       # the 7.8 MB file: every section in every segment
    f = st.write_elf(out / "stats-65000x65000.elf", b"", [st.shdr(0, 0)] + [
        st.shdr(0, st.SHT_PROGBITS, st.SHF_ALLOC, 0x1000, 0x40, 0)] * (n - 1),
        [st.phdr(0x1000, 0x100000)] * n)
    cases["stats 65000x65000 ELF"] = ["stats", str(f)]
    return cases


def measure(path, args=None) -> tuple[int, float, float, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "invoke",
                             *(args or ["inspect", str(path), "--json"])],
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
    ap.add_argument("--no-ext4", action="store_true", help="leave out the ext4 listing's cases")
    ap.add_argument("--ext4-only", action="store_true", help="only the ext4 listing's cases")
    ap.add_argument("--generate", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:               # in a child: its memory must not count as the runs' peak
        if not args.ext4_only:
            corpus(Path(args.generate), args.size_mib << 20)
        if not args.no_ext4:
            ext4_corpus(Path(args.generate))
        if not args.ext4_only:      # their command lines, for the parent (a JSON beside them)
            import json
            readers = Path(args.generate) / "readers"
            cases = reader_cases(readers)
            (readers / "cases.json").write_text(json.dumps(cases))
        return 0
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="seedfw-bounds-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        # Linux keeps a process's peak RSS across fork+exec, so the files are written by a
        # child and this process stays small: each run's ru_maxrss is then its own.
        subprocess.run([sys.executable, __file__, "--generate", str(out), "--size-mib",
                        str(args.size_mib)] + (["--no-ext4"] if args.no_ext4 else [])
                       + (["--ext4-only"] if args.ext4_only else []),
                       check=True)
        files = {p.name: p for p in sorted(out.iterdir()) if p.is_file()}
        import json
        readers = {} if args.ext4_only else json.loads((out / "readers" / "cases.json").read_text())
        worst_t, worst_r, bad = (0.0, ""), (0.0, ""), []
        print(f"{'file':26} {'MiB':>5} {'disk':>5} {'exit':>4} {'s':>6} {'RSS MiB':>8}  error line")
        for name, path in list(files.items()) + [(n, None) for n in readers]:
            rc, took, rss, line = measure(path, readers.get(name))
            # MiB: the file's size; disk: what it holds (sparse); a reader case: its biggest file
            biggest = path or max((Path(a) for a in readers[name] if Path(a).is_file()),
                                  key=lambda q: q.stat().st_size)
            st = biggest.stat()
            print(f"{name:26} {st.st_size >> 20:5} {st.st_blocks * 512 >> 20:5} {rc:4} "
                  f"{took:6.2f} {rss:8.1f}  {line[:150]}")
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
