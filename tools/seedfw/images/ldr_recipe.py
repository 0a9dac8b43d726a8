"""A maskrom loader recipe: the .ini rkbin's boot_merger reads (e.g. RKBOOT/RK3588MINIALL.ini).

Read strictly, line by line, so that every mistake is one line naming `file:line`: a section, key
or value this module does not understand is an error, never ignored (a loader that silently
differs from what its recipe says would only show on a board). What each key does to the bytes
is in docs/loader.md and seedfw.images.ldr_format.

    [CHIP_NAME]      NAME=RK3588                  chip code in the header
    [VERSION]        MAJOR=1, MINOR=11            header version (MAJOR << 8) | MINOR
    [CODE471_OPTION] NUM, Path1..PathNUM, Sleep   run by the boot ROM first (DDR init)
    [CODE472_OPTION] NUM, Path1..PathNUM, Sleep   then these (the USB plug)
    [LOADER_OPTION]  NUM, LOADER1..LOADERNUM, <each LOADERn's value>=path   written by `ul`
    [OUTPUT]         PATH                         the output file's name
    [SYSTEM]         NEWIDB=true|false            UsbHead / FlashHead RKNS entries, tag LDR
    [FLAG]           471_RC4_OFF, RC4_OFF         scrambling (see ldr_format)
    [BOOT1_PARAM]    WORD_0..WORD_7               words in the RKNS headers

Blob paths are matched to pinned files by file name; the bytes always come from the verified
pinned copy, and a name without a pin is refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError
from . import ldr_format as fmt

MAX_NUM = 16                     # entries per section (the container caps tables at 32)
MAX_LINES = 2000                 # rkbin's recipes are ~40 lines
CODE_KEYS = re.compile(r"^(NUM|Sleep|Path[1-9][0-9]?)$")
LOADER_KEYS = re.compile(r"^(NUM|LOADER[1-9][0-9]?)$")
SECTIONS = {
    "CHIP_NAME": re.compile(r"^NAME$"),
    "VERSION": re.compile(r"^(MAJOR|MINOR)$"),
    "CODE471_OPTION": CODE_KEYS,
    "CODE472_OPTION": CODE_KEYS,
    "LOADER_OPTION": re.compile(r"^.+$"),        # loader names are keys too: checked in _loaders
    "OUTPUT": re.compile(r"^PATH$"),
    "SYSTEM": re.compile(r"^NEWIDB$"),
    "FLAG": re.compile(r"^(471_RC4_OFF|RC4_OFF)$"),
    "BOOT1_PARAM": re.compile(r"^WORD_[0-7]$"),
}
REQUIRED = ("CHIP_NAME", "VERSION", "CODE471_OPTION", "CODE472_OPTION", "LOADER_OPTION", "OUTPUT")
OUTPUT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


@dataclass
class Value:
    text: str
    line: int


@dataclass
class Recipe:
    source: Path | str | None
    sections: dict[str, dict[str, Value]] = field(default_factory=dict)
    section_lines: dict[str, int] = field(default_factory=dict)

    def error(self, message: str, line: int | None = None, fld: str | None = None) -> SeedfwError:
        return SeedfwError(message, self.source, f"line {line}" if line else fld)

    def get(self, section: str, key: str, required: bool = True) -> Value | None:
        v = self.sections.get(section, {}).get(key)
        if v is None and required:
            raise self.error(f"[{section}] has no {key}=", self.section_lines.get(section),
                             f"[{section}] {key}")
        return v

    def integer(self, section: str, key: str, low: int, high: int, default: int | None = None) -> int:
        v = self.get(section, key, default is None)
        if v is None:
            return default
        try:
            n = int(v.text, 0)
        except ValueError:
            raise self.error(f"{key}={v.text}: not a number", v.line) from None
        if not low <= n <= high:
            raise self.error(f"{key}={v.text}: must be {low} to {high}", v.line)
        return n

    def boolean(self, section: str, key: str) -> bool:
        v = self.get(section, key, required=False)
        if v is None:
            return False
        if v.text.lower() not in ("true", "false"):
            raise self.error(f"{key}={v.text}: must be true or false", v.line)
        return v.text.lower() == "true"

    @property
    def output(self) -> str:
        v = self.get("OUTPUT", "PATH")
        if not OUTPUT_NAME.match(v.text):
            raise self.error(f"PATH={v.text}: must be a plain file name (no directories)", v.line)
        return v.text


def parse(text: str, source=None) -> Recipe:
    """The recipe's sections and keys, each with its line; SeedfwError `file:line` otherwise."""
    recipe = Recipe(source)
    section = None
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise recipe.error(f"{len(lines)} lines: not a loader recipe (at most {MAX_LINES})")
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            if section not in SECTIONS:
                raise recipe.error(f"unknown section [{section}] (known: "
                                   f"{', '.join(SECTIONS)})", n)
            if section in recipe.sections:
                raise recipe.error(f"[{section}] appears twice (first at line "
                                   f"{recipe.section_lines[section]})", n)
            recipe.sections[section], recipe.section_lines[section] = {}, n
            continue
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise recipe.error(f"{line[:60]!r} is neither [SECTION] nor KEY=VALUE", n)
        if section is None:
            raise recipe.error(f"{key}= before any [SECTION]", n)
        if not SECTIONS[section].match(key):
            raise recipe.error(f"unknown key {key} in [{section}]", n)
        if key in recipe.sections[section]:
            raise recipe.error(f"{key} appears twice in [{section}] (first at line "
                               f"{recipe.sections[section][key].line})", n)
        if not value:
            raise recipe.error(f"{key}= has no value", n)
        recipe.sections[section][key] = Value(value, n)
    for s in REQUIRED:
        if s not in recipe.sections:
            raise recipe.error(f"no [{s}] section", fld=f"[{s}]")
    _check_counts(recipe)
    return recipe


