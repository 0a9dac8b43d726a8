"""One door for outside bytes, enforced (issue "Hostile input, second pass").

The modules that handle files a user names or hands over — an image to inspect, an output
directory someone else built, counters, models or perf JSON, a serial log, an ELF to `stats`,
a flash target — must read them through the door (seedfw.images.reading and the helpers built on
it: util.read_json, yamlfile), never with their own open()/read_bytes()/read_text()/json.load().
The check walks the AST of every module, like the import-circle test: a direct read in an
outside-facing module fails, naming the file and line. Modules outside those packages read what
seedfw itself wrote in this build or the tree's own files; each is listed below with why.

Negative control: a planted module that reads a command-line path directly is found.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "tools" / "seedfw"

# The door itself: bounded, typed readers (regular files only, size caps, mmap, one-line errors).
DOOR = {
    "images/reading.py": "the door: read_input/read_bytes/read_text, View, caps, loads_json",
    "yamlfile.py": "YAML through the door's size cap and a safe loader with line numbers",
    "util.py": "read_json: JSON through reading.read_bytes + loads_json",
}

# Packages and modules whose inputs come from outside (paths on the command line, handed-over
# output directories): no direct read at all.
OUTSIDE_FACING = ("report/", "counters/", "images/", "flash/", "stats.py", "stats_diff.py",
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


def violations(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in DOOR or not rel.startswith(OUTSIDE_FACING):
            continue
        for line, what in direct_reads(ast.parse(path.read_text())):
            out.append(f"{rel}:{line}: {what}")
    return out


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
        "from ..images import reading\ndef main(p):\n    return reading.read_text(p, 'json')\n")
    assert violations(pkg) == ["report/planted.py:4: .read_text()", "report/planted.py:6: open()",
                               "report/planted.py:7: json.load()"]
