"""The one reading discipline for bytes seedfw did not make (docs/hostile-input.md).

Every reader of outside bytes (FIT/FDT, GPT, idblock, boot package, LZ4 containers, DVFS
tables, RKNN JSON, YAML/JSON inputs) goes through here:

- `read_input(path, kind)` opens only regular files (a device, FIFO or directory is one error
  line, checked with os.stat before open, and the open is O_NONBLOCK so a FIFO swapped in
  between cannot block), refuses files over the format's size cap, and maps the file read-only:
  a 256 MiB disk image costs pages touched, never a second copy.
- `View` is a bounded window over such bytes: every offset and length is checked against the
  window before use and a bad one raises SeedfwError(file, field, message) — never a
  struct.error/IndexError, never a silent short slice.
- The caps (CAPS) are constants, one per thing that a hostile file could make large: entry
  counts, decompressed sizes, hashed-bytes totals; docs/hostile-input.md tables them.
- `plain(text)` makes a name from a file safe for a terminal table (control characters shown
  as \\xNN, never interpreted, never rich markup).

Why mmap rather than read(): the bench (bench/inspect_bounds.py) holds inspect to 512 MiB RSS
for any file up to 256 MiB; a bytes copy plus the slices the readers took used to triple that.
"""

from __future__ import annotations

import os
import re
import stat
import struct
from pathlib import Path

from .errors import SeedfwError

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Size caps per input kind (bytes). An input over its cap is refused before it is read.
SIZE_CAPS = {
    "image": 4 * GIB,          # anything `invoke inspect` is given (disk images are the largest)
    "pubkey": 1 * MIB,         # a public-key DTB (mkimage -K): a few KiB
    "json": 16 * MIB,          # manifests, reports, RKNN metadata
    "yaml": 4 * MIB,           # board.yaml, models.yaml, dvfs.yaml, case files
    "kconfig": 4 * MIB,        # .config, fragments
    "its": 1 * MIB,            # a FIT source (.its): a few KiB, its blobs are /incbin/ files
}

# Structure caps: counts and totals a file can declare. Over a cap = one error line.
CAPS = {
    "fdt_nodes": 4096,            # FDT nodes in one blob (a FIT of ours has ~30)
    "fdt_props": 65536,           # FDT properties in one blob
    "fdt_depth": 32,              # nesting depth of FDT nodes
    "fit_images": 256,            # images in /images of a FIT
    "package_entries": 256,       # boot-package table entries (the format allows 65535)
    "gpt_entries": 128,           # GPT partition entries read (UEFI's default array size)
    "lz4_output": 128 * MIB,      # bytes one LZ4 container may expand to
    "lz4_blocks": 65536,          # blocks in one container
    "lz4_total": 512 * MIB,       # bytes all LZ4 containers of one file may expand to
    "dvfs_domains": 64,           # DVFS domains in one table
    "dvfs_opps": 256,             # OPPs in one domain
    "dvfs_hints": 4096,           # hint records in one table
    "rsa_bits": 4096,             # largest RSA modulus a signature is checked with
    "json_depth": 64,             # nesting depth of any JSON document we read
    "yaml_nodes": 100000,         # nodes in one YAML document
    "hashed_factor": 4,           # bytes hashed for one file <= factor × its size (+1 MiB):
                                  # room for 4 hash nodes per FIT image (sha256+sha1+...)
}


