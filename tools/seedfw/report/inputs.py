"""Adapters: read what the other stages left in an output directory, tolerating absence.

Each reader returns `(data, note)`: data is None when the input is absent or unusable, and note
then says why ("not available: <why>"), so the report can omit the section and say so instead
of failing. Field names are looked up through small alias lists because the producing stages
(images, compression, models, counters) are developed alongside; the aliases accepted are listed
in each docstring and in /work/notes/readme-report.md. A present but malformed JSON file is not
silently skipped: it raises SeedfwError naming the file (bad input must be loud).

Every document is read through the door (reading.py: regular files only, 16 MiB, depth
64, strict numbers: `load_json`) and its fields are type-checked (report/fields.py) before a
section sees them: a string where a count belongs is `error: <file>: <field>: must be ...`.
Paths a manifest names are confined to the output directory (`inside`).
"""

from __future__ import annotations

from pathlib import Path

from .. import util
from ..errors import SeedfwError
from .. import reading
from ..paths import ROOT
from . import provenance as report_provenance
from .fields import check

ELF_MACHINES = ("AArch64", "ARM")   # target ELFs; host tools in a build tree (fiptool) are skipped
# Identifiers and settings in a counters JSON written before documents had `settings`
# (stats block header, DFI configuration, sampling interval, declared counter frequency): shown
# by `invoke counters`, but they are not measurements.
NOT_COUNTERS = {"magic", "version", "ddr_type", "burst_length", "bus_width", "address",
                "interval_ms", "cycle_hz"}


def not_available(why: str) -> str:
    return f"not available: {why}"


def pick(d: dict, *keys, default=None):
    """First present key of `keys` in d (the alias lists of the producers' formats)."""
    for k in keys:
        if isinstance(d, dict) and k in d and d[k] is not None:
            return d[k]
    return default


def load_json(path: Path, spec=None):
    """A JSON document through the door (reading.loads_json_strict: size, depth, finite
    numbers), checked against `spec` (report/fields.py) when one is given."""
    data = reading.loads_json_strict(reading.read_bytes(path, "json"), path)
    return data if spec is None else check(data, spec, path)


def inside(outdir: Path, rel, source, field: str) -> Path:
    """<outdir>/rel for a relative path a document names; an absolute path or one that leaves
    the directory (`..`, a symlink out) is refused: a manifest must not make the report read
    /etc/shadow or a device."""
    check(rel, "str", source, field)
    path = Path(outdir) / rel
    root = Path(outdir).resolve()
    if Path(rel).is_absolute() or not path.resolve().is_relative_to(root):
        raise SeedfwError("names a path outside the output directory: refused", source, field)
    return path


def read_json_input(path: Path, what: str, spec=None):
    """(parsed, None) or (None, 'not available: …') when the file does not exist."""
    if not path.exists():
        return None, not_available(f"{what} ({path.name} not found)")
    return load_json(path, spec), None


# The symbols the report reads (others are shown nowhere): what each must be.
CONFIG_FIELDS = {"BOARD?": "str?", "BUILD_ID?": "str?", "KERNEL_PACKAGE?": "str?",
                 "COMPRESS_HC_LEVEL?": "count?", "MODELS_COMPRESS?": "any"}


def read_config(outdir: Path):
    """<out>/config.json (seedfw.config.configure writes it): symbol → value."""
    path = outdir / "config.json"
    data, note = read_json_input(path, "configuration")
    if data is not None and not isinstance(data, dict):
        raise SeedfwError("must be a JSON object of symbol values", path)
    where = ""
    if isinstance(data, dict) and isinstance(data.get("values"), dict):
        data, where = data["values"], "values"
    if data is not None:
        check(data, CONFIG_FIELDS, path, where)
        if data.get("COMPRESS_HC_LEVEL") is not None and data["COMPRESS_HC_LEVEL"] > 16:
            raise SeedfwError("must be an LZ4 HC level from 0 to 16", path, "COMPRESS_HC_LEVEL")
    return data, note


MANIFEST_FIELDS = {"board?": "str?", "build_id?": "str?", "non_functional?": {"*": "str"}}
# Per entry of manifest images/artifacts, whichever alias it uses.
ENTRY_FIELDS = {"file?": "str?", "path?": "str?", "filename?": "str?", "name?": "str?",
                "sha256?": "str?", "size?": "count?", "bytes?": "count?", "format?": "str?",
                "type?": "str?", "role?": "str?", "blob?": "str?", "raw_size?": "count?",
                "compressed_size?": "count?", "stored_size?": "count?"}


