"""Bench inventory: file validation (fast) and a QEMU entry checked through pyOCD (slow)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcu_build import ROOT
from seedfw import bench
from seedfw.errors import SeedfwError

QEMU_BENCH = ROOT / "bench/qemu-bench.yaml"


def test_load_qemu_bench():
    [entry] = bench.load(QEMU_BENCH)
    assert (entry.board, entry.probe, entry.is_qemu) == ("mps2-an385", "qemu:auto", True)
    assert entry.pyocd_target() == "seedfw_mps2_an385"
    assert bench.entry_for_board([entry], "rk3588") is None


def test_unknown_board_is_one_line_error(tmp_path):
    f = tmp_path / "bench.yaml"
    f.write_text("boards:\n  - {name: a, board: nosuch, probe: 'cmsisdap:1234'}\n")
    with pytest.raises(SeedfwError) as err:
        bench.load(f)
    assert err.value.line().startswith(f"{f}: boards[0].board: unknown board 'nosuch'")


def test_missing_bench_file_named(monkeypatch):
    monkeypatch.delenv("SEEDFW_BENCH", raising=False)
    with pytest.raises(SeedfwError, match="no bench file"):
        bench.load(None)


def test_absent_probe_and_serial_reported():
    entry = bench.BenchEntry(name="x", board="mps2-an385", probe="qemu:127.0.0.1:1", serial="/dev/nonexistent")
    assert not bench.serial_present(entry.serial)


@pytest.mark.slow
def test_invoke_bench_check_starts_qemu():
    res = subprocess.run([sys.executable, "-m", "invoke", "bench", "--bench", str(QEMU_BENCH), "--check"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "wake-mcu" in res.stdout and "ok (probe yes, serial yes)" in res.stdout


def test_power_command_failure_is_reported(tmp_path):
    marker = tmp_path / "powered"
    ok = bench.BenchEntry(name="b", board="mps2-an385", probe="qemu:auto", power={"on": f"touch {marker}"})
    bench.run_power(ok, "on")
    assert marker.exists()
    bad = bench.BenchEntry(name="b", board="mps2-an385", probe="qemu:auto", power={"on": "false"})
    with pytest.raises(SeedfwError) as err:
        bench.run_power(bad, "on")
    assert err.value.line() == "b.power.on: power on command failed (exit 1)"
