"""ELF section, segment and symbol statistics, and diffs between two builds.

We read the ELF ourselves with `struct` rather than through pyelftools, for two measured reasons:
  * speed: the benchmark (bench/stats_speed.py) compares us with `nm -S --size-sort` plus
    `readelf -S`; unpacking the symbol table with `struct.iter_unpack` and slicing names only
    out of one `bytes` string string table keeps us within that budget, pyelftools' per-symbol
    objects do not;
  * robustness: pyelftools 0.33 raises on some stripped Debian U-Boot ELFs (a `.hash` section
    with sh_link = 0). Here every section is read by index on its own; a section we cannot use
    becomes a warning, never an exception.
Only the headers, the symbol table and its string table are read — never debug info — so a
large ELF with debug sections costs no more than a stripped one.

Classes, as Zephyr's size_report: NOBITS → RAM; ALLOC|EXEC → ROM; WRITE|ALLOC → ROM+RAM
(stored in ROM, copied to RAM); other ALLOC → ROM; non-ALLOC → not counted. Unlike size_report
we class every ALLOC section, not only PROGBITS ones, so `.rela.dyn`, `.init_array` & co. are
counted and the ALLOC total equals what `size -A` lists for the loadable sections.

Bad input (not an ELF, truncated header tables, no sections) raises SeedfwError naming the file.
The diff (see diff_stats) lives in stats_diff.py.

Hostile ELFs (docs/hostile-input.md): read with pread, piece by piece (a sparse 3 GiB file is
never mapped or copied whole), every count it declares is capped before anything is read
(ELF_CAPS: far above real firmware, one error line over a cap), the symbol table is unpacked
in bounded chunks, names are found within a bounded window and their decoded bytes are budgeted,
and the section-to-segment mapping is a sort and a bisect per segment (stats_segments) with
the pairs it examines capped — 65,000 sections x 65,000 segments was over an hour before.
Every name reaches the terminal through reading.plain (format_stats): ESC, OSC and C1 bytes in
a section or symbol name are shown as \\xNN, never interpreted.
"""

from __future__ import annotations

import contextlib
import os
import struct
from operator import itemgetter
from pathlib import Path

from ..errors import SeedfwError
from ..reading import plain
from .segments import read_segments

STATS_SCHEMA = "seedfw-stats/1"

# What one ELF may declare. Real firmware, for scale: U-Boot ~40 sections, 3 segments, ~10k
# symbols; an arm64 defconfig vmlinux ~50 sections, ~150k symbols, a 5 MiB .strtab.
ELF_CAPS = {
    "sections": 16384,              # e_shnum (or section 0's sh_size beyond 0xff00)
    "segments": 4096,               # e_phnum
    "symbols": 1 << 20,             # entries of .symtab/.dynsym
    "string_table": 64 << 20,       # bytes of .strtab / .shstrtab
    "name_length": 4096,            # bytes searched for one name's NUL (longer: cut, warned)
    "name_bytes": 128 << 20,        # bytes of all decoded names together
    "mapping_pairs": 1 << 20,       # section/segment pairs the mapping examines
}
_SYMBOL_CHUNK = 1 << 16             # symbols unpacked per chunk (1.5 MiB for ELF64)

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHT_NULL, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 0, 2, 3, 4, 8, 9
SHT_DYNSYM, SHT_GROUP, SHT_SYMTAB_SHNDX = 11, 17, 18
SHF_TLS = 0x400
PT_LOAD, PT_TLS = 1, 7
SHN_UNDEF, SHN_LORESERVE, SHN_XINDEX = 0, 0xFF00, 0xFFFF
STT_SECTION, STT_FILE = 3, 4

_SECTION_TYPES = {
    0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 5: "HASH", 6: "DYNAMIC",
    7: "NOTE", 8: "NOBITS", 9: "REL", 10: "SHLIB", 11: "DYNSYM", 14: "INIT_ARRAY",
    15: "FINI_ARRAY", 16: "PREINIT_ARRAY", 17: "GROUP", 18: "SYMTAB_SHNDX", 19: "RELR",
    0x6FFFFFF5: "GNU_ATTRIBUTES", 0x6FFFFFF6: "GNU_HASH", 0x6FFFFFFD: "VERDEF",
    0x6FFFFFFE: "VERNEED", 0x6FFFFFFF: "VERSYM",
}
# Processor-specific section types (0x70000000+) mean different things per e_machine; names as
# readelf prints them.
_PROC_SECTION_TYPES = {
    40: {0x70000001: "ARM_EXIDX", 0x70000003: "ARM_ATTRIBUTES"},
    243: {0x70000003: "RISCV_ATTRIBUTES"},
    8: {0x70000006: "MIPS_REGINFO", 0x7000000D: "MIPS_OPTIONS", 0x7000002A: "MIPS_ABIFLAGS"},
}
_MACHINES = {3: "x86", 8: "MIPS", 20: "PowerPC", 40: "ARM", 62: "x86-64", 183: "AArch64",
             243: "RISC-V"}
