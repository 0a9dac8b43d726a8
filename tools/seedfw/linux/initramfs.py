"""The small initramfs that brings up the ext4 root: BusyBox, an /init script, the root modules.

Why one at all: Debian's generic kernel has the SD/eMMC hosts and ext4 as modules
(seedfw.linux.modules), so it cannot mount the "rootfs" partition by itself; something in RAM
must load them first. Why not Buildroot's rootfs.cpio (6.7 MB, the whole userspace): the
initramfs only has to find and mount the root, and a second full copy of the OS in the boot
partition would be what runs whenever the root mount failed, hiding the failure.

Contents (images/initramfs.cpio, newc, uncompressed, every entry uid/gid 0 and mtime
SOURCE_DATE_EPOCH, so the same inputs give the same bytes):

    /init                  the script below (generated: module list, wait time)
    /bin/busybox           taken from Buildroot's rootfs.cpio, with the shared libraries its
    /lib/…                   ELF header names (PT_INTERP, DT_NEEDED), read from the same cpio
    /bin/<applet>          links to busybox for the applets /init uses (checked to be in it)
    /lib/modules/<m>.ko    the module set's closure (os-modules.json "order"), the same
                           decompressed files as the rootfs's (seedfw.linux.modules.plain: why)
    /dev/console           (5, 1): the kernel opens it for /init's stdio before /init runs
    /dev /proc /sys /newroot

What /init does, printing one "init: " line per step: mount devtmpfs, proc, sysfs; read
root=PARTUUID=<uuid> (and ro/rw, init=) from /proc/cmdline; insmod every module in order (one
missing from the initramfs is named); wait up to OS_ROOT_WAIT seconds for a partition whose GPT
entry (read with `od` from the disk's partition array) carries that unique GUID; mount it
ext4, move /dev into it, `switch_root` to its /sbin/init. When the partition never appears it
says so in one line that names the modules missing from the initramfs, and exits (the kernel
then panics; `panic=-1` reboots). That line and the one after it go through /dev/kmsg, so the
panic cannot swallow them (see `say` in the script).

Step os-root.initramfs (after buildroot.build and os-root.modules). Kconfig symbols read: OS_ROOT_EXT4,
OS_ROOT_WAIT.
"""

from __future__ import annotations

import struct
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .. import util
from ..errors import SeedfwError

VERSION = "2"           # 2: the last words before the panic go through /dev/kmsg
NAME = "initramfs.cpio"
# What /init runs besides shell built-ins; each must be a BusyBox applet of the rootfs's BusyBox.
APPLETS = ("sh", "mount", "umount", "cat", "od", "dd", "insmod", "sleep", "readlink", "mkdir",
           "tr", "switch_root")
MAX_ENTRIES = 100_000          # a cpio is hostile input: bounded
MAX_BYTES = 512 << 20


@dataclass
class Entry:
    path: str                  # without a leading "/"
    mode: int                  # st_mode (type + permissions)
    data: bytes = b""          # file contents, or a symlink's target
    rdev: tuple[int, int] = (0, 0)


