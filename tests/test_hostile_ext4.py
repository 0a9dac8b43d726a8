"""The hostile ext4 corpus (issue 28: the ext4 listing of `invoke inspect`): crafted root file
systems in GPT disk images, one case per class — names that hid and forged rows, a sparse
3 GiB file system, block maps and directories that loop, a corrupt superblock, many entries,
and rows nothing verified. Each runs the CLI in a child (tests/hostile.py: RLIMIT_AS, timeout,
time and peak RSS measured) and asserts the exit code and the exact line.

The file systems are made the way an attacker could: mke2fs -d from a tree written with
Python os calls (any bytes in a name but NUL and `/`), then debugfs -w or bytes patched in
place for what mke2fs would not write (a `/` in a name, a block map that points back).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

import hostile

TIME_BOUND = 20.0
RSS_BOUND_MIB = 512
SECTOR = 512


def _mkfs(path: Path, tree: Path | None, size: str, *opts: str) -> Path:
    args = ["mke2fs", "-q", "-F", *opts] + (["-d", str(tree)] if tree else []) + [str(path), size]
    subprocess.run(args, check=True, capture_output=True)
    return path


def _disk(tmp: Path, fs: Path, name: str = "disk.img") -> Path:
    """A GPT disk with one partition "rootfs" = the file system (written sparse)."""
    from seedfw.images import samples
    lbas = 2048 + -(-fs.stat().st_size // SECTOR) + 34
    return samples.write_sparse_gpt_disk(tmp / name, [("rootfs", 2048, fs)], lbas)


def _debugfs(fs: Path, *requests: str) -> None:
    for r in requests:
        subprocess.run(["debugfs", "-w", "-R", r, str(fs)], capture_output=True, check=True)


def _inspect(*args, env=None, timeout=TIME_BOUND * 3) -> hostile.Run:
    env = dict(env or os.environ, COLUMNS="400")       # the boxed table: one line per row
    run = hostile.invoke_bounded("inspect", *args, env=env, timeout=timeout)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.seconds <= TIME_BOUND, run.seconds
    assert run.max_rss_mib <= RSS_BOUND_MIB, run.max_rss_mib
    return run


def _json(run: hostile.Run) -> dict:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _error(run: hostile.Run) -> str:
    assert run.returncode == 1, run.stdout + run.stderr
    errors = hostile.error_lines(run)
    assert len(errors) == 1, run.stderr
    return errors[0]


# ---- hides and forges -----------------------------------------------------------------------

FORGED = b"n\n/99/040755/0/0/fake/0/"          # the row debugfs ls -p would have printed
HOSTILE_NAMES = [b'say "hi"', b"esc\x1b[2Jclear", b"\x1b]8;;http:evil\x1b\\click\x1b]8;;\x1b\\",
                 "\u202eexe.txt".encode(), b"bad\xffutf8", b"two\nlines", b"back\\x41slash"]


@pytest.fixture(scope="module")
def forged_disk(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("forged")
    tree = tmp / "tree"
    deep = tree / "usr" / "lib" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tree / "bin").mkdir()
    for i in range(30):                                 # past MAX_PER_DIR (16) in /bin
        (tree / "bin" / f"tool{i:02}").write_text("x")
    for path, mode in ((tree / "bin" / "zz-suid", 0o4755), (deep / "hidden-suid", 0o4755),
                       (tree / "bin" / "zz-sgid", 0o2755), (tree / "usr" / "ww", 0o666)):
        path.write_text("#!/bin/sh\n")
        path.chmod(mode)
    for name in HOSTILE_NAMES + [b"P" * len(FORGED)]:
        with open(os.path.join(os.fsencode(tree), name), "wb") as f:
            f.write(b"x")
    fs = _mkfs(tmp / "rootfs.ext4", tree, "4M", "-t", "ext4", "-O", "^metadata_csum")
    blob = bytearray(fs.read_bytes())
    at = blob.find(b"P" * len(FORGED))             # a `/` in a name: only by patching bytes
    blob[at:at + len(FORGED)] = FORGED
    fs.write_bytes(bytes(blob))
    return _disk(tmp, fs)


def test_names_are_escaped_every_entry_counted_setuid_flagged(forged_disk):
    doc = _json(_inspect(forged_disk, "--json"))
    rows = {r["name"]: r for r in doc["rows"] if r["name"].startswith("rootfs:")}
    # every hostile name is one row, shown escaped; the forged directory is not a row
    assert {"rootfs:/say \"hi\"", r"rootfs:/esc\x1b[2Jclear",
            r"rootfs:/\x1b]8;;http:evil\x1b\x5cclick\x1b]8;;\x1b\x5c",
            r"rootfs:/\u202eexe.txt", r"rootfs:/bad\xffutf8", r"rootfs:/two\x0alines",
            r"rootfs:/back\x5cx41slash",
            r"rootfs:/n\x0a\x2f99\x2f040755\x2f0\x2f0\x2ffake\x2f0\x2f"} <= set(rows)
    assert not any("fake" in n and "\\x2f" not in n for n in rows)
    # setuid/setgid beyond the listing's caps (17th entry of /bin, depth 6) still have rows
    assert rows["rootfs:/bin/zz-suid"]["detail"] == "mode 4755 uid 0 gid 0, SETUID root"
    assert rows["rootfs:/usr/lib/a/b/c/hidden-suid"]["detail"] == \
        "mode 4755 uid 0 gid 0, SETUID root"
    assert rows["rootfs:/bin/zz-sgid"]["detail"] == "mode 2755 uid 0 gid 0, SETGID root"
    assert rows["rootfs:/usr/ww"]["detail"] == "mode 0666 uid 0 gid 0, WORLD-WRITABLE"
    assert all(r["checked"] is False and r["hash_algo"] == "-" for r in rows.values())
    # / holds 8 hostile names, bin, usr, lost+found; /bin 32 files (16 listed, zz-* are not);
    # /usr lib and ww; then a, b (depth 4: not listed), c, hidden-suid
    note = next(n for n in doc["notes"] if n.startswith("partition rootfs: ext4"))
    assert note == ("partition rootfs: ext4, 49 entries counted (7 directories, 78 bytes in "
                    "files), 30 listed (up to 3 levels), 16 not listed; 2 setuid, 1 setgid, "
                    "1 world-writable (3 of them outside the listing have rows too); nothing "
                    "in it is verified (rows 'listed')")
    assert "warning: partition rootfs holds 4 setuid, setgid or world-writable entries " \
           "(flagged in their rows)" in doc["notes"]


def test_the_table_shows_no_raw_control_or_bidi_character(forged_disk):
    run = _inspect(forged_disk)
    assert run.returncode == 0, run.stderr
    assert not any(c in run.stdout for c in "\x1b\x07\u202e\r"), run.stdout
    lines = run.stdout.splitlines()
    assert any(r"rootfs:/two\x0alines" in line and "listed" in line for line in lines)
    assert not any(line.strip() in ("lines", "/99/040755/0/0/fake/0/") for line in lines)
    assert "warning: partition rootfs holds 4 setuid, setgid or world-writable entries " \
           "(flagged in their rows)" in lines


def test_escaped_names_are_unambiguous():
    from seedfw import reading
    names = [b"a\nb", b"a\\x0ab", b"a/b", b"a\\x2fb", b"\xff", "\u00ff".encode(), b" x", b"x ",
             b"x", "\u202e".encode(), "\u200b".encode(), "\u00a0".encode(), b"\x7f", b"\xc2\x9b",
             "\u2028".encode(), b"\xed\xa0\x80"]
    shown = [reading.escaped_name(n) for n in names]
    assert len(set(shown)) == len(names)
    assert all(c.isprintable() and c not in "\u202e\u200b\u00a0\u2028" for s in shown for c in s)
    assert shown[:3] == [r"a\x0ab", r"a\x5cx0ab", r"a\x2fb"]
    assert reading.plain(shown[0]) == shown[0]         # the table's plain() leaves it as is


# ---- memory: a 3 GiB file system in a few MiB -------------------------------------------------

def test_sparse_3gib_file_system_read_in_place(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    (tree / "etc" / "hostname").write_text("board\n")
    fs = tmp_path / "rootfs.ext4"
    with open(fs, "wb") as f:
        f.truncate(3 << 30)
    _mkfs(fs, tree, "3G", "-t", "ext4", "-O", "^has_journal")
    disk = _disk(tmp_path, fs)
    assert disk.stat().st_size > 3 << 30 and disk.stat().st_blocks * 512 < 16 << 20
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # The image is mapped whole (reading.read_input): address space is 3 GiB, memory is the
    # pages touched. The limit that matters is peak RSS (asserted in _inspect), so RLIMIT_AS
    # is raised above the file's size for this one case.
    monkeypatch.setattr(hostile, "AS_LIMIT", 5 << 30)
    run = _inspect(disk, env=dict(os.environ, TMPDIR=str(scratch)))
    assert run.returncode == 0, run.stderr
    # was 6.3 GiB (a copy of the partition). The mapped pages touched count as RSS; under a
    # loaded machine's page cache that was seen at 162 MiB: the bound is "no copy", well below
    # the corpus's 512 MiB.
    assert run.max_rss_mib < 256, run.max_rss_mib
    assert list(scratch.iterdir()) == []                     # was a 3 GiB temporary copy
    assert run.stdout.splitlines()[-1] == ("all hashes ok: 92 bytes verified by a hash or "
                                           "signature; 4 rows (6 bytes) only listed, not verified")


# ---- time: block maps and directories that loop ---------------------------------------------

def _loop_fs(tmp: Path) -> tuple[Path, int, list[int]]:
    """An ext2 (1 KiB blocks) whose /loop directory spans 20 blocks (12 direct + indirect)."""
    tree = tmp / "tree"
    (tree / "loop").mkdir(parents=True)
    for i in range(80):
        (tree / "loop" / (f"{i:03}" + "n" * 200)).write_text("")
    fs = _mkfs(tmp / "rootfs.ext4", tree, "2M", "-t", "ext2", "-b", "1024")
    stat = subprocess.run(["debugfs", "-R", "stat /loop", str(fs)], capture_output=True,
                          text=True, check=True).stdout
    ino = int(stat.split("Inode: ")[1].split()[0])
    blocks = subprocess.run(["debugfs", "-R", "blocks /loop", str(fs)], capture_output=True,
                            text=True, check=True).stdout.split()
    return fs, ino, [int(b) for b in blocks]


def test_directory_block_map_that_loops(tmp_path):
    fs, ino, blocks = _loop_fs(tmp_path)
    stat = subprocess.run(["debugfs", "-R", "stat /loop", str(fs)], capture_output=True,
                          text=True, check=True).stdout
    ind = int(re.search(r"\(IND\):(\d+)", stat).group(1))
    with open(fs, "r+b") as f:                    # every indirect pointer: the first block
        f.seek(ind * 1024)
        f.write(struct.pack("<256I", *[blocks[0]] * 256))
    _debugfs(fs, f"sif <{ino}> size {(12 + 256) * 1024}")
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, directory /loop (inode {ino}), block "
                    f"12: ext4: block {blocks[0]} is read twice as a directory block (the block "
                    "map or two directories loop): refused")


def test_double_indirect_block_that_points_at_itself(tmp_path):
    fs, ino, _blocks = _loop_fs(tmp_path)
    free = int(subprocess.run(["debugfs", "-R", "ffb 1 1500", str(fs)], capture_output=True,
                              text=True, check=True).stdout.split()[-1])
    with open(fs, "r+b") as f:
        f.seek(free * 1024)
        f.write(struct.pack("<256I", *[free] * 256))
    _debugfs(fs, f"sif <{ino}> block[DIND] {free}", f"sif <{ino}> size {60 << 20}")
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, directory /loop (inode {ino}): ext4: "
                    f"block map loops (indirect block {free} read twice)")


def test_directory_that_contains_its_ancestor(tmp_path):
    (tmp_path / "tree" / "d").mkdir(parents=True)
    fs = _mkfs(tmp_path / "rootfs.ext4", tmp_path / "tree", "1M", "-t", "ext4")
    _debugfs(fs, "ln <2> /d/up")
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, directory /d (inode 12), entry inode 2: "
                    "ext4: directory inode 2 is reached twice (a loop or a hard-linked "
                    "directory): refused")


def test_directory_too_large(tmp_path):
    (tmp_path / "tree" / "d").mkdir(parents=True)
    fs = _mkfs(tmp_path / "rootfs.ext4", tmp_path / "tree", "1M", "-t", "ext4")
    _debugfs(fs, f"sif /d size {1 << 40}")
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, directory /d (inode 12): ext4: "
                    "directory of 1099511627776 bytes is over the 64 MiB limit: refused")


def test_many_entries_counted_within_bounds(tmp_path):
    tree = tmp_path / "tree"
    (tree / "many").mkdir(parents=True)
    for i in range(4000):             # (mke2fs -d is quadratic in one directory; the bench: 100,000)
        (tree / "many" / f"entry-{i:05}").write_text("")
    fs = _mkfs(tmp_path / "rootfs.ext4", tree, "16M", "-t", "ext4", "-N", "5000")
    doc = _json(_inspect(_disk(tmp_path, fs), "--json"))
    note = next(n for n in doc["notes"] if n.startswith("partition rootfs: ext4"))
    assert note.startswith("partition rootfs: ext4, 4002 entries counted (2 directories, 0 "
                           "bytes in files), 18 listed (up to 3 levels), 3984 not listed; ")
    listed = [r["name"] for r in doc["rows"] if r["name"].startswith("rootfs:/many/")]
    assert listed == [f"rootfs:/many/entry-{i:05}" for i in range(16)]


# ---- corrupt ---------------------------------------------------------------------------------

def test_superblock_larger_than_its_partition(tmp_path):
    fs = _mkfs(tmp_path / "rootfs.ext4", None, "1M", "-t", "ext4", "-b", "1024")
    with open(fs, "r+b") as f:
        f.seek(1024 + 4)
        f.write(struct.pack("<I", 0xFFFFFFF0))
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, superblock s_blocks_count: ext4: "
                    "4294967280 blocks of 1024 bytes do not fit the 1048576-byte partition")


def test_extent_tree_with_a_bad_node(tmp_path):
    (tmp_path / "tree" / "d").mkdir(parents=True)
    fs = _mkfs(tmp_path / "rootfs.ext4", tmp_path / "tree", "1M", "-t", "ext4")
    _debugfs(fs, "sif /d block[0] 0x1234")                 # the extent header's magic
    disk = _disk(tmp_path, fs)
    line = _error(_inspect(disk))
    assert line == (f"error: {disk}: partition rootfs, directory /d (inode 12): ext4: bad "
                    "extent node (magic 0x1234, 0 entries, depth 0)")


# ---- "ok" only for what was verified --------------------------------------------------------

def test_rows_nothing_verified_are_listed_and_the_summary_counts_bytes(tmp_path):
    from seedfw.images import samples
    made = samples.make_all(tmp_path / "s")
    itb, rockchip = made["fit"].read_bytes(), made["rockchip"].read_bytes()
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    (tree / "etc" / "issue").write_text("seedfw\n")
    fs = _mkfs(tmp_path / "rootfs.ext4", tree, "1M", "-t", "ext4").read_bytes()
    disk = tmp_path / "disk.img"
    disk.write_bytes(samples.gpt_disk([("firmware", 24576, itb), ("rootfs", 32768, fs)],
                                      boot=rockchip))
    doc = _json(_inspect(disk, "--json"))
    rows = doc["rows"]
    listed = [r for r in rows if not r["checked"]]
    assert {r["name"] for r in listed} == {"partition 1 firmware", "partition 2 rootfs",
                                           "rootfs:/etc", "rootfs:/lost+found", "rootfs:/etc/issue"}
    assert all(r["checked"] for r in rows if r["name"].startswith(("firmware/", "boot@32K/")))
    verified = sum(r["stored_size"] for r in rows if r["checked"] and r["hash_ok"]
                   and r["hash_algo"] not in ("-", "none", "signature"))
    assert doc["verified_bytes"] == verified > len(itb) // 2 and doc["listed_bytes"] == 7
    run = _inspect(disk)
    lines = run.stdout.splitlines()
    assert lines[-1] == (f"all hashes ok: {verified} bytes verified by a hash or signature; "
                         "5 rows (7 bytes) only listed, not verified")
    etc = next(line for line in lines if "rootfs:/etc/issue" in line)
    assert "│ listed │" in etc and "│ ok " not in etc


# ---- one budget for the whole image ----------------------------------------------------------

def test_rows_of_all_partitions_share_one_cap(tmp_path):
    from seedfw.images import ext4_list, samples
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(120):
        (tree / f"f{i:03}").write_text("")
    fs = _mkfs(tmp_path / "rootfs.ext4", tree, "1M", "-t", "ext4", "-N", "256").read_bytes()
    disk = tmp_path / "disk.img"
    disk.write_bytes(samples.gpt_disk([(f"p{i}", 2048 + i * 2048, fs) for i in range(12)],
                                      pad_lbas=0))
    doc = _json(_inspect(disk, "--json"))
    rows = [r for r in doc["rows"] if ":/" in r["name"]]
    assert len(rows) == ext4_list.MAX_IMAGE_ROWS == 1000               # 12 x 100 without it
    assert doc["notes"][-3].startswith("partition p11: ext4, 121 entries counted (1 "
                                       "directories, 0 bytes in files), 0 listed")


def test_the_deadline_is_one_error_line(tmp_path):
    from seedfw.errors import SeedfwError
    from seedfw.images import ext4_list
    (tmp_path / "tree" / "d").mkdir(parents=True)
    fs = _mkfs(tmp_path / "rootfs.ext4", tmp_path / "tree", "1M", "-t", "ext4")
    with pytest.raises(SeedfwError) as err:
        ext4_list.listing(fs.read_bytes(), source="fs", deadline=0)
    assert err.value.line() == ("fs: directory / (inode 2): listing the image's ext4 file "
                                "systems took over 0 s: stopped")
