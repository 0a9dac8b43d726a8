"""Reference images for dictionary training and benchmarks: Debian's u-boot-qemu, pinned.

u-boot-qemu is an Architecture: all binary package holding real AArch64 firmware ELFs
(usr/lib/u-boot/qemu_arm64/uboot.elf), so `apt-get download` works on any host architecture.
The .deb is sha256-pinned and cached like every other download (seedfw.sources); it is
unpacked with dpkg-deb next to the cached file.

Why a binary package site here: seedfw.sources handles Debian *source* packages; this is the one
binary package the compression area needs, fetched the same way (through apt, so no mirror host
is ever written into the tree).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import sources, util
from ..errors import SeedfwError

UBOOT_QEMU_VERSION = "2023.01+dfsg-2+deb12u3"
UBOOT_QEMU_DEB = sources.SourceFile(
    name=f"u-boot-qemu_{UBOOT_QEMU_VERSION}_all.deb", size=1830604,
    sha256="02a14f0876b76c0d7d7934e9b83a77515c5bdbad1e00af84c445bfeb1e6b8665")


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


UBOOT_QEMU = sources.Source(
    name="u-boot-qemu", version=UBOOT_QEMU_VERSION, files=(UBOOT_QEMU_DEB,),
    sites=(AptBinarySite("u-boot-qemu", UBOOT_QEMU_VERSION),), archive=UBOOT_QEMU_DEB.name)


def uboot_qemu_dir(log: Path | None = None, progress=lambda s: None) -> Path:
    """Fetch (cached, verified) and unpack u-boot-qemu; return its usr/lib/u-boot directory."""
    deb = sources.fetch(UBOOT_QEMU, log=log, progress=progress)[UBOOT_QEMU_DEB.name]
    dest = deb.parent / f"extracted-{UBOOT_QEMU_DEB.sha256[:12]}"
    if not (dest / "usr" / "lib" / "u-boot" / "qemu_arm64" / "uboot.elf").is_file():
        tmp = Path(tempfile.mkdtemp(dir=deb.parent, prefix=".extract."))
        try:
            util.run(["dpkg-deb", "-x", deb, tmp], log=log)
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(tmp, dest)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return dest / "usr" / "lib" / "u-boot"


def uboot_qemu_elf(board: str = "qemu_arm64", log: Path | None = None) -> Path:
    """Path of u-boot-qemu's ELF for `board` (qemu_arm64, qemu_arm, ...)."""
    path = uboot_qemu_dir(log) / board / "uboot.elf"
    if not path.is_file():
        raise SeedfwError(f"u-boot-qemu has no ELF for {board}", file=path)
    return path
