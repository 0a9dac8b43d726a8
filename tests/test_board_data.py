"""Boards are data (issue 32): board.yaml's capabilities, partitions and FITs are validated with
one line naming the file and field, and a second RK3588-family board (Radxa ROCK 5A) was added
by one commit that touches only board/ and configs/."""

from __future__ import annotations

import subprocess

import pytest

from seedfw import boards, config as config_mod, parts
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from test_boards import broken   # rk3588's board.yaml with one edit, in a tmp file


def _line(p, text):
    return next(i for i, line in enumerate(p.read_text().splitlines(), 1) if text in line)


def test_an_unknown_capability_is_one_line(tmp_path):
    p = broken(tmp_path, "capabilities: [maskrom, spl-fit, spi-nor, extlinux]",
               "capabilities: [maskrom, spl-fit, spi-nor, extlinx]")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    assert e.value.line() == (f"{p}:{_line(p, 'extlinx')}: field 'capabilities[3]': 'extlinx' is "
                              "not one of maskrom, spl-fit, spi-nor, extlinux, os-fit, "
                              "fit-bootcmd, qemu-bios, pflash")


def test_a_partition_twice_is_one_line(tmp_path):
    p = broken(tmp_path, "    - {name: rootfs, fs: ext4, roles: [rootfs]}",
               "    - {name: boot, fs: ext4, roles: [rootfs]}")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    assert e.value.line() == f"{p}:{_line(p, 'roles: [rootfs]')}: image.partitions: 'boot' is defined twice"


def test_a_partition_without_roles_is_one_line(tmp_path):
    p = broken(tmp_path, "roles: [firmware-fit]}", "roles: []}")
    with pytest.raises(SeedfwError, match=r"board.yaml:\d+: field 'image.partitions\[1\].roles': "
                                          r"\[\] should be non-empty"):
        boards.load_file(p)


def test_a_uboot_file_that_is_not_there_is_one_line(tmp_path):
    p = broken(tmp_path, "  dtsi: firmware/uboot/rk3588-seedfw.dtsi",
               "  dtsi: firmware/uboot/nosuch.dtsi")
    with pytest.raises(SeedfwError) as e:
        boards.load_file(p)
    assert e.value.line() == (f"{p}:{_line(p, 'nosuch.dtsi')}: uboot.dtsi: "
                              "firmware/uboot/nosuch.dtsi is not a file of the project")


def test_rock5a_is_rk3588_with_other_data(tmp_path):
    """The second board plans like the first: the same parts, its own U-Boot defconfig and DT."""
    a = config_mod.resolve("rk3588", tmp_path / "a").values
    b = config_mod.resolve("rock5a", tmp_path / "b").values
    assert b["UBOOT_DEFCONFIG"] == "rock5a-rk3588s" and a["UBOOT_DEFCONFIG"] == "rock5b-rk3588"
    assert {k: v for k, v in a.items() if a[k] != b.get(k)} == {
        "BOARD": "rk3588", "BOARD_RK3588": True, "UBOOT_DEFCONFIG": "rock5b-rk3588",
        "MODEL_MANIFEST": "board/rk3588/models.yaml",
        # CONFIG_UPDATE's A/B disk: rk3588's defconfig only (rock5a's board.yaml has no update:)
        **{k: v for k, v in a.items() if k.startswith("UPDATE") and v != b.get(k)}}
    assert a["UPDATE"] is True and not b.get("UPDATE")
    on = lambda name, v: [p.name for p in parts.enabled(  # noqa: E731
        parts.context(boards.get(name), tmp_path / name, v))]
    assert on("rock5a", b) == on("rk3588", a)
    ctx = parts.context(boards.get("rock5a"), tmp_path / "b", b)
    assert ctx.file("board-dtb").name == "rk3588s-rock-5a.dtb"
    assert ctx.file("dtb").name == "rk3588s-rock-5a-seedfw.dtb"


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                          check=True).stdout


def _rock5a_commits() -> list[str]:
    """The commits that add or amend ROCK 5A as a board: every commit that adds its board.yaml,
    and every "board: rock5a…" commit (its farm place). A tree-wide change that also rewrites a
    comment in its files (a module move) is not a board commit."""
    added = _git("log", "--no-merges", "--diff-filter=A", "--format=%H", "--",
                 "board/rock5a/board.yaml").split()
    named = [line.split(" ", 1)[0] for line in _git("log", "--no-merges", "--format=%H %s", "--",
                                                   "board/rock5a").splitlines()
             if line.split(" ", 1)[1].startswith("board: rock5a")]
    return list(dict.fromkeys(added + named))


def _adding_commit() -> str:
    """The commit that added board/rock5a/board.yaml (the oldest, if branches added it twice)."""
    return _git("log", "--no-merges", "--diff-filter=A", "--format=%H", "--",
                "board/rock5a/board.yaml").split()[-1]


def test_the_rock5a_commit_touches_only_board_data():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = _rock5a_commits()
    assert found, "a commit adds ROCK 5A"
    for commit in found:
        files = _git("show", "--name-only", "--format=", commit).split()
        assert files and all(f.startswith(("board/", "configs/")) for f in files), (commit, files)
    files = _git("show", "--name-only", "--format=", _adding_commit()).split()
    assert "board/rock5a/board.yaml" in files and "configs/rock5a_defconfig" in files


def test_the_contributing_pages_state_the_real_mechanism():
    """add-board.md's file count is the ROCK 5A commit's; add-part.md names the real registry
    and interface (no BootArtifact, artifacts(), enabled(values) any more)."""
    board = (ROOT / "docs" / "contributing" / "add-board.md").read_text()
    part = (ROOT / "docs" / "contributing" / "add-part.md").read_text()
    import re
    count = int(re.search(r"one commit, `board: rock5a \.\.\.`, of \*\*(\d+) files\*\*", board)[1])
    if (ROOT / ".git").exists():
        assert len(_git("show", "--name-only", "--format=", _adding_commit()).split()) == count
    assert "REGISTRY" in part and "tools/seedfw/parts/__init__.py" in part
    for gone in ("BootArtifact", "artifacts(ctx)", "enabled(values)", "BACKENDS", "SOURCES"):
        assert gone not in part and gone not in board, gone
    from seedfw.parts.base import Part
    for member in ("provides", "when", "enabled(ctx)", "outputs(ctx)", "places(ctx)"):
        assert f"`{member}" in part and hasattr(Part, member.split("(")[0]), member