def read_cpio(blob: bytes, source=None) -> dict[str, Entry]:
    """A newc ("070701") archive → {path: Entry} (hard links are not used by Buildroot's)."""
    out: dict[str, Entry] = {}
    off = 0
    while True:
        if off + 110 > len(blob) or blob[off:off + 6] not in (b"070701", b"070702"):
            raise SeedfwError(f"not a newc cpio entry at offset {off}", source)
        try:
            f = [int(blob[off + 6 + 8 * i:off + 14 + 8 * i], 16) for i in range(13)]
        except ValueError:
            raise SeedfwError(f"bad cpio header at offset {off}", source) from None
        mode, filesize, rmaj, rmin, namesize = f[1], f[6], f[9], f[10], f[11]
        name = blob[off + 110:off + 110 + namesize - 1].decode("utf-8", "replace")
        off = (off + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return out
        if off + filesize > len(blob) or len(out) >= MAX_ENTRIES:
            raise SeedfwError(f"cpio entry {name} runs past the archive", source)
        path = (name[2:] if name.startswith("./") else name).lstrip("/") or "."
        out[path] = Entry(path, mode, blob[off:off + filesize], (rmaj, rmin))
        off = (off + filesize + 3) & ~3


def write_cpio(entries: list[Entry]) -> bytes:
    """newc, in the given order, inode numbers from 1, uid/gid 0, mtime SOURCE_DATE_EPOCH."""
    epoch = util.source_date_epoch()
    parts = []
    for ino, e in enumerate(entries, 1):
        name = e.path.encode() + b"\0"
        head = "070701" + "".join(f"{v:08X}" for v in (
            ino, e.mode, 0, 0, 1, epoch, len(e.data), 0, 0, e.rdev[0], e.rdev[1], len(name), 0))
        rec = head.encode() + name
        rec += b"\0" * (-len(rec) % 4) + e.data
        parts.append(rec + b"\0" * (-len(rec) % 4))
    trailer = ("070701" + "0" * 8 + "00000000" * 4 + "00000000" * 6 + "0000000B" + "0" * 8)
    rec = trailer.encode() + b"TRAILER!!!\0"
    parts.append(rec + b"\0" * (-len(rec) % 4))
    return b"".join(parts)


def elf_deps(data: bytes, source=None) -> tuple[str | None, list[str]]:
    """(PT_INTERP, [DT_NEEDED names]) of a 64-bit little-endian ELF."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise SeedfwError("not a 64-bit little-endian ELF", source)
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    interp, dynamic, loads = None, None, []
    for i in range(min(phnum, 64)):
        p_type, _, p_off, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                     phoff + i * phentsize)
        if p_type == 3:
            interp = data[p_off:p_off + p_filesz].rstrip(b"\0").decode()
        elif p_type == 2:
            dynamic = (p_off, p_filesz)
        elif p_type == 1:
            loads.append((p_vaddr, p_off, p_filesz))
    if dynamic is None:
        return interp, []
    tags = [struct.unpack_from("<qQ", data, dynamic[0] + 16 * i) for i in range(dynamic[1] // 16)]
    strtab = next((v for t, v in tags if t == 5), None)        # DT_STRTAB (an address)
    base = next((o + strtab - a for a, o, n in loads if a <= (strtab or -1) < a + n), None)
    if base is None:
        raise SeedfwError("ELF dynamic section without a loadable string table", source)
    needed = [data[base + v:data.index(b"\0", base + v)].decode() for t, v in tags if t == 1]
    return interp, needed


def _resolve(files: dict[str, Entry], path: str, source) -> str:
    """Follow symlinks inside the archive (bounded)."""
    for _ in range(16):
        e = files.get(path)
        if e is None:
            raise SeedfwError(f"the rootfs has no {path}", source)
        if (e.mode & 0o170000) != 0o120000:
            return path
        target = e.data.decode()
        path = (target if target.startswith("/") else
                str(Path("/" + path).parent / target)).lstrip("/")
        path = str(Path("/" + path).resolve()).lstrip("/") if ".." in path else path
    raise SeedfwError(f"symlink loop at {path}", source)


def userspace(rootfs: dict[str, Entry], source=None) -> list[Entry]:
    """BusyBox and the libraries it needs, at the paths the rootfs has them (resolved)."""
    bb_path = _resolve(rootfs, "bin/busybox", source)
    bb = rootfs[bb_path]
    for applet in APPLETS:
        if b"\0" + applet.encode() + b"\0" not in bb.data:
            raise SeedfwError(f"the rootfs's BusyBox has no '{applet}' applet, which the "
                              "initramfs /init uses", source)
    out, todo, seen = [Entry("bin/busybox", 0o100755, bb.data)], [bb.data], set()
    while todo:
        interp, needed = elf_deps(todo.pop(), source)
        for want in ([interp] if interp else []) + [f"lib/{n}" for n in needed]:
            want = want.lstrip("/")
            if want in seen:
                continue
            seen.add(want)
            if want not in rootfs and f"usr/{want}" in rootfs:
                want = f"usr/{want}"
            real = _resolve(rootfs, want, source)
            out.append(Entry(want.removeprefix("usr/"), 0o100755, rootfs[real].data))
            todo.append(rootfs[real].data)
    return out


def init_script(modules: list[str], wait: int) -> str:
    lines = ["#!/bin/sh",
             "# seedfw initramfs /init (generated by tools/seedfw/linux/initramfs.py; docs/os.md):",
             "# load the modules the root mount needs, find root=PARTUUID= in the GPT, mount it,",
             "# switch_root to it.",
             "export PATH=/bin",
             f'MODULES="{" ".join(modules)}"',
             f"WAIT={wait}",
             _INIT_BODY]
    return "\n".join(lines)


_INIT_BODY = r'''mount -t devtmpfs devtmpfs /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# The last words before `exit` (which panics the kernel at once) go to the kernel log, which the
# kernel writes to the console itself and flushes when it panics. Not plain echo: after a second
# of silence the serial port is runtime-suspended, so a tty write only queues the bytes for a
# kernel worker that resumes the port; the panic stops that worker, and on a loaded host (QEMU's
# vCPU threads descheduled) it had not run yet: the line was lost (issue 27).
say() { { echo "<3>init: $*" > /dev/kmsg; } 2>/dev/null || echo "init: $*"; }
fail() { say "$*"; say "not booting; exiting (the kernel panics)"; exit 1; }
root= mode=ro init=/sbin/init
for a in $(cat /proc/cmdline); do
	case "$a" in
	root=PARTUUID=*) root=$(echo "${a#root=PARTUUID=}" | tr A-F a-f) ;;
	rw|ro) mode=$a ;;
	init=*) init=${a#init=} ;;
	esac
done
[ -n "$root" ] || fail "no root=PARTUUID=... on the kernel command line"
echo "init: seedfw initramfs: $(cat /proc/sys/kernel/osrelease), root PARTUUID=$root"
missing= n=0
for m in $MODULES; do
	if [ ! -f /lib/modules/$m.ko ]; then
		echo "init: module $m is not in this initramfs"; missing="$missing $m"; continue
	fi
	insmod /lib/modules/$m.ko && n=$((n + 1)) || echo "init: insmod $m failed"
done
echo "init: loaded $n modules"
# The partition's unique GUID from its GPT entry ($1 disk, $2 partition number, $3 sector size).
guid() {
	set -- "$1" "$2" "$3" $(od -A n -t u4 -j $(($3 + 72)) -N 4 "$1") \
		$(od -A n -t u4 -j $(($3 + 84)) -N 4 "$1")
	set -- $(od -A n -t x1 -v -j $(($4 * $3 + ($2 - 1) * $5 + 16)) -N 16 "$1")
	echo "$4$3$2$1-$6$5-$8$7-$9${10}-${11}${12}${13}${14}${15}${16}"
}
find_root() {
	for p in /sys/class/block/*; do
		[ -f "$p/partition" ] || continue
		real=$(readlink -f "$p"); d=${real%/*}; disk=${d##*/}
		ss=$(cat "/sys/class/block/$disk/queue/logical_block_size" 2>/dev/null || echo 512)
		[ "$(dd if=/dev/$disk bs=$ss skip=1 count=1 2>/dev/null | dd bs=8 count=1 2>/dev/null)" = "EFI PART" ] || continue
		[ "$(guid /dev/$disk $(cat "$p/partition") $ss)" = "$root" ] && { echo "/dev/${p##*/}"; return 0; }
	done
	return 1
}
# Counted in tries one (guest) second apart, not read from a clock: the verdict is the same however
# slowly the host emulates each scan.
i=0
until dev=$(find_root); do
	i=$((i + 1))
	[ $i -gt $WAIT ] && fail "root device PARTUUID=$root did not appear in $WAIT s${missing:+ (modules missing from the initramfs:$missing)}"
	sleep 1
done
echo "init: root PARTUUID=$root is $dev; mounting it (ext4, $mode)"
mkdir -p /newroot
mount -t ext4 -o $mode "$dev" /newroot || fail "mounting $dev (ext4) failed"
[ -x "/newroot$init" ] || fail "$dev has no $init"
mount -o move /dev /newroot/dev
umount /proc /sys
echo "init: switch_root to $dev ($init)"
exec switch_root /newroot "$init"
'''


def build(rootfs_cpio: Path, modules_tar: Path, order: list[str], release: str,
          wait: int) -> tuple[bytes, dict]:
    """The initramfs bytes and a description (what went in, sizes)."""
    blob = rootfs_cpio.read_bytes()
    if len(blob) > MAX_BYTES:
        raise SeedfwError(f"over {MAX_BYTES >> 20} MiB", rootfs_cpio)
    files = read_cpio(blob, rootfs_cpio)
    entries = [Entry(d, 0o040755) for d in ("bin", "dev", "lib", "lib/modules", "newroot",
                                            "proc", "sys")]
    entries.append(Entry("dev/console", 0o020600, rdev=(5, 1)))
    user = userspace(files, rootfs_cpio)
    entries += [Entry(f"bin/{a}", 0o120777, b"busybox") for a in APPLETS]
    entries += user
    mods = {}
    from .modules import module_name
    with tarfile.open(modules_tar) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith(".ko") and module_name(m.name) in order:
                mods[module_name(m.name)] = tar.extractfile(m).read()
    for name in order:
        if name not in mods:
            raise SeedfwError(f"{modules_tar.name} has no {name}.ko", modules_tar)
        entries.append(Entry(f"lib/modules/{name}.ko", 0o100644, mods[name]))
    entries.append(Entry("init", 0o100755, init_script(order, wait).encode()))
    data = write_cpio(entries)
    doc = {"release": release, "modules": order, "wait_s": wait, "size": len(data),
           "userspace": {e.path: len(e.data) for e in user},
           "module_bytes": sum(len(v) for v in mods.values())}
    return data, doc


def without(blob: bytes, paths: set[str]) -> bytes:
    """The same initramfs without `paths` (tests: an initramfs missing a module)."""
    files = read_cpio(blob)
    return write_cpio([e for p, e in files.items() if p not in paths])