_ELF_TYPES = {1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}
_SYM_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS",
              10: "IFUNC"}
_SYM_BINDS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "UNIQUE"}
# readelf's letters, in readelf's order.
_FLAG_LETTERS = ((0x1, "W"), (0x2, "A"), (0x4, "X"), (0x10, "M"), (0x20, "S"), (0x40, "I"),
                 (0x80, "L"), (0x100, "O"), (0x200, "G"), (0x400, "T"), (0x800, "C"))

# struct layouts per (class, endianness): ELF header tail after e_ident, section header,
# program header, symbol. Field order differs between 32- and 64-bit phdrs and symbols.
_LAYOUTS = {
    32: dict(ehdr="HHIIIIIHHHHHH", shdr="IIIIIIIIII", phdr="IIIIIIII", sym="IIIBBH"),
    64: dict(ehdr="HHIQQQIHHHHHH", shdr="IIQQQQIIQQ", phdr="IIQQQQQQ", sym="IBBHQQ"),
}


def _section_type(sh_type: int, machine: int) -> str:
    name = _SECTION_TYPES.get(sh_type) or _PROC_SECTION_TYPES.get(machine, {}).get(sh_type)
    return name or f"{sh_type:#x}"


def section_class(sh_type: int, sh_flags: int) -> str | None:
    """ROM / RAM / ROM+RAM as Zephyr's size_report; None for sections not loaded."""
    if not sh_flags & SHF_ALLOC:
        return None
    if sh_type == SHT_NOBITS:
        return "RAM"
    if sh_flags & SHF_EXECINSTR:
        return "ROM"
    if sh_flags & SHF_WRITE:
        return "ROM+RAM"
    return "ROM"


def flag_string(flags: int) -> str:
    text = "".join(letter for bit, letter in _FLAG_LETTERS if flags & bit)
    if flags & 0x0FF00000:
        text += "o"
    if flags & 0xF0000000:
        text += "p"
    return text


def counted_by_size_a(sh_type: int, sh_flags: int) -> bool:
    """Whether GNU `size -A` lists this section: BFD hides the symbol/string tables and
    non-loaded relocation/group sections, which it folds into other sections."""
    if sh_type in (SHT_NULL, SHT_SYMTAB, SHT_SYMTAB_SHNDX, SHT_GROUP):
        return False
    if sh_type in (SHT_STRTAB, SHT_REL, SHT_RELA) and not sh_flags & SHF_ALLOC:
        return False
    return True