def _check_counts(recipe: Recipe) -> None:
    """Every PathN / LOADERn within NUM, and every key of [LOADER_OPTION] meaning something."""
    for s in ("CODE471_OPTION", "CODE472_OPTION"):
        num = recipe.integer(s, "NUM", 0, MAX_NUM)
        for key, v in recipe.sections[s].items():
            if key.startswith("Path") and int(key[4:]) > num:
                raise recipe.error(f"{key} but NUM={num}", v.line)
        for i in range(1, num + 1):
            recipe.get(s, f"Path{i}")
    opts = recipe.sections["LOADER_OPTION"]
    num = recipe.integer("LOADER_OPTION", "NUM", 0, MAX_NUM)
    names = {}
    for key, v in opts.items():
        if key.startswith("LOADER") and LOADER_KEYS.match(key):
            if int(key[6:]) > num:
                raise recipe.error(f"{key} but NUM={num}", v.line)
            if not (v.text.isascii() and v.text.isidentifier()) or len(v.text) > fmt.NAME_CHARS:
                raise recipe.error(f"{key}={v.text}: a loader name is 1 to {fmt.NAME_CHARS} "
                                   "letters, digits or _", v.line)
            if v.text in names or LOADER_KEYS.match(v.text):
                raise recipe.error(f"{key}={v.text}: name used twice or reserved", v.line)
            names[v.text] = key
    for i in range(1, num + 1):
        recipe.get("LOADER_OPTION", f"LOADER{i}")
    for key, v in opts.items():
        if not LOADER_KEYS.match(key) and key not in names:
            raise recipe.error(f"unknown key {key} in [LOADER_OPTION] (not NUM, a LOADERn or a "
                               "name a LOADERn gives)", v.line)
    for name, key in names.items():
        recipe.get("LOADER_OPTION", name)


def entry_name(path: str) -> str:
    """boot_merger's entry name for a blob: its file name up to the first '.', at most 20 chars."""
    return Path(path).name.split(".")[0][:fmt.NAME_CHARS]


