"""dump(obj, fp) / dumps(obj): exactly the text of json.dumps(obj, indent=2), several times faster
for documents made of long lists of flat records (`invoke stats --json`: 4,541 symbol rows of
libasan, 743 KB of text).

Why: Python 3.11's json uses its C encoder only without indent; with indent=2 every value goes
through the pure-Python iterencode (13.5 ms of `invoke stats --json`'s ~29 ms beyond start-up on
libasan, bench/stats_speed.py). A first version here re-indented the C encoder's compact text
with str.replace; in a fresh process that still cost ~16 ms, most of it the kernel handing out
fresh pages (3,000 minor faults: the C encoder's pieces, three 743 KB replace results and the
joined copies at every nesting level). Now:

  * a list of records of one shape (lists or tuples of one length, or dicts with the same str
    keys in the same order; values str, int, float, bool or None) is a table (_table): its
    columns are zipped once and typed at C level, and each row is its cells with the fixed
    text between them, zipped across the columns and joined _CHUNK_ROWS rows at a time (str
    columns through json's own C string encoder, unless the column needs no escaping at
    all), so the memory it touches is a chunk's, reused chunk after chunk;
  * everything else goes through _iterencode, which follows json's pure-Python encoder rule by
    rule (isinstance order, key conversion, NaN/Infinity, circular-reference check), so the
    text is json's for any input, and json's TypeError/ValueError where json raises one;
  * dump writes ~64 KiB pieces to fp: the whole text never exists as one string.

Only `_json` (json's C accelerator, a built-in module) is imported, not `json`: json's package
pulls in its decoder and scanner, ~1 ms of a process whose whole budget is ~19 ms.
Tested equal to json.dumps(obj, indent=2) in tests/test_stats_json.py.
"""

from __future__ import annotations

from itertools import chain, islice, repeat

try:
    from _json import encode_basestring_ascii as _str
except ImportError:             # an interpreter without the accelerator: json's own fallback
    from json.encoder import py_encode_basestring_ascii as _str

_CHUNK_ROWS = 256               # rows per written piece: ~40 KB of symbol rows
_FLUSH = 1 << 16                # dump() writes once this many characters are pending
_INF = float("inf")
_FLAT = frozenset((str, int, float, bool, type(None)))


def _float(v: float) -> str:
    if v != v:
        return "NaN"
    if v == _INF:
        return "Infinity"
    if v == -_INF:
        return "-Infinity"
    return float.__repr__(v)


def _scalar(v) -> str:
    """A value of a table cell (one of _FLAT's exact types)."""
    t = type(v)
    if t is str:
        return _str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if t is int:
        return int.__repr__(v)
    return _float(v)


def _table(items: list, depth: int):
    """Pieces of the text of `items` at `depth` when it is a table (see the module doc), else
    None. Every check runs at C level (set/map/zip/join): a Python loop over the 27,000 values
    of libasan's symbol rows would cost as much as the table saves."""
    kinds = set(map(type, items))
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is dict:
        shapes = set(map(tuple, items))
        if len(shapes) != 1:
            return None
        keys = shapes.pop()
        if not keys or set(map(type, keys)) != {str}:
            return None
        columns = list(zip(*map(dict.values, items)))
        labels = [_str(k) + ": " for k in keys]
        op, cl = "{", "}"
    elif kind is list or kind is tuple:
        if len(set(map(len, items))) != 1 or not items[0]:
            return None
        columns = list(zip(*items))
        labels = [""] * len(columns)
        op, cl = "[", "]"
    else:
        return None
    # Each row is written as its cells with the text between them: [before, cell 0, between,
    # cell 1, ..., cell n-1, after], the pieces zipped across the columns and joined a chunk
    # of rows at a time, so no per-row Python call (a %-template per row cost twice as much).
    inner, row = "  " * (depth + 2), "  " * (depth + 1)
    quotes = []
    for i, column in enumerate(columns):
        types = set(map(type, column))
        if not types <= _FLAT:
            return None              # a nested container: the general path
        plain = types == {str} and _plain(column)
        if types == {int}:
            columns[i] = map(int.__repr__, column)      # json's own int text
        elif not plain:
            columns[i] = map(_str if types == {str} else _scalar, column)
        quotes.append('"' if plain else "")   # plain: json's encoder would only add quotes
    between = [",\n" + row + op + "\n" + inner + labels[0] + quotes[0]]
    between += [quotes[i - 1] + ",\n" + inner + labels[i] + quotes[i]
                for i in range(1, len(columns))]
    pieces = [repeat(between[0])]
    for i, column in enumerate(columns):
        pieces += [column, repeat(between[i + 1]) if i + 1 < len(columns) else
                   repeat(quotes[-1] + "\n" + row + cl)]
    return _table_pieces(zip(*pieces), "  " * depth)


