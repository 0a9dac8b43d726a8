"""Hostile ELFs for `invoke stats` (issue 28): terminal injection and cost, one case per class.

The files are written with struct (no toolchain): what matters is a structure no linker would
make. Every case runs the CLI under tests/hostile.py's harness (RLIMIT_AS = 1 GiB, a timeout)
and asserts the exit code, the exact error line (or, for a file that must be read, the output
lines that matter) and a time and memory bound.

Classes:
  terminal   ESC/OSC/C1 bytes in section, segment-member, symbol and baseline names reach the
             terminal only as \\xNN (reading.plain), in the stats and in the --diff tables;
  cost       counts over ELF_CAPS are one error line before anything is read (65,000 sections
             x 65,000 segments in 7.8 MB was over an hour); overlapping segments within the
             caps are refused by the pair cap; a large but sane file (16,000 sections, 4,000
             segments) maps in linear time;
  memory     a sparse 3 GiB symbol table, a sparse 2 GiB string table or section-name table,
             a million long overlapping names: one error line; half a million sized symbols
             are read within the time and memory bounds.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import hostile

TIME_BOUND = 20.0
RSS_BOUND_MIB = 512
GIB = 1 << 30

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB = 1, 2, 3
SHF_WRITE, SHF_ALLOC, SHF_EXEC = 1, 2, 4
PT_LOAD = 1


# ---- ELF64 little-endian AArch64 executables, by hand -----------------------------------------

def shdr(name, sh_type, flags=0, addr=0, offset=0, size=0, link=0, info=0, align=1, entsize=0):
    return struct.pack("<IIQQQQIIQQ", name, sh_type, flags, addr, offset, size, link, info,
                       align, entsize)


def phdr(vaddr, memsz, offset=0, filesz=0, p_type=PT_LOAD, flags=5):
    return struct.pack("<IIQQQQQQ", p_type, flags, offset, vaddr, vaddr, filesz, memsz, 0x1000)


def sym(name, size, shndx, value=0, info=0x12):              # GLOBAL FUNC by default
    return struct.pack("<IBBHQQ", name, info, 0, shndx, value, size)


def write_elf(path: Path, data: bytes, shdrs: list[bytes], phdrs: list[bytes] = (),
              shstrndx: int = 0, pad_to: int | None = None) -> Path:
    """[ELF header][data at 0x40][program headers][section headers] (offsets in `data` are
    file offsets: data starts at 0x40). pad_to: a sparse file of that apparent size, the
    headers at its end."""
    phoff = 0x40 + len(data)
    shoff = phoff + 56 * len(phdrs)
    if pad_to is not None:
        phoff = pad_to - 56 * len(phdrs) - 64 * len(shdrs)
        shoff = phoff + 56 * len(phdrs)
    head = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) +
            struct.pack("<HHIQQQIHHHHHH", 2, 183, 1, 0, phoff if phdrs else 0, shoff, 0, 64, 56,
                        len(phdrs), 64, len(shdrs), shstrndx))
    with open(path, "wb") as f:
        f.write(head + data)
        if pad_to is not None:
            f.seek(phoff)
        f.write(b"".join(phdrs) + b"".join(shdrs))
    return path


def strtab(names: list[bytes]) -> tuple[bytes, list[int]]:
    blob, offsets = bytearray(b"\0"), []
    for n in names:
        offsets.append(len(blob))
        blob += n + b"\0"
    return bytes(blob), offsets


def run(*args):
    r = hostile.invoke_bounded("stats", *args)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.seconds < TIME_BOUND, f"took {r.seconds:.1f} s"
    assert r.max_rss_mib < RSS_BOUND_MIB, f"peak RSS {r.max_rss_mib:.0f} MiB"
    return r


def one_error(r) -> str:
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr
    lines = hostile.error_lines(r)
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- terminal --------------------------------------------------------------------------------

OSC8 = b"\x1b]8;;http://evil.example/\x07.text\x1b]8;;\x07"
CLEAR = b".data\x1b[2J\x1b[H"
C1 = ".rodata\u009b31m".encode()                 # CSI as one C1 character (UTF-8 c2 9b)
SYM_TITLE = b"evil\x1b]0;pwned\x07"
SYM_RED = b"\x1b[31mred"


@pytest.fixture(scope="module")
def escapes_elf(tmp_path_factory) -> Path:
    """.text/.data/.rodata with escape sequences in their names, two such symbols, a LOAD
    segment over all three, and a section whose data is past the end (a warning naming it)."""
    tmp = tmp_path_factory.mktemp("escapes")
    names, (n_text, n_data, n_ro, n_sym, n_str, n_shstr, n_gone) = strtab(
        [OSC8, CLEAR, C1, b".symtab", b".strtab", b".shstrtab", b".gone\x1b[8m"])
    symnames, (s1, s2) = strtab([SYM_TITLE, SYM_RED])
    code = bytes(64)
    syms = sym(0, 0, 0, info=0) + sym(s1, 48, 1, 0x1000) + sym(s2, 16, 1, 0x1030)
    base = 0x40
    data = code + syms + symnames + names
    o_code, o_sym = base, base + len(code)
    o_str, o_names = o_sym + len(syms), o_sym + len(syms) + len(symnames)
    shdrs = [shdr(0, 0),
             shdr(n_text, SHT_PROGBITS, SHF_ALLOC | SHF_EXEC, 0x1000, o_code, 32),
             shdr(n_data, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 0x1020, o_code + 32, 16),
             shdr(n_ro, SHT_PROGBITS, SHF_ALLOC, 0x1030, o_code + 48, 16),
             shdr(n_sym, SHT_SYMTAB, 0, 0, o_sym, len(syms), link=5, info=1, entsize=24),
             shdr(n_str, SHT_STRTAB, 0, 0, o_str, len(symnames)),
             shdr(n_shstr, SHT_STRTAB, 0, 0, o_names, len(names)),
             shdr(n_gone, SHT_PROGBITS, 0, 0, 1 << 20, 16)]
    return write_elf(tmp / "escapes.elf", data, shdrs, [phdr(0x1000, 0x40, o_code, 0x40)],
                     shstrndx=6)


def _shown(raw: bytes) -> str:
    from seedfw.reading import plain
    return plain(raw.decode("utf-8", "replace"))


def _no_raw_controls(text: str) -> None:
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n") or
                  0x7F <= ord(c) < 0xA0})
    assert bad == [], bad


def test_terminal_escapes_in_names_are_shown_plain(escapes_elf):
    r = run(escapes_elf)
    assert r.returncode == 0, r.stderr
    _no_raw_controls(r.stdout + r.stderr)
    out = r.stdout.splitlines()
    text, data, ro = _shown(OSC8), _shown(CLEAR), _shown(C1)
    assert text == "\\x1b]8;;http://evil.example/\\x07.text\\x1b]8;;\\x07"
    assert any(line.startswith(f"  [  1] {text} PROGBITS") for line in out), r.stdout
    assert any(line.startswith(f"  [  2] {data}") for line in out)
    assert any(line.startswith(f"  [  3] {ro}") for line in out)       # \x9b31m
    assert any(line.endswith(f": {text} {data} {ro}") and "segment 0 LOAD" in line
               for line in out)
    assert f"  top 2 symbols in {text}:" in out
    assert f"            48  {_shown(SYM_TITLE)}" in out
    assert f"            16  {_shown(SYM_RED)}" in out
    assert any(line.startswith("  warning: section [7] .gone\\x1b[8m: data at") for line in out)


def test_terminal_escapes_in_a_diff_and_its_baseline_are_shown_plain(escapes_elf, tmp_path):
    """The baseline JSON is outside input too: its section and symbol names, hostile, are
    printed as gone rows."""
    from seedfw import stats
    doc = stats.stats_document([stats.read_elf(escapes_elf)])
    entry = doc["files"][0]
    entry["sections"].append(dict(name="\x1b[5m.old\x1b]52;c;cHduZWQ=\x07", type="PROGBITS",
                                  size=8, **{"class": "ROM"}))
    entry["symbols"] = [["\x1b[6n\x9b6n", 8, ".old", 0, "FUNC", "GLOBAL"]]
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps(doc))
    r = run(escapes_elf, "--diff", baseline)
    assert r.returncode == 0, r.stderr
    _no_raw_controls(r.stdout + r.stderr)
    out = r.stdout.splitlines()
    assert any(line.startswith("  section \\x1b[5m.old\\x1b]52;c;cHduZWQ=\\x07 gone") for line in out), \
        r.stdout
    assert any(line.startswith("    gone   \\x1b[6n\\x9b6n") for line in out)
    assert any(line.startswith(f"    new    {_shown(SYM_TITLE)}") for line in out)


# ---- cost: counts over the caps, one line before anything is read -----------------------------

def test_65000_sections_by_65000_segments_is_one_line_at_once(tmp_path):
    """The issue's file: 7.8 MB, every section in every segment (was over an hour)."""
    n = 65000
    shdrs = [shdr(0, 0)] + [shdr(0, SHT_PROGBITS, SHF_ALLOC, 0x1000, 0x40, 0)] * (n - 1)
    f = write_elf(tmp_path / "x.elf", b"", shdrs, [phdr(0x1000, 0x100000)] * n)
    assert 7_500_000 < f.stat().st_size < 8_000_000
    r = run(f)
    assert one_error(r) == f"error: {f}: e_shnum: 65000 sections (cap 16384)"


