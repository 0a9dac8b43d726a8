"""The local step-output store: content-addressed blobs plus one small record per step stamp.

Layout (Bazel's remote cache keeps the same two halves, `/ac/` and `/cas/`):

    <root>/ac/<key[:2]>/<key>.json     what a step with that stamp produced: its files, each by
                                       path relative to the output directory, sha256, size, mode
    <root>/cas/<sha[:2]>/<sha>         the bytes of one file, named by their sha256
    <root>/.lock                       held only while trimming (see `trim`)

Why records and blobs apart: identical files (the same BL31 in two boards' outputs, the same
rootfs in a variant build) are stored once, and a record is tiny, so a lookup reads a few hundred
bytes before deciding to copy anything.

Safe under concurrent builds without a lock for the common path: every file enters the store as a
temporary file in the same directory and is renamed into place, blob first and the record last, so
a reader sees either nothing or a complete record whose blobs were all in place when it was
written. A blob evicted or corrupted after that is found on restore (its sha256 is checked while it
is copied out); the record is then deleted and the step simply runs. Trimming (LRU by the record's
mtime, which a hit refreshes) takes the store's flock so two trims do not race; a build that is
restoring at that moment at worst loses a blob and rebuilds the step.

No NFS caveat is papered over: flock and rename are what the store relies on, and on a file system
where they are not atomic (some NFS setups) the sha256 check on restore still prevents a wrong
file, at the price of rebuilds.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path

from .. import util
from ..errors import SeedfwError

CHUNK = 1 << 20
RECORD_CAP = 1 << 20          # a record lists a step's files: a few KiB; larger is not ours
FORMAT = 1


class Corrupt(Exception):
    """A blob whose bytes no longer match its name (or that vanished): the record is dropped."""

    def __init__(self, sha256: str, message: str):
        super().__init__(message)
        self.sha256 = sha256


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def copy_verified(src: Path, dst: Path, sha256: str, mode: int = 0o644) -> int:
    """Copy `src` to `dst` (a new file) while hashing it; Corrupt when the bytes are not `sha256`.
    Returns the bytes copied. Why not a hard link: the output directory's files are the user's to
    change (a test flips a byte of an image), and a linked blob would change with them."""
    import hashlib
    h = hashlib.sha256()
    n = 0
    try:
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            try:                        # a reflink (btrfs, xfs) shares extents: no bytes copied
                import fcntl
                fcntl.ioctl(fo.fileno(), 0x40049409, fi.fileno())     # FICLONE
            except OSError:
                pass
            else:
                fo.seek(0, os.SEEK_END)
            fi.seek(0)
            for chunk in iter(lambda: fi.read(CHUNK), b""):
                h.update(chunk)
                n += len(chunk)
                if fo.tell() < n:       # not reflinked: write what we read
                    fo.write(chunk)
    except FileNotFoundError:
        raise Corrupt(sha256, f"blob {sha256[:16]} is missing") from None
    if h.hexdigest() != sha256:
        raise Corrupt(sha256, f"blob {sha256[:16]} has sha256 {h.hexdigest()[:16]}")
    os.chmod(dst, mode)
    return n


class LocalStore:
    """A directory of records and blobs (see the module docstring). `cap`: bytes kept by `trim`."""

    name = "local"

    def __init__(self, root: Path, cap: int):
        self.root = Path(root)
        self.cap = cap

    def __repr__(self) -> str:
        return f"local store {util_home(self.root)}"

    # -- records --
    def _record_path(self, key: str) -> Path:
        return self.root / "ac" / key[:2] / f"{key}.json"

    def blob_path(self, sha256: str) -> Path:
        return self.root / "cas" / sha256[:2] / sha256

    def get_record(self, key: str) -> dict | None:
        path = self._record_path(key)
        try:
            with open(path, "rb") as f:
                raw = f.read(RECORD_CAP + 1)
        except OSError:
            return None
        try:
            record = json.loads(raw) if len(raw) <= RECORD_CAP else None
        except ValueError:
            record = None
        if not _valid(record, key):
            path.unlink(missing_ok=True)        # a record we cannot trust is no record
            return None
        try:
            os.utime(path)                      # LRU: a hit keeps it
        except OSError:
            pass
        return record

    def drop(self, key: str) -> None:
        self._record_path(key).unlink(missing_ok=True)

    def drop_blob(self, sha256: str) -> None:
        self.blob_path(sha256).unlink(missing_ok=True)

    def has_blob(self, sha256: str, size: int) -> bool:
        try:
            return self.blob_path(sha256).stat().st_size == size
        except OSError:
            return False

    # -- writing --
    def put_blob(self, src: Path, sha256: str, size: int) -> bool:
        """Store `src` under its sha256 (already computed by the caller); False if it was there."""
        dst = self.blob_path(sha256)
        if self.has_blob(sha256, size):
            return False
        dst.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=dst.parent)
        os.close(fd)
        try:
            copy_verified(src, Path(tmp), sha256, 0o444)
            os.replace(tmp, dst)
        except Corrupt:
            # the file changed while we stored it: not an error of the build, just no entry
            Path(tmp).unlink(missing_ok=True)
            raise
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def put_bytes(self, data: bytes, sha256: str) -> None:
        """A small blob from memory (a step's log)."""
        if not self.has_blob(sha256, len(data)):
            _atomic_write(self.blob_path(sha256), data)

    def put_record(self, key: str, record: dict) -> None:
        _atomic_write(self._record_path(key), json.dumps(record, sort_keys=True).encode())

    # -- size --
    def usage(self) -> tuple[int, int, int]:
        """(records, blobs, blob bytes)."""
        records = sum(1 for _ in (self.root / "ac").glob("*/*.json"))
        blobs = 0
        size = 0
        for p in (self.root / "cas").glob("*/*"):
            try:
                size += p.stat().st_size
                blobs += 1
            except OSError:
                pass
        return records, blobs, size

    def trim(self) -> int:
        """Keep the store under its cap: drop the least recently used records until the blobs
        they alone referenced fit, then those blobs. Returns the bytes freed."""
        if not (self.root / "cas").is_dir():
            return 0
        with util.file_lock(self.root / ".lock", f"artifact store {util_home(self.root)}"):
            blobs = {}
            for p in (self.root / "cas").glob("*/*"):
                if p.name.startswith("."):
                    # a temporary file left by a killed writer: an hour is far past any copy
                    _drop_stale(p)
                    continue
                try:
                    blobs[p.name] = p.stat().st_size
                except OSError:
                    pass
            total = sum(blobs.values())
            if total <= self.cap:
                return 0
            records = []
            for p in (self.root / "ac").glob("*/*.json"):
                try:
                    records.append((p.stat().st_mtime, p))
                except OSError:
                    pass
            records.sort()
            refs: dict[str, int] = {}
            files_of = {}
            for _, p in records:
                try:
                    doc = json.loads(p.read_bytes())
                    shas = [f["sha256"] for f in doc["files"]]
                    if isinstance(doc.get("log"), dict):
                        shas.append(doc["log"]["sha256"])
                except (OSError, ValueError, KeyError, TypeError):
                    shas = []
                files_of[p] = shas
                for s in shas:
                    refs[s] = refs.get(s, 0) + 1
            freed = 0
            target = int(self.cap * 0.8)         # trim below the cap, not to it: fewer trims
            for s in set(blobs) - set(refs):     # blobs no record names (a record was dropped)
                freed += blobs.get(s, 0)
                self.drop_blob(s)
            for _, p in records:
                if total - freed <= target:
                    break
                p.unlink(missing_ok=True)
                for s in files_of[p]:
                    refs[s] -= 1
                    if refs[s] == 0 and s in blobs:
                        freed += blobs[s]
                        self.drop_blob(s)
            return freed


def _drop_stale(path: Path) -> None:
    try:
        if time.time() - path.stat().st_mtime > 3600:
            path.unlink()
    except OSError:
        pass


def _valid(record, key: str) -> bool:
    """A record of ours for this key: files with relative paths inside the output directory."""
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
        return False
    log = record.get("log")
    if log is not None and not (isinstance(log, dict) and _is_sha256(log.get("sha256"))
                                and isinstance(log.get("size"), int) and 0 <= log["size"] <= 64 << 20):
        return False
    files = record.get("files")
    if not isinstance(files, list) or not files:
        return False
    for f in files:
        if not isinstance(f, dict):
            return False
        path, sha, size, mode = f.get("path"), f.get("sha256"), f.get("size"), f.get("mode")
        if not (isinstance(path, str) and path and not path.startswith("/")
                and ".." not in Path(path).parts and "\0" not in path):
            return False
        if path.startswith("@") and not re.fullmatch(r"@[a-z][a-z0-9-]*/[^/].*", path):
            return False
        if not _is_sha256(sha):
            return False
        if not (isinstance(size, int) and size >= 0 and mode in (0o644, 0o755)):
            return False
    return True


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def util_home(path: Path) -> str:
    """A store path as shown: under the home directory as ~/… (no home path in a log or report)."""
    try:
        return "~/" + Path(path).resolve().relative_to(Path.home().resolve()).as_posix()
    except ValueError:
        return str(path)


def parse_size(text: str, source: str) -> int:
    """'20G', '512M', '1000000' → bytes; one error line naming the variable otherwise."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    num, unit = (t[:-1], t[-1]) if t and t[-1] in units else (t, "")
    if not num.isascii() or not num.isdigit() or len(num) > 15:
        raise SeedfwError(f"'{text}' is not a size (e.g. 20G, 512M)", None, source)
    return int(num) * units[unit]


__all__ = ["LocalStore", "Corrupt", "copy_verified", "parse_size"]


def hashlib_sha256(data: bytes) -> str:
    """sha256 hex of bytes (the blob name of `data`)."""
    import hashlib
    return hashlib.sha256(data).hexdigest()
