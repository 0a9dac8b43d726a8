"""Host packages seedfw needs, and how to install them (Debian bookworm, apt).

One list, used by `invoke setup` and by .ci/run (which calls `invoke setup`), so CI fails the same
way a fresh developer machine would when a package is missing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

from .errors import SeedfwError

APT_PACKAGES = [
    "gcc-aarch64-linux-gnu",      # TF-A and the BL33 payload
    "binutils-aarch64-linux-gnu",
    "gcc-arm-none-eabi",          # wake-controller firmware
    "qemu-system-arm",            # qemu-system-aarch64 and qemu-system-arm
    "device-tree-compiler",       # dtc: DVFS OPP fragments, FIT
    "u-boot-tools",               # mkimage / dumpimage
    "lz4",                        # reference CLI for the ratio benchmark
    "zstd",                       # second reference for the ratio benchmark
    "liblz4-dev",                 # reference decompressor for the speed benchmark
    "clang",                      # libFuzzer targets
    "libssl-dev",                 # TF-A's fiptool and cert tools
    "rkdeveloptool",              # rockusb flash backend (RK3588 maskrom)
    "make",
    "patch",
    "xz-utils",
]


def missing_packages(packages=APT_PACKAGES) -> list[str]:
    """Packages dpkg does not report as installed."""
    if not shutil.which("dpkg-query"):
        return list(packages)
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *packages],
                         capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
    return [p for p in packages if p not in installed]


def install_command(packages) -> list[str]:
    return ["apt-get", "install", "-y", "--no-install-recommends", *packages]


def setup(update: bool = True) -> list[str]:
    """Install what is missing; when not root, name the exact command and fail."""
    missing = missing_packages()
    if not missing:
        return []
    cmd = install_command(missing)
    if os.geteuid() != 0:
        raise SeedfwError("missing host packages; run as root: "
                          f"apt-get update && {shlex.join(cmd)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if update:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    proc = subprocess.run(cmd, env=env)
    if proc.returncode != 0:
        raise SeedfwError(f"'{shlex.join(cmd)}' failed with exit code {proc.returncode}")
    return missing
