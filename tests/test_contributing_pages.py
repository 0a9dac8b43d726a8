"""The contributing pages name what exists: every registry, module path, `module:Class` and
file they tell a contributor to edit is in the tree (issue 32: the pages named `BACKENDS` and
`SOURCES`, registries that never existed)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from seedfw.registry import Registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "contributing").glob("*.md"))

# `NAME` ... in `tools/seedfw/x/__init__.py`, or "registered ... in `NAME`" with the file nearby
REGISTRY_NAME = re.compile(r"`([A-Z][A-Z_]+)`")
TREE_PATH = re.compile(r"`((?:tools|board|configs|firmware|tests|bench|docs|kconfig)/[\w./<>-]+)`")
CLASS_REF = re.compile(r"\"(seedfw(?:\.\w+)+):(\w+)\"|`(seedfw(?:\.\w+)+):(\w+)`")
# written by every docs build (seedfw.cli.docsgen), never committed: not in a clean clone
GENERATED = ("docs/reference",)
DOTTED = re.compile(r"`(seedfw(?:\.\w+)+)`")


def _registries() -> dict[str, list[str]]:
    """Registry objects by their variable name, with the modules that define them."""
    found: dict[str, list[str]] = {}
    for path in (ROOT / "tools" / "seedfw").rglob("*.py"):
        for m in re.finditer(r"^([A-Z][A-Z_]+) = Registry\(", path.read_text(), re.M):
            found.setdefault(m.group(1), []).append(str(path.relative_to(ROOT)))
    return found


def _import_dotted(name: str):
    """A module, or an attribute of one (seedfw.plan.Step)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_registry_names_on_the_page_exist(page):
    text = page.read_text()
    registries = _registries()
    for line_no, line in enumerate(text.splitlines(), 1):
        if "regist" not in line.lower():
            continue
        for name in REGISTRY_NAME.findall(line):
            if name in registries:
                continue
            # an upper-case word on a "registered in" line that is no registry is the old mistake
            assert not line.strip().lower().startswith(("registered", "it is registered")) \
                and f"in `{name}`" not in line, \
                f"{page.name}:{line_no}: `{name}` is no registry (registries: {', '.join(sorted(registries))})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_paths_and_classes_on_the_page_exist(page):
    text = page.read_text()
    for line_no, line in enumerate(text.splitlines(), 1):
        for path in TREE_PATH.findall(line):
            if "<" in path or path.startswith(GENERATED):   # a placeholder (board/<name>/)
                continue
            assert (ROOT / path.rstrip("/")).exists(), f"{page.name}:{line_no}: {path} does not exist"
        for m in CLASS_REF.finditer(line):
            module, cls = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            assert hasattr(importlib.import_module(module), cls), f"{page.name}:{line_no}: {module}:{cls}"
        for dotted in DOTTED.findall(line):
            _import_dotted(dotted)


def test_the_check_catches_a_registry_that_does_not_exist(tmp_path, monkeypatch):
    """Negative control: the mistake the pages had (`BACKENDS`) is caught."""
    page = tmp_path / "bad.md"
    page.write_text("registered by name in `BACKENDS` in `tools/seedfw/flash/__init__.py`\n")
    with pytest.raises(AssertionError, match="BACKENDS` is no registry"):
        test_registry_names_on_the_page_exist(page)


def test_every_registry_is_a_registry():
    for name, where in _registries().items():
        for rel in where:
            module = rel.removeprefix("tools/").removesuffix(".py").replace("/", ".").removesuffix(".__init__")
            if module == "seedfw.registry":
                continue            # the docstring's example
            assert isinstance(getattr(importlib.import_module(module), name), Registry), (rel, name)
