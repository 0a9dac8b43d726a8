"""Build once, anywhere: step outputs stored by the step's stamp, restored instead of rebuilt.

A step's stamp (seedfw.plan.stamp_of) already hashes everything that affects its result — its code
version, its inputs (file hashes, the Kconfig symbols it reads, the toolchain's version string) and
the stamps of the steps it depends on — with no absolute path in it. So two output directories, two
checkouts or two machines that compute the same stamp for a step would build the same files, and
the second can take them from the first: Yocto's sstate by task hash, Bazel's action cache.

    key = ArtifactCache.key(stamp, {need: sha256})
    ArtifactCache.restore(step, key, outdir)  -> the files, verified, ready to commit (or None)
    ArtifactCache.save(step, key, outdir, files)

Where the bytes live: a local store (seedfw.cache.local, `~/.cache/seedfw/artifacts`, capped,
least recently used first out) and optionally a remote one on an existing engine (REMOTES: an OCI
registry through ORAS). A local miss asks the remote; a remote hit lands in the local store first.
Developers read the remote (`SEEDFW_CACHE_REMOTE_MODE=ro`, the default), CI also writes it (`rw`).

What is never cached: a step whose outputs are not all regular files inside the output directory
(downloads into the shared cache, trees), one whose part declares `cache=False` (its outputs name
where they were built), and everything when `SEEDFW_ARTIFACT_CACHE=off`.

Never a wrong hit: the key is the stamp; a record names each file's sha256, and every byte restored
is hashed on the way out — a corrupt or vanished blob drops the record and the step runs. A restore
goes through the plan's commit (temporary files renamed together, stamp written last), so an
interrupted restore leaves nothing that looks complete. tests/test_artifact_cache.py flips each
kind of input and asserts a miss.

Settings (environment only: they change where bytes come from, never what is built, so they are not
Kconfig and not part of any stamp):
    SEEDFW_ARTIFACT_CACHE       the local store's directory, or "off" (default <cache>/artifacts)
    SEEDFW_ARTIFACT_CACHE_SIZE  its cap, e.g. 20G (default 20G)
    SEEDFW_CACHE_REMOTE         e.g. oci://127.0.0.1:5000/seedfw/steps (credentials: see REMOTES)
    SEEDFW_CACHE_REMOTE_MODE    ro (default) or rw
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import SeedfwError
from ..registry import Registry
from .local import FORMAT, Corrupt, LocalStore, parse_size
from .local import copy_verified  # noqa: E402  (a name the tests replace)

DEFAULT_CAP = "20G"
KEY_SALT = "seedfw-step-outputs-v1"

# Remote stores by URL scheme (one module each; the class docstring is its reference page).
REMOTES = Registry("artifact store", {
    "oci": "seedfw.cache.oci:OciStore",
})


@dataclass
class Restored:
    """What a restore put in place: {final path: temporary file beside it}, and the bytes."""

    moves: list[tuple[Path, Path]]
    bytes: int
    source: str                     # "local" or the remote's name
    files: int = 0
    log: bytes = b""                # the step's log from the build that made the files

    def log_text(self, step: str, stamp: str) -> bytes:
        """What the step's log says in place of a run: where the files came from, then the log
        of the build that made them."""
        return (f"=== step {step} (stamp {stamp[:16]}): restored {self.files} file(s), "
                f"{self.bytes} bytes, from the {self.source} artifact store; nothing ran here. "
                f"The log of the build that made them follows.\n").encode() + self.log + \
            f"=== end of the restored log of {step}\n".encode()


class ArtifactCache:
    """A local store plus an optional remote (see the module docstring)."""

    def __init__(self, local: LocalStore, remote=None, remote_writes: bool = False):
        self.local = local
        self.remote = remote
        self.remote_writes = remote_writes
        self.notes: list[str] = []      # what went wrong, said once by the build
        self.stored = 0                 # bytes this build put into the local store
        # False: a write-only build (build(store="write")) compiles every step here and still
        # puts what it made in the store — a real compile whose results others may restore.
        self.reads = True

    @staticmethod
    def key(stamp: str, needs: dict | None = None) -> str:
        """The store's key: the stamp, and the sha256 of every file the step reads from other
        steps (`needs`). Why the files too: the stamp covers them through the producing steps'
        stamps, but a producer that is not reproducible (the RKNN compiler) or a need no step
        declares would otherwise pair restored files with inputs they were not built from."""
        text = stamp if not needs else stamp + json.dumps(needs, sort_keys=True)
        return hashlib.sha256(f"{KEY_SALT}\0{text}".encode()).hexdigest()

    def describe(self) -> str:
        text = repr(self.local)
        if self.remote is not None:
            text += f", remote {self.remote!r} ({'read-write' if self.remote_writes else 'read-only'})"
        return text

    # -- what a plan step puts in and takes out --
    def step_key(self, step, stamp: str, outdir: Path) -> str | None:
        """The key of a plan Step as its inputs stand now (before it runs): the stamp plus the
        sha256 of each file it needs; None when the step is never stored."""
        if not step.cache or (step.outputs and cacheable(step.outputs, outdir) is not None):
            return None
        from .. import util
        needs = {}
        for n in step.files:                 # the roles and sources it needs, resolved
            p = Path(n)
            try:
                name = p.resolve().relative_to(Path(outdir).resolve()).as_posix()
            except ValueError:
                name = "source:" + p.name       # a file of the tree: by content, not by path
            needs[name] = util.sha256_file(p) if p.is_file() else None
        return self.key(stamp, needs)

    def save_step(self, step, key: str, outdir: Path) -> int | None:
        """After a step ran: its declared outputs and every file it installed, with this run's
        part of its log. None when they cannot leave this output directory."""
        files = sorted({*map(Path, step.outputs), *step.staged})
        if cacheable(files, outdir) is not None or not all(f.is_file() for f in files):
            return None
        shared = {f"@{label}/" + Path(f).resolve().relative_to(
                      Path(step.shared_roots[label]).resolve()).as_posix(): Path(f)
                  for label, f in step.shared}
        return self.save(step.name, key, outdir, files, _log_of(step), shared)

    # -- restore --
    def restore(self, step_name: str, key: str, outdir: Path, roots=None) -> Restored | None:
        """The files of the step's record, copied out verified to temporary files beside their
        places (a path "@label/…" goes below roots[label], a per-user cache the step writes
        into); None on a miss, or when a blob is corrupt (record and blob deleted)."""
        if not self.reads:
            return None
        roots = roots or {}
        record = self.local.get_record(key)
        source = "local"
        if record is None and self.remote is not None:
            record = self._pull(key)
            source = self.remote.name
        if record is None or record.get("step") != step_name:
            return None
        moves: list[tuple[Path, Path]] = []
        total = 0
        try:
            for f in record["files"]:
                label, _, rel = f["path"][1:].partition("/")
                if f["path"].startswith("@") and label not in roots:
                    return _cleanup(moves)              # not this step's layout: a miss
                final = Path(roots[label]) / rel if f["path"].startswith("@") else \
                    Path(outdir) / f["path"]
                final.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
                os.close(fd)
                moves.append((Path(tmp), final))
                total += copy_verified(self.local.blob_path(f["sha256"]), Path(tmp), f["sha256"],
                                       f["mode"])
        except Corrupt as exc:
            for tmp, _ in moves:
                tmp.unlink(missing_ok=True)
            self.local.drop(key)
            self.local.drop_blob(exc.sha256)
            self.notes.append(f"{step_name}: stored object was corrupt ({exc}); deleted, rebuilt")
            return None
        except BaseException:
            for tmp, _ in moves:
                tmp.unlink(missing_ok=True)
            raise
        log = b""
        if isinstance(record.get("log"), dict):
            try:
                with open(self.local.blob_path(record["log"]["sha256"]), "rb") as f:
                    log = f.read(record["log"]["size"])
            except OSError:
                log = b"(the stored log is missing)\n"
        return Restored(moves, total, source, len(moves), log)

    def _pull(self, key: str) -> dict | None:
        try:
            return self.remote.pull(key, self.local)
        except SeedfwError as exc:
            self.notes.append(f"remote: {exc.message}")
            return None

    # -- save --
    def save(self, step_name: str, key: str, outdir: Path, files, log: bytes = b"",
             shared: dict | None = None) -> int:
        """Store a step's files (after it ran); returns the bytes newly stored locally.
        Best effort: a full disk or a remote that does not answer costs the entry, not the build."""
        outdir = Path(outdir)
        entries = []
        import stat as stat_mod
        from .. import util
        named = {path.relative_to(outdir).as_posix(): path for path in set(Path(p) for p in files)}
        named.update(shared or {})
        for name, path in sorted(named.items()):
            st = path.lstat()
            entries.append({"path": name,
                            "sha256": util.sha256_file(path), "size": st.st_size,
                            "mode": 0o755 if st.st_mode & stat_mod.S_IXUSR else 0o644})
        record = {"format": FORMAT, "key": key, "step": step_name, "files": entries}
        stored = 0
        try:
            if log:
                record["log"] = {"sha256": hashlib.sha256(log).hexdigest(), "size": len(log)}
                self.local.put_bytes(log, record["log"]["sha256"])
            for e in entries:
                if self.local.put_blob(named[e["path"]], e["sha256"], e["size"]):
                    stored += e["size"]
            self.local.put_record(record["key"], record)
            self.stored += stored
        except (OSError, Corrupt) as exc:
            self.notes.append(f"{step_name}: not stored ({exc})")
            return stored
        if self.remote is not None and self.remote_writes:
            try:
                self.remote.push(record, self.local)
            except SeedfwError as exc:
                self.notes.append(f"remote: {exc.message}")
        return stored

    def trim(self) -> int:
        """Keep the local store under its cap; only after this build stored something (a no-op
        build must not walk the store)."""
        if not self.stored:
            return 0
        try:
            return self.local.trim()
        except (OSError, SeedfwError):
            return 0


LOG_KEPT = 4 << 20          # bytes of a step's log kept with its outputs (the last ones)


def _cleanup(moves) -> None:
    for tmp, _ in moves:
        tmp.unlink(missing_ok=True)
    return None


def _log_of(step) -> bytes:
    """This run's part of the step's log (what a restore shows in its place)."""
    if step.log_start is None or step.log is None:
        return b""
    try:
        with open(step.log, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(step.log_start, end - LOG_KEPT))
            return f.read(LOG_KEPT)
    except OSError:
        return b""


def cacheable(outputs, outdir: Path) -> str | None:
    """None when these files can be stored and restored elsewhere; else why not."""
    outdir = Path(outdir).resolve()
    if not outputs:
        return "declares no outputs"
    for p in outputs:
        p = Path(p)
        try:
            Path(os.path.abspath(p)).relative_to(outdir)
        except ValueError:
            return f"{p.name} is outside the output directory"
        if p.is_symlink() or (p.exists() and not p.is_file()):
            return f"{p.name} is not a regular file"
    return None


def from_environment() -> ArtifactCache | None:
    """The cache the environment asks for; None when SEEDFW_ARTIFACT_CACHE=off."""
    setting = os.environ.get("SEEDFW_ARTIFACT_CACHE", "").strip()
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    root = Path(os.path.expanduser(setting)).resolve() if setting else paths.cache_dir() / "artifacts"
    cap = parse_size(os.environ.get("SEEDFW_ARTIFACT_CACHE_SIZE", "") or DEFAULT_CAP,
                     "SEEDFW_ARTIFACT_CACHE_SIZE")
    remote = None
    url = os.environ.get("SEEDFW_CACHE_REMOTE", "").strip()
    mode = os.environ.get("SEEDFW_CACHE_REMOTE_MODE", "ro").strip() or "ro"
    if mode not in ("ro", "rw"):
        raise SeedfwError(f"'{mode}' is not ro or rw", None, "SEEDFW_CACHE_REMOTE_MODE")
    if url:
        scheme = url.partition("://")[0]
        if scheme not in REMOTES:
            raise SeedfwError(f"no artifact store for '{scheme}://' (known: "
                              f"{', '.join(s + '://' for s in REMOTES)})", None, "SEEDFW_CACHE_REMOTE")
        remote = REMOTES.get(scheme, field="SEEDFW_CACHE_REMOTE").from_url(url)
    return ArtifactCache(LocalStore(root, cap), remote, remote_writes=(mode == "rw"))


__all__ = ["ArtifactCache", "LocalStore", "REMOTES", "Restored", "cacheable", "from_environment"]


def summary(outdir) -> dict | None:
    """What the artifact store did in the last build of `outdir` (its logs/steps.jsonl, read
    through the door: a handed-over output directory is outside input), or None without one:
    {steps, ran, restored, skipped, failed, restored_bytes, stored_bytes, hit_rate (restored /
    (restored + ran), None when neither), sources {local|oci: steps}}."""
    from .. import reading
    path = Path(outdir) / "logs" / "steps.jsonl"
    if not path.is_file():
        return None
    text = reading.read_text(path, "json")
    doc = {"steps": 0, "ran": 0, "restored": 0, "skipped": 0, "failed": 0, "interrupted": 0,
           "restored_bytes": 0, "stored_bytes": 0, "sources": {}}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        rec = reading.loads_json(line, path, f"line {n}")
        action = rec.get("action") if isinstance(rec, dict) else None
        if action not in ("ran", "restored", "skipped", "failed", "interrupted"):
            raise SeedfwError(f"line {n}: not a step record", path, "action")
        doc["steps"] += 1
        doc[action] += 1
        for key, total in (("bytes", "restored_bytes"), ("stored", "stored_bytes")):
            value = rec.get(key, 0)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise SeedfwError(f"line {n}: not a byte count", path, key)
            doc[total] += value
        if action == "restored":
            source = rec.get("source")
            if source not in ("local", *REMOTES.names()):
                raise SeedfwError(f"line {n}: unknown store", path, "source")
            doc["sources"][source] = doc["sources"].get(source, 0) + 1
    asked = doc["restored"] + doc["ran"]
    doc["hit_rate"] = round(doc["restored"] / asked, 4) if asked else None
    return doc
