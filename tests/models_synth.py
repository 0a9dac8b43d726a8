"""Synthetic model blobs: TEST FIXTURES ONLY (the board manifests embed real compiled models,
seedfw.models.rknn; docs/models.md).

These files have the RKNN framing (see models.py) with deterministic filler "weights", so the
framing checks, the synthetic flag and the manifest rules can be tested without the compiler;
they are not models an NPU could run, and their JSON says `"synthetic": true`.
`write_fixture(dir)` writes the former rk3588 set and a manifest listing it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from seedfw.models import RKNN_ENCRYPTED, SYNTH_GENERATOR, SYNTH_ONNX_PRODUCER, rknn_header_size
from seedfw.util import write_bytes


def filler(size: int, seed: int) -> bytes:
    """Int8-like values of small magnitude (compressible the way quantised weights are)."""
    out = bytearray(size)
    x = seed & 0xFFFFFFFF
    for i in range(size):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = ((x >> 16) % 9 - 4) & 0xFF
    return bytes(out)


def rknn(version: int, data: bytes, meta: dict | None = None) -> bytes:
    header = rknn_header_size(version)
    head = struct.pack("<4s4xQQ", b"RKNN", version, len(data)).ljust(header, b"\0")
    # models.synthetic_marker recognises the blob by this JSON: keep both keys.
    doc = {"synthetic": True, "generator": SYNTH_GENERATOR, **(meta or {})}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return head + data + struct.pack("<Q", len(text)) + text


def rknn_encrypted(body: bytes) -> bytes:
    return RKNN_ENCRYPTED + body


def onnx_empty_graph(name: str) -> bytes:
    """A minimal valid ONNX ModelProto: ir_version 8, producer, opset 17, an empty named graph."""

    def field(number: int, payload: bytes) -> bytes:          # length-delimited field
        return bytes([number << 3 | 2, len(payload)]) + payload

    producer = field(2, SYNTH_ONNX_PRODUCER.encode())   # models.synthetic_marker looks for it
    graph = field(7, field(2, name.encode()))                   # GraphProto.name
    opset = field(8, bytes([2 << 3 | 0, 17]))                   # OperatorSetIdProto.version
    return bytes([1 << 3 | 0, 8]) + producer + graph + opset


BOARD_SETS = {
    "rk3588": {
        "yolov8s.rknn": lambda: rknn(6, filler(3072, 1), {"target_platform": ["rk3588"],
                                                           "name": "yolov8s"}),
        "mobilenet.rknn": lambda: rknn(1, filler(2048, 2), {"target_platform": ["rk3588"],
                                                             "name": "mobilenet_v2"}),
        "face.onnx": lambda: onnx_empty_graph("face_detect"),
        "labels.raw": lambda: b"\n".join([b"person", b"bicycle", b"car", b"motorcycle"]) + b"\n",
    },
    "qemu-aarch64": {
        "yolov8s.rknn": lambda: rknn(6, filler(2048, 3), {"target_platform": ["rk3588"],
                                                           "name": "yolov8s"}),
        "labels.raw": lambda: b"\n".join([b"person", b"bicycle", b"car"]) + b"\n",
    },
}


def write_board_set(board: str, outdir: Path) -> list[Path]:
    return [write_bytes(outdir / name, make()) for name, make in BOARD_SETS[board].items()]


FIXTURE_MANIFEST = """models:
  - {name: yolov8s, path: models/yolov8s.rknn, type: rknn, alignment: 4096, compression: none}
  - {name: mobilenet_v2, path: models/mobilenet.rknn, type: rknn, alignment: 4096}
  - {name: face_detect, path: models/face.onnx, type: onnx, alignment: 64}
  - {name: labels, path: models/labels.raw, type: raw, alignment: 64}
"""


def write_fixture(directory: Path) -> Path:
    """The synthetic set (3 filler blobs + a label file) and its models.yaml; returns the manifest."""
    write_board_set("rk3588", Path(directory) / "models")
    return write_bytes(Path(directory) / "models.yaml", FIXTURE_MANIFEST.encode())
