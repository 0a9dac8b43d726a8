"""Turn a flash-algorithm ELF into pyOCD's `flash_algo` dict.

pyOCD copies `instructions` (32-bit words) to `load_address` and calls the entry points with
LR = load_address + 1, so the blob must start with the BKPT header (firmware/mcu/flashalgo/header.S).
Entry points come from the ELF symbol table by their CMSIS names; addresses get the Thumb bit.

`python -m seedfw.flash.targets.algo_blob ALGO.ELF` prints the Python module that is checked in as
`mps2_an385_algo.py` (tests/test_flash_algo.py rebuilds it and compares).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from elftools.elf.elffile import ELFFile

from ...errors import SeedfwError

# CMSIS flash-algo function name -> pyOCD flash_algo key
ENTRY_POINTS = {
    "Init": "pc_init",
    "UnInit": "pc_unInit",
    "EraseChip": "pc_eraseAll",
    "EraseSector": "pc_erase_sector",
    "ProgramPage": "pc_program_page",
}
BKPT_OPCODE = 0xBE  # high byte of a Thumb BKPT halfword


def read_algo_elf(path: str | Path) -> tuple[bytes, dict[str, int]]:
    """Return (blob bytes, {cmsis name: offset in blob}) from a flash-algo ELF linked at 0."""
    path = Path(path)
    try:
        with open(path, "rb") as f:  # door: the flash algorithm this build compiled
            elf = ELFFile(f)
            text = elf.get_section_by_name(".text")
            if text is None:
                raise SeedfwError("no .text section", path, ".text")
            blob = text.data()
            base = text["sh_addr"]
            symtab = elf.get_section_by_name(".symtab")
            offsets = {}
            for sym in symtab.iter_symbols() if symtab else ():
                if sym.name in ENTRY_POINTS and sym["st_info"]["type"] == "STT_FUNC":
                    offsets[sym.name] = (sym["st_value"] & ~1) - base
    except OSError as exc:
        raise SeedfwError(f"cannot read flash algo: {exc.strerror}", path) from None
    for name in ("EraseSector", "ProgramPage"):
        if name not in offsets:
            raise SeedfwError(f"flash algo lacks entry point {name}", path, "symbols")
    if len(blob) < 4 or blob[1] != BKPT_OPCODE:
        raise SeedfwError("flash algo does not start with the BKPT return header", path, ".text")
    blob += b"\0" * (-len(blob) % 4)
    return blob, offsets


def make_flash_algo(blob: bytes, offsets: dict[str, int], *, load_address: int, stack_size: int = 0x800,
                    page_size: int) -> dict:
    """pyOCD flash_algo dict for `blob` loaded at `load_address`.

    RAM layout after the blob: stack (grows down to the blob's end), then two page buffers so pyOCD
    can double-buffer (program one page while loading the next), then pyOCD's own CRC32 analyzer
    (it needs 0x600 bytes): with it pyOCD's smart flash compares pages by a CRC computed on the
    target instead of partial reads, and the runner verifies by CRC instead of reading every byte back.
    """
    words = list(struct.unpack(f"<{len(blob) // 4}I", blob))
    code_end = (load_address + len(blob) + 0xFF) & ~0xFF
    stack_top = code_end + stack_size
    algo = {
        "load_address": load_address,
        "instructions": words,
        "begin_stack": stack_top,
        "end_stack": code_end,
        "begin_data": stack_top,
        "page_buffers": [stack_top, stack_top + page_size],
        "static_base": code_end,  # unused: the algo has no static data (checked by its Makefile)
        "min_program_length": 4,
        "analyzer_supported": True,
        "analyzer_address": stack_top + 2 * page_size,
    }
    for name, key in ENTRY_POINTS.items():
        if name in offsets:
            algo[key] = load_address + offsets[name] + 1
    return algo


def render_module(blob: bytes, offsets: dict[str, int], source: str) -> str:
    lines = [
        f'"""Flash algo blob generated from {source} by seedfw.flash.targets.algo_blob. Do not edit."""',
        "",
        "BLOB = bytes.fromhex(",
    ]
    hexed = blob.hex()
    for i in range(0, len(hexed), 64):
        lines.append(f'    "{hexed[i:i + 64]}"')
    lines.append(")")
    lines.append("OFFSETS = {")
    for name in sorted(offsets):
        lines.append(f'    "{name}": {offsets[name]:#06x},')
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    blob, offsets = read_algo_elf(sys.argv[1])
    sys.stdout.write(render_module(blob, offsets, "firmware/mcu/flashalgo"))
