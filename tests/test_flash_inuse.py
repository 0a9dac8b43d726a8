"""Flash refuses a target in use (seedfw.flash.in_use): the disk holding /, a mounted device or
partition, a device LVM/dm-crypt/md is built on, active swap, a file that backs a loop device, and
whatever the kernel refuses to open with O_EXCL. Nothing here touches a real disk: targets are
files in tmp_path and loop devices attached to them (always detached again), and the one test
against the disk that holds / checks that it is refused before it is ever opened.

Where this machine cannot do something (no losetup, no mount, no device-mapper here), the same
code path runs against a crafted /proc and /sys tree (`in_use.Host`), with a block device node
made by mknod in tmp_path (stat only: the checker never opens it)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from cli import invoke, one_error_line
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash import in_use
from seedfw.flash.qemu_drive import QemuDriveRunner
from seedfw.flash.sdcard import SdcardRunner

NEEDS_BMAPTOOL = pytest.mark.skipif(shutil.which("bmaptool") is None, reason="no bmaptool")


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


# ---- real loop devices -----------------------------------------------------------------------

@pytest.fixture
def loop(tmp_path):
    """attach(file, *flags) -> /dev/loopN; every device attached (and every mount made with
    `mount`) is undone at the end, mounts first."""
    attached, mounted = [], []

    def attach(file, *flags):
        proc = _run("losetup", "-f", "--show", *flags, str(file))
        if proc.returncode:
            pytest.skip(f"losetup not allowed here: {proc.stderr.strip()}")
        attached.append(proc.stdout.strip())
        return Path(attached[-1])

    def mount(dev, where):
        where.mkdir(exist_ok=True)
        proc = _run("mount", str(dev), str(where))
        if proc.returncode:
            pytest.skip(f"mount of a loop device not allowed here: {proc.stderr.strip()}")
        mounted.append(where)
        return where

    attach.mount = mount
    try:
        yield attach
    finally:
        for where in reversed(mounted):
            _run("umount", str(where))
        for dev in reversed(attached):
            _run("losetup", "-d", dev)


def _ext4(path: Path, size=8 << 20) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    if shutil.which("mkfs.ext4") is None or _run("mkfs.ext4", "-q", "-F", str(path)).returncode:
        pytest.skip("no mkfs.ext4")
    return path


def _image(tmp_path, size=64 << 10) -> Path:
    """A loose image (no build manifest beside it): the sdcard runner writes it as is."""
    image = tmp_path / "disk.img"
    image.write_bytes(bytes(range(256)) * (size // 256))
    return image


def _flash(image, to):
    return invoke("flash", "--board", "rk3588", "--image", image, "--to", to)


@NEEDS_BMAPTOOL
def test_the_backing_file_of_a_mounted_loop_device_is_refused(tmp_path, loop):
    """The issue's case: `invoke flash --to FILE` where FILE backs a loop-mounted ext4 said
    `ok … verified` and the mounted file system lost its superblock."""
    card = _ext4(tmp_path / "card.img")
    dev = loop(card)
    mnt = loop.mount(dev, tmp_path / "mnt")
    (mnt / "kept").write_text("still here")
    # read-only from here on, so that the file system's own journal commits do not change the
    # backing file while we compare it (it stays mounted: the case under test)
    assert _run("mount", "-o", "remount,ro", str(mnt)).returncode == 0
    before = _sha(card)
    image = _image(tmp_path)
    line = one_error_line(_flash(image, card))
    assert line == (f"error: {card}: in use: backs the loop device {dev}, mounted at {mnt} "
                    f"(unmount it, then detach it: losetup -d {dev})")
    # by inode, not by name: a hard link to the same file is the same file
    link = tmp_path / "other-name.img"
    os.link(card, link)
    assert one_error_line(_flash(image, link)) == line.replace(str(card), str(link))
    # the loop device itself: mounted
    assert one_error_line(_flash(image, dev)) == (f"error: {dev}: in use: mounted at {mnt} "
                                                  "(unmount it first)")
    assert _sha(card) == before and (mnt / "kept").read_text() == "still here"
    assert _run("e2fsck", "-n", str(dev)).returncode == 0        # the superblock is intact


@NEEDS_BMAPTOOL
def test_the_backing_file_of_an_attached_loop_device_is_refused(tmp_path, loop):
    card = tmp_path / "card.img"
    card.write_bytes(bytes(1 << 20))
    dev = loop(card)
    assert one_error_line(_flash(_image(tmp_path), card)) == (
        f"error: {card}: in use: backs the loop device {dev} (detach it first: losetup -d {dev})")
    assert card.read_bytes() == bytes(1 << 20)


@NEEDS_BMAPTOOL
def test_a_free_loop_device_and_a_plain_file_are_written(tmp_path, loop):
    """Negative controls: what nothing uses is written and read back — a plain file, and a loop
    device nothing mounted (through the O_EXCL open, bmaptool's and the verify pass's)."""
    image = _image(tmp_path)
    plain_file = tmp_path / "plain.img"
    plain_file.write_bytes(bytes(1 << 20))
    proc = _flash(image, plain_file)
    assert proc.returncode == 0, proc.stderr
    assert f"via sdcard ({64 << 10} bytes, {64 << 10} verified)" in proc.stdout
    assert plain_file.read_bytes()[:64 << 10] == image.read_bytes()

    backing = tmp_path / "backing.img"
    backing.write_bytes(bytes(1 << 20))
    dev = loop(backing)
    proc = _flash(image, dev)
    assert proc.returncode == 0, proc.stderr
    assert f"via sdcard ({64 << 10} bytes, {64 << 10} verified)" in proc.stdout
    assert backing.read_bytes()[:64 << 10] == image.read_bytes()


@NEEDS_BMAPTOOL
def test_a_device_the_kernel_will_not_open_exclusively_is_refused(tmp_path, loop):
    """Held exclusively by another program (here: this test) — nothing in /proc or /sys says so;
    the kernel's O_EXCL open does."""
    backing = tmp_path / "backing.img"
    backing.write_bytes(bytes(1 << 20))
    dev = loop(backing)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        assert in_use.why_in_use(dev) is None
        assert one_error_line(_flash(_image(tmp_path), dev)) == (
            f"error: {dev}: in use: the kernel refuses an exclusive open (busy: mounted or held "
            "elsewhere, perhaps in another mount namespace, or opened exclusively by another "
            "program)")
    finally:
        os.close(fd)
    assert backing.read_bytes() == bytes(1 << 20)


