"""The README's quick start, run literally: its two command lines, in a fresh venv, on a clean copy
of the tree. If the README drifts from what works, this fails."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [l for l in block.splitlines() if l.strip() and not l.startswith("#")]


def test_quick_start_is_two_lines():
    lines = quick_start_lines()
    assert len(lines) == 2
    assert "pip install -e '.[test]'" in lines[0] and "invoke setup build --board rk3588" in lines[0]
    assert lines[1] == "invoke test"


@pytest.mark.slow
def test_quick_start_first_line_works_in_a_fresh_venv(tmp_path):
    """Line 1 literally, in a new venv and a copy of the tracked tree (line 2 is this very suite)."""
    tree = tmp_path / "seedfw"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True).stdout
    for rel in filter(None, files.split("\0")):
        if (ROOT / rel).is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, tree / rel)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}", VIRTUAL_ENV=str(venv))
    env.pop("PYTHONPATH", None)
    line = quick_start_lines()[0].replace("python3 ", f"{venv / 'bin' / 'python3'} ", 1)
    proc = subprocess.run(line, shell=True, cwd=tree, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    bl31 = tree / "output" / "rk3588" / "images" / "bl31.elf"
    assert bl31.is_file() and bl31.read_bytes()[:4] == b"\x7fELF"


def test_readme_is_one_screen_or_three_and_points_to_the_manual():
    """The manual lives in docs/; the README keeps what a newcomer needs (issue 23: <= 200 lines)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for heading in ("## Quick start", "## The manual", "## Boards", "## Layout"):
        assert heading in text
    for page in re.findall(r"\]\((docs/[^)]+\.md)\)", text):
        assert (ROOT / page).is_file(), page