def blob_paths(recipe: Recipe) -> list[Value]:
    """Every blob path the recipe names, in entry order (471s, 472s, loaders)."""
    out = []
    for s in ("CODE471_OPTION", "CODE472_OPTION"):
        out += [recipe.get(s, f"Path{i}") for i in range(1, recipe.integer(s, "NUM", 0, MAX_NUM) + 1)]
    opts = recipe.sections["LOADER_OPTION"]
    for i in range(1, recipe.integer("LOADER_OPTION", "NUM", 0, MAX_NUM) + 1):
        out.append(opts[opts[f"LOADER{i}"].text])
    return out


def to_loader(recipe: Recipe, blobs: dict[str, Path], pins: dict[str, str],
              release: int) -> fmt.Loader:
    """The loader the recipe describes. `blobs`: file name -> local copy; `pins`: file name ->
    sha256. A path whose file name has no pin, or a copy with other bytes, is refused."""
    data = {}
    for v in blob_paths(recipe):
        name = Path(v.text).name
        if name not in pins or name not in blobs:
            raise recipe.error(f"{v.text} is not a pinned blob (pinned: {', '.join(sorted(pins))})",
                               v.line)
        if name not in data:
            raw = Path(blobs[name]).read_bytes()  # door: a pinned blob, its sha256 checked next
            actual = hashlib.sha256(raw).hexdigest()
            if actual != pins[name]:
                raise recipe.error(f"{v.text}: sha256 {actual} is not the pinned {pins[name]}",
                                   v.line)
            data[name] = raw
        if not entry_name(v.text):
            raise recipe.error(f"{v.text}: no entry name before the first '.'", v.line)
    chip = recipe.get("CHIP_NAME", "NAME")
    try:
        fmt.chip_code(chip.text)
    except SeedfwError as exc:
        raise recipe.error(exc.message, chip.line) from None
    newidb = recipe.boolean("SYSTEM", "NEWIDB")
    boot1 = tuple(recipe.integer("BOOT1_PARAM", f"WORD_{i}", 0, 0xFFFFFFFF, 0)
                  for i in range(fmt.RKNS_BOOT1_WORDS))
    loader = fmt.Loader(chip.text, (recipe.integer("VERSION", "MAJOR", 0, 255),
                                    recipe.integer("VERSION", "MINOR", 0, 255)),
                        release=release, newidb=newidb, rc4_off=recipe.boolean("FLAG", "RC4_OFF"),
                        rc4_471_off=recipe.boolean("FLAG", "471_RC4_OFF"), boot1=boot1)
    for s, etype in (("CODE471_OPTION", fmt.ENTRY_471), ("CODE472_OPTION", fmt.ENTRY_472)):
        sleep = recipe.integer(s, "Sleep", 0, 0xFFFFFFFF, 0)
        for i in range(1, recipe.integer(s, "NUM", 0, MAX_NUM) + 1):
            path = recipe.get(s, f"Path{i}").text
            loader.entries.append(fmt.LoaderEntry(etype, entry_name(path), data[Path(path).name],
                                                  sleep))
    opts = recipe.sections["LOADER_OPTION"]
    for i in range(1, recipe.integer("LOADER_OPTION", "NUM", 0, MAX_NUM) + 1):
        name = opts[f"LOADER{i}"].text
        loader.entries.append(fmt.LoaderEntry(fmt.ENTRY_LOADER, name,
                                              data[Path(opts[name].text).name]))
    if newidb:
        for kinds, what in (((fmt.ENTRY_471, fmt.ENTRY_472), "CODE471 + CODE472 paths"),
                            ((fmt.ENTRY_LOADER,), "loaders")):
            n = sum(e.type in kinds for e in loader.entries)
            if not 1 <= n <= fmt.RKNS_MAX_IMAGES:
                raise recipe.error(f"NEWIDB=true needs 1 to {fmt.RKNS_MAX_IMAGES} {what} for the "
                                   f"RKNS header, the recipe has {n}",
                                   recipe.get("SYSTEM", "NEWIDB").line)
    return loader
