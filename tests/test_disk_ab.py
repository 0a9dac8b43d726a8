"""CONFIG_UPDATE's A/B disk (issue 29), read back from the session's rk3588 build: both slots hold
the build's rootfs byte for byte, "data" is an empty ext4, the two raw env copies at board.yaml's
offsets carry a valid CRC and the slots' PARTUUIDs as the GPT has them, the kernel's root is slot
A; negative control: the same build's disk made again with UPDATE off has none of it."""

from __future__ import annotations

import json
import subprocess

import pytest

import builds
from cli import invoke
from seedfw import boards, parts
from seedfw.config import load_values
from seedfw.images import gpt
from seedfw.update import env

MIB = 1 << 20


def _debugfs(image, request: str) -> str:
    return subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.slow
def test_ab_slots_data_and_env_read_back(rk3588_build, tmp_path):
    disk = builds.image(rk3588_build, "rk3588-disk.img").read_bytes()
    table = gpt.parse(disk)
    by_name = {p.name: p for p in table.partitions}
    rootfs = builds.image(rk3588_build, "rootfs.ext4").read_bytes()
    for slot in ("rootfs.0", "rootfs.1"):
        p = by_name[slot]
        assert p.size == 64 * MIB
        assert disk[p.offset:p.offset + len(rootfs)] == rootfs, slot
    assert "data" in _debugfs(builds.image(rk3588_build, "rootfs.ext4"), "ls /").split()
    data = by_name["data"]
    (tmp_path / "data.ext4").write_bytes(disk[data.offset:data.offset + data.size])
    listing = _debugfs(tmp_path / "data.ext4", "ls /").split()
    assert [w for w in listing if not w.startswith("(") and not w.isdigit()] == \
        [".", "..", "lost+found"]
    assert "Filesystem volume name:   data" in _debugfs(tmp_path / "data.ext4", "stats")

    place = boards.get("rk3588").update["env"]
    first = env.decode(disk[place["offset"]:place["offset"] + place["size"]], redundant=True)
    second = env.decode(disk[place["redundant_offset"]:place["redundant_offset"] + place["size"]],
                        redundant=True)
    assert (first.flag, second.flag) == (1, 0) and first.vars == second.vars
    assert first.vars["BOOT_ORDER"] == "A B"
    assert first.vars["BOOT_A_LEFT"] == first.vars["BOOT_B_LEFT"] == "3"
    assert first.vars["seedfw_root_A"] == by_name["rootfs.0"].guid.lower()
    assert first.vars["seedfw_root_B"] == by_name["rootfs.1"].guid.lower()

    boot = by_name["boot"]
    (tmp_path / "boot.ext4").write_bytes(disk[boot.offset:boot.offset + boot.size])
    conf = _debugfs(tmp_path / "boot.ext4", "cat /extlinux/extlinux.conf")
    assert f"root=PARTUUID={by_name['rootfs.0'].guid.lower()} " in conf

    doc = json.loads(invoke("inspect", builds.image(rk3588_build, "rk3588-disk.img"),
                            "--json").stdout)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["env0"]["hash_ok"] and rows["env1"]["hash_ok"]
    assert rows["env0"]["detail"].startswith("at 0xe00000, ")
    assert any(n.startswith("update slots: rootfs.0 64 MiB PARTUUID ") and "rootfs.1 64 MiB" in n
               and "data 16 MiB" in n for n in doc["notes"])


@pytest.mark.slow
def test_without_update_the_disk_has_one_rootfs_and_no_env(rk3588_build, tmp_path):
    from seedfw.parts import disk as disk_mod
    values = dict(load_values(rk3588_build.outdir), UPDATE=False)
    ctx = parts.context(boards.get("rk3588"), rk3588_build.outdir, values)
    made = disk_mod.make(ctx, tmp_path / "disk", tmp_path / "disk.log")
    img = made[ctx.images / "rk3588-disk.img"].read_bytes()
    assert [p.name for p in gpt.parse(img).partitions] == ["firmware", "boot", "rootfs"]
    place = boards.get("rk3588").update["env"]
    assert img[place["offset"]:place["redundant_offset"] + place["size"]] == \
        bytes(2 * place["size"])
