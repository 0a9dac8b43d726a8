"""A streaming FIT writer: the .its our generators write → the bytes `mkimage -f` writes, without
holding any blob in memory.

Why our own (issue 33, bench/fit_pack.py): `mkimage -f` runs dtc, which reads every /incbin/
file whole and writes the whole blob; mkimage then copies that file twice, maps it, hashes it
with U-Boot's portable C sha256 and inserts each hash `value` by moving every byte after it. For
a 256 MiB initramfs that is several passes over the data and the blob's size in memory. Here
each /incbin/ file is read once in CHUNK pieces, hashed while it is copied (hashlib's sha256)
and written once; the layout is computed from the file sizes first, so nothing is patched.

Byte-identical to mkimage 2023.01 (Debian's u-boot-tools) for the .its this project writes
(tests/test_fit_stream.py compares the two on every shape we build): the structure block is
dtc's (nodes and properties in source order, property names in a strings table in the order
first met, a name that is the tail of one already there reusing it, as dtc's
stringtable_insert and libfdt's fdt_find_string_ do), 1024 free bytes follow it (what mkimage
2023.01 writes: dtc's packed output + 1024, compared on 1 to 60 images), and mkimage adds, each as the *first* property of its node (libfdt inserts new
properties right after the node name): `timestamp` (u32 SOURCE_DATE_EPOCH) in the root and
`value` (the sha256) in every hash node of every image, their names appended to the strings
table. When those additions do not fit the free bytes, mkimage retries with the file grown by
1 KiB steps (fdt_open_into), so the total size grows by the fewest whole KiB that fit.

The .its subset read (one error line naming the file and line for anything else): /dts-v1/;
nodes; properties that are empty, a list of "strings", a list of <cells> (32-bit), or one
/incbin/("file") relative to the .its. Hash nodes must say algo = "sha256". Signing is not done
here: fit.build hands signed images to mkimage.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError
from ..reading import open_input, read_text

MAGIC = 0xD00DFEED
CHUNK = 1 << 20              # bytes read, hashed and written at a time (peak memory ~ this)
DTC_PAD = 1024               # free bytes after dtc's blob in mkimage 2023.01's output (measured)
GROW = 1024                  # fit_handle_file's size_inc step
GROW_LIMIT = 64 * 1024       # ... and its limit
BEGIN_NODE, END_NODE, PROP, END = 1, 2, 3, 9
HASH_LEN = {"sha256": 32}

_TOKEN = re.compile(r'\s+|/dts-v1/|/incbin/\(\s*"((?:[^"\\\n]|\\.)*)"\s*\)|"((?:[^"\\\n]|\\.)*)"'
                    r'|<([^>]*)>|[A-Za-z0-9,._+#?@-]+|[{};=,/]')


@dataclass
class Incbin:
    """A property value that is a file's contents, read when the FIT is written."""
    path: Path
    size: int


@dataclass
class ItsNode:
    name: str
    props: list = field(default_factory=list)       # [(name, bytes | Incbin)]
    children: list = field(default_factory=list)    # [ItsNode]


def _unescape(raw: str, where) -> bytes:
    out = re.sub(r'\\(.)', lambda m: m.group(1) if m.group(1) in '"\\' else "\0bad", raw)
    if "\0bad" in out:
        raise SeedfwError("only \\\" and \\\\ escapes are supported in strings", *where)
    return out.encode()


def _cells(raw: str, where) -> bytes:
    words = raw.split()
    try:
        values = [int(w, 0) for w in words]
    except ValueError:
        raise SeedfwError(f"cell list <{raw}> is not numbers", *where) from None
    if any(not 0 <= v <= 0xFFFFFFFF for v in values):
        raise SeedfwError(f"cell list <{raw}> has a value over 32 bits", *where)
    return struct.pack(f">{len(values)}I", *values)


