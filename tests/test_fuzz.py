"""Fuzzing (seedfw.fuzz, `invoke fuzz`): the libFuzzer targets build with clang-14 ASan+UBSan,
seed from real data, run, and report; a planted bug must be caught (negative control).

The short runs here are smoke runs (a few seconds per target); the ≥ 10 M-execution campaigns
are run with `invoke fuzz --seconds N` and recorded in the notes, not in the suite.
"""

from __future__ import annotations

import struct
import subprocess

import pytest

from cli import invoke, one_error_line
from seedfw import fuzz
from seedfw.errors import SeedfwError

LIBFUZZER_TAIL = """\
#262144	pulse  cov: 147 ft: 597 corp: 164/81Kb lim: 8192 exec/s: 131072 rss: 389Mb
Done 1315910 runs in 6 second(s)
stat::number_of_executed_units: 1315910
stat::average_exec_per_sec:     219318
stat::new_units_added:          1064
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              399
"""


def test_parse_stats_reads_final_stats():
    s = fuzz.parse_stats(LIBFUZZER_TAIL)
    assert s["number_of_executed_units"] == 1315910
    assert s["average_exec_per_sec"] == 219318
    assert s["new_units_added"] == 1064


def test_parse_stats_falls_back_to_done_and_progress_lines():
    assert fuzz.parse_stats("Done 5000 runs in 2 second(s)\n") == {
        "number_of_executed_units": 5000, "average_exec_per_sec": 2500}
    s = fuzz.parse_stats("#4096\tpulse  cov: 10 ft: 11 corp: 3/9b exec/s: 2048 rss: 30Mb\n")
    assert s == {"number_of_executed_units": 4096, "average_exec_per_sec": 2048}
    assert fuzz.parse_stats("no numbers here") == {}


def test_unknown_target_is_one_clear_error():
    with pytest.raises(SeedfwError) as exc:
        fuzz.get("zlib")
    assert exc.value.line() == "--target: unknown fuzz target 'zlib' (known: lz4-block, " \
                               "lz4-container, pkg)"
    line = one_error_line(invoke("fuzz", "--target", "zlib", "--seconds", "1"))
    assert line == "error: --target: unknown fuzz target 'zlib' (known: lz4-block, " \
                   "lz4-container, pkg)"


def test_list_names_every_target():
    proc = invoke("fuzz", "--list")
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    from seedfw.fuzz import pyfuzz
    assert names == ["lz4-block", "lz4-container", "pkg", *pyfuzz.TARGETS]


@pytest.mark.slow
@pytest.mark.parametrize("target", list(fuzz.TARGETS))
def test_seeds_are_real_inputs_the_parsers_accept(target, tmp_path):
    """The seeds are valid inputs (not random bytes): the Python readers decode them."""
    from seedfw.compress.container import read_container
    from seedfw.images import package

    seeds = sorted(fuzz.make_seeds(target, tmp_path).iterdir())
    assert seeds
    for s in seeds:
        blob = s.read_bytes()
        assert len(blob) <= fuzz.TARGETS[target].max_len
        if target == "lz4-container":
            raw = blob[:-1] if s.name.endswith("-odd") else blob
            dictionary = fuzz.CONTAINER_DICT if "-dict" in s.name else None
            assert len(read_container(raw, dictionary)) > 0
        elif target == "pkg":
            pkg = package.decode(blob[:-1] if s.name.endswith("-odd") else blob)
            assert pkg.entries and all(e.ok for e in pkg.entries)
        else:
            import lz4.block
            dict_len, cap = blob[0], blob[1] * 64
            body = blob[2:len(blob) - dict_len]
            out = lz4.block.decompress(body, uncompressed_size=cap,
                                       **({"dict": blob[-dict_len:]} if dict_len else {}))
            assert len(out) == cap


@pytest.mark.slow
@pytest.mark.parametrize("target", list(fuzz.TARGETS))
def test_smoke_run_executes_without_crash(target, tmp_path):
    r = fuzz.run_campaign(target, 4, outdir=tmp_path / target)
    assert r.executions > 1000, r.log.read_text()[-2000:]
    assert r.exec_per_sec > 0
    assert r.crashes == [], fuzz.first_finding(r.log)
    assert r.binary.name.startswith("fuzz_") and r.binary.is_file()


@pytest.mark.slow
def test_planted_out_of_bounds_read_is_caught_within_seconds(tmp_path):
    """Negative control: the pkg harness built with SEEDFW_FUZZ_PLANTED_OOB (the table-end bound
    check removed) must crash, and ASan must name the overflow."""
    # The campaign stops at the first crash (about a second); 120 s is only a host deadline.
    r = fuzz.run_campaign("pkg", 120, outdir=tmp_path / "planted", planted=True)
    assert r.crashes, ("host deadline: no crash within the campaign's 120 s\n"
                       + r.log.read_text()[-2000:])
    # ASan names the planted line: a heap-buffer-overflow just past the input, or a SEGV when the
    # mutated entry_count puts the read far away (both are the missing bound check).
    src = (fuzz.ROOT / fuzz.TARGETS["pkg"].source).read_text().splitlines()
    line = next(i for i, t in enumerate(src, 1) if "planted: no check" in t)
    finding = fuzz.first_finding(r.log)
    assert finding.split(" ")[:2] in (["AddressSanitizer:", "heap-buffer-overflow"],
                                      ["AddressSanitizer:", "SEGV"]), finding
    assert f"fuzz_pkg.c:{line}:" in finding and "LLVMFuzzerTestOneInput" in finding
    # The crash input reproduces on the planted binary and not on the real one.
    planted = subprocess.run([r.binary, r.crashes[0]], capture_output=True, text=True)
    assert planted.returncode != 0 and f"fuzz_pkg.c:{line}:" in planted.stderr
    real = fuzz.build("pkg", tmp_path / "real")
    assert subprocess.run([real, r.crashes[0]], capture_output=True).returncode == 0


@pytest.mark.slow
def test_dvfs_total_size_below_header_is_rejected_not_read_past(tmp_path):
    """Regression input for the first finding of `invoke fuzz --target pkg`: a DVFS entry whose
    table header says total_size 0 (with correct package hashes) made check_dvfs() compute a
    crc over (0 - 12) bytes — a read far past the package."""
    from seedfw import boards, dvfs
    from seedfw.images import package
    from seedfw.images.entries import DvfsEntry

    table = bytearray(dvfs.encode(dvfs.load(boards.get("qemu-aarch64").dvfs_file), "balanced"))
    struct.pack_into("<I", table, 8, 0)          # dvfs_table_header.total_size
    crash = tmp_path / "dvfs-total-size-0"
    crash.write_bytes(package.encode([DvfsEntry("dvfs", bytes(table))]))
    binary = fuzz.build("pkg", tmp_path)
    proc = subprocess.run([binary, crash], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-1500:]


@pytest.mark.slow
def test_cli_reports_numbers(tmp_path):
    proc = invoke("fuzz", "--target", "lz4-block", "--seconds", "2", "--corpus", tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("lz4-block: ") and " exec/s, " in line and line.count("0 crashes") == 1
    assert int(line.split()[1]) > 0
    assert any((tmp_path / "c").iterdir())
