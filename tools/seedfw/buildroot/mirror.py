"""Buildroot's sources, offline: Debian origs where byte-identical, source overrides elsewhere.

Trust anchor: Buildroot's own `package/<pkg>/<pkg>.hash` files in the pinned tree. A Debian orig
is used under Buildroot's file name only when its sha256 (pinned here, re-verified on every use)
is the one Buildroot's .hash lists for that file — `fill_primary` checks that and refuses
otherwise, so a Buildroot bump that changes a version cannot silently pair it with stale bytes.
The files go to a flat directory that Buildroot reads as its only site
(`BR2_PRIMARY_SITE="file://…"`, `BR2_PRIMARY_SITE_ONLY=y`); Buildroot copies them into BR2_DL_DIR
and checks them against the same .hash files once more.

Where no identical tarball is obtainable here (m4 1.4.21, libtool 2.4.6, fakeroot 1.36, patchelf
0.13 .tar.bz2), the package's *host* build takes another pinned source through Buildroot's
`BR2_PACKAGE_OVERRIDE_FILE` (`HOST_<PKG>_OVERRIDE_SRCDIR`). Buildroot applies no patches to an
override dir, so the patches a version needs are applied here. Every override is listed in the
build output and in images/buildroot.json; `check_overrides` refuses an override dir whose files
changed since it was prepared.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .. import plan, sources, util
from ..sources.debian_pool import DebianPoolSite
from ..errors import SeedfwError
from . import cache_root, dl_root

S = sources.SourceFile


@dataclass(frozen=True)
class Orig:
    """A Debian orig tarball that is byte-for-byte the file Buildroot pins for `package`."""

    package: str          # Buildroot package (package/<package>/<package>.hash)
    br_name: str          # the file name Buildroot downloads
    debian: str           # Debian source package, version, suite
    version: str
    suite: str
    file: sources.SourceFile

    def source(self) -> sources.Source:
        return sources.Source(name=f"buildroot-{self.package}", version=self.version,
                              files=(self.file,),
                              sites=(sources.MirrorDirSite(),
                                     DebianPoolSite(self.debian, self.version, self.suite)),
                              archive=self.file.name)


# Checked 2026-12-01 against the signed Sources indexes of trixie and bookworm.
ORIGS = (
    Orig("busybox", "busybox-1.37.0.tar.bz2", "busybox", "1:1.37.0-6", "trixie",
         S("busybox_1.37.0.orig.tar.bz2", 2_565_764,
           "3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4")),
    Orig("acl", "acl-2.3.2.tar.xz", "acl", "2.3.2-2", "trixie",
         S("acl_2.3.2.orig.tar.xz", 371_680,
           "97203a72cae99ab89a067fe2210c1cbf052bc492b479eca7d226d9830883b0bd")),
    Orig("attr", "attr-2.5.2.tar.xz", "attr", "1:2.5.2-3", "trixie",
         S("attr_2.5.2.orig.tar.xz", 334_180,
           "f2e97b0ab7ce293681ab701915766190d607a1dba7fae8a718138150b700a70b")),
    Orig("autoconf", "autoconf-2.72.tar.xz", "autoconf", "2.72-3.1", "trixie",
         S("autoconf_2.72.orig.tar.xz", 1_389_680,
           "ba885c1319578d6c94d46e9b0dceb4014caafe2490e437a0dbca3f270a223f5a")),
    Orig("automake", "automake-1.16.5.tar.xz", "automake-1.16", "1:1.16.5-1.3", "bookworm",
         S("automake-1.16_1.16.5.orig.tar.xz", 1_601_740,
           "f01d58cd6d9d77fbdca9eb4bbd5ead1988228fdb73d6f7a201f5f8d6b118b469")),
)


@dataclass(frozen=True)
class Override:
    """A host package built from another pinned source than Buildroot's (see the module doc)."""

    package: str                  # Buildroot package name (host-<package> is what we override)
    pinned: str                   # what Buildroot pins (for the listing)
    version: str                  # what we build instead
    origin: str                   # where our file comes from (for the listing)
    file: sources.SourceFile
    sites: tuple
    patches: tuple[str, ...] = ()  # Buildroot's own patches (package/<pkg>/…) applied by hand
    extra: tuple[str, ...] = ()    # more override-file lines
    expect: str = "configure.ac"   # a file an intact tree has at its top
    # (file, old text, new text): seedfw's own edits, each with its why next to the Override.
    edits: tuple[tuple[str, str, str], ...] = ()

    @property
    def variable(self) -> str:
        return f"HOST_{self.package.upper().replace('-', '_')}_OVERRIDE_SRCDIR"

    def source(self) -> sources.Source:
        return sources.Source(name=f"buildroot-override-{self.package}", version=self.version,
                              files=(self.file,), sites=self.sites, archive=self.file.name)

    def srcdir(self) -> Path:
        return cache_root() / "overrides" / f"{self.package}-{self.version}-{self.file.sha256[:12]}"

    def describe(self) -> str:
        return (f"host-{self.package} {self.version} instead of {self.pinned} "
                f"({self.file.name}, {self.origin})")


