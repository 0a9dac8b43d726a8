"""Post-process a TF-A BL31 built with firmware/tf-a/patches/0001-bl31-lz4-rodata.patch.

The patched BL31 (SEPARATE_CODE_AND_RODATA=1 SEEDFW_LZ4_RODATA=1 SEEDFW_LZ4_DIR=...) calls
seedfw_lz4_expand_rodata() first thing in bl31_entrypoint. That hook reads the descriptor
`seedfw_lz4_rodata` (struct lz4blk_rodata_desc, firmware/include/seedfw/lz4blk.h) from .data and
expands the container it points at into .rodata. This module makes the image that hook expects:

  1. read the symbols of bl31.elf: __BL31_START__, __RODATA_START__/__RODATA_END__, the
     descriptor, the hook's stack (seedfw_lz4_stack, 1 KiB) and __BL31_END__;
  2. compress .rodata ([__RODATA_START__, __RODATA_END__) of bl31.bin) into a container;
  3. zero .rodata in the image (the flat binary keeps its layout; for a loader that loads ELF
     segments, this region is what a split segment can drop) - it also proves, at boot, that
     every .rodata byte BL31 uses came out of the decoder;
  4. append the container (16-byte aligned) and, for a stored dictionary, the dictionary after
     the image: that memory becomes .stacks/.bss later, which is fine because the hook runs
     before the C runtime is set up and reads it first. It must not reach the hook's own stack
     nor __BL31_END__: checked here;
  5. write the descriptor's addresses into the image.

embed_rodata() does this on the flat bl31.bin (qemu: BL2 loads bl31.bin from the FIP; the
zeroed .rodata stays in the file, so the flat image does not shrink - it is the boot proof).
embed_rodata_elf() does it on the ELF's load segments (rk3588: the image is built from the ELF's
PT_LOAD segments, binman split-elf style): the segment holding .rodata is split, .rodata's bytes
leave the file entirely and the container is appended to the segment that follows it, so the
image really shrinks by (.rodata - container). Both return what they did for the build log.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..errors import SeedfwError
from ..util import write_bytes
from .container import write_container
from .dictionary import Dictionary
from .sections import SectionResult, compress_section

DESC_MAGIC = 0x445A4C53            # LZ4BLK_DESC_MAGIC, "SLZD"
DESC = struct.Struct("<Ii4Q2Q")    # struct lz4blk_rodata_desc (56 bytes; checked against C)
HOOK_STACK_SIZE = 1024             # SEEDFW_LZ4_STACK_SIZE in the patch
SYMBOLS = ("__BL31_START__", "__BL31_END__", "__RODATA_START__", "__RODATA_END__",
           "seedfw_lz4_rodata", "seedfw_lz4_stack")


@dataclass
class RodataEmbed:
    """Where things went (addresses are BL31 link addresses); `section` is the compression
    result for the report (its verdict says whether the dictionary was worth storing: it is
    stored only when it pays for itself)."""
    section: SectionResult
    rodata: int
    rodata_size: int
    container: int
    container_size: int
    dict_addr: int
    dict_size: int
    image_size_before: int
    image_size_after: int


def elf_symbols(elf_path: str | os.PathLike, names=SYMBOLS) -> dict[str, int]:
    want = set(names)
    found: dict[str, int] = {}
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        for i in range(elf.num_sections()):
            try:
                sec = elf.get_section(i)
            except Exception:       # noqa: BLE001 - see sections.read_elf_sections
                continue
            if isinstance(sec, SymbolTableSection):
                for sym in sec.iter_symbols():
                    if sym.name in want:
                        found[sym.name] = sym["st_value"]
    missing = sorted(want - set(found))
    if missing:
        raise SeedfwError(f"symbols {' '.join(missing)} not found: was BL31 built with the "
                          "seedfw LZ4 .rodata patch and SEEDFW_LZ4_RODATA=1?", file=elf_path,
                          field="symbols")
    return found


def _append_container(buf: bytearray, origin: int, blob: bytes, dict_data: bytes, sym: dict,
                      bl31_elf) -> tuple[int, int, int]:
    """Append the container (and the dictionary, if stored) to `buf`, which is loaded at `origin`,
    16-byte aligned; check they stay clear of the hook's stack and inside BL31. Returns
    (container address, dictionary address, dictionary length)."""
    buf += bytes(-(origin + len(buf)) % 16)
    c_addr = origin + len(buf)
    buf += blob
    d_addr, d_len = 0, 0
    if dict_data:
        buf += bytes(-(origin + len(buf)) % 16)
        d_addr, d_len = origin + len(buf), len(dict_data)
        buf += dict_data
    end = origin + len(buf)
    stack = sym["seedfw_lz4_stack"]
    if (c_addr < stack + HOOK_STACK_SIZE and end > stack) or end > sym["__BL31_END__"]:
        raise SeedfwError(f"container 0x{c_addr:x}..0x{end:x} overlaps the hook's stack "
                          f"0x{stack:x} or passes __BL31_END__ 0x{sym['__BL31_END__']:x}",
                          file=bl31_elf, field="layout")
    return c_addr, d_addr, d_len


def embed_rodata(bl31_elf: str | os.PathLike, bl31_bin: str | os.PathLike,
                 out_bin: str | os.PathLike, block_size: int = 65536, level: int = 12,
                 dictionary: Dictionary | None = None, always_dict: bool = False) -> RodataEmbed:
    """Write `out_bin`: bl31.bin with .rodata zeroed, the container appended, descriptor set."""
    sym = elf_symbols(bl31_elf)
    image = bytearray(Path(bl31_bin).read_bytes())
    base = sym["__BL31_START__"]
    ro, ro_end = sym["__RODATA_START__"], sym["__RODATA_END__"]
    desc_off = sym["seedfw_lz4_rodata"] - base
    if not base <= ro < ro_end <= base + len(image) or desc_off + DESC.size > len(image):
        raise SeedfwError(f".rodata 0x{ro:x}..0x{ro_end:x} or the descriptor lies outside the "
                          f"image 0x{base:x}+{len(image)}", file=bl31_bin)
    magic, status, container_addr = struct.unpack_from("<IiQ", image, desc_off)
    if magic != DESC_MAGIC or container_addr != 0:
        raise SeedfwError(f"descriptor seedfw_lz4_rodata: magic 0x{magic:08x}, container "
                          f"0x{container_addr:x}: not a fresh patched BL31 (already processed?)",
                          file=bl31_bin, field=f"offset 0x{desc_off:x}")
    rodata = bytes(image[ro - base:ro_end - base])
    result, blob, dict_data = _compress(rodata, ro, block_size, level, dictionary,
                                         always_dict)
    image[ro - base:ro_end - base] = bytes(ro_end - ro)

    size_before = len(image)
    c_addr, d_addr, d_len = _append_container(image, base, blob, dict_data, sym, bl31_elf)
    DESC.pack_into(image, desc_off, DESC_MAGIC, 0, c_addr, len(blob), ro, ro_end - ro,
                   d_addr, d_len)
    write_bytes(out_bin, bytes(image))
    return RodataEmbed(result, ro, ro_end - ro, c_addr, len(blob), d_addr, d_len, size_before,
                       len(image))


def _compress(rodata: bytes, address: int, block_size: int, level: int,
              dictionary: Dictionary | None, always_dict: bool = False
              ) -> tuple[SectionResult, bytes, bytes]:
    """Container for .rodata; the dictionary goes along only when it pays for its bytes
    (always_dict: regardless - to exercise the dictionary path, e.g. in the boot test)."""
    dictionary = dictionary or Dictionary.none()
    if dictionary.data and dictionary.source == "resident":
        raise SeedfwError("a resident dictionary needs its address in BL31; use a stored one",
                          field="dictionary")
    result = compress_section(".rodata", address, rodata, block_size, level, dictionary)
    if always_dict and dictionary.data and not result.use_dict:
        result.use_dict = True
        result.container = write_container(rodata, block_size, level, dictionary.data)
    return result, result.container, (dictionary.data if result.use_dict else b"")


# ---------------------------------------------------------------- ELF (load segments) variant

ELF64_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
ELF64_PHDR = struct.Struct("<IIQQQQQQ")
PT_LOAD = 1
SEGMENT_ALIGN = 0x1000


@dataclass
class Segment:
    vaddr: int
    paddr: int
    flags: int
    data: bytes
    memsz: int


def load_segments(elf_path) -> tuple[dict, list[Segment]]:
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        if elf.elfclass != 64 or not elf.little_endian:
            raise SeedfwError("expected a little-endian ELF64 (AArch64) BL31", file=elf_path)
        head = {"e_machine": elf["e_machine"], "e_entry": elf["e_entry"],
                "e_flags": elf["e_flags"]}
        segs = [Segment(s["p_vaddr"], s["p_paddr"], s["p_flags"], s.data(), s["p_memsz"])
                for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_filesz"]]
    return head, segs


def write_segments_elf(path, head: dict, segs: list[Segment], machine: int) -> None:
    """A minimal ELF: header + PT_LOAD program headers + data, no section table.

    Enough for everything that loads by segment (FIT split-elf, GDB `load`); the unmodified
    bl31.elf stays the one to debug with.
    """
    phoff = ELF64_HEADER.size
    offset = phoff + ELF64_PHDR.size * len(segs)
    phdrs, blobs = [], []
    for s in segs:
        offset += (s.vaddr - offset) % SEGMENT_ALIGN      # p_offset == p_vaddr mod p_align
        phdrs.append(ELF64_PHDR.pack(PT_LOAD, s.flags, offset, s.vaddr, s.paddr, len(s.data),
                                     max(s.memsz, len(s.data)), SEGMENT_ALIGN))
        blobs.append((offset, s.data))
        offset += len(s.data)
    out = bytearray(offset)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ELF64_HEADER.pack_into(out, 0, ident, 2, machine, 1, head["e_entry"], phoff, 0,
                           head["e_flags"], ELF64_HEADER.size, ELF64_PHDR.size, len(segs), 64, 0, 0)
    out[phoff:phoff + ELF64_PHDR.size * len(segs)] = b"".join(phdrs)
    for off, data in blobs:
        out[off:off + len(data)] = data
    write_bytes(path, bytes(out))


def embed_rodata_elf(bl31_elf: str | os.PathLike, out_elf: str | os.PathLike,
                     block_size: int = 65536, level: int = 12,
                     dictionary: Dictionary | None = None,
                     always_dict: bool = False) -> RodataEmbed:
    """Write `out_elf`: bl31.elf's load segments with .rodata removed from the file and the
    container (+ stored dictionary) appended to the segment after it; descriptor set."""
    sym = elf_symbols(bl31_elf)
    head, segs = load_segments(bl31_elf)
    with open(bl31_elf, "rb") as f:
        machine = struct.unpack("<H", f.read(20)[18:20])[0]  # e_machine, numeric (EM_AARCH64)
    ro, ro_end = sym["__RODATA_START__"], sym["__RODATA_END__"]
    hits = [s for s in segs if s.vaddr <= ro and ro_end <= s.vaddr + len(s.data)]
    if not hits:
        raise SeedfwError(f".rodata 0x{ro:x}..0x{ro_end:x} is not inside one load segment",
                          file=bl31_elf, field="segments")
    seg = hits[0]
    before = sum(len(s.data) for s in segs)
    head_part = seg.data[:ro - seg.vaddr]
    tail = bytearray(seg.data[ro_end - seg.vaddr:])
    rodata = bytes(seg.data[ro - seg.vaddr:ro_end - seg.vaddr])
    desc = sym["seedfw_lz4_rodata"]
    if not ro_end <= desc < ro_end + len(tail):
        raise SeedfwError("descriptor seedfw_lz4_rodata is not in the data after .rodata",
                          file=bl31_elf, field="seedfw_lz4_rodata")
    result, blob, dict_data = _compress(rodata, ro, block_size, level, dictionary,
                                         always_dict)
    c_addr, d_addr, d_len = _append_container(tail, ro_end, blob, dict_data, sym, bl31_elf)
    off = desc - ro_end
    magic, _, container = struct.unpack_from("<IiQ", tail, off)
    if magic != DESC_MAGIC or container != 0:
        raise SeedfwError("descriptor seedfw_lz4_rodata is not fresh (already processed?)",
                          file=bl31_elf, field="seedfw_lz4_rodata")
    DESC.pack_into(tail, off, DESC_MAGIC, 0, c_addr, len(blob), ro, ro_end - ro, d_addr, d_len)
    # BL31 zeroes its own .bss: the shortened segment needs no NOBITS tail, and without one no
    # loader can zero the container after copying it.
    new = []
    for s in segs:
        if s is not seg:
            new.append(s)
            continue
        if head_part:
            new.append(Segment(seg.vaddr, seg.paddr, seg.flags, bytes(head_part), len(head_part)))
        new.append(Segment(ro_end, seg.paddr + (ro_end - seg.vaddr), seg.flags | P_FLAGS.PF_R,
                           bytes(tail), len(tail)))
    write_segments_elf(out_elf, head, new, machine)
    return RodataEmbed(result, ro, ro_end - ro, c_addr, len(blob), d_addr, d_len, before,
                       sum(len(s.data) for s in new))