def refuse_special(path: Path) -> os.stat_result:
    """os.stat of `path`, or one error line if it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SeedfwError("file not found", path) from None
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    if stat.S_ISDIR(st.st_mode):
        raise SeedfwError("is a directory, not a file", path)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a character device"
                if stat.S_ISCHR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise SeedfwError(f"is {kind}, not a regular file: refused", path)
    return st


def _open_regular(path: Path, kind: str) -> tuple[int, int]:
    refuse_special(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    st = os.fstat(fd)            # what was opened, not what the name pointed at before
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise SeedfwError("is not a regular file: refused", path)
    cap = SIZE_CAPS[kind]
    if st.st_size > cap:
        os.close(fd)
        raise SeedfwError(f"{st.st_size} bytes is over the {cap >> 20} MiB limit for "
                          f"{kind} inputs", path)
    return fd, st.st_size


def read_input(path, kind: str = "image"):
    """The file's bytes as a read-only buffer (mmap, or b"" when empty), refused unless it is
    a regular file within SIZE_CAPS[kind]."""
    path = Path(path)
    fd, size = _open_regular(path, kind)
    try:
        if size == 0:
            return b""
        import mmap              # here: most readers (stats, the FIT writer) never map
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    finally:
        os.close(fd)


def open_input(path, kind: str = "image"):
    """(unbuffered binary file, fstat size) of a regular file within SIZE_CAPS[kind], for
    readers that stream it in chunks (the FIT writer) rather than map it."""
    fd, size = _open_regular(Path(path), kind)
    return os.fdopen(fd, "rb", buffering=0), size


def read_bytes(path, kind: str) -> bytes:
    """Like read_input, but a bytes copy (for small text formats)."""
    path = Path(path)
    fd, size = _open_regular(path, kind)
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            data = f.read(size + 1)          # what fstat saw, +1 to notice growth
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    if len(data) > size:                 # grew since fstat
        raise SeedfwError("changed while it was read", path)
    return data


def read_text(path, kind: str) -> str:
    data = read_bytes(path, kind)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SeedfwError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", path,
                          f"line {line}") from None


class View:
    """A bounded window [start, end) over a buffer (bytes or mmap); offsets are window-relative.

    Every accessor checks its range and raises SeedfwError(source, field, ...) — `what` names
    the structure in messages ("GPT", "FIT") — so a reader never reads past what it was given."""

    __slots__ = ("buf", "start", "end", "source", "what")

    def __init__(self, buf, start: int = 0, end: int | None = None, source=None, what="data"):
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else end
        if not 0 <= self.start <= self.end <= len(buf):
            raise SeedfwError(f"{what} window 0x{start:x}..0x{self.end:x} is outside the "
                              f"{len(buf)} bytes present", source)
        self.source = source
        self.what = what

    @classmethod
    def of(cls, data, source=None, what="data") -> "View":
        return data if isinstance(data, View) else cls(data, source=source, what=what)

    def __len__(self) -> int:
        return self.end - self.start

    def fail(self, field: str, message: str):
        raise SeedfwError(message, self.source, field)

    def check(self, offset: int, length: int, field: str) -> None:
        if offset < 0 or length < 0 or offset + length > len(self):
            self.fail(field, f"{self.what}: {length} bytes at offset 0x{offset:x} run past the "
                             f"end ({len(self)} bytes)")

    def has(self, offset: int, length: int) -> bool:
        return 0 <= offset and 0 <= length and offset + length <= len(self)

    def sub(self, offset: int, length: int, field: str, what: str | None = None) -> "View":
        self.check(offset, length, field)
        return View(self.buf, self.start + offset, self.start + offset + length, self.source,
                    what or self.what)

    def tail(self, offset: int, field: str, what: str | None = None) -> "View":
        return self.sub(offset, max(len(self) - offset, 0) if offset <= len(self) else -1,
                        field, what)

    def bytes(self, offset: int = 0, length: int | None = None, field: str = "data") -> bytes:
        length = len(self) - offset if length is None else length
        self.check(offset, length, field)
        return bytes(self.buf[self.start + offset:self.start + offset + length])

    def peek(self, offset: int, length: int) -> bytes:
        """Up to `length` bytes at `offset` (shorter at the end; b"" past it): for magics."""
        if offset < 0 or offset >= len(self):
            return b""
        return bytes(self.buf[self.start + offset:min(self.start + offset + length, self.end)])

    def unpack(self, st: struct.Struct, offset: int, field: str) -> tuple:
        self.check(offset, st.size, field)
        return st.unpack_from(self.buf, self.start + offset)

    def u32be(self, offset: int, field: str) -> int:
        return self.unpack(_U32BE, offset, field)[0]

    def find(self, sub: bytes, start: int, end: int | None = None) -> int:
        end = len(self) if end is None else min(end, len(self))
        at = self.buf.find(sub, self.start + start, self.start + end)
        return at - self.start if at >= 0 else -1

    def memory(self) -> memoryview:
        return memoryview(self.buf)[self.start:self.end]

    def digest(self, algo: str) -> bytes:
        import hashlib           # here, not at the top: _hashlib costs ~2 ms of every start-up
        h = hashlib.new(algo)
        mv = memoryview(self.buf)
        for at in range(self.start, self.end, 4 * MIB):     # bounded chunks, no copy
            h.update(mv[at:min(at + 4 * MIB, self.end)])
        return h.digest()

    def is_zero(self) -> bool:
        mv = memoryview(self.buf)
        zero = bytes(1 * MIB)
        for at in range(self.start, self.end, 1 * MIB):
            n = min(1 * MIB, self.end - at)
            if mv[at:at + n] != zero[:n]:
                return False
        return True


_U32BE = struct.Struct(">I")


class HashBudget:
    """Bounds the bytes hashed or expanded for one file: overlapping ranges (a FIT with 2,500
    images over one span, a package whose entries all cover the file) cannot multiply the work."""

    def __init__(self, file_size: int, source=None):
        self.left = CAPS["hashed_factor"] * file_size + MIB
        self.source = source

    def expand(self, n: int, field: str) -> None:
        """Decompressed bytes: counted apart (models compress well), capped per file."""
        self.expanded = getattr(self, "expanded", 0) + n
        if self.expanded > CAPS["lz4_total"]:
            raise SeedfwError(f"the LZ4 containers of this file expand to more than "
                              f"{CAPS['lz4_total']} bytes: refused", self.source, field)

    def spend(self, n: int, field: str) -> None:
        self.left -= n
        if self.left < 0:
            raise SeedfwError(f"the ranges this file declares add up to more than "
                              f"{CAPS['hashed_factor']}x its size (overlapping data): refused",
                              self.source, field)


def cap(name: str, value: int, source=None, field: str | None = None, what: str = "") -> None:
    """SeedfwError when `value` exceeds CAPS[name]."""
    if value > CAPS[name]:
        raise SeedfwError(f"{what or name} {value} is over the limit of {CAPS[name]}", source,
                          field)


def strict_utf8(raw: bytes, source, field: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise SeedfwError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at {exc.start})", source,
                          field) from None


def loads_json(text: str | bytes, source=None, field: str | None = None, max_bytes=None,
               parse_int=None):
    """json.loads with a size and a nesting-depth limit (CAPS json_depth): a 100,000-level
    document is one error line, not a RecursionError; so is an integer past Python's
    4,300-digit conversion limit. `parse_int`: json.loads's hook (loads_json_strict's)."""
    limit = SIZE_CAPS["json"] if max_bytes is None else max_bytes
    if len(text) > limit:
        raise SeedfwError(f"JSON of {len(text)} bytes is over the {limit >> 20} MiB limit",
                          source, field)
    if isinstance(text, bytes):
        text = strict_utf8(text, source, field or "JSON")
    check_depth(text, source, field)
    import json         # here, not at the top: `invoke stats --json` reads no JSON (~1 ms)
    try:
        return json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise SeedfwError(f"not valid JSON: {exc.msg}", source,
                          field or f"line {exc.lineno}") from None
    except ValueError as exc:       # int() past sys.get_int_max_str_digits()
        raise SeedfwError(f"not valid JSON: {exc}", source, field or "JSON") from None
    except RecursionError:          # check_depth makes this unreachable; kept as a backstop
        raise SeedfwError("JSON nested too deeply", source, field) from None


_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def check_depth(text: str, source, field) -> None:
    """Bracket depth outside strings; over CAPS json_depth is refused (before json.loads,
    whose recursion a deep document would exhaust)."""
    limit = CAPS["json_depth"]
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub('""', text)):
        depth += 1 if m.group() in "[{" else -1
        if depth > limit:
            raise SeedfwError(f"JSON nested deeper than {limit} levels: refused", source, field)


_CONTROL = {c: f"\\x{c:02x}" for c in list(range(0x20)) + [0x7F] + list(range(0x80, 0xA0))}


def plain(text) -> str:
    """A name from a file, safe to show in a terminal: control characters (ESC, CR, NUL, C1)
    become visible \\xNN escapes. Used with rich Text objects (never markup) in tables."""
    return str(text).translate(_CONTROL)


# Characters that change how the text after them is shown: bidi embeddings, overrides and
# isolates (U+202A..U+202E, U+2066..U+2069) and marks; other invisible ones are caught by
# their Unicode category in escaped_name.
_INVISIBLE_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs")


def escaped_name(raw) -> str:
    """A name from a file system (bytes, or text) shown unambiguously and safely: bytes that
    are not UTF-8 become \\xNN, control characters (C0, DEL, C1) \\xNN, bidi controls,
    invisible and separator characters (U+202E, U+200B, U+2028, NBSP: categories Cf, Zl, Zp,
    Zs, Co, Cn) \\uNNNN, and `\\`, `/` and a space at either end \\xNN too — so two different
    names never look the same, a name never looks like a path, and none moves the cursor,
    colours, links (OSC 8) or reverses the text after it. `plain` leaves the result as is."""
    import unicodedata
    if isinstance(raw, (bytes, bytearray, memoryview)):
        text = bytes(raw).decode("utf-8", "surrogateescape")
    else:
        text = str(raw)
    out = []
    for ch in text:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:                   # surrogateescape: a byte that is not UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x20 or o == 0x7F or ch in "\\/":
            out.append(f"\\x{o:02x}")
        elif o >= 0x80 and unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    if out and out[0] == " ":
        out[0] = "\\x20"
    if len(out) > 1 and out[-1] == " ":
        out[-1] = "\\x20"
    return "".join(out)

# Model blobs and ONNX sources (models.yaml `path:`, `compile.source.onnx`): they are read whole
# (hashed, checked, embedded in a partition of at most 16 MiB), so a 3 GiB sparse file is refused
# by size before a byte is read instead of ending in a MemoryError. 256 MiB leaves an FP32 ONNX
# room to be four times its INT8 blob.
SIZE_CAPS["model"] = 256 * MIB

# ---- line logs (serial consoles, UART captures) ---------------------------------------------
# A log is a user's file like any other: refused over this cap, never silently cut (one boot's
# serial console is a few MiB; a 2 GiB file is not a boot log). Within it the file is read in
# 4 MiB chunks and scanned with bytes.find/count, so the time is the memchr's, not a Python
# loop per line, and the memory one chunk (an mmap of a 256 MiB sparse log took 6 s of page
# faults and 280 MiB RSS; read() takes 0.3 s).
SIZE_CAPS["log"] = 256 * MIB
LOG_CHUNK = 4 * MIB


def find_lines(buf, prefix: bytes, max_line: int):
    """(line number, bytes) of every line of `buf` (bytes) that starts with `prefix`, in order;
    a line longer than `max_line` comes back cut to max_line + 1 bytes (so the caller sees that
    it is over, without holding it). A trailing CR is dropped."""
    needle = b"\n" + prefix
    at = 0 if buf[:len(prefix)] == prefix else _after(buf.find(needle))
    line, counted = 1, 0
    while at >= 0:
        line += buf.count(b"\n", counted, at)
        counted = at
        end = buf.find(b"\n", at, at + max_line + 2)      # a CR before it may make it + 1
        stop = end if end >= 0 else min(at + max_line + 2, len(buf))
        text = buf[at:stop]
        if (end >= 0 or stop == len(buf)) and text.endswith(b"\r"):     # the line's whole
            text = text[:-1]
        yield line, text[:max_line + 1]
        at = _after(buf.find(needle, at))


def _after(found: int) -> int:
    return found + 1 if found >= 0 else -1


def log_lines(path, prefix: bytes, max_line: int, digest=None, kind: str = "log",
              chunk_size: int = LOG_CHUNK):
    """find_lines over a log file read through the door (regular files only, SIZE_CAPS[kind]),
    streamed in LOG_CHUNK pieces; `digest` (a hashlib object) is fed every byte on the way.
    A line that spans chunks is carried (only its first max_line + 2 bytes when it is long)."""
    path = Path(path)
    fd, size = _open_regular(path, kind)
    with os.fdopen(fd, "rb", closefd=True) as f:
        yield from stream_lines(f, size, path, prefix, max_line, digest, chunk_size)


def stream_lines(f, size: int, path, prefix: bytes, max_line: int, digest=None,
                 chunk_size: int = LOG_CHUNK):
    """log_lines' loop over an open binary file `f` of `size` bytes (fstat's)."""
    keep = max(max_line + 2, len(prefix))
    number, carry, cut, left = 1, b"", False, size
    while True:
        try:
            chunk = f.read(min(chunk_size, left) if left > 0 else 1)
        except OSError as exc:
            raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
        if left <= 0 or not chunk:
            if chunk or left > 0:
                raise SeedfwError("changed while it was read", path)
            break
        left -= len(chunk)
        if digest is not None:
            digest.update(chunk)
        if cut:                         # inside a long line: skip to its end
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            yield from _numbered(find_lines(carry + b"\n", prefix, max_line), number)
            number, carry, cut, chunk = number + 1, b"", False, chunk[nl + 1:]
        buf = carry + chunk
        last = buf.rfind(b"\n") + 1
        yield from _numbered(find_lines(buf[:last], prefix, max_line), number)
        number += buf.count(b"\n", 0, last)
        carry = buf[last:]
        if len(carry) > keep:
            carry, cut = carry[:keep], True
    if carry:
        yield from _numbered(find_lines(carry, prefix, max_line), number)


def _numbered(found, first: int):
    for n, text in found:
        yield first + n - 1, text


def digest_file(path, kind: str = "log", algo: str = "sha256") -> tuple[int, str]:
    """(size, hex digest) of a regular file within SIZE_CAPS[kind], hashed in LOG_CHUNK reads."""
    import hashlib
    h = hashlib.new(algo)
    path = Path(path)
    fd, _size = _open_regular(path, kind)
    n = 0
    with os.fdopen(fd, "rb", closefd=True) as f:
        while (chunk := f.read(LOG_CHUNK)):
            h.update(chunk)
            n += len(chunk)
    return n, h.hexdigest()

def loads_json_strict(text: str | bytes, source=None, field: str | None = None, max_bytes=None):
    """loads_json for documents whose numbers are meant as numbers (counters, report inputs):
    NaN, Infinity and 1e999 (which json.loads turns into floats nobody can compare or print
    as a count) and integers longer than Python's 4,300-digit conversion limit (a ValueError
    from json.loads) are one error line naming the field, never a value that leaks into a
    report as "nan bytes"."""

    def whole(digits: str) -> int:
        if len(digits.lstrip("-")) > 64:        # no count of ours needs more than 64 digits
            raise SeedfwError(f"an integer of {len(digits.lstrip('-'))} digits: refused",
                              source, field or "JSON")
        return int(digits)

    data = loads_json(text, source, field, max_bytes, parse_int=whole)
    bad = first_non_finite(data)
    if bad is not None:
        where, value = bad
        raise SeedfwError(f"{value} is not a finite number: refused", source,
                          ".".join(p for p in (field, where) if p) or None)
    return data


def first_non_finite(data) -> tuple[str, str] | None:
    """(field path, 'NaN'|'Infinity'|'-Infinity') of the first non-finite float in a parsed
    JSON value, or None. Iterative (the depth is bounded, but no recursion is needed); keys in
    the path are shown plain (control bytes escaped)."""
    stack = [("", data)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, float) and node != node:
            return where or "(top level)", "NaN"
        if isinstance(node, float) and node in (float("inf"), float("-inf")):
            return where or "(top level)", "Infinity" if node > 0 else "-Infinity"
        if isinstance(node, dict):
            stack += [(f"{where}.{plain(k)}" if where else plain(k), v)
                      for k, v in reversed(list(node.items()))]
        elif isinstance(node, list):
            stack += [(f"{where}[{i}]", v) for i, v in reversed(list(enumerate(node)))]
    return None


def head(path, n: int, kind: str = "image") -> bytes:
    """The first `n` bytes of a regular file (a format sniff), through the same checks as
    read_input: a FIFO or device is refused, never opened blocking."""
    fd, _size = _open_regular(Path(path), kind)
    try:
        return os.pread(fd, n, 0)
    finally:
        os.close(fd)