MIRROR = (sources.MirrorDirSite(),)
# The overrides only the mirror supplies come first: a missing or wrong mirror file is reported
# before any download from the archive starts.
OVERRIDES = (
    Override("fakeroot", "1.36", "1.29", "seedfw mirror buildroot-src/",
             S("fakeroot_1.29.tar.gz", 549_383,
               "8fbbafb780c9173e3ace4a04afbc1d900f337f3216883939f5c7db3431be7c20"), MIRROR),
    # The release tarball Buildroot pins is a .tar.bz2 nobody mirrors here; this .tar.gz is the
    # same version without a generated configure, hence AUTORECONF.
    Override("patchelf", "0.13 (.tar.bz2)", "0.13", "seedfw mirror buildroot-src/",
             S("patchelf-0.13.tar.gz", 116_416,
               "d170a5e00acfa02100258d8610ffe45be05cd05b479fb51c5008dff4dba42c2a"), MIRROR,
             patches=("0001-Add-option-to-make-the-rpath-relative-under-a-specif.patch",),
             extra=("HOST_PATCHELF_AUTORECONF = YES",)),
    Override("m4", "1.4.21", "1.4.19", "Debian bookworm orig",
             S("m4_1.4.19.orig.tar.xz", 1_654_908,
               "63aede5c6d33b6d9b13511cd0be2cac046f2e70fd0a07aa9573a04a82783af96"),
             MIRROR + (DebianPoolSite("m4", "1.4.19-3", "bookworm"),)),
    Override("libtool", "2.4.6", "2.4.7", "Debian bookworm orig",
             S("libtool_2.4.7.orig.tar.xz", 1_026_028,
               "dd637e270439b208907ceead3f163470ed2ce5723ef97ffbda6463c64b57128a"),
             MIRROR + (DebianPoolSite("libtool", "2.4.7-7~deb12u1", "bookworm"),)),
    # host-cpio writes rootfs.cpio under BR2_REPRODUCIBLE (for --reproducible). Buildroot pins
    # cpio-2.15.tar.bz2; Debian's only 2.15 is cpio_2.15+dfsg.orig.tar.bz2 (trixie/forky/sid,
    # sha256 9d699d5abad6…), which is not that file and answers 404 in the archive here
    # (checked 2026-12-01). bookworm's 2.13+dfsg orig is present and has --reproducible (since
    # 2.12). Two things make it build: Debian's dfsg removed the GFDL manual (doc/cpio.texi), so
    # doc/ leaves the top-level SUBDIRS (Makefile.in only: Makefile.am stays older, so automake
    # is not re-run); and 2.13 predates gcc 10's -fno-common default (src/global.c and
    # gnu/progname.c both define program_name), hence -fcommon.
    Override("cpio", "2.15", "2.13", "Debian bookworm orig",
             S("cpio_2.13+dfsg.orig.tar.bz2", 1_333_677,
               "fd1e6fb3c683bf82ae0db237af87376c6a376d1f6bf6564c9b335785e76106a9"),
             MIRROR + (DebianPoolSite("cpio", "2.13+dfsg-7.1", "bookworm"),),
             extra=('HOST_CPIO_CONF_ENV = CFLAGS="$(HOST_CFLAGS) -fcommon"',),
             edits=(("Makefile.in", "SUBDIRS = doc gnu lib rmt src po tests",
                     "SUBDIRS = gnu lib rmt src po tests"),)),
)
MARK = ".seedfw-override.json"


def primary_dir() -> Path:
    return dl_root() / "primary"


def download_dir() -> Path:
    return dl_root() / "dl"


def buildroot_hashes(tree: Path, package: str) -> dict[str, str]:
    """{file: sha256} from package/<package>/<package>.hash of the pinned tree."""
    path = tree / "package" / package / f"{package}.hash"
    try:
        text = path.read_text()
    except OSError as exc:
        raise SeedfwError(f"cannot read Buildroot's hash file: {exc.strerror}", path) from None
    return {m.group(2): m.group(1)
            for m in re.finditer(r"^sha256\s+([0-9a-f]{64})\s+(\S+)", text, re.MULTILINE)}


def fill_primary(tree: Path, log: Path | None, progress=print) -> list[str]:
    """Put every Debian orig into the primary site under Buildroot's name; return the names."""
    out = primary_dir()
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for orig in ORIGS:
        hashes = buildroot_hashes(tree, orig.package)
        anchor = tree / "package" / orig.package / f"{orig.package}.hash"
        if hashes.get(orig.br_name) != orig.file.sha256:
            raise SeedfwError(f"Debian's {orig.file.name} (sha256 {orig.file.sha256[:12]}) is not "
                              f"the {orig.br_name} Buildroot pins "
                              f"({(hashes.get(orig.br_name) or 'no entry')[:12]})", anchor)
        path = sources.fetch(orig.source(), log=log, progress=progress)[orig.file.name]
        dest = out / orig.br_name
        if not sources.cached_ok(dest, orig.file):
            util.copy_file(path, dest)
        names.append(orig.br_name)
    progress(f"{len(names)} Debian origs byte-identical to Buildroot's pins: "
             f"{', '.join(o.package for o in ORIGS)}")
    return names


