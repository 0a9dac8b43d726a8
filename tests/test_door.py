"""One door for outside bytes, enforced (issue "Hostile input, second pass").

The modules that handle files a user names or hands over — an image to inspect, an output
directory someone else built, counters, models or perf JSON, a serial log, an ELF to `stats`,
a flash target — must read them through the door (seedfw.reading and the helpers built on
it: util.read_json, yamlfile), never with their own open()/read_bytes()/read_text()/json.load().
The check walks the AST of every module, like the import-circle test: a direct read in an
outside-facing module fails, naming the file and line. Modules outside those packages read what
seedfw itself wrote in this build or the tree's own files; each is listed below with why.

Negative control: a planted module that reads a command-line path directly is found.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "tools" / "seedfw"

# The door itself: bounded, typed readers (regular files only, size caps, mmap, one-line errors).
DOOR = {
    "reading.py": "the door: read_input/read_bytes/read_text, View, caps, loads_json",
    "yamlfile.py": "YAML through the door's size cap and a safe loader with line numbers",
    "util.py": "read_json: JSON through reading.read_bytes + loads_json",
}

# Packages and modules whose inputs come from outside (paths on the command line, handed-over
# output directories): no direct read at all.
OUTSIDE_FACING = ("report/", "counters/", "images/", "flash/", "stats/",
                  "tune/objectives.py")

READS = {"open", "read_bytes", "read_text", "json.load", "json.loads"}


def direct_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each direct file read: open(), Path.read_bytes()/read_text(),
    json.load(); json.loads() of a .read_text()/.read_bytes() result."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            if not _writes(node):
                found.append((node.lineno, "open()"))
        elif isinstance(f, ast.Attribute) and f.attr in ("read_bytes", "read_text") \
                and not (isinstance(f.value, ast.Name) and f.value.id == "reading"):
            found.append((node.lineno, f".{f.attr}()"))
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "json" \
                and f.attr == "load":
            found.append((node.lineno, "json.load()"))
    return found


def _writes(call: ast.Call) -> bool:
    """open(path, "wb") and the like: output, not input (a read-back opens for reading)."""
    mode = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and \
        any(c in mode.value for c in "wax") and "+" not in mode.value


# A direct read that is not of outside bytes (a file this run just wrote, the kernel's own
# /proc and /sys, an image the flash checks already vetted) says so where it stands, with its
# reason: `# door: <why>` on the line. The reason is for a reviewer; this test only insists that
# there is one, so a new direct read is always a decision someone wrote down.
EXEMPT = re.compile(r"#\s*door:\s*\S.{10,}")


def violations(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in DOOR or not rel.startswith(OUTSIDE_FACING):
            continue
        text = path.read_text()
        lines = text.splitlines()
        for line, what in direct_reads(ast.parse(text)):
            # on the line, or alone on the line above (where a continuation allows no comment)
            if not (EXEMPT.search(lines[line - 1]) or
                    (line > 1 and lines[line - 2].lstrip().startswith("#")
                     and EXEMPT.search(lines[line - 2]))):
                out.append(f"{rel}:{line}: {what}")
    return sorted(out, key=lambda v: (v.split(":")[0], int(v.split(":")[1])))


def test_outside_facing_modules_read_only_through_the_door():
    assert violations(PKG) == []


def test_the_door_modules_exist():
    for rel in DOOR:
        assert (PKG / rel).is_file(), rel


def test_negative_control_a_direct_read_is_found(tmp_path):
    pkg = tmp_path / "seedfw"
    (pkg / "report").mkdir(parents=True)
    (pkg / "report" / "planted.py").write_text(
        "import json, sys\nfrom pathlib import Path\n"
        "def main():\n    return json.loads(Path(sys.argv[1]).read_text())\n"
        "def other(p):\n    with open(p) as f:\n        return json.load(f)\n"
        "def out(p):\n    with open(p, 'wb') as f:\n        f.write(b'')\n")
    (pkg / "report" / "fine.py").write_text(
        "from .. import reading\ndef main(p):\n    return reading.read_text(p, 'json')\n"
        "def own(p):\n    return p.read_text()  # door: the file this function just wrote\n"
        "def lazy(p):\n    return p.read_text()  # door: ok\n")
    # (a reason of a few characters is no reason: fine.py:7 counts)
    assert violations(pkg) == ["report/fine.py:7: .read_text()", "report/planted.py:4: .read_text()",
                               "report/planted.py:6: open()", "report/planted.py:7: json.load()"]
