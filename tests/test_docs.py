"""The manual: `invoke docs --check` (mkdocs build --strict) passes, and fails on a broken link or
a page left out of the nav; every plug-in and prompted Kconfig symbol has help text; three pages
(home, a guide, the generated Kconfig reference) as headless Chromium renders them, served over
HTTP as a reader gets them."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import sys
import threading
import time
from html.parser import HTMLParser

import pytest

from browser import dump_dom, evaluate, screenshot
from cli import ROOT, invoke
from seedfw.cli import docsgen

SITE = ROOT / "output" / "site"


@pytest.fixture(scope="module")
def site():
    started = time.monotonic()
    p = invoke("docs", "--check")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "manual: output/site/index.html" in p.stdout
    print(f"invoke docs --check: {time.monotonic() - started:.1f} s")
    return SITE


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(type("Quiet", (http.server.SimpleHTTPRequestHandler,),
                                     {"log_message": lambda *a: None}), directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for serve_forever's next poll: 0.5 s by default, per test
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_every_plugin_and_prompted_symbol_has_help():
    assert docsgen.missing_help() == []
    kinds = docsgen.plugin_classes()
    assert {"parts", "flash-runners", "counter-sources", "report-sections",
            "figures"} == set(kinds)
    assert {"mcu", "tfa", "uboot"} <= {n for n, _ in kinds["parts"]}
    assert {"pyocd", "rockusb", "sdcard", "qemu"} == {n for n, _ in kinds["flash-runners"]}


def test_missing_help_negative_control(monkeypatch):
    class Undocumented:
        pass
    monkeypatch.setattr(docsgen, "plugin_classes", lambda: {"parts": [("bare", Undocumented)]})
    syms = {"X": {"name": "X", "prompt": "An option", "help": None, "where": ["Kconfig:1"]}}
    monkeypatch.setattr(docsgen, "kconfig_symbols", lambda: syms)
    assert docsgen.missing_help() == ["parts bare: no docstring",
                                      "Kconfig X (Kconfig:1): prompt without help"]


def test_strict_build_fails_on_a_broken_link_and_an_orphan_page(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("reference"))
    (docs / "orphan.md").write_text("# Nobody links here\n")
    with open(docs / "boards.md", "a") as f:
        f.write("\nSee [the missing page](no-such-page.md).\n")
    cfg = (ROOT / "mkdocs.yml").read_text()
    cfg = cfg.replace("docs_dir: docs", f"docs_dir: {docs}").replace(
        "site_dir: output/site", f"site_dir: {tmp_path / 'site'}").replace(
        "  - tools/seedfw/cli/docsgen.py", f"  - {ROOT / 'tools/seedfw/cli/docsgen.py'}")
    (tmp_path / "mkdocs.yml").write_text(cfg)
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                        tmp_path / "mkdocs.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode != 0
    assert "orphan.md" in p.stderr and "no-such-page.md" in p.stderr, p.stderr[-3000:]


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.h1, self.search, self._in_h1, self.html_class = set(), "", False, False, ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "html":
            self.html_class = a.get("class") or ""
        if tag == "h1":
            self._in_h1 = True
        if tag == "input" and "md-search__input" in (a.get("class") or "") and \
                a.get("placeholder") == "Search":
            self.search = True

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data


@pytest.mark.slow      # a real browser per page: end to end (the site build itself stays fast)
@pytest.mark.parametrize("path,heading", [("index.html", "seedfw"),
                                          ("building.html", "Building firmware"),
                                          ("bringup-rock5b.html", "Bringing up a ROCK 5B"),
                                          ("report-walkthrough.html",
                                           "A report, section by section"),
                                          ("reference/kconfig.html", "Kconfig options")])
def test_pages_in_chromium(served, path, heading, tmp_path):
    dom = dump_dom(f"{served}/{path}")
    page = _Page()
    page.feed(dom)
    assert page.h1.replace("¶", "").strip() == heading
    assert page.search, "no search box"
    assert "js" in page.html_class.split(), "the theme's scripts did not run"
    assert "Reference" in dom and "Contributing" in dom           # the navigation is there
    if path == "reference/kconfig.html":
        prompted = [s["name"] for s in docsgen.kconfig_symbols().values() if s["prompt"]]
        assert len(prompted) > 50
        missing = [s for s in prompted if s.lower() not in page.ids]
        assert missing == [], missing
        text = re.sub(r"<[^>]+>", " ", dom)
        assert all(re.search(rf"\b{s}\b", text) for s in prompted)
    png = screenshot(f"{served}/{path}", tmp_path / (path.replace("/", "-") + ".png"))
    assert png.stat().st_size > 20_000


def test_generated_reference_has_every_plugin_and_task(site):
    for kind, items in docsgen.plugin_classes().items():
        folder = docsgen.KINDS[kind][1]
        for name, _ in items:
            page = site / "reference" / folder / (name.replace(".", "-") + ".html")
            assert page.is_file(), page
    tasks = (site / "reference" / "tasks.html").read_text()
    for name in ("build", "docs", "inspect", "tune", "flash"):
        assert f'id="{name}"' in tasks and f"invoke [--core-opts] {name}" in tasks
    schema = (site / "reference" / "report-schema.html").read_text()
    assert "seedfw-report" in schema and "bandwidth" in schema


def test_search_index_covers_every_page(site):
    """What the search box searches: every page of the nav, guides and generated reference."""
    import json
    index = json.loads((site / "search" / "search_index.json").read_text())
    pages = {d["location"].split("#", 1)[0] for d in index["docs"]}
    built = {str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html"}
    assert built - pages == set()
    text = " ".join(d["text"] for d in index["docs"])
    for word in ("rkdeveloptool", "COMPRESS_HC_LEVEL", "Pareto", "bmaptool"):
        assert word in text, word


SEARCH = """(async () => {
  const box = document.querySelector('input.md-search__input');
  box.focus(); box.value = %s;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  box.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
  // Until the search worker answers (an event), bounded by a generous 90 s that says so.
  for (let i = 0; i < 450; i++) {
    await new Promise(r => setTimeout(r, 200));
    const hits = [...document.querySelectorAll('.md-search-result__item a')].map(a => a.href);
    const meta = document.querySelector('.md-search-result__meta').textContent;
    if (hits.length || /No matching/.test(meta)) return {hits, meta};
  }
  return {hits: [], meta: 'host deadline: no search result within 90 s'};
})()"""


@pytest.mark.slow      # a real browser typing into the search box
def test_search_box_finds_pages(served):
    """Typed into the search box of the served home page, as a reader does."""
    found = evaluate(f"{served}/index.html", SEARCH % '"rkdeveloptool"')
    assert found["hits"], found
    assert any("flashing.html" in h for h in found["hits"]), found["hits"]
    # negative control: a word no page has finds nothing, and says so
    none = evaluate(f"{served}/index.html", SEARCH % '"qwxzvkjtrb"')
    assert none["hits"] == [] and "No matching" in none["meta"], none
