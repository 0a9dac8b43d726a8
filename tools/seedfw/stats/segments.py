"""Program headers and the section-to-segment mapping of seedfw.stats, in time linear in the
sections and segments (plus the pairs it reports).

readelf -l prints, per segment, the sections inside it. Asking every section about every
segment costs sections x segments: 65,000 x 65,000 in a 7.8 MB file was over an hour. Here
the loaded (ALLOC) sections are sorted by address once; a section can only belong to a segment
when its address lies in [p_vaddr, p_vaddr + p_memsz), so each segment bisects that range and
checks only those candidates with readelf's rule (_in_segment). Overlapping segments can still
make the candidates add up to sections x segments, so their total is counted before any is
checked and capped (ELF_CAPS mapping_pairs): a real ELF maps each section into one or two
segments (LOAD, and GNU_RELRO or TLS).
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import SeedfwError

PT_TLS = 7
SHF_ALLOC, SHF_TLS = 0x2, 0x400
SHT_NOBITS = 8
_SEGMENT_TYPES = {0: "NULL", 1: "LOAD", 2: "DYNAMIC", 3: "INTERP", 4: "NOTE", 6: "PHDR",
                  7: "TLS", 0x6474E550: "GNU_EH_FRAME", 0x6474E551: "GNU_STACK",
                  0x6474E552: "GNU_RELRO", 0x6474E553: "GNU_PROPERTY", 0x70000001: "ARM_EXIDX"}


def read_segments(elf, h, sections, warnings, caps: dict) -> list[dict]:
    """The program headers as dicts (with `sections`: the names mapped into each), [] when
    there are none or they cannot be read (a warning). Over a cap of `caps` (seedfw.stats
    ELF_CAPS: segments, mapping_pairs): SeedfwError."""
    lay = h["lay"]
    if not h["phoff"] or not h["phnum"]:
        return []
    if h["phentsize"] != lay["phdr"].size:
        warnings.append(f"program header size {h['phentsize']} unexpected; segments not read")
        return []
    if h["phnum"] > caps["segments"]:
        raise SeedfwError(f"{h['phnum']} segments (cap {caps['segments']})", elf.path, "e_phnum")
    try:
        raw = elf.read(h["phoff"], h["phnum"] * lay["phdr"].size, "program header table")
    except SeedfwError as exc:
        warnings.append(exc.message)
        return []
    headers = []
    for fields in lay["phdr"].iter_unpack(raw):
        if h["bits"] == 64:
            p_type, p_flags, offset, vaddr, paddr, filesz, memsz, align = fields
        else:
            p_type, offset, vaddr, paddr, filesz, memsz, p_flags, align = fields
        headers.append((p_type, p_flags, offset, vaddr, paddr, filesz, memsz, align))

    loaded = sorted((s["address"], s["index"]) for s in sections if s["_flags"] & SHF_ALLOC)
    starts = [address for address, _ in loaded]
    ranges = [(bisect_left(starts, vaddr), bisect_left(starts, vaddr + memsz))
              for _t, _f, _o, vaddr, _p, _fs, memsz, _a in headers]
    pairs = sum(hi - lo for lo, hi in ranges)
    if pairs > caps["mapping_pairs"]:
        raise SeedfwError(f"{pairs} section/segment pairs to map (cap {caps['mapping_pairs']})",
                          elf.path, "e_phnum")

    segments = []
    for index, ((p_type, p_flags, offset, vaddr, paddr, filesz, memsz, align), (lo, hi)) in \
            enumerate(zip(headers, ranges)):
        flags = ("R" if p_flags & 4 else "") + ("W" if p_flags & 2 else "") + \
                ("X" if p_flags & 1 else "")
        inside = sorted(i for _a, i in loaded[lo:hi]
                        if _in_segment(sections[i], p_type, offset, vaddr, filesz, memsz))
        segments.append(dict(index=index, type=_SEGMENT_TYPES.get(p_type, f"{p_type:#x}"),
                             offset=offset, vaddr=vaddr, paddr=paddr, file_size=filesz,
                             mem_size=memsz, flags=flags, align=align,
                             sections=[sections[i]["name"] for i in inside]))
    return segments


def _in_segment(s, p_type, offset, vaddr, filesz, memsz) -> bool:
    """Section-to-segment mapping as readelf -l prints it (loaded sections by address)."""
    if not s["_flags"] & SHF_ALLOC:
        return False
    tbss = s["_type"] == SHT_NOBITS and s["_flags"] & SHF_TLS
    if tbss and p_type != PT_TLS:
        return False            # .tbss occupies no address space outside the TLS template
    if p_type == PT_TLS and not s["_flags"] & SHF_TLS:
        return False
    if s["_type"] != SHT_NOBITS and not offset <= s["offset"] < offset + max(filesz, 1):
        return False
    start, end = s["address"], s["address"] + s["size"]
    if s["size"] == 0:
        return vaddr <= start < vaddr + memsz
    return vaddr <= start and end <= vaddr + memsz
