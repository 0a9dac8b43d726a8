"""The freestanding C decoder (firmware/lz4), driven through its host harness: Python-compressed
containers and blocks expanded by the same C code that goes into firmware, plain and under
ASan/UBSan; hostile streams rejected with the exact error code; cross builds that must contain
no .rodata and no libc references; a libFuzzer smoke run.

Host binaries are built once per session (make O=<tmp>), ~3 s: the fast decoder plain and
under ASan/UBSan, and the compact LZ4BLK_SMALL decoder under ASan/UBSan: both are firmware
variants (kconfig LZ4_DECODER_FAST, the default, and LZ4_DECODER_SMALL), so both are covered.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from seedfw.compress.blocks import compress_block
from seedfw.compress.container import parse_container, write_container

ROOT = Path(__file__).resolve().parents[1]
LZ4DIR = ROOT / "firmware" / "lz4"
PROJECT_DICT = LZ4DIR / "dict" / "aarch64-rodata.dict"
TEXT = (b"BL31: Initializing runtime services\nPSCI: CPU_ON failed, error %d\n"
        b"SMC: unknown function id 0x%x\n\0\0\0\0") * 60

# enum lz4blk_error (firmware/include/seedfw/lz4blk.h)
CODES = {"truncated": -1, "offset": -2, "output_overflow": -3, "last_literals": -4,
         "bad_header": -5, "bad_table": -6, "header_crc": -7, "dict_mismatch": -8,
         "block_size": -9, "checksum": -10, "dest_too_small": -11, "container_truncated": -12}


def make(out: Path, *targets: str) -> None:
    subprocess.run(["make", "-s", "-C", str(LZ4DIR), f"O={out}", *targets], check=True,
                   capture_output=True, text=True)


@pytest.fixture(scope="session")
def tools(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("lz4build")
    make(out, "-j2", "host", "asan", "small")
    return {name: out / name / "lz4blk_tool" for name in ("host", "asan", "small")}


# host: the fast decoder (firmware variant "fast", the default); asan: the same under
# ASan+UBSan; small: the compact decoder (LZ4BLK_SMALL, variant "small"), under ASan+UBSan
@pytest.fixture(params=["host", "asan", "small"])
def tool(request, tools):
    return tools[request.param]


def run(tool: Path, *args) -> tuple[int, str]:
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    p = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, env=env)
    # a sanitizer report or crash is never an acceptable answer to hostile input
    assert "Sanitizer" not in p.stderr and p.returncode in (0, 2), p.stderr
    return p.returncode, p.stdout.strip()


def expand(tool, tmp_path, blob: bytes, dic: bytes = b"") -> tuple[str, bytes]:
    c, o, d = tmp_path / "c.bin", tmp_path / "o.bin", tmp_path / "d.bin"
    c.write_bytes(blob)
    o.unlink(missing_ok=True)
    args = ["container", c, o]
    if dic:
        d.write_bytes(dic)
        args.append(d)
    rc, line = run(tool, *args)
    return line, (o.read_bytes() if rc == 0 else b"")


def expand_block(tool, tmp_path, block: bytes, cap: int, dic: bytes = b"") -> tuple[str, bytes]:
    c, o, d = tmp_path / "b.bin", tmp_path / "o.bin", tmp_path / "d.bin"
    c.write_bytes(block)
    o.unlink(missing_ok=True)
    args = ["block", c, o, cap]
    if dic:
        d.write_bytes(dic)
        args.append(d)
    rc, line = run(tool, *args)
    return line, (o.read_bytes() if rc == 0 else b"")


def err(name: str) -> str:
    return f"error {CODES[name]} {name}"


# ---------------------------------------------------------------- round trips

def elf_sections(path: Path) -> dict[str, bytes]:
    from seedfw.compress.sections import read_elf_sections
    return {k: v[1] for k, v in read_elf_sections(path, [".text", ".rodata", ".eh_frame"]).items()}


def test_real_sections_round_trip(tool, tools, tmp_path):
    """Real sections: the harness's own compiled .text/.rodata/.eh_frame, and the project
    dictionary as the dictionary (and as a section: larger than a small block)."""
    secs = elf_sections(tools["host"])
    secs["dict-as-data"] = PROJECT_DICT.read_bytes()
    dic = PROJECT_DICT.read_bytes()
    for name, data in secs.items():
        for bs, d in ((4096, b""), (4096, dic), (65536, dic), (1024, dic)):
            line, got = expand(tool, tmp_path, write_container(data, bs, 9, d), d)
            assert (line, got == data) == (f"ok {len(data)}", True), (name, bs, len(d))


@pytest.mark.parametrize("case", ["empty", "1byte", "incompressible", "one-block", "partial-last",
                                  "dict-larger-than-block", "no-dict", "fast-mode", "zeros"])
def test_edge_cases(tool, tmp_path, case):
    rnd = random.Random(5).randbytes
    data, dic, bs, level = {
        "empty": (b"", b"", 4096, 12),
        "1byte": (b"A", b"", 4096, 12),
        "incompressible": (rnd(9000), b"", 4096, 12),
        "one-block": (TEXT[:4096], b"", 4096, 12),
        "partial-last": (TEXT[:4096 * 2 + 17], b"", 4096, 12),
        "dict-larger-than-block": (TEXT[5:3000], TEXT[-4000:], 1024, 12),
        "no-dict": (TEXT, b"", 1024, 9),
        "fast-mode": (TEXT, TEXT[:700], 4096, 0),
        "zeros": (bytes(70000), b"", 65536, 12),
    }[case]
    blob = write_container(data, bs, level, dic)
    line, got = expand(tool, tmp_path, blob, dic)
    assert line == f"ok {len(data)}" and got == data


def test_matches_reaching_into_dictionary(tool, tmp_path):
    """Offsets that start in the dictionary and continue into the output (and overlap)."""
    dic = bytes(range(256)) * 4
    data = dic[-300:] + dic[-300:] + b"tail-literals!"
    blk = compress_block(data, 12, dic)
    line, got = expand_block(tool, tmp_path, blk, len(data), dic)
    assert line == f"ok {len(data)}" and got == data
    # hand-made: one match of 20 bytes at offset 8 with a 4-byte dictionary ahead of 4 literals:
    # 4 bytes from the dictionary, 4 literals, then 12 more by overlapping the output itself
    blk = bytes([0x4F]) + b"wxyz" + struct.pack("<H", 8) + bytes([1]) + bytes([0x50]) + b"ENDED"
    line, got = expand_block(tool, tmp_path, blk, 4 + 20 + 5, b"abcd")
    assert line == "ok 29" and got == b"wxyz" + (b"abcdwxyz" * 3)[:20] + b"ENDED"


# ---------------------------------------------------------------- hostile input: exact codes

def test_truncated_block(tool, tmp_path):
    blk = compress_block(TEXT[:2000], 12)
    assert blk[0] >> 4                       # starts with literals: a cut after the token truncates
    for cut in (1, len(blk) - 1):            # (a cut between sequences may decode validly, shorter)
        line, _ = expand_block(tool, tmp_path, blk[:cut], 2000)
        assert line == err("truncated"), cut
    line, _ = expand_block(tool, tmp_path, b"", 10)
    assert line == err("truncated")
    # token promising a match, input ends inside the offset
    line, _ = expand_block(tool, tmp_path, bytes([0x14]) + b"A" + b"\x01", 100)
    assert line == err("truncated")


def test_offset_beyond_dictionary(tool, tmp_path):
    blk = bytes([0x10]) + b"A" + struct.pack("<H", 6) + bytes([0x50]) + b"12345"
    line, _ = expand_block(tool, tmp_path, blk, 100)                      # no dictionary
    assert line == err("offset")
    line, _ = expand_block(tool, tmp_path, blk, 100, b"abcd")              # reaches 1 byte before
    assert line == err("offset")
    line, got = expand_block(tool, tmp_path, blk, 100, b"abcde")           # exactly fits
    assert line == "ok 10" and got == b"A" + b"abcdeA"[:4] + b"12345"
    line, _ = expand_block(tool, tmp_path, bytes([0x10]) + b"A" + b"\0\0" + bytes([0x50]) +
                           b"12345", 100)
    assert line == err("offset")                                           # offset 0


def test_literal_run_past_the_end(tool, tmp_path):
    # 15 + 255 + 10 = 280 literals announced, 20 present: input overrun
    blk = bytes([0xF0, 255, 10]) + b"x" * 20
    assert expand_block(tool, tmp_path, blk, 1000)[0] == err("truncated")
    # 280 literals present but only 100 bytes of output
    blk = bytes([0xF0, 255, 10]) + b"x" * 280
    assert expand_block(tool, tmp_path, blk, 100)[0] == err("output_overflow")
    # endless 255 length bytes: bounded by the output, no wrap-around
    blk = bytes([0xF0]) + b"\xff" * 5000
    assert expand_block(tool, tmp_path, blk, 1000)[0] == err("output_overflow")


def test_match_into_last_five_bytes(tool, tmp_path):
    blk = bytes([0x10]) + b"A" + struct.pack("<H", 1) + bytes([0x10]) + b"B"   # A AAAA B
    assert expand_block(tool, tmp_path, blk, 7)[0] == err("last_literals")
    assert expand_block(tool, tmp_path, blk, 4)[0] == err("output_overflow")


def test_bad_containers(tool, tmp_path):
    good = write_container(TEXT, 1024, 9, TEXT[:512])
    dic = TEXT[:512]
    assert expand(tool, tmp_path, good, dic)[0] == f"ok {len(TEXT)}"
    b = bytearray(good)
    b[0] ^= 1
    assert expand(tool, tmp_path, bytes(b), dic)[0] == err("bad_header")
    b = bytearray(good)
    b[36] ^= 1
    assert expand(tool, tmp_path, bytes(b), dic)[0] == err("header_crc")
    assert expand(tool, tmp_path, good[:30], dic)[0] == err("container_truncated")
    assert expand(tool, tmp_path, good[:-1], dic)[0] == err("container_truncated")
    assert expand(tool, tmp_path, good, TEXT[1:513])[0] == err("dict_mismatch")
    assert expand(tool, tmp_path, good)[0] == err("dict_mismatch")
    # stored block with a flipped byte: only the data checksum can tell
    raw = random.Random(9).randbytes(3000)
    b = bytearray(write_container(raw, 1024, 9))
    b[-5] ^= 0x20
    assert expand(tool, tmp_path, bytes(b))[0] == err("checksum")
    # table entry inconsistent with the block (header crc fixed up so the table check runs)
    b = bytearray(good)
    struct.pack_into("<I", b, 40, 0x80000000 | 7)
    count = struct.unpack_from("<I", b, 12)[0]
    struct.pack_into("<I", b, 36, zlib.crc32(bytes(b[:36]) + bytes(b[40:40 + 4 * count])))
    assert expand(tool, tmp_path, bytes(b), dic)[0] == err("bad_table")


def test_random_corruption_never_escapes(tools, tmp_path):
    """Random byte flips in LZ4 blocks (header crc fixed up): some error code or, rarely, ok -
    but never a sanitizer report (run() asserts that)."""
    dic = TEXT[:1024]
    good = bytearray(write_container(TEXT, 1024, 9, dic))
    info = parse_container(bytes(good))
    first = info.entries[0][2]
    rng = random.Random(11)
    seen = set()
    for i in range(20):
        b = bytearray(good)
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(first, len(b))] = rng.randrange(256)
        line, _ = expand(tools["asan"], tmp_path, bytes(b), dic)
        seen.add(line.split()[-1])
    assert seen - {str(len(TEXT))}, "corruption was never detected"


def test_boot_table_expands_several_containers(tool, tmp_path):
    dic = PROJECT_DICT.read_bytes()
    a, b = TEXT[:5000], TEXT[100:3100]
    (tmp_path / "a.c").write_bytes(write_container(a, 4096, 9, dic))
    (tmp_path / "b.c").write_bytes(write_container(b, 1024, 9))
    (tmp_path / "d").write_bytes(dic)
    rc, line = run(tool, "boot", tmp_path / "d", tmp_path / "a.c", tmp_path / "a.o",
                   tmp_path / "b.c", tmp_path / "b.o")
    assert (rc, line) == (0, "ok 2")
    assert (tmp_path / "a.o").read_bytes() == a and (tmp_path / "b.o").read_bytes() == b
    rc, line = run(tool, "boot", "-", tmp_path / "b.c", tmp_path / "b.o", tmp_path / "a.c",
                   tmp_path / "a.o")
    assert line == "entry 1: " + err("dict_mismatch")


# ---------------------------------------------------------------- cross builds (freestanding)

@pytest.mark.parametrize("target", ["aarch64", "aarch64-strict", "aarch64-small", "arm"])
def test_cross_build_is_freestanding(tmp_path, target):
    """-ffreestanding -nostdlib objects: the Makefile itself fails on undefined symbols or any
    .rodata; we re-check here so a Makefile edit cannot silently drop the check."""
    make(tmp_path, f"{tmp_path}/{target}/lz4blk.o")
    obj = tmp_path / target / "lz4blk.o"
    prefix = "arm-none-eabi-" if target == "arm" else "aarch64-linux-gnu-"
    undef = subprocess.run([f"{prefix}nm", "-u", obj], capture_output=True, text=True).stdout
    assert undef.strip() == ""
    heads = subprocess.run([f"{prefix}objdump", "-h", obj], capture_output=True, text=True).stdout
    assert ".text" in heads and ".rodata" not in heads
    syms = subprocess.run([f"{prefix}nm", obj], capture_output=True, text=True).stdout
    for name in ("lz4blk_decompress_block", "lz4blk_decompress", "lz4blk_parse",
                 "lz4blk_crc32", "lz4blk_boot_expand"):
        assert f" T {name}\n" in syms


def test_strict_align_object_has_no_unaligned_word_access(tmp_path):
    """The fast variant as BL31 links it (-O2 -mstrict-align): every load/store that is not
    to the stack is a byte access, except the aligned 64-bit pattern fill (fill_period8: an
    LDUR from op - 8 and a post-indexed STR to op, op proved 8-aligned). Guards against a
    copy helper that the compiler turns into unaligned word accesses, which fault at EL3."""
    make(tmp_path, f"{tmp_path}/aarch64-strict/lz4blk.o")
    dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", tmp_path / "aarch64-strict" /
                          "lz4blk_decode.o"], capture_output=True, text=True, check=True).stdout
    words = []
    for line in dis.splitlines():
        f = line.split("\t")
        if len(f) < 4 or not f[2].strip().startswith(("ld", "st")):
            continue
        op, args = f[2].strip(), f[3]
        if op.endswith("b") or "[sp" in args:        # ldrb, ldurb, strb, sturb, ldrsb
            continue
        words.append((op, args.strip()))
    assert words, "pattern fill lost its aligned stores"
    for op, args in words:
        assert (op == "ldur" and args.startswith("x") and args.endswith(", #-8]")) or \
            (op == "str" and args.startswith("x") and args.endswith("], #8")), (op, args)


# ---------------------------------------------------------------- libFuzzer smoke

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("clang-14") is None, reason="clang-14 not installed")
def test_fuzz_smoke(tmp_path):
    """Both fuzz targets, seeded with real containers/blocks, 4 s each under ASan+UBSan."""
    make(tmp_path, "fuzz")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    dic = bytes((i * 7 + 1) & 255 for i in range(64))    # fuzz_container's fixed dictionary
    for i in range(8):
        chunk = TEXT[i * 300:i * 300 + 2500]
        (corpus / f"c{i}").write_bytes(write_container(chunk, 1024, 9, dic if i % 2 else b""))
    bcorpus = tmp_path / "bcorpus"
    bcorpus.mkdir()
    for i in range(8):
        d = TEXT[i * 50:i * 50 + 100]
        (bcorpus / f"b{i}").write_bytes(bytes([100, 40]) + compress_block(TEXT[:2000], 9, d) + d)
    for target, corp in (("fuzz_block", bcorpus), ("fuzz_container", corpus)):
        p = subprocess.run([str(tmp_path / "fuzz" / target), "-max_total_time=4",
                            "-rss_limit_mb=1024", str(corp)], capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
        assert p.returncode == 0, p.stderr[-3000:]
        assert "Done " in p.stderr
