"""The shape of tools/seedfw, checked from its source (issue 19): no import circles, buildroot/ is a
library of the parts, every plug-in documented, the board schema generated from the registries, and
no SoC branches in code.

The import graph is built with `ast` from every `import` statement, module level or inside a
function: an import inside a function still ties the two modules together (it only hides the
circle from Python's loader), so it counts.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import seedfw

PKG = Path(seedfw.__file__).parent
TOP = "seedfw"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(current: str, is_pkg: bool, level: int, name: str | None) -> str:
    base = current.split(".") if is_pkg else current.split(".")[:-1]
    if level:
        base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *(name.split(".") if name else [])])


def import_graph() -> dict[str, set[str]]:
    """{module: the seedfw modules it imports}; `from pkg import name` points at pkg.name when that
    is a module, else at pkg."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module) if node.level else node.module
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in mods else base)
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != mod and t.startswith(TOP):
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_function_level_imports():
    # negative control: the graph must see an import inside a function (cli modules import
    # lazily), or "no cycle" would prove nothing
    g = import_graph()
    assert "seedfw.parts.layout" in g["seedfw.parts.os_root"], g["seedfw.parts.os_root"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    found = cycles(import_graph())
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_buildroot_is_a_library_of_the_parts():
    """Modules under buildroot/ are imported only by the Buildroot part (parts/) and the thin
    Invoke front (cli/: `invoke buildroot -- …`, `invoke mirror`), never by the report, the
    images, the run or flash code."""
    g = import_graph()
    offenders = sorted(f"{m} -> {t}" for m, ts in g.items() for t in ts
                       if t.startswith("seedfw.buildroot")
                       and not m.startswith(("seedfw.buildroot", "seedfw.parts", "seedfw.cli")))
    assert offenders == []


def test_every_part_is_documented_and_registered_once():
    from seedfw import parts
    from seedfw.parts.base import Part
    names = parts.REGISTRY.names()
    assert len(names) == len(set(names))
    for name, cls in parts.REGISTRY.classes():      # refuses an undocumented class
        assert issubclass(cls, Part) and cls.__doc__ and len(cls.__doc__.split()) >= 10, name
    # every Part subclass in parts/ is registered: a module added without its registry line
    # would never build
    defined = {n.name for p in (PKG / "parts").glob("*.py") if p.name != "base.py"
               for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef)
               and any(getattr(b, "id", None) == "Part" for b in n.bases)}
    assert defined == {cls.__name__ for _, cls in parts.REGISTRY.classes()}


def test_registry_refuses_an_undocumented_plugin(tmp_path, monkeypatch):
    from seedfw.errors import SeedfwError
    from seedfw.registry import Registry
    (tmp_path / "nodoc_plugin.py").write_text("class P:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("part", {"nodoc": "nodoc_plugin:P"})
    with pytest.raises(SeedfwError, match="documentation is missing for part 'nodoc'"):
        reg.classes()
    with pytest.raises(SeedfwError, match=r"no part 'other' \(known: nodoc\)"):
        reg.get("other")


def test_no_soc_branches_in_code():
    hits = [f"{p.relative_to(PKG)}:{i}" for p in PKG.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\bsoc\s*[!=]=", line)]
    assert hits == []


def test_no_module_over_500_lines():
    big = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 520}
    assert big == {}


def test_version_defaults_only_in_kconfig():
    """Default versions live in Kconfig; Python reads the symbol (a literal fallback would drift)."""
    hits = [f"{p.relative_to(PKG)}:{i}" for p in PKG.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"""or\s+["'](2025\.01|2\.12\.1)["']""", line)]
    assert hits == []
