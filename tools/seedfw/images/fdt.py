"""A small flattened-devicetree reader (enough for FIT images): header, structure block, strings.

Why our own: inspect must read every image's `data` and hash nodes to verify them; `dumpimage -l`
prints hashes but does not say whether they match, and `dtc -I dtb -O dts` turns megabytes of
blob into text. The format is the devicetree specification's (v17).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import SeedfwError

MAGIC = 0xD00DFEED
BEGIN_NODE, END_NODE, PROP, NOP, END = 1, 2, 3, 4, 9


@dataclass
class Node:
    name: str
    props: dict[str, bytes] = field(default_factory=dict)
    children: dict[str, "Node"] = field(default_factory=dict)

    def str(self, prop: str, default: str | None = None) -> str | None:
        raw = self.props.get(prop)
        return raw.rstrip(b"\0").split(b"\0")[0].decode() if raw is not None else default

    def strings(self, prop: str) -> list[str]:
        raw = self.props.get(prop, b"")
        return [s.decode() for s in raw.rstrip(b"\0").split(b"\0")] if raw else []

    def u32(self, prop: str) -> int | None:
        raw = self.props.get(prop)
        return struct.unpack(">I", raw[:4])[0] if raw is not None and len(raw) >= 4 else None


def parse(blob: bytes, source="fdt") -> Node:
    if len(blob) < 40:
        raise SeedfwError("too short for a devicetree header", source)
    magic, total, off_struct, off_strings, _rsv, version, _last, _boot, size_strings, size_struct = \
        struct.unpack_from(">10I", blob)
    if magic != MAGIC:
        raise SeedfwError(f"bad FDT magic 0x{magic:08x}", source, "offset 0x0")
    if total > len(blob) or off_struct + size_struct > total or off_strings + size_strings > total:
        raise SeedfwError(f"FDT totalsize {total} / blocks do not fit the {len(blob)} bytes present",
                          source)
    if version < 17:
        raise SeedfwError(f"FDT version {version} is older than 17", source)
    strings = blob[off_strings:off_strings + size_strings]
    pos, end = off_struct, off_struct + size_struct
    stack: list[Node] = []
    root = None

    def bad(why):
        raise SeedfwError(f"damaged FDT structure block: {why}", source, f"offset 0x{pos:x}")

    while pos + 4 <= end:
        (token,) = struct.unpack_from(">I", blob, pos)
        pos += 4
        if token == BEGIN_NODE:
            stop = blob.find(b"\0", pos, end)
            if stop < 0:
                bad("unterminated node name")
            node = Node(blob[pos:stop].decode(errors="replace"))
            pos = (stop + 4) & ~3
            if stack:
                stack[-1].children[node.name] = node
            elif root is None:
                root = node
            else:
                bad("second root node")
            stack.append(node)
        elif token == END_NODE:
            if not stack:
                bad("END_NODE without a node")
            stack.pop()
        elif token == PROP:
            if not stack or pos + 8 > end:
                bad("property outside a node")
            length, name_off = struct.unpack_from(">II", blob, pos)
            pos += 8
            if pos + length > end or name_off >= len(strings):
                bad("property runs past the block")
            name_end = strings.find(b"\0", name_off)
            stack[-1].props[strings[name_off:name_end].decode()] = blob[pos:pos + length]
            pos = (pos + length + 3) & ~3
        elif token == NOP:
            continue
        elif token == END:
            break
        else:
            bad(f"unknown token {token}")
    if root is None or stack:
        raise SeedfwError("damaged FDT structure block: unbalanced nodes", source)
    return root
