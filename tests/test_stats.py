"""seedfw.stats / stats_diff against binutils on real ELFs.

Every expected number comes from an independent tool run on the same file: `readelf -S -W`
(sections, flags → classes), `readelf -l -W` (segments and the section-to-segment mapping),
`size -A` (its total) and `nm -S --size-sort` (sized symbols). ELFs: our own cross builds
(aarch64-linux-gnu-gcc, arm-none-eabi-gcc) and two pinned Debian Architecture: all packages
(u-boot-qemu's stripped qemu_arm64 uboot.elf, libasan8-arm64-cross's 8 MB libasan.so).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

import elf_builds
from cli import invoke, one_error_line
from seedfw import stats
from seedfw.stats import diff as stats_diff
from seedfw.errors import SeedfwError

TOOLS = {"AArch64": "aarch64-linux-gnu-", "ARM": "arm-none-eabi-"}
SECTION_RE = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
                        r"([0-9a-f]+)\s+([0-9a-f]+)\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)$")


@pytest.fixture(scope="session")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats-elfs")
    return {(arch, v): elf_builds.cross_build(root / f"{arch}-{v}", arch, v)
            for arch in ("aarch64", "arm") for v in ("a", "b")}


def _sample(which):
    from seedfw.report import samples
    try:
        return samples.sample_elf(which)
    except SeedfwError as exc:
        pytest.skip(f"pinned Debian package not available: {exc.line()}")


@pytest.fixture(scope="session")
def uboot_elf():
    from seedfw.report import samples
    return _sample(samples.UBOOT_ARM64_ELF)


@pytest.fixture(scope="session")
def libasan_elf():
    from seedfw.report import samples
    return _sample(samples.LIBASAN_ELF)


def _run(*cmd) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def readelf_sections(prefix, path) -> list[dict]:
    rows = []
    for line in _run(prefix + "readelf", "-S", "-W", str(path)).splitlines():
        m = SECTION_RE.match(line)
        if m and int(m.group(1)) > 0:
            rows.append(dict(index=int(m.group(1)), name=m.group(2), type=m.group(3),
                             address=int(m.group(4), 16), size=int(m.group(6), 16),
                             flags=m.group(8)))
    return rows


def size_a(prefix, path) -> tuple[dict, int]:
    listed, total = {}, None
    for line in _run(prefix + "size", "-A", str(path)).splitlines()[2:]:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "Total":
            total = int(parts[1])
        elif len(parts) == 3:
            listed[parts[0]] = int(parts[1])
    return listed, total


def zephyr_class(sec: dict) -> str | None:
    """The classification rule written out independently of seedfw.stats."""
    if "A" not in sec["flags"]:
        return None
    if sec["type"] == "NOBITS":
        return "RAM"
    if "X" in sec["flags"]:
        return "ROM"
    return "ROM+RAM" if "W" in sec["flags"] else "ROM"


def check_against_binutils(path, prefix):
    st = stats.read_elf(path)
    ours = {s["index"]: s for s in st["sections"]}
    theirs = readelf_sections(prefix, path)
    assert len(theirs) == len(st["sections"]) - 1
    rom = ram = alloc = 0
    for sec in theirs:
        mine = ours[sec["index"]]
        assert (mine["name"], mine["type"], mine["address"], mine["size"]) == \
            (sec["name"], sec["type"], sec["address"], sec["size"])
        assert set(mine["flags"]) & set("WAX") == set(sec["flags"]) & set("WAX")
        cls = zephyr_class(sec)
        assert mine["class"] == cls, sec["name"]
        rom += sec["size"] if cls in ("ROM", "ROM+RAM") else 0
        ram += sec["size"] if cls in ("RAM", "ROM+RAM") else 0
        alloc += sec["size"] if cls else 0
    assert (st["totals"]["rom"], st["totals"]["ram"], st["totals"]["alloc"]) == (rom, ram, alloc)
    listed, total = size_a(prefix, path)
    assert st["totals"]["size_a"] == total
    assert {s["name"]: s["size"] for s in st["sections"] if s["size_a"]} == listed
    return st


def readelf_segments(prefix, path):
    text = _run(prefix + "readelf", "-l", "-W", str(path))
    loads = [l.split() for l in text.splitlines() if l.strip().startswith("LOAD")]
    mapping = re.findall(r"^[ \t]+(\d\d)[ \t]*(.*)$",
                         text.split("Section to Segment mapping:")[1], re.M)
    return loads, {int(i): names.split() for i, names in mapping}


@pytest.mark.parametrize("arch", ["aarch64", "arm"])
def test_totals_equal_readelf_and_size_on_our_builds(builds, arch):
    path = builds[(arch, "a")]
    prefix = TOOLS["AArch64" if arch == "aarch64" else "ARM"]
    st = check_against_binutils(path, prefix)
    loads, mapping = readelf_segments(prefix, path)
    ours = [g for g in st["segments"] if g["type"] == "LOAD"]
    assert [(int(l[2], 16), int(l[4], 16), int(l[5], 16)) for l in loads] == \
        [(g["vaddr"], g["file_size"], g["mem_size"]) for g in ours]
    for g in st["segments"]:
        assert g["sections"] == mapping.get(g["index"], []), g


@pytest.mark.parametrize("arch", ["aarch64", "arm"])
def test_symbols_equal_nm(builds, arch):
    path = builds[(arch, "a")]
    prefix = TOOLS["AArch64" if arch == "aarch64" else "ARM"]
    nm = sorted((l.split()[3], int(l.split()[1], 16))
                for l in _run(prefix + "nm", "-S", "--size-sort", str(path)).splitlines())
    st = stats.read_elf(path)
    assert sorted((r[0], r[1]) for r in st["symbols"]) == nm
    # Addresses, types and binding from binutils too (nm -S: "address size class name"; class
    # R/r = read-only data, B/b = bss, upper case = global), not from seedfw's own output.
    listed = {}
    for line in _run(prefix + "nm", "-S", str(path)).splitlines():
        parts = line.split()
        if len(parts) == 4:
            listed[parts[3]] = (int(parts[0], 16), int(parts[1], 16), parts[2])
    lut_address, lut_size, lut_class = listed["lut"]
    assert (lut_size, lut_class) == (1024, "R")
    assert st["top_symbols"][".rodata"][0] == dict(name="lut", size=1024, address=lut_address,
                                                    type="OBJECT", bind="GLOBAL")
    scratch = st["top_symbols"][".bss"][0]
    assert (scratch["name"], scratch["address"], scratch["size"]) == \
        ("scratch", listed["scratch"][0], 4096) and listed["scratch"][2] == "B"


@pytest.mark.slow
def test_stripped_debian_uboot(uboot_elf):
    """The odd case: pyelftools' iter_sections() raises on it; we warn and read everything."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    with open(uboot_elf, "rb") as f, pytest.raises(ELFError):   # negative control
        list(ELFFile(f).iter_sections())
    st = check_against_binutils(uboot_elf, "aarch64-linux-gnu-")
    assert st["warnings"] == ["section [5] .hash: sh_link 0 does not index a symbol table "
                              "(stripped ELF); not read"]
    assert st["symbol_source"] is None and st["symbols"] == []
    assert st["totals"]["size_a"] == 1018841


