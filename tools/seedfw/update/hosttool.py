"""The host's rauc: Debian bookworm's rauc 1.8 and squashfs-tools, unpacked privately.

Why not `apt-get install rauc`: Debian's package Depends on dbus and systemd (for the target-side
service), which a build host has no use for and a container should not get; mksquashfs (which
`rauc bundle` runs) and two libraries it needs are not on a fresh bookworm either. So the four
.debs are pinned here by size and sha256, fetched with `apt-get download` (the machine's own apt
configuration, nothing of it edited) and verified like every pinned file (seedfw.sources), then
unpacked once with dpkg-deb into the download cache. `run()` puts that tree first on PATH and
LD_LIBRARY_PATH for the one command; nothing is installed into the system.

`invoke setup` calls `ensure()`; `invoke doctor` calls `status()` (never fetches).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .. import sources, util
from ..sources.debs import AptBinarySite
from ..errors import SeedfwError

S = sources.SourceFile
VERSION = "1.8-2"
# (package, version, file apt writes, size, sha256): bookworm amd64, checked 2026-12-02
DEBS = (
    ("rauc", "1.8-2", S("rauc_1.8-2_amd64.deb", 142_868,
                        "7720d163c16f1c082cbd0a3b56c3c7e520fa8ced17936ec1d4449bb995980fbd")),
    ("squashfs-tools", "1:4.5.1-1",
     S("squashfs-tools_1%3a4.5.1-1_amd64.deb", 182_756,
       "3f96b16c9b985ea03cf70f90a05f4dc5c15039e845326f8f4293a3280fd0b2f4")),
    ("libjson-glib-1.0-0", "1.6.6-1",
     S("libjson-glib-1.0-0_1.6.6-1_amd64.deb", 65_592,
       "b8d407ece57b0dc2e6d2895625a2485b1eb49294b8db0fdb780fb8211fe9e635")),
    ("liblzo2-2", "2.10-2", S("liblzo2-2_2.10-2_amd64.deb", 56_912,
                              "4f08e092c76e425295a498cd547dc9b8f6a595473f3020ab8c96309b29872636")),
)
MARK = ".complete"


def source() -> sources.Source:
    return sources.Source(name="host-rauc", version=VERSION, files=tuple(f for _p, _v, f in DEBS),
                          sites=(sources.MirrorDirSite(), _Apt()), archive=DEBS[0][2].name)


class _Apt(sources.Site):
    """`apt-get download` of whichever pinned .deb is asked for (AptBinarySite per package)."""

    label = "debian-binary"

    def describe(self) -> str:
        return "Debian binary packages (apt-get download)"

    def fetch(self, file, dest_dir, log):
        pkg, ver, _f = next(d for d in DEBS if d[2].name == file.name)
        return AptBinarySite(pkg, ver).fetch(file, dest_dir, log)


def tree() -> Path:
    from hashlib import sha256
    key = sha256("".join(f.sha256 for _p, _v, f in DEBS).encode()).hexdigest()[:12]
    return source().cache_dir() / f"unpacked-{key}"


def ensure(log: Path | None = None, progress=lambda m: None) -> Path:
    """Fetch (verified) and unpack the pinned .debs; return the unpacked tree."""
    dest = tree()
    if (dest / MARK).is_file():
        return dest
    got = sources.fetch(source(), log=log, progress=progress)
    with sources.cache_lock(progress):
        if not (dest / MARK).is_file():
            with util.atomic_dir(dest) as tmp:
                for _p, _v, f in DEBS:
                    util.run(["dpkg-deb", "-x", got[f.name], tmp], log=log)
                (tmp / MARK).write_text(VERSION + "\n")
    return dest


def status() -> tuple[bool, str]:
    """(ok, one line) for `invoke doctor`: present and runnable, without fetching anything."""
    dest = tree()
    if not (dest / MARK).is_file():
        return False, "not fetched: run 'invoke setup' (pinned bookworm rauc 1.8 .debs, unpacked " \
                      "privately)"
    try:
        out = run(["rauc", "--version"], check=False)
    except OSError as exc:
        return False, f"cannot run: {exc.strerror}"
    text = (out.stdout or out.stderr).strip()
    return out.returncode == 0 and text.startswith("rauc "), text or f"exit {out.returncode}"


def environment(dest: Path) -> dict[str, str]:
    libs = [dest / "usr/lib/x86_64-linux-gnu", dest / "lib/x86_64-linux-gnu"]
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(dest / "usr/bin"), str(dest / "usr/sbin"),
                                   env.get("PATH", "")])
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(p) for p in libs]
                                             + ([env["LD_LIBRARY_PATH"]]
                                                if env.get("LD_LIBRARY_PATH") else []))
    return env


def run(args: list[str], check: bool = True, cwd=None) -> subprocess.CompletedProcess:
    """Run `args` (rauc, mksquashfs, unsquashfs) from the private tree; text output captured."""
    dest = tree()
    if not (dest / MARK).is_file():
        raise SeedfwError("the host's rauc is not set up: run 'invoke setup' (pinned Debian "
                          "bookworm rauc 1.8, unpacked under the download cache)")
    exe = dest / "usr/bin" / args[0]
    proc = subprocess.run([str(exe) if exe.is_file() else args[0], *args[1:]],
                          capture_output=True, text=True, env=environment(dest), cwd=cwd)
    if check and proc.returncode != 0:
        raise SeedfwError(f"{args[0]} {args[1] if len(args) > 1 else ''}: "
                          f"{last_error(proc.stderr or proc.stdout)}")
    return proc


def last_error(text: str) -> str:
    """RAUC's own reason: its last line that is not a 'rauc-Message:' progress line."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    real = [ln for ln in lines if not ln.startswith("rauc-Message:")]
    return (real or lines or ["no output"])[-1]
