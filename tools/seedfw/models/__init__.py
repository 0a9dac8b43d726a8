"""Model blobs: the manifest (`board/<b>/models.yaml`, Kconfig MODEL_MANIFEST), format checks,
sha256, optional LZ4 container, and the partition limit.

RKNN layout, as Netron's reader parses it (a fact of the format, not code taken from Netron):
    "RKNN" + 4 pad bytes | u64 LE version | u64 LE data_size | header pad up to 24 bytes
    (64 bytes for versions 2..6 and 0x1002..0x1004) | data_size bytes | u64 LE json_len | JSON
Versions outside that list and 1, 0x1001 are rejected, as Netron's reader does (RKNN_VERSIONS).
A file that starts "CYPTRKNN" is an encrypted model: nothing inside can be checked, so it is
accepted and flagged. A size field that disagrees with the file length is rejected: that is what a
truncated copy or a file that is not RKNN at all looks like.

Synthetic blobs (tests/models_synth.py, test fixtures: real framing around filler, not runnable models) are
recognised by what the blob itself says, in one place (`synthetic_marker`): the RKNN trailing
JSON's `"synthetic": true`, or the ONNX producer name the generator writes. Every view that lists
models (build summary, `invoke models`, `invoke inspect`, the report) asks this function, so a
blob travelling into a FIT or package is flagged there too, without a list of names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import yamlfile
from ..errors import SeedfwError
from .format import (  # noqa: F401  (re-exported: the manifest's checks)
    RKNN_ENCRYPTED, RKNN_MAGIC, RKNN_MAX_JSON, RKNN_PREFIX, RKNN_VERSIONS, RknnInfo, _onnx_producer,
    check_onnx, check_rknn, rknn_header_size)
from ..paths import ROOT, confined  # noqa: F401  (the manifest's path rule; re-exported)
from ..util import sha256_bytes

TYPES = ("rknn", "onnx", "raw")
SYNTH_GENERATOR = "seedfw.models_synth"    # the RKNN JSON's "generator" in synthetic blobs
SYNTH_ONNX_PRODUCER = "seedfw-synth"       # ModelProto.producer_name of synthetic ONNX files

_NUMS = {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4}
COMPILE_SCHEMA = {
    "type": "object", "required": ["source", "input", "mean", "std", "metric"],
    "additionalProperties": False,
    "properties": {
        "source": {"type": "object", "minProperties": 1},   # recipe | wheel+file | onnx
        "calibration": {"type": "object", "required": ["recipe"]},
        "input": {"type": "object", "required": ["name", "shape"], "additionalProperties": False,
                  "properties": {"name": {"type": "string"},
                                 "shape": {"type": "array", "items": {"type": "integer",
                                                                       "minimum": 1},
                                           "minItems": 4, "maxItems": 4},
                                 "layout": {"enum": ["nchw"]}}},
        "mean": _NUMS, "std": _NUMS,
        "metric": {"enum": ["top1", "text_boxes"]},
        "box_threshold": {"type": "number"},
    },
}

SCHEMA = {
    "type": "object", "required": ["models"], "additionalProperties": False,
    "properties": {
        "target": {"type": "string", "pattern": "^[a-z0-9]+$"},
        "models": {
            "type": "array",
            "items": {
                "type": "object", "required": ["name", "type"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                             "maxLength": 16},
                    "path": {"type": "string"},
                    "type": {"enum": list(TYPES)},
                    "alignment": {"type": "integer", "minimum": 1},
                    "compression": {"enum": ["none", "lz4"]},
                    "kconfig": {"type": "string", "pattern": "^[A-Z0-9_]+$"},
                    "compile": COMPILE_SCHEMA,
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Model:
    name: str
    path: Path
    type: str
    alignment: int
    compression: str         # "none" | "lz4"
    size: int                # original bytes
    sha256: str              # of the original bytes
    stored: bytes            # what goes into the image (compressed when lz4)
    stored_sha256: str
    encrypted: bool
    rknn: RknnInfo | None
    synthetic: str | None = None     # why the blob is synthetic (synthetic_marker), else None
    card: dict | None = None         # model card of a compiled model (seedfw.models.rknn.compile)
    cached: bool = False             # compiled model taken from the cache
    target: str | None = None        # the manifest's NPU target (checked against RKNN blobs)

    @property
    def stored_size(self) -> int:
        return len(self.stored)


def synthetic_marker(type_: str, data: bytes) -> str | None:
    """Why a blob is synthetic, from its own metadata; None for a blob that does not say so
    (real models, raw blobs, which carry no metadata, and encrypted RKNN)."""
    if type_ == "rknn" and data[:4] == RKNN_MAGIC:
        try:
            meta = check_rknn(data, "blob").meta or {}
        except SeedfwError:
            return None
        if meta.get("synthetic") is True:
            return "RKNN JSON synthetic=true"
    if type_ == "onnx" and data[:1] == b"\x08" and _onnx_producer(data) == SYNTH_ONNX_PRODUCER:
        return f"ONNX producer {SYNTH_ONNX_PRODUCER}"
    return None


def compress_lz4(data: bytes, source) -> bytes:
    """LZ4 through the compression area's container; a clear error until it exists."""
    try:
        from ..compress import container  # written by the compression area
    except ImportError:
        raise SeedfwError("compression 'lz4' is not available (seedfw.compress.container is not "
                          "installed); use 'compression: none'", source, "compression") from None
    return container.write_container(data)