def read_manifest(outdir: Path):
    """<out>/manifest.json from the image stage, read and schema-checked by seedfw.manifest
    (the one reader); the aliased entry fields the report also accepts are type-checked here.
    Returns (the document, None) or (None, 'not available: …')."""
    from ..manifest import Manifest
    path = outdir / "manifest.json"
    if not path.exists():
        return None, not_available("image manifest (manifest.json not found)")
    data = Manifest.load_file(path).doc
    check(data, MANIFEST_FIELDS, path)
    for key in ("images", "artifacts", "models", "elfs"):
        for i, entry in enumerate(_manifest_entries(data, key)):
            check(entry, ENTRY_FIELDS, path, f"{key}[{i}]")
    return data, None


def _manifest_entries(manifest: dict | None, key: str) -> list[dict]:
    """manifest[key] as a list of dicts; accepts a list of objects or {name: object}."""
    if not manifest:
        return []
    value = manifest.get(key)
    if isinstance(value, dict):
        return [dict(v, name=pick(v, "name", default=k)) for k, v in value.items()
                if isinstance(v, dict)]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _entry_file(entry: dict) -> str | None:
    name = pick(entry, "file", "path", "filename", "name")
    return Path(name).name if isinstance(name, str) else None


def list_images(outdir: Path, manifest: dict | None):
    """Files in <out>/images/ with size and sha256 computed from the bytes, plus what the
    manifest says about each (manifest `images`: list of {file|path|name, size, sha256, format,
    load_address, role} or {name: {...}}; role "boot" = read from storage at boot, "debug",
    "aux": seedfw.build.write_manifest)."""
    images_dir = outdir / "images"
    if not images_dir.is_dir():
        return None, not_available("no images (images/ not found; run 'invoke build')")
    by_file = {_entry_file(e): e for e in _manifest_entries(manifest, "images") +
               _manifest_entries(manifest, "artifacts")}
    # ccache.json records how the build ran (its compiler cache hits), not what it made: it is
    # the report's "cache" section, not an image, and differs between a cold and a warm cache.
    from ..cache.ccache import STATS_FILE
    rows = []
    root = outdir.resolve()
    for path in sorted(p for p in images_dir.rglob("*") if p.is_file()
                       and not p.name.startswith(".") and p.name != STATS_FILE
                       and p.resolve().is_relative_to(root)):
        entry = by_file.get(path.name, {})
        rows.append(dict(file=str(path.relative_to(images_dir)), path=path,
                         size=path.stat().st_size, sha256=util.sha256_file(path),
                         manifest_sha256=pick(entry, "sha256"),
                         manifest_size=pick(entry, "size", "bytes"),
                         format=pick(entry, "format", "type") or sniff_format(path),
                         role=pick(entry, "role"), in_manifest=bool(entry)))
    if not rows:
        return None, not_available("images/ is empty")
    return rows, None


_MAGICS = ((b"\x7fELF", "elf"), (b"\xd0\x0d\xfe\xed", "fit"), (b"SLZ4", "lz4blk"),
           (b"\x27\x05\x19\x56", "uimage"))


def sniff_format(path: Path) -> str:
    """Format from the first bytes when the manifest does not say: elf, fit (any FDT blob),
    lz4blk (our container), uimage, else 'raw'."""
    head = reading.head(path, 4)
    return next((name for magic, name in _MAGICS if head == magic), "raw")


def find_elfs(outdir: Path, manifest: dict | None = None) -> list[Path]:
    """Target ELFs of a build: the ones it declares, never a walk of the directory (a build
    tree holds ELFs that are not the product: the MCU's negative-control flash algorithm
    build/mcu/flashalgo/algo-broken.elf, host tools, intermediate links). Manifest `elfs` (a
    legacy list of paths relative to <out>, or objects with path/file), else the manifest's
    `artifacts` (seedfw.manifest: the build's declared outputs) whose file is an executable or
    shared object for ARM/AArch64, in manifest order, one per content hash. No manifest: none."""
    from .. import stats
    listed = _manifest_entries(manifest, "elfs") or [
        {"path": p} for p in (manifest or {}).get("elfs", []) if isinstance(p, str)]
    if listed:
        paths = [inside(outdir, pick(e, "path", "file"), outdir / "manifest.json", f"elfs[{i}]")
                 for i, e in enumerate(listed) if pick(e, "path", "file")]
        return [p for p in paths if p.is_file()]
    found, seen = [], set()
    for i, entry in enumerate(_manifest_entries(manifest, "artifacts")):
        rel = pick(entry, "path", "file")
        if rel is None:
            continue
        path = inside(outdir, rel, outdir / "manifest.json", f"artifacts[{i}]")
        if not path.is_file() or reading.head(path, 4) != b"\x7fELF":
            continue
        try:
            info = stats.read_elf(path, top=0)["elf"]
        except SeedfwError:
            continue
        if info["type"] not in ("EXEC", "DYN") or info["machine"] not in ELF_MACHINES:
            continue
        digest = util.sha256_file(path)
        if digest not in seen:
            seen.add(digest)
            found.append(path)
    return found


