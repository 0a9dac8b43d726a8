"""The OS agent's perf counters (firmware/agent/perf_window.c) as a counters document.

The agent reads the PMUs board.yaml `perf` names (PMU/EVENTS/KCONFIG) with perf_event_open over
two windows — `idle` (100 ms asleep) and `verify` (while it checks the boot package and the
model blobs) — and prints one line per window:

    agent: perf armv8_pmuv3_0 window=verify ns=1234 cpu_cycles=5678 inst_retired=910

or, for a PMU the kernel does not have, the kernel option that provides it:

    agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs CONFIG_…)

On the RK3588 under Linux ≥ 6.7 the PMU is the DDR monitor `rockchip_ddr` and the document's
provenance is `live`; in QEMU the same code reads QEMU's emulated PMUv3 and the provenance is
`emulated` (an emulator's cycle and instruction counts, and window lengths in emulated time).
"""

from __future__ import annotations

import re

from . import provenance
from .base import CounterSource

_WINDOW = re.compile(r"^agent: perf (\S+) window=(\S+) ns=(\d+)((?: \S+=\S+)*)$")
_ABSENT = re.compile(r"^agent: perf (\S+) absent \((.*)\)$")
_UNAVAILABLE = re.compile(r"^agent: perf (\S+) (\S+) unavailable \((.*)\)$")


def parse(lines) -> dict:
    """{windows: {window: {pmu: {ns, event: value}}}, absent: {pmu: why}, unavailable: [...]}."""
    windows: dict = {}
    absent: dict = {}
    unavailable: list = []
    for line in lines:
        line = line.rstrip()
        if (m := _WINDOW.match(line)):
            values = {"ns": int(m.group(3))}
            for pair in m.group(4).split():
                k, v = pair.split("=", 1)
                if v.isdigit():
                    values[k] = int(v)
            windows.setdefault(m.group(2), {})[m.group(1)] = values
        elif (m := _ABSENT.match(line)):
            absent[m.group(1)] = m.group(2)
        elif (m := _UNAVAILABLE.match(line)):
            unavailable.append(f"{m.group(1)} {m.group(2)}: {m.group(3)}")
    return {"windows": windows, "absent": absent, "unavailable": unavailable}


class AgentPerfCounters(CounterSource):
    """Counters the OS agent read from perf PMUs during one boot."""

    name = "agent-perf"
    SETTINGS = frozenset({"pmus", "absent", "unavailable", "windows_meaning"})

    def __init__(self, board, emulated: bool):
        super().__init__(board)
        self.emulated = emulated

    @classmethod
    def read(cls, board, args: dict) -> dict:
        """The agent's perf windows from the UART log of an OS boot (`--agent-log FILE`)."""
        if not args.get("agent_log"):
            from ..errors import SeedfwError
            raise SeedfwError("the agent's perf counters come from an OS boot's UART log: pass "
                              "--agent-log FILE", None, "--agent-log")
        return from_log(board, args["agent_log"])

    def provenance(self) -> dict:
        how = ("Linux perf_event_open by seedfw-agent over its windows, PMUs chosen by name: "
               + ", ".join(self.board.raw.get("perf", [])))
        if self.emulated:
            return provenance.emulated(self.board, how + " (QEMU's emulated PMU)")
        return {"source": "live", "how": how + " (on the board)", "probe": None,
                "target": self.board.name, "host": None, "when": provenance.now()}

    def document_from(self, lines) -> dict | None:
        got = parse(lines)
        if not got["windows"] and not got["absent"]:
            return None
        values = {"pmus": list(self.board.raw.get("perf", [])), "absent": got["absent"],
                  "unavailable": got["unavailable"],
                  "windows_meaning": {"idle": "100 ms asleep", "verify": "while the agent "
                                      "verifies the boot package and model blobs"},
                  "windows": got["windows"]}
        return self.document(values, self.provenance())


def write(board, outdir, lines, emulated: bool = True):
    """<out>/counters/perf-boot.json from a boot's UART lines; None when the agent read none."""
    from pathlib import Path

    from .. import util

    doc = AgentPerfCounters(board, emulated).document_from(lines)
    if doc is None:
        return None
    return util.write_json(Path(outdir) / "counters" / "perf-boot.json", doc)


MAX_LOG = 64 << 20          # a UART log is a user's file: bounded read


def from_log(board, path) -> dict:
    """A counters document from a UART log of an OS boot (the agent's `agent: perf` lines).
    seedfw's own QEMU logs start with the QEMU command line (`$ qemu-system-…`): those are
    emulated; any other log is taken as the board's serial console, hence live."""
    from pathlib import Path

    from ..errors import SeedfwError

    path = Path(path)
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_LOG).decode(errors="replace")
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    lines = text.splitlines()
    emulated = bool(lines) and lines[0].startswith("$ qemu-system-")
    doc = AgentPerfCounters(board, emulated).document_from(lines)
    if doc is None:
        raise SeedfwError("no 'agent: perf' lines (board.yaml `perf` empty, or not an OS boot "
                          "log?)", path)
    doc["provenance"]["log"] = provenance.shown_path(path)
    return doc