@pytest.mark.slow
def test_large_debian_library_equals_binutils(libasan_elf):
    st = check_against_binutils(libasan_elf, "aarch64-linux-gnu-")
    nm = _run("aarch64-linux-gnu-nm", "-S", "--size-sort", str(libasan_elf)).splitlines()
    assert sorted((l.split()[3], int(l.split()[1], 16)) for l in nm) == \
        sorted((r[0], r[1]) for r in st["symbols"])
    loads, mapping = readelf_segments("aarch64-linux-gnu-", libasan_elf)
    for g in st["segments"]:
        assert g["sections"] == mapping.get(g["index"], []), g


def test_diff_one_known_change(builds, tmp_path):
    """Variant b: lut grows by 64 bytes, old_fn is gone, new_fn is new — exactly that."""
    a, b = builds[("aarch64", "a")], builds[("aarch64", "b")]
    nm = {}
    for key, path in (("a", a), ("b", b)):
        nm[key] = {l.split()[3]: int(l.split()[1], 16)
                   for l in _run("aarch64-linux-gnu-nm", "-S", str(path)).splitlines()
                   if len(l.split()) == 4}
    d = stats_diff.diff_stats(stats.read_elf(a), stats.read_elf(b))
    grown = {r["name"]: r for r in d["symbols"]["grown"]}
    assert grown["lut"] == dict(name="lut", section=".rodata", old=1024, new=1088, delta=64,
                                percent=6.25)
    assert [(r["name"], r["new"]) for r in d["symbols"]["new"]] == [("new_fn", nm["b"]["new_fn"])]
    assert [(r["name"], r["old"]) for r in d["symbols"]["gone"]] == [("old_fn", nm["a"]["old_fn"])]
    unchanged = {"banner", "counters", "scratch"}
    assert not unchanged & {r["name"] for k in d["symbols"] for r in d["symbols"][k]}
    rodata = next(s for s in d["sections"] if s["name"] == ".rodata")
    assert (rodata["old"], rodata["new"], rodata["delta"]) == (1088, 1152, 64)
    # A saved stats JSON is as good a baseline as the ELF itself.
    saved = tmp_path / "a.json"
    saved.write_text(json.dumps(stats.stats_document([stats.read_elf(a)])))
    (base,) = stats.load_stats(saved)
    assert stats_diff.diff_stats(base, stats.read_elf(b)) == d
    # Negative control: a build against itself shows no change at all.
    same = stats_diff.diff_stats(stats.read_elf(a), stats.read_elf(a))
    assert same["summary"] == dict(grown=0, shrunk=0, new=0, gone=0, grown_bytes=0,
                                   shrunk_bytes=0, new_bytes=0, gone_bytes=0)