def _plain(column) -> bool:
    """Whether json's ASCII string encoder leaves every str of `column` as it is: printable
    ASCII (space to ~) without a quote or a backslash. Four C scans of the joined column cost
    less than calling the encoder once per cell (4 x 4,541 calls for the symbol rows)."""
    text = "".join(column)
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _table_pieces(rows, outer: str):
    """Every row's pieces start with ",\n": the first chunk's first two characters go."""
    chunk = "".join(chain.from_iterable(islice(rows, _CHUNK_ROWS)))
    yield "[" + chunk[1:]
    while True:
        chunk = "".join(chain.from_iterable(islice(rows, _CHUNK_ROWS)))
        if not chunk:
            break
        yield chunk
    yield "\n" + outer + "]"


def _key(k) -> str:
    """A dict key as json.dumps converts it (skipkeys=False)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def _iterencode(o, depth: int, markers: dict):
    """json.encoder._make_iterencode's rules (indent=2, ensure_ascii, allow_nan, check_circular,
    no sort_keys, no default): the same tests in the same order."""
    if isinstance(o, str):
        yield _str(o)
    elif o is None:
        yield "null"
    elif o is True:
        yield "true"
    elif o is False:
        yield "false"
    elif isinstance(o, int):
        yield int.__repr__(o)
    elif isinstance(o, float):
        yield _float(o)
    elif isinstance(o, (list, tuple)):
        if not o:
            yield "[]"
            return
        if id(o) in markers:
            raise ValueError("Circular reference detected")
        markers[id(o)] = o
        table = _table(o, depth) if type(o) is list or type(o) is tuple else None
        if table is not None:
            yield from table
        else:
            sep = ",\n" + "  " * (depth + 1)
            first = True
            for v in o:
                yield "[" + sep[1:] if first else sep
                first = False
                yield from _iterencode(v, depth + 1, markers)
            yield "\n" + "  " * depth + "]"
        del markers[id(o)]
    elif isinstance(o, dict):
        if not o:
            yield "{}"
            return
        if id(o) in markers:
            raise ValueError("Circular reference detected")
        markers[id(o)] = o
        sep = ",\n" + "  " * (depth + 1)
        first = True
        for k, v in o.items():
            yield ("{" + sep[1:] if first else sep) + _str(_key(k)) + ": "
            first = False
            yield from _iterencode(v, depth + 1, markers)
        yield "\n" + "  " * depth + "}"
        del markers[id(o)]
    else:
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(obj) -> str:
    """json.dumps(obj, indent=2), the same text."""
    return "".join(_iterencode(obj, 0, {}))


def dump(obj, fp) -> None:
    """Write json.dumps(obj, indent=2)'s text to the text file fp, ~64 KiB at a time (as
    json.dump, a TypeError midway leaves what was written before it)."""
    write = fp.write
    pending, size = [], 0
    for piece in _iterencode(obj, 0, {}):
        pending.append(piece)
        size += len(piece)
        if size >= _FLUSH:
            write("".join(pending) if len(pending) > 1 else piece)
            pending.clear()
            size = 0
    if pending:
        write("".join(pending))
