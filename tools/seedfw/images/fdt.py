"""A small flattened-devicetree reader (enough for FIT images): header, structure block, strings.

Why our own: inspect must read every image's `data` and hash nodes to verify them; `dumpimage -l`
prints hashes but does not say whether they match, and `dtc -I dtb -O dts` turns megabytes of
blob into text. The format is the devicetree specification's (v17).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import SeedfwError
from ..reading import CAPS, View, strict_utf8

MAGIC = 0xD00DFEED
LAZY = 1 << 20           # property values above this (of a mapped file) are reading.Views
BEGIN_NODE, END_NODE, PROP, NOP, END = 1, 2, 3, 4, 9


@dataclass
class Node:
    name: str
    props: dict[str, bytes] = field(default_factory=dict)
    children: dict[str, "Node"] = field(default_factory=dict)

    def str(self, prop: str, default: str | None = None) -> str | None:
        raw = self.props.get(prop)
        return _text(raw.rstrip(b"\0").split(b"\0")[0], prop) if raw is not None else default

    def strings(self, prop: str) -> list[str]:
        raw = self.props.get(prop, b"")
        return [_text(s, prop) for s in raw.rstrip(b"\0").split(b"\0")] if raw else []

    def u32(self, prop: str) -> int | None:
        raw = self.props.get(prop)
        return struct.unpack(">I", raw[:4])[0] if raw is not None and len(raw) >= 4 else None


_HEADER = struct.Struct(">10I")
_PROP = struct.Struct(">II")


def _text(raw: bytes, prop: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise SeedfwError(f"property '{prop}' is not UTF-8 text") from None


def header(blob, source="fdt") -> tuple:
    """(totalsize, off_struct, off_strings, size_strings, size_struct) of the FDT at the start
    of `blob`, checked against the bytes present."""
    view = View.of(blob, source, "FDT")
    if len(view) < 40:
        raise SeedfwError("too short for a devicetree header", source)
    magic, total, off_struct, off_strings, _rsv, version, _last, _boot, size_strings, size_struct = \
        view.unpack(_HEADER, 0, "offset 0x0")
    if magic != MAGIC:
        raise SeedfwError(f"bad FDT magic 0x{magic:08x}", source, "offset 0x0")
    if total > len(view) or total < 40 or off_struct + size_struct > total or \
            off_strings + size_strings > total or off_struct < 40:
        raise SeedfwError(f"FDT totalsize {total} / blocks do not fit the {len(view)} bytes present",
                          source)
    if version < 17:
        raise SeedfwError(f"FDT version {version} is older than 17", source)
    return total, off_struct, off_strings, size_strings, size_struct


def parse(blob, source="fdt") -> Node:
    """The node tree of the FDT at the start of `blob` (bytes, mmap or a reading.View).

    Refused (SeedfwError), because U-Boot, fdtget and dumpimage would read it differently from
    us: a duplicated property or node name (they take the first, a dict would keep the last),
    a name that is not UTF-8. Bounded: node/property counts and depth (reading.CAPS)."""
    view = View.of(blob, source, "FDT")
    total, off_struct, off_strings, size_strings, size_struct = header(view, source)
    strings = view.sub(off_strings, size_strings, "strings block")
    pos, end = off_struct, off_struct + size_struct
    stack: list[Node] = []
    root = None
    nodes = props = 0
    names: dict[int, str] = {}

    def bad(why):
        raise SeedfwError(f"damaged FDT structure block: {why}", source, f"offset 0x{pos:x}")

    def node_path(name=None) -> str:
        parts = [n.name for n in stack[1:]] + ([name] if name is not None else [])
        return "/" + "/".join(parts)

    while pos + 4 <= end:
        token = view.u32be(pos, f"offset 0x{pos:x}")
        pos += 4
        if token == BEGIN_NODE:
            stop = view.find(b"\0", pos, end)
            if stop < 0:
                bad("unterminated node name")
            name = strict_utf8(view.bytes(pos, stop - pos), source, f"offset 0x{pos:x}")
            node = Node(name)
            pos = (stop + 4) & ~3
            nodes += 1
            if nodes > CAPS["fdt_nodes"]:
                bad(f"more than {CAPS['fdt_nodes']} nodes: refused")
            if len(stack) >= CAPS["fdt_depth"]:
                bad(f"nodes nested deeper than {CAPS['fdt_depth']}: refused")
            if stack:
                if name in stack[-1].children:
                    bad(f"node '{node_path(name)}' appears twice (U-Boot and fdtget read the "
                        f"first, so the copies could differ): refused")
                stack[-1].children[name] = node
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
            length, name_off = view.unpack(_PROP, pos, f"offset 0x{pos:x}")
            pos += 8
            if pos + length > end or name_off >= size_strings:
                bad("property runs past the block")
            if name_off not in names:
                name_end = strings.find(b"\0", name_off)
                if name_end < 0:
                    bad("property name runs past the strings block")
                names[name_off] = strict_utf8(strings.bytes(name_off, name_end - name_off),
                                              source, f"strings block offset 0x{name_off:x}")
            name = names[name_off]
            props += 1
            if props > CAPS["fdt_props"]:
                bad(f"more than {CAPS['fdt_props']} properties")
            if name in stack[-1].props:
                bad(f"property '{name}' of '{node_path()}' appears twice (U-Boot and fdtget "
                    f"read the first, so the copies could differ): refused")
            # Large values of a mapped file stay a window (no copy): a 256 MiB embedded-data
            # FIT must not cost its size twice (bench/inspect_bounds.py).
            stack[-1].props[name] = view.bytes(pos, length) if length <= LAZY or \
                isinstance(view.buf, bytes) else view.sub(pos, length, f"offset 0x{pos:x}")
            pos = (pos + length + 3) & ~3
        elif token == NOP:
            continue
        elif token == END:
            # dtc and libfdt write the block to end exactly here; bytes counted in
            # size_dt_struct after FDT_END would be read by nobody — refused, not ignored.
            if pos != end:
                bad(f"{end - pos} bytes of the structure block follow FDT_END")
            break
        else:
            bad(f"unknown token {token}")
    if root is None or stack:
        raise SeedfwError("damaged FDT structure block: unbalanced nodes", source)
    return root
