"""rk3588's OS in the SD/eMMC image (seedfw.parts.os_boot_files, seedfw.parts.disk): Debian's
generic kernel + rk3588-rock-5b.dtb with the OPP overlay + Buildroot initramfs + extlinux.conf in
an ext4 "boot" partition, and Buildroot's rootfs as the ext4 "rootfs" partition.

No board here: the image is checked structurally — GPT read back, the boot files read back out of
the image with debugfs and compared with the build's, the DT's compatible and OPP nodes, the arm64
Image magic, U-Boot's .config and default environment. One real build per session (`rk_os`:
the default rk3588 build, shared with every other test through conftest.py's `rk3588_build`).
The ext4 root itself (modules, initramfs, the QEMU boot) is tests/test_os_root.py.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

import builds
from cli import invoke
from seedfw import boards, util
from seedfw.parts import os_boot_files as rk3588_os
from seedfw.errors import SeedfwError
from seedfw.images import fdt, gpt
from seedfw.parts import disk

ROOT = Path(__file__).resolve().parents[1]
FRAGMENT = ROOT / "configs" / "buildroot.fragment"
MIB = 1 << 20
GENERIC = "linux-image-6.12.117+deb13-arm64"


def debugfs(image: Path, command: str) -> bytes:
    proc = subprocess.run(["debugfs", "-R", command, image], capture_output=True, check=True)
    return proc.stdout


def partition_file(disk_img: Path, name: str, dest: Path) -> Path:
    """One partition of the disk image, cut out where the GPT read back says it is."""
    data = disk_img.read_bytes()
    p = gpt.parse(data).partition(name)
    dest.write_bytes(data[p.offset:p.offset + p.size])
    return dest


# ---- fast: configuration and the pure parts ---------------------------------------------------

def test_rk3588_defaults_to_the_generic_kernel_and_an_ext4_rootfs(tmp_path):
    p = invoke("config", "--board", "rk3588", "--output", tmp_path / "rk", "--fragment", FRAGMENT)
    assert p.returncode == 0, p.stderr
    config = (tmp_path / "rk" / ".config").read_text().splitlines()
    assert f'CONFIG_KERNEL_PACKAGE="{GENERIC}"' in config
    assert "CONFIG_BUILDROOT_ROOTFS_EXT4=y" in config
    assert 'CONFIG_BUILDROOT_ROOTFS_EXT4_SIZE="32M"' in config
    # The ext4 is ours (host mke2fs), not Buildroot's (host-e2fsprogs, not offline).
    assert "EXT2" not in (tmp_path / "rk" / "buildroot.fragment").read_text()
    # Negative control: the qemu board keeps the cloud kernel (QEMU provides its DT).
    p = invoke("config", "--board", "qemu-aarch64", "--output", tmp_path / "q", "--fragment",
               FRAGMENT)
    assert p.returncode == 0, p.stderr
    assert 'CONFIG_KERNEL_PACKAGE="linux-image-6.1.0-50-cloud-arm64"' in \
        (tmp_path / "q" / ".config").read_text()


def _ctx(tmp_path, **values):
    base = {"UBOOT": True, "BUILDROOT": True, "BUILDROOT_ROOTFS_CPIO": True, "KERNEL": True,
            "KERNEL_PACKAGE": GENERIC, "BUILDROOT_ROOTFS_EXT4": True,
            "BUILDROOT_ROOTFS_EXT4_SIZE": "32M"}
    from seedfw import parts
    return parts.context(boards.get("rk3588"), tmp_path, {**base, **values})


def test_layout_of_the_os_disk(tmp_path):
    parts = {p.name: p for p in disk.layout(_ctx(tmp_path))}
    assert (parts["boot"].image, parts["boot"].size, parts["boot"].bootable) == \
        ("boot.ext4", 64 * MIB, True)
    assert disk.rootfs_size(_ctx(tmp_path)) == 32 * MIB
    cfg = disk.genimage_config(_ctx(tmp_path))
    assert 'mountpoint = "/boot"' in cfg and 'bootable = "true"' in cfg
    # Negative controls: no Buildroot rootfs → the 16 MiB placeholder; no OS → an empty "boot".
    assert disk.rootfs_size(_ctx(tmp_path, BUILDROOT_ROOTFS_EXT4=False)) == 16 * MIB
    parts = {p.name: p for p in disk.layout(_ctx(tmp_path, BUILDROOT=False))}
    assert (parts["boot"].image, parts["boot"].bootable) == (None, False)


def test_a_bad_rootfs_size_is_one_line(tmp_path):
    with pytest.raises(SeedfwError) as err:
        disk.rootfs_size(_ctx(tmp_path, BUILDROOT_ROOTFS_EXT4_SIZE="32MB"))
    assert err.value.message == "'32MB' is not a size in whole MiB of at least 1M (e.g. 32M)"
    assert err.value.field == "CONFIG_BUILDROOT_ROOTFS_EXT4_SIZE"


def _image_header(image_size: int) -> bytes:
    """A stand-in arm64 Image header (text_offset 0, image_size, magic at 56)."""
    head = bytearray(64)
    struct.pack_into("<QQ", head, 8, 0, image_size)
    head[56:60] = b"ARM\x64"
    return bytes(head)


def test_kernel_placement_against_u_boots_environment():
    env = rk3588_os.uboot_environment_from(
        b"x\0bootcmd=bootflow scan\0kernel_addr_r=0x02000000\0fdt_addr_r=0x12000000\0"
        b"ramdisk_addr_r=0x12180000\0\0")
    assert env == {"kernel_addr_r": 0x2000000, "fdt_addr_r": 0x12000000,
                   "ramdisk_addr_r": 0x12180000}
    doc = rk3588_os.check_memory(env, _image_header(38_797_312), 90_000, 7 * MIB)
    assert doc["kernel"] == {"start": "0x2000000", "end": "0x4500000", "image_size": 38_797_312}
    with pytest.raises(SeedfwError) as err:           # a kernel that runs into the DT
        rk3588_os.check_memory(env, _image_header(0x10100000), 90_000, 7 * MIB)
    assert err.value.message == "the kernel (0x2000000..0x12100000) overlaps fdt_addr_r / " \
                                "ramdisk_addr_r of U-Boot's environment"
    with pytest.raises(SeedfwError) as err:
        rk3588_os.check_memory(env, _image_header(1 * MIB), 2 * MIB, 7 * MIB)
    assert err.value.message == "the DT (2,097,152 bytes) does not fit below ramdisk_addr_r"


# ---- one real rk3588 build with Buildroot per session ------------------------------------------

@pytest.fixture(scope="session")
def rk_os(rk3588_build):
    """The default rk3588 build: configs/rk3588_defconfig turns the OS on (the fragment is what
    the defconfig already says, so the session builds rk3588 once)."""
    return rk3588_build


@pytest.mark.slow
def test_kernel_and_dt_come_from_the_pinned_generic_package(rk_os):
    image = builds.image(rk_os, "Image").read_bytes()
    assert image[56:60] == b"ARM\x64" and len(image) == 37_732_288
    dt = fdt.parse(builds.image(rk_os, "rk3588-rock-5b.dtb").read_bytes())
    assert dt.strings("compatible") == ["radxa,rock-5b", "rockchip,rk3588"]
    manifest = json.loads((rk_os.outdir / "manifest.json").read_text())
    declared = {a["name"]: a.get("declared", {}).get("role") for a in manifest["artifacts"]}
    assert declared["extlinux.conf"] == "extlinux" and declared["Image"] == "kernel"
    assert declared["rk3588-rock-5b-seedfw.dtb"] == "dtb"


@pytest.mark.slow
def test_gpt_and_the_boot_partition_read_back(rk_os, tmp_path):
    img = builds.image(rk_os, "rk3588-disk.img")
    data = img.read_bytes()
    table = gpt.parse(data)
    assert table.ok
    assert [(p.name, p.offset, p.size) for p in table.partitions] == [
        ("firmware", 16 * MIB, 16 * MIB), ("boot", 32 * MIB, 64 * MIB),
        ("rootfs.0", 96 * MIB, 64 * MIB), ("rootfs.1", 160 * MIB, 64 * MIB),
        ("data", 224 * MIB, 16 * MIB)]         # CONFIG_UPDATE's A/B layout (test_disk_ab.py)
    attrs = [struct.unpack_from("<Q", data, 2 * 512 + 128 * i + 48)[0] for i in range(5)]
    assert attrs == [0, 4, 0, 0, 0]  # bit 2 (legacy BIOS bootable) on "boot" only: bootstd's pick
    sd = builds.image(rk_os, "u-boot-rockchip.bin").read_bytes()
    assert data[64 * 512:64 * 512 + len(sd)] == sd                  # the bootloader beside it

    boot = partition_file(img, "boot", tmp_path / "boot.ext4")
    conf = debugfs(boot, "cat /extlinux/extlinux.conf").decode()
    assert conf == builds.image(rk_os, "extlinux.conf").read_text()
    lines = [line.strip() for line in conf.splitlines()]
    root = table.partition("rootfs.0").guid       # slot A: the factory env boots it
    assert {"default seedfw", "label seedfw", "kernel /Image", "fdt /rk3588-rock-5b.dtb",
            "initrd /initramfs.cpio", f"append root=PARTUUID={root} rootwait panic=-1"} <= set(lines)
    kernel = debugfs(boot, "cat /Image")
    assert kernel[56:60] == b"ARM\x64" and kernel == builds.image(rk_os, "Image").read_bytes()
    initrd = debugfs(boot, "cat /initramfs.cpio")
    assert initrd == builds.image(rk_os, "initramfs.cpio").read_bytes()
    info = json.loads(builds.image(rk_os, "initramfs.json").read_text())
    assert info["size"] == len(initrd) and "bin/busybox" in info["userspace"]

    dtb = tmp_path / "dt.dtb"
    dtb.write_bytes(debugfs(boot, "cat /rk3588-rock-5b.dtb"))
    assert "radxa,rock-5b" in fdt.parse(dtb.read_bytes()).strings("compatible")
    # Every OPP of the build's table (opp-table-<domain>, board.yaml) is in the DT with our
    # values: new tables added, and merged into the one Debian's DT already has (the GPU's).
    opp = fdt.parse(builds.image(rk_os, "dvfs/opp.dtb").read_bytes())
    got = fdt.parse(dtb.read_bytes())
    debian = fdt.parse(builds.image(rk_os, "rk3588-rock-5b.dtb").read_bytes())
    assert {"opp-table-cpu-little", "opp-table-cpu-big0", "opp-table-gpu"} <= set(opp.children)
    for table, node in opp.children.items():
        for name, o in node.children.items():
            assert got.children[table].children[name].props == o.props, (table, name)
    # Negative control: Debian's DT as shipped lacks the tables the overlay added.
    assert "opp-table-cpu-little" not in debian.children and "opp-table-gpu" in debian.children


@pytest.mark.slow
def test_rootfs_partition_is_buildroots_rootfs(rk_os, tmp_path):
    img = builds.image(rk_os, "rk3588-disk.img")
    rootfs = partition_file(img, "rootfs.0", tmp_path / "rootfs.ext4")   # slot A (CONFIG_UPDATE)
    image = builds.image(rk_os, "rootfs.ext4").read_bytes()
    assert rootfs.read_bytes()[:len(image)] == image
    stat = debugfs(rootfs, "stat /usr/bin/seedfw-agent").decode()
    assert "Type: regular    Mode:  0755" in stat and "User:     0   Group:     0" in stat
    epoch = util.source_date_epoch()
    assert f"ctime: 0x{epoch:08x}:00000000" in stat and f"mtime: 0x{epoch:08x}:00000000" in stat
    work = tmp_path / "cpio"
    work.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "usr/bin/seedfw-agent"], cwd=work, check=True,
                   stdin=open(builds.image(rk_os, "rootfs.cpio"), "rb"))
    assert debugfs(rootfs, "cat /usr/bin/seedfw-agent") == \
        (work / "usr/bin/seedfw-agent").read_bytes()
    # device nodes and owners as Buildroot made them (staged under fakeroot)
    assert "Type: character special" in debugfs(rootfs, "stat /dev/console").decode()
    fsck = subprocess.run(["e2fsck", "-fn", rootfs], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


@pytest.mark.slow
def test_u_boot_has_what_extlinux_needs(rk_os):
    cache = json.loads((rk_os.outdir / "build" / "u-boot" / "cache.json").read_text())
    config = (Path(cache["build"]) / ".config").read_text().splitlines()
    for line in ("CONFIG_BOOTSTD=y", "CONFIG_BOOTMETH_EXTLINUX=y", "CONFIG_FS_EXT4=y",
                 "CONFIG_CMD_BOOTI=y",
                 # bootstd's command, after U-Boot verified the firmware FIT (fit_verify)
                 'CONFIG_BOOTCOMMAND="run seedfw_verify; if test ${seedfw_fit} = verified; '
                 'then bootflow scan -lb; fi"',
                 'CONFIG_DEFAULT_DEVICE_TREE="rockchip/rk3588-rock-5b"'):
        assert line in config, line
    doc = json.loads(builds.image(rk_os, "rk3588-os.json").read_text())
    env = rk3588_os.uboot_environment(builds.image(rk_os, "u-boot.elf"))
    assert doc["memory"]["kernel_addr_r"] == f"0x{env['kernel_addr_r']:x}"
    assert int(doc["memory"]["kernel"]["end"], 16) <= env["fdt_addr_r"]


@pytest.mark.slow
def test_the_disk_is_the_same_bytes_in_another_output_dir(rk_os, tmp_path):
    """disk.make twice more, in other directories, seconds apart: the staged trees' ctimes
    differ (negative control: mke2fs alone would copy them), the images do not."""
    values = {"UBOOT": True, "BUILDROOT": True, "BUILDROOT_ROOTFS_CPIO": True, "KERNEL": True,
              "KERNEL_PACKAGE": GENERIC, "BUILDROOT_ROOTFS_EXT4": True,
              "BUILDROOT_ROOTFS_EXT4_SIZE": "32M", "OS_ROOT_EXT4": True,
              "UPDATE": True, "UPDATE_SLOT_SIZE": "64M", "UPDATE_DATA_SIZE": "16M"}
    from seedfw import parts
    ctx = parts.context(boards.get("rk3588"), rk_os.outdir, values)
    made, ctimes = [], []
    for i in range(2):
        work = tmp_path / f"again{i}"
        products = disk.make(ctx, work, tmp_path / f"again{i}.log")
        made.append({p.name: util.sha256_file(b) for p, b in products.items()})
        ctimes.append(os.stat(work / "root" / "usr" / "bin" / "seedfw-agent").st_ctime)
        time.sleep(1.1)
    assert ctimes[0] != ctimes[1]
    build = {n: util.sha256_file(builds.image(rk_os, n)) for n in made[0]}
    assert made[0] == made[1] == build
    assert set(build) == {"rk3588-disk.img", "rk3588-disk.img.bmap", "rootfs.ext4"}


@pytest.mark.slow
def test_noop_rebuild_runs_no_os_step(rk_os):
    again = builds.rebuild(rk_os, (FRAGMENT,))
    steps = {r["step"]: r["action"] for r in again.records}
    for name in ("kernel.extract", "buildroot.build", "os-root.modules", "os-root.initramfs", "os-boot-files.extlinux",
                 "disk.image"):
        assert steps[name] == "skipped", (name, steps[name])
