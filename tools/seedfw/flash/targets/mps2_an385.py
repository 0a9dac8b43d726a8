"""pyOCD target `seedfw_mps2_an385`: Cortex-M3 MPS2 AN385 with a RAM-backed flash region.

Properties:
    flash region: 0x0-0x40000, 32 KiB sectors and pages (board/mps2-an385/board.yaml `pyocd.flash`)
    RAM: 0x20000000, 4 MiB; the flash algo runs from ALGO_BASE (above the firmware's 64 KiB SRAM)
    algo: firmware/mcu/flashalgo (checked-in blob in mps2_an385_algo.py)

Why 32 KiB: the "flash" is SSRAM, so the sector size is the algorithm's choice, and every algo call
costs ~12 GDB-stub round trips (registers, breakpoint, continue, stop); 4 KiB sectors made 64 calls
for a 128 KiB image, 32 KiB make 8 (issue 33, docs/measurements/2026-12-03-flash.md). An image
smaller than a sector still costs one erase + one program call; pyOCD keeps the sector's unwritten
bytes (keep_unwritten) by reading them back first.

`target_class_for_algo(name, elf)` makes a variant from another algo ELF (the tests' broken
ProgramPage negative control) and registers it under `name`.
"""

from __future__ import annotations

from pathlib import Path

from pyocd.coresight.coresight_target import CoreSightTarget
from pyocd.core.memory_map import FlashRegion, MemoryMap, RamRegion

from . import mps2_an385_algo
from .algo_blob import make_flash_algo, read_algo_elf

FLASH_BASE = 0x00000000
FLASH_SIZE = 0x00040000
SECTOR_SIZE = 0x8000  # = firmware/mcu/flashalgo/algo.c SECTOR_SIZE; why 32 KiB: the docstring
RAM_BASE = 0x20000000
RAM_SIZE = 0x00400000
ALGO_BASE = 0x20100000  # well clear of the firmware's SRAM use (0x20000000-0x20010000)


def memory_map(algo: dict) -> MemoryMap:
    return MemoryMap(
        FlashRegion(start=FLASH_BASE, length=FLASH_SIZE, blocksize=SECTOR_SIZE, page_size=SECTOR_SIZE,
                    is_boot_memory=True, erased_byte_value=0xFF, algo=algo),
        RamRegion(start=RAM_BASE, length=RAM_SIZE),
    )


def flash_algo_from(blob: bytes, offsets: dict[str, int]) -> dict:
    return make_flash_algo(blob, offsets, load_address=ALGO_BASE, page_size=SECTOR_SIZE)


class MPS2AN385(CoreSightTarget):
    """MPS2 AN385 in QEMU, flashed through the seedfw RAM-flash algorithm."""

    TARGET_NAME = "seedfw_mps2_an385"
    VENDOR = "ARM"
    MEMORY_MAP = memory_map(flash_algo_from(mps2_an385_algo.BLOB, mps2_an385_algo.OFFSETS))

    def __init__(self, session):
        super().__init__(session, self.MEMORY_MAP)


def target_class_for_algo(name: str, algo_elf: str | Path) -> type:
    """A MPS2AN385 variant using the algo in `algo_elf`, registered in pyOCD's TARGET as `name`."""
    from pyocd.target import TARGET

    blob, offsets = read_algo_elf(algo_elf)
    cls = type(f"MPS2AN385_{name}", (MPS2AN385,), {
        "TARGET_NAME": name,
        "MEMORY_MAP": memory_map(flash_algo_from(blob, offsets)),
    })
    TARGET[name] = cls
    return cls
