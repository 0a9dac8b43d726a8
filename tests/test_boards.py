"""Board registry: the three boards, and schema errors with file:line and field."""

import json

import pytest

from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.paths import BOARD_DIR

from cli import invoke


ORIGINAL = ["mps2-an385", "qemu-aarch64", "rk3588"]


def test_three_boards():
    # every folder with a board.yaml is a board (a new board is data: tests/test_board_data.py)
    assert boards.names() == sorted(p.parent.name for p in BOARD_DIR.glob("*/board.yaml"))
    assert set(ORIGINAL) <= set(boards.names())
    rk = boards.get("rk3588")
    assert rk.tfa["platform"] == "rk3588" and rk.region("bl31").base == 0x40000
    assert rk.region("pmu-sram").base == 0xFF100000
    assert boards.get("qemu-aarch64").qemu["machine"] == "virt,secure=on"
    assert boards.get("mps2-an385").arch == "armv7m"


def test_invoke_boards_lists_three(tmp_path):
    p = invoke("boards")
    assert p.returncode == 0
    # one record per board: its name starts the record, the description follows indented
    assert [l.split()[0] for l in p.stdout.splitlines() if not l.startswith(" ")] == \
        boards.names()
    items = json.loads(invoke("boards", "--json").stdout)
    assert {b["name"]: b["arch"] for b in items if b["name"] in ORIGINAL} == {
        "mps2-an385": "armv7m", "qemu-aarch64": "aarch64", "rk3588": "aarch64"}


def broken(tmp_path, old, new):
    text = (BOARD_DIR / "rk3588" / "board.yaml").read_text()
    assert old in text
    p = tmp_path / "board.yaml"
    p.write_text(text.replace(old, new))
    return p


def test_missing_field_gives_file_line_and_field(tmp_path):
    p = broken(tmp_path, "soc: rk3588\n", "")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    assert e.value.line() == f"{p}:2: missing required field 'soc'"


def test_wrong_type_gives_line_of_the_value(tmp_path):
    p = broken(tmp_path, "  partition_size: 0x01000000", "  partition_size: big")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    line = (p.read_text().splitlines()).index("  partition_size: big") + 1
    assert e.value.line() == f"{p}:{line}: field 'image.partition_size': expected integer, got str 'big'"


def test_nested_list_field(tmp_path):
    p = broken(tmp_path, "{name: bl31, base: 0x00040000", "{name: bl31, base: -1")
    with pytest.raises(SeedfwError, match=r"board.yaml:\d+: field 'memory\[1\].base': -1 is less than the minimum of 0"):
        boards.load_file(p)


def test_yaml_syntax_error_gives_line(tmp_path):
    p = broken(tmp_path, "cpu: cortex-a76\n", "cpu: [cortex-a76\n")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    assert e.value.line().startswith(f"{p}:")
    assert "YAML syntax error" in e.value.line()


def test_unknown_field_and_enum(tmp_path):
    p = broken(tmp_path, "arch: aarch64", "arch: riscv64")
    with pytest.raises(SeedfwError, match=r"field 'arch': 'riscv64' is not one of aarch64, armv7m"):
        boards.load_file(p)
    p = broken(tmp_path, "counters: rk3588-dfi", "counters: rk3588-dfi\ncolour: blue")
    with pytest.raises(SeedfwError, match=r"unknown field 'colour'"):
        boards.load_file(p)
