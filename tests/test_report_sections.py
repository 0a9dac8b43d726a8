"""The report's section registry (seedfw.report.sections): every section documents itself, the
three renderers show the sections in registry order (and follow the registry when it changes),
the Registry refuses unknown names, and nothing under report/ imports the Buildroot library or
borrows another module's private helper.

The output directory is made from real artifacts (tests/elf_builds.py: cross-built ELFs, a FIT,
compression.json from seedfw's compression stage, a model blob, counters measured on the host),
plus the two files the OS and ccache steps leave (images/buildroot.json, images/ccache.json),
so that every registered section is present.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import elf_builds
from seedfw.errors import SeedfwError
from seedfw.registry import Registry
from seedfw.report import build_report, html, json_out, markdown
from seedfw.report import sections as sections_mod
from seedfw.report.sections import SECTIONS, sections
from seedfw.report.sections.base import Section

REPORT_DIR = Path(sections_mod.__file__).resolve().parents[1]      # tools/seedfw/report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("sections")
    base = elf_builds.make_output_dir(root, "a")
    new = elf_builds.make_output_dir(root, "b")
    counters = elf_builds.host_counters(new, root / "counters.json")
    images = new / "images"
    (images / "rootfs.cpio").write_bytes(b"\0" * 1024)
    (images / "buildroot.json").write_text(json.dumps({
        "version": "2025.02.16", "package_sizes": {"busybox": 700, "seedfw-agent": 300},
        "rootfs": {"rootfs.cpio": {"size": 1024, "entries": 3}}, "overrides": []}))
    (images / "ccache.json").write_text(json.dumps({
        "hits": 3, "misses": 1, "hit_rate": 0.75, "remote": None, "remote_hits": 0,
        "remote_misses": 0, "remote_read_bytes": None, "remote_errors": 0,
        "remote_unreachable": {}, "source": "test: a stats summary written by hand"}))
    return build_report(new, baseline=base, counters=counters)


def test_every_registered_section_is_documented():
    assert SECTIONS.names() == ("images", "elfs", "compression", "deltas", "bandwidth", "os",
                                "cache")
    for name in SECTIONS.names():
        cls = SECTIONS.get(name)
        assert issubclass(cls, Section), name
        assert cls.name == name                 # its report.json key is its registry name
        assert not undocumented(cls), f"{name}: {cls.__qualname__} has no reference docstring"
    # Negative control: a class without its own docstring is caught (Section's is not its own).
    assert undocumented(type("Bare", (Section,), {"name": "bare"}))


def undocumented(cls) -> bool:
    doc = cls.__dict__.get("__doc__") or ""
    return len(doc.split()) < 10


def test_registry_lists_without_importing_and_refuses_unknown_names():
    reg = Registry("widget", {"a": "seedfw.no_such_module:Nope"})
    assert reg.names() == ("a",)                # listing names imports nothing
    with pytest.raises(ModuleNotFoundError):
        reg.get("a")
    with pytest.raises(SeedfwError, match=r"^board.yaml: flash.backend: no widget 'b' "
                                          r"\(known: a\)$"):
        reg.get("b", "board.yaml", "flash.backend")
    with pytest.raises(ValueError):
        Registry("widget", {"a": "seedfw.report"})     # no ":Class"


def test_every_section_is_in_the_report(report):
    assert [k for k in SECTIONS.names() if k in report] == list(SECTIONS.names())
    json_out.validate(report)


def chunks_in_order(page: str, chunks: list[str]) -> list[int]:
    """Where each chunk starts in page, each searched after the end of the one before; -1 when
    one is not found there."""
    at, out = 0, []
    for chunk in chunks:
        pos = page.find(chunk, at)
        out.append(pos)
        if pos < 0:
            return out
        at = pos + len(chunk)
    return out


def test_renderers_show_the_sections_in_registry_order(report):
    secs = sections()
    md = markdown.render(report)
    page = html.render(report)
    md_chunks = ["\n".join(s.markdown(report[s.name])) for s in secs]
    html_chunks = [s.html(report[s.name]) for s in secs]
    assert all(md_chunks) and all(html_chunks)
    assert -1 not in chunks_in_order(md, md_chunks)
    assert -1 not in chunks_in_order(page, html_chunks)
    # Each section's part appears once, and the page is the header, the parts and the notes.
    assert page.count("<h2>") == len(secs) + 1 + sum(c.count("<h2>") - 1 for c in html_chunks)
    # report.json: its keys are the header, the sections and the notes, nothing else.
    assert set(json.loads(json_out.render(report))) == \
        {"schema", "board", "build_id", "source_date_epoch", "notes", *SECTIONS.names()}
    # Negative control: the renderers follow the registry. Reversed, so are the pages.
    classes = {n: SECTIONS.get(n) for n in SECTIONS.names()}
    reversed_registry = Registry("report section", {
        n: f"{classes[n].__module__}:{classes[n].__qualname__}" for n in reversed(classes)})
    mp = pytest.MonkeyPatch()
    mp.setattr(sections_mod, "SECTIONS", reversed_registry)
    try:
        md2, page2 = markdown.render(report), html.render(report)
    finally:
        mp.undo()
    assert -1 not in chunks_in_order(md2, md_chunks[::-1])
    assert -1 not in chunks_in_order(page2, html_chunks[::-1])
    assert -1 in chunks_in_order(md2, md_chunks)


def imports_of(path: Path, package: str, known: set[str] = frozenset()) -> set[str]:
    """Every module `path` imports (module level or inside a function), relative imports
    resolved against `package` (the dotted package the file is in). `from p import m` where
    p.m is one of the `known` modules counts as importing p.m, not p (a package's __init__
    that imports its children makes no cycle with them)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            names = {f"{mod}.{a.name}" for a in node.names}
            if not names & known:
                out.add(mod)
            out |= names
    return out


