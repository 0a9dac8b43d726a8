"""The files of an ext2/3/4 partition of a disk image, for `invoke inspect`: read in place from
the mapped image (a reading.View over the partition), never copied, never mounted, and no
tool's printout parsed.

Why our own reader, not debugfs: `debugfs ls -p` prints a name raw, so a name holding a newline
and `/12/040755/0/0/etc/0/` forges a row (a fake directory) and hides what follows, and its
M-/^ escapes of the other bytes cannot be told from the same text typed plainly; it also
needed the partition copied to a temporary file (a 3 GiB file system in a 10 MiB sparse disk
image cost 6.3 GiB RSS and 3 GiB of /tmp), and on a directory whose block map loops it printed
gigabytes until killed. A listing needs little of ext4 — the superblock, the group
descriptors, inodes, directory blocks through extents or ext2/3 block maps — and each of
those reads goes through View (checked offsets, one SeedfwError naming the field).

What is shown (docs/hostile-input.md):
- every entry of every directory is COUNTED (a walk of the whole tree), so nothing hides below
  the listing's caps: setuid and setgid files and world-writable ones are flagged, counted in
  the summary and always given a row (up to MAX_FLAGGED), however deep or late they are;
- names are bytes, shown with reading.escaped_name: control, bidi and invisible characters,
  bytes that are not UTF-8, `\\` and a `/` inside a name are escapes, so two different names
  never look the same and none moves the cursor or reverses the text after it;
- rows follow the old policy: MAX_DEPTH levels, MAX_PER_DIR entries per directory below /,
  MAX_ENTRIES rows; the rest is counted as "not listed".

Bounds: one DEADLINE and MAX_IMAGE_ROWS rows for all the listings of one image (Budget),
MAX_WALK entries, WALK_DEPTH levels, MAX_DIR_BYTES per
directory, MAX_NODES extent/indirect blocks per directory; a block map or extent tree that
points back at itself, a directory block in two directories, or a directory reached twice is
a loop and one error line — never a hang.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

from ..errors import SeedfwError
from .. import reading
from ..reading import View

MAX_DEPTH = 3
MAX_ENTRIES = 100
MAX_PER_DIR = 16           # below /: so one big directory (BusyBox's /bin links) does not fill the list
MAX_FLAGGED = 64           # setuid/setgid/world-writable rows beyond the caps above
DEADLINE = 15.0            # seconds for one partition's whole walk (the hostile harness allows 60)
MAX_WALK = 1_000_000       # entries counted in one file system (a full Debian root has ~60,000)
WALK_DEPTH = 64            # directory levels walked
MAX_DIR_BYTES = 64 << 20   # one directory (1 M entries of a 32-byte name fit in ~48 MiB)
MAX_NODES = 4096           # extent-tree or indirect blocks read for one directory
MAX_PATH_SHOWN = 1024      # characters of an escaped path in a row
MAX_IMAGE_ROWS = 1000      # rows of all the ext4 partitions of one image (~1 MiB of output at most)

_U16, _U32 = struct.Struct("<H"), struct.Struct("<I")
_INODE = struct.Struct("<HHI16xHHIII60s8xI4xHHHH4x")     # the 128 bytes every inode size has
_DIRENT = struct.Struct("<IHBB")
_EXT_HEADER = struct.Struct("<HHHH4x")
_EXT_LEAF = struct.Struct("<IHHI")
_EXT_INDEX = struct.Struct("<IIH2x")

EXTENTS_FL, INLINE_DATA_FL = 0x80000, 0x10000000
INCOMPAT_FILETYPE, INCOMPAT_META_BG, INCOMPAT_64BIT = 0x2, 0x10, 0x80
S_IFMT, S_IFDIR, S_IFLNK = 0o170000, 0o040000, 0o120000


@dataclass(frozen=True)
class File:
    path: str              # escaped (reading.escaped_name per component): shown as is
    mode: int
    uid: int
    gid: int
    size: int

    @property
    def kind(self) -> str:
        return {0o040000: "dir", 0o120000: "symlink", 0o100000: "file", 0o020000: "chardev",
                0o060000: "blockdev", 0o010000: "fifo", 0o140000: "socket"}.get(
                    self.mode & S_IFMT, "other")

    @property
    def flags(self) -> list[str]:
        return _flags(self.mode, self.uid, self.gid)


def _flags(mode: int, uid: int, gid: int) -> list[str]:
    """What a reviewer of a root file system must see: setuid/setgid programs (setgid on a
    directory is group inheritance, not privilege) and anything world-writable but a symlink
    (always 0777) or a sticky directory (/tmp)."""
    if not mode & 0o6002:
        return []
    kind, out = mode & S_IFMT, []
    if mode & 0o4000 and kind != S_IFDIR:
        out.append("SETUID" + (" root" if uid == 0 else ""))
    if mode & 0o2000 and kind != S_IFDIR:
        out.append("SETGID" + (" root" if gid == 0 else ""))
    if mode & 0o002 and kind != S_IFLNK and not (kind == S_IFDIR and mode & 0o1000):
        out.append("WORLD-WRITABLE")
    return out


class Budget:
    """What the listings of one image share: one deadline and one row cap, so 128 partitions
    that all point at one large file system cost what one does (seedfw.images.boot_inspect)."""

    def __init__(self, seconds: float = DEADLINE, rows: int = MAX_IMAGE_ROWS):
        self.seconds, self.rows = seconds, rows
        self.until = time.monotonic() + seconds


@dataclass
class Listing:
    files: list[File] = field(default_factory=list)     # the rows, breadth first, sorted per dir
    flagged: list[File] = field(default_factory=list)   # flagged entries that are not in files
    total: int = 0                 # every entry counted (without . and ..)
    dirs: int = 0
    file_bytes: int = 0            # sizes of the regular files counted
    counts: dict = field(default_factory=lambda: {"setuid": 0, "setgid": 0,
                                                   "world-writable": 0})

    @property
    def more(self) -> int:
        """Entries counted but given no row."""
        return self.total - len(self.files) - len(self.flagged)


def listing(data, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES, source=None,
            deadline: float = DEADLINE, max_per_dir: int = MAX_PER_DIR,
            budget: Budget | None = None) -> Listing:
    """Walk the ext2/3/4 file system in `data` (a View, bytes or mmap: read in place) and
    count, flag and list its entries (the module docstring). Damage is a SeedfwError.
    `budget`: shared with the image's other listings (else one of `deadline` seconds)."""
    budget = budget or Budget(deadline)
    fs = _Fs(View.of(data, source, "ext4"), budget)
    out = Listing()
    root = fs.inode(2, "root directory (inode 2)")
    if root[0] & S_IFMT != S_IFDIR:
        fs.fail("root directory (inode 2)", "inode 2 is not a directory")
    seen_dirs = {2}
    level = [(2, None, True)]                # (inode, path node, listed), path node = (parent, name)
    depth = 1
    while level:
        if depth > WALK_DEPTH:
            fs.fail("directories", f"directories nested deeper than {WALK_DEPTH} levels: refused")
        below = []
        for ino, node, listed in level:
            where = f"directory {_shown(node)} (inode {ino})"
            found = []
            for e in fs.entries(ino, where):
                found.append(e)
                if out.total + len(found) > MAX_WALK:       # checked while reading: the list
                    fs.fail("directories", f"more than {MAX_WALK} entries: refused")  # is bounded
            found.sort()
            for i, (name, e_ino) in enumerate(found):
                out.total += 1
                mode, uid, gid, size = fs.inode(e_ino, f"{where}, entry inode {e_ino}")[:4]
                entry = (node, name)
                row = listed and depth <= max_depth and len(out.files) < max_entries \
                    and (i < max_per_dir or depth == 1) and budget.rows > 0
                kind = mode & S_IFMT
                if kind == 0o100000:
                    out.file_bytes += size
                flags = _flags(mode, uid, gid)
                for flag in flags:
                    out.counts[flag.split()[0].lower()] += 1
                if row:
                    out.files.append(File(_shown(entry), mode, uid, gid, size))
                    budget.rows -= 1
                elif flags and len(out.flagged) < MAX_FLAGGED and budget.rows > 0:
                    out.flagged.append(File(_shown(entry), mode, uid, gid, size))
                    budget.rows -= 1
                if kind == S_IFDIR:
                    out.dirs += 1
                    if e_ino in seen_dirs:
                        fs.fail(f"{where}, entry inode {e_ino}",
                                f"directory inode {e_ino} is reached twice (a loop or a "
                                "hard-linked directory): refused")
                    seen_dirs.add(e_ino)
                    below.append((e_ino, entry, row))
        level = below
        depth += 1
    return out