COMPRESSION_TOP = {"block_size?": "count?", "image?": "str?", "elf?": "str?",
                   "dictionary?": "any"}
COMPRESSION_FIELDS = {
    **{k: "str?" for k in ("name?", "section?", "owner?", "image?", "elf?")},
    **{k: "count?" for k in ("raw?", "raw_bytes?", "original_size?", "uncompressed?",
                             "with_dict?", "compressed_dict?", "no_dict?", "compressed_no_dict?",
                             "chosen?", "compressed?", "compressed_bytes?", "dict_stored?",
                             "dict_bytes?", "dictionary_bytes?", "blocks?", "block_count?",
                             "block_size?")},
    "net_gain?": "number?", "use_dict?": "any"}


def read_compression(outdir: Path):
    """<out>/compression.json (seedfw.compress.sections.write_report): top level {elf,
    block_size, dictionary {source, size, stored}, sections [...], total}; per section
    {name|section, raw|raw_bytes|original_size, no_dict|compressed_no_dict, with_dict|
    compressed_dict, chosen|compressed|compressed_bytes (bytes actually stored), dict_stored|
    dict_bytes|dictionary_bytes, use_dict, blocks|block_count, image|elf, owner (the package
    that compressed it, optional)}. A section that does
    not use the dictionary is charged no dictionary bytes. Returns (rows, summary, note);
    summary = {dictionary, dict_total}: the dictionary stored once for all sections that use it
    (what one image sharing one dictionary pays)."""
    path = outdir / "compression.json"
    data, note = read_json_input(path, "compression results")
    if data is None:
        return None, None, note
    entries = _manifest_entries(data, "sections") if isinstance(data, dict) else \
        [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    top = check(data if isinstance(data, dict) else {}, COMPRESSION_TOP, path)
    rows = []
    for i, e in enumerate(entries):
        check(e, COMPRESSION_FIELDS, path, f"sections[{i}]")
        raw = pick(e, "raw", "raw_bytes", "original_size", "uncompressed")
        with_dict = pick(e, "with_dict", "compressed_dict")
        stored = pick(e, "chosen", "compressed", "compressed_bytes", default=with_dict)
        if not isinstance(raw, int) or not isinstance(stored, int):
            raise SeedfwError("needs integer raw and compressed (chosen) byte counts", path,
                              f"sections[{i}]")
        uses_dict = pick(e, "use_dict", default=True)
        dict_bytes = pick(e, "dict_stored", "dict_bytes", "dictionary_bytes", default=0)
        owner = pick(e, "owner")
        name = pick(e, "section", "name", default=f"#{i}")
        # one build may compress the same section of several images (BL31's and the payload's
        # .rodata): the owner tells them apart in every table
        rows.append(dict(section=f"{owner} {name}" if owner else name, owner=owner,
                         image=pick(e, "image", "elf", default=pick(top, "image", "elf")),
                         raw=raw, compressed=stored, compressed_dict=with_dict,
                         compressed_no_dict=pick(e, "no_dict", "compressed_no_dict"),
                         dict_bytes=dict_bytes if uses_dict else 0, uses_dict=bool(uses_dict),
                         dict_net_gain=pick(e, "net_gain"),
                         blocks=pick(e, "blocks", "block_count"),
                         block_size=pick(e, "block_size", default=pick(top, "block_size"))))
    if not rows:
        return None, None, not_available(f"{path.name} lists no compressed sections")
    dictionary = top.get("dictionary") if isinstance(top.get("dictionary"), dict) else None
    if dictionary is not None:
        check(dictionary, {"stored?": "count?", "bytes?": "count?", "size?": "count?"}, path,
              "dictionary")
    stored_once = pick(dictionary or {}, "stored", "bytes", "size")
    if isinstance(stored_once, int):
        dict_total = stored_once if any(r["uses_dict"] and r["dict_bytes"] for r in rows) else 0
    else:
        dict_total = sum(r["dict_bytes"] for r in rows)
    return rows, dict(dictionary=dictionary, dict_total=dict_total), None


def read_decompress_speed(outdir: Path, config: dict | None = None, bench=None):
    """(cycles/byte of the decompressor the build links, the host's figure or None), as figure
    dicts: the first is seedfw.compress.decoder_speed.board_estimate (the documented constant,
    estimated: no benchmark cache is read, so the report depends on the build only); the second
    is `bench`, a bench/lz4_speed.py result given on the command line (--decoder-bench),
    measured on the host and labelled so (decoder_speed.host_figure). The linked variant comes
    from config LZ4_DECODER_* (<out>/config.json when not given)."""
    from ..compress import decoder_speed
    if config is None:
        config, _ = read_config(outdir)
    host = decoder_speed.host_figure(Path(bench), config) if bench else None
    return decoder_speed.board_estimate(config), host


def read_models(outdir: Path, manifest: dict | None):
    """Model blobs in the output directory: manifest `models` ({name, file|path (relative to
    <out>), size|bytes, compressed_size|stored_size, type}), else the files in <out>/models/.
    Nothing outside the output directory (the board's models.yaml, the model cache) is read: the
    report is a function of the build output. Each row's `synthetic` is
    seedfw.models.synthetic_marker of the blob (None: not synthetic, or no blob to look at)."""
    rows = []
    for i, e in enumerate(_manifest_entries(manifest, "models")):
        rel = pick(e, "file", "path", "blob")
        path = inside(outdir, rel, outdir / "manifest.json", f"models[{i}]") \
            if rel is not None else None
        size = pick(e, "size", "bytes", "raw_size")
        if size is None and path is not None and path.is_file():
            size = path.stat().st_size
        if not isinstance(size, int):
            continue
        found = path if path is not None and path.is_file() else None
        rows.append(dict(name=pick(e, "name", default=Path(rel or "?").name), size=size,
                         compressed_size=pick(e, "compressed_size", "stored_size"),
                         path=found, synthetic=_synthetic(found, pick(e, "type"))))
    if not rows and (outdir / "models").is_dir():
        for path in sorted(p for p in (outdir / "models").iterdir() if p.is_file()):
            rows.append(dict(name=path.name, size=path.stat().st_size, compressed_size=None,
                             path=path, synthetic=_synthetic(path)))
    if not rows:
        return None, not_available("no models (no images/models.json, manifest has no "
                                   "'models', no models/ dir)")
    return rows, None


def _synthetic(path: Path | None, type_: str | None = None) -> str | None:
    """seedfw.models.synthetic_marker of a blob file (type from the manifest, else the suffix)."""
    from .. import models
    if path is None:
        return None
    return models.synthetic_marker(type_ or path.suffix.lstrip("."),
                                   reading.read_input(path, "image"))


def read_counters(path: Path | None):
    """A counters JSON (`invoke counters --json`: {provenance, settings, readings}, see
    seedfw.counters.provenance) → ({provenance, settings, counters}, None). Every numeric leaf
    of `readings` becomes a measured figure named by its JSON path (e.g. 'bytes_decompressed',
    'channels.0.read_bytes') carrying the document's provenance; unit guessed from the name
    (byte, cycle, ns). `settings` are returned apart and never become figures.
    A flat document (older `invoke counters`, or a hand-made file) is read whole except the
    identifiers and settings in NOT_COUNTERS, with provenance unknown."""
    if path is None:
        return None, not_available("no counters given (--counters FILE from 'invoke counters "
                                   "--json')")
    path = Path(path)
    if path.is_dir():
        raise SeedfwError("is a directory, not a counters JSON (from 'invoke counters --json')",
                          path)
    if not path.is_file():
        raise SeedfwError("no such file", path)
    data = load_json(path)
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(schema, str):
        # Our other JSON documents (stats, report, diff) are full of numbers too; taken as
        # counters they would be shown as measurements.
        raise SeedfwError(f"is a {schema} document, not counters from 'invoke counters --json'",
                          path, "schema")
    prov, settings, readings = _counters_parts(data, path)
    fig_prov = report_provenance.for_figure(prov)
    out = []

    def walk(node, prefix):
        if isinstance(node, bool) or prefix.rsplit(".", 1)[-1] in NOT_COUNTERS:
            return
        if isinstance(node, (int, float)):
            if node < 0:            # counters count: a negative one is a broken document
                raise SeedfwError(f"must not be negative ({node:g})", path,
                                  f"readings.{reading.plain(prefix)}" if prefix else "readings")
            fig = dict(name=prefix, value=node, kind="measured", source=path.name,
                       unit=_guess_unit(prefix), provenance=fig_prov)
            if fig_prov["synthetic"]:
                fig["synthetic"] = "register values"
            out.append(fig)
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{prefix}.{i}" if prefix else str(i))

    walk(readings, "")
    if not out:
        raise SeedfwError("holds no numeric counter values (expected the output of "
                          "'invoke counters --json')", path)
    return dict(provenance=dict(fig_prov, detail=prov), settings=settings, counters=out), None


def _counters_parts(data, path: Path):
    """(provenance or None, settings, readings) of a counters document; a provenance that is
    there but malformed is an error naming the field (it would otherwise read as 'unknown')."""
    from ..counters.provenance import SOURCES

    if not isinstance(data, dict) or not ({"provenance", "readings"} & data.keys()):
        flat = data if isinstance(data, dict) else {}
        return None, {k: flat[k] for k in flat if k in NOT_COUNTERS}, data
    prov = data.get("provenance")
    if prov is not None:
        if not isinstance(prov, dict):
            raise SeedfwError("must be an object {source, how, ...}", path, "provenance")
        if prov.get("source") not in SOURCES:
            raise SeedfwError(f"{prov.get('source')!r} is not one of {', '.join(SOURCES)}", path,
                              "provenance.source")
        if prov["source"] == "recorded" and not isinstance(prov.get("recording"), (dict,
                                                                                   type(None))):
            raise SeedfwError("must be the recording's provenance object or null", path,
                              "provenance.recording")
        check_provenance(prov, path)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise SeedfwError("must be an object", path, "settings")
    readings = data.get("readings")
    if not isinstance(readings, dict):
        raise SeedfwError("must be an object of counter values", path, "readings")
    return prov, settings, readings


PROVENANCE_FIELDS = {k: "str?" for k in ("source?", "how?", "probe?", "target?", "host?",
                                         "when?", "qemu_version?", "machine?", "note?", "file?",
                                         "where?", "by?", "label?")}


def check_provenance(prov: dict, path: Path, field: str = "provenance") -> None:
    """The provenance fields a label or a sentence quotes are strings (or absent)."""
    check(prov, PROVENANCE_FIELDS, path, field)
    if isinstance(prov.get("recording"), dict):
        check(prov["recording"], PROVENANCE_FIELDS, path, f"{field}.recording")


def _guess_unit(name: str) -> str:
    low = name.lower()
    if low.endswith("_hz"):
        return "Hz"
    if low.startswith("milestones."):
        return "cycles"             # a milestone is the cycle counter's value when it was reached
    if "byte" in low:
        return "bytes"
    if "cycle" in low or "cntvct" in low or "systick" in low:
        return "cycles"
    if "instruction" in low or "inst_retired" in low:
        return "instructions"       # before the "ns" suffix rule: "instructions" ends in "ns"
    if low.endswith(("_ns", "ns")):
        return "ns"
    if low.endswith(("_us", "us")):
        return "us"
    return "count"


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return path.name


# <out>/sbom/ (seedfw.sbom): the SBOM files every build writes and `invoke cve`'s result.
SBOM_FILES = ("sbom/sbom.cdx.json", "sbom/sbom.spdx.json", "sbom/vex.cdx.json")
CVE_RESULT = {"database": "str", "database_note?": "str", "matcher": "str", "sbom": "str", "counts": {"*": "count"},
              "matches": [{"cve": "str", "component": "str", "version": "str", "ref": "str",
                           "record": "str", "statement?": "str?",
                           "decision": {"status": "str", "triage": "str?", "detail": "str?",
                                        "who": "str?", "when": "str?",
                                        "justification": "str?"}}],
              "not_matched?": [{"cve": "str", "component": "str", "version": "str"}],
              "stale_triage?": ["str"]}


def read_sbom(outdir: Path):
    """(summary, note): which SBOM files the build left (name, bytes, sha256), the CycloneDX
    file's component coverage (seedfw.sbom.coverage), and cve.json when `invoke cve` ran."""
    outdir = Path(outdir)
    files = [{"path": rel, "bytes": (outdir / rel).stat().st_size,
              "sha256": util.sha256_file(outdir / rel)}
             for rel in SBOM_FILES if (outdir / rel).is_file()]
    if not files:
        return None, not_available("no SBOM (sbom/sbom.cdx.json not found: built before "
                                   "seedfw.sbom, or its libraries are missing)")
    from ..sbom import coverage
    cdx = outdir / SBOM_FILES[0]
    doc = load_json(cdx, {"components?": [{"type": "str", "purl?": "str?", "cpe?": "str?"}]}) \
        if cdx.is_file() else {}
    cve_path = outdir / "sbom" / "cve.json"
    cve = load_json(cve_path, CVE_RESULT) if cve_path.is_file() else None
    return {"files": files, "coverage": coverage(doc), "cve": cve}, None
