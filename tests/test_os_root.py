"""The rk3588 OS with its root on the ext4 "rootfs" partition (seedfw.os_root, os_modules,
initramfs; docs/os.md).

Fast tests: the module closure, the cpio writer/reader, the ELF reader, the /init script.
Slow tests share the session's default rk3588 build (conftest.py `rk3588_build`: the
defconfig turns the OS on) and prove it in emulation: the image's OWN kernel and initramfs,
read out of its "boot" partition (cut at the GPT's offsets), boot on QEMU virt (-cpu
cortex-a72, TCG, no -icount) with a copy of the image itself as the virtio disk, so Linux
mounts the image's own ext4 "rootfs" partition, found by its PARTUUID in the image's GPT, down
to `agent: ok`. What differs from the board, and nothing else:
  DIFFERENCE_DTB      QEMU virt's own DT (dumpdtb) + the build's OPP overlay (fdtoverlay, as
                      the build does to Debian's rk3588-rock-5b.dtb) + the image's own
                      boot-package overlay (U-Boot applies it: extlinux fdtoverlays) instead
                      of that DT
  DIFFERENCE_LOADER   QEMU's loader puts the "package" image of the disk's own firmware FIT
                      at the boot-package region, where U-Boot's seedfw_verify copies it after
                      checking every hash (tests/test_fit_verify.py proves that script in QEMU)
  DIFFERENCE_STORAGE  virtio_blk (Kconfig OS_MODULES_EMULATION, in the same initramfs) drives
                      the root disk instead of sdhci_of_dwcmshc / dw_mmc_rockchip
Negative controls: one flipped byte in the boot package the agent reads from the reserved
region; an initramfs without virtio_blk.
"""

from __future__ import annotations

import json
import lzma
import re
import shutil
import subprocess
import time
import types
from pathlib import Path

import pytest

import builds
from seedfw import boards
from seedfw.linux import initramfs, modules as os_modules
from seedfw.parts import os_root
from seedfw.errors import SeedfwError
from seedfw.images import gpt, idblock
from seedfw.parts import fit_verify

DIFFERENCE_DTB = ("QEMU virt's own DT (dumpdtb) with the build's images/dvfs/opp.dtbo and the "
                  "image's boot-package overlay applied")
DIFFERENCE_LOADER = "QEMU's loader places the firmware FIT's package image, not U-Boot"
DIFFERENCE_STORAGE = "virtio_blk (OS_MODULES_EMULATION) instead of sdhci_of_dwcmshc/dw_mmc_rockchip"
QEMU = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-m", "1024", "-smp", "2",
        "-nic", "none"]          # no NIC: its option ROM is a data file the host may not have
RELEASE = "6.12.117+deb13-arm64"
ROOT_MODULES = ["sdhci", "sdhci_pltfm", "cqhci", "sdhci_of_dwcmshc", "dw_mmc", "dw_mmc_pltfm",
                "dw_mmc_rockchip", "gpio_rockchip", "spi_rockchip", "rk808_regulator",
                "crc32c_generic", "crc16", "mbcache", "jbd2", "ext4", "virtio_blk"]


# ---- fast ---------------------------------------------------------------------------------------

DEP = """kernel/fs/ext4/ext4.ko.xz: kernel/lib/crc16.ko.xz kernel/fs/mbcache.ko.xz kernel/fs/jbd2/jbd2.ko.xz
kernel/lib/crc16.ko.xz:
kernel/fs/mbcache.ko.xz:
kernel/fs/jbd2/jbd2.ko.xz:
kernel/crypto/crc32c_generic.ko.xz:
kernel/drivers/block/virtio_blk.ko.xz:
kernel/drivers/net/unused.ko.xz:
"""


