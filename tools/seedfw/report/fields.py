"""Typed field checks for the report's inputs (report/inputs.py): every JSON document another
stage — or a hostile user — left in an output directory is checked against a small schema
before a section reads it, so a number where a string belongs, a string where a count belongs,
a negative byte count or a missing key is one error line naming the file and the field
(`error: <file>: <field>: must be ...`), never a TypeError/KeyError in a renderer.

A schema is written in Python literals, next to the reader that uses it:

    "str" "count" "number" "bool" "any"    a scalar; "count" = a non-negative integer (not a
                                           bool), "number" = a finite int or float
    "str?" "count?" ...                    the same, or null, or absent from its object
    {"key": spec, "opt?": spec}            an object with those keys (others are allowed);
                                           a key ending in "?" may be absent
    {"*": spec}                            an object whose every value matches spec (a map)
    [spec]                                 a list whose every item matches spec

Non-finite floats never reach here: reading.loads_json_strict refuses them while parsing.
Field paths name keys as they are in the file, made plain (control bytes shown as \\xNN), so
the error line itself cannot carry a terminal escape.
"""

from __future__ import annotations

import math

from ..errors import SeedfwError
from ..reading import plain

_WHAT = {"str": "a string", "count": "a non-negative whole number", "number": "a number",
         "bool": "true or false", "any": "a value"}


def describe(value) -> str:
    """What a JSON value is, without echoing it (it may be huge or hostile)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return f"the number {value}" if abs(value) < 10 ** 20 else "a number"
    if isinstance(value, float):
        return f"the number {value:g}" if math.isfinite(value) else "a non-finite number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _scalar(value, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return kind == "number" or (isinstance(value, int) and value >= 0)


def _join(where: str, key) -> str:
    return f"{where}.{plain(key)}" if where else plain(key)


def check(value, spec, source, where: str = ""):
    """`value` if it matches `spec`, else SeedfwError(source, field path). Iterative: the
    schemas are shallow, but a map of maps may hold many entries."""
    stack = [(value, spec, where)]
    while stack:
        node, sp, at = stack.pop()
        field = at or "(top level)"
        if isinstance(sp, str):
            optional = sp.endswith("?")
            kind = sp.rstrip("?")
            if node is None and optional:
                continue
            if not _scalar(node, kind):
                if kind == "count" and isinstance(node, int) and not isinstance(node, bool):
                    raise SeedfwError(f"must not be negative ({node})", source, field)
                raise SeedfwError(f"must be {_WHAT[kind]}, not {describe(node)}", source, field)
        elif isinstance(sp, list):
            if not isinstance(node, list):
                raise SeedfwError(f"must be a list, not {describe(node)}", source, field)
            stack += [(v, sp[0], f"{at}[{i}]") for i, v in enumerate(node)]
        else:
            if not isinstance(node, dict):
                raise SeedfwError(f"must be an object, not {describe(node)}", source, field)
            if "*" in sp:
                stack += [(v, sp["*"], _join(at, k)) for k, v in node.items()]
                continue
            for key, sub in sp.items():
                name = key.rstrip("?")
                if name not in node:
                    if key.endswith("?") or (isinstance(sub, str) and sub.endswith("?")):
                        continue
                    raise SeedfwError("missing", source, _join(at, name))
                stack.append((node[name], sub, _join(at, name)))
    return value