def resolve_manifest(board, config_values: dict) -> Path | None:
    """The manifest Kconfig selects (MODEL_MANIFEST, relative to the tree), or None if MODELS=n."""
    if not config_values.get("MODELS"):
        return None
    rel = config_values.get("MODEL_MANIFEST") or f"board/{board.name}/models.yaml"
    rel = rel.replace("$(SEEDFW_BOARD)", board.name)
    return (ROOT / rel) if not Path(rel).is_absolute() else Path(rel)


def load_manifest(path: str | Path, *, partition_size: int | None = None,
                  compress_default: bool = False, values: dict | None = None,
                  progress=print, log: Path | None = None,
                  allow_outside: bool = False) -> list[Model]:
    """Read, check and hash every model of a manifest. Paths are relative to the manifest and
    stay inside its folder (`confined`).

    An entry with a `compile` block is compiled (or taken from the cache) by seedfw.models.rknn.compile
    with the Kconfig `values`; every RKNN blob is checked against the manifest's `target`.
    """
    path = Path(path)
    data, lines = yamlfile.load_mapping(path, SCHEMA, "a mapping with 'models'")
    target = data.get("target")
    models: list[Model] = []
    total = 0
    for i, raw in enumerate(data["models"]):
        line = f"line {lines[('models', i)]}"
        name = raw["name"]
        if any(m.name == name for m in models):
            raise SeedfwError(f"model '{name}': duplicate name", path, line)
        alignment = raw.get("alignment", 64)
        if alignment & (alignment - 1):
            raise SeedfwError(f"model '{name}': alignment {alignment} is not a power of two", path,
                              line)
        compiled = None
        if "compile" in raw:
            if raw["type"] != "rknn" or target is None:
                raise SeedfwError(f"model '{name}': a compiled model needs type rknn and the "
                                  "manifest's 'target' (the NPU it is compiled for)", path, line)
            from .rknn import compile as rknn_compile
            compiled = rknn_compile.ensure(raw, values or {}, target, path, line,
                                           progress=progress, log=log,
                                           allow_outside=allow_outside)
            blob_path = compiled.path
            shown = blob_path.name
        elif "path" in raw:
            blob_path = confined(path.parent, raw["path"], path, line, allow_outside)
            shown = raw["path"]
        else:
            raise SeedfwError(f"model '{name}': needs 'path' or 'compile'", path, line)
        from .. import reading
        if not blob_path.exists():
            raise SeedfwError(f"model '{name}': cannot read {shown}: No such file or "
                              f"directory", path, line)
        size = blob_path.stat().st_size
        if partition_size is not None and size > partition_size:
            raise SeedfwError(f"model '{name}': {size} bytes is larger than the partition "
                              f"limit of {partition_size} bytes (0x{partition_size:x})",
                              path, line)
        try:
            blob = reading.read_bytes(blob_path, "model")     # capped before it is read
        except SeedfwError as exc:
            raise SeedfwError(f"model '{name}': cannot read {shown}: {exc.message}", path,
                              line) from None
        rknn = None
        if raw["type"] == "rknn":
            rknn = check_rknn(blob, blob_path)
            if target is not None:
                from .rknn import rknn_file
                rknn_file.check_target(rknn_file.read(blob, blob_path), target, blob_path)
        elif raw["type"] == "onnx":
            check_onnx(blob, blob_path)
        compression = raw.get("compression", "lz4" if compress_default else "none")
        stored = compress_lz4(blob, path) if compression == "lz4" else blob
        total = _align(total, alignment) + len(stored)
        if partition_size is not None and total > partition_size:
            raise SeedfwError(f"model '{name}': {len(stored)} bytes brings the models to {total} "
                              f"bytes, over the partition limit of {partition_size} bytes "
                              f"(0x{partition_size:x})", path, line)
        models.append(Model(name, blob_path, raw["type"], alignment, compression, len(blob),
                            sha256_bytes(blob), stored, sha256_bytes(stored),
                            bool(rknn and rknn.encrypted), rknn,
                            synthetic_marker(raw["type"], blob),
                            compiled.card if compiled else None,
                            bool(compiled and compiled.cached), target))
    return models


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def for_build(board, config_values: dict, progress=print, log=None) -> list[Model]:
    """The models a configured build embeds ([] when CONFIG_MODELS is off)."""
    manifest = resolve_manifest(board, config_values)
    if manifest is None:
        return []
    return load_manifest(manifest, partition_size=board.image["partition_size"],
                         compress_default=bool(config_values.get("MODELS_COMPRESS")),
                         values=config_values, progress=progress, log=log)


def synthetic_summary(models: list[Model]) -> str | None:
    """'3 of 4 model blobs are SYNTHETIC (filler, not runnable models): a, b, c', or None."""
    fake = [m.name for m in models if m.synthetic]
    if not fake:
        return None
    return (f"{len(fake)} of {len(models)} model blobs are SYNTHETIC (filler, not runnable "
            f"models): {', '.join(fake)}")
