"""Running Buildroot's make: the environment, the log, per-package progress and failure reports.

Buildroot announces every step of every package on a line of its own:
    >>> host-m4 1.4.19 Configuring
    >>> busybox 1.37.0 Building
`Progress` follows the log while make writes it (the command itself is run by seedfw.plan, so an
interrupted build stops it like any other step) and reports one line per package as it starts,
plus the time each took. When make fails, the last `>>>` line names the package that failed.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import plan, util
from ..errors import SeedfwError
from . import hosttar

# Buildroot wraps the line in `tput smso`/`rmso` when TERM is set, and a package without a
# version (host-skeleton) leaves its field empty.
STEP_LINE = re.compile(r"^>>> (\S+) (\S*) (.+?)\s*$")
ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# What Buildroot refuses in the environment (support/dependencies/dependencies.sh) or what
# changes its behaviour behind our back; dropped from make's environment.
_DROP = ("PERL_MM_OPT", "CDPATH", "LD_LIBRARY_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS",
         "CPPFLAGS", "ARCH", "CROSS_COMPILE", "O", "BR2_EXTERNAL", "BR2_DL_DIR", "BR2_CONFIG",
         "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "GREP_OPTIONS")


def environment(tar_bin: Path | None = None) -> dict[str, str]:
    """Changes to make's environment (seedfw.util.run merges them into ours): what Buildroot
    refuses emptied (its checks treat empty as unset), host tar 1.35 first on PATH."""
    env = {k: "" for k in _DROP if k in os.environ}
    tar_bin = tar_bin or hosttar.bin_dir()
    # Buildroot refuses relative or empty PATH entries ("." or "::").
    path = [p for p in os.environ.get("PATH", "").split(":") if p.startswith("/")]
    env["PATH"] = ":".join([str(tar_bin)] + [p for p in path if p != str(tar_bin)])
    env["LC_ALL"] = "C"
    # BR2_REPRODUCIBLE takes its clock from here (else from Buildroot's own git/version date).
    env["SOURCE_DATE_EPOCH"] = str(util.source_date_epoch())
    return env


def ccache_environment(ctx, out: Path) -> dict[str, str]:
    """The host's ccache for Buildroot's compiles (added to environment()'s variables).

    Not BR2_CCACHE: Buildroot would build its own host-ccache 4.10.2 with hiredis, zstd, xxhash
    and blake3 from tarballs not obtainable offline here, and keep its compiles apart from TF-A's
    and U-Boot's. Instead the same ccache, CCACHE_DIR, remote and settings as every other C
    build (seedfw.cache.ccache), reaching Buildroot's compiles two ways:
      target  the relocated toolchain's gcc/g++ wrappers exec $SEEDFW_CCACHE (toolchain.py);
              Buildroot's own toolchain wrapper calls them by absolute path, so PATH cannot;
      host    HOSTCC/HOSTCXX = ccache's masquerade links (Buildroot takes them from the
              environment: `ifndef HOSTCC` in its Makefile), HOSTCC_NOCCACHE/HOSTCXX_NOCCACHE
              the real compilers for what Buildroot keeps uncached (kconfig, its checks).
    Buildroot unexports none of these (its Makefile's unexport list: CC, CFLAGS, ARCH...).
    base_dir = Buildroot's output dir: its sysroot, -I and source paths are hashed relative, so
    two output dirs share entries (the toolchain, in the seedfw cache, is the same path for
    both); -ffile-prefix-map=<out>=buildroot (BR2_REPRODUCIBLE) is not hashed by ccache.
    Compiles log into a stats log of their own, counted apart in images/ccache.json."""
    from ..cache import ccache

    env = ccache.environment(ctx, out, part="buildroot")
    if "CCACHE_DISABLE" in env:
        return env                      # CONFIG_CCACHE=n: the wrappers see no SEEDFW_CCACHE
    env.pop("PATH")                     # the masquerade dir: HOSTCC names it, PATH need not
    masq = ccache.masquerade_dir(())
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p) != masq)
    for var, name in (("HOSTCC", "gcc"), ("HOSTCXX", "g++")):
        real = shutil.which(name, path=path)
        if real is None:
            raise SeedfwError(f"command not found: {name} (run 'invoke setup')")
        env[var], env[f"{var}_NOCCACHE"] = str(masq / name), real
    env["SEEDFW_CCACHE"] = shutil.which("ccache")
    return env


@dataclass
class Progress:
    """Follows a growing log file and reports Buildroot's per-package step lines."""

    log: Path
    say: callable
    offset: int = 0
    packages: list = field(default_factory=list)      # [name, version, started, seconds]
    last: tuple | None = None                         # (package, version, step) of the last line
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self):
        try:
            self.offset = self.log.stat().st_size
        except FileNotFoundError:
            self.offset = 0
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self._read()                    # whatever arrived after the last poll
        self._close_current()

    def _follow(self):
        while not self._stop.wait(0.5):
            self._read()

    def _read(self):
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self.offset += end
        for raw in data[:end].splitlines():
            m = STEP_LINE.match(ESCAPES.sub("", raw.decode(errors="replace")))
            if m:
                self.line(*m.groups())

    def line(self, package: str, version: str, step: str) -> None:
        self.last = (package, version, step)
        if self.packages and self.packages[-1][0] == package:
            return
        self._close_current()
        self.packages.append([package, version, time.monotonic(), None])
        self.say(f"[{len(self.packages):2}] {package} {version}".rstrip())

    def _close_current(self):
        if self.packages and self.packages[-1][3] is None:
            self.packages[-1][3] = round(time.monotonic() - self.packages[-1][2], 1)

    def summary(self) -> str:
        done = sorted((p for p in self.packages if p[3] is not None), key=lambda p: -p[3])
        top = ", ".join(f"{p[0]} {p[3]:.0f} s" for p in done[:4])
        return f"{len(self.packages)} package(s) built" + (f"; slowest: {top}" if top else "")


def run(tree: Path, outdir: Path, args: list, log: Path, say, env: dict) -> Progress:
    """`make -C tree O=outdir args…` with progress; on failure name the package that failed."""
    cmd = ["make", "-C", tree, f"O={outdir}", *args]
    with Progress(log, say) as progress:
        try:
            plan.run_command(cmd, env=env, log=log)
        except SeedfwError as exc:
            failed = progress
            progress.__exit__(None, None, None)
            if failed.last is not None:
                pkg, version, step = failed.last
                err = SeedfwError(f"Buildroot failed in package {pkg} {version} (step "
                                  f"'{step}'); make exited non-zero", log)
            else:
                err = SeedfwError(f"Buildroot's make {' '.join(map(str, args))} failed "
                                  "before building any package", log)
            err.tail = getattr(exc, "tail", None)
            raise err from None
    return progress
