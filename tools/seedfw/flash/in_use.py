"""Is a flash target in use? Refuse to overwrite what the host is using (bmaptool, Etcher and
Raspberry Pi Imager refuse the same things).

A target is a block device (a card reader's /dev/sdX, /dev/mmcblk0, a loop device) or a regular
file standing for one. Refused, each with one line naming the target and why:

- the disk that holds `/` (or any partition of it, or any device under it: dm, md, a partition);
- a block device that is mounted, or one of whose partitions is (/proc/self/mountinfo, by device
  number and by the source's device node — btrfs shows an anonymous device number);
- a block device that another device is built on (`/sys/class/block/X/holders`: LVM and
  dm-crypt through device-mapper, md RAID), it or one of its partitions;
- active swap (/proc/swaps): the device, a partition of it, or the regular file itself;
- a regular file that backs a loop device (`/sys/block/loop*/loop/backing_file`), compared by
  (st_dev, st_ino), not by name: a hard link or another path to the same file is the same file;
  with the real /dev also each loop device's own record of its backing inode (LOOP_GET_STATUS64),
  which holds when the name is not reachable from here;
- a regular file mounted directly (FUSE's fuse2fs names the file as the source);
- and, last, whatever the kernel itself refuses: a block device is opened with O_EXCL, which fails
  with EBUSY while anything holds it (a mount in another mount namespace, a program that opened it
  exclusively). bmaptool opens the device with O_EXCL too while it writes, and the verify pass
  reads it back through an O_EXCL descriptor.

Why the sysfs and procfs checks before the kernel's O_EXCL: EBUSY says "busy", not what holds it;
these say which mount point, which holder, which loop device, so the line tells the user what to
undo. There is no override (no --force): a mounted or root target is never what a user meant.

The roots (/proc, /sys, /dev) are parameters (`Host`) so tests point the checker at a crafted
tree; what is read from them is small text (kernel-written), read with a size cap.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError
from ..reading import plain

SMALL = 1 << 20                      # a sysfs attribute or /proc/swaps; mountinfo may be larger
MOUNTINFO_CAP = 16 << 20
LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64 = struct.Struct("=QQQQQIIII64s64s32sQQ")   # struct loop_info64 (linux/loop.h)


@dataclass(frozen=True)
class Host:
    """Where the kernel's views are: the real ones, or a crafted tree in a test. `dev` is used
    only to ask loop devices for their backing inode (None: do not)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path | None = Path("/dev")


def _read(path: Path, cap: int = SMALL) -> str:
    """A kernel-written text file, '' when it is not there (a sysfs attribute may vanish while we
    look: a loop device detached)."""
    try:
        with open(path, "rb") as f:  # door: /proc and /sys, the kernel's own files, capped
            return f.read(cap).decode("utf-8", "surrogateescape")
    except OSError:
        return ""


def _unescape(field: str) -> str:
    r"""mountinfo and /proc/swaps write space, tab, newline and backslash as \ooo."""
    out, i = [], 0
    while i < len(field):
        code = field[i + 1:i + 4]
        if field[i] == "\\" and len(code) == 3 and all(c in "01234567" for c in code):
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Mount:
    devnum: tuple[int, int]
    point: str
    source: str


def mounts(host: Host) -> list[Mount]:
    """Every mount of this process's namespace (/proc/self/mountinfo)."""
    found = []
    for line in _read(host.proc / "self" / "mountinfo", MOUNTINFO_CAP).splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2 or fields[2].count(":") != 1:
            continue
        major, minor = fields[2].split(":")
        if not (major.isdigit() and minor.isdigit()):
            continue
        found.append(Mount((int(major), int(minor)), _unescape(fields[4]), _unescape(tail[1])))
    return found


