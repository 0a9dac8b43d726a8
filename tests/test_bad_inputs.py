"""The bad-input corpus: every case in tests/bad_inputs/<case>/case.yaml must give exactly one clear
error line (the expected one, to the letter), a non-zero exit, no traceback, and leave the good
outputs already in the output directory bit-for-bit unchanged.

case.yaml fields:
  board:   the board whose good outputs are prepared first (invoke config/build into {out})
  prepare: the invoke command that makes those good outputs (default: config --board B)
  command: the invoke command under test; {case} is the case folder, {out} the output directory
  expect:  the exact error line ({case}, {out} and {boards}, the known boards, substituted)
  files:   optional {name: text} written into a scratch copy of the case folder first
  bytes:   optional {name: hex} likewise, for binary inputs
  env:     optional {VARIABLE: value} for the command ({case} substituted; "" sets it empty)
  mirror:  optional files of $SEEDFW_MIRROR_DIR linked into the case's mirror/ (a committed
           link would name where one checkout sits; skipped without a mirror)
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import yaml

from cli import invoke, one_error_line

CORPUS = Path(__file__).resolve().parent / "bad_inputs"
CASES = sorted(p.parent.name for p in CORPUS.glob("*/case.yaml"))


def tree_hashes(root: Path) -> dict[str, str]:
    # .lock: the output directory's lock file (empty when nobody holds it) is not an output
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Good outputs per (board, prepare command), made once and copied per case."""
    cache = {}

    def get(board, prepare):
        key = (board, tuple(prepare))
        if key not in cache:
            out = tmp_path_factory.mktemp(f"good-{board}")
            p = invoke(*[a.replace("{out}", str(out)) for a in prepare])
            assert p.returncode == 0, p.stderr
            cache[key] = out
        return cache[key]

    return get


def test_corpus_is_large_enough():
    assert len(CASES) >= 10


@pytest.mark.parametrize("name", CASES)
def test_bad_input(name, prepared, tmp_path):
    spec = yaml.safe_load((CORPUS / name / "case.yaml").read_text())
    case = tmp_path / name
    shutil.copytree(CORPUS / name, case)
    for rel in spec.get("mirror") or ():
        real = Path(os.environ.get("SEEDFW_MIRROR_DIR", "/nonexistent")) / rel
        if not real.is_file():
            pytest.skip(f"needs {rel} from $SEEDFW_MIRROR_DIR")
        (case / "mirror").mkdir(exist_ok=True)
        (case / "mirror" / real.name).symlink_to(real)
    for fname, text in (spec.get("files") or {}).items():
        (case / fname).write_text(text)
    for fname, hexdata in (spec.get("bytes") or {}).items():
        (case / fname).write_bytes(bytes.fromhex(hexdata.replace(" ", "").replace("\n", "")))
    board = spec.get("board", "rk3588")
    prepare = spec.get("prepare", ["config", "--board", board, "--output", "{out}"])
    out = tmp_path / "out"
    shutil.copytree(prepared(board, prepare), out)
    before = tree_hashes(out)

    def subst(s: str) -> str:
        # {boards}: the board folders (a new board is data: the known list grows with it)
        from seedfw import boards
        return s.replace("{case}", str(case)).replace("{out}", str(out)).replace(
            "{boards}", ", ".join(boards.names()))

    env = dict(os.environ, **{k: subst(str(v)) for k, v in (spec.get("env") or {}).items()})
    proc = invoke(*[subst(str(a)) for a in spec["command"]], env=env)
    assert one_error_line(proc) == subst(spec["expect"])
    assert tree_hashes(out) == before, "a failed command changed the good outputs"
