"""Counter sources, one module per source (board.yaml `counters` names the source).

`REGISTRY` is the only list of source names: board.yaml's `counters` enum is generated from it.
"""

from __future__ import annotations

from ..registry import Registry

REGISTRY = Registry("counter source", {
    "stats-block": "seedfw.counters.stats_block:StatsBlockCounters",
    "rk3588-dfi": "seedfw.counters.rk3588_dfi:Rk3588DfiCounters",
    # per run, next to the board's own source: `invoke run/boot --counters` (QEMU boards)
    "emulated-traffic": "seedfw.counters.emulated:EmulatedTrafficCounters",
    # the OS agent's perf PMUs (board.yaml `perf`), from its UART lines after `invoke boot`
    "agent-perf": "seedfw.counters.perf_live:AgentPerfCounters",
})


def source_class(name: str, board_file=None):
    return REGISTRY.get(name, board_file, "counters")
