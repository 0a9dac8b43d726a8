"""RK3588 DDR monitor (DFI) counters, per Linux drivers/devfreq/event/rockchip-dfi.c.

Properties (board/rk3588/counters.yaml `dfi`): base, channels, stride, ddr_type, bus_width
(bytes per channel; the kernel derives it from PMU1GRF OS_REG2: 4, or 2 when the BW field is
non-zero), interval_ms.

Sequence: per channel clear the enables, select the DDR type, set SOFTWARE_EN (CTRL is a
"hiword-mask" register: bits 31:16 say which of bits 15:0 a write changes); sample all counters;
wait; sample again; clear SOFTWARE_EN. Counters are free-running 32-bit, so deltas wrap modulo 2^32.
bytes = access count x burst length (16 for LPDDR4/4X/5, 8 for LPDDR2/3 and DDR4) x bus width.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import yamlfile
from ..errors import SeedfwError
from .base import CounterSource

CTRL, WR_NUM, RD_NUM, COUNT_NUM, ACCESS_NUM = 0x04, 0x20, 0x24, 0x28, 0x2C
TIMER_CNT_EN, SOFTWARE_EN, HARDWARE_EN = 1 << 0, 1 << 1, 1 << 3
DDR_TYPE_BITS = {"lpddr2": 1 << 2, "lpddr3": 1 << 2, "lpddr4": 1 << 4, "lpddr4x": 1 << 4,
                 "ddr4": 1 << 5, "lpddr5": 1 << 6}
DDR_TYPE_MASK = (1 << 2) | (1 << 4) | (1 << 5) | (1 << 6)
BURST_LENGTH = {"lpddr2": 8, "lpddr3": 8, "ddr4": 8, "lpddr4": 16, "lpddr4x": 16, "lpddr5": 16}
COUNTERS = {"write": WR_NUM, "read": RD_NUM, "cycles": COUNT_NUM, "access": ACCESS_NUM}

SCHEMA = {
    "type": "object", "required": ["dfi"], "additionalProperties": False,
    "properties": {"dfi": {
        "type": "object", "additionalProperties": False,
        "required": ["base", "channels", "stride", "ddr_type", "bus_width"],
        "properties": {
            "base": {"type": "integer"},
            "channels": {"type": "integer", "minimum": 1, "maximum": 4},
            "stride": {"type": "integer", "minimum": 0x100},
            "ddr_type": {"enum": sorted(DDR_TYPE_BITS)},
            "bus_width": {"type": "array", "items": {"enum": [2, 4]}},
            "interval_ms": {"type": "integer", "minimum": 1},
        },
    }},
}


def hiword(value: int, mask: int) -> int:
    """HIWORD_UPDATE: change only the bits in `mask` (Rockchip GRF-style write-enable mask)."""
    return (mask << 16) | (value & mask)


@dataclass(frozen=True)
class DfiConfig:
    base: int
    channels: int
    stride: int
    ddr_type: str
    bus_width: tuple[int, ...]
    interval_ms: int = 100

    @classmethod
    def load(cls, path) -> "DfiConfig":
        data, lines = yamlfile.load(path)
        yamlfile.validate(data, SCHEMA, path, lines)
        d = data["dfi"]
        if len(d["bus_width"]) != d["channels"]:
            raise SeedfwError(f"{d['channels']} channels but {len(d['bus_width'])} bus widths", path,
                              "dfi.bus_width")
        if d["base"] % 4 or not 0 <= d["base"] <= 0xFFFFFFFF:
            raise SeedfwError(f"base {d['base']:#x} is not a 32-bit register address", path,
                              f"line {lines[('dfi', 'base')]}")
        return cls(d["base"], d["channels"], d["stride"], d["ddr_type"], tuple(d["bus_width"]),
                   d.get("interval_ms", 100))

    def reg(self, channel: int, offset: int) -> int:
        return self.base + channel * self.stride + offset


def enable(cfg: DfiConfig, reader) -> None:
    for ch in range(cfg.channels):
        ctrl = cfg.reg(ch, CTRL)
        reader.write32(ctrl, hiword(0, TIMER_CNT_EN | SOFTWARE_EN | HARDWARE_EN))
        reader.write32(ctrl, hiword(DDR_TYPE_BITS[cfg.ddr_type], DDR_TYPE_MASK))
        reader.write32(ctrl, hiword(SOFTWARE_EN, SOFTWARE_EN))


def disable(cfg: DfiConfig, reader) -> None:
    for ch in range(cfg.channels):
        reader.write32(cfg.reg(ch, CTRL), hiword(0, SOFTWARE_EN))


def read_counters(cfg: DfiConfig, reader) -> list[dict[str, int]]:
    return [{name: reader.read32(cfg.reg(ch, off)) for name, off in COUNTERS.items()}
            for ch in range(cfg.channels)]


def decode(cfg: DfiConfig, before: list[dict], after: list[dict]) -> dict:
    """Deltas (modulo 2^32) per channel, with bytes = count x burst length x bus width."""
    burst = BURST_LENGTH[cfg.ddr_type]
    channels = []
    for ch, (b, a) in enumerate(zip(before, after)):
        delta = {k: (a[k] - b[k]) & 0xFFFFFFFF for k in COUNTERS}
        unit = burst * cfg.bus_width[ch]
        channels.append({**delta, "read_bytes": delta["read"] * unit, "write_bytes": delta["write"] * unit,
                         "access_bytes": delta["access"] * unit})
    total = {k: sum(c[k] for c in channels) for k in ("read_bytes", "write_bytes", "access_bytes")}
    return {"ddr_type": cfg.ddr_type, "burst_length": burst, "channels": channels, "total": total}


class Rk3588DfiCounters(CounterSource):
    """DDR read/write traffic over one sampling interval."""

    name = "rk3588-dfi"
    # How the counts were taken and turned into bytes: the map's configuration, not readings.
    SETTINGS = frozenset({"ddr_type", "burst_length", "interval_ms"})
    options = ("recorded", "map")

    @classmethod
    def read(cls, board, args: dict) -> dict:
        """A recorded set of register values (--recorded); no live MEM-AP path yet."""
        from . import provenance
        recorded = args.get("recorded")
        if not recorded:
            raise SeedfwError("no RK3588 board reachable here: pass --recorded FILE with register "
                              "values (a live board needs a MEM-AP probe path, not available in "
                              "this tree yet)", None, "--probe" if args.get("probe") else "--recorded")
        source = cls(board, config_path=args.get("map"), sleep=lambda s: None)  # map checked first
        reader = load_recording(recorded)
        values = source.sample(reader)
        return source.document(values, provenance.recorded(recorded, reader.provenance))

    def __init__(self, board, config_path=None, sleep=time.sleep):
        super().__init__(board)
        self.config_path = config_path or board.dir / "counters.yaml"
        self.cfg = DfiConfig.load(self.config_path)
        self.sleep = sleep

    def settings(self) -> dict:
        c = self.cfg
        from .provenance import shown_path

        return {"map": shown_path(self.config_path), "base": f"{c.base:#x}", "channels": c.channels,
                "stride": f"{c.stride:#x}", "bus_width": list(c.bus_width)}

    def sample(self, reader) -> dict:
        enable(self.cfg, reader)
        try:
            before = read_counters(self.cfg, reader)
            self.sleep(self.cfg.interval_ms / 1000)
            after = read_counters(self.cfg, reader)
        finally:
            disable(self.cfg, reader)
        result = decode(self.cfg, before, after)
        result["interval_ms"] = self.cfg.interval_ms
        return result


class RecordedReader:
    """MemoryReader replaying recorded register values (each address: values in read order) and
    logging writes — stands in for a board that is not here. `source` (the recording file) and
    `lines` (register -> line) let a register the recording lacks be named with its file."""

    def __init__(self, reads: dict[int, list[int]], source=None, lines=None, provenance=None):
        self.reads = {addr: list(vals) for addr, vals in reads.items()}
        self.counts = {addr: len(vals) for addr, vals in reads.items()}
        self.source, self.lines = source, lines or {}
        self.provenance = provenance      # the recording's own (None: it does not say)
        self.writes: list[tuple[int, int]] = []

    def read32(self, addr: int) -> int:
        vals = self.reads.get(addr)
        if vals is None:
            raise SeedfwError(f"register {addr:#010x} is not recorded (the sampler reads every "
                              "counter register twice: before and after the interval)",
                              self.source, "reads")
        if not vals:
            line = self.lines.get(addr)
            raise SeedfwError(f"register {addr:#010x} has {self.counts[addr]} recorded value(s), "
                              f"read {self.counts[addr] + 1} needs another", self.source,
                              f"line {line}" if line else "reads")
        return vals.pop(0)

    def read(self, addr: int, size: int) -> bytes:
        return b"".join(self.read32(addr + i).to_bytes(4, "little") for i in range(0, size, 4))

    def write32(self, addr: int, value: int) -> None:
        self.writes.append((addr, value))


# A recording's own provenance. `synthetic` is required so that a file which says anything says
# the one thing that matters most; a capture from hardware must say where and when it was made.
RECORDING_SCHEMA = {
    "type": "object",
    "properties": {"provenance": {
        "type": "object", "additionalProperties": False, "required": ["synthetic"],
        "properties": {
            "synthetic": {"type": "boolean"},
            "how": {"type": "string"},
            "by": {"type": "string"},
            "where": {"type": "string"},
            "when": {"type": "string"},
            "tool": {"type": "string"},
        },
        "if": {"properties": {"synthetic": {"const": False}}},
        "then": {"required": ["where", "when"]},
    }},
}


def load_recording(path) -> RecordedReader:
    """A recording YAML: `reads: {register address: [32-bit values in read order]}` and optional
    `provenance: {synthetic, how, by, where, when, tool}` (RECORDING_SCHEMA). Without provenance
    the values are still decoded, and reported as recorded with provenance unknown."""
    import datetime

    data, lines = yamlfile.load(path)
    if not isinstance(data, dict) or not isinstance(data.get("reads"), dict):
        raise SeedfwError("expected a mapping 'reads: {register address: [values]}'", path,
                          f"line {lines.get(('reads',), lines.get((), 1))}")
    prov = data.get("provenance")
    if isinstance(prov, dict) and isinstance(prov.get("when"), (datetime.date, datetime.datetime)):
        prov["when"] = prov["when"].isoformat()     # an unquoted YAML date is a date object
    yamlfile.validate(data, RECORDING_SCHEMA, path, lines)
    reads, where = {}, {}
    for key, values in data["reads"].items():
        line = lines.get(("reads", key))
        at = f"line {line}" if line else "reads"
        if not isinstance(key, int) or isinstance(key, bool) or not 0 <= key <= 0xFFFFFFFF:
            raise SeedfwError(f"register address {key!r} is not a 32-bit number", path, at)
        if not isinstance(values, list):
            values = [values]
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 0xFFFFFFFF:
                raise SeedfwError(f"register {key:#010x}: value {v!r} is not a 32-bit number",
                                  path, at)
        reads[key], where[key] = values, line
    return RecordedReader(reads, source=path, lines=where, provenance=prov)