def test_a_mounted_partition_refuses_its_disk(tmp_path, loop):
    """A disk with a partition table: writing the whole disk while a partition is mounted."""
    disk = tmp_path / "disk.img"
    with open(disk, "wb") as f:
        f.truncate(16 << 20)
        # an MBR with one Linux partition, sectors 2048..18431 (no partitioning tool needed)
        f.seek(0x1BE)
        f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") +
                (16384).to_bytes(4, "little"))
        f.seek(0x1FE)
        f.write(b"\x55\xaa")
    dev = loop(disk, "-P")
    part = Path(f"{dev}p1")
    if not part.exists():
        pytest.skip("no partition nodes for loop devices here")
    if _run("mkfs.ext4", "-q", str(part)).returncode:
        pytest.skip("no mkfs.ext4")
    mnt = loop.mount(part, tmp_path / "mnt")
    runner = SdcardRunner(boards.get("rk3588"), to=dev)
    with pytest.raises(SeedfwError) as err:
        runner.check_target(_image(tmp_path))
    assert err.value.line() == (f"{dev}: in use: its partition {part} is mounted at {mnt} "
                                "(unmount it first)")


def _root_disk() -> Path | None:
    """The physical disk / is on (not a partition, not a dm/md device), if /dev has its node."""
    for n in sorted(in_use.root_devices(in_use.Host())):
        slaves = n / "slaves"
        if in_use._is_partition(n) or (slaves.is_dir() and any(slaves.iterdir())):
            continue
        if Path("/dev", n.name).exists():
            return Path("/dev", n.name)
    return None


@NEEDS_BMAPTOOL
def test_the_disk_that_holds_root_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    """Against the real kernel: the disk / lives on. The check never opens it (an os.open of it
    would fail this test), and no option overrides it (`invoke flash` has no --force)."""
    disk = _root_disk()
    if disk is None or not stat.S_ISBLK(os.stat(disk).st_mode):
        pytest.skip("/ is not on a block device here (overlay or tmpfs root)")
    assert one_error_line(_flash(_image(tmp_path), disk)) == (
        f"error: {disk}: in use: the disk that holds / (the running system; never written)")
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    with pytest.raises(SeedfwError):
        SdcardRunner(boards.get("rk3588"), to=disk).check_target(_image(tmp_path))
    assert str(disk) not in opened
    assert "--force" not in invoke("--help", "flash").stdout


# ---- a crafted /proc and /sys -----------------------------------------------------------------

