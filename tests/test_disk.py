"""The GPT disk image (genimage) and its .bmap, read back from the bytes, and `invoke inspect` of
the disk image and of u-boot-rockchip.bin, with corrupted copies as negative controls."""

from __future__ import annotations

import json
import shutil

import pytest

import builds
from cli import invoke
from seedfw.images import gpt, idblock

MIB = 1 << 20


def _inspect_json(path):
    proc = invoke("inspect", path, "--json")
    return proc, json.loads(proc.stdout) if proc.stdout.startswith("{") else None


@pytest.mark.slow
def test_gpt_layout(rk3588_build):
    disk = builds.image(rk3588_build, "rk3588-disk.img").read_bytes()
    table = gpt.parse(disk)
    assert table.ok
    assert [(p.name, p.offset, p.size) for p in table.partitions] == [
        ("firmware", 16 * MIB, 16 * MIB), ("boot", 32 * MIB, 64 * MIB),
        ("rootfs.0", 96 * MIB, 64 * MIB), ("rootfs.1", 160 * MIB, 64 * MIB),
        ("data", 224 * MIB, 16 * MIB)]            # CONFIG_UPDATE's A/B layout (test_disk_ab.py)
    sd = builds.image(rk3588_build, "u-boot-rockchip.bin").read_bytes()
    assert disk[64 * 512:64 * 512 + len(sd)] == sd             # sector 64, byte-exact
    fit_at = 32 * 1024 + idblock.SD_FIT_OFFSET                  # = 8 MiB: where SPL looks
    assert fit_at == 8 * MIB and disk[fit_at:fit_at + 4] == b"\xd0\x0d\xfe\xed"
    fit = builds.image(rk3588_build, "rk3588.itb").read_bytes()
    assert disk[16 * MIB:16 * MIB + len(fit)] == fit
    rootfs = disk[96 * MIB:128 * MIB]
    assert rootfs[1024 + 56:1024 + 58] == b"\x53\xef" and rootfs[1024 + 120:1024 + 126] == b"rootfs"
    bmap = builds.image(rk3588_build, "rk3588-disk.img.bmap").read_text()
    assert f"<ImageSize> {len(disk)} </ImageSize>" in bmap and "sha256" in bmap


@pytest.mark.slow
def test_without_buildroot_the_rootfs_is_an_empty_placeholder(rk3588_build, tmp_path):
    """Negative control of tests/test_os_rk3588.py: no OS configured (the default build's
    images, its disk made again by disk.make with only U-Boot on), so no boot file system,
    no bootable flag, and an ext4 "rootfs" with nothing of Buildroot's in it."""
    import struct
    import subprocess
    from seedfw import boards, parts
    from seedfw.parts import disk as disk_mod
    ctx = parts.context(boards.get("rk3588"), rk3588_build.outdir, {"UBOOT": True})
    made = disk_mod.make(ctx, tmp_path / "disk", tmp_path / "disk.log")
    assert set(p.name for p in made) == {"rk3588-disk.img", "rk3588-disk.img.bmap"}
    disk = made[ctx.images / "rk3588-disk.img"].read_bytes()
    assert [struct.unpack_from("<Q", disk, 2 * 512 + 128 * i + 48)[0] for i in range(3)] == [0] * 3
    (tmp_path / "rootfs.ext4").write_bytes(disk[48 * MIB:64 * MIB])
    ls = subprocess.run(["debugfs", "-R", "ls /", tmp_path / "rootfs.ext4"], capture_output=True,
                        text=True, check=True).stdout.split()
    assert "lost+found" in ls and "usr" not in ls and "bin" not in ls



@pytest.mark.slow
def test_inspect_disk_image(rk3588_build):
    proc, doc = _inspect_json(builds.image(rk3588_build, "rk3588-disk.img"))
    assert proc.returncode == 0, proc.stderr
    assert doc["format"] == "gpt disk image" and doc["ok"]
    names = [r["name"] for r in doc["rows"]]
    assert names[:2] == ["GPT header", "GPT entries"]
    assert [r["name"] for r in doc["rows"] if r["type"] == "partition"] == [
        "partition 1 firmware", "partition 2 boot", "partition 3 rootfs.0",
        "partition 4 rootfs.1", "partition 5 data"]
    assert {"boot@32K/idblock header", "boot@32K/DDR init (TPL)", "boot@32K/U-Boot SPL",
            "boot@32K/u-boot.itb/dvfs", "firmware/dvfs"} <= set(names)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["partition 3 rootfs.0"]["detail"].endswith("ext4 'rootfs'")
    assert rows["partition 5 data"]["detail"].endswith("ext4 'data'")
    assert rows["partition 2 boot"]["detail"].endswith("ext4 'boot'")
    # Both ext4 partitions file by file (seedfw.images.ext4_list, bounded).
    assert rows["boot:/Image"]["size"] == builds.image(rk3588_build, "Image").stat().st_size
    assert {"boot:/initramfs.cpio", "boot:/extlinux/extlinux.conf", "boot:/rk3588-rock-5b.dtb",
            "rootfs.0:/etc", "rootfs.0:/usr", "rootfs.0:/lib", "rootfs.0:/sbin"} <= set(rows)
    assert rows["rootfs.0:/etc"]["type"] == "dir" and rows["boot:/Image"]["type"] == "file"
    assert any(n.startswith("partition rootfs.0: ext4, ") for n in doc["notes"])


@pytest.mark.slow
def test_inspect_u_boot_rockchip(rk3588_build):
    proc, doc = _inspect_json(builds.image(rk3588_build, "u-boot-rockchip.bin"))
    assert proc.returncode == 0 and doc["format"] == "rockchip boot image", proc.stderr
    names = [r["name"] for r in doc["rows"]]
    assert names[:3] == ["idblock header", "DDR init (TPL)", "U-Boot SPL"]
    assert "u-boot.itb/atf-1" in names and "u-boot.itb/fdt-1" in names


@pytest.mark.slow
def test_inspect_names_what_is_corrupted(rk3588_build, tmp_path):
    """Negative controls: one flipped byte in SPL, in the firmware FIT, in the GPT entry array."""
    sd = tmp_path / "u-boot-rockchip.bin"
    blob = bytearray(builds.image(rk3588_build, "u-boot-rockchip.bin").read_bytes())
    blob[0x13000 + 64] ^= 0x10
    sd.write_bytes(bytes(blob))
    proc = invoke("inspect", sd)
    assert proc.returncode == 1 and "1 entries failed verification: U-Boot SPL" in proc.stderr

    disk = tmp_path / "disk.img"
    shutil.copy(builds.image(rk3588_build, "rk3588-disk.img"), disk)
    fit = builds.image(rk3588_build, "rk3588.itb").read_bytes()
    data = bytearray(disk.read_bytes())
    data[16 * MIB + len(fit) // 2] ^= 0x01          # inside BL31's data in the firmware FIT
    data[2 * 512 + 48] ^= 0x01                      # GPT entry array (first entry's attributes)
    disk.write_bytes(bytes(data))
    proc, doc = _inspect_json(disk)
    failed = [r["name"] for r in doc["rows"] if not r["hash_ok"]]
    assert proc.returncode == 1 and "GPT entries" in failed
    assert len([n for n in failed if n.startswith("firmware/")]) == 1
