"""The host tools that built the image, as build-scope components: the cross compilers and
binutils, mkimage, dtc/fdtoverlay, genimage and mke2fs, whichever of them a step of this build
ran (its `tools`, seedfw.plan.Step).

Each is the Debian package that ships the file the command runs (seedfw.host.owners: dpkg -S of
its real path, so aarch64-linux-gnu-gcc is gcc-12-aarch64-linux-gnu, not the metapackage),
with the version, architecture and source package dpkg reports on this machine, a deb purl
with arch and distro (pkg:deb/debian/<pkg>@<version>?arch=amd64&distro=bookworm), the NVD CPE
of the upstream product where NVD names one, and the sha256/SHA-512 of that file: the bytes
that ran. Scope build (CycloneDX scope excluded): they made the firmware, none of their bytes is
in it.

Left out, and why: QEMU runs the images but makes none of them; the host rauc makes the update
bundle in `invoke update bundle`, outside the build this SBOM describes; seedfw's own Python
(the loader, the compressor, the FIT writer) is the `seedfw` tool in the SBOM's metadata.
"""

from __future__ import annotations

import re

from .model import Component, cpe23, file_hashes, purl

# NVD's vendor:product per Debian source package (the upstream product the tool is part of).
# Not u-boot-tools (yet): with denx:u-boot its 2023.01 mkimage is in range of the bootloader's
# CVEs (the fixture's CVE-2024-57254/57256/57259: squashfs/ext4 readers mkimage does not run),
# three untriaged matches on every board; it gets its CPE together with that triage.
CPE = {"gcc-12-cross": "gcc", "gcc-arm-none-eabi": "gcc", "binutils": "binutils",
       "binutils-arm-none-eabi": "binutils", "e2fsprogs": "e2fsprogs"}
EXTRA_CPE = {"binutils": ("a", "gnu", "binutils"), "e2fsprogs": ("a", "e2fsprogs_project",
                                                                  "e2fsprogs")}
# Licence per Debian source package: the `Files: *` paragraph of its debian/copyright
# (/usr/share/doc/<pkg>/copyright), in SPDX words; read 2026-12-03 on bookworm.
LICENCES = {
    "gcc-12-cross": "GPL-3.0-or-later WITH GCC-exception-3.1",
    "gcc-arm-none-eabi": "GPL-3.0-or-later WITH GCC-exception-3.1",
    "binutils": "GPL-3.0-or-later", "binutils-arm-none-eabi": "GPL-3.0-or-later",
    "u-boot": "GPL-2.0-or-later", "device-tree-compiler": "GPL-2.0-or-later OR BSD-2-Clause",
    "genimage": "GPL-2.0-only", "e2fsprogs": "GPL-2.0-only", "fakeroot": "GPL-3.0-or-later",
    "bmap-tools": "GPL-2.0-only",
}


def upstream(version: str) -> str:
    """The upstream release in a Debian version: no epoch, no revision, no +dfsg/.rel suffix
    (4:12.2.0-14 → 12.2.0, 2023.01+dfsg-2+deb12u3 → 2023.01, 15:12.2.rel1-1 → 12.2)."""
    v = version.split(":", 1)[-1]
    m = re.match(r"\d+(?:\.\d+)*", v)
    return m.group(0) if m else v


def ref(package: str) -> str:
    return f"host:{package}"


def components(commands, hasher=None) -> tuple[dict[str, str], list[Component], list[str]]:
    """({command: component ref}, the components, notes) for the host commands the build's
    steps ran. A command dpkg does not know is named in the notes (its file components are
    then marked incomplete by the caller)."""
    from .. import host
    commands = sorted(set(commands))
    owners = host.owners(commands)
    info = host.package_versions(pkg for _path, pkg in owners.values())
    distro = host.distro()
    by_pkg: dict[str, Component] = {}
    refs, notes = {}, []
    for cmd in commands:
        got = owners.get(cmd)
        meta = info.get(got[1]) if got else None
        if meta is None:
            notes.append(f"host tool {cmd}: not a file of an installed Debian package here")
            continue
        path, pkg = got
        refs[cmd] = ref(pkg)
        c = by_pkg.get(pkg)
        if c is None:
            src = meta["source"] or pkg
            product = CPE.get(src)
            version = upstream(meta["source_version"] if src == "gcc-arm-none-eabi"
                               else meta["version"])
            c = by_pkg[pkg] = Component(
                ref=ref(pkg), name=pkg, version=meta["version"], kind="application",
                licence=LICENCES.get(src, "NOASSERTION"), supplier="Debian", scope="build",
                purl=purl("deb", pkg, meta["version"], namespace="debian", arch=meta["arch"],
                          distro=distro),
                cpe=(_cpe(product, version) if product else None),
                description=f"host tool {cmd} ({path}) from Debian package {pkg}",
                hashes=(hasher or file_hashes)(path), filename=path.rsplit("/", 1)[-1],
                properties={"debian:source": f"{src} {meta['source_version']}",
                            "seedfw:host-commands": cmd, "seedfw:host-path": path})
        else:       # one package, several commands the steps ran (dtc and fdtoverlay)
            c.properties["seedfw:host-commands"] += f", {cmd}"
    return refs, sorted(by_pkg.values(), key=lambda c: c.ref), notes


def _cpe(product: str, version: str) -> str | None:
    if product in EXTRA_CPE:
        part, vendor, prod = EXTRA_CPE[product]
        return f"cpe:2.3:{part}:{vendor}:{prod}:{version}:*:*:*:*:*:*:*"
    return cpe23(product, version)
