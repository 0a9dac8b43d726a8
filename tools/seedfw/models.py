"""Model blobs: the manifest (`board/<b>/models.yaml`, Kconfig MODEL_MANIFEST), format checks,
sha256, optional LZ4 container, and the partition limit.

RKNN layout, as Netron's reader parses it (a fact of the format, not code taken from Netron):
    "RKNN" + 4 pad bytes | u64 LE version | u64 LE data_size | header pad up to 24 bytes
    (64 bytes for versions 2..6 and 0x1002..0x1004) | data_size bytes | u64 LE json_len | JSON
Versions outside that list and 1, 0x1001 are rejected, as Netron's reader does (RKNN_VERSIONS).
A file that starts "CYPTRKNN" is an encrypted model: nothing inside can be checked, so it is
accepted and flagged. A size field that disagrees with the file length is rejected: that is what a
truncated copy or a file that is not RKNN at all looks like.

Synthetic blobs (seedfw.models_synth: real framing around filler, not runnable models) are
recognised by what the blob itself says, in one place (`synthetic_marker`): the RKNN trailing
JSON's `"synthetic": true`, or the ONNX producer name the generator writes. Every view that lists
models (build summary, `invoke models`, `invoke inspect`, the report) asks this function, so a
blob travelling into a FIT or package is flagged there too, without a list of names.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from . import yamlfile
from .errors import SeedfwError
from .paths import ROOT
from .util import sha256_bytes

TYPES = ("rknn", "onnx", "raw")
RKNN_MAGIC = b"RKNN"
RKNN_ENCRYPTED = b"CYPTRKNN"
RKNN_PREFIX = struct.Struct("<8sQQ")       # magic+pad, version, data_size: the 24-byte header
# Container versions Netron's RKNN reader accepts (lutzroeder/netron source/rknn.js,
# rknn.Container.read; the list was last extended by Rockchip's airockchip account in
# lutzroeder/netron pull request #1099): 1 and 0x1001 have the 24-byte header, the others 64.
RKNN_VERSIONS = (0x0001, 0x1001, 0x0002, 0x1002, 0x0003, 0x1003, 0x0004, 0x1004, 0x0005, 0x0006)
SYNTH_GENERATOR = "seedfw.models_synth"    # the RKNN JSON's "generator" in synthetic blobs
SYNTH_ONNX_PRODUCER = "seedfw-synth"       # ModelProto.producer_name of synthetic ONNX files

SCHEMA = {
    "type": "object", "required": ["models"], "additionalProperties": False,
    "properties": {
        "models": {
            "type": "array",
            "items": {
                "type": "object", "required": ["name", "path", "type"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                             "maxLength": 16},
                    "path": {"type": "string"},
                    "type": {"enum": list(TYPES)},
                    "alignment": {"type": "integer", "minimum": 1},
                    "compression": {"enum": ["none", "lz4"]},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class RknnInfo:
    version: int | None      # None when encrypted
    header_size: int
    data_size: int
    json_size: int
    encrypted: bool
    meta: dict | None        # the trailing JSON


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

    @property
    def stored_size(self) -> int:
        return len(self.stored)


def rknn_header_size(version: int) -> int:
    return 64 if (2 <= version <= 6 or 0x1002 <= version <= 0x1004) else 24


def check_rknn(data: bytes, source) -> RknnInfo:
    """Parse and check an RKNN file's framing; raises SeedfwError naming `source` and the offset."""
    if data[:8] == RKNN_ENCRYPTED:
        return RknnInfo(None, 8, len(data) - 8, 0, True, None)
    if len(data) < RKNN_PREFIX.size:
        raise SeedfwError(f"truncated: {len(data)} bytes is shorter than the {RKNN_PREFIX.size}-byte "
                          f"RKNN header", source)
    magic, version, data_size = RKNN_PREFIX.unpack_from(data)
    if magic[:4] != RKNN_MAGIC:
        raise SeedfwError(f"bad magic {magic[:8]!r} (expected 'RKNN' or 'CYPTRKNN')", source,
                          "offset 0x0")
    if version not in RKNN_VERSIONS:
        raise SeedfwError(f"unsupported RKNN container version {version} (0x{version:x}); known: "
                          f"1, 2..6, 0x1001..0x1004", source, "offset 0x8")
    header = rknn_header_size(version)
    if len(data) < header:
        raise SeedfwError(f"truncated: {len(data)} bytes is shorter than the {header}-byte header of "
                          f"RKNN version {version}", source)
    json_at = header + data_size
    if json_at + 8 > len(data):
        raise SeedfwError(f"data_size {data_size} disagrees with the file length {len(data)} "
                          f"(header {header} + data + 8-byte JSON length would need {json_at + 8})",
                          source, "offset 0x10")
    (json_size,) = struct.unpack_from("<Q", data, json_at)
    end = json_at + 8 + json_size
    if end != len(data):
        raise SeedfwError(f"JSON length {json_size} disagrees with the file length {len(data)} "
                          f"(the JSON would end at {end})", source, f"offset 0x{json_at:x}")
    from .images.reading import loads_json      # size and depth limits (hostile input)
    try:
        meta = loads_json(bytes(data[json_at + 8:end]), source, f"offset 0x{json_at + 8:x}")
    except SeedfwError as exc:
        raise SeedfwError(f"trailing model JSON does not parse: {exc.message}", source,
                          f"offset 0x{json_at + 8:x}") from None
    if not isinstance(meta, dict):
        raise SeedfwError(f"trailing model JSON is a {type(meta).__name__}, not an object",
                          source, f"offset 0x{json_at + 8:x}")
    return RknnInfo(version, header, data_size, json_size, False, meta)


