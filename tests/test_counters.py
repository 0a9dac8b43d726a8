"""Counters: stats block (layout vs stats.h; live readback vs UART) and RK3588 DFI decoding."""

from __future__ import annotations

import re

import pytest

from c_layout import c_layout, c_macros
from mcu_build import ROOT, mcu_build
from seedfw import boards
from seedfw.counters import rk3588_dfi as dfi
from seedfw.counters import stats_block
from seedfw.errors import SeedfwError

RECORDED = ROOT / "tests/data/rk3588_dfi_recorded.yaml"


def test_stats_layout_matches_header():
    fields = list(stats_block.OFFSETS)
    layout = c_layout("seedfw/stats.h", {"seedfw_stats": fields})["seedfw_stats"]
    assert layout["sizeof"] == stats_block.SIZE
    assert {f: layout[f] for f in fields} == stats_block.OFFSETS
    macros = c_macros("seedfw/stats.h", ["SEEDFW_STATS_MAGIC", "SEEDFW_STATS_VERSION", "SEEDFW_STATS_MILESTONES"])
    assert macros == {"SEEDFW_STATS_MAGIC": stats_block.MAGIC, "SEEDFW_STATS_VERSION": stats_block.VERSION,
                      "SEEDFW_STATS_MILESTONES": stats_block.MILESTONES}


def test_stats_decode_rejects_bad_magic():
    with pytest.raises(SeedfwError, match="bad magic 0x00000000"):
        stats_block.decode(bytes(stats_block.SIZE), "x.elf")


def test_stats_symbol_from_elf(tmp_path_factory):
    out = mcu_build(tmp_path_factory)
    addr, size = stats_block.symbol_address(out / "mcu.elf")
    assert addr == 0x20000000 and size == stats_block.SIZE
    with pytest.raises(SeedfwError, match="symbol 'nope' not found"):
        stats_block.symbol_address(out / "mcu.elf", "nope")


@pytest.mark.slow
def test_stats_readback_equals_uart(tmp_path_factory):
    """Read `seedfw_stats` through pyOCD after the MCU booted; it equals what the firmware printed."""
    from pyocd.core.helpers import ConnectHelper
    from pyocd.core.target import Target

    from seedfw.run.bench import QemuGdbTarget
    from seedfw.counters.base import PyocdReader
    from seedfw.flash.pyocd_runner import PyocdRunner

    out = mcu_build(tmp_path_factory)
    board = boards.get("mps2-an385")
    source = stats_block.StatsBlockCounters(board, elf=out / "mcu.elf")
    with QemuGdbTarget(board, extra_args=["-icount", "shift=3"]) as q:
        PyocdRunner(board, q.uid, target="seedfw_mps2_an385", log=lambda *_: None).flash(out / "mcu.elf")
        uart = q.wait_uart("mcu: idle")
        session = ConnectHelper.session_with_chosen_probe(unique_id=q.uid, target_override="seedfw_mps2_an385",
                                                          blocking=False, connect_mode="attach")
        with session:
            # Attaching leaves the guest running; the read is stop/access/continue underneath.
            assert session.target.get_state() == Target.State.RUNNING
            values = source.sample(PyocdReader(session.target))
            assert session.target.get_state() == Target.State.RUNNING
        # The GDB-stub path (used for the A-class payload) reads the same block.
        from seedfw.counters.base import RspReader
        from seedfw.flash.qemu_probe.rsp import RspClient

        rsp = RspClient("127.0.0.1", q.port)
        via_gdb = source.sample(RspReader(rsp))
        rsp.close()
    printed = stats_block.parse_uart_line(uart)
    assert via_gdb == values
    values.pop("address")
    assert values == printed
    # bytes_read = the image CRC-checked in flash + .data copied by the reset handler
    image_size = (out / "mcu.bin").stat().st_size
    data_size = stats_block.symbol_address(out / "mcu.elf", "__data_end")[0] - 0x20000000
    assert values["bytes_read"] == image_size + data_size
    assert values["cycles"] >= values["milestones"]["main"] > values["milestones"]["console"]


def test_dfi_sequence_and_decoding_from_recorded_values():
    """SYNTHETIC recorded register values (tests/data), no board: checks the exact register writes
    and the byte arithmetic (LPDDR4X: burst 16 x 4-byte bus = 64 bytes per count)."""
    board = boards.get("rk3588")
    reads = {int(k): v for k, v in __import__("yaml").safe_load(RECORDED.read_text())["reads"].items()}
    reader = dfi.RecordedReader(reads)
    result = dfi.Rk3588DfiCounters(board, sleep=lambda s: None).sample(reader)
    ctrl = [0xFE060004 + 0x4000 * ch for ch in range(4)]
    expected_writes = []
    for c in ctrl:
        expected_writes += [(c, 0x000B0000), (c, 0x00740010), (c, 0x00020002)]
    expected_writes += [(c, 0x00020000) for c in ctrl]
    assert reader.writes == expected_writes
    ch = result["channels"]
    assert (ch[0]["write"], ch[0]["read"], ch[0]["access"], ch[0]["cycles"]) == (500, 2000, 2500, 211200000)
    assert (ch[1]["write"], ch[1]["access"]) == (0x20, 0x184)
    assert ch[0]["read_bytes"] == 2000 * 64 and ch[1]["write_bytes"] == 0x20 * 64
    assert result["total"]["read_bytes"] == (2000 + 100 + 200) * 64
    assert ch[3]["access_bytes"] == 0


