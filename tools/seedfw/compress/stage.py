"""Section compression settings (Kconfig → Settings) and the merged compression.json.

The packages compress what they build, in steps of their own, because where a container goes is
specific to each image: TF-A BL31 (`tfa.compress`, seedfw.compress.bl31) and the BL33 payload
(`payload.compress`). Each such step hands the plan a *fragment* (`<out>/build/compress/
<owner>.json`: the sections it compressed, the file they went into, and the boot image that file
ends up in). The compress part (seedfw.parts.compress) adds one step, `compress.report`, after them: it merges the fragments into
`<out>/compression.json` (one file for the whole build; seedfw.report reads it) and prints the
per-section table (raw, without/with dictionary, dictionary bytes stored, net gain, blocks).

Kconfig symbols read (SYMBOLS): COMPRESS_SECTIONS, COMPRESS_SECTION_LIST, COMPRESS_BLOCK_SIZE,
COMPRESS_HC_LEVEL, COMPRESS_DICT_NONE/TRAINED/FILE/RESIDENT, COMPRESS_DICT_SIZE,
COMPRESS_DICT_PATH, TFA_COMPRESS_RODATA.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from ..paths import ROOT
from .dictionary import Dictionary
from .sections import SectionResult, format_table

SYMBOLS = ("COMPRESS_SECTIONS", "COMPRESS_SECTION_LIST", "COMPRESS_BLOCK_SIZE",
           "COMPRESS_HC_LEVEL", "COMPRESS_DICT_NONE", "COMPRESS_DICT_TRAINED", "COMPRESS_DICT_FILE",
           "COMPRESS_DICT_RESIDENT", "COMPRESS_DICT_SIZE", "COMPRESS_DICT_PATH",
           "TFA_COMPRESS_RODATA")
# The project dictionary: trained offline on other TF-A platforms' .rodata (train.py), so
# "trained" and "file" both use it unless COMPRESS_DICT_PATH names another file.
PROJECT_DICT = "firmware/lz4/dict/aarch64-rodata.dict"
VERSION = "1"


@dataclass(frozen=True)
class Settings:
    """What the compression steps read from Kconfig.

    sections:   COMPRESS_SECTION_LIST split on whitespace
    block_size: COMPRESS_BLOCK_SIZE;  level: COMPRESS_HC_LEVEL
    dict_source: "none", "trained", "file" or "resident"; dict_size: COMPRESS_DICT_SIZE
    dict_path:  the dictionary file relative to the source tree (trained/file), else ""
    """
    sections: tuple[str, ...]
    block_size: int
    level: int
    dict_source: str
    dict_size: int
    dict_path: str

    def dictionary(self) -> Dictionary:
        """The stored dictionary (trained/file), or none. A resident one is made by the image
        that has the resident bytes (only it knows their address)."""
        if self.dict_source in ("none", "resident") or not self.dict_size:
            return Dictionary.none()
        path = Path(self.dict_path)
        d = Dictionary.from_file(path if path.is_absolute() else ROOT / path, self.dict_size)
        return Dictionary(d.data, self.dict_source, d.stored_size, self.dict_path)

    def stamp(self) -> dict:
        """For step inputs: the settings plus the dictionary file's hash (no absolute path)."""
        doc = {"sections": list(self.sections), "block_size": self.block_size, "level": self.level,
               "dict_source": self.dict_source, "dict_size": self.dict_size,
               "dict_path": self.dict_path, "dict_sha256": None}
        if self.dict_path:
            path = Path(self.dict_path)
            path = path if path.is_absolute() else ROOT / path
            doc["dict_sha256"] = util.sha256_file(path) if path.is_file() else None
        return doc


