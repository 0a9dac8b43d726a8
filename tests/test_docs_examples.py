"""The manual's examples are true and its links work as plain Markdown (issue 34).

- every ```console block of every page runs (tests/docs_console.py) and prints what the page
  says; the ones that read a build run in the slow suite on the session builds, the rest here;
- every other shell block (sh/bash/shell, or commands in a plain or text fence or an indented
  block) is marked illustrative with a reason, and every code fence is closed;
- the generated reference under docs/reference/ is committed and equal to what the code
  generates now, so the guides' links into it resolve without a site build;
- negative controls: a planted stale figure, unmarked blocks, a changed Kconfig help text and
  a dead link each fail with the exact page:line or file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import docs_console as dc
from seedfw.cli import docsgen

REPO = dc.REPO
FIXTURES = {"rk3588": "rk3588_build", "qemu-aarch64": "qemu_aarch64_build",
            "mps2-an385": "mps2_build"}


def _page_blocks():
    return {page: dc.parse_page(page) for page in dc.pages()}


# --- the transcript matcher ------------------------------------------------------------------

def test_matcher_wildcards_and_messages():
    exp = [(10, "ok: [...] (75,862,016 bytes, 75,862,016 verified)")]
    assert dc.mismatch(exp, ["ok: a -> b via sdcard (75,862,016 bytes, 75,862,016 verified)"]) is None
    assert dc.mismatch(exp, ["ok: a (75,862,017 bytes, 75,862,016 verified)"]) == (
        10, "ok: [...] (75,862,016 bytes, 75,862,016 verified)",
        "ok: a (75,862,017 bytes, 75,862,016 verified)")
    # `...` takes any number of lines, none too; everything else must be there, in order.
    exp = [(1, "first"), (2, "..."), (3, "last")]
    assert dc.mismatch(exp, ["first", "last"]) is None
    assert dc.mismatch(exp, ["first", "a", "b", "last"]) is None
    assert dc.mismatch(exp, ["first", "a"]) == (3, "last", "<end of output>")
    assert dc.mismatch([(1, "one")], ["one", "two"]) == (1, "<end of output>", "two")
    # Regular-expression characters in a page are text, not patterns.
    assert dc.mismatch([(1, "a.c (x)")], ["abc (x)"]) == (1, "a.c (x)", "abc (x)")


def test_transcript_parsing_names_each_expected_line(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# t\n\n<!-- console: builds rk3588 -->\n```console\n$ echo a\na\n\n"
                    "$ echo b\nb\n```\n")
    (block,) = dc.parse_page(page, "docs/p.md")
    assert (block.page, block.line, block.builds) == ("docs/p.md", 4, ("rk3588",))
    assert [(c.line, c.text, c.expected) for c in block.commands] == [
        (5, "echo a", [(6, "a")]), (8, "echo b", [(9, "b")])]


# --- illustrative blocks are marked ----------------------------------------------------------

def test_every_shell_block_is_console_or_marked_illustrative():
    problems = [p for page in dc.pages() for p in dc.unmarked_shell_blocks(page)]
    assert problems == []


def test_unmarked_block_and_unclosed_fence_are_named(tmp_path):
    page = tmp_path / "docs" / "x.md"
    page.parent.mkdir()
    page.write_text("# x\n\n<!-- illustrative: needs a board -->\n```sh\ninvoke flash\n```\n\n"
                    "text\n\n```bash\ninvoke run\n```\n\n<!-- illustrative: -->\n```sh\nls\n```\n"
                    "\n```text\nnever closed\n")
    assert dc.unmarked_shell_blocks(page, "docs/x.md") == [
        "docs/x.md:10: ```bash block without <!-- illustrative: why --> before it "
        "(or make it a ```console block)",
        "docs/x.md:15: illustrative marker without a reason",
        "docs/x.md:19: code fence never closed"]


def test_commands_in_plain_fences_and_indented_blocks_are_named(tmp_path):
    """Commands without a `$ ` prompt in a plain fence, a prompt in an indented block (after a
    heading too), an environment assignment before the command: each named; output alone, a
    marked block, a YAML script and an indented paragraph of prose are not."""
    page = tmp_path / "x.md"
    page.write_text(
        "# x\n\n```\ninvoke tune --board qemu-aarch64 --trials 40\n```\n\n"          # 3
        "```text\n# the CI job\nSEEDFW_CACHE_REMOTE_MODE=rw invoke build\n```\n\n"     # 7
        "```\nerror: board.yaml:14: expected integer\n```\n\n"
        "<!-- illustrative: needs a board -->\n```\ninvoke flash --board rk3588\n```\n\n"
        "```yaml\nscript:\n  - invoke build\n```\n\n"
        "text\n\n    $ invoke fuzz --list\n    lz4-block ...\n\n"                        # 28
        "## Keys\n    $ invoke keys --new ~/k\n\n"                                       # 32
        "- item\n\n    continued prose, not a command\n\n"
        "<!-- illustrative: -->\n```\nrauc install x.raucb\n```\n")                      # 39
    assert dc.unmarked_shell_blocks(page, "docs/x.md") == [
        "docs/x.md:3: commands in a plain fence: make it ```console or mark it "
        "<!-- illustrative: why -->",
        "docs/x.md:7: commands in a plain fence: make it ```console or mark it "
        "<!-- illustrative: why -->",
        "docs/x.md:39: illustrative marker without a reason",
        "docs/x.md:28: commands in an indented block: make it a ```console fence or mark it "
        "<!-- illustrative: why -->",
        "docs/x.md:32: commands in an indented block: make it a ```console fence or mark it "
        "<!-- illustrative: why -->"]
    assert [dc.is_command(x) for x in ("cat tuned.conf", "A=1 B=2 python3 x.py", "./run",
                                       "CONFIG_X=y", "error: x", "configs/x ├─► invoke")] == [
        True, True, True, False, False, False]


# --- console blocks run ----------------------------------------------------------------------

def test_console_blocks_without_builds(tmp_path):
    """The blocks that read no build: in the fast suite, from an empty output/."""
    ran = 0
    problems = []
    for n, (page, blocks) in enumerate(_page_blocks().items()):
        fast = sum(1 for b in blocks if not b.in_slow_suite)
        if fast:
            ran += fast
            problems += dc.run_page(page, dc.scratch_tree(tmp_path / f"tree-{n}", {}),
                                    with_builds=False)
    assert problems == []
    assert ran >= 3, "the fast console blocks went missing"


@pytest.mark.slow
def test_console_blocks_on_the_session_builds(request, tmp_path):
    """The blocks that read a build, on the slow suite's session builds (never a new build);
    then the negative control: a copy of flashing.md with one byte count changed fails naming
    the page and the line."""
    wanted = sorted({b for blocks in _page_blocks().values() for blk in blocks
                     for b in blk.builds})
    unknown = [b for b in wanted if b not in FIXTURES]
    assert not unknown, f"console markers name builds the suite has no session build of: {unknown}"
    builds = {b: request.getfixturevalue(FIXTURES[b]).outdir for b in wanted}
    problems = []
    for n, page in enumerate(dc.pages()):      # a tree per page: files a page makes stay its own
        if any(b.in_slow_suite for b in dc.parse_page(page)):
            problems += dc.run_page(page, dc.scratch_tree(tmp_path / f"tree-{n}", builds),
                                    with_builds=True)
    assert problems == []

    planted = tmp_path / "planted" / "docs" / "flashing.md"
    planted.parent.mkdir(parents=True)
    text = (REPO / "docs" / "flashing.md").read_text()
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if re.search(r"via sdcard \(\d+ bytes", line))
    written = int(re.search(r"via sdcard \((\d+) bytes", lines[n]).group(1))
    stale_line = lines[n].replace(f"({written} bytes", f"({written + 1} bytes", 1)
    lines[n] = stale_line
    planted.write_text("\n".join(lines))
    result = dc.run_page(planted, dc.scratch_tree(tmp_path / "tree-planted", builds),
                         "docs/flashing.md", with_builds=True)
    assert len(result) == 1
    assert result[0].startswith(f"docs/flashing.md:{n + 1}: expected {stale_line!r}, got 'ok: ")


# --- the generated reference is committed and fresh ------------------------------------------

def test_reference_pages_are_committed_and_fresh():
    generated, _ = docsgen.pages()
    assert docsgen.stale(REPO / "docs", generated) == []
    tracked = subprocess.run(["git", "ls-files", "docs/reference"], cwd=REPO, text=True,
                             capture_output=True, check=True).stdout.split()
    assert sorted(tracked) == sorted(f"docs/reference/{rel}" for rel in generated)


def test_reference_stale_negative_control(monkeypatch, tmp_path):
    """A Kconfig help text changed without regenerating: the check names kconfig.md alone."""
    real = docsgen.kconfig_symbols()
    symbol = next(s for s in real.values() if s["help"])

    def edited():
        out = {k: dict(v) for k, v in real.items()}
        out[symbol["name"]]["help"] = symbol["help"] + "One more sentence.\n"
        return out

    monkeypatch.setattr(docsgen, "kconfig_symbols", edited)
    assert docsgen.stale(REPO / "docs") == ["docs/reference/kconfig.md"]
    # A page left over from a removed plug-in is stale too.
    shutil.copytree(REPO / "docs" / "reference", tmp_path / "docs" / "reference")
    (tmp_path / "docs" / "reference" / "parts" / "gone.md").write_text("# gone\n")
    monkeypatch.undo()
    assert docsgen.stale(tmp_path / "docs") == ["docs/reference/parts/gone.md"]


# --- links read as plain Markdown ------------------------------------------------------------

LINK = re.compile(r"\]\((?P<target>[^)\s#]+\.md)(?:#[^)\s]*)?\)")


def dead_links(pages: list[Path], root: Path, tracked: set[str]) -> list[str]:
    """`page:line: target` for every relative .md link that names no tracked file."""
    out = []
    for page in pages:
        for n, line in enumerate(page.read_text().split("\n"), 1):
            for m in LINK.finditer(line):
                target = m["target"]
                if "://" in target:
                    continue
                rel = (page.parent / target).resolve().relative_to(root.resolve()).as_posix()
                if rel not in tracked:
                    out.append(f"{page.relative_to(root).as_posix()}:{n}: {target}")
    return out


def _tracked() -> set[str]:
    return set(subprocess.run(["git", "ls-files"], cwd=REPO, text=True, capture_output=True,
                              check=True).stdout.split())


def test_links_resolve_without_a_site_build():
    """README and every guide: each relative .md link names a committed file (the reference too)."""
    assert dead_links(dc.pages(), REPO, _tracked()) == []


def test_dead_link_negative_control(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "index.md"
    page.write_text("# i\n\nsee [tasks](reference/tasks.md) and\n[gone](reference/gone.md#x)\n")
    assert dead_links([page], tmp_path, {"docs/reference/tasks.md"}) == [
        "docs/index.md:4: reference/gone.md"]


def test_docs_check_refuses_a_stale_committed_page(monkeypatch, tmp_path):
    """The hook under `invoke docs --check` writes nothing and names the stale page."""
    from mkdocs.exceptions import PluginError
    shutil.copytree(REPO / "docs" / "reference", tmp_path / "docs" / "reference")
    page = tmp_path / "docs" / "reference" / "tasks.md"
    page.write_bytes(page.read_bytes() + b"edited by hand\n")
    before = page.read_bytes()
    monkeypatch.setenv("SEEDFW_DOCS_CHECK", "1")
    with pytest.raises(PluginError) as err:
        docsgen.on_config({"docs_dir": str(tmp_path / "docs"), "nav": []})
    assert str(err.value) == ("docs/reference/tasks.md: stale generated reference (1 file(s): "
                              "docs/reference/tasks.md); run invoke docs and commit docs/reference/")
    assert page.read_bytes() == before
    monkeypatch.setenv("SEEDFW_DOCS_CHECK", "0")             # `invoke docs`: regenerated
    docsgen.on_config({"docs_dir": str(tmp_path / "docs"), "nav": []})
    assert page.read_bytes() == (REPO / "docs" / "reference" / "tasks.md").read_bytes()
