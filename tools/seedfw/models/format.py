"""The framing of model files a build embeds or `invoke inspect` reads: RKNN (what rknn-toolkit2
writes) and ONNX. A codec module: bounded, hostile-input safe, no knowledge of manifests or
builds (seedfw.models uses it for manifests, seedfw.models.rknn for compiled models).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import SeedfwError

RKNN_MAGIC = b"RKNN"
RKNN_ENCRYPTED = b"CYPTRKNN"
RKNN_PREFIX = struct.Struct("<8sQQ")       # magic+pad, version, data_size: the 24-byte header
# Container versions Netron's RKNN reader accepts (lutzroeder/netron source/rknn.js,
# rknn.Container.read; the list was last extended by Rockchip's airockchip account in
# lutzroeder/netron pull request #1099): 1 and 0x1001 have the 24-byte header, the others 64.
RKNN_VERSIONS = (0x0001, 0x1001, 0x0002, 0x1002, 0x0003, 0x1003, 0x0004, 0x1004, 0x0005, 0x0006)
RKNN_MAX_JSON = 4 << 20                    # bytes of trailing JSON parsed at most

@dataclass(frozen=True)
class RknnInfo:
    version: int | None      # None when encrypted
    header_size: int
    data_size: int
    json_size: int
    encrypted: bool
    meta: dict | None        # the trailing JSON


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
    if json_size > RKNN_MAX_JSON:       # a real model's JSON is KBs; parsing MBs is hostile
        raise SeedfwError(f"trailing JSON of {json_size} bytes is over the {RKNN_MAX_JSON}-byte "
                          "limit", source, f"offset 0x{json_at:x}")
    from ..reading import loads_json      # size and depth limits (hostile input)
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