def report_modules():
    for path in sorted(REPORT_DIR.rglob("*.py")):
        rel = path.relative_to(REPORT_DIR.parent.parent).with_suffix("")
        package = ".".join(rel.parts[:-1])
        yield path, package


def test_no_report_module_imports_buildroot(tmp_path):
    found = {str(p.relative_to(REPORT_DIR)): sorted(m for m in imports_of(p, pkg)
                                                   if m.startswith("seedfw.buildroot"))
             for p, pkg in report_modules()}
    assert len(found) >= 15
    assert {k: v for k, v in found.items() if v} == {}
    # Negative control: the resolver sees a relative import of buildroot inside a function.
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ...buildroot import mirror\n")
    assert "seedfw.buildroot.mirror" in imports_of(probe, "seedfw.report.sections")


def test_no_private_helper_is_borrowed_across_modules():
    """Helpers shared between sections are public in report/format.py; `from x import _y` is
    a private name taken from another module."""
    borrowed = []
    for path, _ in report_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                borrowed += [f"{path.name}: {a.name}" for a in node.names
                             if a.name.startswith("_")]
    assert borrowed == []


def test_report_modules_stay_small():
    sizes = {str(p.relative_to(REPORT_DIR)): len(p.read_text().splitlines())
             for p, _ in report_modules()}
    assert {k: v for k, v in sizes.items() if v > 500} == {}


def module_of(name: str, known: set[str]) -> str | None:
    """The longest prefix of a dotted import that is one of `known` modules."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (module -> modules it imports), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_report_modules_import_no_cycle():
    mods = {}
    for path, pkg in report_modules():
        name = pkg if path.name == "__init__.py" else f"{pkg}.{path.stem}"
        mods[name] = (path, pkg)
    known = set(mods)
    graph = {name: {m for i in imports_of(path, pkg, known)
                    if (m := module_of(i, known)) and m != name}
             for name, (path, pkg) in mods.items()}
    assert "seedfw.report.sections.base" in graph["seedfw.report.model"]
    assert cycle(graph) is None, cycle(graph)
    # Negative control: the section base importing the model that imports it.
    graph["seedfw.report.sections.base"].add("seedfw.report.model")
    assert cycle(graph) is not None