def test_dfi_lpddr3_half_width_units(tmp_path):
    cfg = tmp_path / "counters.yaml"
    cfg.write_text("dfi: {base: 0xfe060000, channels: 1, stride: 0x4000, ddr_type: lpddr3, bus_width: [2]}\n")
    c = dfi.DfiConfig.load(cfg)
    out = dfi.decode(c, [{"write": 0, "read": 0, "cycles": 0, "access": 0}],
                     [{"write": 1, "read": 3, "cycles": 9, "access": 4}])
    assert out["channels"][0]["read_bytes"] == 3 * 8 * 2


def test_dfi_config_error_names_file_and_field(tmp_path):
    cfg = tmp_path / "counters.yaml"
    cfg.write_text("dfi: {base: 0xfe060000, channels: 2, stride: 0x4000, ddr_type: lpddr4, bus_width: [4]}\n")
    with pytest.raises(SeedfwError) as err:
        dfi.DfiConfig.load(cfg)
    assert err.value.line() == f"{cfg}: dfi.bus_width: 2 channels but 1 bus widths"


def _uart_stats(log) -> dict:
    return stats_block.parse_uart_line(log.read_text(errors="replace"))


@pytest.mark.slow
def test_payload_stats_readback_equals_uart(qemu_aarch64_build):
    """A-class path (qemu-aarch64, the RK3588 stand-in; no board here): `invoke counters` without
    a probe boots the built TF-A + payload image with a GDB stub, reads `seedfw_stats` through it
    and stops QEMU. The values equal the `stats:` line the payload printed in that same run."""
    import re

    from seedfw.counters.readback import _stats_counters_qemu

    out = qemu_aarch64_build.outdir
    board = boards.get("qemu-aarch64")
    elf = out / "images" / "bl33.elf"
    source = stats_block.StatsBlockCounters(board, elf=elf)
    values = _stats_counters_qemu(board, source, out)
    log = out / "logs" / "counters.log"
    uart = log.read_text(errors="replace")
    assert values.pop("address") == stats_block.symbol_address(elf)[0]
    assert values == _uart_stats(log)
    # The block's bytes_decompressed is the .rodata the payload reports having expanded.
    rodata = int(re.search(r"^lz4: \.rodata (\d+) -> \d+ bytes", uart, re.M).group(1))
    assert values["bytes_decompressed"] == rodata > 0
    assert values["milestones"]["decompress"] > values["milestones"]["data"] > 0
    assert values["cycles"] >= values["milestones"]["decompress"] and values["cycle_hz"] > 0


