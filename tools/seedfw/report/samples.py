"""Real third-party ELFs for tests and benchmarks: Debian Architecture: all packages, pinned.

Why these: they are real firmware/library ELFs built by someone else's toolchain (the odd
cases our own builds never produce), they download with the machine's own apt configuration
(`apt-get download`, no mirror name written anywhere), and Architecture: all means the same
bytes on every host. Each .deb is pinned by version and sha256; a mismatch is an error, never a
silent re-download. Extracted once into the shared download cache (~/.cache/seedfw/dl).

  u-boot-qemu           usr/lib/u-boot/qemu_arm64/uboot.elf — stripped, with a `.hash`
                        section whose sh_link is 0 (pyelftools' iter_sections() raises on it)
  libasan8-arm64-cross  usr/aarch64-linux-gnu/lib/libasan.so.8.0.0 — 8 MB AArch64 shared
                        object with .symtab (5 k sized symbols) and debug info: the largest
                        unstripped AArch64 ELF in an Architecture: all package we found
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from ..paths import download_dir

PINS = {
    "u-boot-qemu": ("2023.01+dfsg-2+deb12u3",
                    "02a14f0876b76c0d7d7934e9b83a77515c5bdbad1e00af84c445bfeb1e6b8665"),
    "libasan8-arm64-cross": ("12.2.0-14cross1",
                             "bf00a5bb8de76c68bb5e710b3734808286e1e9ca86c0bd136ed3a5077c46d949"),
}
UBOOT_ARM64_ELF = ("u-boot-qemu", "usr/lib/u-boot/qemu_arm64/uboot.elf")
LIBASAN_ELF = ("libasan8-arm64-cross", "usr/aarch64-linux-gnu/lib/libasan.so.8.0.0")


def fetch_deb(package: str, cache: Path | None = None) -> Path:
    """Download (once) the pinned .deb of `package`, check its sha256, extract it; return the
    extraction directory. Raises SeedfwError when the download is impossible or the hash
    differs (callers in tests turn that into a skip with the message)."""
    version, sha256 = PINS[package]
    cache = Path(cache) if cache else download_dir()
    deb = cache / f"{package}_{version.replace(':', '%3a')}_all.deb"
    tree = cache / f"{package}_{version}"
    if (tree / ".extracted").is_file():
        return tree
    if not deb.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            proc = subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=tmp,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            got = list(Path(tmp).glob("*.deb"))
            if proc.returncode != 0 or len(got) != 1:
                tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise SeedfwError(f"apt-get download {package}={version} failed: {tail[0]}")
            shutil.move(str(got[0]), deb)
    actual = util.sha256_file(deb)
    if actual != sha256:
        raise SeedfwError(f"sha256 {actual} differs from the pinned {sha256}", deb)
    if tree.exists():
        shutil.rmtree(tree)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        util.run(["dpkg-deb", "-x", deb, tmp])
        Path(tmp, ".extracted").write_text(sha256 + "\n")
        shutil.move(tmp, tree)
        Path(tmp).mkdir()             # TemporaryDirectory cleans up the name it created
    return tree


def sample_elf(which: tuple[str, str], cache: Path | None = None) -> Path:
    package, member = which
    path = fetch_deb(package, cache) / member
    if not path.is_file():
        raise SeedfwError(f"{member} missing from the package", fetch_deb(package, cache))
    return path
