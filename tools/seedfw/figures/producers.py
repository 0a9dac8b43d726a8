"""The figure producers (seedfw.figures.REGISTRY): each reads one kind of figure out of a build
output directory, through the readers the rest of seedfw uses, and returns an integer.

A producer is given the marker's parameters (everything after the producer's name but `board`
and `fmt`); it refuses a missing or unknown parameter, and a build file that lacks what it asks
for, with one SeedfwError line naming the file (and the field) it read.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .. import reading
from ..errors import SeedfwError


class Producer:
    """Base: `params` (required) and `optional` (with defaults) name what a marker passes."""

    name = ""
    params: tuple[str, ...] = ()
    optional: dict[str, str] = {}
    kind = "computed"

    def __init__(self, args: dict[str, str]):
        unknown = sorted(set(args) - set(self.params) - set(self.optional))
        missing = [p for p in self.params if p not in args]
        takes = ", ".join(list(self.params) + [f"{k}={v}" for k, v in self.optional.items()])
        if unknown or missing:
            what = (f"unknown parameter '{unknown[0]}'" if unknown
                    else f"parameter '{missing[0]}' missing")
            raise ValueError(f"{what} (takes: {takes})")
        self.args = {**self.optional, **args}

    def value(self, outdir: Path) -> int:
        raise NotImplementedError

    def file(self, outdir: Path) -> Path:
        """The marker's `file=` inside the output directory (a relative path, no `..`)."""
        rel = PurePosixPath(self.args["file"])
        if rel.is_absolute() or ".." in rel.parts:
            raise SeedfwError(f"file={rel}: not a path inside the build output directory",
                              outdir)
        return Path(outdir) / rel


class FileBytes(Producer):
    """The size of one file of the build, in bytes (computed: its st_size).

    Parameters: file (relative to the build output directory, e.g. images/rk3588-disk.img).
    Example: <!-- figure: file-bytes board=rk3588 file=images/rk3588-disk.img -->134,238,208<!-- /figure -->
    """

    name = "file-bytes"
    params = ("file",)

    def value(self, outdir):
        return reading.refuse_special(self.file(outdir)).st_size


class ElfSectionBytes(Producer):
    """The size (sh_size) of one section of a built ELF (computed, from the section headers
    as seedfw.stats reads them; NOBITS sections count their memory size).

    Parameters: file (an ELF in the build output directory), section (its name, e.g. .rodata).
    """

    name = "elf-section-bytes"
    params = ("file", "section")

    def value(self, outdir):
        from .. import stats
        path = self.file(outdir)
        for s in stats.read_elf(path, top=0)["sections"]:
            if s["name"] == self.args["section"]:
                return s["size"]
        raise SeedfwError(f"no section {self.args['section']}", path, "sections")


class ElfLoadBytes(Producer):
    """The bytes a loader copies from a built ELF: the sum of its PT_LOAD segments' FileSiz
    (computed, from the program headers, read through seedfw.stats.open_elf; an ELF without
    section headers, as the build's bl31-lz4.elf, is read too).

    Parameters: file (an ELF in the build output directory).
    """

    name = "elf-load-bytes"
    params = ("file",)
    MAX_SEGMENTS = 4096                 # seedfw.stats ELF_CAPS["segments"]

    def value(self, outdir):
        from ..stats import open_elf
        path = self.file(outdir)
        with open_elf(path) as (elf, h):
            phdr = h["lay"]["phdr"]
            if not h["phoff"] or not h["phnum"] or h["phentsize"] != phdr.size:
                raise SeedfwError("no program headers of this ELF class", path, "e_phnum")
            if h["phnum"] > self.MAX_SEGMENTS:
                raise SeedfwError(f"{h['phnum']} segments (cap {self.MAX_SEGMENTS})", path,
                                  "e_phnum")
            raw = elf.read(h["phoff"], h["phnum"] * phdr.size,
                           f"program header table ({h['phnum']} entries)")
            loads = [f[5] if h["bits"] == 64 else f[4] for f in phdr.iter_unpack(raw)
                     if f[0] == 1]                                     # PT_LOAD, p_filesz
        if not loads:
            raise SeedfwError("no LOAD segments", path, "program headers")
        return sum(loads)


