"""Stats block reader (firmware/include/seedfw/stats.h), for the MCU and the A-class payload.

Properties: elf (the firmware ELF; the block's address is its symbol `seedfw_stats`).
The Python layout below mirrors `struct seedfw_stats`; tests/test_counters.py checks every offset
and the size against the header with tests/c_layout.py.
"""

from __future__ import annotations

import struct
from pathlib import Path

from ..errors import SeedfwError
from .base import CounterSource

SYMBOL = "seedfw_stats"
ARCH_MACHINES = {"armv7m": "ARM", "aarch64": "AArch64"}     # board arch -> seedfw.stats machine
MAGIC = 0x54415453
VERSION = 1
MILESTONES = 8
MILESTONE_NAMES = ["reset", "data", "console", "storage", "decompress", "main", "m6", "m7"]
# magic, version, bytes_decompressed, bytes_read, cycles, cycle_hz, milestone_count, milestones[8]
FORMAT = "<IIQQQII" + "Q" * MILESTONES
SIZE = struct.calcsize(FORMAT)
OFFSETS = {"magic": 0, "version": 4, "bytes_decompressed": 8, "bytes_read": 16, "cycles": 24,
           "cycle_hz": 32, "milestone_count": 36, "milestones": 40}


def symbol_address(elf_path: str | Path, name: str = SYMBOL) -> tuple[int, int]:
    """(address, size) of a symbol (sized or not, e.g. a linker-script label); SeedfwError naming
    the ELF when absent. seedfw.stats checks the file first, so a file that is not a whole ELF
    is one error naming file and offset rather than a pyelftools exception."""
    from elftools.elf.elffile import ELFFile

    from .. import stats

    elf_path = Path(elf_path)
    stats.read_elf(elf_path, top=0)
    with open(elf_path, "rb") as f:  # door: checked by stats.read_elf first (bounded)
        elf = ELFFile(f)
        # Loop over sections by index: some stripped ELFs make iter_sections() raise.
        for i in range(elf.num_sections()):
            try:
                sec = elf.get_section(i)
            except Exception:
                continue
            if sec["sh_type"] != "SHT_SYMTAB":
                continue
            for sym in sec.get_symbol_by_name(name) or []:
                return sym["st_value"], sym["st_size"]
    raise SeedfwError(f"symbol '{name}' not found (firmware without a stats block?)", elf_path, name)


def elf_machine(elf_path: str | Path) -> str:
    from .. import stats

    return stats.read_elf(elf_path, top=0)["elf"]["machine"]


def decode(raw: bytes, source: str = "stats block") -> dict:
    if len(raw) < SIZE:
        raise SeedfwError(f"stats block is {len(raw)} bytes, expected {SIZE}", source)
    magic, version, dec, read, cycles, hz, count, *ms = struct.unpack_from(FORMAT, raw)
    if magic != MAGIC:
        raise SeedfwError(f"bad magic {magic:#010x} (firmware has not finished booting?)", source, "magic")
    if version != VERSION:
        raise SeedfwError(f"unsupported stats version {version}", source, "version")
    count = min(count, MILESTONES)
    return {
        "version": version,
        "bytes_decompressed": dec,
        "bytes_read": read,
        "cycles": cycles,
        "cycle_hz": hz,
        "milestones": {MILESTONE_NAMES[i]: ms[i] for i in range(count)},
    }


def parse_uart_line(text: str) -> dict:
    """The `stats: …` line the firmware prints, as the same dict `decode` returns (for tests and
    for boards where only the console is available)."""
    for line in text.splitlines():
        if line.startswith("stats:"):
            fields = dict(kv.split("=", 1) for kv in line[6:].split())
            ms = [int(v) for v in fields["milestones"].split(",")] if fields.get("milestones") else []
            return {
                "version": int(fields["version"]),
                "bytes_decompressed": int(fields["bytes_decompressed"]),
                "bytes_read": int(fields["bytes_read"]),
                "cycles": int(fields["cycles"]),
                "cycle_hz": int(fields["cycle_hz"]),
                "milestones": {MILESTONE_NAMES[i]: v for i, v in enumerate(ms)},
            }
    raise SeedfwError("no 'stats:' line in the UART output", None, "uart")


class StatsBlockCounters(CounterSource):
    """Reads `seedfw_stats` from a running (or halted) firmware."""

    name = "stats-block"
    # The block's format version and where it was read are identifiers; cycle_hz is the counter
    # frequency the firmware declares (a constant or CNTFRQ), i.e. configuration: none of them is
    # a measurement.
    SETTINGS = frozenset({"version", "address", "cycle_hz"})
    options = ("elf", "flash_first", "bench", "output")

    @classmethod
    def read(cls, board, args: dict) -> dict:
        from .readback import read_stats_block
        return read_stats_block(board, cls, args.get("probe"), args.get("elf"),
                                args.get("flash_first"), args.get("bench"), args.get("output"))

    def __init__(self, board, elf: str | Path | None = None):
        super().__init__(board)
        if elf is None:
            raise SeedfwError("the stats-block source needs the firmware ELF", None, "--elf")
        self.elf = Path(elf)
        machine, want = elf_machine(self.elf), ARCH_MACHINES.get(board.arch)
        if want and machine != want:
            raise SeedfwError(f"ELF is for {machine}, board '{board.name}' runs {want} code", self.elf,
                              "e_machine")
        self.address, size = symbol_address(self.elf)
        if size and size != SIZE:
            raise SeedfwError(f"symbol {SYMBOL} is {size} bytes, this reader expects {SIZE} "
                              "(stats.h changed?)", self.elf, SYMBOL)

    def settings(self) -> dict:
        from .provenance import shown_path

        return {"elf": shown_path(self.elf), "symbol": SYMBOL}

    def sample(self, reader) -> dict:
        values = decode(reader.read(self.address, SIZE), str(self.elf))
        values["address"] = self.address
        return values
