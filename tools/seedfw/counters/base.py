"""Counter sources: read counters through some memory access path and return a flat dict.

`MemoryReader` is the one thing a source needs: read(addr, size) -> bytes and write32(addr, value).
Implementations: a pyOCD target (probe), the QEMU GDB stub (A-class payload), or recorded register
values (tests; hardware that is absent here).
"""

from __future__ import annotations

import struct
from typing import Protocol


class MemoryReader(Protocol):
    def read(self, addr: int, size: int) -> bytes: ...

    def write32(self, addr: int, value: int) -> None: ...


class CounterSource:
    """Base class; subclasses set `name` and implement `sample(reader) -> dict`.

    `sample` returns everything read (what the firmware or the registers hold); `SETTINGS` names
    the keys of it that are identifiers or configuration rather than readings, and `settings()`
    the configuration the read used. `document` splits them (seedfw.counters.provenance)."""

    name = ""
    SETTINGS: frozenset[str] = frozenset()
    # `invoke counters` options only this source reads (the task refuses them for other sources)
    options: tuple[str, ...] = ()

    def __init__(self, board):
        self.board = board

    @classmethod
    def read(cls, board, args: dict) -> dict:
        """The `invoke counters` document for `board` from the task's arguments (the source
        knows its own read path: probe, QEMU it starts, or a recording)."""
        raise NotImplementedError

    def sample(self, reader: MemoryReader) -> dict:
        raise NotImplementedError

    def settings(self) -> dict:
        return {}

    def document(self, values: dict, provenance: dict) -> dict:
        """The `invoke counters --json` document: provenance, settings, readings."""
        settings = {**self.settings(), **{k: v for k, v in values.items() if k in self.SETTINGS}}
        readings = {k: v for k, v in values.items() if k not in self.SETTINGS}
        return {"provenance": provenance, "settings": settings, "readings": readings}


class PyocdReader:
    """MemoryReader over a connected pyOCD target (any probe, including the qemu plug-in)."""

    def __init__(self, target):
        self.target = target

    def read(self, addr: int, size: int) -> bytes:
        return bytes(self.target.read_memory_block8(addr, size))

    def read32(self, addr: int) -> int:
        return self.target.read32(addr)

    def write32(self, addr: int, value: int) -> None:
        self.target.write32(addr, value)


class RspReader:
    """MemoryReader over a GDB stub (QEMU A-class guests: no pyOCD, which is Cortex-M only)."""

    def __init__(self, rsp):
        self.rsp = rsp

    def read(self, addr: int, size: int) -> bytes:
        return self.rsp.read_memory(addr, size)

    def read32(self, addr: int) -> int:
        return struct.unpack("<I", self.read(addr, 4))[0]

    def write32(self, addr: int, value: int) -> None:
        self.rsp.write_memory(addr, struct.pack("<I", value))
