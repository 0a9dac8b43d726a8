"""Build seedfw's QEMU TCG plugin (firmware/qemu-plugin/) as a host tool, like fiptool is one.

The plugin is compiled against `include/qemu/qemu-plugin.h` of the pinned Debian QEMU source
(`qemu_7.2+dfsg.orig.tar.xz`): no binary package ships that header, and the plugin's ABI must be
the installed QEMU's (`invoke doctor` loads the built plugin once and compares versions). Only that
one header is extracted from the 23 MB archive.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import plan, sources
from ..sources.debian_pool import DebianPoolSite
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR

PLUGIN_SOURCE = FIRMWARE_DIR / "qemu-plugin"
PLUGIN_NAME = "libseedfw-traffic.so"
HEADER = "include/qemu/qemu-plugin.h"
QEMU_SOURCE_VERSION = "7.2"
# The API version the plugin is written for; qemu-plugin.h of 7.2 defines QEMU_PLUGIN_VERSION 1.
API_VERSION = 1

# Pin checked 2026-12-01 in the Sources index of bookworm (source package qemu 1:7.2+dfsg-7+deb12u18).
ORIG = sources.SourceFile("qemu_7.2+dfsg.orig.tar.xz", 23_523_172,
                          "91aca71520040edc40b8d437aa3004dae614f58e286cf653ee8996c07af2962f")


@dataclass(frozen=True)
class QemuOrigSite(DebianPoolSite):
    """The orig tarball is shared by every Debian revision 7.2+dfsg-*; a bookworm point release
    replaces the revision in the index, so any revision whose paragraph lists the file will do
    (the pin checks the bytes)."""

    def directory(self, log):
        from ..plan import run_command

        state = _apt_state(self.suite)
        options = sources.private_apt_state(state, "deb-src", self.suite)
        run_command(["apt-get", *options, "update", "-qq"], log=log)
        out = run_command(["apt-cache", *options, "showsrc", self.package],
                          log=log).stdout.decode(errors="replace")
        for para in re.split(r"\n\s*\n", out):
            if ORIG.name in para:
                m = re.search(r"^Directory: (\S+)", para, re.MULTILINE)
                if m:
                    return m.group(1)
        raise SeedfwError(f"the Debian Sources index ({self.suite}) lists no {ORIG.name}")


def _apt_state(suite: str) -> Path:
    from .. import paths

    return paths.download_dir() / ".apt" / suite


def source() -> sources.Source:
    return sources.Source(name="qemu", version=QEMU_SOURCE_VERSION, files=(ORIG,),
                          sites=(QemuOrigSite("qemu", "7.2+dfsg-*", "bookworm"),
                                 sources.MirrorDirSite()),
                          archive=ORIG.name)


def header(dest_dir: Path, log: Path | None = None, progress=print) -> Path:
    """qemu-plugin.h from the pinned archive, into dest_dir/qemu/qemu-plugin.h."""
    archive = sources.fetch(source(), log=log, progress=progress)[ORIG.name]
    dest = Path(dest_dir) / "qemu" / "qemu-plugin.h"
    dest.parent.mkdir(parents=True, exist_ok=True)
    member = f"qemu-{QEMU_SOURCE_VERSION}.0/{HEADER}"
    tmp = dest.parent / ".extract"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    plan.run_command(["tar", "-xf", archive, "-C", tmp, member], log=log)
    shutil.move(tmp / member, dest)
    shutil.rmtree(tmp)
    return dest


def header_api_version(path: Path) -> int:
    m = re.search(r"^#define QEMU_PLUGIN_VERSION (\d+)", Path(path).read_text(), re.MULTILINE)  # door: the pinned QEMU header
    if not m:
        raise SeedfwError("no QEMU_PLUGIN_VERSION", path)
    return int(m.group(1))


def compile_plugin(include_dir: Path, out: Path, log: Path | None = None) -> Path:
    """gcc -shared -fPIC; deterministic flags only (no paths in the output: -ffile-prefix-map)."""
    srcs = sorted(PLUGIN_SOURCE.glob("*.c"))
    cmd = ["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
           f"-ffile-prefix-map={PLUGIN_SOURCE}=qemu-plugin", "-I", str(include_dir),
           "-o", str(out), *map(str, srcs)]
    plan.run_command(cmd, log=log)
    return out


def plugin_path(outdir: Path) -> Path:
    """Where the build leaves the plugin: a host tool, so in <out>/host/, not in images/."""
    return Path(outdir) / "host" / PLUGIN_NAME


def built_plugin(output_root: Path) -> Path | None:
    """The newest plugin any output directory under `output_root` holds (None: none built)."""
    root = Path(output_root)
    found = sorted([*root.glob(f"*/host/{PLUGIN_NAME}"), *root.glob(f"*/*/host/{PLUGIN_NAME}")],
                   key=lambda p: p.stat().st_mtime)       # output/<board>/, output/ci/<board>/
    return found[-1] if found else None


def check_installed(plugin: Path | None, binary: str = "qemu-system-aarch64") -> tuple[bool, str]:
    """For `invoke doctor`: the installed QEMU's version and whether it loads the built plugin
    (API version 1 is QEMU 4.2 … 8.1's). Returns (ok, one line)."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{binary}: {exc}"
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", out.stdout)
    if not m:
        return False, f"{binary} --version: no version in its output"
    version = tuple(map(int, m.groups()))
    if version[:2] != (7, 2):
        return False, (f"QEMU {'.'.join(map(str, version))}: the plugin is built against "
                       f"qemu-plugin.h of {QEMU_SOURCE_VERSION} (API {API_VERSION})")
    if plugin is None or not Path(plugin).is_file():
        return True, (f"QEMU {'.'.join(map(str, version))}, plugin API {API_VERSION} "
                      "(plugin not built yet: not loaded)")
    # Load it once: no machine, stopped, the monitor told to quit; the plugin's exit hook
    # writes its (empty) counts file, which shows it was loaded and ran.
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / "t.json"
        try:
            res = subprocess.run([binary, "-machine", "none", "-display", "none", "-S",
                                  "-monitor", "stdio", "-plugin", f"file={plugin},out={out_file}"],
                                 input="quit\n", capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"{binary} with the plugin: {exc}"
        if res.returncode != 0 or not out_file.is_file():
            lines = [ln for ln in (res.stderr or res.stdout).splitlines() if ln.strip()]
            return False, f"QEMU did not load {plugin}: {lines[-1] if lines else 'no output'}"
    return True, f"QEMU {'.'.join(map(str, version))} loads the plugin (API {API_VERSION})"