class Tree:
    """A fake /proc and /sys: block devices by name, with partitions, holders and a dev number;
    mounts and swaps as the kernel writes them."""

    def __init__(self, root: Path):
        self.host = in_use.Host(proc=root / "proc", sys=root / "sys", dev=None)
        (root / "proc" / "self").mkdir(parents=True)
        (root / "sys" / "dev" / "block").mkdir(parents=True)
        (root / "sys" / "block").mkdir(parents=True)
        self.root = root
        self.mountinfo()
        self.swaps()

    def device(self, name, devnum, parent=None, holders=(), dm=None) -> Path:
        base = self.root / "sys" / "devices" / "virtual" / "block"
        node = (base / parent / name) if parent else base / name
        (node / "holders").mkdir(parents=True)
        (node / "dev").write_text(f"{devnum[0]}:{devnum[1]}\n")
        if parent:
            (node / "partition").write_text("1\n")
        else:
            (self.root / "sys" / "block" / name).symlink_to(node)
        for h in holders:
            (node / "holders" / h).symlink_to(base / h)
        if dm:
            (node / "dm").mkdir()
            (node / "dm" / "name").write_text(dm[0] + "\n")
            (node / "dm" / "uuid").write_text(dm[1] + "\n")
        (self.root / "sys" / "dev" / "block" / f"{devnum[0]}:{devnum[1]}").symlink_to(node)
        return node

    def mountinfo(self, *lines):
        """lines: "M:m /point source" (escaped as the kernel escapes them)."""
        rows = []
        for i, line in enumerate(lines):
            devnum, point, source = line.split()
            rows.append(f"{20 + i} 1 {devnum} / {point} rw,relatime - ext4 {source} rw")
        (self.root / "proc" / "self" / "mountinfo").write_text("".join(r + "\n" for r in rows))

    def swaps(self, *names):
        (self.root / "proc" / "swaps").write_text(
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
            "".join(f"{n}\tpartition\t8188\t0\t-2\n" for n in names))


@pytest.fixture
def tree(tmp_path):
    return Tree(tmp_path / "root")


@pytest.fixture
def node(tmp_path):
    """A block device node, 7:200 (a loop device number, never a disk), made with mknod: the
    checker only stats it."""
    path = tmp_path / "loop200"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    except OSError as exc:
        pytest.skip(f"mknod not allowed here: {exc}")
    return path


def _why(target, tree):
    return in_use.why_in_use(target, tree.host)


def test_crafted_mounted_device_and_partition(tree, node):
    tree.device("loop200", (7, 200))
    tree.device("loop200p1", (259, 7), parent="loop200")
    tree.device("loop200p2", (259, 8), parent="loop200")
    assert _why(node, tree) is None
    tree.mountinfo("254:0 / /dev/vda", "259:8 /media/card\\040one /dev/loop200p2")
    assert _why(node, tree) == ("its partition /dev/loop200p2 is mounted at /media/card one "
                                "(unmount it first)")
    tree.mountinfo("7:200 /mnt/x /dev/loop200")
    with pytest.raises(SeedfwError) as err:
        in_use.refuse_in_use(node, tree.host)
    assert err.value.line() == f"{node}: in use: mounted at /mnt/x (unmount it first)"


def test_crafted_btrfs_mount_is_found_by_its_source_device(tree, node):
    """btrfs shows an anonymous device number (0:NN); the source names the device node."""
    tree.device("loop200", (7, 200))
    tree.mountinfo(f"0:44 /data {node}")
    assert _why(node, tree) == "mounted at /data (unmount it first)"


@pytest.mark.parametrize("holder, dm, why", [
    ("dm-3", ("vg0-data", "LVM-abc"), "held by /dev/dm-3, the LVM volume vg0-data (deactivate it "
                                      "first: lvchange -an)"),
    ("dm-4", ("luks-1", "CRYPT-LUKS2-xyz"), "held by /dev/dm-4, the dm-crypt mapping luks-1 "
                                            "(close it first: cryptsetup close luks-1)"),
    ("md0", None, "held by /dev/md0, an md RAID array (stop it first: mdadm --stop /dev/md0)"),
])
def test_crafted_holders(tree, node, holder, dm, why):
    tree.device(holder, (253 if dm else 9, 3), dm=dm)
    tree.device("loop200", (7, 200))
    tree.device("loop200p1", (259, 7), parent="loop200", holders=(holder,))
    assert _why(node, tree) == "its partition /dev/loop200p1 is " + why


def test_crafted_swap_partition_and_swap_file(tree, node, tmp_path):
    tree.device("loop200", (7, 200))
    tree.swaps(str(node))
    assert _why(node, tree) == f"active swap (swapoff {node} first)"
    swapfile = tmp_path / "swap file"
    swapfile.write_bytes(bytes(4096))
    tree.swaps(str(swapfile).replace(" ", "\\040"))
    assert _why(swapfile, tree) == f"an active swap file (swapoff {swapfile} first)"


