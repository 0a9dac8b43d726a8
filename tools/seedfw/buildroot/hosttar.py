"""GNU tar >= 1.35 for Buildroot, built from Debian's source as a host tool (once, in the cache).

Why: Buildroot 2025.02 requires tar >= 1.35 (1.35 changed how device numbers are stored, which
its reproducible archives rely on; support/dependencies/check-host-tar.sh) and bookworm ships 1.34.
Buildroot would build its own host-tar, but from a `.cpio.gz` no archive here has byte-identical.
Debian trixie's `tar_1.35+dfsg` orig is pinned below; the build is keyed by those pins and the
host compiler, and only the `tar` binary's directory is put first on Buildroot's PATH.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import plan, sources, util
from ..sources.debian_pool import DebianPoolSite
from . import cache_root

VERSION = "1.35"
DEBIAN_VERSION = "1.35+dfsg-3.1"
FILES = (
    sources.SourceFile("tar_1.35+dfsg.orig.tar.xz", 2_111_608,
                       "9ae57e981c1e73c0eebc2b26c9b0c4497fe310ef1d516ea430efb5470b71f7a8"),
    # Debian's packaging, pinned so the source package is accounted for; its patches are not needed.
    sources.SourceFile("tar_1.35+dfsg-3.1.debian.tar.xz", 21_540,
                       "0d0278034b82ed84dce04a461879b6e1871e4cb416a0ff04d3d35ff05fc30a53"),
)
BUILD_VERSION = "1"


def source() -> sources.Source:
    return sources.Source(name="tar", version=VERSION, files=FILES,
                          sites=(sources.MirrorDirSite(), DebianPoolSite("tar", DEBIAN_VERSION)),
                          archive=FILES[0].name)


def key_doc() -> dict:
    return {"version": BUILD_VERSION, "pins": source().pins(),
            "host_cc": plan.toolchain_version("gcc", cache_root())}


def install_dir() -> Path:
    key = util.sha256_bytes(json.dumps(key_doc(), sort_keys=True).encode())[:12]
    return cache_root() / f"host-tar-{VERSION}-{key}"


def bin_dir() -> Path:
    """The directory to put first on Buildroot's PATH (holds only `tar`)."""
    return install_dir() / "bin"


def prepare(log: Path | None = None, progress=print, jobs: int = 0) -> Path:
    """Build tar 1.35 when the cache has none for these pins; return its bin directory."""
    final = install_dir()
    if (final / "bin" / "tar").is_file():
        return final / "bin"
    with util.file_lock(cache_root() / f".{final.name}.lock", f"the host tar build {final}",
                        say=progress):
        if (final / "bin" / "tar").is_file():
            return final / "bin"
        files = sources.fetch(source(), log=log, progress=progress)
        progress(f"building host tar {VERSION} from Debian's {FILES[0].name} (about 70 s)")
        work = cache_root() / f".{final.name}.building"
        if work.exists():
            import shutil
            shutil.rmtree(work)
        (work / "src").mkdir(parents=True)
        plan.run_command(["tar", "-xf", files[FILES[0].name], "--strip-components=1",
                          "-C", work / "src"], log=log)
        # FORCE_UNSAFE_CONFIGURE: tar's configure refuses to run as root (the CI runs as root).
        env = {"FORCE_UNSAFE_CONFIGURE": "1", "LC_ALL": "C",
               "SOURCE_DATE_EPOCH": str(util.source_date_epoch())}
        plan.run_command(["./configure", f"--prefix={final}", "--disable-nls", "--quiet"],
                         cwd=work / "src", env=env, log=log)
        plan.run_command(["make", f"-j{jobs or os.cpu_count() or 1}"], cwd=work / "src", env=env,
                         log=log)
        with util.atomic_dir(final) as tmp:
            (tmp / "bin").mkdir()
            util.copy_file(work / "src" / "src" / "tar", tmp / "bin" / "tar")
            (tmp / "bin" / "tar").chmod(0o755)
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return final / "bin"
