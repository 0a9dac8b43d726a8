"""Pinned Debian binary packages (Architecture: all) that hold real third-party ELFs.

Why these exist: tests and benchmarks need firmware built by someone else's toolchain (the odd
cases our own builds never produce), and dictionary training needs images that are not the one
being compressed. Architecture: all packages have the same bytes on every host, and
`apt-get download` fetches them through the machine's own apt configuration, so no mirror is
named anywhere. Each .deb is fetched and verified by seedfw.sources like any other pinned file,
then unpacked once next to it in the download cache.

  UBOOT_QEMU      usr/lib/u-boot/<board>/uboot.elf — stripped, with a `.hash` section whose
                  sh_link is 0 (pyelftools' iter_sections() raises on it)
  LIBASAN_ARM64   usr/aarch64-linux-gnu/lib/libasan.so.8.0.0 — 8 MB AArch64 shared object with
                  .symtab (5 k sized symbols): the largest unstripped AArch64 ELF we found in one
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import sources, util
from ..errors import SeedfwError


@dataclass(frozen=True)
class AptBinarySite(sources.Site):
    """A Debian binary package fetched with `apt-get download NAME=VERSION` (machine's apt config)."""

    package: str
    version: str
    label = "debian-binary"

    def describe(self) -> str:
        return f"Debian binary package {self.package}={self.version}"

    def fetch(self, file, dest_dir, log):
        util.run(["apt-get", "download", f"{self.package}={self.version}"], cwd=dest_dir, log=log)
        got = Path(dest_dir) / file.name
        if not got.is_file():
            # apt escapes ':' and '+' differently in some versions; take the one .deb it wrote
            debs = list(Path(dest_dir).glob("*.deb"))
            if len(debs) != 1:
                raise SeedfwError(f"{self.describe()}: apt-get download produced no {file.name}")
            os.replace(debs[0], got)
        return got


@dataclass(frozen=True)
class Deb:
    package: str
    version: str
    size: int
    sha256: str

    @property
    def file(self) -> sources.SourceFile:
        return sources.SourceFile(name=f"{self.package}_{self.version}_all.deb", size=self.size,
                                  sha256=self.sha256)

    @property
    def source(self) -> sources.Source:
        return sources.Source(name=self.package, version=self.version, files=(self.file,),
                              sites=(AptBinarySite(self.package, self.version),),
                              archive=self.file.name)


UBOOT_QEMU = Deb("u-boot-qemu", "2023.01+dfsg-2+deb12u3", 1830604,
                 "02a14f0876b76c0d7d7934e9b83a77515c5bdbad1e00af84c445bfeb1e6b8665")
LIBASAN_ARM64 = Deb("libasan8-arm64-cross", "12.2.0-14cross1", 2096868,
                    "bf00a5bb8de76c68bb5e710b3734808286e1e9ca86c0bd136ed3a5077c46d949")


def extract(deb: Deb, log: Path | None = None, progress=lambda s: None) -> Path:
    """Fetch (cached, verified) and unpack a pinned .deb; return the unpacked tree."""
    with sources.cache_lock(progress):     # the unpacked tree lives in the shared cache too
        path = sources.fetch(deb.source, log=log, progress=progress)[deb.file.name]
        dest = path.parent / f"extracted-{deb.sha256[:12]}"
        if not (dest / ".complete").is_file():
            with util.atomic_dir(dest) as tmp:
                util.run(["dpkg-deb", "-x", path, tmp], log=log)
                (tmp / ".complete").write_text(deb.sha256 + "\n")
    return dest


def member(deb: Deb, relpath: str, log: Path | None = None) -> Path:
    """One file of a pinned package, e.g. member(UBOOT_QEMU, 'usr/lib/u-boot/qemu_arm64/uboot.elf')."""
    path = extract(deb, log) / relpath
    if not path.is_file():
        raise SeedfwError(f"{deb.package} {deb.version} has no {relpath}", path)
    return path
