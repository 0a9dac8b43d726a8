"""Package sources: sha256-pinned files, the sites they come from, the shared download cache, extract + patch.

A `Source` names a version and its files (name, size, sha256) and lists the sites to try, in order.
Every site has the same small interface (`fetch(file, dest_dir, log) -> Path`), so adding a site is one
class. What we keep from Buildroot:
  * downloads land in one shared cache (`paths.download_dir()`, SEEDFW_DL_DIR) reused by every output
    directory, one folder per source;
  * a file whose sha256 does not match its pin is deleted and the build stops with an error naming the
    file, the expected and the actual hash (we never build from bytes we did not pin);
  * a cached file is re-verified whenever it is used, so a corrupted cache entry is detected and
    fetched again instead of silently poisoning a build.

Mirrors are never written into the tree: the Debian site reads the archive URIs from the machine's own
apt configuration at run time and keeps a *private* apt state under the download cache, so the
machine's apt configuration is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import paths, util
from ..plan import run_command as _run   # stoppable on SIGINT, streamed to the step's log
from ..errors import SeedfwError

# The machine's own apt sources; read at run time, never copied into the tree.
APT_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SourceFile:
    """One pinned file: its name in the cache, its exact size and sha256."""

    name: str
    size: int
    sha256: str


class Site:
    """Somewhere a pinned file may be fetched from. Subclasses implement `fetch`."""

    label = "site"

    def fetch(self, file: SourceFile, dest_dir: Path, log: Path | None) -> Path:
        """Put `file` into `dest_dir` and return its path; raise SeedfwError when unavailable."""
        raise NotImplementedError

    def describe(self) -> str:
        return self.label


@dataclass(frozen=True)
class UrlSite(Site):
    """A plain HTTP(S) URL; `{name}` in the template is replaced by the file name."""

    template: str
    timeout: float = 15.0
    label = "upstream"

    def describe(self) -> str:
        return f"upstream {self.template}"

    def fetch(self, file, dest_dir, log):
        url = self.template.format(name=file.name)
        dest = dest_dir / file.name
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as resp, open(dest, "wb") as out:
                shutil.copyfileobj(resp, out, 1 << 20)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SeedfwError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from None
        return dest


@dataclass(frozen=True)
class DebianSourceSite(Site):
    """A Debian source package, fetched with `apt-get source --download-only` through a private apt state.

    Why apt and not a URL: the pool path and the mirror differ per machine; apt knows both. The private
    state lives in `<download cache>/.apt/<suite>/` (sources part, lists, cache), built from the URIs of
    the machine's own `debian.sources`; `Dir::Etc::SourceList=/dev/null` keeps the system lists out.
    """

    package: str
    version: str
    suite: str = "trixie"
    label = "debian"

    def describe(self) -> str:
        return f"Debian source package {self.package}={self.version} ({self.suite})"

    def fetch(self, file, dest_dir, log):
        state = paths.download_dir() / ".apt" / self.suite
        # One `apt-get source` brings every file of the source package; keep them in a staging
        # directory so the package's other pinned files do not cost a second download.
        staging = state / "source" / f"{self.package}_{self.version}"
        if not (staging / file.name).is_file():
            options = self._private_state(state)
            _run(["apt-get", *options, "update", "-qq"], log=log)
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir(parents=True)
            _run(["apt-get", *options, "source", "--download-only",
                      f"{self.package}={self.version}"], cwd=staging, log=log)
        got = staging / file.name
        if not got.is_file():
            raise SeedfwError(f"{self.describe()} has no file {file.name}")
        dest = dest_dir / file.name
        os.replace(got, dest)           # verified by the caller against the pin
        return dest

    def _private_state(self, state: Path) -> list[str]:
        return private_apt_state(state, "deb-src", self.suite)


def private_apt_state(state: Path, types: str, suites: str, architecture: str | None = None) -> list[str]:
    """apt options for a private state under `state` (sources part, lists, cache) built from the
    machine's own archive URIs: `Dir::Etc::SourceList=/dev/null` keeps the system lists out, and
    nothing of the machine's apt configuration is written. `architecture` (e.g. arm64) also
    ignores the machine's dpkg status, so packages of another architecture can be downloaded."""
    parts = state / "parts"
    for d in (parts, state / "lists" / "partial", state / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    arch_line = f"Architectures: {architecture}\n" if architecture else ""
    name = "src" if types == "deb-src" else architecture or types
    util.write_text(parts / f"seedfw-{name}.sources",
                    f"Types: {types}\nURIs: {' '.join(debian_uris())}\nSuites: {suites}\n"
                    f"Components: main\n{arch_line}Signed-By: {DEBIAN_KEYRING}\n")
    options = []
    if architecture:
        options += ["-o", f"APT::Architecture={architecture}",
                    "-o", f"APT::Architectures={architecture}", "-o", "Dir::State::status=/dev/null"]
    return options + ["-o", "Dir::Etc::SourceList=/dev/null",
                      "-o", f"Dir::Etc::SourceParts={parts}",
                      "-o", f"Dir::State::Lists={state / 'lists'}",
                      "-o", f"Dir::Cache={state / 'cache'}"]


def debian_uris(sources: Path = APT_SOURCES) -> list[str]:
    """The main archive URIs of the machine's deb822 apt sources (security archives skipped)."""
    try:
        text = sources.read_text()
    except OSError as exc:
        raise SeedfwError(f"cannot read the machine's apt sources: {exc.strerror}", sources) from None
    uris = []
    for m in re.finditer(r"^URIs:\s*(.+)$", text, re.MULTILINE):
        for uri in m.group(1).split():
            if "security" not in uri and uri not in uris:
                uris.append(uri)
    if not uris:
        raise SeedfwError("no 'URIs:' line for the Debian archive", sources, "URIs")
    return uris


class NotInMirror(SeedfwError):
    """A mirror directory does not hold the file (or none is set): the normal case on a machine
    that fetches from the network, so `_fetch_one` says it once, in the line that names the
    next site, and never as a failure."""


@dataclass(frozen=True)
class MirrorDirSite(Site):
    """A local directory holding the files by name (default: $SEEDFW_MIRROR_DIR); for offline machines.

    A file is looked up at the top of the directory, then in its per-origin folders (`SUBDIRS`,
    the layout of the shared mirror: rkbin blobs, the Buildroot tree, Buildroot source overrides,
    Debian packages), so one SEEDFW_MIRROR_DIR serves every package.
    """

    directory: str | None = None
    label = "mirror"
    SUBDIRS = ("rkbin", "buildroot", "buildroot-src", "debian")

    def root(self) -> Path | None:
        return Path(os.path.abspath(self.directory)) if self.directory else paths.mirror_dir()

    def describe(self) -> str:
        return f"local mirror {self.root() or '(SEEDFW_MIRROR_DIR not set)'}"

    def fetch(self, file, dest_dir, log):
        root = self.root()
        if root is None:
            raise NotInMirror("SEEDFW_MIRROR_DIR is not set")
        src = next((d / file.name for d in (root, *(root / s for s in self.SUBDIRS))
                    if (d / file.name).is_file()), root / file.name)
        if not src.is_file():
            raise NotInMirror(f"{src} does not exist (nor in {', '.join(self.SUBDIRS)}/)")
        dest = dest_dir / file.name
        shutil.copyfile(src, dest)
        return dest


@dataclass(frozen=True)
class Source:
    """A versioned source: pinned files, the sites to try (in order), and which file is the archive."""

    name: str
    version: str
    files: tuple[SourceFile, ...]
    sites: tuple[Site, ...]
    archive: str                                  # the file `extract` unpacks
    strip_components: int = 1
    patches: tuple[Path, ...] = field(default=())  # applied in order after extraction

    def cache_dir(self) -> Path:
        return paths.download_dir() / self.name

    def file(self, name: str) -> SourceFile:
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(name)

    def pins(self) -> dict:
        """What identifies this source for stamps: the pins (not the bytes: those are verified)."""
        return {"name": self.name, "version": self.version,
                "files": {f.name: f.sha256 for f in self.files}}


def verify(path: Path, file: SourceFile) -> None:
    """Check a file against its pin; on mismatch delete it and raise (Buildroot's behaviour)."""
    actual = util.sha256_file(path)
    if actual != file.sha256:
        path.unlink(missing_ok=True)
        raise SeedfwError(f"sha256 mismatch: expected {file.sha256}, got {actual} (file deleted)", path)


def cached_ok(path: Path, file: SourceFile) -> bool:
    """True when a cached file is present and intact (size first: cheap; then the full hash)."""
    try:
        if path.stat().st_size != file.size:
            return False
    except FileNotFoundError:
        return False
    return util.sha256_file(path) == file.sha256


def cache_lock(progress: Progress = print):
    """The download cache's lock: builds of other boards or output dirs share the cache (and the
    private apt state in it, which apt itself refuses to share: 'Unable to lock directory'), so
    whoever fetches or unpacks into it holds this; the others say for whom they wait, and wait."""
    dl = paths.download_dir()
    return util.file_lock(dl / ".lock", f"the download cache {dl}", say=progress)


def fetch(source: Source, log: Path | None = None, progress: Progress = print,
          fetched: list | None = None) -> dict[str, Path]:
    """Make every file of `source` present and verified in the cache; return name -> path.
    `fetched`, when given, gets the name of every file that had to be downloaded (none: all
    were in the cache, intact)."""
    with cache_lock(progress):
        return _fetch_all(source, log, progress, fetched if fetched is not None else [])


def fetch_step(step, source: Source, progress: Progress = print) -> dict[str, Path]:
    """A plan step's fetch: `fetch`, and the step says it reused the download cache when
    nothing had to be downloaded (seedfw.plan.Step.reused)."""
    fetched: list = []
    files = fetch(source, log=step.log, progress=progress, fetched=fetched)
    if not fetched:
        step.reused("the download cache (sha256 verified)")
    return files


def _fetch_all(source: Source, log: Path | None, progress: Progress, fetched: list) -> dict[str, Path]:
    out = {}
    cache = source.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for file in source.files:
        path = cache / file.name
        if path.exists():
            if cached_ok(path, file):
                out[file.name] = path
                continue
            progress(f"{file.name}: cached copy is corrupted (sha256 or size differs); fetching again")
            path.unlink()
        out[file.name] = _fetch_one(source, file, cache, log, progress)
        fetched.append(file.name)
    return out


def _fetch_one(source: Source, file: SourceFile, cache: Path, log, progress: Progress) -> Path:
    failures = []
    missed = ""         # "not in the local mirror DIR; ": said with the next site, not as a failure
    for site in source.sites:
        mirror = isinstance(site, MirrorDirSite)
        if not mirror:
            progress(f"{file.name}: {missed}fetching from {site.describe()}")
        started = time.monotonic()
        # Fetch into a private temporary directory so a half-downloaded file never sits in the cache.
        with tempfile.TemporaryDirectory(dir=cache, prefix=f".{file.name}.") as tmp:
            try:
                got = site.fetch(file, Path(tmp), log)
            except NotInMirror as exc:
                failures.append(f"{site.label}: {exc.message}")
                if site.root() is not None:          # no mirror set up: nothing worth saying
                    missed = f"not in the local mirror {site.root()}; "
                continue
            except SeedfwError as exc:
                failures.append(f"{site.label}: {exc.message}")
                progress(f"{file.name}: {site.label} failed: {exc.message}")
                continue
            dest = cache / file.name
            os.replace(got, dest)
        verify(dest, file)          # stops the build on a mismatch; never tries to "fix" a pin
        size = dest.stat().st_size
        progress(f"{file.name}: {size:,} bytes from {site.label} in "
                 f"{time.monotonic() - started:.1f} s, sha256 ok")
        return dest
    raise SeedfwError(f"could not fetch {file.name} from any site ({'; '.join(failures)})",
                      source.cache_dir() / file.name)


def extract(source: Source, dest: Path, log: Path | None = None, progress: Progress = print) -> Path:
    """Unpack the (re-verified) archive into `dest` and apply the patch series, each logged in order.

    Unpacks next to `dest` and renames at the end, so an interrupted extract never leaves a tree that
    looks complete.
    """
    files = fetch(source, log=log, progress=progress)
    archive = files[source.archive]
    dest = Path(dest)
    with util.atomic_dir(dest) as tmp:
        _run(["tar", "-xf", archive, f"--strip-components={source.strip_components}",
              "-C", tmp], log=log)
        for patch in source.patches:
            progress(f"applying patch {patch.name}")
            if log is not None:
                with open(log, "a") as f:
                    f.write(f"=== patch {patch.name} sha256 {util.sha256_file(patch)}\n")
            _run(["patch", "-p1", "--forward", "--batch", "-i", patch], cwd=tmp, log=log)
    return dest
