"""Counter sources, one module per source (board.yaml `counters` names the source).

Registry: name -> "module:Class", imported on use.
"""

from __future__ import annotations

import importlib

from ..errors import SeedfwError

SOURCES = {
    "stats-block": "seedfw.counters.stats_block:StatsBlockCounters",
    "rk3588-dfi": "seedfw.counters.rk3588_dfi:Rk3588DfiCounters",
    # per run, next to the board's own source: `invoke run/boot --counters` (QEMU boards)
    "emulated-traffic": "seedfw.counters.emulated:EmulatedTrafficCounters",
    # the OS agent's perf PMUs (board.yaml `perf`), from its UART lines after `invoke boot`
    "agent-perf": "seedfw.counters.perf_live:AgentPerfCounters",
}


def source_class(name: str, board_file=None):
    if name not in SOURCES:
        raise SeedfwError(f"no counter source '{name}'", board_file, "counters")
    module, cls = SOURCES[name].split(":")
    return getattr(importlib.import_module(module), cls)
