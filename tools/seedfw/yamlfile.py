"""YAML loading with line numbers, and JSON-Schema validation that reports file:line and field.

Why not plain yaml.safe_load: a firmware engineer who mistypes a field wants the line, and a
plain dict has forgotten where each value came from. We compose the node tree once, build the
Python data from it ourselves, and keep a map from each path (tuple of keys/indexes) to its line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import SeedfwError


class Located(dict):
    """The loaded document plus `lines`: path tuple -> 1-based line number."""


def load(path: str | Path):
    """Load a YAML file; returns (data, lines) where lines maps path tuples to line numbers."""
    path = Path(path)
    from . import reading
    text = reading.read_text(path, "yaml")        # regular file, size cap, UTF-8
    try:
        _refuse_aliases(text, path)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SeedfwError(f"YAML syntax error: {problem}", path, line) from None
    lines: dict[tuple, int] = {}
    if node is None:
        return None, lines
    constructor = yaml.SafeLoader(text)
    try:
        data = _build(node, (), lines, constructor)
    except _KeyError as exc:
        raise SeedfwError(exc.message, path, f"line {exc.line}") from None
    except yaml.YAMLError as exc:
        raise SeedfwError(f"YAML error: {exc}", path) from None
    return data, lines


def _refuse_aliases(text: str, path) -> None:
    """One pass over the events before anything is composed: a document of more than CAPS
    yaml_nodes events is refused. Aliases are allowed (board/rk3588/dvfs.yaml shares one OPP
    list) but bounded where they are expanded (_Budget): "billion laughs" and recursive
    aliases are one error line."""
    from .reading import CAPS
    for n, event in enumerate(yaml.parse(text, Loader=yaml.SafeLoader)):
        if n > CAPS["yaml_nodes"]:
            raise SeedfwError(f"YAML document of more than {CAPS['yaml_nodes']} nodes", path,
                              f"line {event.start_mark.line + 1}")


class _Budget:
    """Nodes built so far (an alias counts its whole expansion) and the nodes being built
    (an alias back into one of them is a recursive document)."""

    def __init__(self):
        from .reading import CAPS
        self.left = CAPS["yaml_nodes"]
        self.open: set[int] = set()

    def enter(self, node) -> None:
        self.left -= 1
        if self.left < 0:
            raise _KeyError("aliases expand to more than the node limit (a \"billion laughs\" "
                            "document?): refused", node.start_mark.line + 1)
        if id(node) in self.open:
            raise _KeyError("recursive alias (a node that contains itself): refused",
                            node.start_mark.line + 1)


class _KeyError(Exception):
    def __init__(self, message, line):
        super().__init__(message)
        self.message, self.line = message, line


def _build(node, where, lines, constructor, budget=None):
    budget = budget or _Budget()
    budget.enter(node)
    lines[where] = node.start_mark.line + 1
    budget.open.add(id(node))
    try:
        return _build_node(node, where, lines, constructor, budget)
    finally:
        budget.open.discard(id(node))


def _build_node(node, where, lines, constructor, budget):
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise _KeyError("a mapping key must be a plain value, not a list or mapping",
                                line)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _KeyError("YAML merge keys (<<) are not accepted", line)
            key = constructor.construct_object(key_node, deep=True)
            if key in out:
                raise _KeyError(f"duplicate key '{key}' (first at line "
                                f"{lines[where + (key,)]})", line)
            lines[where + (key,)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, where + (key,), lines, constructor, budget)
            lines[where + (key,)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(child, where + (i,), lines, constructor, budget)
                for i, child in enumerate(node.value)]
    return constructor.construct_object(node, deep=True)


def load_mapping(path: str | Path, schema: dict, expected: str):
    """Load a YAML file that must be a mapping and validate it; returns (data, lines).
    `expected` finishes the sentence "expected …" for a file that is not a mapping."""
    data, lines = load(path)
    if not isinstance(data, dict):
        raise SeedfwError(f"expected {expected}", path, "line 1")
    validate(data, schema, path, lines)
    return data, lines


def field_name(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validate(data, schema: dict, path: str | Path, lines: dict) -> None:
    """Validate against a JSON schema; the first error becomes a SeedfwError with file:line."""
    import jsonschema  # ~50 ms to import: only when a file is actually validated

    # JSON Schema's "integer" accepts 1e9 written as a float (1000000000.0); ours are Python
    # ints only, or a float `hz` reaches struct.pack as a float (a traceback under --output).
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _c, x: isinstance(x, int) and not isinstance(x, bool))
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    validator = cls(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    err = errors[0]
    where = tuple(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        name = field_name(where + (missing,))
        message = f"missing required field '{name}'"
    elif err.validator == "additionalProperties":
        known = set(err.schema.get("properties", {}))
        extra = sorted(str(k) for k in err.instance if k not in known)[0]
        where = where + (extra,)
        message = f"unknown field '{field_name(where)}'"
    else:
        name = field_name(where)
        message = f"field '{name}': {_short(err)}"
    line = _nearest_line(lines, where)
    raise SeedfwError(message, path, f"line {line}" if line else None)


def _nearest_line(lines, where):
    while True:
        if where in lines:
            return lines[where]
        if not where:
            return None
        where = where[:-1]


def _short(err) -> str:
    if err.validator == "type":
        return f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"
    if err.validator == "enum":
        return f"{err.instance!r} is not one of {', '.join(map(str, err.validator_value))}"
    return err.message