def check_onnx(data: bytes, source) -> None:
    """An ONNX file is a protobuf ModelProto whose first field is ir_version (1, varint): 0x08."""
    if not data:
        raise SeedfwError("empty file", source)
    if data[0] != 0x08:
        raise SeedfwError(f"does not look like ONNX: first byte 0x{data[0]:02x}, expected 0x08 "
                          f"(ModelProto field 1 ir_version)", source, "offset 0x0")


def _onnx_producer(data: bytes) -> str | None:
    """ModelProto.producer_name (field 2), looked for among the first top-level fields only:
    exporters write it right after ir_version, and a model's graph can be hundreds of MB."""
    def varint(at):
        value = shift = 0
        while at < len(data) and shift < 64:
            b = data[at]
            value |= (b & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if not b & 0x80:
                return value, at
        raise ValueError("truncated varint")

    at = 0
    try:
        for _ in range(8):
            if at >= len(data):
                return None
            key, at = varint(at)
            number, wire = key >> 3, key & 7
            if wire == 0:
                _, at = varint(at)
            elif wire == 2:
                size, at = varint(at)
                if number == 2:
                    return data[at:at + size].decode("utf-8", "replace")
                at += size
            elif wire in (1, 5):
                at += 8 if wire == 1 else 4
            else:
                return None
    except ValueError:
        return None
    return None


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
        from .compress import container  # written by the compression area
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


def confined(folder: Path, rel: str, source, field, allow_outside: bool = False) -> Path:
    """`rel` (a path written in a manifest) resolved inside `folder`: no absolute path, no
    `..`, no symlink leading out of the folder — whatever a manifest names would be read,
    hashed and embedded in a firmware image. `allow_outside` (invoke models --allow-outside,
    or SEEDFW_ALLOW_OUTSIDE_PATHS=1 for builds) lifts the symlink rule only."""
    import os
    if not rel or Path(rel).is_absolute() or ".." in Path(rel).parts or "\0" in rel:
        raise SeedfwError(f"path '{rel}' must be relative to {folder.name}/ without '..'",
                          source, field)
    target = folder / rel
    allow_outside = allow_outside or os.environ.get("SEEDFW_ALLOW_OUTSIDE_PATHS") == "1"
    if not allow_outside:
        real, base = target.resolve(), folder.resolve()
        if real != base and base not in real.parents:
            raise SeedfwError(f"path '{rel}' leads out of {folder.name}/ (through a symlink, to "
                              f"{real}); set SEEDFW_ALLOW_OUTSIDE_PATHS=1 to allow it",
                              source, field)
    return target


def load_manifest(path: str | Path, *, partition_size: int | None = None,
                  compress_default: bool = False, allow_outside: bool = False) -> list[Model]:
    """Read, check and hash every model of a manifest. Paths are relative to the manifest and
    stay inside its folder (`confined`)."""
    path = Path(path)
    data, lines = yamlfile.load_mapping(path, SCHEMA, "a mapping with 'models'")
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
        blob_path = confined(path.parent, raw["path"], path, line, allow_outside)
        from .images import reading
        if not blob_path.exists():
            raise SeedfwError(f"model '{name}': cannot read {raw['path']}: No such file or "
                              f"directory", path, line)
        try:
            blob = reading.read_bytes(blob_path, "image")
        except SeedfwError as exc:
            raise SeedfwError(f"model '{name}': cannot read {raw['path']}: {exc.message}", path,
                              line) from None
        rknn = None
        if raw["type"] == "rknn":
            rknn = check_rknn(blob, blob_path)
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
                            synthetic_marker(raw["type"], blob)))
    return models


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def for_build(board, config_values: dict) -> list[Model]:
    """The models a configured build embeds ([] when CONFIG_MODELS is off)."""
    manifest = resolve_manifest(board, config_values)
    if manifest is None:
        return []
    return load_manifest(manifest, partition_size=board.image["partition_size"],
                         compress_default=bool(config_values.get("MODELS_COMPRESS")))


def synthetic_summary(models: list[Model]) -> str | None:
    """'3 of 4 model blobs are SYNTHETIC (filler, not runnable models): a, b, c', or None."""
    fake = [m.name for m in models if m.synthetic]
    if not fake:
        return None
    return (f"{len(fake)} of {len(models)} model blobs are SYNTHETIC (filler, not runnable "
            f"models): {', '.join(fake)}")