def test_crafted_root_disk_and_its_partitions(tree, node):
    """/ on a partition of the target, or on an LVM volume over it: the whole disk is refused."""
    tree.device("loop200", (7, 200))
    tree.device("loop200p2", (259, 8), parent="loop200")
    tree.mountinfo("259:8 / /dev/loop200p2")
    why = "the disk that holds / (the running system; never written)"
    assert _why(node, tree) == why
    # / on dm-0 whose slave is the partition
    dm = tree.device("dm-0", (253, 0), dm=("vg-root", "LVM-x"))
    (dm / "slaves").mkdir()
    (dm / "slaves" / "loop200p2").symlink_to(tree.root / "sys/devices/virtual/block/loop200/loop200p2")
    tree.mountinfo("253:0 / /dev/mapper/vg-root")
    assert _why(node, tree) == why


def test_crafted_loop_backing_file_is_matched_by_inode(tree, tmp_path):
    """Without any real loop device: the checker reads backing_file and compares the inode."""
    card = tmp_path / "card.img"
    card.write_bytes(bytes(4096))
    link = tmp_path / "link.img"
    os.link(card, link)
    loop9 = tree.device("loop9", (7, 9))
    (loop9 / "loop").mkdir()
    (loop9 / "loop" / "backing_file").write_text(f"{card}\n")
    want = "backs the loop device /dev/loop9 (detach it first: losetup -d /dev/loop9)"
    assert _why(card, tree) == want and _why(link, tree) == want
    other = tmp_path / "other.img"                 # negative control: another file
    other.write_bytes(bytes(4096))
    assert _why(other, tree) is None
    tree.mountinfo("7:9 /mnt/x /dev/loop9")
    assert _why(link, tree) == ("backs the loop device /dev/loop9, mounted at /mnt/x (unmount it, "
                                "then detach it: losetup -d /dev/loop9)")


def test_crafted_fuse_mount_of_a_file(tree, tmp_path):
    card = tmp_path / "card.img"
    card.write_bytes(bytes(4096))
    tree.mountinfo(f"0:50 /mnt/fuse {card}")
    assert _why(card, tree) == "mounted at /mnt/fuse (unmount it first)"


def test_a_hostile_mount_point_is_shown_plain(tree, node):
    tree.device("loop200", (7, 200))
    tree.mountinfo("7:200 /mnt/\\033[2Jx /dev/loop200")
    assert _why(node, tree) == "mounted at /mnt/\\x1b[2Jx (unmount it first)"


def test_a_mount_point_that_is_not_utf8_is_shown_escaped(tree, node):
    tree.device("loop200", (7, 200))
    (tree.root / "proc" / "self" / "mountinfo").write_bytes(
        b"20 1 7:200 / /mnt/\xff\xfe rw - ext4 /dev/loop200 rw\n")
    with pytest.raises(SeedfwError) as err:
        in_use.refuse_in_use(node, tree.host)
    assert err.value.line() == f"{node}: in use: mounted at /mnt/\\xff\\xfe (unmount it first)"
    err.value.line().encode("utf-8")                 # printable as is (no lone surrogates)


def test_the_sdcard_runner_uses_the_checker(tree, tmp_path):
    card = tmp_path / "card.img"
    card.write_bytes(bytes(4096))
    tree.mountinfo(f"0:50 /media/x {card}")
    image = tmp_path / "disk.img"
    image.write_bytes(bytes(1024))
    with pytest.raises(SeedfwError) as err:
        SdcardRunner(boards.get("rk3588"), to=card, host=tree.host).flash(image)
    assert err.value.line() == f"{card}: in use: mounted at /media/x (unmount it first)"
    assert card.read_bytes() == bytes(4096)


# ---- the qemu runner's drive file -------------------------------------------------------------

def test_the_qemu_runner_refuses_a_drive_file_that_backs_a_loop_device(tmp_path, loop):
    out = tmp_path / "out"
    (out / "images").mkdir(parents=True)
    (out / "images" / "fw.bios").write_bytes(b"\x01" * 4096)
    (out / "manifest.json").write_text(json.dumps({"artifacts": [
        {"name": "fw.bios", "path": "images/fw.bios",
         "declared": {"role": "bios", "qemu": {"load": "bios", "modes": ["firmware"]}}}]}))
    drive = out / "qemu" / "secure-flash.img"
    drive.parent.mkdir()
    drive.write_bytes(b"\xff" * 65536)
    dev = loop(drive)
    runner = QemuDriveRunner(boards.get("qemu-aarch64"), output=out, log=lambda *_: None)
    with pytest.raises(SeedfwError) as err:
        runner.flash(out / "images" / "fw.bios")
    assert err.value.line() == (f"{drive}: in use: backs the loop device {dev} (detach it first: "
                                f"losetup -d {dev})")
    assert drive.read_bytes() == b"\xff" * 65536