class _ElfFile:
    """Random access to the parts of one ELF file we need (headers, one table at a time)."""

    def __init__(self, path: Path):
        self.path = path
        import stat as stat_mod
        try:            # a FIFO would block open/read, a device has no end: regular files only
            mode = os.stat(path).st_mode
            if not stat_mod.S_ISREG(mode) and not stat_mod.S_ISDIR(mode):
                raise SeedfwError("is not a regular file: refused", path)
        except OSError:
            pass        # reported by open() below, with its own message
        try:
            self.f = open(path, "rb")  # door: stat-checked above; read in bounded pieces (ELF_CAPS)
        except FileNotFoundError:
            raise SeedfwError("no such file", path) from None
        except IsADirectoryError:
            raise SeedfwError("is a directory, not an ELF file", path) from None
        except OSError as exc:
            raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
        self.size = os.fstat(self.f.fileno()).st_size
        self.name_budget = ELF_CAPS["name_bytes"]
        self.cut_names = 0

    def check(self, offset: int, length: int, what: str) -> None:
        if offset + length > self.size:
            raise SeedfwError(f"truncated: {what} at offset {offset:#x} needs {length} bytes, "
                              f"the file has {self.size}", self.path)

    def read(self, offset: int, length: int, what: str) -> bytes:
        """`length` bytes at `offset` (callers cap `length`: every table is capped before it
        is read, and the symbol table is read in chunks)."""
        self.check(offset, length, what)
        data = os.pread(self.f.fileno(), length, offset)
        if len(data) != length:                 # shrank since fstat
            raise SeedfwError(f"changed while it was read ({what})", self.path)
        return data

    def name(self, table: bytes, offset: int, field: str) -> str | None:
        """The NUL-terminated name at `offset` of a string table, or None outside it.
        Searched within ELF_CAPS name_length bytes (a longer one is cut and counted in
        self.cut_names); the decoded bytes of all names are budgeted, so a table of
        overlapping suffixes cannot make a million long strings."""
        if offset >= len(table):
            return None
        limit = min(len(table), offset + ELF_CAPS["name_length"])
        end = table.find(b"\0", offset, limit)
        if end < 0:
            if limit == len(table):
                return None                     # runs off the table: no name
            end = limit
            self.cut_names += 1
        self.name_budget -= end - offset
        if self.name_budget < 0:
            raise SeedfwError(f"names add up to more than {ELF_CAPS['name_bytes']} bytes "
                              f"(cap {ELF_CAPS['name_bytes']})", self.path, field)
        return table[offset:end].decode("utf-8", "replace")

    def close(self):
        self.f.close()


def _parse_header(elf: _ElfFile) -> dict:
    ident = os.pread(elf.f.fileno(), 16, 0)
    if elf.size == 0:
        raise SeedfwError("empty file (0 bytes), not an ELF file", elf.path)
    if len(ident) < 4 or ident[:4] != b"\x7fELF":
        raise SeedfwError("not an ELF file (no \\x7fELF magic)", elf.path)
    if len(ident) < 16:
        raise SeedfwError(f"truncated: ELF identification needs 16 bytes, the file has "
                          f"{elf.size}", elf.path)
    bits = {1: 32, 2: 64}.get(ident[4])
    endian = {1: "<", 2: ">"}.get(ident[5])
    if bits is None or endian is None:
        raise SeedfwError(f"unsupported ELF class {ident[4]} / data encoding {ident[5]}",
                          elf.path, "e_ident")
    lay = {k: struct.Struct(endian + v) for k, v in _LAYOUTS[bits].items()}
    fields = lay["ehdr"].unpack(elf.read(16, lay["ehdr"].size, "ELF header"))
    (e_type, e_machine, _ver, e_entry, e_phoff, e_shoff, _flags, _ehsize,
     e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) = fields
    return dict(bits=bits, endian=endian, lay=lay, type=e_type, machine=e_machine,
                entry=e_entry, phoff=e_phoff, phnum=e_phnum, phentsize=e_phentsize,
                shoff=e_shoff, shnum=e_shnum, shentsize=e_shentsize, shstrndx=e_shstrndx)


@contextlib.contextmanager
def open_elf(path: str | os.PathLike):
    """Yield (elf, header) for a validated ELF header: `elf.read(offset, length, what)` reads
    with a clear truncation error; header keys: bits, endian, lay (struct layouts), type,
    machine (e_machine number), entry, phoff, phnum, phentsize, shoff, shnum, shentsize."""
    elf = _ElfFile(Path(path))
    try:
        yield elf, _parse_header(elf)
    finally:
        elf.close()


def _cap(name: str, value: int, unit: str, path, field: str) -> None:
    """One error line when a declared count is over ELF_CAPS[name]."""
    if value > ELF_CAPS[name]:
        raise SeedfwError(f"{value} {unit} (cap {ELF_CAPS[name]})", path, field)


def read_elf(path: str | os.PathLike, top: int = 10) -> dict:
    """Stats of one ELF file as a JSON-ready dict (schema seedfw-stats/1, one `files` entry).

    top: symbols kept per section in `top_symbols`; `symbols` always lists every sized symbol
    (name, size, section) so a saved stats JSON can serve as a --diff baseline.
    """
    path = Path(path)
    elf = _ElfFile(path)
    try:
        return _read(elf, top)
    finally:
        elf.close()


