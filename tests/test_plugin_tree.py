"""The contributing pages' claim, checked: a new part, flash runner and report section are each
one new file plus one registry line, and a copy of the tree with the three builds, flashes and
reports with them (issue 32). Nothing else in the copy is edited; the diff says so."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOARD = "mps2-an385"            # the smallest board: the new part rides on its build

PART = '''"""A note the build leaves beside the images: the test's new part.

Kconfig symbols read: none. Roles it provides: "dummy-note". Outputs: <out>/images/dummy.txt.
"""

from __future__ import annotations

from .. import plan
from .base import Output, Part


class DummyPart(Part):
    """Writes images/dummy.txt (the board's name): one file, one role, one step."""

    name = "dummy"
    provides = ("dummy-note",)
    when = "always"

    def enabled(self, ctx):
        return True

    def outputs(self, ctx):
        return [Output(ctx.images / "dummy.txt", "dummy.write", ("dummy-note",))]

    def steps(self, ctx):
        out = ctx.build_dir("dummy")

        def write(step):
            out.mkdir(parents=True, exist_ok=True)
            (out / "dummy.txt").write_text(f"dummy part on {ctx.board.name}\\n")
            self.install(step, {"dummy.txt": out / "dummy.txt"}, ctx.images)

        return [plan.Step("dummy.write", write, inputs=lambda: {"v": 1}, package=self.name)]
'''

RUNNER = '''"""A runner that writes the image into a file (the test's new flash runner)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .base import FlashResult, FlashRunner


class DummyRunner(FlashRunner):
    """Copies the image to the file named by --dummy-to and verifies it by reading it back."""

    name = "dummy"
    capabilities = frozenset({"flash", "verify"})
    options = {"dummy_to": "file the dummy runner writes the image to"}
    selected_by = "dummy_to"

    def __init__(self, board, probe_uid=None, log=print, dummy_to=None):
        super().__init__(board, probe_uid, log)
        self.dest = Path(dummy_to)

    @classmethod
    def from_board(cls, board, probe_uid=None, **kwargs):
        return cls(board, probe_uid, log=kwargs.get("log", print), dummy_to=kwargs.get("dummy_to"))

    def flash(self, image, verify=True):
        shutil.copyfile(image, self.dest)
        size = Path(image).stat().st_size
        if verify and self.dest.read_bytes() != Path(image).read_bytes():
            raise RuntimeError("read-back differs")
        self.log(f"dummy: wrote {Path(image).name} to {self.dest.name}")
        return FlashResult(Path(image), self.name, size, size if verify else 0)
'''

SECTION = '''"""The report's `dummy` section (the test's new section)."""

from __future__ import annotations

from ..safe import Md, html
from .base import Inputs, Section, computed


class Dummy(Section):
    """The size of images/dummy.txt (computed: the file size). Reads: <out>/images/dummy.txt."""

    name = "dummy"

    def data(self, inputs: Inputs) -> dict:
        f = inputs.outdir / "images" / "dummy.txt"
        return dict(available=True, size=computed(f.stat().st_size, source="file size"))

    def markdown(self, part: dict) -> list[str]:
        return [Md("## Dummy"), Md(""), Md(f"dummy.txt: {part['size']['value']} bytes")]

    def html(self, part: dict) -> str:
        return html("<h2>Dummy</h2><p>{{ n }} bytes</p>", n=part["size"]["value"])
'''

# (registry file, the line after which the new entry goes, the new entry)
REGISTRY_LINES = [
    ("tools/seedfw/parts/__init__.py", '"dummy": "seedfw.parts.dummy:DummyPart",'),
    ("tools/seedfw/flash/__init__.py", '"dummy": "seedfw.flash.dummy:DummyRunner",'),
    ("tools/seedfw/report/sections/__init__.py", '"dummy": "seedfw.report.sections.dummy:Dummy",'),
]


def _add_entry(path: Path, entry: str) -> None:
    """One line into the Registry({...}) literal: before its closing `})`."""
    text = path.read_text()
    head, sep, tail = text.partition("\n})")
    assert sep, f"{path}: no Registry literal"
    path.write_text(head + "\n    " + entry + sep + tail)


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file() or src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name, follow_symlinks=False)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"],
                   cwd=dest, check=True)


@pytest.mark.slow
def test_a_new_part_runner_and_section_are_one_file_and_one_line_each(tmp_path):
    tree = tmp_path / "tree"
    _copy_tree(tree)
    (tree / "tools/seedfw/parts/dummy.py").write_text(PART)
    (tree / "tools/seedfw/flash/dummy.py").write_text(RUNNER)
    (tree / "tools/seedfw/report/sections/dummy.py").write_text(SECTION)
    for rel, entry in REGISTRY_LINES:
        _add_entry(tree / rel, entry)
    # What a contributor changed: three new files and one line in each of three registries.
    subprocess.run(["git", "add", "-A"], cwd=tree, check=True)
    stat = subprocess.run(["git", "diff", "--cached", "--numstat"], cwd=tree, capture_output=True,
                          text=True, check=True).stdout.split("\n")
    changed = {line.split("\t")[2]: line.split("\t")[:2] for line in stat if line}
    assert set(changed) == {"tools/seedfw/parts/dummy.py", "tools/seedfw/flash/dummy.py",
                            "tools/seedfw/report/sections/dummy.py"} | {r for r, _ in REGISTRY_LINES}
    for rel, _ in REGISTRY_LINES:
        assert changed[rel] == ["1", "0"], (rel, changed[rel])

    env = {**os.environ, "PYTHONPATH": str(tree / "tools"), "SEEDFW_OUTPUT": str(tmp_path / "out")}
    out = tmp_path / "out" / BOARD

    def invoke(*args):
        return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=tree, env=env,
                              capture_output=True, text=True, timeout=1800)

    built = invoke("build", "--board", BOARD, "--output", str(out))
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    note = out / "images" / "dummy.txt"
    assert note.read_text() == f"dummy part on {BOARD}\n"
    manifest = json.loads((out / "manifest.json").read_text())
    listed = {a["name"] if "name" in a else Path(a["path"]).name: a for a in manifest["artifacts"]}
    assert "dummy-note" in listed["dummy.txt"]["roles"]
    assert (out / "logs" / "dummy.log").is_file()        # the step's log is its part's name

    report = (out / "report" / "report.md").read_text()
    assert "## Dummy" in report and f"dummy.txt: {len(note.read_bytes())} bytes" in report
    assert json.loads((out / "report" / "report.json").read_text())["dummy"]["available"] is True

    dest = tmp_path / "flashed.bin"
    flashed = invoke("flash", "--board", BOARD, "--output", str(out), "--image",
                     str(out / "images" / "mcu.bin"), "--dummy-to", str(dest))
    assert flashed.returncode == 0, flashed.stdout[-2000:] + flashed.stderr[-2000:]
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == \
        hashlib.sha256((out / "images" / "mcu.bin").read_bytes()).hexdigest()
    assert "dummy: wrote mcu.bin" in flashed.stdout