def test_closure_follows_modules_dep_and_softdeps():
    dep = os_modules.parse_dep(DEP)
    aliases = os_modules.parse_aliases("alias crypto-crc32c crc32c_generic\nalias pci:v*d* x\n")
    soft = {"kernel/fs/ext4/ext4.ko.xz": (["crypto-crc32c", "no-such-thing"], [])}
    mods = os_modules.closure([("ext4", "OS_MODULES"), ("virtio-blk", "OS_MODULES_EMULATION"),
                               ("mmc_block", "OS_MODULES")], dep, {"mmc_block"}, aliases,
                              lambda p: soft.get(p, ([], [])))
    assert mods.order == ["crc32c_generic", "crc16", "mbcache", "jbd2", "ext4", "virtio_blk"]
    assert mods.why["crc32c_generic"] == "softdep (pre) of ext4"
    assert mods.why["jbd2"] == "needed by ext4" and mods.why["virtio_blk"] == "OS_MODULES_EMULATION"
    assert mods.builtin == ["mmc_block"] and "unused" not in mods.files
    assert os_modules.parse_softdep("pre: crypto-crc32c\npost: a b\n") == (["crypto-crc32c"],
                                                                            ["a", "b"])


def test_an_unknown_module_is_one_line_naming_the_option():
    with pytest.raises(SeedfwError) as err:
        os_modules.closure([("ext5", "OS_MODULES")], os_modules.parse_dep(DEP), set(), {},
                           lambda p: ([], []), (Path("out/.config"), "CONFIG_OS_MODULES"))
    assert str(err.value) == ("out/.config: CONFIG_OS_MODULES: the kernel has no module 'ext5' "
                              "(not in its modules.dep nor modules.builtin)")


def test_cpio_round_trip_and_a_truncated_archive():
    entries = [initramfs.Entry("bin", 0o040755), initramfs.Entry("dev/console", 0o020600,
                                                                rdev=(5, 1)),
               initramfs.Entry("bin/sh", 0o120777, b"busybox"),
               initramfs.Entry("init", 0o100755, b"#!/bin/sh\n")]
    blob = initramfs.write_cpio(entries)
    back = initramfs.read_cpio(blob)
    assert [(e.path, e.mode, e.data, e.rdev) for e in back.values()] == \
        [(e.path, e.mode, e.data, e.rdev) for e in entries]
    # The host's cpio reads ours: names, and the device node's numbers.
    listing = subprocess.run(["cpio", "-tv", "--quiet"], input=blob, capture_output=True)
    assert listing.returncode == 0
    assert re.search(rb"crw------- .* 5, +1 .* dev/console", listing.stdout)
    with pytest.raises(SeedfwError) as err:
        initramfs.read_cpio(blob[:200], "x.cpio")
    assert "x.cpio" in str(err.value)


def test_elf_reader_agrees_with_readelf():
    host = Path(shutil.which("cpio")).resolve()
    interp, needed = initramfs.elf_deps(host.read_bytes())
    out = subprocess.run(["readelf", "-lW", "-d", host], capture_output=True, text=True).stdout
    assert interp == re.search(r"interpreter: (\S+)\]", out).group(1)
    assert needed == re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", out)


def test_init_script_is_valid_shell_and_names_its_modules():
    text = initramfs.init_script(["jbd2", "ext4", "virtio_blk"], 7)
    assert 'MODULES="jbd2 ext4 virtio_blk"' in text and "WAIT=7" in text
    assert subprocess.run(["sh", "-n"], input=text.encode()).returncode == 0


def test_the_kernel_command_line_names_the_rootfs_partition_only(tmp_path):
    ctx = types.SimpleNamespace(board=boards.get("rk3588"), values={})
    args = os_root.kernel_args(ctx)
    assert args == f"root=PARTUUID={os_root.partuuid(ctx)} rootwait panic=-1"
    assert "console=" not in args       # from the DT's stdout-path, board and QEMU alike


# ---- slow: the default rk3588 build -------------------------------------------------------------

def _partition(disk: Path, name: str, dest: Path) -> Path:
    data = disk.read_bytes()
    p = gpt.parse(data).partition(name)
    dest.write_bytes(data[p.offset:p.offset + p.size])
    return dest


