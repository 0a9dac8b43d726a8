"""Model blobs: the manifest (`board/<b>/models.yaml`, Kconfig MODEL_MANIFEST), format checks,
sha256, optional LZ4 container, and the partition limit.

RKNN layout, as Netron's reader parses it (a fact of the format, not code taken from Netron):
    "RKNN" + 4 pad bytes | u64 LE version | u64 LE data_size | header pad up to 24 bytes
    (64 bytes for versions 2..6 and 0x1002..0x1004) | data_size bytes | u64 LE json_len | JSON
A file that starts "CYPTRKNN" is an encrypted model: nothing inside can be checked, so it is
accepted and flagged. A size field that disagrees with the file length is rejected: that is what a
truncated copy or a file that is not RKNN at all looks like.
"""

from __future__ import annotations

import json
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
    try:
        meta = json.loads(data[json_at + 8:end])
    except (ValueError, UnicodeDecodeError) as exc:
        raise SeedfwError(f"trailing model JSON does not parse: {exc}", source,
                          f"offset 0x{json_at + 8:x}") from None
    return RknnInfo(version, header, data_size, json_size, False, meta)


def check_onnx(data: bytes, source) -> None:
    """An ONNX file is a protobuf ModelProto whose first field is ir_version (1, varint): 0x08."""
    if not data:
        raise SeedfwError("empty file", source)
    if data[0] != 0x08:
        raise SeedfwError(f"does not look like ONNX: first byte 0x{data[0]:02x}, expected 0x08 "
                          f"(ModelProto field 1 ir_version)", source, "offset 0x0")


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


def load_manifest(path: str | Path, *, partition_size: int | None = None,
                  compress_default: bool = False) -> list[Model]:
    """Read, check and hash every model of a manifest. Paths are relative to the manifest."""
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
        blob_path = (path.parent / raw["path"])
        try:
            blob = blob_path.read_bytes()
        except OSError as exc:
            raise SeedfwError(f"model '{name}': cannot read {raw['path']}: {exc.strerror}", path,
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
                            bool(rknn and rknn.encrypted), rknn))
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
