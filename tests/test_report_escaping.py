"""Output escaping by construction (issue 28, report/safe.py): every report section rendered with
a hostile string in every string field it reads, in all three forms.

The report is a real one (tests/elf_builds.py's output directories, every registered section
present, plus an emulated counters document and the agent's perf windows so the traffic tables
render too). Then every string in it — and every key of the maps whose keys come from files
(package names, rootfs names, counter settings, perf windows) — is replaced by HOSTILE, and:

- report.html holds no element or attribute that seedfw does not write itself (parsed with
  html.parser against an allow-list), no `<script`/`<img`, and shows HOSTILE as text;
- report.md has no heading, table row shape, raw HTML or control byte that the same report
  without hostile strings does not have;
- the terminal form (`note:` lines `invoke report` prints) has no control bytes.

Negative controls: the same checks catch an unescaped value (a renderer that bypasses
safe.html, a Markdown line built without safe.md).
"""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser

import pytest

import elf_builds
from seedfw.report import build_report, html, json_out, markdown
from seedfw.report import fuzzing, safe
from seedfw.report.sections import SECTIONS

HOSTILE = ('<script>alert(1)</script>"><img src=x onerror=alert(1)>\n## fake\n| a | b |'
           "\x1b]8;;http://x\x07link\x1b]8;;\x07\x1b[31m`code` *bold* [l](u) \u202eevil\r&amp;")
# maps (by JSON path) whose keys are names from a file, not seedfw's own field names
KEYED_BY_FILE = {("os", "package_sizes"), ("os", "rootfs"), ("bandwidth", "measured",
                                                             "settings")}
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "code",
        "span", "table", "tr", "th", "td", "ul", "li", "figure", "svg", "text", "rect", "line"}
ATTRS = {"lang", "charset", "class", "id", "data-plot", "data-synthetic", "width", "height",
         "viewbox", "role", "aria-label", "x", "y", "x1", "y1", "x2", "y2", "font-weight",
         "font-style", "text-anchor", "fill", "stroke"}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("escaping")
    base = elf_builds.make_output_dir(root, "a")
    new = elf_builds.make_output_dir(root, "b")
    counters = elf_builds.host_counters(new, root / "counters.json")
    for seed in fuzzing.seeds():            # one well-formed document per report input
        name = fuzzing.KINDS[seed[0]]
        if name.startswith(("counters/", "images/")):
            (new / name).parent.mkdir(parents=True, exist_ok=True)
            (new / name).write_bytes(seed[1:])
    (new / "sbom").mkdir()                  # the vulnerabilities section: an SBOM and a match
    (new / "sbom" / "sbom.cdx.json").write_text(json.dumps({"components": [{
        "type": "file", "name": "bl31.elf", "purl": "pkg:generic/bl31.elf@1"}]}))
    (new / "sbom" / "cve.json").write_text(json.dumps({
        "database": "db", "matcher": "sbom-cve-check 1.3.5", "sbom": "urn:uuid:0",
        "counts": {"untriaged": 1}, "matches": [{
            "cve": "CVE-2024-58251", "component": "busybox", "version": "1.37.0",
            "ref": "buildroot:busybox", "record": "CVE-2024/CVE-2024-582xx/CVE-2024-58251.json",
            "decision": {"status": "untriaged", "triage": None, "detail": "none",
                         "who": None, "when": None, "justification": None}}]}))
    report = build_report(new, baseline=base, counters=counters)
    assert [k for k in SECTIONS.names() if k in report] == list(SECTIONS.names())
    assert report["bandwidth"]["emulated"]["available"] and report["bandwidth"]["emulated"]["perf"]
    return report


def poison(node, path=()):
    """Every string value HOSTILE; keys too where the file names them."""
    if isinstance(node, str):
        return HOSTILE
    if isinstance(node, list):
        return [poison(v, path) for v in node]
    if isinstance(node, dict):
        out = {}
        for i, (k, v) in enumerate(node.items()):
            key = f"{HOSTILE}{i}" if path in KEYED_BY_FILE else k
            out[key] = poison(v, path + (k,))
        return out
    return node


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {a for a, _ in attrs}


def html_problems(page: str) -> list[str]:
    parser = Tags()
    parser.feed(page)
    out = [f"tag <{t}>" for t in sorted(parser.tags - TAGS)]
    out += [f"attribute {a}" for a in sorted(parser.attrs - ATTRS)]
    out += [m for m in ("<script", "<img") if m in page.lower()]
    return out


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def md_shape(text: str) -> dict:
    """What a Markdown document's structure is: its headings, each table's column count per row,
    raw HTML tags, control bytes."""
    lines = text.splitlines()
    return {"headings": [l for l in lines if l.startswith("#")],
            "rows": [unescaped_pipes(l) for l in lines if l.startswith("|")],
            "html": re.findall(r"<[A-Za-z/!]", text),
            "control": CONTROL.findall(text)}