def parse_its(text: str, source, base: Path | None = None, resolve=None) -> ItsNode:
    """The root node of an .its; /incbin/ names go through `resolve(name)` (→ bytes or Incbin)
    or, without it, are files under `base` (the .its directory), sized through seedfw.reading."""
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SeedfwError(f"unsupported .its syntax at {text[pos:pos + 20].split(chr(10))[0]!r}", source,
                              f"line {line}")
        if not m.group(0).isspace():
            tokens.append((m, line))
        line += m.group(0).count("\n")
        pos = m.end()
    it = iter(tokens)

    def take(want=None):
        tok = next(it, None)
        if tok is None:
            raise SeedfwError("unexpected end of the .its", source, f"line {line}")
        if want is not None and tok[0].group(0) != want:
            raise SeedfwError(f"expected '{want}', found '{tok[0].group(0)}'", source,
                              f"line {tok[1]}")
        return tok

    def incbin(name, where):
        if resolve is not None:
            return resolve(name)
        path = (base or Path(".")) / name
        f, size = open_input(path, "image")
        f.close()
        return Incbin(path, size)

    def node(name, where) -> ItsNode:
        n = ItsNode(name)
        while True:
            m, ln = take()
            word = m.group(0)
            if word == "}":
                take(";")
                return n
            where = (source, f"line {ln}")
            if not re.fullmatch(r"[A-Za-z0-9,._+#?@-]+", word):
                raise SeedfwError(f"expected a property or node name, found '{word}'", *where)
            m2, _ = take()
            nxt = m2.group(0)
            if nxt == "{":
                if any(c.name == word for c in n.children):
                    raise SeedfwError(f"node '{word}' appears twice", *where)
                n.children.append(node(word, where))
                continue
            if n.children:
                raise SeedfwError(f"property '{word}' follows a subnode", *where)
            if any(p == word for p, _ in n.props):
                raise SeedfwError(f"property '{word}' appears twice", *where)
            value = b""
            if nxt == "=":
                parts = []
                while True:
                    m3, _ = take()
                    if m3.group(1) is not None:
                        parts.append(incbin(_unescape(m3.group(1), where).decode(), where))
                    elif m3.group(2) is not None:
                        parts.append(_unescape(m3.group(2), where) + b"\0")
                    elif m3.group(3) is not None:
                        parts.append(_cells(m3.group(3), where))
                    else:
                        raise SeedfwError(f"unsupported value '{m3.group(0)}'", *where)
                    sep = take()[0].group(0)
                    if sep == ";":
                        break
                    if sep != ",":
                        raise SeedfwError(f"expected ',' or ';', found '{sep}'", *where)
                if len(parts) > 1 and not all(isinstance(p, bytes) for p in parts):
                    raise SeedfwError("an /incbin/ must be a property's only value", *where)
                value = parts[0] if len(parts) == 1 else b"".join(parts)
            elif nxt != ";":
                raise SeedfwError(f"expected '=', ';' or '{{' after '{word}', found '{nxt}'",
                                  *where)
            n.props.append((word, value))

    take("/dts-v1/")
    take(";")
    take("/")
    take("{")
    root = node("", (source, "line 1"))
    extra = next(it, None)
    if extra is not None:
        raise SeedfwError("only one root node is supported", source, f"line {extra[1]}")
    return root


def _size(value) -> int:
    return value.size if isinstance(value, Incbin) else len(value)


def _pad(n: int) -> int:
    return (n + 3) & ~3


def _hash_nodes(root: ItsNode, source="FIT") -> dict[int, ItsNode]:
    """{id(hash node): its image node} — the nodes mkimage gives a `value`."""
    images = next((c for c in root.children if c.name == "images"), None)
    out = {}
    for image in images.children if images else ():
        for sub in image.children:
            if not sub.name.startswith("hash"):
                continue
            algo = dict(sub.props).get("algo", b"").rstrip(b"\0").decode(errors="replace")
            if algo not in HASH_LEN:
                raise SeedfwError(f"hash node '{image.name}/{sub.name}' has algo '{algo}': only "
                                  f"sha256 is written here", source, "algo")
            if "value" in dict(sub.props):
                raise SeedfwError(f"hash node '{image.name}/{sub.name}' already has a value",
                                  source, "value")
            if "data" not in dict(image.props):
                raise SeedfwError(f"image '{image.name}' has no data", source, "data")
            out[id(sub)] = image
    return out


class _Strings:
    def __init__(self):
        self.table = bytearray()

    def add(self, name: str) -> int:
        raw = name.encode() + b"\0"
        at = self.table.find(raw)          # a tail of a name already there is reused
        if at < 0:
            at = len(self.table)
            self.table += raw
        return at


