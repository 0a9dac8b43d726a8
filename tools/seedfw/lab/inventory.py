"""Bench inventory (labgrid's split): *resources* say what is on the bench, *drivers* reach it.

Without a bench file the bench is a view of board data: the QEMU probe places of board.yaml
`lab:` (`from_board_data`; the farm itself is seedfw.lab on labgrid, docs/farm.md). A bench
file (`--bench FILE` or $SEEDFW_BENCH) still names a developer's own probes:

    boards:
      - name: wake-mcu              # bench-local name
        board: mps2-an385           # board type (board/<board>/board.yaml)
        probe: qemu:auto            # pyOCD unique id; qemu:auto = start QEMU on a loopback port
        target: seedfw_mps2_an385   # pyOCD target type (default: board.yaml pyocd.target)
        serial: qemu                # serial device path, or `qemu` (UART captured to a file)
        power: {on: "cmd", off: "cmd"}  # optional shell commands
        qemu_args: [-icount, shift=3]   # optional extra QEMU arguments

Resources: `BenchEntry` (plain data). Drivers: `QemuGdbTarget` (seedfw.run.bench: QEMU halted
behind its GDB stub), `probe_present` (pyOCD enumeration), `serial_present`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import boards, paths, yamlfile
from ..errors import SeedfwError
from ..run.bench import QemuGdbTarget, free_port  # noqa: F401  (free_port: re-exported)

SCHEMA = {
    "type": "object",
    "required": ["boards"],
    "additionalProperties": False,
    "properties": {
        "boards": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "board", "probe"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                    "board": {"type": "string"},
                    "probe": {"type": "string"},    # form checked in load(), with a clear message
                    "target": {"type": "string"},
                    "serial": {"type": "string"},
                    "power": {
                        "type": "object", "additionalProperties": False,
                        "properties": {"on": {"type": "string"}, "off": {"type": "string"}},
                    },
                    "qemu_args": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class BenchEntry:
    """One board on the bench (resource)."""

    name: str
    board: str
    probe: str
    target: str | None = None
    serial: str | None = None
    power: dict = field(default_factory=dict)
    qemu_args: tuple[str, ...] = ()

    @property
    def is_qemu(self) -> bool:
        return self.probe.lower().startswith("qemu:")

    def pyocd_target(self) -> str | None:
        return self.target or (boards.get(self.board).pyocd or {}).get("target")


def bench_file(path: str | os.PathLike | None) -> Path:
    chosen = Path(os.path.abspath(path)) if path else paths.env_path("SEEDFW_BENCH")
    if chosen is None:
        raise SeedfwError("no bench file: pass --bench FILE or set SEEDFW_BENCH", None, "--bench")
    return chosen


def from_board_data() -> list[BenchEntry]:
    """The bench as a view of board data (issue 31): one entry per QEMU GDB-probe place that
    board.yaml `lab:` declares (seedfw.lab), the same data `invoke lab env/exporter` generate
    labgrid's files from. Its QEMU arguments are board.yaml's own (no bench-file copy of them)."""
    from .generate import places

    return [BenchEntry(name=p.name, board=p.board, probe="qemu:auto",
                       serial="qemu") for p in places() if p.qemu == "bare"]


def load(path: str | os.PathLike | None = None) -> list[BenchEntry]:
    """A bench file's entries (--bench FILE or $SEEDFW_BENCH); without either, the board data's
    places (`from_board_data`)."""
    from ..flash.probe_ids import check_probe_uid

    if not path and paths.env_path("SEEDFW_BENCH") is None:
        return from_board_data()
    path = bench_file(path)
    data, lines = yamlfile.load_mapping(path, SCHEMA, "a mapping with a 'boards' list")
    entries, seen = [], set()
    known = set(boards.names())
    for i, raw in enumerate(data["boards"]):
        at = f"line {lines.get(('boards', i, 'probe'), 1)}"
        if ":" not in raw["probe"]:
            raise SeedfwError(f"field 'boards[{i}].probe': '{raw['probe']}' is not TYPE:ID "
                              "(qemu:auto, qemu:HOST:PORT, cmsisdap:SERIAL, stlink:SERIAL, …)",
                              path, at)
        try:
            check_probe_uid(raw["probe"])
        except SeedfwError as exc:
            raise SeedfwError(f"field 'boards[{i}].probe': {exc.message}", path, at) from None
        if raw["name"] in seen:
            raise SeedfwError(f"duplicate bench entry '{raw['name']}'", path, f"boards[{i}].name")
        if raw["board"] not in known:
            raise SeedfwError(f"unknown board '{raw['board']}' (known: {', '.join(sorted(known))})",
                              path, f"boards[{i}].board")
        seen.add(raw["name"])
        entries.append(BenchEntry(name=raw["name"], board=raw["board"], probe=raw["probe"],
                                  target=raw.get("target"), serial=raw.get("serial"),
                                  power=raw.get("power", {}), qemu_args=tuple(raw.get("qemu_args", ()))))
    return entries


def entry_for_board(entries: list[BenchEntry], board: str) -> BenchEntry | None:
    return next((e for e in entries if e.board == board), None)


# -- drivers ------------------------------------------------------------------------------------
# The QEMU GDB target (QemuGdbTarget) is started by the one place that starts targets.
def probe_present(uid: str) -> bool:
    """pyOCD enumeration: does a probe with this unique id answer?"""
    from pyocd.probe.aggregator import DebugProbeAggregator

    try:
        return bool(DebugProbeAggregator.get_all_connected_probes(unique_id=uid))
    except Exception:  # pyOCD raises its own Error for unknown probe types
        return False


def serial_present(serial: str | None) -> bool:
    return serial in (None, "qemu") or Path(serial).exists()


def run_power(entry: BenchEntry, which: str) -> None:
    cmd = entry.power.get(which)
    if cmd:
        res = subprocess.run(shlex.split(cmd), capture_output=True, text=True)
        if res.returncode:
            detail = res.stderr.strip()[-200:]
            raise SeedfwError(f"power {which} command failed (exit {res.returncode})" + (f": {detail}" if detail else ""),
                              None, f"{entry.name}.power.{which}")


def check(entry: BenchEntry) -> dict:
    """Check one entry: QEMU entries are started on loopback and probed through the qemu plug-in."""
    status = {"name": entry.name, "board": entry.board, "probe": entry.probe, "target": entry.pyocd_target()}
    if entry.is_qemu and entry.probe.lower() == "qemu:auto":
        with QemuGdbTarget(boards.get(entry.board), extra_args=entry.qemu_args) as q:
            status["probe_present"] = probe_present(q.uid)
            status["probe"] = q.uid
    else:
        status["probe_present"] = probe_present(entry.probe)
    status["serial_present"] = serial_present(entry.serial)
    status["ok"] = status["probe_present"] and status["serial_present"]
    return status
