"""dumps(obj): exactly the text of json.dumps(obj, indent=2), several times faster for documents
made of long lists of flat records (`invoke stats --json`: 4,541 symbols of libasan).

Why: Python 3.11's json uses its C encoder only without indent; with indent=2 every value goes
through the pure-Python iterencode (13.5 ms of `invoke stats --json`'s ~29 ms beyond start-up on
libasan, bench/stats_speed.py). Here a list of flat dicts or flat lists (stats' sections and
symbol rows) is written by json's C encoder in one call and re-indented (_flat_list); anything
else recurses the way json's encoder does. A value
json would treat specially (non-str keys, other types, subclasses of str/int/float) makes the
whole call fall back to json.dumps, so the output never differs (tests/test_stats_json.py).
"""

from __future__ import annotations

import json
from itertools import chain
from json.encoder import encode_basestring_ascii as _str

_CONST = {None: "null", True: "true", False: "false"}


class _Fallback(Exception):
    pass


def _float(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


_SCALAR = {str: _str, int: int.__repr__, float: _float}


def _scalar(v) -> str:
    t = type(v)
    if t is bool or v is None:
        return _CONST[v]
    enc = _SCALAR.get(t)
    if enc is None:
        raise _Fallback
    return enc(v)


_FLAT = {str, int, float, bool, type(None)}


def _flat_list(items: list, depth: int) -> str | None:
    """The text of a list of non-empty flat dicts (str keys) or flat lists (scalar values) at
    `depth`, or None if it is not one. json's C encoder writes it, with a raw newline as the
    item separator: a raw newline appears nowhere else in its output (strings escape it), so
    the newlines can then be turned into indent=2's ",\n" + indentation, and the ones between
    containers (the only places a closing bracket is followed by a newline) into the break
    between two items."""
    # Checked with C-level iteration (map/chain/set): a Python loop over the 27,000 values of
    # libasan's symbol rows would cost as much as the encoding saves.
    kinds = set(map(type, items))
    if not all(items):
        return None
    kind = dict if kinds == {dict} else list if kinds <= {list, tuple} else None
    if kind is None:
        return None
    if kind is dict:
        if set(map(type, chain.from_iterable(items))) != {str}:
            return None
        values = chain.from_iterable(map(dict.values, items))
    else:
        values = chain.from_iterable(items)
    if not set(map(type, values)) <= _FLAT:
        return None
    text = json.dumps(items, separators=("\n", ": "))
    op, cl = "{}" if kind is dict else "[]"
    inner, outer = "  " * (depth + 2), "  " * (depth + 1)
    body = text[2:-2].replace(cl + "\n" + op, "\0").replace("\n", ",\n" + inner)
    body = body.replace("\0", "\n" + outer + cl + ",\n" + outer + op + "\n" + inner)
    return ("[\n" + outer + op + "\n" + inner + body + "\n" + outer + cl + "\n" + "  " * depth
            + "]")


def _encode(obj, depth: int) -> str:
    t = type(obj)
    if t is dict:
        if not obj:
            return "{}"
        inner = "  " * (depth + 1)
        parts = []
        for k, v in obj.items():
            if type(k) is not str:
                raise _Fallback
            parts.append(inner + _str(k) + ": " + _encode(v, depth + 1))
        return "{\n" + ",\n".join(parts) + "\n" + "  " * depth + "}"
    if t is list or t is tuple:
        if not obj:
            return "[]"
        fast = _flat_list(obj, depth) if type(obj[0]) in (dict, list, tuple) else None
        if fast is not None:
            return fast
        inner = "  " * (depth + 1)
        return ("[\n" + ",\n".join(inner + _encode(v, depth + 1) for v in obj) + "\n"
                + "  " * depth + "]")
    return _scalar(obj)


def dumps(obj) -> str:
    """json.dumps(obj, indent=2), the same text."""
    try:
        return _encode(obj, 0)
    except _Fallback:
        return json.dumps(obj, indent=2)
