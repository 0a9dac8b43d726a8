"""The .rknn reader: what a compiled model says about itself, checked against the board.

Layout (seedfw.models.format.check_rknn parses the framing; firmware/include/seedfw/rknn.h is the C
definition the agent uses): "RKNN" + 4 pad | u64 format version | u64 payload length L | header
to 64 bytes | L payload bytes (a FlatBuffer whose file identifier "RKNN" sits at payload offset 4)
| u64 JSON length | JSON. rknn-toolkit2 2.5.0 writes format version 6 and a JSON with
"target_platform": ["rk3588"], "version": "2.5.0" and "norm_tensor" (the model's I/O tensors:
url, size, dtype). No published specification: inferred from files the toolkit writes
(FACTS.md), so every field is checked before it is used, within fixed bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import SeedfwError

FLATBUFFER_ID_AT = 4         # payload offset of the FlatBuffer file identifier


@dataclass(frozen=True)
class RknnFile:
    version: int
    payload_bytes: int
    targets: tuple[str, ...]
    toolkit_version: str
    tensors: tuple[dict, ...]         # norm_tensor: {url, size, dtype}

    def describe_io(self) -> str:
        parts = []
        for t in self.tensors:
            dims = "x".join(str(d) for d in t.get("size", []))
            dtype = t.get("dtype") if isinstance(t.get("dtype"), dict) else {}
            parts.append(f"{t.get('url', '?')}[{dims}]:"
                         f"{dtype.get('qnt_type') or dtype.get('vx_type') or '?'}")
        return " ".join(parts)


def read(data: bytes, source) -> RknnFile:
    """Parse a compiled model; SeedfwError naming `source` and the field on anything unexpected.
    Bounded: check_rknn refuses a trailing JSON over models.RKNN_MAX_JSON before parsing it."""
    from ..format import check_rknn
    info = check_rknn(data, source)
    if info.encrypted:
        raise SeedfwError("encrypted RKNN model: its target cannot be checked", source, "magic")
    payload = data[info.header_size:info.header_size + info.data_size]
    if payload[FLATBUFFER_ID_AT:FLATBUFFER_ID_AT + 4] != b"RKNN":
        raise SeedfwError(f"payload has no FlatBuffer identifier 'RKNN' at offset "
                          f"0x{info.header_size + FLATBUFFER_ID_AT:x}", source, "payload")
    meta = info.meta if isinstance(info.meta, dict) else {}
    targets = meta.get("target_platform")
    if not (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets)):
        raise SeedfwError("trailing JSON has no target_platform list", source, "target_platform")
    version = meta.get("version")
    if not isinstance(version, str):
        raise SeedfwError("trailing JSON has no toolkit version string", source, "version")
    tensors = meta.get("norm_tensor")
    if not (isinstance(tensors, list) and all(isinstance(t, dict) for t in tensors)):
        raise SeedfwError("trailing JSON has no norm_tensor list (the model's I/O tensors)",
                          source, "norm_tensor")
    return RknnFile(info.version, info.data_size, tuple(targets), version, tuple(tensors))


def check_target(model: RknnFile, target: str, source) -> None:
    """A model compiled for another NPU would be refused by the board's runtime: refuse it here."""
    if target not in model.targets:
        raise SeedfwError(f"compiled for {', '.join(model.targets)}, but this board's NPU is "
                          f"{target}", source, "target_platform")