def _read(elf: _ElfFile, top: int) -> dict:
    h = _parse_header(elf)
    lay = h["lay"]
    warnings: list[str] = []
    if h["shoff"] == 0:
        raise SeedfwError("no section headers (e_shoff = 0)", elf.path, "e_shoff")
    if h["shentsize"] != lay["shdr"].size:
        raise SeedfwError(f"section header size {h['shentsize']} is not "
                          f"{lay['shdr'].size}", elf.path, "e_shentsize")
    first = lay["shdr"].unpack(elf.read(h["shoff"], lay["shdr"].size, "section header 0"))
    shnum = h["shnum"] or first[5]          # > 0xff00 sections: count lives in sh_size of [0]
    shstrndx = first[6] if h["shstrndx"] == SHN_XINDEX else h["shstrndx"]
    if shnum == 0:
        raise SeedfwError("no sections (e_shnum = 0)", elf.path, "e_shnum")
    _cap("sections", shnum, "sections", elf.path, "e_shnum")
    raw = elf.read(h["shoff"], shnum * lay["shdr"].size, f"section header table ({shnum} entries)")
    headers = list(lay["shdr"].iter_unpack(raw))

    names = b""
    if 0 < shstrndx < shnum:
        _n, _t, _f, _a, off, size = headers[shstrndx][:6]
        _cap("string_table", size, "bytes", elf.path, f"section [{shstrndx}] (section names)")
        if off + size <= elf.size:
            names = elf.read(off, size, "section name table")
        else:
            warnings.append(f"section [{shstrndx}]: section name table beyond end of file")
    else:
        warnings.append(f"e_shstrndx {shstrndx} is not a section; sections are unnamed")

    sections = []
    for index, (sh_name, sh_type, sh_flags, addr, offset, size, link, info, align,
                entsize) in enumerate(headers):
        name = elf.name(names, sh_name, "section names") if names else None
        if name is None:
            name = f"<section {index}>"
            if index and names:
                warnings.append(f"section [{index}]: name offset {sh_name} outside the name "
                                f"table")
        file_size = 0 if sh_type in (SHT_NOBITS, SHT_NULL) else size
        if file_size and offset + file_size > elf.size:
            warnings.append(f"section [{index}] {name}: data at {offset:#x}+{size:#x} lies "
                            f"beyond the end of the file ({elf.size} bytes)")
        sections.append(dict(
            index=index, name=name, type=_section_type(sh_type, h["machine"]),
            flags=flag_string(sh_flags), address=addr, offset=offset, size=size,
            file_size=file_size, align=align, link=link, info=info, entsize=entsize,
            **{"class": section_class(sh_type, sh_flags)},
            _type=sh_type, _flags=sh_flags))
    _check_links(sections, warnings)

    segments = read_segments(elf, h, sections, warnings, ELF_CAPS)
    source, symbols = _read_symbols(elf, h, sections, warnings)
    if elf.cut_names:
        warnings.append(f"{elf.cut_names} name(s) longer than {ELF_CAPS['name_length']} bytes "
                        "shown cut")
    result = dict(
        file=elf.path.name, file_bytes=elf.size,
        elf=dict(bits=h["bits"], endian="little" if h["endian"] == "<" else "big",
                 machine=_MACHINES.get(h["machine"], str(h["machine"])),
                 type=_ELF_TYPES.get(h["type"], str(h["type"])), entry=h["entry"]),
        sections=sections, segments=segments, totals=_totals(sections),
        symbol_source=source, symbols=symbols,
        top_symbols=_top_symbols(symbols, top), warnings=warnings)
    for s in sections:
        s["size_a"] = counted_by_size_a(s.pop("_type"), s.pop("_flags"))
    return result


def _check_links(sections: list[dict], warnings: list[str]) -> None:
    """The check pyelftools trips over: hash/symbol-dependent sections must link a symtab."""
    symtab_types = (SHT_SYMTAB, SHT_DYNSYM)
    for s in sections:
        if s["type"] not in ("HASH", "GNU_HASH"):
            continue
        link = s["link"]
        if not 0 < link < len(sections) or sections[link]["_type"] not in symtab_types:
            warnings.append(f"section [{s['index']}] {s['name']}: sh_link {link} does not "
                            f"index a symbol table (stripped ELF); not read")


