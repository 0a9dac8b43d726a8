"""The Buildroot sources RAUC adds, and which of them this machine can supply.

`make external-deps` of the pinned Buildroot with BR2_PACKAGE_RAUC + BR2_PACKAGE_LIBUBOOTENV on
top of seedfw's defconfig lists 25 tarballs the OS build did not need before (RAUC itself,
glib2, openssl, squashfs-tools, libubootenv, and the host Python/meson/ninja chain meson
packages build with). Checked 2026-12-02 against the signed Sources indexes of bookworm and
trixie (the private apt state's copies): four have a Debian orig byte-identical to the file
Buildroot's .hash pins (ORIGS, fetched like seedfw.buildroot.mirror.ORIGS); the other 21 have no
identical file in Debian (other versions or other bytes), and no other site is reachable here.

Those 21 come from the mirror instead: Buildroot's own file, under Buildroot's name, in
$SEEDFW_MIRROR_DIR/buildroot-src/ (MIRRORED). The trust anchor stays Buildroot's .hash: `fill()`
copies a file into the primary site only when its sha256 is the one Buildroot pins, and refuses
otherwise. No override (another version built in place) is used for them: 7 are target
libraries that end up in the rootfs, and a version Buildroot does not pin would be a product
change, not a build detail.

`missing()` is what `invoke config` asks (no tree, no hashing): with UPDATE_RAUC on and a file
neither in the primary site nor in the mirror, configuration fails naming CONFIG_UPDATE_RAUC and
the first missing file, instead of Buildroot failing its download an hour into a build.
"""

from __future__ import annotations

from pathlib import Path

from .. import paths, sources, util
from . import mirror
from ..errors import SeedfwError

S = sources.SourceFile
Orig = mirror.Orig

ORIGS = (
    Orig("rauc", "rauc-1.13.tar.xz", "rauc", "1.13-3+deb13u1", "trixie",
         S("rauc_1.13.orig.tar.xz", 960_616,
           "1ddb218a5d713c8dbd6e04d5501d96629f1c8e2521576fbd9e7751edb7da113e")),
    Orig("libopenssl", "openssl-3.5.7.tar.gz", "openssl", "3.5.7-1~deb13u2", "trixie",
         S("openssl_3.5.7.orig.tar.gz", 53_153_930,
           "a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8")),
    Orig("squashfs", "squashfs-tools-4.6.1.tar.gz", "squashfs-tools", "1:4.6.1-1", "trixie",
         S("squashfs-tools_4.6.1.orig.tar.gz", 286_848,
           "94201754b36121a9f022a190c75f718441df15402df32c2b520ca331a107511c")),
    Orig("meson", "meson-1.7.0.tar.gz", "meson", "1.7.0-1", "trixie",
         S("meson_1.7.0.orig.tar.gz", 2_293_975,
           "08efbe84803eed07f863b05092d653a9d348f7038761d900412fddf56deb0284")),
)

# (Buildroot package whose .hash pins the file, file name). Debian has (bookworm / trixie):
MIRRORED = (
    ("libglib2", "glib-2.82.5.tar.xz"),                 # 2.74.6 / 2.84.4
    ("libffi", "libffi-3.4.6.tar.gz"),                  # 3.4.4 / 3.4.8
    ("pcre2", "pcre2-10.46.tar.bz2"),                   # trixie 10.46, other bytes
    ("libzlib", "zlib-1.3.2.tar.xz"),                   # 1.2.13 / 1.3.1 (dfsg)
    ("util-linux", "util-linux-2.40.4.tar.xz"),         # 2.38.1 / 2.41.5
    ("libubootenv", "libubootenv-0.3.6.tar.gz"),        # 0.3.2 / 0.3.5
    ("libyaml", "yaml-0.2.5.tar.gz"),                   # 0.2.5, other bytes
    ("expat", "expat-2.8.2.tar.xz"),                    # 2.5.0 / 2.9.0
    ("python3", "Python-3.12.13.tar.xz"),               # 3.11 / 3.13
    ("ninja", "ninja-1.11.1.g95dee.kitware.jobserver-1.tar.gz"),   # upstream 1.11.1 / 1.12.1
    ("pkgconf", "pkgconf-2.3.0.tar.xz"),                # 1.8.1
    ("gettext-tiny", "gettext-tiny-0.3.2.tar.gz"),      # not in Debian
    ("gettext-tiny", "gettext-0.22.4.tar.xz"),          # 0.21 / 0.23.1
    ("autoconf-archive", "autoconf-archive-2023.02.20.tar.xz"),    # 20220903
    ("python-setuptools", "setuptools-80.9.0.tar.gz"),  # 66.1.1 / 78.1.1
    ("python-wheel", "wheel-0.45.1.tar.gz"),            # 0.38.4 / 0.46.1
    ("python-flit-core", "flit_core-3.11.0.tar.gz"),    # 3.8.0 / 3.12.0
    ("python-installer", "installer-0.7.0.tar.gz"),     # 0.7.0+dfsg, other bytes
    ("python-packaging", "packaging-24.2.tar.gz"),      # 23.0 / 25.0
    ("python-pypa-build", "build-1.2.2.tar.gz"),        # 1.2.2, other bytes
    ("python-pyproject-hooks", "pyproject_hooks-1.2.0.tar.gz"),
)

