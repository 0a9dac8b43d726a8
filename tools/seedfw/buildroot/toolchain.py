"""Debian's aarch64 cross gcc 12 as a Buildroot *external custom* toolchain, prepared once.

Why a relocated copy: Buildroot refuses a distribution toolchain as installed ("Distribution
toolchains are unsuitable for use by Buildroot") because `gcc -v` shows `--with-sysroot=/`, and it
wants the compiler, its libraries and the C library under one prefix it can copy a sysroot from.
So we copy (not symlink: Buildroot resolves links and would land back in /usr)
  /usr/bin/aarch64-linux-gnu-*               → X/bin/
  /usr/lib/gcc-cross/aarch64-linux-gnu/12    → X/lib/gcc-cross/aarch64-linux-gnu/12 (cc1, libgcc)
  /usr/aarch64-linux-gnu                     → X/aarch64-linux-gnu (glibc, headers; + usr/include)
and replace gcc/g++/cpp with wrappers that run the -12 binaries and, for a lone `-v`, drop
` --with-sysroot=/` from what they print (the check reads only that).

The copy is keyed by the Debian versions of the packages it copies, so a toolchain upgrade on
the machine gives a new copy (and a new Buildroot stamp) instead of a stale one; every output dir
shares it.

ccache: gcc/g++ exec `$SEEDFW_CCACHE <real compiler>` when that variable is set at run time —
seedfw's Buildroot step sets it, with the CCACHE_* variables of the build (seedfw.buildroot.make
ccache_environment). So the copy is the same with ccache on or off, and the wrappers are
rewritten in place when their text changes (WRAPPER_VERSION, their hash): they are seedfw's, not
Debian's files, and what they produce does not change, so no Buildroot output dir needs a
rebuild.
Why not Buildroot's own BR2_CCACHE: it builds host-ccache 4.10.2 (+ hiredis, zstd, xxhash,
blake3) from tarballs not obtainable offline here, and would keep a cache of its own; through
the host's ccache Buildroot shares CCACHE_DIR, the team remote and the stats log with TF-A and
U-Boot.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import cache_root

TUPLE = "aarch64-linux-gnu"
GCC_MAJOR = "12"
# The Debian packages whose files the copy holds: their versions are the copy's identity.
PACKAGES = (f"gcc-{GCC_MAJOR}-{TUPLE}", f"cpp-{GCC_MAJOR}-{TUPLE}", f"g++-{GCC_MAJOR}-{TUPLE}",
            f"binutils-{TUPLE}", "libc6-dev-arm64-cross", "libc6-arm64-cross",
            "linux-libc-dev-arm64-cross", f"libstdc++-{GCC_MAJOR}-dev-arm64-cross",
            f"libgcc-{GCC_MAJOR}-dev-arm64-cross")
WRAPPED = ("gcc", "g++", "cpp")
CACHED = ("gcc", "g++")          # cpp only preprocesses: nothing for ccache to keep
MARK = ".seedfw-toolchain.json"

_WRAPPER = """#!/bin/sh
# seedfw: Debian's {tool}-{major}, relocated for Buildroot (seedfw.buildroot.toolchain).
# A lone -v is what Buildroot inspects; Debian's configure line says --with-sysroot=/, which
# Buildroot takes for an unrelocatable distribution toolchain, so that word is dropped there.
real="$(dirname "$0")/{tuple}-{tool}-{major}"
if [ "$#" -eq 1 ] && [ "$1" = "-v" ]; then
    "$real" -v 2>&1 | sed 's# --with-sysroot=/ # #'
    exit 0
fi
{ccache}exec "$real" "$@"
"""
# Set by seedfw's Buildroot step only (the host's ccache); absent, the compiler runs directly.
_CCACHE = """# Set by seedfw's Buildroot step (the host's ccache), with the CCACHE_* settings.
if [ -n "$SEEDFW_CCACHE" ]; then
    exec "$SEEDFW_CCACHE" "$real" "$@"