def test_bad_inputs_exact_messages(builds, tmp_path):
    good = builds[("aarch64", "a")].read_bytes()
    cases = {}
    (tmp_path / "text.elf").write_text("hello\n")
    cases["text.elf"] = "not an ELF file (no \\x7fELF magic)"
    (tmp_path / "empty.elf").write_bytes(b"")
    cases["empty.elf"] = "empty file (0 bytes), not an ELF file"
    (tmp_path / "short.elf").write_bytes(good[:10])
    cases["short.elf"] = "truncated: ELF identification needs 16 bytes, the file has 10"
    (tmp_path / "head.elf").write_bytes(good[:40])
    cases["head.elf"] = "truncated: ELF header at offset 0x10 needs 48 bytes, the file has 40"
    shoff = int.from_bytes(good[0x28:0x30], "little")
    (tmp_path / "cut.elf").write_bytes(good[:shoff + 10])
    cases["cut.elf"] = (f"truncated: section header 0 at offset {shoff:#x} needs 64 bytes, "
                        f"the file has {shoff + 10}")
    noshdr = bytearray(good)
    noshdr[0x28:0x30] = bytes(8)
    (tmp_path / "noshdr.elf").write_bytes(noshdr)
    cases["noshdr.elf"] = "e_shoff: no section headers (e_shoff = 0)"
    for name, message in cases.items():
        with pytest.raises(SeedfwError) as err:
            stats.read_elf(tmp_path / name)
        assert err.value.line() == f"{tmp_path / name}: {message}" or \
            err.value.line().endswith(f"{name}: {message}"), err.value.line()
    # Negative control: the intact file reads fine.
    assert stats.read_elf(builds[("aarch64", "a")])["warnings"] == []