# What the Buildroot fragment gains with UPDATE_RAUC (seedfw.buildroot.external.fragment).
FRAGMENT = ("BR2_PACKAGE_RAUC=y", "BR2_PACKAGE_LIBUBOOTENV=y")


def _mirror_file(name: str) -> Path | None:
    root = paths.mirror_dir()
    for d in ((root / "buildroot-src", root) if root else ()):
        if (d / name).is_file():
            return d / name
    return None


def missing() -> list[str]:
    """The MIRRORED files neither in the primary site nor in the mirror (no hashing here)."""
    primary = mirror.primary_dir()
    return [name for _pkg, name in MIRRORED
            if not (primary / name).is_file() and _mirror_file(name) is None]


def check_available(cfg) -> None:
    """`invoke config` with UPDATE_RAUC: one line naming CONFIG_UPDATE_RAUC and what is missing."""
    gone = missing()
    if gone:
        where = cfg.origins.get("UPDATE_RAUC")
        raise SeedfwError(
            f"CONFIG_UPDATE_RAUC needs {len(gone)} Buildroot source tarballs this machine cannot "
            f"obtain (first: {gone[0]}); put Buildroot's own files into "
            "$SEEDFW_MIRROR_DIR/buildroot-src/ (checked against Buildroot's .hash), see "
            "docs/updates.md",
            *((where.file, f"line {where.line}") if where else
              (Path(cfg.outdir) / ".config", "CONFIG_UPDATE_RAUC")))


def fill(tree: Path, log: Path | None, progress=print) -> list[str]:
    """Put RAUC's sources into the primary site: Debian origs and mirrored files, each checked
    against the sha256 Buildroot's .hash pins for it."""
    out = mirror.primary_dir()
    out.mkdir(parents=True, exist_ok=True)
    for orig in ORIGS:
        pins = mirror.buildroot_hashes(tree, orig.package)
        if pins.get(orig.br_name) != orig.file.sha256:
            raise SeedfwError(f"Debian's {orig.file.name} is not the {orig.br_name} Buildroot "
                              "pins", tree / "package" / orig.package / f"{orig.package}.hash")
        got = sources.fetch(orig.source(), log=log, progress=progress)[orig.file.name]
        if not sources.cached_ok(out / orig.br_name, orig.file):
            util.copy_file(got, out / orig.br_name)
    for pkg, name in MIRRORED:
        want = mirror.buildroot_hashes(tree, pkg).get(name)
        anchor = tree / "package" / pkg / f"{pkg}.hash"
        if want is None:
            raise SeedfwError(f"Buildroot's hash file pins no {name}", anchor)
        dest = out / name
        if dest.is_file() and util.sha256_file(dest) == want:
            continue
        src = _mirror_file(name)
        if src is None:
            raise SeedfwError(f"{name} is in neither the primary site nor the mirror's "
                              "buildroot-src/", anchor)
        got = util.sha256_file(src)
        if got != want:
            raise SeedfwError(f"sha256 {got[:12]} is not the {want[:12]} Buildroot pins for "
                              f"{name}", src)
        util.copy_file(src, dest)
    progress(f"RAUC's sources: {len(ORIGS)} Debian origs, {len(MIRRORED)} from the mirror, "
             "all checked against Buildroot's .hash")
    return [o.br_name for o in ORIGS] + [n for _p, n in MIRRORED]


def pins() -> dict:
    return {"origs": {o.br_name: o.file.sha256 for o in ORIGS},
            "mirrored": [n for _p, n in MIRRORED]}


def listing() -> list[dict]:
    """For the SBOM/report: where each of RAUC's sources comes from."""
    return ([{"file": o.br_name, "origin": f"Debian {o.suite} orig {o.file.name}",
              "sha256": o.file.sha256} for o in ORIGS]
            + [{"file": n, "origin": "seedfw mirror buildroot-src/ (Buildroot's own file)",
                "package": p} for p, n in MIRRORED])


