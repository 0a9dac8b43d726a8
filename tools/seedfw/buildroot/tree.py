"""The pinned Buildroot tree: fetched by sha256, unpacked once into the shared cache, checked before use.

The pin is the tarball `git archive --prefix=buildroot-2025.02.16/` of tag 2025.02.16 (commit
135af563b945), xz-compressed. Sites, in order: the local mirror ($SEEDFW_MIRROR_DIR/buildroot/), then
Buildroot's git repository at the tag, whose commit must be the pinned one before it is archived
(the archive is verified against the same sha256 afterwards, like every download).

"Tampered" has two places to happen: the tarball (refused by its sha256, and deleted from the
cache) and the unpacked tree in the cache, which every Buildroot build shares. For the second, the
unpack records a hash of every file of the tree *as unpacked from the verified tarball*; `check`
recomputes it before each Buildroot run (~0.5 s, only when a Buildroot step actually runs) and
refuses a tree that differs.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import plan, sources, util
from ..errors import SeedfwError
from . import VERSION, cache_root

COMMIT = "135af563b945b8c3d18f8fd370370075b9edb140"
TARBALL = sources.SourceFile(f"buildroot-{VERSION}.tar.xz", 5_372_632,
                             "2d9b55d32b4e5df5253f9fb01b88b74bc0a57a338b9d1d4ac37d145c0697ade2")
GIT_URL = "https://gitlab.com/buildroot.org/buildroot.git"
RECORD = ".seedfw-tree.json"
# Files Python may leave in a tree it runs scripts from; not part of what was pinned.
VOLATILE = ("__pycache__",)


@dataclass(frozen=True)
class GitTagSite(sources.Site):
    """Buildroot's repository at the pinned tag: cloned shallow, the commit checked, then archived
    the way the pinned tarball was made (`git archive --prefix=… | xz`)."""

    url: str = GIT_URL
    label = "git"

    def describe(self) -> str:
        return f"git {self.url} tag {VERSION}"

    def fetch(self, file, dest_dir, log):
        repo = Path(dest_dir) / "repo"
        plan.run_command(["git", "clone", "-q", "--depth", "1", "--branch", VERSION, self.url, repo],
                         log=log)
        head = plan.run_command(["git", "-C", repo, "rev-parse", "HEAD"], log=log).stdout.decode()
        if head.strip() != COMMIT:
            raise SeedfwError(f"tag {VERSION} is commit {head.strip()[:12]}, pinned {COMMIT[:12]}")
        dest = Path(dest_dir) / file.name
        with open(dest, "wb") as out:
            archive = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar",
                                        f"--prefix=buildroot-{VERSION}/", COMMIT],
                                       stdout=subprocess.PIPE)
            xz = subprocess.run(["xz", "-c"], stdin=archive.stdout, stdout=out)
            archive.stdout.close()
            if archive.wait() != 0 or xz.returncode != 0:
                raise SeedfwError(f"git archive of {COMMIT[:12]} failed")
        return dest


def source() -> sources.Source:
    return sources.Source(name="buildroot", version=VERSION, files=(TARBALL,),
                          sites=(sources.MirrorDirSite(), GitTagSite()), archive=TARBALL.name)


def tree_dir() -> Path:
    return cache_root() / f"buildroot-{VERSION}-{TARBALL.sha256[:12]}"


def tree_digest(tree: Path) -> str:
    return plan.tree_hash(tree, exclude=VOLATILE + (RECORD,))


def ensure(log: Path | None = None, progress=print) -> Path:
    """The unpacked pinned tree (fetched and unpacked when absent); not checked (see `check`)."""
    tree = tree_dir()
    if (tree / RECORD).is_file():
        return tree
    with sources.cache_lock(progress):
        if (tree / RECORD).is_file():
            return tree
        archive = sources.fetch(source(), log=log, progress=progress)[TARBALL.name]
        progress(f"unpacking Buildroot {VERSION} into {tree}")
        with util.atomic_dir(tree) as tmp:
            plan.run_command(["tar", "-xf", archive, "--strip-components=1", "-C", tmp], log=log)
            record = {"version": VERSION, "commit": COMMIT, "tarball_sha256": TARBALL.sha256,
                      "tree": tree_digest(tmp), "symbols": sorted(scan_symbols(tmp))}
            (tmp / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return tree


def record(tree: Path) -> dict:
    try:
        return json.loads((tree / RECORD).read_text())
    except (OSError, ValueError):
        raise SeedfwError(f"not an unpacked Buildroot tree of seedfw's (no valid {RECORD}); "
                          "remove it to unpack the pinned tarball again", tree) from None


def check(tree: Path) -> None:
    """Refuse a tree whose files differ from what the pinned tarball unpacked to."""
    want = record(tree)
    if want.get("tarball_sha256") != TARBALL.sha256:
        raise SeedfwError(f"unpacked from another tarball than the pinned {TARBALL.name}", tree)
    got = tree_digest(tree)
    if got != want.get("tree"):
        raise SeedfwError(f"Buildroot {VERSION} tree was modified after it was unpacked from the "
                          f"pinned tarball (tree hash {got[:12]}, expected {want['tree'][:12]}); "
                          "remove it and build again to unpack a clean copy", tree)


_CONFIG = re.compile(r"^\s*(?:menu)?config\s+(BR2_\w+)", re.MULTILINE)


def scan_symbols(tree: Path) -> set[str]:
    """Every BR2_ symbol the tree's Config.in files define."""
    out: set[str] = set()
    for path in tree.rglob("Config.in*"):
        if path.is_file():
            out.update(_CONFIG.findall(path.read_text(errors="replace")))
    return out


def symbols(tree: Path) -> set[str]:
    return set(record(tree).get("symbols", ()))