def _stat(path: str | Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _devnum(node: Path) -> tuple[int, int] | None:
    """(major, minor) of a sysfs block node (its `dev` attribute, "8:16")."""
    major, _, minor = _read(node / "dev").strip().partition(":")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _node(host: Host, devnum: tuple[int, int]) -> Path | None:
    """The sysfs directory of a block device by number (/sys/dev/block/M:m, a symlink)."""
    link = host.sys / "dev" / "block" / f"{devnum[0]}:{devnum[1]}"
    return Path(os.path.realpath(link)) if link.exists() else None


def _is_partition(node: Path) -> bool:
    return (node / "partition").exists()


def _disk(node: Path) -> Path:
    return node.parent if _is_partition(node) else node


def _partitions(node: Path) -> list[Path]:
    try:
        return sorted(d for d in node.iterdir() if d.is_dir() and _is_partition(d))
    except OSError:
        return []


def _members(node: Path) -> list[Path]:
    """What writing this device overwrites: itself and, for a whole disk, its partitions."""
    return [node] + ([] if _is_partition(node) else _partitions(node))


def _dev_name(node: Path) -> str:
    """The /dev name of a sysfs block node (sysfs writes a '/' of the name as '!': cciss!c0d0)."""
    return _show(f"/dev/{node.name.replace('!', '/')}")


def _show(name: str) -> str:
    """A name from the kernel's files, safe to print: undecodable bytes as \\xNN (they were
    read with surrogateescape, which a terminal cannot encode), control characters escaped."""
    return plain(name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def root_devices(host: Host) -> set[Path]:
    """The sysfs nodes `/` lives on: the device of the root mount, the disk it is a partition of,
    and everything below a dm/md device (its `slaves`), down to the disks."""
    roots = [m for m in mounts(host) if m.point == "/"]
    if not roots:
        return set()
    root = roots[-1]                   # the last "/" listed is the one on top
    start = _node(host, root.devnum)
    if start is None and root.source.startswith("/"):
        st = _stat(root.source)         # btrfs: an anonymous number; the source names the device
        if st is not None and stat.S_ISBLK(st.st_mode):
            start = _node(host, (os.major(st.st_rdev), os.minor(st.st_rdev)))
    found: set[Path] = set()
    todo = [start] if start is not None else []
    while todo and len(found) < 256:
        node = todo.pop()
        if node in found:
            continue
        found.add(node)
        todo.append(_disk(node))
        with contextlib.suppress(OSError):
            todo += [Path(os.path.realpath(s)) for s in (node / "slaves").iterdir()]
    return found


def _holder_kind(host: Host, holder: str) -> tuple[str, str]:
    """What a holder is, and how to let go of it."""
    dm = host.sys / "block" / holder / "dm"
    if dm.is_dir():
        uuid, name = _read(dm / "uuid").strip(), _show(_read(dm / "name").strip())
        if uuid.startswith("LVM-"):
            return f"the LVM volume {name}", "deactivate it first: lvchange -an"
        if uuid.startswith("CRYPT-"):
            return f"the dm-crypt mapping {name}", f"close it first: cryptsetup close {name}"
        return f"the device-mapper device {name}", f"remove it first: dmsetup remove {name}"
    if holder.startswith("md"):
        return "an md RAID array", f"stop it first: mdadm --stop /dev/{holder}"
    return "another block device", "release it first"


def _swaps(host: Host) -> list[str]:
    lines = _read(host.proc / "swaps").splitlines()[1:]        # the first line is the header
    return [_unescape(line.split()[0]) for line in lines if line.split()]


def _block_state(host: Host, node: Path, mounted: list[Mount]) -> tuple[str, str] | None:
    """(what holds the block device at sysfs `node`, what to do about it), or None when free."""
    roots = root_devices(host)
    if node in roots or _disk(node) in roots:
        what = "the disk that holds /" if not _is_partition(node) else \
            f"a partition of {_dev_name(_disk(node))}, the disk that holds /"
        return what, "the running system; never written"
    for member in _members(node):
        num = _devnum(member)
        whose = "" if member == node else f"its partition {_dev_name(member)} is "
        for m in mounted:
            src = _stat(m.source) if m.source.startswith("/") else None
            if m.devnum == num or (src is not None and stat.S_ISBLK(src.st_mode) and
                                   (os.major(src.st_rdev), os.minor(src.st_rdev)) == num):
                return f"{whose}mounted at {_show(m.point)}", "unmount it first"
        with contextlib.suppress(OSError):
            holders = sorted(h.name for h in (member / "holders").iterdir())
            if holders:
                kind, remedy = _holder_kind(host, holders[0])
                return f"{whose}held by {_dev_name(Path(holders[0]))}, {kind}", remedy
        for name in _swaps(host):
            st = _stat(name)
            if st is not None and stat.S_ISBLK(st.st_mode) and \
                    (os.major(st.st_rdev), os.minor(st.st_rdev)) == num:
                return f"{whose}active swap", f"swapoff {_show(name)} first"
    return None


def _loop_backing(host: Host, loop: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of what the kernel records as the loop device's backing file."""
    if host.dev is None:
        return None
    try:
        fd = os.open(host.dev / loop.name, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = fcntl.ioctl(fd, LOOP_GET_STATUS64, bytes(_LOOP_INFO64.size))
        device, inode = _LOOP_INFO64.unpack(info)[:2]
        # the kernel's huge_encode_dev: minor's low byte, 12 bits of major, the rest of minor
        return os.makedev((device >> 8) & 0xFFF, (device & 0xFF) | ((device >> 12) & 0xFFF00)), inode
    except OSError:
        return None
    finally:
        os.close(fd)


def loops_backed_by(host: Host, st: os.stat_result) -> list[Path]:
    """The loop devices (sysfs nodes) whose backing file is the file `st` describes."""
    found = []
    try:
        loops = sorted((host.sys / "block").glob("loop*"))
    except OSError:
        return []
    for node in loops:
        name = _read(node / "loop" / "backing_file").rstrip("\n")
        if not name:
            continue                     # not attached
        if name.endswith(" (deleted)"):
            name = name[:-len(" (deleted)")]
        backing, want = _stat(name), (st.st_dev, st.st_ino)
        if (backing is not None and (backing.st_dev, backing.st_ino) == want) or \
                _loop_backing(host, node) == want:
            found.append(Path(os.path.realpath(node)))
    return found


def _file_reason(host: Host, st: os.stat_result, mounted: list[Mount]) -> str | None:
    """Why the regular file `st` is in use, or None."""
    for m in mounted:
        src = _stat(m.source) if m.source.startswith("/") else None
        if src is not None and stat.S_ISREG(src.st_mode) and \
                (src.st_dev, src.st_ino) == (st.st_dev, st.st_ino):
            return f"mounted at {_show(m.point)} (unmount it first)"
    for name in _swaps(host):
        sw = _stat(name)
        if sw is not None and (sw.st_dev, sw.st_ino) == (st.st_dev, st.st_ino):
            return f"an active swap file (swapoff {_show(name)} first)"
    for loop in loops_backed_by(host, st):
        dev = _dev_name(loop)
        held = _block_state(host, loop, mounted)
        if held:
            return (f"backs the loop device {dev}, {held[0]} ({held[1].removesuffix(' first')}, "
                    f"then detach it: losetup -d {dev})")
        return f"backs the loop device {dev} (detach it first: losetup -d {dev})"
    return None


def why_in_use(target: str | Path, host: Host = Host()) -> str | None:
    """Why writing `target` would overwrite something in use, or None. Never opens the target."""
    st = _stat(target)
    if st is None:
        return None
    mounted = mounts(host)
    if stat.S_ISBLK(st.st_mode):
        node = _node(host, (os.major(st.st_rdev), os.minor(st.st_rdev)))
        held = _block_state(host, node, mounted) if node is not None else None
        return f"{held[0]} ({held[1]})" if held else None
    if stat.S_ISREG(st.st_mode):
        return _file_reason(host, st, mounted)
    return None


def refuse_in_use(target: str | Path, host: Host = Host()) -> None:
    """SeedfwError `<target>: in use: <why>` when the target is in use; then, for a block device,
    the kernel's own word: an exclusive open that fails with EBUSY."""
    why = why_in_use(target, host)
    if why is None and stat.S_ISBLK(os.stat(target).st_mode):
        with exclusive(target):
            pass
        return
    if why is not None:
        raise SeedfwError(f"in use: {why}", target)


@contextlib.contextmanager
def exclusive(target: str | Path, flags: int = os.O_RDONLY):
    """A descriptor on `target`; for a block device opened with O_EXCL, which the kernel refuses
    (EBUSY) while the device is mounted, held or opened exclusively by anyone else."""
    st = os.stat(target)
    extra = os.O_EXCL if stat.S_ISBLK(st.st_mode) else 0
    try:
        fd = os.open(target, flags | extra | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise SeedfwError("in use: the kernel refuses an exclusive open (busy: mounted or "
                              "held elsewhere, perhaps in another mount namespace, or opened "
                              "exclusively by another program)", target) from None
        raise SeedfwError(f"cannot open: {exc.strerror}", target) from None
    try:
        yield fd
    finally:
        os.close(fd)
