"""One CLI, whatever the task (issue 34): a letter means the same option in every task, a reader
that goes away ends any task quietly, and `invoke inspect --help` names what inspect reads.

Fast: the short flags are read from the task objects Invoke parses with (tasks.py's namespace),
SIGPIPE is a real `invoke` process writing into a pipe whose reader is already closed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict

import pytest
from invoke import Collection, task

from cli import ROOT, invoke
from seedfw.cli import SHORT_FLAGS, SIGPIPE_EXIT, SeedfwTask

sys.path.insert(0, str(ROOT))
import tasks  # noqa: E402  (the tree root's tasks.py: every task the user can run)


def short_flags(ns: Collection) -> dict[str, set[str]]:
    """{letter: {the long option names it stands for, over every task}}."""
    letters: dict[str, set[str]] = defaultdict(set)
    for name, t in ns.tasks.items():
        for arg in t.get_arguments():
            longs = [n for n in arg.names if len(n) > 1]
            for n in arg.names:
                if len(n) == 1:
                    letters[n].add(longs[0] if longs else n)
    return letters


def ambiguous(ns: Collection) -> dict[str, set[str]]:
    return {k: v for k, v in short_flags(ns).items() if len(v) > 1}


def test_every_task_is_a_seedfw_task():
    """Each task goes through seedfw.cli.command: the error contract, quiet SIGPIPE, the flags."""
    assert tasks.ns.tasks, "no tasks found"
    assert [n for n, t in tasks.ns.tasks.items() if not isinstance(t, SeedfwTask)] == []


def test_a_letter_means_one_option_in_every_task():
    letters = short_flags(tasks.ns)
    assert ambiguous(tasks.ns) == {}
    # a letter is either a SHORT_FLAGS entry or an option whose whole name is that letter
    # (`invoke test -k EXPR -x`: pytest's own)
    for letter, longs in letters.items():
        (name,) = longs
        assert name == letter or SHORT_FLAGS[name.replace("-", "_")] == letter, (letter, name)
    assert len(set(SHORT_FLAGS.values())) == len(SHORT_FLAGS)


def test_the_letters_of_the_issue():
    """`-j` is --jobs wherever a task has jobs (build, tune, ci, fuzz), never --objectives."""
    by_task = {n: {a.names[0]: a.names for a in t.get_arguments()} for n, t in tasks.ns.tasks.items()}
    for name in ("build", "tune", "ci", "fuzz"):
        assert by_task[name]["jobs"] == ("jobs", "j"), name
    assert by_task["tune"]["objectives"] == ("objectives",)
    assert by_task["build"]["board"] == ("board", "b")
    assert by_task["test"]["k"] == ("k",)


def test_negative_control_invokes_own_letters_collide():
    """Plain @task takes the first free letter of each name: -j is --jobs in one task and
    --objectives in the other, which is what the check above exists to catch."""
    @task
    def build(c, board=None, output=None, jobs=0):
        pass

    @task
    def tune(c, board=None, output=None, objectives=None, jobs=0):
        pass

    assert ambiguous(Collection(build, tune)) == {"j": {"jobs", "objectives"}}


def _into_closed_pipe(*args) -> subprocess.CompletedProcess:
    """`invoke ARGS | head -0`, deterministically: the pipe's reader is closed before the task
    writes its first byte."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [
    ("dvfs", "--board", "rk3588"),
    ("boards",),
    ("models", "--board", "qemu-aarch64"),
    ("counters", "--board", "rk3588", "--recorded", "tests/data/rk3588_dfi_recorded.yaml"),
])
def test_a_closed_reader_ends_the_task_quietly(args):
    proc = _into_closed_pipe(*args)
    assert (proc.returncode, proc.stderr) == (SIGPIPE_EXIT, "")


def test_sigpipe_negative_control_a_reader_that_stays_gets_everything():
    proc = invoke("dvfs", "--board", "rk3588")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines()[-1].endswith("board/rk3588/dvfs.yaml ok")


def test_inspect_help_names_every_format_it_reads():
    proc = invoke("--help", "inspect")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for what in ("FIT (.itb)", "boot package (.pkg)", "disk image", "u-boot-rockchip.bin",
                 "-spi variant", "maskrom loader"):
        assert what in text, what


def test_counters_text_has_no_python_repr_and_hex_addresses():
    proc = invoke("counters", "--board", "rk3588", "--recorded",
                  "tests/data/rk3588_dfi_recorded.yaml")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not any("{" in l or "[" in l.split(None, 1)[-1] for l in lines), proc.stdout
    assert lines[2].split()[:3] == ["channels[0]", "write=500", "read=2000"]
    assert any(l.split() == ["total", "read_bytes=147200", "write_bytes=34048",
                             "access_bytes=197632"] for l in lines)
    assert any(l.split() == ["base", "0xfe060000"] for l in lines)


def test_paths_print_relative_below_the_cwd_else_absolute(tmp_path, monkeypatch):
    from seedfw import paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    assert paths.shown(tmp_path / "a" / "f") == "a/f"
    assert paths.shown(ROOT / "board") == str(ROOT / "board")     # never ../../…
    assert not paths.shown("/etc/hosts").startswith("..")


def test_a_second_parser_keeps_the_option_help():
    """Invoke pops help texts off a Task as it builds a parser; a seedfw task keeps them, so a
    second parser in one process (the docs after a test, mkdocs serve) still prints them."""
    task = tasks.ns.tasks["boards"]
    first = {a.name: a.help for a in task.get_arguments()}
    second = {a.name: a.help for a in task.get_arguments()}
    assert first["json"] == "print JSON for machines"
    assert second == first
