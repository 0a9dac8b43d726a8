"""One HIL suite for every place (labgrid's pytest plugin, `--lg-env`): the place's strategy
(seedfw.lab.drivers.SeedfwStrategy) walks off → flashed → booted → agent once, and each test
reads what the board printed on its console up to its `done` line (board.yaml lab expect).

Nothing here knows whether the place is QEMU or a ROCK 5B on a bench: what a test expects
follows from the board's data (its image format says whether a boot package is verified), so
the same file runs in CI against QEMU places and against a real-board place unchanged. Where
the place boots the OS agent (rk3588: `rk3588-virt`, `rock5b`) its DT OPP check and perf
windows are read too (hil/agent_checks.py); a payload or MCU image prints neither, and those
tests skip saying so.
"""

from __future__ import annotations

import re

import pytest

from hil.agent_checks import agent_lines, opp_check, perf_check
from seedfw import boards

STATS = re.compile(r"^stats: (.*)$")
ENTRY = re.compile(r"^(agent: )?\S+ \S+ sha256 (ok|BAD)$")
FAILED = re.compile(r"(FAILED|sha256 BAD|Bad hash value|Kernel panic)")


@pytest.fixture(scope="module")
def board(target, strategy):
    # the board whose image the place programs, or (nothing to program) boots in QEMU
    return boards.get((strategy.flash or target.get_driver("SeedfwQEMUDriver")).board)


@pytest.fixture(scope="module")
def lines(strategy):
    """The console from power-on to the place's `done` line (one walk for the module)."""
    strategy.transition("agent")
    yield list(strategy.lines)
    strategy.transition("off")


def test_the_walk_ends_on_the_done_line_without_a_failure(strategy, lines):
    assert re.search(strategy.done, lines[-1]), lines[-5:]
    assert any(re.search(strategy.boot, ln) for ln in lines), lines[:5]
    assert not [ln for ln in lines if FAILED.search(ln)]


def test_every_programmed_byte_was_read_back(strategy, lines):
    if strategy.flash is None:
        pytest.skip("nothing is programmed: the place boots the build's disk image by its key, "
                    "read-only")
    result = strategy.flash.result
    assert result is not None and result.programmed_bytes > 0
    assert result.verified_bytes >= result.programmed_bytes


def test_the_boot_package_and_models_verified(board, lines):
    """A packaged image's payload (or agent) checks every entry's sha256 and says so."""
    # pkg_verify.c's `KIND NAME sha256 ok|BAD` (the agent's with its prefix); a kernel's
    # "AppArmor sha256 policy hashing enabled" is no entry
    checked = [ln for ln in lines if ENTRY.match(ln)]
    if board.image["format"] == "raw":
        pytest.skip(f"{board.name}: a raw image has no boot package")
    assert "pkg: ok" in lines or "agent: ok" in lines
    assert checked and all(ln.endswith(" ok") for ln in checked), checked
    assert any(ln.startswith("model ") or "model" in ln for ln in checked), checked


def test_the_dvfs_table_arrived_intact(board, lines):
    if board.image["format"] == "raw":
        pytest.skip(f"{board.name}: the MCU image carries no DVFS table")
    table = [ln for ln in lines if re.match(r"^(agent: )?dvfs: \d+ domains, \d+ opps, ", ln)]
    assert table and table[0].endswith("crc ok"), table


def test_the_counters_read_from_the_stats_block(lines):
    found = [m.group(1) for ln in lines if (m := STATS.match(ln))]
    if not found:
        pytest.skip("this image prints no stats block")
    fields = dict(kv.split("=", 1) for kv in found[-1].split())
    assert fields["version"] == "1"
    assert int(fields["cycles"]) > 0 and int(fields["cycle_hz"]) > 0
    assert int(fields["bytes_read"]) > 0
    marks = [int(m) for m in fields["milestones"].split(",") if int(m)]
    assert marks == sorted(marks) and marks[-1] <= int(fields["cycles"])


def _agent(board, lines) -> list[str]:
    said = agent_lines(lines)
    if not said:
        pytest.skip(f"{board.name}: this place's image is not the OS agent (no 'agent:' line)")
    return said


def test_the_device_trees_opps_match_the_dvfs_table(board, lines):
    """The agent's DVFS/OPP check: every domain of the verified DVFS table in the live DT."""
    domains = opp_check(_agent(board, lines))
    print(f"dt opp: {domains}")


def test_the_perf_windows_read_every_pmu_or_say_it_is_absent(board, lines):
    """The PMUs board.yaml `perf` names, over the agent's idle and verify windows; one the
    kernel lacks (QEMU virt has no DDR monitor: rockchip_ddr) is an absent line, no window."""
    said = _agent(board, lines)
    specs = board.raw.get("perf") or []
    if not specs:
        pytest.skip(f"{board.name}: board.yaml names no perf PMU for the agent")
    print(f"perf: {perf_check(specs, said)}")