def test_segments_over_the_cap_is_one_line(tmp_path):
    f = write_elf(tmp_path / "phnum.elf", b"", [shdr(0, 0)], [phdr(0x1000, 0x10)] * 65000)
    assert one_error(run(f)) == f"error: {f}: e_phnum: 65000 segments (cap 4096)"


def test_overlapping_segments_within_the_caps_are_refused_by_the_pair_cap(tmp_path):
    """16,383 loaded sections at one address, 4,096 segments over it: 67 M pairs."""
    sections, segments = 16384, 4096
    shdrs = [shdr(0, 0)] + [shdr(0, SHT_PROGBITS, SHF_ALLOC, 0x1000, 0x40, 0)] * (sections - 1)
    f = write_elf(tmp_path / "pairs.elf", b"", shdrs, [phdr(0x1000, 0x10)] * segments)
    pairs = (sections - 1) * segments
    assert one_error(run(f)) == (f"error: {f}: e_phnum: {pairs} section/segment pairs to map "
                                 "(cap 1048576)")


def test_a_large_sane_file_maps_in_linear_time(tmp_path):
    """16,000 sections, 4,000 segments of four sections each: read and mapped exactly (the
    old all-pairs loop made 64 M checks)."""
    sections, per = 16000, 4
    names, offs = strtab([b".s%d" % i for i in range(sections)])
    o_names = 0x40
    shdrs = [shdr(0, 0)] + [shdr(offs[i], SHT_PROGBITS, SHF_ALLOC, 0x10000 + 0x10 * i,
                                 0x40, 0x10) for i in range(sections - 1)]
    shdrs.append(shdr(offs[sections - 1], SHT_STRTAB, 0, 0, o_names, len(names)))
    phdrs = [phdr(0x10000 + 0x10 * per * k, 0x10 * per, 0, 0x100000)
             for k in range(sections // per)]
    f = write_elf(tmp_path / "wide.elf", names, shdrs, phdrs, shstrndx=sections)
    r = run(f)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert sum(1 for line in out if line.startswith("  segment ")) == 4000
    assert any(line.endswith(": .s0 .s1 .s2 .s3") and line.startswith("  segment 0 ")
               for line in out)
    # the last segment holds the last three PROGBITS sections (the name table is not loaded)
    assert any(line.startswith("  segment 3999 ") and line.endswith(": .s15996 .s15997 .s15998")
               for line in out)


# ---- memory: sparse tables and names -----------------------------------------------------------

def _symtab_elf(path, sym_size, str_size, apparent, shstr=False):
    """Sections: NULL, .text, .symtab (sym_size bytes at 0x1000), .strtab (str_size bytes
    after it), .shstrtab; a sparse file of `apparent` bytes. shstr: the section-name table is
    the big one instead."""
    names, (n_text, n_sym, n_str, n_shstr) = strtab([b".text", b".symtab", b".strtab",
                                                     b".shstrtab"])
    o_sym = 0x1000
    o_str = o_sym + sym_size
    o_names = 0x40
    shdrs = [shdr(0, 0), shdr(n_text, SHT_PROGBITS, SHF_ALLOC | SHF_EXEC, 0x1000, 0x40, 16),
             shdr(n_sym, SHT_SYMTAB, 0, 0, o_sym, sym_size, link=3, entsize=24),
             shdr(n_str, SHT_STRTAB, 0, 0, o_str, str_size),
             shdr(n_shstr, SHT_STRTAB, 0, 0, o_str if shstr else o_names,
                  str_size if shstr else len(names))]
    return write_elf(path, names, shdrs, shstrndx=4, pad_to=apparent)


def test_a_sparse_3_gib_symbol_table_is_one_line(tmp_path):
    f = _symtab_elf(tmp_path / "symtab.elf", 3 * GIB, 16, 3 * GIB + 64 * 1024)
    assert f.stat().st_blocks * 512 < 1 << 20           # sparse: nothing really written
    assert one_error(run(f)) == (f"error: {f}: section [2] .symtab: 134217728 symbols "
                                 "(cap 1048576)")


def test_a_sparse_2_gib_string_table_is_one_line(tmp_path):
    f = _symtab_elf(tmp_path / "strtab.elf", 24 * 16, 2 * GIB, 2 * GIB + 64 * 1024)
    assert one_error(run(f)) == f"error: {f}: section [3] .strtab: 2147483648 bytes (cap 67108864)"


def test_a_sparse_2_gib_section_name_table_is_one_line(tmp_path):
    f = _symtab_elf(tmp_path / "shstrtab.elf", 24 * 16, 2 * GIB, 2 * GIB + 64 * 1024, shstr=True)
    assert one_error(run(f)) == (f"error: {f}: section [4] (section names): 2147483648 bytes "
                                 "(cap 67108864)")


def _many_symbols_elf(path, count, names: bytes, name_of):
    syms = b"".join(sym(name_of(i), 8 + i % 64, 1, 0x1000 + 8 * i) for i in range(count))
    head, (n_text, n_sym, n_str, n_shstr) = strtab([b".text", b".symtab", b".strtab",
                                                    b".shstrtab"])
    o_head = 0x40
    o_sym = o_head + len(head)
    o_str = o_sym + len(syms)
    shdrs = [shdr(0, 0), shdr(n_text, SHT_PROGBITS, SHF_ALLOC | SHF_EXEC, 0x1000, 0x40, 16),
             shdr(n_sym, SHT_SYMTAB, 0, 0, o_sym, len(syms), link=3, entsize=24),
             shdr(n_str, SHT_STRTAB, 0, 0, o_str, len(names)),
             shdr(n_shstr, SHT_STRTAB, 0, 0, o_head, len(head))]
    return write_elf(path, head + syms + names, shdrs, shstrndx=4)


def test_a_million_long_overlapping_names_is_one_line(tmp_path):
    """Every symbol names the same 8 KiB string: 8 GiB of names (the old reader decoded each
    in full). Each is cut at 4 KiB and their total is budgeted."""
    f = _many_symbols_elf(tmp_path / "names.elf", 1 << 20, b"A" * 8191 + b"\0", lambda i: 0)
    assert one_error(run(f)) == (f"error: {f}: section [2] .symtab: names add up to more than "
                                 "134217728 bytes (cap 134217728)")


def test_half_a_million_sized_symbols_is_read_within_the_bounds(tmp_path):
    """524,288 distinct sized symbols, half the cap (a defconfig vmlinux has ~150 k). The
    cost is linear: at the cap itself, 1,048,576 take 2.7 s of CPU and 268 MiB (measured
    in-process); half keeps the wall-clock bound safe on a loaded 2-core machine."""
    count = 1 << 19
    names = b"".join(b"f%07d\0" % i for i in range(count))
    f = _many_symbols_elf(tmp_path / "many.elf", count, names, lambda i: 9 * i)
    r = run(f)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert "  top 10 symbols in .text:" in out
    # largest first (size 71 = 8 + 63), then by name: f0000063, f0000127, ...
    assert out[out.index("  top 10 symbols in .text:") + 1] == "            71  f0000063"