def _debugfs(image: Path, command: str) -> bytes:
    return subprocess.run(["debugfs", "-R", command, image], capture_output=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def os_parts(rk3588_build, tmp_path_factory):
    """The kernel, initramfs, extlinux.conf and rootfs partition, out of the built disk image."""
    return extract_os_parts(rk3588_build, tmp_path_factory.mktemp("os-parts"))


def root_name(table) -> str:
    """The root's partition: slot A of CONFIG_UPDATE's A/B layout (rk3588's default), else the
    single "rootfs"."""
    names = [p.name for p in table.partitions]
    return "rootfs.0" if "rootfs.0" in names else "rootfs"


def extract_os_parts(build, d: Path) -> dict:
    """What QEMU virt needs to boot an RK3588-family build's own OS, cut out of its disk image
    (also tests/test_os_rock5a.py)."""
    disk = builds.image(build, f"{build.board}-disk.img")
    boot = _partition(disk, "boot", d / "boot.ext4")
    root = root_name(gpt.parse(disk.read_bytes()))
    parts = {"rootfs": _partition(disk, root, d / "rootfs.ext4"), "dir": d, "disk": disk,
             "rootfs_offset": gpt.parse(disk.read_bytes()).partition(root).offset}
    for name in ("Image", "initramfs.cpio", "extlinux/extlinux.conf", fit_verify.OVERLAY):
        parts[name] = d / Path(name).name
        parts[name].write_bytes(_debugfs(boot, f"cat /{name}"))
    # DIFFERENCE_LOADER: the package image of the disk's own firmware FIT (what U-Boot copies).
    fit = _partition(disk, "firmware", d / "firmware.itb").read_bytes()
    parts["package"] = d / "package.bin"
    parts["package"].write_bytes(bytes(idblock.fit_images(fit)[1]["package"]))
    append = next(line.split(None, 1)[1] for line in
                  parts["extlinux/extlinux.conf"].read_text().splitlines()
                  if line.strip().startswith("append"))
    parts["append"] = append
    # DIFFERENCE_DTB: QEMU's own DT for exactly this machine, plus the build's OPP overlay.
    subprocess.run(QEMU + ["-machine", f"dumpdtb={d / 'virt.dtb'}", "-display", "none"],
                   check=True, capture_output=True)
    subprocess.run(["fdtoverlay", "-i", d / "virt.dtb", "-o", d / "virt-opp.dtb",
                    builds.image(build, "dvfs/opp.dtbo"), parts[fit_verify.OVERLAY]],
                   check=True)
    parts["dtb"] = d / "virt-opp.dtb"
    parts["region"] = boards.get(build.board).region("boot-package").base
    return parts


def boot(parts, disk: Path, initrd: Path, log: Path, timeout: float = 400.0,
         package: Path | None = None) -> tuple[str, float]:
    """Boot a copy of `disk` (the built image, or a tampered copy): the virtio disk holds the
    whole image, because root=PARTUUID= names a GPT entry — the rootfs partition cut out alone
    has no partition table, so no PARTUUID. The rootfs Linux mounts is the image's partition 3."""
    drive = log.with_suffix(".img")
    shutil.copyfile(disk, drive)
    cmd = QEMU + ["-kernel", parts["Image"], "-initrd", initrd, "-dtb", parts["dtb"],
                  "-append", parts["append"], "-display", "none", "-monitor", "none",
                  "-serial", f"file:{log}", "-no-reboot",
                  "-drive", f"file={drive},format=raw,if=none,id=root",
                  "-device", "virtio-blk-pci,drive=root",
                  "-device", f"loader,file={package or parts['package']},"
                  f"addr=0x{parts['region']:x},force-raw=on"]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        # A host deadline, generous on purpose (a boot takes 20-60 s of TCG): when it expires the
        # verdict says so, with what the guest printed, rather than a bare TimeoutExpired.
        pytest.fail(f"host deadline: QEMU did not exit within {timeout:g} s; the guest's last lines:\n"
                    + milestones(log.read_text(errors="replace")))
    seconds = time.monotonic() - start
    text = log.read_text(errors="replace")
    print(f"QEMU boot (emulated, TCG, not board time): {seconds:.1f} s, exit {proc.returncode}")
    print(milestones(text))
    return text, seconds


def milestones(text: str) -> str:
    """The init:/agent: lines and the kernel's panic line: what an assertion message shows."""
    return "\n".join(line for line in text.splitlines()
                     if re.search(r"(^|\] )(init|agent):|Kernel panic", line))


def package_entries(result):
    from seedfw.images import package
    return package.decode(builds.image(result, "rk3588-boot.pkg").read_bytes()).entries


@pytest.mark.slow
def test_modules_in_rootfs_and_initramfs_are_the_modules_dep_closure(rk3588_build, os_parts):
    info = json.loads(builds.image(rk3588_build, "os-modules.json").read_text())
    assert info["release"] == RELEASE and info["order"] == ROOT_MODULES
    # OS_MODULES_AGENT: the DDR monitor's driver is in the rootfs (the agent loads it), not in
    # the initramfs below (the root mount does not need it)
    assert info["agent"] == ["rockchip_dfi"]
    rootfs = os_parts["rootfs"]
    dep_text = _debugfs(rootfs, f"cat /lib/modules/{RELEASE}/modules.dep").decode()
    dep = os_modules.parse_dep(dep_text)
    assert sorted(os_modules.module_name(p) for p in dep) == sorted(ROOT_MODULES + ["rockchip_dfi"])
    # depmod's index in the rootfs closes over itself: every dependency is in it
    assert all(d in dep for deps in dep.values() for d in deps)
    assert dep["kernel/fs/ext4/ext4.ko"] == ["kernel/lib/crc16.ko", "kernel/fs/mbcache.ko",
                                             "kernel/fs/jbd2/jbd2.ko"]
    cpio = initramfs.read_cpio(os_parts["initramfs.cpio"].read_bytes())
    kos = sorted(p.removeprefix("lib/modules/").removesuffix(".ko") for p in cpio
                 if p.startswith("lib/modules/") and p.endswith(".ko"))
    assert kos == sorted(ROOT_MODULES)
    # The package's own ext4.ko.xz, decompressed, is the rootfs's and the initramfs's ext4.ko.
    from seedfw.parts import kernel
    deb = kernel.fetch(kernel.KERNELS[f"linux-image-{RELEASE}"], progress=lambda m: None)
    xz = subprocess.run(["sh", "-c", 'dpkg-deb --fsys-tarfile "$1" | tar -xO "$2"', "sh", deb,
                         f"./usr/lib/modules/{RELEASE}/kernel/fs/ext4/ext4.ko.xz"],
                        capture_output=True, check=True).stdout
    ext4 = _debugfs(rootfs, f"cat /lib/modules/{RELEASE}/kernel/fs/ext4/ext4.ko")
    assert ext4 == lzma.decompress(xz) == cpio["lib/modules/ext4.ko"].data
    assert cpio["init"].data.decode().count(f'MODULES="{" ".join(ROOT_MODULES)}"') == 1
    # Negative control: the kernel's full module set stays out (4,350 modules in the package).
    lsdir = _debugfs(rootfs, f"ls -p /lib/modules/{RELEASE}/kernel/drivers/mmc/host").decode()
    assert "sdhci-msm.ko" not in lsdir and "/sdhci-of-dwcmshc.ko/" in lsdir
    default = _debugfs(rootfs, "cat /etc/default/seedfw-agent").decode()
    assert (f'SEEDFW_AGENT_ARGS="--perf rockchip_ddr/read-bytes,write-bytes,cycles/'
            f'CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI '
            f'--perf armv8_cortex_a76/cpu_cycles,inst_retired/CONFIG_ARM_PMUV3 '
            f'--perf armv8_pmuv3/cpu_cycles,inst_retired/CONFIG_ARM_PMUV3 '
            f'--mem 0x7e000000:0x800000 --dt-opp /proc/device-tree"') in default
    assert 'SEEDFW_AGENT_MODULES="rockchip_dfi"' in default
    # The package reaches the agent through U-Boot only: no unverified copy in the rootfs.
    assert b"File not found" in subprocess.run(
        ["debugfs", "-R", f"stat {os_root.PACKAGE_PATH}", rootfs], capture_output=True).stderr
    assert os_parts["package"].read_bytes() == \
        builds.image(rk3588_build, "rk3588-boot.pkg").read_bytes()
    conf = os_parts["extlinux/extlinux.conf"].read_text()
    table = gpt.parse(builds.image(rk3588_build, "rk3588-disk.img").read_bytes())
    assert "\tinitrd /initramfs.cpio\n" in conf
    assert f"\tfdtoverlays /{fit_verify.OVERLAY}\n" in conf
    assert f"\tappend root=PARTUUID={table.partition(root_name(table)).guid} rootwait panic=-1\n" in conf


@pytest.mark.slow
def test_qemu_boots_the_images_own_os_from_its_ext4_root(rk3588_build, os_parts):
    from seedfw.images import fdt
    text, seconds = boot(os_parts, os_parts["disk"], os_parts["initramfs.cpio"],
                         os_parts["dir"] / "boot.log")
    uuid = os_parts["append"].split("root=PARTUUID=")[1].split()[0]
    opp = fdt.parse(builds.image(rk3588_build, "dvfs/opp.dtb").read_bytes())
    tables = {name.removeprefix("opp-table-"): len(node.children)
              for name, node in opp.children.items() if name.startswith("opp-table-")}
    assert len(tables) == 6
    for line in ("init: loaded 16 modules",
                 f"init: root PARTUUID={uuid} is /dev/vda3; mounting it (ext4, ro)",
                 "init: switch_root to /dev/vda3 (/sbin/init)",
                 f"agent: pkg: {len(package_entries(rk3588_build))} entries, "
                 f"{builds.image(rk3588_build, 'rk3588-boot.pkg').stat().st_size} bytes, "
                 "header crc ok",
                 *(f"agent: dt opp: {d} {n} opps match dvfs table" for d, n in tables.items()),
                 "agent: ok"):
        assert line in text, (line, DIFFERENCE_DTB, DIFFERENCE_STORAGE, DIFFERENCE_LOADER)
    assert re.search(r"EXT4-fs \(vda3\): mounted filesystem [0-9a-f-]+ ro", text)
    assert "agent: FAILED" not in text


@pytest.mark.slow
def test_one_flipped_byte_in_the_reserved_boot_package_fails_the_agent(rk3588_build, os_parts):
    """The agent checks what lies in the region itself: a byte flipped in the middle of the
    package's largest entry (as if what U-Boot copied had been changed afterwards)."""
    from seedfw.images import package
    pkg = package.decode(os_parts["package"].read_bytes())
    victim = max(pkg.entries, key=lambda e: e.size)       # the largest entry (today a model)
    data = bytearray(os_parts["package"].read_bytes())
    data[victim.offset + victim.size // 2] ^= 0x01
    bad = os_parts["dir"] / "package-bad.bin"
    bad.write_bytes(bytes(data))
    text, _ = boot(os_parts, os_parts["disk"], os_parts["initramfs.cpio"],
                   os_parts["dir"] / "bad.log", package=bad)
    assert "init: switch_root to /dev/vda3 (/sbin/init)" in text
    assert f"agent: {victim.kind} {victim.name} sha256 BAD" in text
    assert "agent: FAILED, 1 errors" in text and "agent: ok" not in text


@pytest.mark.slow
def test_an_initramfs_without_the_storage_module_says_so(os_parts):
    blob = initramfs.without(os_parts["initramfs.cpio"].read_bytes(), {"lib/modules/virtio_blk.ko"})
    initrd = os_parts["dir"] / "no-virtio.cpio"
    initrd.write_bytes(blob)
    text, _ = boot(os_parts, os_parts["disk"], initrd, os_parts["dir"] / "novirtio.log")
    uuid = os_parts["append"].split("root=PARTUUID=")[1].split()[0]
    seen = milestones(text)
    assert "init: module virtio_blk is not in this initramfs" in text, seen
    # Through /dev/kmsg (the kernel's "[ t] " prefix): the panic that follows cannot lose it.
    assert re.search(rf"\] init: root device PARTUUID={uuid} did not appear in 15 s \(modules "
                     r"missing from the initramfs: virtio_blk\)", text), seen
    assert re.search(r"\] init: not booting; exiting \(the kernel panics\)", text), seen
    assert "Kernel panic" in text and "agent:" not in text, seen


def test_the_rk3588_defconfig_turns_the_os_and_the_ext4_root_on(tmp_path):
    from cli import invoke
    p = invoke("config", "--board", "rk3588", "--output", tmp_path / "rk")
    assert p.returncode == 0, p.stderr
    config = (tmp_path / "rk" / ".config").read_text().splitlines()
    for line in ("CONFIG_BUILDROOT=y", "CONFIG_KERNEL=y", "CONFIG_OS_ROOT_EXT4=y",
                 'CONFIG_OS_MODULES="sdhci_of_dwcmshc dw_mmc_rockchip gpio_rockchip spi_rockchip '
                 'rk808_regulator ext4"', 'CONFIG_OS_MODULES_EMULATION="virtio_blk"',
                 "# CONFIG_OS_MODULES_ALL is not set", "CONFIG_OS_ROOT_WAIT=15"):
        assert line in config, line
    # Negative control: the qemu board keeps its OS FIT + initramfs, and no OS by default.
    p = invoke("config", "--board", "qemu-aarch64", "--output", tmp_path / "q", "--fragment",
               builds.BUILDROOT_FRAGMENT)
    assert p.returncode == 0, p.stderr
    q = (tmp_path / "q" / ".config").read_text()
    assert "CONFIG_BUILDROOT=y" in q and "CONFIG_OS_ROOT_EXT4=y" not in q


def test_the_agent_reads_the_boot_package_u_boot_verified_on_rk3588():
    from seedfw.buildroot import external
    rk = types.SimpleNamespace(board=boards.get("rk3588"))
    # (after the board's perf PMU windows, board.yaml `perf`): the region U-Boot copies it to
    r = boards.get("rk3588").region("boot-package")
    assert external.agent_args(rk).endswith(
        f"--mem 0x{r.base:x}:0x{r.size:x} --dt-opp /proc/device-tree")
    # qemu-aarch64 too (its payload or its OS FIT's boot script reserves the region)
    q = types.SimpleNamespace(board=boards.get("qemu-aarch64"))
    assert "--mem 0x" in external.agent_args(q) and "--file" not in external.agent_args(q)
    # Negative control: a board without the region reads the copy its rootfs carries.
    bare = types.SimpleNamespace(board=types.SimpleNamespace(memory=(), raw={}))
    assert external.agent_args(bare) == f"--file {os_root.PACKAGE_PATH} --dt-opp /proc/device-tree"


def test_ext4_listing_is_bounded(tmp_path):
    from seedfw.images import ext4_list
    tree = tmp_path / "t"
    (tree / "a" / "b" / "c" / "d").mkdir(parents=True)
    (tree / "many").mkdir()
    for i in range(30):
        (tree / "many" / f"f{i:02}").write_text("x" * i)
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", tree, tmp_path / "fs", "4M"], check=True)
    got = ext4_list.listing((tmp_path / "fs").read_bytes())
    paths = [f.path for f in got.files]
    assert paths[:3] == ["/a", "/lost+found", "/many"] and "/a/b/c" in paths
    assert "/a/b/c/d" not in paths                        # MAX_DEPTH levels
    assert [p for p in paths if p.startswith("/many/")] == [f"/many/f{i:02}" for i in range(16)]
    assert next(f for f in got.files if f.path == "/many/f07").size == 7
    # every entry is counted, listed or not: 14 of /many and /a/b/c/d
    assert (got.total, got.more, got.dirs) == (36, 15, 6)
    # Hostile input: not an ext4 at all is one error line, not an empty listing or a hang.
    with pytest.raises(SeedfwError, match=r"^x: superblock: no ext2/3/4 superblock "
                                          r"\(magic 0xffff\)$"):
        ext4_list.listing(b"\xff" * (1 << 20), source="x")