def _shown(node) -> str:
    """The escaped path of a path node (parent chain), cut to MAX_PATH_SHOWN characters."""
    parts = []
    while node is not None:
        node, name = node
        parts.append(r"\x2e" * len(name) if name in (b".", b"..") else
                     reading.escaped_name(name))
    path = "/" + "/".join(reversed(parts))
    if len(path) > MAX_PATH_SHOWN:
        path = path[:MAX_PATH_SHOWN] + f"...({len(path) - MAX_PATH_SHOWN} more characters)"
    return path


class _Fs:
    """The superblock's geometry and the reads a listing needs, each through the View."""

    def __init__(self, view: View, budget: Budget):
        self.view, self.budget = view, budget
        sb = view.sub(1024, 1024, "superblock", "ext4 superblock")
        u32 = lambda at, name: sb.unpack(_U32, at, f"superblock {name}")[0]      # noqa: E731
        u16 = lambda at, name: sb.unpack(_U16, at, f"superblock {name}")[0]      # noqa: E731
        if u16(0x38, "s_magic") != 0xEF53:
            self.fail("superblock", "no ext2/3/4 superblock (magic 0x"
                      f"{u16(0x38, 's_magic'):04x})")
        log = u32(0x18, "s_log_block_size")
        if log > 6:
            self.fail("superblock s_log_block_size", f"block size 2^{10 + log}: not ext4")
        self.bs = 1024 << log
        incompat = u32(0x60, "s_feature_incompat")
        if incompat & INCOMPAT_META_BG:
            self.fail("superblock s_feature_incompat", "meta_bg group descriptors are not read "
                      "by this listing: refused")
        self.filetype = bool(incompat & INCOMPAT_FILETYPE)
        is64 = bool(incompat & INCOMPAT_64BIT)
        self.blocks = u32(0x04, "s_blocks_count") | ((u32(0x150, "s_blocks_count_hi") << 32)
                                                      if is64 else 0)
        self.inodes = u32(0x00, "s_inodes_count")
        self.ipg = u32(0x28, "s_inodes_per_group")
        self.isize = u16(0x58, "s_inode_size") if u32(0x4C, "s_rev_level") else 128
        self.desc = u16(0xFE, "s_desc_size") if is64 else 32
        first = u32(0x14, "s_first_data_block")
        if self.ipg == 0 or self.ipg > 8 * self.bs:
            self.fail("superblock s_inodes_per_group", f"{self.ipg} inodes per group")
        if not 128 <= self.isize <= self.bs or self.isize & (self.isize - 1):
            self.fail("superblock s_inode_size", f"inode size {self.isize}")
        if not 32 <= self.desc <= 1024 or self.desc & (self.desc - 1) or (is64 and
                                                                          self.desc < 64):
            self.fail("superblock s_desc_size", f"group descriptor size {self.desc}")
        if self.blocks * self.bs > len(view):
            self.fail("superblock s_blocks_count",
                      f"{self.blocks} blocks of {self.bs} bytes do not fit the {len(view)}-byte "
                      "partition")
        self.gdt = (first + 1) * self.bs
        self.tables: dict[int, int] = {}
        self.dir_blocks: set[int] = set()        # every directory block read, for loops

    def fail(self, where: str, message: str):
        raise SeedfwError(message, self.view.source, where)

    def tick(self, where: str) -> None:
        if time.monotonic() > self.budget.until:
            self.fail(where, f"listing the image's ext4 file systems took over "
                             f"{self.budget.seconds:g} s: stopped")

    def inode(self, ino: int, where: str) -> tuple:
        """(mode, uid, gid, size, flags, i_block) of inode `ino`."""
        if not 1 <= ino <= self.inodes:
            self.fail(where, f"inode {ino} is outside the file system's {self.inodes} inodes")
        group, index = divmod(ino - 1, self.ipg)
        table = self.tables.get(group)
        if table is None:
            d = self.gdt + group * self.desc
            table = self.view.unpack(_U32, d + 8, f"group descriptor {group}")[0]
            if self.desc >= 64:
                table |= self.view.unpack(_U32, d + 0x28, f"group descriptor {group}")[0] << 32
            self.tables[group] = table
        (mode, uid, size, gid, _links, _blocks, flags, _osd1, iblock, size_hi, _bh, _ah, uid_hi,
         gid_hi) = self.view.unpack(_INODE, table * self.bs + index * self.isize,
                                    f"{where}: inode table")
        return (mode, uid | uid_hi << 16, gid | gid_hi << 16, size | size_hi << 32, flags,
                iblock)

    def block(self, pb: int, where: str) -> bytes:
        if not 0 < pb < self.blocks:
            self.fail(where, f"block {pb} is outside the file system's {self.blocks} blocks")
        return self.view.bytes(pb * self.bs, self.bs, where)

    def entries(self, ino: int, where: str):
        """(name bytes, inode) of every entry of directory `ino`, without . and .."""
        mode, _uid, _gid, size, flags, iblock = self.inode(ino, where)
        if flags & INLINE_DATA_FL:
            self.fail(where, "an inline-data directory is not read by this listing: refused")
        if size > MAX_DIR_BYTES:
            self.fail(where, f"directory of {size} bytes is over the {MAX_DIR_BYTES >> 20} MiB "
                             "limit: refused")
        n = -(-size // self.bs)
        blocks = self._extents(iblock, n, where) if flags & EXTENTS_FL else \
            self._block_map(iblock, n, where)
        for lb, pb in sorted(blocks.items()):
            self.tick(where)
            if pb in self.dir_blocks:
                self.fail(f"{where}, block {lb}", f"block {pb} is read twice as a directory "
                          "block (the block map or two directories loop): refused")
            self.dir_blocks.add(pb)
            yield from self._dirents(self.block(pb, f"{where}, block {lb}"), lb,
                                     f"{where}, block {lb}")

    def _dirents(self, data: bytes, lb: int, where: str):
        pos, index = 0, 0
        while pos < self.bs:
            if pos + 8 > self.bs:
                self.fail(where, f"directory entry at offset {pos} runs past the block")
            e_ino, rec_len, name_len, kind = _DIRENT.unpack_from(data, pos)
            if not self.filetype:
                name_len |= kind << 8
            if self.bs == 65536 and rec_len in (0, 65535):
                rec_len = 65536
            if rec_len < 8 or rec_len % 4 or pos + rec_len > self.bs:
                self.fail(where, f"directory entry at offset {pos}: record length {rec_len}")
            if e_ino:
                if not 0 < name_len <= rec_len - 8:
                    self.fail(where, f"directory entry at offset {pos}: name length {name_len}")
                name = data[pos + 8:pos + 8 + name_len]
                if not (lb == 0 and (index, name) in ((0, b"."), (1, b".."))):
                    yield name, e_ino
            index += 1
            pos += rec_len

    def _block_map(self, iblock: bytes, n: int, where: str) -> dict[int, int]:
        """ext2/3: 12 direct blocks, then single, double and triple indirect ones."""
        per = self.bs // 4
        ptrs = struct.unpack("<15I", iblock)
        out: dict[int, int] = {}
        seen: set[int] = set()

        def walk(pb: int, level: int, first: int) -> None:
            if first >= n or pb == 0:
                return
            if level == 0:
                out[first] = pb
                return
            if pb in seen or len(seen) >= MAX_NODES:
                self.fail(where, f"block map loops (indirect block {pb} read twice)" if pb in
                          seen else f"more than {MAX_NODES} indirect blocks: refused")
            seen.add(pb)
            self.tick(where)
            span = per ** (level - 1)
            for k, child in enumerate(struct.unpack(f"<{per}I", self.block(pb, where))):
                if first + k * span >= n:
                    break
                walk(child, level - 1, first + k * span)

        for k in range(12):
            walk(ptrs[k], 0, k)
        walk(ptrs[12], 1, 12)
        walk(ptrs[13], 2, 12 + per)
        walk(ptrs[14], 3, 12 + per + per * per)
        return out

    def _extents(self, iblock: bytes, n: int, where: str) -> dict[int, int]:
        """ext4's extent tree (at most 5 levels below the inode, each one level shallower)."""
        out: dict[int, int] = {}
        seen: set[int] = set()

        def node(raw: bytes, want: int | None) -> None:
            magic, count, _max, depth = _EXT_HEADER.unpack_from(raw, 0)
            if magic != 0xF30A or depth > 5 or (want is not None and depth != want) or \
                    12 + 12 * count > len(raw):
                self.fail(where, f"bad extent node (magic 0x{magic:04x}, {count} entries, "
                                 f"depth {depth})")
            for k in range(count):
                at = 12 + 12 * k
                if depth == 0:
                    lblk, length, hi, lo = _EXT_LEAF.unpack_from(raw, at)
                    if length > 32768:          # unwritten: reads as zeros, no entries
                        continue
                    for j in range(min(length, max(n - lblk, 0))):
                        if lblk + j in out:
                            self.fail(where, f"extents overlap at block {lblk + j}")
                        out[lblk + j] = (hi << 32 | lo) + j
                else:
                    _lblk, lo, hi = _EXT_INDEX.unpack_from(raw, at)
                    child = hi << 32 | lo
                    if child in seen or len(seen) >= MAX_NODES:
                        self.fail(where, f"extent tree loops (block {child} read twice)" if
                                  child in seen else f"more than {MAX_NODES} extent blocks")
                    seen.add(child)
                    self.tick(where)
                    node(self.block(child, where), depth - 1)

        node(iblock, None)
        return out
