"""The manual's shell examples, checked: ```console blocks run, every other shell block is marked.

The convention (docs/contributing/docs.md) is a transcript: in a ```console block a line starting
with `$ ` is a command and the lines after it, up to the next command, are what it prints (stdout
and stderr together, trailing blanks ignored). Two wildcards, nothing else: a line that is only
`...` matches any number of lines (none too), and `[...]` inside a line matches any text. A block
that reads a build is preceded by `<!-- console: builds rk3588 mps2-an385 -->` naming the session
builds it reads; one without needs no build and runs in the fast suite. Any ```sh / ```bash /
```shell block, and any plain or ```text fence or 4-space indented block holding a command (a
`$ ` line, or one starting with a command such as `invoke`: `is_command`), is illustrative and
must be preceded by `<!-- illustrative: <why> -->`.

Why Sybil and not byexample, cram or pytest-markdown-docs: cram and prysk read `.t` files, not
Markdown; pytest-markdown-docs and phmdoctest run Python fences only; byexample drives an
interactive shell through pexpect and reports in its own format. Sybil (a `test` extra) is the
kept tool that lexes Markdown fences and HTML-comment directives with their positions and
evaluates regions through a parser we supply — so the lexing is Sybil's, and this module only
says what a console transcript means and how a mismatch is told: `page:line: expected '…',
got '…'`, the line being the expected line's own line in the page.

Commands run with bash from a scratch tree (`scratch_tree`): a copy of tools/ (seedfw finds its
tree root from its own file, so the copy makes the scratch directory the root), symlinks to the
rest of the repository, and output/<board> linked to the slow suite's session build of that board
(tests/builds.py) — a page's `output/rk3588/...` is a real build that nobody builds again here.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from sybil import Document, Region
from sybil.example import SybilFailure
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer, RawFencedCodeBlockLexer

REPO = Path(__file__).resolve().parents[1]
ELLIPSIS = "..."
IN_LINE = "[...]"
SHELL_LANGUAGES = "sh|bash|shell|zsh"
MARKER = re.compile(r"<!--\s*(?P<kind>console|illustrative):\s*(?P<args>.*?)\s*-->\s*$")
TIMEOUT = 300          # one command; a flash through QEMU's GDB stub takes a few seconds


@dataclass
class Command:
    line: int                            # the `$ ` line's number in the page
    text: str
    expected: list[tuple[int, str]] = field(default_factory=list)   # (page line, expected line)


@dataclass
class Block:
    page: str                            # as named in messages: docs/flashing.md
    line: int                            # the opening fence's line
    builds: tuple[str, ...]              # session builds it reads (the console marker)
    commands: list[Command]
    slow: bool = False                   # `<!-- console: slow -->`, or it reads a build

    @property
    def in_slow_suite(self) -> bool:
        return self.slow or bool(self.builds)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _marker_before(text: str, pos: int):
    """The `<!-- console|illustrative: ... -->` on the last non-blank line before `pos`, or None."""
    before = text[:pos].rstrip().rsplit("\n", 1)[-1].strip()
    return MARKER.match(before)


def _outer_fences(document: Document) -> list[tuple[int, int]]:
    """Spans of every code fence; one inside another is an example of Markdown, not a block."""
    return [(r.start, r.end) for r in RawFencedCodeBlockLexer(re.compile(r".*$\n", re.M))(document)]


def _top_level(document: Document, regions):
    spans = _outer_fences(document)
    for region in regions:
        if not any(a < region.start and region.end <= b for a, b in spans):
            yield region


def _parse_transcript(page: str, first_line: int, source: str) -> list[Command]:
    commands: list[Command] = []
    for n, raw in enumerate(source.rstrip("\n").split("\n")):
        line = raw.rstrip()
        if line.startswith("$ "):
            commands.append(Command(first_line + n, line[2:]))
        elif not commands:
            if line:
                raise ValueError(f"{page}:{first_line + n}: console block output before any "
                                 "`$ ` command")
        else:
            commands[-1].expected.append((first_line + n, line))
    for cmd in commands:             # blank lines before the next command are layout, not output
        while cmd.expected and not cmd.expected[-1][1]:
            cmd.expected.pop()
    return commands


class ConsoleParser:
    """Sybil parser: each ```console fence becomes one region whose `parsed` is a Block."""

    def __init__(self, page: str):
        self.page = page
        self.lexer = FencedCodeBlockLexer("console")

    def __call__(self, document: Document):
        for region in _top_level(document, self.lexer(document)):
            source = region.lexemes["source"]
            fence_line = _line_of(document.text, region.start)
            marker = _marker_before(document.text, region.start)
            builds, slow = (), False
            if marker and marker["kind"] == "console":
                words = marker["args"].replace(",", " ").split()
                slow = "slow" in words
                if words[:1] == ["builds"]:
                    builds = tuple(w for w in words[1:] if w != "slow")
            block = Block(self.page, fence_line, builds,
                          _parse_transcript(self.page, fence_line + 1, source), slow)
            yield Region(region.start, region.end, block, _evaluate)


def parse_page(path: Path, page: str | None = None) -> list[Block]:
    """The page's console blocks, in order. `page` is how messages name it (default: relative
    to the repository)."""
    page = page or Path(path).resolve().relative_to(REPO).as_posix()
    doc = Document.parse(str(path), ConsoleParser(page))
    return [example.parsed for example in doc.examples()]


# The first word of a command line in a plain fence or an indented block (after any NAME=value):
# the commands the manual's examples use. A `$ ` prompt makes any line a command.
COMMANDS = frozenset("invoke python python3 pip pip3 git export cd rm cp mv mkdir cat ls echo "
                     "sudo make rauc bmaptool picocom screen lsusb reboot curl".split())
_ASSIGNMENTS = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")


def is_command(line: str) -> bool:
    """Whether a line of a plain fence or an indented block reads as a shell command."""
    line = line.strip()
    if line.startswith("$ "):
        return True
    m = _ASSIGNMENTS.match(line)
    if m and m.end() < len(line):
        line = line[m.end():]
    word = line.split(" ", 1)[0]
    return word in COMMANDS or word.startswith(("qemu-system-", "./"))


_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


def _indented_blocks(text: str):
    """(offset, lines) of every run of lines indented by 4 spaces or a tab that follows a blank
    line or a heading (or starts the page): Markdown's indented code blocks, and, after a list item, its
    indented paragraphs (the caller skips what lies in a fence)."""
    pos, prev_blank, block = 0, True, None
    for raw in text.split("\n"):
        if raw.startswith(("    ", "\t")) and raw.strip() and (prev_blank or block):
            if block is None:
                block = (pos, [])
            block[1].append(raw)
        elif raw.strip() and block:
            yield block
            block = None
        prev_blank = not raw.strip() or bool(_HEADING.match(raw))   # a heading ends itself
        pos += len(raw) + 1
    if block:
        yield block


def unmarked_shell_blocks(path: Path, page: str | None = None) -> list[str]:
    """`page:line: ...` for every sh/bash/shell fence, every plain or ```text fence and every
    indented block holding a command (`is_command`), without an illustrative marker right before
    it or with an empty reason, and every code fence that is never closed."""
    page = page or Path(path).resolve().relative_to(REPO).as_posix()
    text = Path(path).read_text()
    doc = Document(text, str(path))
    out = []
    for region in _top_level(doc, FencedCodeBlockLexer(SHELL_LANGUAGES)(doc)):
        line = _line_of(text, region.start)
        marker = _marker_before(text, region.start)
        if not marker or marker["kind"] != "illustrative":
            out.append(f"{page}:{line}: ```{region.lexemes['language']} block without "
                       "<!-- illustrative: why --> before it (or make it a ```console block)")
        elif not marker["args"]:
            out.append(f"{page}:{line}: illustrative marker without a reason")
    # Commands in a plain or ```text fence (a `$ ` prompt, or a line that starts with a
    # command: `invoke build`, `export X=1`, `python3 bench/...`) are a shell example too.
    for region in _top_level(doc, RawFencedCodeBlockLexer(
            re.compile(r"(?P<language>(?:text)?)[ \t]*$\n", re.M))(doc)):
        if not any(is_command(line) for line in region.lexemes["source"].split("\n")):
            continue
        marker = _marker_before(text, region.start)
        if not marker or marker["kind"] != "illustrative":
            out.append(f"{page}:{_line_of(text, region.start)}: commands in a plain fence: "
                       "make it ```console or mark it <!-- illustrative: why -->")
        elif not marker["args"]:
            out.append(f"{page}:{_line_of(text, region.start)}: illustrative marker without a "
                       "reason")
    # And in an indented (4-space) code block, which no fence lexer sees.
    spans = _outer_fences(doc)
    for start, lines in _indented_blocks(text):
        end = start + len(lines[0])
        if any(a < end and start < b for a, b in spans) or not any(map(is_command, lines)):
            continue
        marker = _marker_before(text, start)
        if not marker or marker["kind"] != "illustrative" or not marker["args"]:
            out.append(f"{page}:{_line_of(text, start)}: commands in an indented block: make it "
                       "a ```console fence or mark it <!-- illustrative: why -->")
    for region in RawFencedCodeBlockLexer(re.compile(r".*$\n", re.M))(doc):
        # Sybil's lexer ends an unclosed block at the end of the page, with no closing fence.
        if region.end == len(text) and not re.search(r"\n[ \t>]*(```|~~~)[ \t]*\Z",
                                                     text[region.start:region.end]):
            out.append(f"{page}:{_line_of(text, region.start)}: code fence never closed")
    return out


# --- matching --------------------------------------------------------------------------------

def _line_pattern(expected: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in expected.split(IN_LINE)))


def mismatch(expected: list[tuple[int, str]], actual: list[str]):
    """None when `actual` matches, else (page line or None, expected text, actual text).

    Every way of aligning the `...` lines is tried (the transcripts are short); the message
    names the furthest expected line no alignment got past, and the output line it met."""
    exp = [(n, t, None if t == ELLIPSIS else _line_pattern(t)) for n, t in expected]
    reached = {(0, 0)}
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if i == len(exp):
            continue
        nxt = []
        if exp[i][2] is None:
            nxt = [(i + 1, k) for k in range(j, len(actual) + 1)]
        elif j < len(actual) and exp[i][2].fullmatch(actual[j]):
            nxt = [(i + 1, j + 1)]
        for state in nxt:
            if state not in reached:
                reached.add(state)
                todo.append(state)
    if (len(exp), len(actual)) in reached:
        return None
    i = max(s[0] for s in reached)
    js = sorted(j for s_i, j in reached if s_i == i)
    if i == len(exp):                                # all matched, output left over
        return (exp[-1][0] if exp else None, "<end of output>", actual[js[0]])
    # After a `...` the line could have been met anywhere: show the output line most like it
    # (a changed figure), or the end of the output when none is much like it (a line missing).
    scored = [(difflib.SequenceMatcher(None, exp[i][1], actual[j]).ratio(), -j, j)
              for j in js if j < len(actual)]
    best = max(scored, default=(0.0, 0, len(actual)))
    j = best[2] if best[0] >= 0.5 or len(actual) not in js else len(actual)
    return (exp[i][0], exp[i][1], actual[j] if j < len(actual) else "<end of output>")


# --- running ---------------------------------------------------------------------------------

def scratch_tree(dest: Path, builds: dict[str, Path]) -> Path:
    """A tree where `invoke` finds the repository's tasks and output/<board> is `builds[board]`."""
    dest.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name in ("tools", "output", ".git") or (dest / entry.name).exists():
            continue
        (dest / entry.name).symlink_to(entry)
    if not (dest / "tools").exists():
        shutil.copytree(REPO / "tools", dest / "tools",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (dest / "output").mkdir(exist_ok=True)
    for board, outdir in builds.items():
        link = dest / "output" / board
        if not link.exists():
            link.symlink_to(Path(outdir).resolve())
    bin_dir = dest / ".bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "invoke"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m invoke \"$@\"\n")
    wrapper.chmod(0o755)
    return dest


def environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update(PYTHONPATH=str(tree / "tools"), PATH=f"{tree / '.bin'}{os.pathsep}{env['PATH']}",
               COLUMNS="100", NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8")
    env.pop("SEEDFW_DEBUG", None)
    return env


def run_block(block: Block, tree: Path) -> list[str]:
    """Run the block's commands in order from `tree`; one `page:line: ...` per mismatch (a block
    stops at its first: later commands may depend on it)."""
    env = environment(tree)
    for cmd in block.commands:
        try:
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=tree, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return [f"{block.page}:{cmd.line}: `{cmd.text}` still running after {TIMEOUT} s"]
        actual = proc.stdout.decode("utf-8", "replace").rstrip().split("\n")
        actual = [a.rstrip() for a in actual] if any(actual) else []
        found = mismatch(cmd.expected, actual)
        if found:
            line, want, got = found
            return [f"{block.page}:{line or cmd.line}: expected {want!r}, got {got!r}"]
    return []


def _evaluate(example) -> str | None:
    """Sybil evaluator: the document's namespace carries the scratch tree (run_page sets it)."""
    problems = run_block(example.parsed, example.namespace["tree"])
    return "\n".join(problems) or None


def run_page(path: Path, tree: Path, page: str | None = None, *, with_builds: bool) -> list[str]:
    """Evaluate the page's console blocks of the slow suite (`with_builds`: they read a build or
    are marked slow) or those of the fast suite."""
    page = page or Path(path).resolve().relative_to(REPO).as_posix()
    doc = Document.parse(str(path), ConsoleParser(page))
    doc.namespace["tree"] = tree
    problems = []
    for example in doc.examples():
        if example.parsed.in_slow_suite != with_builds:
            continue
        try:
            example.evaluate()
        except SybilFailure as failure:
            problems.append(failure.result)
    return problems


def pages() -> list[Path]:
    """Every Markdown page a reader meets: docs/ (the generated reference aside) and README.md."""
    found = [p for p in sorted((REPO / "docs").rglob("*.md"))
             if "reference" not in p.relative_to(REPO / "docs").parts]
    return found + [REPO / "README.md"]
