"""What a user sees in a terminal: `invoke --list` and `invoke inspect` of a disk image at 80
columns, on a terminal (a pty) and in a pipe. Every task summary is one whole sentence that fits;
no table cell is cut or split across lines (inspect prints one record per entry when its table
does not fit). The wide boxed table, when the width allows it, is the negative control."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

import pytest

import builds
from cli import ROOT, invoke
from seedfw import boards, dvfs
from seedfw.images import entries as ent, fit

BOX = "│┃"


def in_pty(*args, cols=80, rows=50, timeout=300) -> tuple[int, str]:
    """`invoke ARGS` on a pseudo-terminal of `cols` columns: what the user's terminal receives."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, COLUMNS=str(cols), TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "invoke", *map(str, args)], cwd=ROOT, env=env,
                            stdin=slave, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    chunks = []

    def pump():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:           # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump)
    reader.start()
    code = proc.wait(timeout=timeout)
    reader.join(timeout=10)
    os.close(master)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)   # colours: the text is what counts


def piped(*args, cols=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if cols:
        env["COLUMNS"] = str(cols)
    p = invoke(*args, env=env)
    return p.returncode, p.stdout


# ---- invoke --list ---------------------------------------------------------------------------

def _summaries(text: str) -> dict[str, str]:
    lines = [l for l in text.splitlines()[1:] if l.strip()]
    out = {}
    for line in lines:
        assert line.startswith("  ") and not line.startswith("    "), \
            f"a summary continues on another line: {line!r}"
        name, summary = line.split(None, 1)
        out[name] = summary
        assert len(line) <= 80, f"wider than 80 columns: {line!r}"
    return out


@pytest.mark.parametrize("where", ["pty", "pipe at COLUMNS=80", "pipe"])
def test_invoke_list_summaries_are_whole_sentences_that_fit(where):
    code, text = (in_pty("--list") if where == "pty" else
                  piped("--list", cols=80 if "80" in where else None))
    assert code == 0 and text.startswith("Available tasks:"), text
    summaries = _summaries(text)
    assert {"build", "doctor", "setup", "legal", "inspect", "docs", "tune"} <= set(summaries)
    for name, summary in summaries.items():
        assert summary[0].isupper() and summary.endswith("."), f"{name}: {summary!r}"
        assert not summary.rstrip(".").endswith((",", " and", " then", " plus")), summary


def test_invoke_list_negative_control_a_long_first_line_wraps(tmp_path):
    """The check above can fail: invoke wraps a first docstring line that is too long."""
    from invoke import Collection, Program, task

    @task
    def long(c):
        """Check every host program and file the tasks use (and QEMU's firmware files for our boards),
        and more."""

    env_cols = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            Program(namespace=Collection(long), binary="invoke").run(["invoke", "--list"],
                                                                     exit=False)
    finally:
        if env_cols is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = env_cols
    with pytest.raises(AssertionError, match="continues on another line"):
        _summaries(buf.getvalue())


# ---- invoke inspect of a disk image -----------------------------------------------------------

@pytest.fixture(scope="module")
def small_disk(tmp_path_factory):
    """A GPT disk image made by genimage, its firmware partition one of our FITs (mkimage)."""
    work = tmp_path_factory.mktemp("disk")
    es = [ent.FirmwareEntry("bl31", b"\x11" * 1000, load=0x40000),
          ent.DvfsEntry("dvfs", dvfs.encode(dvfs.load(boards.get("rk3588").dvfs_file), "balanced")),
          ent.ModelEntry("yolo", b"RKNN" + bytes(300), alignment=4096, model_type="rknn")]
    fit.build(es, work / "input" / "fw.itb", description="test FIT")
    (work / "genimage.cfg").write_text(
        'image disk.img {\n\thdimage {\n\t\tpartition-table-type = "gpt"\n'
        '\t\tdisk-uuid = "be43dc76-af80-565c-bc72-35f38dede8c9"\n\t}\n'
        '\tpartition firmware {\n\t\timage = "fw.itb"\n\t\toffset = 1024K\n\t\tsize = 1024K\n\t}\n'
        '\tpartition spare {\n\t\tsize = 512K\n\t}\n}\n')
    subprocess.run(["genimage", "--config", "genimage.cfg", "--inputpath", "input",
                    "--outputpath", "out", "--rootpath", "root", "--tmppath", "tmp"], cwd=work,
                   check=True, capture_output=True)
    return work / "out" / "disk.img"


def _check_records(text: str, rows: list[dict]):
    lines = text.splitlines()
    assert not any(c in text for c in BOX), "the boxed table at 80 columns"
    for r in rows:
        for cell in (r["name"], r["detail"]):
            if cell:
                assert any(cell in l for l in lines), f"cell {cell!r} is not whole on one line"
        assert any(l.split(None, 1)[-1] == r["name"] for l in lines), r["name"]
    for line in lines:                  # only a cell wider than the line itself may exceed it
        if len(line) > 80:
            assert any(r["detail"] and r["detail"] in line and len(r["detail"]) > 70
                       for r in rows), line


def _inspect_everywhere(image):
    doc = json.loads(invoke("inspect", image, "--json").stdout)
    for where, (code, text) in {"pty": in_pty("inspect", image),
                                "pipe at COLUMNS=80": piped("inspect", image, cols=80),
                                "pipe": piped("inspect", image)}.items():
        assert code == (0 if doc["ok"] else 1), where
        _check_records(text, doc["rows"])
    return doc


def test_inspect_small_disk_at_80_columns(small_disk):
    doc = _inspect_everywhere(small_disk)
    names = [r["name"] for r in doc["rows"]]
    assert "partition 1 firmware" in names and "firmware/model-yolo" in names
    # negative control: wide enough, the boxed table comes back (one row per line, in boxes)
    code, wide = piped("inspect", small_disk, cols=250)
    box_rows = [l for l in wide.splitlines() if l.startswith("│")]
    assert any("partition 1 firmware" in l and "LBA 2048..4095" in l for l in box_rows)
    with pytest.raises(AssertionError):
        _check_records(wide, doc["rows"])


@pytest.mark.slow
def test_inspect_rk3588_disk_at_80_columns(rk3588_build):
    doc = _inspect_everywhere(builds.image(rk3588_build, "rk3588-disk.img"))
    assert doc["ok"] and any(r["name"].startswith("boot@32K/") for r in doc["rows"])
