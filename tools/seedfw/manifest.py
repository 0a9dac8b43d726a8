"""The build manifest (<out>/manifest.json) as one type: `Manifest`, the only reader of that file.

Why one reader: the manifest is the contract between the build and everything that comes after
it (run, flash, report, tune, counters, inspect). It used to be parsed in eight places, each with
its own checks and its own idea of a missing field; a malformed manifest was a different error (or
a KeyError) depending on who read it first. Now it is read once per file version, through the
door (reading.py: regular file, 16 MiB, depth 64, finite numbers), validated against
schema/manifest-v1.json (jsonschema), and handed out as typed objects:

    m = Manifest.load(outdir)                 # or Manifest.find(outdir) -> None when not built
    m.board, m.build_id, m.config_hash, m.non_functional
    m.artifacts                               # [Artifact], in manifest order
    m.by_role("loader"), m.by_path(image)     # an artifact by part role / by file
    m.qemu_loads("firmware")                  # what QEMU loads itself in a run mode
    m.flash_default("rockusb")                # what `invoke flash` programs without --image
    m.boot_chain()                            # what the board reads from storage at boot
    m.sbom                                    # [SbomFile]: the SBOM documents the build wrote

Each Artifact carries name, path (relative to the output directory), size, sha256, its roles and
a typed `Placement` (storage, offset, partition, load_addr, path). The writer (build.write_manifest)
is gaining `roles` and `placement` per entry; until it writes them, they are derived from the
boot declaration (`declared`) where that is unambiguous — the partition and QEMU's load address —
and the rest stays None (the free-text `location` is for people, never parsed).

A schema violation is one SeedfwError naming the manifest and the field of the schema node that
carries an `x-error` message (so `artifacts[0].declared.qemu: not a QEMU load declaration ...`,
whichever key inside it is wrong). Report-only legacy keys (`images`, `models`, `elfs`) are
checked for shape here and read by seedfw.report.inputs from `Manifest.doc`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SeedfwError
from . import reading

NAME = "manifest.json"
SCHEMA_FILE = Path(__file__).with_name("schema") / "manifest-v1.json"


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())  # door: the package's own schema file


@dataclass(frozen=True)
class Placement:
    """Where an artifact lives on the target: `storage` (e.g. "mmc", "spi-nor", "pflash"),
    `offset` (bytes from the start of that storage), `partition` (a disk partition's name),
    `load_addr` (where it is loaded in memory), `path` (inside a partition's filesystem).
    None = not declared (never guessed)."""

    storage: str | None = None
    offset: int | None = None
    partition: str | None = None
    load_addr: int | None = None
    path: str | None = None


@dataclass(frozen=True)
class SbomFile:
    """One SBOM document the build wrote (manifest "sbom", seedfw.sbom.listing): its format
    ("CycloneDX 1.6", "SPDX 3.0.1"), path relative to the output directory, size and sha256."""

    format: str
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class QemuLoad:
    """How QEMU loads an artifact itself (seedfw.run.qemu.LOADS), in which run modes, where."""

    load: str
    modes: tuple[str, ...]
    addr: int | None


@dataclass(frozen=True)
class Artifact:
    """One manifest entry. `use` is the manifest's own class of the file ("boot": read from
    storage at boot; "debug": an ELF; "aux": anything else); `roles` what the file is to the
    parts ("kernel", "loader", "disk", ...); `declared` the part's boot declaration as written
    (read_by, location: for people), `qemu` how QEMU loads it (None: never by itself)."""

    index: int
    name: str
    path: str
    size: int | None
    sha256: str | None
    use: str
    roles: tuple[str, ...]
    placement: Placement
    functional: bool = True
    qemu: QemuLoad | None = None
    flash: tuple[str, ...] = ()
    at_boot: bool = False
    read_by: str = ""
    location: str = ""
    declared: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def role(self) -> str:
        """The first (primary) role, "" when the entry declares none."""
        return self.roles[0] if self.roles else ""

    @property
    def where(self) -> str:
        """This entry's field in the manifest, for error lines."""
        return f"artifacts[{self.index}]"


def _entry(i: int, a: dict) -> Artifact:
    declared = a.get("declared") or {}
    q = declared.get("qemu")
    qemu = QemuLoad(q["load"], tuple(q["modes"]), q.get("addr")) if q else None
    if isinstance(a.get("placement"), dict):
        p = a["placement"]
        placement = Placement(p.get("storage"), p.get("offset"), p.get("partition"),
                              p.get("load_addr"), p.get("path"))
    else:       # today's writer: what the declaration says without reading prose
        placement = Placement(partition=declared.get("partition"),
                              load_addr=qemu.addr if qemu else None)
    roles = tuple(a["roles"]) if "roles" in a else \
        ((declared["role"],) if declared.get("role") else ())
    return Artifact(i, a.get("name") or Path(a["path"]).name, a["path"], a.get("size"),
                    a.get("sha256"), a.get("role") or "", roles, placement,
                    a.get("functional") is not False, qemu, tuple(declared.get("flash") or ()),
                    bool(declared.get("at_boot")), declared.get("read_by") or "",
                    declared.get("location") or "", declared)


def _field(error, root: dict) -> tuple[str, str]:
    """(message, field) of a jsonschema error: the `x-error` of the deepest schema node on the
    error's path that has one, and the instance path down to that node."""
    node, where, depth, message, at = root, list(error.absolute_path), 0, None, ""
    keys = list(error.absolute_schema_path)

    def path_to(n: int) -> str:
        out = ""
        for p in where[:n]:
            out += f"[{p}]" if isinstance(p, int) else (f".{reading.plain(p)}" if out
                                                         else reading.plain(p))
        return out

    if isinstance(node, dict) and "x-error" in node:
        message, at = node["x-error"], ""
    i = 0
    while i < len(keys) and isinstance(node, dict):
        key = keys[i]
        if key in ("properties", "patternProperties") and i + 1 < len(keys):
            node, i, depth = node[key][keys[i + 1]], i + 2, depth + 1
        elif key in ("items", "additionalProperties"):
            node, i, depth = node[key], i + 1, depth + 1
        else:
            break
        if isinstance(node, dict) and "x-error" in node:
            message, at = node["x-error"], path_to(depth)
    if message is None:
        message = reading.plain(error.message) if len(error.message) < 200 \
            else f"breaks {SCHEMA_FILE.name}"
        at = path_to(len(where))
    return message, at


# Entries in one list or map of a manifest (a build writes ~40 artifacts): a hostile 16 MiB
# manifest of a million entries is refused before the schema walks it.
MAX_ENTRIES = 4096


def validate(doc, path: Path) -> dict:
    """`doc` if it matches the manifest schema, else one SeedfwError naming path and field."""
    import jsonschema
    for key, value in (doc.items() if isinstance(doc, dict) else ()):
        if isinstance(value, (list, dict)) and len(value) > MAX_ENTRIES:
            raise SeedfwError(f"{len(value)} entries is over the limit of {MAX_ENTRIES}", path,
                              reading.plain(key))
    validator = jsonschema.Draft202012Validator(schema())
    # The first error, not best_match: that one would collect every error of the document.
    error = next(validator.iter_errors(doc), None)
    if error is not None:
        message, at = _field(error, schema())
        raise SeedfwError(message, path, at or None)
    return doc


@functools.lru_cache(maxsize=16)
def _parse(path: str, _version: tuple) -> dict:
    """The validated document of one file version (`_version`: inode, size, mtime): one parse
    per version however many readers a command has (flash asks three times)."""
    p = Path(path)
    return validate(reading.loads_json_strict(reading.read_bytes(p, "json"), p), p)


class Manifest:
    """A validated <out>/manifest.json (see the module doc)."""

    def __init__(self, doc: dict, path: Path):
        self.doc = doc
        self.path = Path(path)
        self.outdir = self.path.parent
        self.artifacts = [_entry(i, a) for i, a in enumerate(doc.get("artifacts") or ())]

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def load_file(cls, path) -> "Manifest":
        path = Path(path)
        st = reading.refuse_special(path)
        return cls(_parse(str(path), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)),
                   path)

    @classmethod
    def load(cls, outdir, missing: str | None = None) -> "Manifest":
        """<outdir>/manifest.json; absent = one error line (`missing`, or "not built yet")."""
        path = Path(outdir) / NAME
        if not path.exists():
            raise SeedfwError(missing or "not built yet (run the build first)", path)
        return cls.load_file(path)

    @classmethod
    def find(cls, outdir) -> "Manifest | None":
        """The manifest of an output directory, or None when it has none (not built)."""
        path = Path(outdir) / NAME
        return cls.load_file(path) if path.exists() else None

    @classmethod
    def beside(cls, image, levels: int = 3) -> "Manifest | None":
        """The manifest of the build an image came from: beside it or up to `levels` folders up
        (images sit in <out>/images/, some in a sub-folder of it); None for a loose image."""
        for folder in list(Path(image).resolve().parents)[:levels]:
            if (folder / NAME).is_file():
                return cls.load_file(folder / NAME)
        return None

    # -- the build -------------------------------------------------------------------------------
    @property
    def board(self) -> str | None:
        return self.doc.get("board")

    @property
    def build_id(self) -> str | None:
        return self.doc.get("build_id")

    @property
    def config_hash(self) -> str | None:
        return self.doc.get("config_hash")

    @property
    def non_functional(self) -> dict[str, str]:
        """{file name: why} of placeholder images (built with missing blobs)."""
        return dict(self.doc.get("non_functional") or {})

    # -- artifacts -------------------------------------------------------------------------------
    def file(self, artifact: Artifact) -> Path:
        return self.outdir / artifact.path

    def present(self, artifact: Artifact) -> bool:
        return self.file(artifact).is_file()

    def by_role(self, role: str, present: bool = False) -> list[Artifact]:
        """Artifacts whose roles include `role`, in manifest order (`present`: the file exists)."""
        return [a for a in self.artifacts if role in a.roles and (not present or self.present(a))]

    def by_path(self, image) -> Artifact | None:
        """The entry of a file (compared after resolving links), or None."""
        real = os.path.realpath(image)
        return next((a for a in self.artifacts if os.path.realpath(self.file(a)) == real), None)

    def by_name(self, name: str) -> Artifact | None:
        return next((a for a in self.artifacts if a.name == name), None)

    def qemu_loads(self, mode: str | None = None) -> list[Artifact]:
        """Artifacts QEMU loads itself (in `mode`, or in any mode), in manifest order."""
        return [a for a in self.artifacts
                if a.qemu is not None and (mode is None or mode in a.qemu.modes)]

    def flash_default(self, backend: str) -> list[Path]:
        """The files `invoke flash` programs for `backend` without --image (manifest "flash",
        in order), as paths; the caller takes the first present one."""
        return [self.outdir / p for p in (self.doc.get("flash") or {}).get(backend) or ()]

    @property
    def sbom(self) -> list[SbomFile]:
        """The SBOM documents the build listed, in manifest order ([] for a build before the
        manifest listed them)."""
        return [SbomFile(e.get("format") or "", e["path"], e["size"], e["sha256"])
                for e in self.doc.get("sbom") or ()]

    def boot_chain(self) -> list[Artifact]:
        """What the board reads from storage at boot (manifest class "boot"), in order."""
        return [a for a in self.artifacts if a.use == "boot"]
