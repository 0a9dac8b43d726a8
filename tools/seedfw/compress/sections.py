"""Compress selected ELF sections and say honestly whether the dictionary paid for itself.

For every configured section we build two containers, without and with the dictionary, and
report: raw bytes, both container sizes (header + table + blocks: what the image would carry),
the dictionary's stored bytes, and the net gain of the dictionary:

    net gain = (container without dict) - (container with dict) - (dictionary stored bytes)

A resident dictionary stores nothing, so its net gain is just the saving. When the net gain is
<= 0 the verdict says so plainly ("dictionary costs 2048 B and saves 310 B: not worth it") and
the section's chosen container is the one without the dictionary.

Each section is charged the full dictionary (the conservative per-section view); the report's
"total" row charges it once for all sections, which is what an image sharing one dictionary
pays. Both are written to <out>/compression.json (atomically).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..errors import SeedfwError
from ..util import write_json
from .blocks import check_block_size, check_level
from .container import crc32, parse_container, write_container
from .dictionary import Dictionary


@dataclass
class SectionResult:
    """Compression result of one ELF section.

    name, address:    section name and its link address (sh_addr)
    raw:              section bytes
    no_dict:          container bytes without a dictionary
    with_dict:        container bytes with the dictionary (== no_dict when there is none)
    dict_stored:      bytes the dictionary costs in the image (0: none or resident)
    net_gain:         no_dict - with_dict - dict_stored (positive: the dictionary pays)
    blocks:           number of blocks; stored_blocks of them kept raw
    use_dict:         whether the chosen container uses the dictionary
    crc32:            crc32 of the raw section (what the boot-time check compares)
    verdict:          one plain sentence about the dictionary
    container:        the chosen container's bytes (not written to JSON)
    """
    name: str
    address: int
    raw: int
    no_dict: int
    with_dict: int
    dict_stored: int
    net_gain: int
    blocks: int
    stored_blocks: int
    use_dict: bool
    crc32: int
    verdict: str
    container: bytes = field(default=b"", repr=False)

    @property
    def chosen(self) -> int:
        return len(self.container)

    def as_json(self) -> dict:
        d = asdict(self)
        d.pop("container")
        d["chosen"] = self.chosen
        d["ratio"] = round(self.chosen / self.raw, 4) if self.raw else None
        return d


def read_elf_sections(elf_path: str | os.PathLike, names: list[str]) -> dict[str, tuple[int, bytes]]:
    """{name: (address, bytes)} for the named sections that have file contents.

    Iterates by index and skips sections pyelftools cannot parse: stripped Debian U-Boot ELFs
    carry a `.hash` with sh_link = 0 that makes iter_sections() raise.
    """
    wanted = set(names)
    found: dict[str, tuple[int, bytes]] = {}
    try:
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            for i in range(elf.num_sections()):
                try:
                    sec = elf.get_section(i)
                except (ELFError, ValueError, KeyError):
                    continue
                if sec.name not in wanted or sec.name in found:
                    continue
                if sec["sh_type"] == "SHT_NOBITS":
                    raise SeedfwError(f"section {sec.name} has no file contents (NOBITS)",
                                      file=elf_path, field=sec.name)
                found[sec.name] = (sec["sh_addr"], sec.data())
    except OSError as exc:
        raise SeedfwError(f"cannot read ELF: {exc.strerror}", file=elf_path) from None
    except ELFError as exc:
        raise SeedfwError(f"not a valid ELF file: {exc}", file=elf_path) from None
    return found


def dictionary_verdict(no_dict: int, with_dict: int, dict_stored: int, source: str) -> str:
    if source == "none":
        return "no dictionary"
    saves = no_dict - with_dict
    if source == "resident":
        if saves > 0:
            return f"resident dictionary (stored free) saves {saves} B"
        return f"resident dictionary saves {saves} B: not worth it"
    net = saves - dict_stored
    if net <= 0:
        return f"dictionary costs {dict_stored} B and saves {saves} B: not worth it"
    return f"dictionary costs {dict_stored} B and saves {saves} B: net gain {net} B"


def compress_section(name: str, address: int, data: bytes, block_size: int, hc_level: int,
                     dictionary: Dictionary) -> SectionResult:
    plain = write_container(data, block_size, hc_level)
    if dictionary.data:
        withd = write_container(data, block_size, hc_level, dictionary.data)
    else:
        withd = plain
    net = len(plain) - len(withd) - dictionary.stored_size if dictionary.data else 0
    use_dict = bool(dictionary.data) and net > 0
    chosen = withd if use_dict else plain
    info = parse_container(chosen)
    return SectionResult(
        name=name, address=address, raw=len(data), no_dict=len(plain), with_dict=len(withd),
        dict_stored=dictionary.stored_size if dictionary.data else 0, net_gain=net,
        blocks=info.block_count, stored_blocks=info.stored_blocks, use_dict=use_dict,
        crc32=crc32(data),
        verdict=dictionary_verdict(len(plain), len(withd), dictionary.stored_size,
                                   dictionary.source if dictionary.data else "none"),
        container=chosen)


def compress_elf_sections(elf_path: str | os.PathLike, sections: list[str],
                          block_size: int = 65536, hc_level: int = 12,
                          dictionary: Dictionary | None = None) -> list[SectionResult]:
    """Compress each named section of `elf_path`; a missing section is an error."""
    check_block_size(block_size)
    check_level(hc_level)
    dictionary = dictionary or Dictionary.none()
    found = read_elf_sections(elf_path, sections)
    results = []
    for name in sections:
        if name not in found:
            raise SeedfwError(f"section {name} not found", file=elf_path, field="sections")
        address, data = found[name]
        results.append(compress_section(name, address, data, block_size, hc_level, dictionary))
    return results


def totals(results: list[SectionResult], dictionary: Dictionary) -> dict:
    """Sums with the dictionary charged once (one shared dictionary per image)."""
    no_dict = sum(r.no_dict for r in results)
    with_dict = sum(r.with_dict for r in results)
    stored = dictionary.stored_size if dictionary.data else 0
    return {"raw": sum(r.raw for r in results), "no_dict": no_dict, "with_dict": with_dict,
            "dict_stored": stored, "net_gain": no_dict - with_dict - stored if dictionary.data else 0,
            "verdict": dictionary_verdict(no_dict, with_dict, stored,
                                          dictionary.source if dictionary.data else "none")}


def write_report(outdir: str | os.PathLike, results: list[SectionResult], elf_path,
                 block_size: int, hc_level: int, dictionary: Dictionary) -> Path:
    """Write <outdir>/compression.json atomically; paths are stored relative to outdir."""
    outdir = Path(outdir)
    try:
        elf_rel = os.path.relpath(elf_path, outdir)
    except ValueError:
        elf_rel = os.path.basename(elf_path)
    report = {
        "elf": elf_rel,
        "block_size": block_size,
        "hc_level": hc_level,
        "dictionary": {"source": dictionary.source, "size": len(dictionary.data),
                       "stored": dictionary.stored_size if dictionary.data else 0,
                       "id": f"0x{dictionary.id:08x}",
                       "origin": os.path.basename(dictionary.origin) if dictionary.origin else ""},
        "sections": [r.as_json() for r in results],
        "total": totals(results, dictionary),
    }
    return write_json(outdir / "compression.json", report)


def format_table(results: list[SectionResult], dictionary: Dictionary) -> str:
    """The per-section table `invoke compress` and `invoke build` print."""
    head = f"{'section':<14}{'raw':>9}{'no dict':>9}{'dict':>9}{'dict B':>8}{'net':>8}{'blocks':>8}"
    lines = [head]
    for r in results:
        lines.append(f"{r.name:<14}{r.raw:>9}{r.no_dict:>9}{r.with_dict:>9}{r.dict_stored:>8}"
                     f"{r.net_gain:>8}{r.blocks:>8}  {r.verdict}")
    if len(results) > 1:
        t = totals(results, dictionary)
        lines.append(f"{'total':<14}{t['raw']:>9}{t['no_dict']:>9}{t['with_dict']:>9}"
                     f"{t['dict_stored']:>8}{t['net_gain']:>8}{'':>8}  {t['verdict']}")
    return "\n".join(lines)