def layout(root: ItsNode, source="FIT"):
    """(header, pieces, strings, total, (timestamp name offset, value name offset)): pieces are
    bytes, an Incbin, ("data", image id, value) for data that is hashed, ("timestamp", None) and
    ("value", image id) for what mkimage adds."""
    hashes = _hash_nodes(root, source)
    hashed = {id(img) for img in hashes.values()}
    strings = _Strings()
    pieces: list = []
    added = 0                                   # struct bytes mkimage inserts
    dtc_struct = 0

    def put(p, size):
        nonlocal dtc_struct
        pieces.append(p)
        dtc_struct += size

    def walk(n: ItsNode):
        nonlocal added
        raw = n.name.encode() + b"\0"
        put(struct.pack(">I", BEGIN_NODE) + raw + b"\0" * (_pad(len(raw)) - len(raw)),
            _pad(len(raw)) + 4)
        if n is root:                           # libfdt inserts right after the node name
            pieces.append(("timestamp", None))
            added += 12 + 4
        elif id(n) in hashes:
            pieces.append(("value", id(hashes[id(n)])))
            added += 12 + HASH_LEN["sha256"]
        for name, value in n.props:
            size = _size(value)
            put(struct.pack(">III", PROP, size, strings.add(name)), 12)
            put(("data", id(n), value) if name == "data" and id(n) in hashed else value, size)
            if _pad(size) != size:
                put(b"\0" * (_pad(size) - size), _pad(size) - size)
        for c in n.children:
            walk(c)
        put(struct.pack(">I", END_NODE), 4)

    walk(root)
    put(struct.pack(">I", END), 4)
    dtc_total = 40 + 16 + dtc_struct + len(strings.table) + DTC_PAD
    ts_off = strings.add("timestamp")
    value_off = strings.add("value") if hashes else None
    size_struct, size_strings = dtc_struct + added, len(strings.table)
    need = 40 + 16 + size_struct + size_strings
    grow = 0
    while dtc_total + grow < need:
        grow += GROW
        if grow >= GROW_LIMIT:
            raise SeedfwError("FIT properties do not fit mkimage's 64 KiB growth limit", source)
    total = dtc_total + grow
    header = struct.pack(">10I", MAGIC, total, 56, 56 + size_struct, 40, 17, 16, 0, size_strings,
                         size_struct) + b"\0" * 16
    return header, pieces, bytes(strings.table), total, (ts_off, value_off)


def write(root: ItsNode, target, epoch: int, source="FIT") -> int:
    """Write the FIT of `root` at `target` (a path the caller makes atomic); its size."""
    header, pieces, strings, total, (ts_off, value_off) = layout(root, source)
    digests: dict[int, bytes] = {}
    buf = bytearray(header)
    written = 0
    with open(target, "wb", buffering=0) as out:
        def flush():
            nonlocal written
            if buf:
                out.write(buf)
                written += len(buf)
                buf.clear()

        for p in pieces:
            if isinstance(p, tuple) and p[0] == "timestamp":
                buf += struct.pack(">IIII", PROP, 4, ts_off, epoch & 0xFFFFFFFF)
                continue
            if isinstance(p, tuple) and p[0] == "value":
                buf += struct.pack(">III", PROP, HASH_LEN["sha256"], value_off) + digests[p[1]]
                continue
            h = key = None
            if isinstance(p, tuple):            # ("data", image id, value): hashed as copied
                h, key, p = hashlib.sha256(), p[1], p[2]
            if isinstance(p, Incbin):
                flush()
                written += _copy(p, out, h)
            else:
                if h is not None:
                    h.update(p)
                buf += p
                if len(buf) >= CHUNK:
                    flush()
            if key is not None:
                digests[key] = h.digest()
        buf += strings
        flush()
        out.write(b"\0" * (total - written))
    return total


def _copy(src: Incbin, out, h) -> int:
    """Copy the file in CHUNK reads, hashing as it goes; refused if its size changed."""
    f, size = open_input(src.path, "image")
    if size != src.size:
        f.close()
        raise SeedfwError("changed while the FIT was written", src.path)
    block = bytearray(CHUNK)
    view = memoryview(block)
    done = 0
    with f:
        while True:
            n = f.readinto(block)
            if not n:
                break
            done += n
            if done > size:
                raise SeedfwError("grew while the FIT was written", src.path)
            if h is not None:
                h.update(view[:n])
            out.write(view[:n])
    if done != size:
        raise SeedfwError("shrank while the FIT was written", src.path)
    return size


def write_its(its, target, epoch: int, resolve=None) -> int:
    """Parse the .its file `its` (its /incbin/ files relative to it) and write the FIT."""
    its = Path(its)
    root = parse_its(read_text(its, "its"), its, its.parent, resolve)
    return write(root, target, epoch, its)
