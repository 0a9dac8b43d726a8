"""seedfw.compress: the lz4blk container (layout vs the C header, round trips, reader errors with
exact messages), dictionary sources and verdicts, ELF section compression and its report.

Inputs are small on purpose (HC12 runs at 7-40 MB/s in Python). The ELF is a real one: a tiny
program compiled by the host compiler in a tmp dir (real sections, real pyelftools parsing).
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from c_layout import c_layout, c_macros
from cli import invoke, one_error_line
from seedfw.compress import blocks, container, sections
from seedfw.compress.container import parse_container, read_container, write_container
from seedfw.compress.dictionary import Dictionary, train_dictionary
from seedfw.errors import SeedfwError

ROOT = Path(__file__).resolve().parents[1]
PROJECT_DICT = ROOT / "firmware" / "lz4" / "dict" / "aarch64-rodata.dict"
TEXT = (b"seedfw firmware string table: BL31: Initializing runtime services\n"
        b"PSCI: CPU_ON failed, error %d\nSMC: unknown function id 0x%x\n") * 40


def rand_bytes(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


# ---------------------------------------------------------------- layout vs lz4blk.h (standard 5)

def test_header_layout_matches_c():
    lay = c_layout("seedfw/lz4blk.h", {"lz4blk_header": list(container.HEADER_FIELDS),
                                       "lz4blk_boot_entry": ["container", "container_len",
                                                             "dest", "capacity"]})
    hdr = lay["lz4blk_header"]
    assert hdr.pop("sizeof") == container.HEADER_SIZE == container.HEADER.size
    assert hdr == container.HEADER_OFFSETS
    assert lay["lz4blk_boot_entry"] == {"sizeof": container.BOOT_ENTRY.size, "container": 0,
                                        "container_len": 8, "dest": 16, "capacity": 24}
    table = container.pack_boot_table([(0x1000, 0x80, 0x8000, 0x2000), (1, 2, 3, 4)])
    assert table[32:] == struct.pack("<4Q", 1, 2, 3, 4) and len(table) == 64
    with pytest.raises(SeedfwError, match="boot table entry 0: container 0x8100\\+16 overlaps"):
        container.pack_boot_table([(0x8100, 16, 0x8000, 0x2000)])


def test_constants_match_c():
    m = c_macros("seedfw/lz4blk.h", ["LZ4BLK_MAGIC", "LZ4BLK_VERSION", "LZ4BLK_HEADER_SIZE",
                                     "LZ4BLK_STORED", "LZ4BLK_SIZE_MASK", "LZ4BLK_TABLE_ENTRY_SIZE",
                                     "LZ4BLK_MIN_BLOCK_SHIFT", "LZ4BLK_MAX_BLOCK_SHIFT"])
    assert m["LZ4BLK_MAGIC"] == container.MAGIC
    assert struct.pack("<I", container.MAGIC) == b"SLZ4"
    assert m["LZ4BLK_VERSION"] == container.VERSION
    assert m["LZ4BLK_HEADER_SIZE"] == container.HEADER_SIZE
    assert m["LZ4BLK_STORED"] == container.STORED
    assert m["LZ4BLK_SIZE_MASK"] == container.SIZE_MASK
    assert m["LZ4BLK_TABLE_ENTRY_SIZE"] == container.TABLE_ENTRY.size
    assert 1 << m["LZ4BLK_MIN_BLOCK_SHIFT"] == blocks.MIN_BLOCK_SIZE
    assert 1 << m["LZ4BLK_MAX_BLOCK_SHIFT"] == blocks.MAX_BLOCK_SIZE


def test_header_fields_written_where_c_reads_them():
    dic = TEXT[:512]
    blob = write_container(TEXT, 1024, 9, dic)
    h = dict(zip(container.HEADER_FIELDS, container.HEADER.unpack_from(blob)))
    assert h["original_size"] == len(TEXT) and h["block_size"] == 1024
    assert h["block_count"] == -(-len(TEXT) // 1024)
    assert h["dict_size"] == 512 and h["dict_id"] == zlib.crc32(dic)
    assert h["crc32"] == zlib.crc32(TEXT)
    table = blob[40:40 + 4 * h["block_count"]]
    assert h["header_crc"] == zlib.crc32(blob[:36] + table)
    assert h["payload_size"] == len(blob) - 40 - len(table)


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("data", [b"", b"x", rand_bytes(3000), TEXT[:4096], TEXT[:4097], TEXT],
                         ids=["empty", "1byte", "incompressible", "one-block", "partial-last",
                              "text"])
@pytest.mark.parametrize("dic", [b"", TEXT[100:400], TEXT * 2], ids=["nodict", "dict", "bigdict"])
def test_round_trip(data, dic):
    if len(dic) > 65536:
        dic = dic[-65536:]
    blob = write_container(data, 4096, 9, dic)
    assert read_container(blob, dic) == data
    info = parse_container(blob)
    assert info.original_size == len(data) and info.total_size == len(blob)


def test_incompressible_blocks_are_stored_raw():
    data = rand_bytes(5000)
    info = parse_container(write_container(data, 4096, 12))
    assert info.block_count == 2 and info.stored_blocks == 2
    assert info.payload_size == 5000           # never grows beyond header + 4 B per block


def test_fast_mode_and_levels_round_trip():
    for level in (0, 1, 12):
        assert read_container(write_container(TEXT, 1024, level)) == TEXT


def test_dictionary_shrinks_small_blocks():
    dic = TEXT[:2048]
    data = TEXT[7:1500]
    assert len(write_container(data, 1024, 12, dic)) < len(write_container(data, 1024, 12)) // 2


# ---------------------------------------------------------------- reader errors (exact messages)

def _fix_header_crc(blob: bytearray) -> bytearray:
    count = struct.unpack_from("<I", blob, 12)[0]
    crc = zlib.crc32(bytes(blob[:36]) + bytes(blob[40:40 + 4 * count]))
    struct.pack_into("<I", blob, 36, crc)
    return blob


def _err(blob, **kw) -> str:
    with pytest.raises(SeedfwError) as e:
        read_container(bytes(blob), source="sec.lz4blk", **kw)
    return e.value.line()


GOOD = write_container(TEXT[:3000], 1024, 9)


def test_error_truncated_header():
    assert _err(GOOD[:39]) == ("sec.lz4blk: offset 0x27 (header): truncated: 39 bytes, "
                               "a container header needs 40")


def test_error_bad_magic():
    b = bytearray(GOOD)
    b[0] ^= 0xFF
    assert _err(b) == ("sec.lz4blk: offset 0x0 (magic): bad magic 0x345a4cac, "
                       "expected 0x345a4c53 ('SLZ4')")


def test_error_version_and_block_size():
    b = bytearray(GOOD)
    b[4] = 2
    assert _err(b) == "sec.lz4blk: offset 0x4 (version): unsupported version 2, expected 1"
    b = bytearray(GOOD)
    struct.pack_into("<I", b, 8, 3000)
    assert _err(b) == ("sec.lz4blk: offset 0x8 (block_size): block size 3000 is not a power of "
                       "two in 1024..4194304")


def test_error_block_count():
    b = bytearray(GOOD)
    struct.pack_into("<I", b, 12, 2)
    assert _err(b) == ("sec.lz4blk: offset 0xc (block_count): 2 blocks, but original size 3000 "
                       "in blocks of 1024 needs 3")


def test_error_truncated_table_and_blocks():
    assert _err(GOOD[:45]) == ("sec.lz4blk: offset 0x2d (block table): truncated: block table "
                               "of 3 entries ends at 0x34, container has 45 bytes")
    assert _err(GOOD[:-1]).startswith("sec.lz4blk: offset 0x")
    assert _err(GOOD[:-1]).endswith(f"(block 2): truncated: blocks end at 0x{len(GOOD):x}, "
                                    f"container has {len(GOOD) - 1} bytes")


def test_error_header_crc():
    b = bytearray(GOOD)
    b[16] ^= 1                                  # original_size: still 3 blocks, crc catches it
    got = zlib.crc32(bytes(b[:36]) + bytes(b[40:52]))
    want = struct.unpack_from("<I", b, 36)[0]
    assert _err(b) == (f"sec.lz4blk: offset 0x24 (header_crc): header checksum 0x{want:08x}, "
                       f"computed 0x{got:08x}")


def test_error_table_entry():
    b = bytearray(GOOD)
    struct.pack_into("<I", b, 44, 0x80000000 | 5)
    _fix_header_crc(b)
    assert _err(b) == ("sec.lz4blk: offset 0x2c (block 1): stored block of 5 bytes, but the "
                       "block holds 1024")
    struct.pack_into("<I", b, 44, 1024)
    _fix_header_crc(b)
    assert _err(b) == ("sec.lz4blk: offset 0x2c (block 1): compressed size 1024 not in 1..1023 "
                       "(raw block is 1024 bytes)")


def test_error_trailing_bytes_and_wrong_dictionary():
    assert _err(GOOD + b"\0\0") == (f"sec.lz4blk: offset 0x{len(GOOD):x} (end): 2 unexpected "
                                    f"bytes after the last block")
    withd = write_container(TEXT[:3000], 1024, 9, TEXT[:256])
    assert _err(withd, dictionary=TEXT[1:257]) == (
        f"sec.lz4blk: offset 0x14 (dict_id): needs dictionary 0x{zlib.crc32(TEXT[:256]):08x} of "
        f"256 bytes, got 0x{zlib.crc32(TEXT[1:257]):08x} of 256 bytes")


def test_error_data_checksum():
    data = rand_bytes(2000)                     # stored raw: flip a data byte, only crc32 sees it
    b = bytearray(write_container(data, 1024, 9))
    b[-1] ^= 0x40
    bad = zlib.crc32(data[:-1] + bytes([data[-1] ^ 0x40]))
    assert _err(b) == (f"sec.lz4blk: offset 0x1c (crc32): checksum of the decompressed data "
                       f"0x{bad:08x}, header says 0x{zlib.crc32(data):08x}")


def test_error_corrupt_lz4_block():
    b = bytearray(GOOD)
    first = 40 + 12
    b[first:first + 40] = b"\xff" * 40          # absurd lengths in block 0
    line = _err(b)
    assert line.startswith(f"sec.lz4blk: offset 0x{first:x} (block 0): ")


# ---------------------------------------------------------------- blocks / parameters

def test_bad_parameters():
    with pytest.raises(SeedfwError, match="block size 5000 is not a power of two"):
        write_container(TEXT, 5000)
    with pytest.raises(SeedfwError, match="HC level 13 outside 0..12"):
        write_container(TEXT, 4096, 13)


# ---------------------------------------------------------------- dictionaries

def test_dictionary_sources(tmp_path):
    f = tmp_path / "d.dict"
    f.write_bytes(TEXT[:3000])
    d = Dictionary.from_file(f, 2048)
    assert d.data == TEXT[952:3000] and d.stored_size == 2048 and d.source == "file"
    assert d.id == zlib.crc32(d.data)
    r = Dictionary.resident(TEXT, 1024)
    assert r.stored_size == 0 and r.data == TEXT[-1024:]
    with pytest.raises(SeedfwError) as e:
        Dictionary.from_file(tmp_path / "missing.dict")
    assert e.value.line().endswith("missing.dict: cannot read dictionary: No such file or directory")


def test_train_dictionary_deterministic_and_raw():
    rng = random.Random(3)
    words = [b"BL31", b"PSCI", b"SMC", b"error", b"CPU_ON", b"invalid", b"init", b"service"]
    corpus = [b"".join(b"%s: %s %d %s\n" % (rng.choice(words), rng.choice(words), rng.randrange(99),
                                            rng.choice(words)) for _ in range(100))
              for _ in range(8)]
    a = train_dictionary(corpus, 512)
    assert a == train_dictionary(corpus, 512) and len(a) == 512
    assert not a.startswith(b"\x37\xa4\x30\xec")          # no zstd dictionary header
    with pytest.raises(SeedfwError, match="dictionary corpus too small"):
        train_dictionary([b"tiny"], 2048)


def test_project_dictionary_is_committed_with_provenance():
    data = PROJECT_DICT.read_bytes()
    side = json.loads(Path(str(PROJECT_DICT) + ".json").read_text())
    assert len(data) == 2048 == side["dictionary"]["size"]
    assert side["dictionary"]["id_crc32"] == f"0x{zlib.crc32(data):08x}"
    assert side["corpus"] and all(c["elf"].split("/")[0] not in ("rk3588", "qemu")
                                  for c in side["corpus"]), "trained on the images it serves"


@pytest.mark.parametrize("no_dict,with_dict,stored,source,verdict", [
    (2144, 1834, 2048, "file", "dictionary costs 2048 B and saves 310 B: not worth it"),
    (9000, 6000, 2048, "trained", "dictionary costs 2048 B and saves 3000 B: net gain 952 B"),
    (2144, 2144, 2048, "file", "dictionary costs 2048 B and saves 0 B: not worth it"),
    (2144, 2100, 0, "resident", "resident dictionary (stored free) saves 44 B"),
    (2144, 2144, 0, "resident", "resident dictionary saves 0 B: not worth it"),
    (2144, 2144, 0, "none", "no dictionary"),
])
def test_dictionary_verdicts(no_dict, with_dict, stored, source, verdict):
    assert sections.dictionary_verdict(no_dict, with_dict, stored, source) == verdict


# ---------------------------------------------------------------- ELF sections

@pytest.fixture(scope="module")
def small_elf(tmp_path_factory) -> Path:
    """A real ELF from the host compiler with a ~5 KiB .rodata string table."""
    d = tmp_path_factory.mktemp("elf")
    strings = ",\n".join(f'"message {i}: {TEXT[i % 200:i % 200 + 40].decode()!r}"'.replace("'", "")
                         for i in range(120))
    (d / "m.c").write_text(f"const char *const tab[] = {{{strings}}};\n"
                           "int main(int c, char **v) { (void)v; return tab[c][0]; }\n")
    subprocess.run(["cc", "-O1", "-o", str(d / "m.elf"), str(d / "m.c")], check=True)
    return d / "m.elf"


def test_compress_elf_sections_and_report(small_elf, tmp_path):
    useless = Dictionary(rand_bytes(2048, 7), "file", 2048, "random.dict")
    res = sections.compress_elf_sections(small_elf, [".rodata", ".text"], 4096, 9, useless)
    ro = res[0]
    assert ro.name == ".rodata" and ro.raw > 4096 and ro.blocks == 2
    assert ro.no_dict < ro.raw and ro.dict_stored == 2048
    assert ro.net_gain == ro.no_dict - ro.with_dict - 2048 <= 0
    assert ro.verdict.endswith("not worth it") and not ro.use_dict
    assert read_container(ro.container) == sections.read_elf_sections(small_elf, [".rodata"])[
        ".rodata"][1]
    out = sections.write_report(tmp_path, res, small_elf, 4096, 9, useless)
    rep = json.loads(out.read_text())
    assert rep["sections"][0]["raw"] == ro.raw and rep["sections"][0]["verdict"] == ro.verdict
    assert rep["total"]["dict_stored"] == 2048             # charged once for the image
    assert not os.path.isabs(rep["elf"]) and rep["dictionary"]["origin"] == "random.dict"
    assert [p.name for p in tmp_path.iterdir()] == ["compression.json"]   # no temp leftovers


def test_resident_dictionary_of_the_same_data_pays(small_elf):
    ro = sections.read_elf_sections(small_elf, [".rodata"])[".rodata"][1]
    res = sections.compress_elf_sections(small_elf, [".rodata"], 4096, 9,
                                         Dictionary.resident(ro, 4096))
    assert res[0].use_dict and res[0].net_gain > res[0].no_dict // 3 and res[0].dict_stored == 0


def test_section_errors(small_elf, tmp_path):
    with pytest.raises(SeedfwError) as e:
        sections.compress_elf_sections(small_elf, [".nope"])
    assert (e.value.file, e.value.field, e.value.message) == (
        str(small_elf), "sections", "section .nope not found")
    with pytest.raises(SeedfwError, match=r"section \.bss has no file contents \(NOBITS\)"):
        sections.compress_elf_sections(small_elf, [".bss"])
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"not an elf at all" * 4)
    with pytest.raises(SeedfwError, match="not a valid ELF file"):
        sections.compress_elf_sections(junk, [".rodata"])


# ---------------------------------------------------------------- invoke compress

def test_invoke_compress_table_and_outputs(small_elf, tmp_path):
    p = invoke("compress", small_elf, "--section", ".rodata", "--block-size", "4096",
               "--level", "9", "--dict", PROJECT_DICT, "--output", tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[1].split()[:7] == ["section", "raw", "no", "dict", "dict", "dict", "B"]
    row = lines[2].split()
    res = json.loads((tmp_path / "compression.json").read_text())["sections"][0]
    assert row[:7] == [".rodata", str(res["raw"]), str(res["no_dict"]), str(res["with_dict"]),
                       "2048", str(res["net_gain"]), str(res["blocks"])]
    blob = (tmp_path / "rodata.lz4blk").read_bytes()
    dic = PROJECT_DICT.read_bytes() if res["use_dict"] else None
    assert read_container(blob, dic) == sections.read_elf_sections(small_elf, [".rodata"])[
        ".rodata"][1]


def test_invoke_compress_bad_input(small_elf):
    line = one_error_line(invoke("compress", small_elf, "--block-size", "3000"))
    assert line == "error: block_size: block size 3000 is not a power of two in 1024..4194304"
    line = one_error_line(invoke("compress", small_elf, "--dict", "x.dict", "--resident", ".text"))
    assert line == "error: dictionary: choose one dictionary source, not --dict and --resident"


def test_invoke_train_dict_writes_dictionary_and_provenance(tmp_path):
    rng = random.Random(4)
    words = ["BL31", "PSCI", "SMC", "error", "CPU_ON", "invalid", "init", "service", "GIC"]
    for n in range(2):
        lines = ",\n".join(f'"{rng.choice(words)}: {rng.choice(words)} %d {rng.choice(words)}"'
                           for _ in range(400))
        (tmp_path / f"p{n}.c").write_text(f"const char *const t[] = {{{lines}}};\n"
                                          "int main(int c, char **v) { (void)v; return t[c][0]; }\n")
        subprocess.run(["cc", "-O1", "-o", str(tmp_path / f"p{n}.elf"), str(tmp_path / f"p{n}.c")],
                       check=True)
    out = tmp_path / "d" / "x.dict"
    p = invoke("train-dict", "--out", out, "--elf", tmp_path / "p0.elf", "--elf",
               tmp_path / "p1.elf", "--size", "512")
    assert p.returncode == 0, p.stderr
    data = out.read_bytes()
    side = json.loads((tmp_path / "d" / "x.dict.json").read_text())
    assert len(data) == 512 and side["dictionary"]["id_crc32"] == f"0x{zlib.crc32(data):08x}"
    assert [c["elf"] for c in side["corpus"]] == [f"{tmp_path.name}/p0.elf",
                                                  f"{tmp_path.name}/p1.elf"]
    assert f"{out}: 512 bytes, id {side['dictionary']['id_crc32']}" in p.stdout
    line = one_error_line(invoke("train-dict", "--out", out, "--elf", tmp_path / "p0.elf",
                                 "--section", ".nope"))
    assert line == (f"error: {tmp_path / 'p0.elf'}: sections: none of the sections .nope found")
