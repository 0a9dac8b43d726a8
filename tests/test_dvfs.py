"""DVFS tables: validation messages, binary layout vs dvfs.h, dtc, C header, .dvfs_hint harvest."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from c_layout import INCLUDE, c_layout, c_macros
from seedfw import boards, dvfs
from seedfw.dvfs import hints as dvfs_hints
from seedfw.errors import SeedfwError

QEMU_YAML = (boards.get("qemu-aarch64").dir / "dvfs.yaml").read_text()
BOARDS = ["rk3588", "qemu-aarch64", "mps2-an385"]


def load_text(tmp_path, text):
    p = tmp_path / "dvfs.yaml"
    p.write_text(text)
    return dvfs.load(p)


def broken(tmp_path, old, new):
    assert old in QEMU_YAML, old
    with pytest.raises(SeedfwError) as exc:
        load_text(tmp_path, QEMU_YAML.replace(old, new, 1))
    return exc.value


@pytest.mark.parametrize("board", BOARDS)
def test_board_tables_are_valid(board):
    t = dvfs.load(boards.get(board).dvfs_file)
    assert [p.name for p in t.profiles] == ["ultra_low", "balanced", "performance"]


def test_rk3588_real_values():
    t = dvfs.load(boards.get("rk3588").dvfs_file)
    assert [d.name for d in t.domains] == ["cpu-little", "cpu-big0", "cpu-big1", "gpu", "npu", "ddr"]
    little = t.domain("cpu-little")
    assert [(o.hz // 10**6, o.uv_target) for o in little.opps] == [
        (1008, 675000), (1200, 712500), (1416, 762500), (1608, 850000), (1800, 950000)]
    big = t.domain("cpu-big1")
    assert [(o.hz // 10**6, o.uv_target) for o in big.opps][-1] == (2400, 1000000)
    assert (big.reg_min_uv, big.reg_max_uv, big.clock_latency_ns) == (550000, 1050000, 40000)
    assert t.domain("npu").source == "vendor" and t.domain("gpu").source == "mainline"
    assert t.profile("performance").allowed["cpu-big0"] == tuple(range(7))


# Each bad table → its exact message and line (the line of the offending OPP / field).
CASES = [
    ("{hz: 1000000000, microvolt: [800000,", "{hz: 500000000, microvolt: [800000,",
     "line 12", "domain 'cpu' opp[1]: duplicate frequency 500000000 Hz (same as opp[0])"),
    ("{hz: 1500000000, microvolt: [900000,", "{hz: 900000000, microvolt: [900000,",
     "line 13", "domain 'cpu' opp[2]: frequency 900000000 Hz is not above opp[1] (1000000000 Hz); "
                "frequencies must increase strictly"),
    ("{hz: 1500000000, microvolt: [900000, 900000,", "{hz: 1500000000, microvolt: [750000, 750000,",
     "line 13", "domain 'cpu' opp[2]: target 750000 µV is below opp[1]'s 800000 µV; voltage must "
                "not fall as frequency rises"),
    ("[1000000, 1000000, 1100000]", "[1000000, 1050000, 1100000]",
     "line 14", "domain 'cpu' opp[3]: target 1000000 µV is outside its min..max 1050000..1100000 µV"),
    ("[850000, 850000, 900000]", "[1050000, 850000, 1100000]",
     "line 21", "domain 'npu' opp[2]: target 1050000 µV is outside regulator 'vdd_npu' range "
                "600000..1000000 µV"),
    ("[850000, 850000, 900000]", "[850000, 850000, 1050000]",
     "line 21", "domain 'npu' opp[2]: min..max 850000..1050000 µV exceeds regulator 'vdd_npu' range "
                "600000..1000000 µV"),
    ("{hz: 200000000,", "{hz: 200,",
     "line 19", "domain 'npu' opp[0]: frequency 200 Hz is outside 1000000..10000000000 (units are Hz)"),
    ("[700000, 700000, 900000]", "[700, 700, 900]",
     "line 19", "domain 'npu' opp[0]: target voltage 700 is outside 100000..2000000 µV (units are µV)"),
    ("  - name: npu\n", "  - name: cpu\n",
     "line 15", "domain 'cpu': duplicate domain name"),
    ("npu: {max_hz: 200000000}", "npu: {max_hz: 300000000}",
     "line 25", "profile 'ultra_low' domain 'npu': max_hz 300000000 is not an OPP of the domain"),
    ("npu: {opps_hz: [200000000, 400000000]}", "npu: {opps_hz: [200000000, 450000000]}",
     "line 28", "profile 'balanced' domain 'npu': opps_hz[1] 450000000 is not an OPP of the domain"),
    ("npu: {opps_hz: [200000000, 400000000]}", "gpu: {max_hz: 200000000}",
     "line 28", "profile 'balanced': unknown domain 'gpu' (known: cpu, npu)"),
    ("clock_latency_ns: 50000", "clock_latency_ns: 50000000",
     "line 9", "domain 'cpu': clock_latency_ns 50000000 is over 10000000 ns (units are ns)"),
    ("min_uv: 600000, max_uv: 1100000", "min_uv: 1100000, max_uv: 600000",
     "line 8", "domain 'cpu' regulator: min_uv 1100000 is above max_uv 600000"),
    ("  performance: {}\n", "",
     "line 22", "missing required field 'profiles.performance'"),
]


@pytest.mark.parametrize("old,new,field,message", CASES, ids=[c[3][:40] for c in CASES])
def test_bad_table_message(tmp_path, old, new, field, message):
    err = broken(tmp_path, old, new)
    assert (err.field, err.message) == (field, message)
    assert err.line().endswith(f"dvfs.yaml:{field[5:]}: {message}")


def test_binary_layout_matches_header():
    layout = c_layout("seedfw/dvfs.h", {
        "dvfs_table_header": ["magic", "version", "header_size", "total_size", "crc32",
                              "domain_count", "opp_count", "profile_count", "hint_count",
                              "default_profile", "domains_offset", "opps_offset",
                              "profiles_offset", "hints_offset"],
        "dvfs_domain": ["name", "regulator", "regulator_min_uv", "regulator_max_uv",
                        "clock_latency_ns", "first_opp", "opp_count"],
        "dvfs_opp": ["hz", "microvolt_target", "microvolt_min", "microvolt_max"],
        "dvfs_profile": ["name", "opp_mask"],
        "dvfs_hint": ["criticality", "latency_slack_ns", "freq_min_mhz", "voltage_mv", "domain",
                      "name"],
    })
    assert layout["dvfs_table_header"]["sizeof"] == dvfs.HEADER.size
    assert layout["dvfs_table_header"]["crc32"] == 12      # encode() patches the crc there
    assert layout["dvfs_table_header"]["hints_offset"] == struct.calcsize("<IHHIIHHHHHHIIII") - 4
    assert layout["dvfs_domain"]["sizeof"] == dvfs.DOMAIN.size
    assert layout["dvfs_domain"]["first_opp"] == struct.calcsize("<16s16sIII")
    assert layout["dvfs_opp"]["sizeof"] == dvfs.OPP.size
    assert layout["dvfs_opp"]["microvolt_max"] == 16
    assert layout["dvfs_profile"]["sizeof"] == dvfs.PROFILE.size
    assert layout["dvfs_hint"]["sizeof"] == dvfs.HINT.size
    assert layout["dvfs_hint"]["name"] == 32
    macros = c_macros("seedfw/dvfs.h", ["DVFS_MAGIC", "DVFS_VERSION", "DVFS_MAX_DOMAINS",
                                        "DVFS_MAX_OPPS", "DVFS_NAME_LEN"])
    assert macros == {"DVFS_MAGIC": dvfs.MAGIC, "DVFS_VERSION": dvfs.VERSION,
                      "DVFS_MAX_DOMAINS": dvfs.MAX_DOMAINS, "DVFS_MAX_OPPS": dvfs.MAX_OPPS,
                      "DVFS_NAME_LEN": dvfs.NAME_LEN}


def test_binary_round_trip_and_crc():
    t = dvfs.load(boards.get("rk3588").dvfs_file)
    blob = dvfs.encode(t, "ultra_low")
    assert blob[:4] == b"DVFS"
    d = dvfs.decode(blob)
    assert d["crc_ok"] and d["default_profile"] == "ultra_low" and d["opp_count"] == 39
    assert d["domains"][1]["opps"][6] == (2400000000, 1000000, 1000000, 1000000)
    assert d["profiles"][0]["masks"][3] == 0b111            # gpu ultra_low: up to 500 MHz
    zeroed = bytearray(blob)
    zeroed[12:16] = bytes(4)
    assert struct.unpack_from("<I", blob, 12)[0] == zlib.crc32(zeroed)
    flipped = bytearray(blob)
    flipped[200] ^= 1                                         # negative control
    assert not dvfs.decode(bytes(flipped))["crc_ok"]


@pytest.mark.parametrize("board", BOARDS)
def test_dts_fragment_compiles_without_warnings(tmp_path, board):
    t = dvfs.load(boards.get(board).dvfs_file)
    src = tmp_path / "opp.dts"
    src.write_text(dvfs.to_dts(t))
    proc = subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", str(tmp_path / "opp.dtb"), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    back = subprocess.run(["dtc", "-I", "dtb", "-O", "dts", str(tmp_path / "opp.dtb")],
                          capture_output=True, text=True, check=True).stdout
    first = t.domains[0].opps[0]
    assert f"opp-{first.hz} {{" in back
    assert 'compatible = "operating-points-v2";' in back
    hz_hi, hz_lo = first.hz >> 32, first.hz & 0xffffffff
    assert f"opp-hz = <0x{hz_hi:02x} 0x{hz_lo:x}>;" in back or f"opp-hz = <0x{hz_hi:x} 0x{hz_lo:x}>;" in back


def test_c_header_compiles_and_agrees(tmp_path):
    t = dvfs.load(boards.get("rk3588").dvfs_file)
    (tmp_path / "dvfs_table.h").write_text(dvfs.to_c_header(t, "balanced"))
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "dvfs_table.h"\n'
        "static const unsigned long long big[] = SEEDFW_DVFS_CPU_BIG0_HZ;\n"
        'int main(void) { printf("%d %d %llu %s %x\\n", SEEDFW_DVFS_DOMAIN_COUNT, '
        "SEEDFW_DVFS_OPP_COUNT, big[SEEDFW_DVFS_CPU_BIG0_OPP_COUNT - 1], "
        "SEEDFW_DVFS_DEFAULT_PROFILE, SEEDFW_DVFS_GPU_MASK_BALANCED); return 0; }\n")
    subprocess.run(["cc", "-Wall", "-Werror", "-o", str(tmp_path / "m"), str(tmp_path / "main.c")],
                   check=True)
    out = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["6", "39", "2400000000", "balanced", "3f"]


# ---------------------------------------------------------------- .dvfs_hint harvest

HINT_C = """
#include "seedfw/dvfs_hint.h"
SEEDFW_DVFS_HINT(camera_isr, 0.9f, 50000, 1416, 800);
SEEDFW_DVFS_HINT_DOMAIN(npu_infer, "npu", 0.5f, 2000000, 800, 800);
int _start(void) { return 0; }
"""


def cross_build(tmp_path, source: str, cc=("aarch64-linux-gnu-gcc", "-static"), gc=True) -> Path:
    if not shutil.which(cc[0]):
        pytest.fail(f"{cc[0]} missing (run 'invoke setup')")
    c = tmp_path / "hints.c"
    c.write_text(source)
    elf = tmp_path / "hints.elf"
    subprocess.run([*cc, "-Os", "-ffreestanding", "-nostdlib", f"-I{INCLUDE}", "-Wall", "-Wextra",
                    "-Werror", *(["-Wl,--gc-sections"] if gc else []), "-o", str(elf), str(c)],
                   check=True, capture_output=True, text=True)
    return elf


def test_harvest_from_cross_built_elf(tmp_path):
    elf = cross_build(tmp_path, HINT_C)
    # The compiler may emit the records in any order; the section order is not an interface.
    hints = sorted(dvfs_hints.harvest(elf), key=lambda h: h.name)
    assert [(h.name, h.domain, round(h.criticality, 3), h.latency_slack_ns, h.freq_min_mhz,
             h.voltage_mv) for h in hints] == [
        ("camera_isr", "", 0.9, 50000, 1416, 800), ("npu_infer", "npu", 0.5, 2000000, 800, 800)]
    t = dvfs.load(boards.get("rk3588").dvfs_file)
    resolved = dvfs_hints.check(t, hints, "balanced", elf)
    assert [h.domain for h in resolved] == ["cpu-little", "npu"]   # 1416 MHz: first domain that has it
    blob = dvfs.encode(dvfs.with_hints(t, resolved), "balanced")
    back = dvfs.decode(blob)["hints"]
    assert [(h["name"], h["domain"], h["freq_min_mhz"]) for h in back] == [
        ("camera_isr", "cpu-little", 1416), ("npu_infer", "npu", 800)]


def test_harvest_from_cortex_m_elf(tmp_path):
    """The wake controller's 32-bit ELF carries the same 48-byte records. Its toolchain ignores
    `retain`, so (like the MCU's linker script with KEEP) this link does not garbage-collect."""
    elf = cross_build(tmp_path, HINT_C, ("arm-none-eabi-gcc", "-mcpu=cortex-m3", "-mthumb"), gc=False)
    hints = sorted(dvfs_hints.harvest(elf), key=lambda h: h.name)
    assert [(h.name, h.freq_min_mhz, h.voltage_mv) for h in hints] == [
        ("camera_isr", 1416, 800), ("npu_infer", 800, 800)]


def test_build_outputs_with_hints(tmp_path):
    elf = cross_build(tmp_path, HINT_C)
    paths = dvfs_hints.build_outputs(boards.get("rk3588"), {"POWER_PROFILE": "balanced"}, tmp_path / "out",
                               [elf])
    assert dvfs.decode(paths["bin"].read_bytes())["hints"][1]["name"] == "npu_infer"
    assert paths["dtb"].read_bytes()[:4] == b"\xd0\x0d\xfe\xed"
    assert "SEEDFW_DVFS_DOMAIN_NPU 4" in paths["header"].read_text()


HINT_ERRORS = [
    ('SEEDFW_DVFS_HINT(fast, 0.9f, 1, 2400, 1000);',
     "hint 'fast': freq_min 2400 MHz is not allowed by the default profile 'balanced' in any domain"),
    ('SEEDFW_DVFS_HINT(odd, 0.9f, 1, 1234, 1000);',
     "hint 'odd': freq_min 1234 MHz is not an OPP of any domain"),
    ('SEEDFW_DVFS_HINT_DOMAIN(low, "cpu-big0", 0.1f, 1, 1800, 800);',
     "hint 'low': voltage 800 mV is below the 850000 µV of domain 'cpu-big0' opp[3] (1800 MHz)"),
    ('SEEDFW_DVFS_HINT_DOMAIN(where, "dsp", 0.1f, 1, 1800, 800);',
     "hint 'where': unknown domain 'dsp' (known: cpu-little, cpu-big0, cpu-big1, gpu, npu, ddr)"),
    ('SEEDFW_DVFS_HINT(crit, 1.5f, 1, 1416, 800);',
     "hint 'crit': criticality 1.5 is outside 0.0..1.0"),
]


def test_hint_errors(tmp_path):
    # One ELF per case would cost a cross-compile each; one ELF holds all records and each case is
    # checked alone, so every message is still produced by a record that came out of a real ELF.
    source = '#include "seedfw/dvfs_hint.h"\n' + "\n".join(c for c, _ in HINT_ERRORS) + \
             "\nint _start(void) { return 0; }\n"
    elf = cross_build(tmp_path, source)
    hints = dvfs_hints.harvest(elf)
    assert len(hints) == len(HINT_ERRORS)
    t = dvfs.load(boards.get("rk3588").dvfs_file)
    for source, message in HINT_ERRORS:
        name = source.split("(")[1].split(",")[0]
        (index, hint), = [(i, h) for i, h in enumerate(hints) if h.name == name]
        with pytest.raises(SeedfwError) as exc:
            dvfs_hints.check(t, [hint], "balanced", elf)
        assert (exc.value.field, exc.value.message) == (f".dvfs_hint[{index}]", message)


def test_harvest_rejects_wrong_record_size(tmp_path):
    elf = cross_build(tmp_path, '__attribute__((used, retain, section(".dvfs_hint"))) static const '
                                'char bad[20] = {1};\nint _start(void) { return 0; }\n')
    with pytest.raises(SeedfwError) as exc:
        dvfs_hints.harvest(elf)
    assert exc.value.message.startswith("section size 20 is not a multiple of the 48-byte")


def test_harvest_no_section_and_not_elf(tmp_path):
    elf = cross_build(tmp_path, "int _start(void) { return 0; }\n")
    assert dvfs_hints.harvest(elf) == []
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"nope")
    with pytest.raises(SeedfwError) as exc:
        dvfs_hints.harvest(junk)
    assert exc.value.message.startswith("not an ELF file")