def _read_symbols(elf, h, sections, warnings) -> tuple[str | None, list[list]]:
    """Every symbol with a size, defined in a real section: [name, size, section, value,
    type, bind], largest first. .symtab preferred; .dynsym when the ELF is stripped."""
    chosen = next((s for s in sections if s["_type"] == SHT_SYMTAB), None) or \
        next((s for s in sections if s["_type"] == SHT_DYNSYM), None)
    if chosen is None:
        return None, []
    lay = h["lay"]
    where = f"section [{chosen['index']}] {plain(chosen['name'])}"
    strtab_index = chosen["link"]
    if not 0 < strtab_index < len(sections) or sections[strtab_index]["_type"] != SHT_STRTAB:
        warnings.append(f"{where}: sh_link {strtab_index} is not a string table; symbols not read")
        return None, []
    strsec = sections[strtab_index]
    sym = lay["sym"]
    _cap("symbols", chosen["size"] // sym.size, "symbols", elf.path, where)
    _cap("string_table", strsec["size"], "bytes", elf.path,
         f"section [{strtab_index}] {plain(strsec['name'])}")
    try:
        elf.check(chosen["offset"], chosen["size"], where)
        strtab = elf.read(strsec["offset"], strsec["size"], f"string table {strsec['name']}")
    except SeedfwError as exc:
        warnings.append(f"{exc.message}; symbols not read")
        return None, []
    usable = chosen["size"] - chosen["size"] % sym.size
    if usable != chosen["size"]:
        warnings.append(f"{where}: size {chosen['size']} is not a multiple of the symbol size")
    names = [s["name"] for s in sections]
    nsec = len(sections)            # <= ELF_CAPS sections < SHN_LORESERVE
    out = []
    append = out.append
    types = {t: _SYM_TYPES.get(t, str(t)) for t in range(16)}
    binds = {b: _SYM_BINDS.get(b, str(b)) for b in range(16)}
    find, table_len, longest = strtab.find, len(strtab), ELF_CAPS["name_length"]
    budget = elf.name_budget
    is64 = h["bits"] == 64
    step = _SYMBOL_CHUNK * sym.size
    for at in range(chosen["offset"], chosen["offset"] + usable, step):
        # One bounded chunk at a time: a table of a million entries is never one list.
        chunk = elf.read(at, min(step, chosen["offset"] + usable - at), where)
        for fields in sym.iter_unpack(chunk):
            if is64:
                st_name, st_info, _o, shndx, value, size = fields
            else:
                st_name, value, size, st_info, _o, shndx = fields
            # Only sized symbols in a real section: what `nm -S --size-sort` lists as defined.
            if not size or not 0 < shndx < nsec:
                continue
            st_type = st_info & 0xF
            if st_type == STT_SECTION or st_type == STT_FILE:
                continue
            # The name, inline (this loop runs up to a million times): NUL within the
            # name_length window, its bytes counted against the budget; elf.name for the
            # rare name without one (cut, or off the table).
            end = find(b"\0", st_name, st_name + longest) if st_name < table_len else -1
            if end >= 0:
                budget -= end - st_name
                if budget < 0:
                    raise SeedfwError(f"names add up to more than {ELF_CAPS['name_bytes']} "
                                      f"bytes (cap {ELF_CAPS['name_bytes']})", elf.path, where)
                name = strtab[st_name:end].decode("utf-8", "replace")
            else:
                elf.name_budget = budget
                name = elf.name(strtab, st_name, where)
                budget = elf.name_budget
                if name is None:
                    name = "?"
            append([name, size, names[shndx], value, types[st_type], binds[st_info >> 4]])
    elf.name_budget = budget
    # Largest first, then by name; two stable sorts on the rows' own fields allocate no key
    # tuples (a million rows would need a million more objects).
    out.sort(key=itemgetter(0))
    out.sort(key=itemgetter(1), reverse=True)
    return chosen["name"], out


def _totals(sections: list[dict]) -> dict:
    rom = ram = alloc = alloc_file = size_a = all_sizes = 0
    for s in sections:
        all_sizes += s["size"]
        if counted_by_size_a(s["_type"], s["_flags"]):
            size_a += s["size"]
        cls = s["class"]
        if cls is None:
            continue
        alloc += s["size"]
        alloc_file += s["file_size"]
        if cls in ("ROM", "ROM+RAM"):
            rom += s["size"]
        if cls in ("RAM", "ROM+RAM"):
            ram += s["size"]
    return dict(rom=rom, ram=ram, alloc=alloc, alloc_file=alloc_file, size_a=size_a,
                all_sections=all_sizes)


def _top_symbols(symbols: list[list], top: int) -> dict:
    per: dict[str, list[dict]] = {}
    for name, size, section, value, st_type, bind in symbols:      # already largest first
        rows = per.setdefault(section, [])
        if len(rows) < top:
            rows.append(dict(name=name, size=size, address=value, type=st_type, bind=bind))
    return per


def stats_document(files: list[dict]) -> dict:
    """The top-level stats JSON (what `invoke stats --json` prints and --diff accepts)."""
    return {"schema": STATS_SCHEMA, "files": files}


def load_stats(path: str | os.PathLike, top: int = 10) -> list[dict]:
    """An ELF file or a saved stats JSON → list of per-file stats dicts."""
    path = Path(path)
    try:
        from .. import reading
        reading.refuse_special(path)       # a FIFO would block the open below
        with open(path, "rb") as f:  # door: refuse_special first; 4 bytes
            head = f.read(4)
    except FileNotFoundError:
        raise SeedfwError("no such file", path) from None
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    if head == b"\x7fELF":
        return [read_elf(path, top)]
    if head[:1] in (b"{", b" ", b"\n"):
        from .. import reading
        reading.refuse_special(path)
        import json     # only a saved stats JSON needs it: not imported for ELF input (~1 ms)
        if path.stat().st_size > reading.SIZE_CAPS["json"]:
            raise SeedfwError(f"over the {reading.SIZE_CAPS['json'] >> 20} MiB limit for JSON "
                              "inputs", path)
        try:
            text = path.read_text()  # door: refuse_special and the JSON cap above
            if text.count("[") + text.count("{") > reading.CAPS["json_depth"]:
                reading.check_depth(text, path, None)   # before json.loads can recurse
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SeedfwError(f"not valid JSON: {exc.msg} (column {exc.colno})", path,
                              f"line {exc.lineno}") from None
        except UnicodeDecodeError:
            raise SeedfwError("not valid JSON: not UTF-8 text", path) from None
        if not isinstance(doc, dict) or doc.get("schema") != STATS_SCHEMA:
            raise SeedfwError(f"not a stats JSON (schema is not '{STATS_SCHEMA}')", path,
                              "schema")
        files = doc.get("files")
        if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
            raise SeedfwError("'files' must be a list of objects", path, "files")
        from .diff import check_saved_entry
        for i, entry in enumerate(files):
            check_saved_entry(entry, path, i)
        return files
    raise SeedfwError(f"neither an ELF file nor a stats JSON (starts with {head.hex() or 'nothing'})",
                      path)


def format_stats(st: dict, top: int = 10) -> str:
    """Human-readable tables for one file (what `invoke stats` prints)."""
    lines = [f"{plain(st['file'])}: ELF{st['elf']['bits']} {plain(st['elf']['machine'])} "
             f"{plain(st['elf']['type'])}"]
    lines.append(f"  {'[Nr]':>5} {'section':<24} {'type':<12} {'flags':<5} {'address':>18} "
                 f"{'size':>10} {'file size':>10} class")
    for s in st["sections"]:
        if s["type"] == "NULL":
            continue
        lines.append(f"  [{s['index']:>3}] {plain(s['name']):<24} {s['type']:<12} {s['flags']:<5} "
                     f"{s['address']:#18x} {s['size']:>10} {s['file_size']:>10} "
                     f"{s['class'] or '-'}")
    t = st["totals"]
    lines.append(f"  totals: ROM {t['rom']}  RAM {t['ram']}  loaded (ALLOC) {t['alloc']}  "
                 f"size -A {t['size_a']}  all sections {t['all_sections']}")
    for g in st["segments"]:
        lines.append(f"  segment {g['index']} {g['type']:<12} {g['flags']:<3} vaddr {g['vaddr']:#x} "
                     f"paddr {g['paddr']:#x} file {g['file_size']} mem {g['mem_size']}: "
                     f"{' '.join(plain(n) for n in g['sections'])}")
    if st["symbol_source"] is None:
        lines.append("  symbols: none (no .symtab or .dynsym)")
    for section, rows in st["top_symbols"].items():
        lines.append(f"  top {min(top, len(rows))} symbols in {plain(section)}:")
        for r in rows[:top]:
            lines.append(f"    {r['size']:>10}  {plain(r['name'])}")
    for w in st["warnings"]:
        lines.append(f"  warning: {plain(w)}")
    return "\n".join(lines)