fi
"""


def wrapper_text(tool: str) -> str:
    return _WRAPPER.format(tool=tool, major=GCC_MAJOR, tuple=TUPLE,
                           ccache=_CCACHE if tool in CACHED else "")


# The wrappers' identity, recorded in MARK: a copy with other wrappers gets these written.
WRAPPER_VERSION = util.sha256_bytes("".join(map(wrapper_text, WRAPPED)).encode())[:12]

# What Buildroot must be told about this toolchain (its checks compare each with the compiler).
def defconfig_lines(path: Path) -> list[str]:
    return [
        "BR2_TOOLCHAIN_EXTERNAL=y",
        "BR2_TOOLCHAIN_EXTERNAL_CUSTOM=y",
        "BR2_TOOLCHAIN_EXTERNAL_PREINSTALLED=y",
        f'BR2_TOOLCHAIN_EXTERNAL_PATH="{path}"',
        f'BR2_TOOLCHAIN_EXTERNAL_CUSTOM_PREFIX="{TUPLE}"',
        f"BR2_TOOLCHAIN_EXTERNAL_GCC_{GCC_MAJOR}=y",
        "BR2_TOOLCHAIN_EXTERNAL_HEADERS_6_1=y",
        "BR2_TOOLCHAIN_EXTERNAL_CUSTOM_GLIBC=y",
        "BR2_TOOLCHAIN_EXTERNAL_CXX=y",
        "BR2_TOOLCHAIN_EXTERNAL_HAS_SSP=y",
        "BR2_TOOLCHAIN_EXTERNAL_HAS_SSP_STRONG=y",
        "BR2_TOOLCHAIN_EXTERNAL_OPENMP=y",
        "# BR2_TOOLCHAIN_EXTERNAL_INET_RPC is not set",
    ]


def versions() -> dict[str, str]:
    """{package: Debian version} of PACKAGES; a missing one is an error naming the install."""
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Status}\n",
                           *PACKAGES], capture_output=True, text=True)
    got = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "installed":
            got[parts[0]] = parts[1]
    missing = [p for p in PACKAGES if p not in got]
    if missing:
        raise SeedfwError(f"the Buildroot toolchain needs Debian packages {', '.join(missing)} "
                          "(run 'invoke setup')")
    return got


def toolchain_dir(vers: dict[str, str] | None = None) -> Path:
    vers = vers or versions()
    key = util.sha256_bytes(json.dumps(vers, sort_keys=True).encode())[:12]
    return cache_root() / f"toolchain-{TUPLE}-gcc{GCC_MAJOR}-{key}"


def prepare(progress=print) -> Path:
    """The relocated toolchain for the installed packages, made now when absent (a copy with
    other wrappers only gets the current ones written)."""
    vers = versions()
    final = toolchain_dir(vers)
    if _current(final):
        return final
    with util.file_lock(cache_root() / f".{final.name}.lock", f"the toolchain copy {final}",
                        say=progress):
        if _current(final):
            return final
        if (final / MARK).is_file():          # an older seedfw's wrappers: rewrite them only
            progress(f"updating the compiler wrappers in {final}")
            _write_wrappers(final / "bin")
        else:
            progress(f"relocating Debian's {TUPLE}-gcc-{GCC_MAJOR} into {final}")
            with util.atomic_dir(final) as tmp:
                _copy(tmp)
                _write_mark(tmp, vers)
            return final
        _write_mark(final, vers)
    return final


def _current(x: Path) -> bool:
    try:
        return json.loads((x / MARK).read_text()).get("wrapper") == WRAPPER_VERSION
    except (FileNotFoundError, ValueError):
        return False


def _write_mark(x: Path, vers: dict) -> None:
    util.write_text(x / MARK, json.dumps({"packages": vers, "wrapper": WRAPPER_VERSION},
                                         indent=1, sort_keys=True) + "\n")


def _copy(x: Path) -> None:
    bindir = x / "bin"
    bindir.mkdir()
    for tool in sorted(Path("/usr/bin").glob(f"{TUPLE}-*")):
        shutil.copy2(tool, bindir / tool.name, follow_symlinks=False)
    libdir = x / "lib" / "gcc-cross" / TUPLE
    libdir.parent.mkdir(parents=True)
    _copytree(Path(f"/usr/lib/gcc-cross/{TUPLE}/{GCC_MAJOR}"), libdir / GCC_MAJOR)
    _copytree(Path(f"/usr/{TUPLE}"), x / TUPLE)
    # Buildroot looks for the C library headers under <sysroot>/usr/include.
    _copytree(Path(f"/usr/{TUPLE}/include"), x / TUPLE / "usr" / "include")
    for tool in WRAPPED:
        (bindir / f"{TUPLE}-{tool}").unlink(missing_ok=True)       # Debian's symlink
        if not (bindir / f"{TUPLE}-{tool}-{GCC_MAJOR}").is_file():
            raise SeedfwError(f"/usr/bin/{TUPLE}-{tool}-{GCC_MAJOR} is missing (run 'invoke setup')")
    _write_wrappers(bindir)


def _write_wrappers(bindir: Path) -> None:
    """Each wrapper replaced atomically: a Buildroot build running beside never sees it absent."""
    for tool in WRAPPED:
        wrapper = bindir / f"{TUPLE}-{tool}"
        tmp = bindir / f".{wrapper.name}.tmp"
        tmp.write_text(wrapper_text(tool))
        tmp.chmod(0o755)
        tmp.replace(wrapper)


def _copytree(src: Path, dst: Path) -> None:
    if not src.is_dir():
        raise SeedfwError(f"{src} is missing (run 'invoke setup')")
    shutil.copytree(src, dst, symlinks=True)