def test_unreadable_symbol_table_is_a_warning(builds, tmp_path):
    """A symbol table pointing past the end of the file costs the symbols, not the stats."""
    st = stats.read_elf(builds[("aarch64", "a")])
    symtab = next(s for s in st["sections"] if s["type"] == "SYMTAB")
    data = bytearray(builds[("aarch64", "a")].read_bytes())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    entry = shoff + 64 * symtab["index"]
    data[entry + 24:entry + 32] = (len(data) + 4096).to_bytes(8, "little")   # sh_offset
    (tmp_path / "badsym.elf").write_bytes(data)
    bad = stats.read_elf(tmp_path / "badsym.elf")
    assert bad["symbols"] == [] and bad["totals"] == st["totals"]
    assert any(".symtab" in w and "symbols not read" in w for w in bad["warnings"])


@pytest.mark.slow
def test_cli_stats_json_diff_and_error(builds, tmp_path):
    """Three `invoke` processes (~0.8 s each): marked slow."""
    a, b = builds[("aarch64", "a")], builds[("aarch64", "b")]
    proc = invoke("stats", f"{a},{builds[('arm', 'a')]}", "--json", "--top", "3")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "seedfw-stats/1"
    assert [f["file"] for f in doc["files"]] == ["payload.elf", "mcu.elf"]
    assert doc["files"][0]["totals"] == stats.read_elf(a)["totals"]
    saved = tmp_path / "base.json"
    saved.write_text(json.dumps({"schema": doc["schema"], "files": doc["files"][:1]}))
    proc = invoke("stats", b, "--diff", saved)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"grown\s+lut\s+\.rodata\s+1024 →\s+1088\s+\+64 \(\+6\.25 %\)", proc.stdout)
    assert "new    new_fn" in proc.stdout and "gone   old_fn" in proc.stdout
    bad = tmp_path / "bad.elf"
    bad.write_text("not an elf")
    assert one_error_line(invoke("stats", bad)).endswith(
        "bad.elf: not an ELF file (no \\x7fELF magic)")


BOARD_BUILDS = {"qemu-aarch64": "qemu_aarch64_build", "rk3588": "rk3588_build",
                "mps2-an385": "mps2_build"}


@pytest.mark.slow
@pytest.mark.parametrize("board", list(BOARD_BUILDS))
def test_real_firmware_elfs_equal_binutils(request, board):
    """The real board builds (TF-A BL1/BL2/BL31, our BL33 payload, the MCU image): the session
    fixtures of tests/conftest.py (tests/builds.py, imported plainly there: an ImportError or a
    failed build is an error here, not a skip), shared with the other slow tests."""
    from seedfw.manifest import Manifest
    from seedfw.report import inputs
    outdir = request.getfixturevalue(BOARD_BUILDS[board]).outdir
    elfs = inputs.find_elfs(outdir, Manifest.load(outdir).doc)     # the declared ELFs
    assert elfs, f"{board}: the build in {outdir} produced no target ELF"
    for path in elfs:
        st = stats.read_elf(path)
        check_against_binutils(path, TOOLS[st["elf"]["machine"]])


@pytest.mark.slow
def test_every_uboot_qemu_elf_section_table(uboot_elf):
    """32/64-bit, little/big endian (PowerPC, MIPS, RISC-V, x86, ARM): the section table read by
    index equals the host `readelf -S -W` (readelf reads every ELF target) for all of them."""
    elfs = sorted(uboot_elf.parents[1].glob("*/uboot.elf"))
    assert len(elfs) == 9
    seen = set()
    for path in elfs:
        st = stats.read_elf(path)
        seen.add((st["elf"]["bits"], st["elf"]["endian"]))
        theirs = [(s["index"], s["name"], s["type"], s["address"], s["size"])
                  for s in readelf_sections("", path)]
        assert [(s["index"], s["name"], s["type"], s["address"], s["size"])
                for s in st["sections"][1:]] == theirs, path
    assert seen == {(32, "little"), (32, "big"), (64, "little")}
