"""What the HIL suite checks in the OS agent's lines (firmware/agent: agent.c, perf_window.c),
apart from the walk so tests/test_lab.py can show each check refuses a tampered console (the
negative control) without a place. Each check raises AssertionError naming what is wrong.

    agent: dvfs: 6 domains, 39 opps, profile=balanced, crc ok
    agent: dt opp: cpu-big0 7 opps match dvfs table           (one per domain; else "mismatch")
    agent: perf armv8_pmuv3 window=idle ns=101330080 cpu_cycles=101667807
    agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs CONFIG_…)
"""

from __future__ import annotations

import re

from seedfw.counters import perf_live

DVFS = re.compile(r"^(?:agent: )?dvfs: (\d+) domains, (\d+) opps, ")
OPP = re.compile(r"^agent: dt opp: (.*)$")
OPP_OK = re.compile(r"^(\S+) (\d+) opps match dvfs table$")
WINDOWS = ("idle", "verify")            # agent.c: asleep 100 ms, then while it verifies


def agent_lines(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.startswith("agent: ")]


def opp_check(lines: list[str]) -> dict[str, int]:
    """The live DT's OPP tables against the DVFS table: one matching line per domain, and their
    OPPs add up to the table's. Returns {domain: opps}."""
    table = [m for ln in lines if (m := DVFS.match(ln))]
    said = [m.group(1) for ln in lines if (m := OPP.match(ln))]
    assert table, "no dvfs table line"
    assert said, "the agent printed no 'dt opp' line (its --dt-opp check did not run)"
    bad = [s for s in said if not OPP_OK.match(s)]
    assert not bad, bad
    domains = {m.group(1): int(m.group(2)) for s in said if (m := OPP_OK.match(s))}
    want_domains, want_opps = int(table[0].group(1)), int(table[0].group(2))
    assert len(domains) == len(said) == want_domains, \
        f"{len(said)} 'dt opp' lines ({sorted(domains)}) for {want_domains} DVFS domains"
    assert sum(domains.values()) == want_opps, \
        f"the DT's OPPs add up to {sum(domains.values())}, the DVFS table has {want_opps}"
    return domains


def _windows_of(pmu: str, got: dict) -> dict[str, dict]:
    # the arm_pmu driver numbers its instances: spec armv8_pmuv3 may read as armv8_pmuv3_0
    return {w: values for w, per in got["windows"].items() for name, values in per.items()
            if name == pmu or re.fullmatch(re.escape(pmu) + r"_\d+", name)}


def perf_check(specs: list[str], lines: list[str]) -> dict[str, str]:
    """Every PMU board.yaml `perf` names (PMU/EVENTS/KCONFIG) is read over both windows (ns and
    one event counting) or absent, its line naming the kernel option, with no window then; at
    least one is read. Returns {pmu: "idle,verify" | "absent"}."""
    got = perf_live.parse(lines)
    out = {}
    for spec in specs:
        pmu, events, kconfig = spec.split("/")
        windows = _windows_of(pmu, got)
        if pmu in got["absent"]:
            assert not windows, f"{pmu} said absent, yet read in window(s) {sorted(windows)}"
            assert got["absent"][pmu] == f"no PMU of that name: the kernel needs {kconfig}", \
                got["absent"][pmu]
            out[pmu] = "absent"
            continue
        assert set(WINDOWS) <= set(windows), f"{pmu}: windows {sorted(windows)}, not {WINDOWS}"
        for w in WINDOWS:
            counts = {k: v for k, v in windows[w].items() if k != "ns"}
            assert windows[w]["ns"] > 0 and counts and all(counts.values()), (pmu, w, windows[w])
            assert set(counts) <= set(events.split(",")), (pmu, w, sorted(counts))
        out[pmu] = ",".join(WINDOWS)
    assert "idle,verify" in out.values(), f"no PMU read over the windows: {out}"
    return out
