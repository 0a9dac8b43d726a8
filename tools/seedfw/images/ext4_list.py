"""The files of an ext4 partition of a disk image, for `invoke inspect` (read with the host's
debugfs, which reads the image without mounting it).

A disk image is hostile input: the listing is bounded (MAX_DEPTH directory levels, MAX_PER_DIR
entries per directory, MAX_ENTRIES per partition, each debugfs call TIMEOUT seconds, only names
that are plain text), and how many entries were left out is said in one line.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 3
MAX_ENTRIES = 100
MAX_PER_DIR = 16           # below /: so one big directory (BusyBox's /bin links) does not fill the list
TIMEOUT = 20.0


@dataclass(frozen=True)
class File:
    path: str
    mode: int
    uid: int
    gid: int
    size: int

    @property
    def kind(self) -> str:
        return {0o040000: "dir", 0o120000: "symlink", 0o100000: "file",
                0o020000: "chardev", 0o060000: "blockdev"}.get(self.mode & 0o170000, "other")


def _ls(image: Path, directory: str) -> list[File]:
    """`debugfs -R "ls -p DIR"`: lines /inode/mode(octal)/uid/gid/name/size/."""
    got = subprocess.run(["debugfs", "-R", f'ls -p "{directory}"', str(image)],
                         capture_output=True, timeout=TIMEOUT)
    out = []
    for line in got.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("/")
        if len(parts) != 8 or parts[5] in (".", "..", ""):
            continue
        try:
            mode, uid, gid = int(parts[2], 8), int(parts[3]), int(parts[4])
            size = int(parts[6]) if parts[6] else 0
        except ValueError:
            continue
        if not parts[5].isprintable() or '"' in parts[5]:
            continue
        out.append(File(f"{directory.rstrip('/')}/{parts[5]}", mode, uid, gid, size))
    return sorted(out, key=lambda f: f.path)


def listing(data: bytes, max_depth: int = MAX_DEPTH,
            max_entries: int = MAX_ENTRIES) -> tuple[list[File], int]:
    """(files, how many more were not listed) of the ext4 file system `data`, breadth first."""
    with tempfile.TemporaryDirectory(prefix="seedfw-ext4-") as tmp:
        image = Path(tmp) / "part.ext4"
        image.write_bytes(data)
        files: list[File] = []
        more = 0
        level = ["/"]
        for _ in range(max_depth):
            below = []
            for d in level:
                for i, f in enumerate(_ls(image, d)):
                    if len(files) < max_entries and (i < MAX_PER_DIR or d == "/"):
                        files.append(f)
                        if f.kind == "dir":
                            below.append(f.path)
                    else:
                        more += 1
            level = below
            if not level:
                break
        return files, more