def settings(values: dict, config_file=".config") -> Settings:
    sections = tuple((values.get("COMPRESS_SECTION_LIST") or ".rodata").split())
    if not sections:
        raise SeedfwError("no section named", config_file, "CONFIG_COMPRESS_SECTION_LIST")
    source = next((s.lower() for s in ("NONE", "FILE", "RESIDENT", "TRAINED")
                   if values.get(f"COMPRESS_DICT_{s}")), "trained")
    size = int(values.get("COMPRESS_DICT_SIZE") or 0) if source != "none" else 0
    path = ""
    if source in ("trained", "file") and size:
        path = values.get("COMPRESS_DICT_PATH") or PROJECT_DICT
        full = Path(path) if Path(path).is_absolute() else ROOT / path
        if not full.is_file():
            raise SeedfwError(f"dictionary file {path} not found", config_file,
                              "CONFIG_COMPRESS_DICT_PATH")
    return Settings(sections, int(values.get("COMPRESS_BLOCK_SIZE") or 65536),
                    int(values.get("COMPRESS_HC_LEVEL", 12)), source, size, path)


def check_sections(s: Settings, supported: tuple[str, ...], what: str, config_file) -> None:
    """An image compresses only the sections its boot code knows how to expand: say so."""
    bad = [n for n in s.sections if n not in supported]
    if bad:
        raise SeedfwError(f"{what} can store only {', '.join(supported)} compressed, not "
                          f"{', '.join(bad)}", config_file, "CONFIG_COMPRESS_SECTION_LIST")


# ---- fragments: what each compressing step leaves for the report --------------------------------

def fragment_path(outdir: Path, owner: str) -> Path:
    return Path(outdir) / "build" / "compress" / f"{owner}.json"


def write_fragment(path: Path, owner: str, elf: str, file: str, image: str, s: Settings,
                   dictionary: Dictionary, results: list[SectionResult], extra: dict | None = None
                   ) -> Path:
    """A compressing step's record (written to a staging path; the step installs it).

    elf:   the uncompressed ELF (images/…, for debugging and host-side checksums)
    file:  the file in images/ that carries the containers
    image: the file in images/ a board reads at boot that ends up holding them
    """
    doc = {"owner": owner, "elf": elf, "file": file, "image": image,
           "block_size": s.block_size, "hc_level": s.level,
           "dictionary": _dict_doc(dictionary, any(r.use_dict for r in results)),
           "sections": [dict(r.as_json(), image=image, file=file, elf=elf, owner=owner)
                        for r in results],
           **(extra or {})}
    return util.write_json(path, doc)


def _dict_doc(d: Dictionary, used: bool) -> dict:
    return {"source": d.source, "size": len(d.data), "id": f"0x{d.id:08x}",
            "stored": d.stored_size if (d.data and used) else 0,
            "offered_stored": d.stored_size if d.data else 0, "origin": d.origin}


def merge(fragments: list[dict], s: Settings) -> dict:
    """compression.json: every compressed section of the build, each naming its image."""
    sections = [sec for f in fragments for sec in f["sections"]]
    stored = sum(f["dictionary"]["stored"] for f in fragments)
    no_dict = sum(x["no_dict"] for x in sections)
    with_dict = sum(x["with_dict"] for x in sections)
    return {
        "block_size": s.block_size, "hc_level": s.level,
        "dictionary": {"source": s.dict_source, "size": s.dict_size, "path": s.dict_path,
                       "stored": stored},
        "images": [{k: f[k] for k in ("owner", "elf", "file", "image")} for f in fragments],
        "sections": sections,
        "total": {"raw": sum(x["raw"] for x in sections), "no_dict": no_dict,
                  "with_dict": with_dict, "chosen": sum(x["chosen"] for x in sections),
                  "dict_stored": stored},
    }


def table(doc: dict) -> str:
    """The per-section table of a merged compression.json (compress.sections.format_table's
    columns), one line per section, prefixed with the image it ends up in."""
    lines = []
    for sec in doc["sections"]:
        r = SectionResult(**{k: sec[k] for k in SectionResult.__dataclass_fields__
                             if k != "container"})
        row = format_table([r], Dictionary.none()).splitlines()
        if not lines:
            lines.append(f"{'owner':<8}{row[0]}")
        lines.append(f"{sec['owner']:<8}{row[1]}  -> {sec['image']}")
    return "\n".join(lines)