class CompressedSection(Producer):
    """One figure of a compressed section from the build's `compression.json` (computed: the
    compressor's own output).

    Parameters: owner (tfa, payload), section (e.g. .rodata), value (raw, chosen, no_dict,
    with_dict, dict_stored, net_gain).
    """

    name = "compressed-section"
    params = ("owner", "section", "value")
    VALUES = ("raw", "chosen", "no_dict", "with_dict", "dict_stored", "net_gain")

    def value(self, outdir):
        path = Path(outdir) / "compression.json"
        doc = reading.loads_json_strict(reading.read_bytes(path, "json"), path)
        field = self.args["value"]
        if field not in self.VALUES:
            raise SeedfwError(f"value={field}: not one of {', '.join(self.VALUES)}", path)
        sections = doc.get("sections") if isinstance(doc, dict) else None
        for i, s in enumerate(sections if isinstance(sections, list) else ()):
            if isinstance(s, dict) and (s.get("owner"), s.get("name")) == \
                    (self.args["owner"], self.args["section"]):
                got = s.get(field)
                if not isinstance(got, int) or isinstance(got, bool):
                    raise SeedfwError(f"not an integer: {got!r}", path, f"sections[{i}].{field}")
                return got
        raise SeedfwError(f"no section {self.args['section']} of {self.args['owner']}", path,
                          "sections")


class EmulatedPhase(Producer):
    """One count of a boot phase from a counted QEMU run's document (measured, emulated:
    `invoke run --counters` / `invoke ci` write `counters/emulated-<run>.json`; with -icount
    shift=0 two runs of one image count the same, docs/counters.md "Determinism").

    Parameters: phase (bl1, bl2, bl31, u-boot, u-boot-relocated, payload, ...), value
    (`instructions`, or REGION.load_bytes / REGION.store_bytes for a board.yaml memory region,
    e.g. dram.load_bytes; a region the phase never touched counts 0), run (default run; boot for
    `invoke boot --counters`). A phase's `excluded` counts vary and are never a figure.
    rk3588's Linux phases on QEMU virt are not deterministic in instructions or DRAM bytes (the
    disk's completions arrive at the host's pace): only their PCIe rows are marked
    (docs/counters.md "rk3588 in QEMU virt").
    """

    name = "emulated-phase"
    params = ("phase", "value")
    optional = {"run": "run"}
    kind = "measured (emulated)"

    def value(self, outdir):
        path = Path(outdir) / "counters" / f"emulated-{self.args['run']}.json"
        doc = reading.loads_json_strict(reading.read_bytes(path, "json"), path)
        phase = self.args["phase"]
        try:
            p = doc["readings"]["phases"][phase]
            declared = {r["name"] for r in doc["settings"]["regions"]}
        except (KeyError, TypeError):
            raise SeedfwError(f"no phase '{phase}'", path, "readings.phases") from None
        field = self.args["value"]
        if field == "instructions":
            got, where = p.get("instructions"), f"readings.phases.{phase}.instructions"
        else:
            region, _, what = field.partition(".")
            if region not in declared or what not in ("load_bytes", "store_bytes"):
                raise SeedfwError(f"value={field}: not instructions or REGION.load_bytes|"
                                  f"store_bytes of a region ({', '.join(sorted(declared))})",
                                  path, "settings.regions")
            got = ((p.get("regions") or {}).get(region) or {}).get(what, 0)
            where = f"readings.phases.{phase}.regions.{region}.{what}"
        if not isinstance(got, int) or isinstance(got, bool):
            raise SeedfwError(f"not an integer: {got!r}", path, where)
        return got


class EmulatedDma(Producer):
    """Device DMA of a counted QEMU run, from its document's `readings.dma` (measured, emulated:
    QEMU's virtio-blk trace events, nsectors x 512 B, seedfw.counters.emulated). Which blocks
    the guest asks for follows the image, not the host: two counted rk3588 boots on QEMU virt
    moved the same bytes in the same number of requests while their instruction counts differed
    (docs/counters.md "rk3588 in QEMU virt").

    Parameters: value (reads, read_bytes, writes, write_bytes), device (default virtio-blk), run
    (default boot: `invoke boot --counters` and `invoke ci`'s OS boot; run for `invoke run`).
    """

    name = "emulated-dma"
    params = ("value",)
    optional = {"device": "virtio-blk", "run": "boot"}
    kind = "measured (emulated)"
    VALUES = ("reads", "read_bytes", "writes", "write_bytes")

    def value(self, outdir):
        path = Path(outdir) / "counters" / f"emulated-{self.args['run']}.json"
        doc = reading.loads_json_strict(reading.read_bytes(path, "json"), path)
        field, device = self.args["value"], self.args["device"]
        if field not in self.VALUES:
            raise SeedfwError(f"value={field}: not one of {', '.join(self.VALUES)}", path)
        try:
            got = doc["readings"]["dma"][device][field]
        except (KeyError, TypeError):
            raise SeedfwError(f"no DMA count {field} of {device}", path,
                              f"readings.dma.{device}") from None
        if not isinstance(got, int) or isinstance(got, bool):
            raise SeedfwError(f"not an integer: {got!r}", path, f"readings.dma.{device}.{field}")
        return got