def test_every_section_escapes_every_field(report):
    hostile = poison(copy.deepcopy(report))
    hostile["notes"] = [HOSTILE] * 3
    page = html.render(hostile)
    assert html_problems(page) == []
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 100     # shown, as text
    for name in SECTIONS.names():                     # each section on its own, too
        part = str(SECTIONS.get(name)().html(hostile[name]))
        assert html_problems(part) == [], name
        assert "&lt;script&gt;" in part, name         # the section did show a hostile field
    md_text = markdown.render(hostile)
    clean, dirty = md_shape(markdown.render(report)), md_shape(md_text)
    assert len(dirty["headings"]) == len(clean["headings"])
    assert [h.split(" ")[0] for h in dirty["headings"]] == \
        [h.split(" ")[0] for h in clean["headings"]]          # same levels, in the same order
    assert not any(h.startswith("## fake") for h in dirty["headings"])
    assert dirty["rows"] == clean["rows"]             # no table gained or lost a column
    assert dirty["html"] == [] and dirty["control"] == []
    assert "\\<script" not in md_text and "&lt;script&gt;" in md_text
    # the terminal form: what `invoke report` prints for each note
    assert all(not CONTROL.search(safe.term(n)) for n in hostile["notes"])
    # strict JSON: the hostile report is still one JSON document with the strings as they were
    assert json.loads(json.dumps(hostile, allow_nan=False))["notes"][0] == HOSTILE


def test_negative_controls_catch_an_unescaped_value(report, monkeypatch):
    """A section that bypasses report/safe.py (an f-string into Markup, a Markdown line marked
    trusted) is caught by the same checks."""
    from markupsafe import Markup
    from seedfw.report.safe import Md
    from seedfw.report.sections import images
    hostile = poison(copy.deepcopy(report))
    monkeypatch.setattr(images.Images, "html",
                        lambda self, part: Markup(f"<p>{part['items'][0]['file']}</p>"))
    monkeypatch.setattr(images.Images, "markdown",
                        lambda self, part: [Md(f"- {part['items'][0]['file']}")])
    assert "<script" in html_problems(html.render(hostile))
    shape = md_shape(markdown.render(hostile))
    assert shape["html"] and shape["control"] and "## fake" in shape["headings"]
    # without the bypass, a plain str line is escaped whole (it is not trusted Markdown)
    assert safe.md("## Images").startswith("\\#\\#")


SAFE_ONLY = {"safe.py"}         # the one module that may make Markup / trusted Markdown


def test_only_safe_makes_markup():
    """By construction: outside report/safe.py no module calls Markup(), imports the stdlib
    html module, or marks computed text as trusted Markdown (Md(<anything but a literal>));
    format.py's table rows, joined from md()-escaped cells, are the one listed exception."""
    from pathlib import Path
    report_dir = Path(safe.__file__).parent
    found = []
    for path in sorted(report_dir.rglob("*.py")):
        if path.name in SAFE_ONLY:
            continue
        found += offences(path.read_text(), path.name)
    assert found == ["format.py: Md(<computed>)"] * 3, found       # format.table's rows
    # negative control: each kind of bypass is seen
    assert len(offences("import html\nfrom markupsafe import Markup\nMarkup(x)\nMd(f'{x}')\n",
                        "probe.py")) == 3


def offences(source: str, name: str) -> list[str]:
    import ast
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""]
            if "html" in mods and getattr(node, "level", 0) == 0:
                out.append(f"{name}: imports the stdlib html module")
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            fn = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if fn == "Markup":
                out.append(f"{name}: Markup()")
            # a literal, or a module constant (KINDS_LINE): seedfw's own text
            if fn == "Md" and not (len(node.args) == 1 and (
                    isinstance(node.args[0], ast.Constant) or
                    isinstance(node.args[0], ast.Name) and node.args[0].id.isupper())):
                out.append(f"{name}: Md(<computed>)")
    return out


def test_json_report_is_strict(report):
    bad = copy.deepcopy(report)
    bad["images"]["total"]["value"] = float("nan")
    with pytest.raises(Exception, match=r"report.json: images.total.value: NaN is not a finite"):
        json_out.render(bad)


@pytest.mark.parametrize("value, expected", [
    # a control byte is shown as \xNN, its backslash escaped so GitHub shows it, too
    ("a|b", "a\\|b"), ("x\n## y", "x\\\\x0a\\#\\# y"), ("<img src=x>", "&lt;img src=x&gt;"),
    ("`c`", "\\`c\\`"), ("read_bytes", "read_bytes"), ("_start", "\\_start"),
    ("\x1b[31m", "\\\\x1b\\[31m"), ("\u202e", "\\\\u202e")])
def test_md_escapes(value, expected):
    assert safe.md(value) == expected
    assert safe.md(safe.Md("**x**")) == "**x**"
