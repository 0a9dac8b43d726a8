"""`.dvfs_hint` harvest: read the records firmware placed with SEEDFW_DVFS_HINT (dvfs_hint.h) out of
built ELFs, check each against the board's DVFS table and its default profile.

Sections are walked by index (get_section(i) over num_sections()), not with iter_sections():
pyelftools 0.33 raises on some stripped ELFs with a `.hash` whose sh_link is 0 (FACTS.md); one
broken section must not hide the hints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .. import dvfs
from . import HINT, Table
from ..util import atomic_path, run, write_bytes, write_text
from ..errors import SeedfwError

SECTION = ".dvfs_hint"


@dataclass(frozen=True)
class Hint:
    name: str
    domain: str            # "" in the ELF = any domain; resolved by check()
    criticality: float
    latency_slack_ns: int
    freq_min_mhz: int
    voltage_mv: int
    source: str = ""       # ".dvfs_hint[<i>]", the field named in messages


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def harvest(elf_path: str | Path) -> list[Hint]:
    """All records of the ELF's `.dvfs_hint` section (empty list when it has none)."""
    elf_path = Path(elf_path)
    try:
        f = open(elf_path, "rb")
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", elf_path) from None
    with f:
        try:
            elf = ELFFile(f)
        except ELFError as exc:
            raise SeedfwError(f"not an ELF file: {exc}", elf_path) from None
        if not elf.little_endian:
            raise SeedfwError("big-endian ELF: dvfs_hint records are little-endian", elf_path)
        data = None
        for i in range(elf.num_sections()):
            try:
                section = elf.get_section(i)
            except ELFError:
                continue
            if section.name == SECTION:
                if section["sh_type"] == "SHT_NOBITS":
                    raise SeedfwError("section is NOBITS (zero-initialised hints?)", elf_path, SECTION)
                data = section.data()
                break
    if data is None:
        return []
    if len(data) % HINT.size:
        raise SeedfwError(f"section size {len(data)} is not a multiple of the {HINT.size}-byte "
                          f"struct dvfs_hint (mismatched dvfs_hint.h?)", elf_path, SECTION)
    hints = []
    for i in range(len(data) // HINT.size):
        crit, slack, fmin, mv, dom, name = HINT.unpack_from(data, i * HINT.size)
        hints.append(Hint(_text(name), _text(dom), crit, slack, fmin, mv,
                          f"{SECTION}[{i}]"))
    return hints


def check(table: Table, hints, default_profile: str, elf_path=None) -> list[Hint]:
    """Validate hints against the table; returns them with `domain` resolved.

    A hint's freq_min_mhz must be an OPP (exact MHz) of its domain that the default profile allows,
    and its voltage must not be below that OPP's target. An empty domain means "any": the first
    domain in table order that allows the frequency wins.
    """
    profile = table.profile(default_profile)
    resolved = []
    for h in hints:
        def fail(message, h=h):
            raise SeedfwError(f"hint '{h.name}': {message}", elf_path, h.source or SECTION)

        if not math.isfinite(h.criticality) or not 0.0 <= h.criticality <= 1.0:
            fail(f"criticality {h.criticality} is outside 0.0..1.0")
        hz = h.freq_min_mhz * 1_000_000
        if h.domain:
            dom = table.domain(h.domain)
            if dom is None:
                fail(f"unknown domain '{h.domain}' (known: "
                     f"{', '.join(d.name for d in table.domains)})")
            candidates = [dom]
        else:
            candidates = list(table.domains)
        match = None
        for dom in candidates:
            idx = dom.opp_index(hz)
            if idx is not None and idx in profile.allowed[dom.name]:
                match = (dom, idx)
                break
        if match is None:
            scope = f"domain '{h.domain}'" if h.domain else "any domain"
            exists = any(d.opp_index(hz) is not None for d in candidates)
            why = (f"is not allowed by the default profile '{profile.name}' in {scope}" if exists
                   else f"is not an OPP of {scope}")
            fail(f"freq_min {h.freq_min_mhz} MHz {why}")
        dom, idx = match
        opp = dom.opps[idx]
        if h.voltage_mv * 1000 < opp.uv_target:
            fail(f"voltage {h.voltage_mv} mV is below the {opp.uv_target} µV of domain "
                 f"'{dom.name}' opp[{idx}] ({h.freq_min_mhz} MHz)")
        resolved.append(Hint(h.name, dom.name, h.criticality, h.latency_slack_ns, h.freq_min_mhz,
                             h.voltage_mv, h.source))
    return resolved


# --------------------------------------------------------------------------- build outputs
# (here, not in dvfs.py: the outputs carry the harvested hints, and dvfs.py must not import
# this module, which reads its record layout)

def build_outputs(board, config_values: dict, outdir: str | Path, elf_paths=(),
                  dvfs_file: str | Path | None = None,
                  log: str | Path | None = None) -> dict[str, Path]:
    """The DVFS stage of a build: validate, harvest hints, write the three outputs.

    Writes <outdir>/dvfs/{dvfs.bin, opp.dts, opp.dtb, dvfs_table.h}; returns {"bin", "dts",
    "dtb", "header"} → Path. `dvfs_file` overrides board.dvfs_file (tests).
    """
    table = dvfs.load(dvfs_file if dvfs_file is not None else board.dvfs_file)
    profile = config_values.get("POWER_PROFILE", "balanced")
    hints = []
    for elf in elf_paths:
        hints += check(table, harvest(elf), profile, elf)
    # Sorted: the order of records inside a section is the compiler's choice, not an interface,
    # and the table must be byte-identical across rebuilds.
    table = dvfs.with_hints(table, sorted(hints, key=lambda h: (h.domain, h.name)))
    out = Path(outdir) / "dvfs"
    paths = {"bin": out / "dvfs.bin", "dts": out / "opp.dts", "dtb": out / "opp.dtb",
             "header": out / "dvfs_table.h"}
    write_bytes(paths["bin"], dvfs.encode(table, profile))
    write_text(paths["dts"], dvfs.to_dts(table))
    write_text(paths["header"], dvfs.to_c_header(table, profile))
    with atomic_path(paths["dtb"]) as tmp:
        run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", tmp, paths["dts"]], log=log)
    return paths