@pytest.mark.slow
def test_invoke_counters_qemu_aarch64_json(qemu_aarch64_build):
    """The CLI as a user runs it: JSON on stdout, equal to the UART line of its own run."""
    import json

    from cli import invoke

    out = qemu_aarch64_build.outdir
    proc = invoke("counters", "--board", "qemu-aarch64", "--output", out, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    printed = _uart_stats(out / "logs" / "counters.log")
    values = {**doc["readings"], **doc["settings"]}
    assert set(values) == set(printed) | {"address", "elf", "symbol"}
    assert set(doc["settings"]) == {"version", "address", "cycle_hz", "elf", "symbol"}
    assert {k: v for k, v in values.items() if k in printed} == printed
    # read in QEMU this command started: emulated, with its version and machine
    prov = doc["provenance"]
    assert (prov["source"], prov["started_by_seedfw"], prov["machine"].split(",")[0]) == \
        ("emulated", True, "virt")
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", prov["qemu_version"])


@pytest.mark.slow
def test_invoke_counters_qemu_aarch64_guest_fails_early(qemu_aarch64_build, tmp_path):
    """Negative control: a corrupted boot package makes the payload exit (semihosting, status 1)
    before its `stats:` line, so there is nothing to read: one error line, and no QEMU left over."""
    from pathlib import Path

    import builds
    from cli import invoke, one_error_line

    out = builds.copy_with_corrupted_model(qemu_aarch64_build, tmp_path / "out")
    proc = invoke("counters", "--board", "qemu-aarch64", "--output", out, "--json", timeout=120)
    assert one_error_line(proc) == (f"error: {out / 'logs' / 'counters.log'}: QEMU exited (status 1) "
                                    "before the firmware printed its 'stats:' line")
    assert "pkg: FAILED, 1 errors" in (out / "logs" / "counters.log").read_text()
    assert not [p for p in Path("/proc").glob("[0-9]*") if _cmdline_mentions(p, str(out))]


def _cmdline_mentions(proc_dir, text: str) -> bool:
    try:
        return text.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:                 # the process ended while we looked
        return False


# ---- provenance (issue 11): counters say where they came from; settings are not readings -----

def test_invoke_counters_recorded_json_carries_provenance():
    """The repo's recording is SYNTHETIC and says so; the JSON carries that, and the settings
    (interval, DDR type, burst length) are apart from the readings."""
    import json

    from cli import invoke

    proc = invoke("counters", "--board", "rk3588", "--recorded", RECORDED, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"provenance", "settings", "readings"}
    prov = doc["provenance"]
    assert (prov["source"], prov["synthetic"], prov["file"]) == \
        ("recorded", True, "tests/data/rk3588_dfi_recorded.yaml")
    assert prov["recording"]["synthetic"] is True and "not captured from hardware" in \
        prov["recording"]["how"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", prov["when"])
    assert {"interval_ms", "ddr_type", "burst_length", "bus_width"} <= set(doc["settings"])
    assert set(doc["readings"]) == {"channels", "total"}
    assert doc["readings"]["total"]["read_bytes"] == (2000 + 100 + 200) * 64


def test_invoke_counters_recorded_text_says_synthetic():
    from cli import invoke

    proc = invoke("counters", "--board", "rk3588", "--recorded", RECORDED)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("provenance           recorded, synthetic: ")
    settings = lines.index("settings (configuration and identifiers, not measurements):")
    assert any(l.split() == ["interval_ms", "100"] for l in lines[settings:])
    assert not any(l.startswith("interval_ms") for l in lines[:settings])


def test_recording_without_provenance_loads_as_unknown(tmp_path):
    from seedfw.counters import provenance

    bare = tmp_path / "bare.yaml"
    bare.write_text(re.sub(r"(?ms)^provenance:\n(  .*?\n)+", "", RECORDED.read_text()))
    reader = dfi.load_recording(bare)
    assert reader.provenance is None
    prov = provenance.recorded(bare, reader.provenance)
    assert (prov["source"], prov["synthetic"]) == ("recorded", None)
    assert provenance.label(prov) == "recorded, provenance unknown"
    assert provenance.label(None) == "provenance unknown"
    assert provenance.label(provenance.recorded(RECORDED, dfi.load_recording(RECORDED).provenance)) \
        == "recorded, synthetic"


def test_recording_provenance_is_checked(tmp_path):
    text = RECORDED.read_text()
    cases = {
        "  synthetic: true\n": ("  synthetic: maybe\n", "field 'provenance.synthetic': expected "
                                                         "boolean, got str 'maybe'"),
        "  by: ": ("  author: ", "unknown field 'provenance.author'"),
    }
    for old, (new, message) in cases.items():
        p = tmp_path / "r.yaml"
        p.write_text(text.replace(old, new))
        with pytest.raises(SeedfwError) as err:
            dfi.load_recording(p)
        assert err.value.message == message and err.value.field.startswith("line ")
    # a capture from hardware (synthetic: false) must say where and when
    p.write_text(text.replace("  synthetic: true\n", "  synthetic: false\n")
                 .replace('  when: "2026-11-30"\n', ""))
    with pytest.raises(SeedfwError, match="missing required field 'provenance.when'"):
        dfi.load_recording(p)
    p.write_text(text.replace("  synthetic: true\n", "  synthetic: false\n")
                 .replace("where: no board (written by hand)", "where: rk3588-evb1 no. 3"))
    from seedfw.counters import provenance
    prov = provenance.recorded(p, dfi.load_recording(p).provenance)
    assert provenance.label(prov) == "recorded on rk3588-evb1 no. 3, 2026-11-30"


def test_live_and_emulated_labels():
    from seedfw.counters import provenance

    live = provenance.live("cmsisdap:0001", "rk3588")
    assert provenance.label(live) == "live, probe cmsisdap:0001" and live["source"] == "live"
    mcu = provenance.emulated(boards.get("mps2-an385"), "pyOCD qemu plug-in", target="qemu:auto")
    assert re.fullmatch(r"emulated in QEMU \d+\.\d+(\.\d+)?, mps2-an385", provenance.label(mcu))
    assert "not from a chip" in mcu["note"]
    assert provenance.label({"source": "guessed"}) == "provenance unknown"


def test_document_splits_settings_from_readings():
    board = boards.get("rk3588")
    src = dfi.Rk3588DfiCounters(board, sleep=lambda s: None)
    values = src.sample(dfi.load_recording(RECORDED))
    doc = src.document(values, {"source": "recorded"})
    assert "interval_ms" not in doc["readings"] and "ddr_type" not in doc["readings"]
    assert doc["settings"]["interval_ms"] == 100 and doc["settings"]["ddr_type"] == "lpddr4x"
    assert doc["settings"]["map"] == "board/rk3588/counters.yaml"
    stats = stats_block.StatsBlockCounters.SETTINGS
    assert {"version", "address", "cycle_hz"} == stats