def fetch_mirror_only(log: Path | None, progress=print) -> None:
    """Fetch (and verify) the override sources only the mirror supplies. Needs no Buildroot tree,
    so `invoke mirror` reports a missing or wrong mirror file before the ~2 s unpack of the tree
    rather than after it."""
    for ov in OVERRIDES:
        if ov.sites == MIRROR:
            sources.fetch(ov.source(), log=log, progress=progress)


def prepare_overrides(tree: Path, log: Path | None, progress=print) -> list[Override]:
    """Unpack (and patch) each override's pinned source once into the cache."""
    for ov in OVERRIDES:
        dest = ov.srcdir()
        if (dest / MARK).is_file():
            continue
        archive = sources.fetch(ov.source(), log=log, progress=progress)[ov.file.name]
        with util.file_lock(cache_root() / f".{dest.name}.lock", f"override {dest.name}",
                            say=progress):
            if (dest / MARK).is_file():
                continue
            with util.atomic_dir(dest) as tmp:
                plan.run_command(["tar", "-xf", archive, "--strip-components=1", "-C", tmp],
                                 log=log)
                for name in ov.patches:
                    patch = tree / "package" / ov.package / name
                    plan.run_command(["patch", "-p1", "--forward", "--batch", "-i", patch],
                                     cwd=tmp, log=log)
                for rel, before, after in ov.edits:
                    edit = tmp / rel
                    text = edit.read_text() if edit.is_file() else ""
                    if text.count(before) != 1:
                        raise SeedfwError(f"{ov.file.name}: {rel} does not hold '{before}' "
                                          "exactly once; the edit seedfw makes does not apply",
                                          archive)
                    edit.write_text(text.replace(before, after))
                if not (tmp / ov.expect).is_file():
                    raise SeedfwError(f"{ov.file.name} has no {ov.expect} at its top: not a "
                                      f"{ov.package} source tree", archive)
                (tmp / MARK).write_text(json.dumps(
                    {"file": ov.file.name, "sha256": ov.file.sha256, "patches": list(ov.patches),
                     "edits": [list(e) for e in ov.edits],
                     "tree": plan.tree_hash(tmp)}, indent=1) + "\n")
    return list(OVERRIDES)


def check_overrides(require_all: bool = True) -> None:
    """Refuse an override dir that is incomplete or whose files changed since it was unpacked.
    `require_all=False` checks only the dirs present (before `prepare_overrides` makes the rest)."""
    for ov in OVERRIDES:
        dest = ov.srcdir()
        if not require_all and not dest.exists():
            continue
        try:
            want = json.loads((dest / MARK).read_text())["tree"]
        except (OSError, ValueError, KeyError, TypeError):
            raise SeedfwError(f"override source dir of host-{ov.package} is not one seedfw "
                              f"prepared (no valid {MARK}); remove it to unpack "
                              f"{ov.file.name} again", dest) from None
        got = plan.tree_hash(dest, exclude=(MARK,))
        if got != want:
            raise SeedfwError(f"override source dir of host-{ov.package} was modified after it "
                              f"was unpacked from {ov.file.name}; remove it to unpack it again",
                              dest)


def override_file_text() -> str:
    """The BR2_PACKAGE_OVERRIDE_FILE: one *_OVERRIDE_SRCDIR per override, with why."""
    lines = ["# Generated by seedfw (seedfw.buildroot.mirror): sources Buildroot takes from these",
             "# directories instead of its pinned tarballs (no byte-identical copy is available).", ""]
    for ov in OVERRIDES:
        lines += [f"# {ov.describe()}", f"{ov.variable} = {ov.srcdir()}", *ov.extra, ""]
    return "\n".join(lines)


def listing() -> list[dict]:
    """The overrides as data (for images/buildroot.json and the report)."""
    return [{"package": f"host-{o.package}", "buildroot_pins": o.pinned, "used": o.version,
             "file": o.file.name, "sha256": o.file.sha256, "origin": o.origin,
             "patches": list(o.patches)} for o in OVERRIDES]


def pins() -> dict:
    """Stamp input: every pinned file of the mirror and the overrides."""
    return {"origs": {o.br_name: o.file.sha256 for o in ORIGS},
            "overrides": {o.package: [o.file.sha256, list(o.patches), list(o.extra)]
                          + ([[list(e) for e in o.edits]] if o.edits else [])
                          for o in OVERRIDES}}
