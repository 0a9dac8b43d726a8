"""Host packages seedfw needs, and how to install them (Debian bookworm, apt).

One table, `NEEDS`: every host program and file a task uses, the Debian package that ships it and
what it is for. The apt list `invoke setup` installs is *derived* from it, and `invoke doctor`
checks each row, so a tool cannot be used by a task without also being installed on a fresh
machine — the wave-1 bug (QEMU's `efi-virtio.rom` and clang's libFuzzer runtime came from packages
`--no-install-recommends` skipped, and only the CI machine happened to have them) has one place to
be fixed and a test (tests/test_host.py) that checks the table against Debian's own metadata.

A row names *what the task touches* (a command on PATH, or an absolute path / glob), not just a
package: a package name alone would say nothing about the Recommends it silently relies on.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import SeedfwError


@dataclass(frozen=True)
class Need:
    """One host program or file a task uses.

    what:    a command looked up on PATH (kind "tool") or an absolute path, globs allowed (kind "file")
    package: the Debian package that ships it (checked against `dpkg -S` by tests/test_host.py)
    why:     the task and the reason, shown by `invoke doctor`
    """

    what: str
    package: str
    why: str
    kind: str = "tool"


LLVM = "/usr/lib/llvm-14/lib/clang/*/lib/linux"
GCC_LIB = "/usr/lib/gcc/x86_64-linux-gnu/12"

NEEDS: list[Need] = [
    # Cross toolchains
    Need("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu", "build: TF-A, the BL33 payload, LZ4 objects"),
    Need("aarch64-linux-gnu-objcopy", "binutils-aarch64-linux-gnu", "build: payload binary, BL31 sections"),
    Need("aarch64-linux-gnu-nm", "binutils-aarch64-linux-gnu", "tests: symbol addresses from the C tools"),
    Need("arm-none-eabi-gcc", "gcc-arm-none-eabi", "build: wake-MCU firmware (Cortex-M3)"),
    Need("arm-none-eabi-objcopy", "binutils-arm-none-eabi", "build: wake-MCU raw image"),
    # Host compilers and their runtimes
    Need("gcc", "gcc", "build: host tools (TF-A fiptool, LZ4 host tool)"),
    Need("cc", "gcc", "test/bench: C layout checks, host builds of our C code"),
    Need(f"{GCC_LIB}/libasan.so", "libgcc-12-dev", "test: ASan/UBSan builds of the LZ4 decoder", "file"),
    Need("clang-14", "clang-14", "fuzz: libFuzzer targets"),
    Need(f"{LLVM}/libclang_rt.fuzzer-x86_64.a", "libclang-rt-14-dev", "fuzz: libFuzzer runtime", "file"),
    Need(f"{LLVM}/libclang_rt.asan-x86_64.a", "libclang-rt-14-dev", "fuzz: ASan runtime of the fuzzers",
         "file"),
    Need("/usr/include/lz4.h", "liblz4-dev", "bench: liblz4, the reference decoder", "file"),
    Need("/usr/include/openssl/sha.h", "libssl-dev", "build: TF-A fiptool and cert tools", "file"),
    Need("make", "make", "build: TF-A, payload, MCU, LZ4"),
    Need("ccache", "ccache", "build: compiler cache of every C compile, local and remote "
         "(CONFIG_CCACHE*; redis storage compiled in)"),
    Need("patch", "patch", "build: Debian and seedfw patches on TF-A"),
    # Emulators: the binaries here; the firmware files they load for our machines are found by
    # asking QEMU itself (seedfw.host.doctor), since they depend on the machine arguments.
    Need("qemu-system-aarch64", "qemu-system-arm", "run/test: qemu-aarch64 boots (TF-A chain)"),
    Need("qemu-system-arm", "qemu-system-arm", "run/flash/test: mps2-an385 wake MCU"),
    # Images and their inspection
    Need("dtc", "device-tree-compiler", "build: DVFS OPP fragments, FIT"),
    Need("mkimage", "u-boot-tools", "build: FIT images"),
    Need("dumpimage", "u-boot-tools", "inspect/test: FIT contents"),
    Need("openssl", "openssl", "keys: signing keys for FIT and packages"),
    Need("readelf", "binutils", "tests: ELF facts from the C tools"),
    # Reference compressors for the ratio benchmark
    Need("lz4", "lz4", "bench: reference LZ4 CLI"),
    Need("zstd", "zstd", "bench: second reference compressor"),
    # Measuring
    Need("/usr/bin/time", "time", "bench: peak RSS of a child (bench/fit_pack.py)", "file"),
    # Boards
    Need("rkdeveloptool", "rkdeveloptool", "flash: RK3588 in maskrom (rockusb)"),
    # Search
    Need("redis-server", "redis-server", "tune: Redis journal backend shared by several workers"),
    Need("docker-registry", "docker-registry", "test/bench: an OCI registry on loopback for the "
         "artifact store's remote (tests/test_artifact_remote.py, bench/artifact_cache.py)"),
    # Sources
    Need("apt-get", "apt", "fetch: Debian source packages through a private apt state"),
    Need("dpkg-deb", "dpkg", "fetch: pinned Debian binary packages"),
    Need("/usr/share/keyrings/debian-archive-keyring.gpg", "debian-archive-keyring",
         "fetch: signature of the Debian source index", "file"),
    Need("xz", "xz-utils", "fetch: .tar.xz sources"),
    Need("tar", "tar", "fetch: unpack sources"),
    # Buildroot (seedfw.buildroot): the relocated external toolchain and Buildroot's own host checks
    # (support/dependencies/dependencies.sh refuses to start without each of these).
    Need("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu", "buildroot: external toolchain's C++ compiler"),
    Need("/usr/aarch64-linux-gnu/include/stdio.h", "libc6-dev-arm64-cross",
         "buildroot: glibc headers and libraries of the external toolchain's sysroot", "file"),
    Need("dpkg-query", "dpkg", "buildroot: versions of the toolchain packages (the copy's key)"),
    Need("g++", "g++", "buildroot: host C++ compiler (Buildroot's dependency check)"),
    Need("cpio", "cpio", "buildroot: rootfs.cpio and Buildroot's dependency check"),
    Need("rsync", "rsync", "buildroot: local-site and override source dirs"),
    Need("wget", "wget", "buildroot: Buildroot's dependency check (downloads stay offline)"),
    Need("unzip", "unzip", "buildroot: Buildroot's dependency check"),
    Need("bc", "bc", "buildroot: Buildroot's dependency check"),
    Need("file", "file", "buildroot: Buildroot's dependency check, binary architecture checks"),
    Need("perl", "perl", "buildroot: Buildroot's dependency check and package scripts"),
    Need("git", "git", "buildroot: fetch the pinned tag when no mirror holds the tarball"),
    # U-Boot (seedfw.parts.uboot): its host tools, pylibfdt for binman, binman's ELF splitting
    Need("bison", "bison", "build: U-Boot's Kconfig and dtc parsers"),
    Need("flex", "flex", "build: U-Boot's Kconfig and dtc lexers"),
    Need("swig", "swig", "build: U-Boot's pylibfdt (binman reads device trees with it)"),
    Need("/usr/bin/python3-config", "python3-dev", "build: U-Boot's pylibfdt extension module",
         "file"),
    Need("/usr/lib/python3/dist-packages/setuptools/__init__.py", "python3-setuptools",
         "build: U-Boot's pylibfdt setup.py", "file"),
    Need("/usr/lib/python3/dist-packages/elftools/__init__.py", "python3-pyelftools",
         "build: binman's split-elf of BL31 when run by Debian's python3", "file"),
    Need("/usr/include/gnutls/gnutls.h", "libgnutls28-dev", "build: U-Boot's host tools "
         "(mkeficapsule)", "file"),
    Need("/usr/include/uuid/uuid.h", "uuid-dev", "build: U-Boot's host tools (mkeficapsule)", "file"),
    # Disk images (seedfw.parts.disk) and the sdcard runner
    Need("genimage", "genimage", "build: GPT disk image of SD card / virtio disk"),
    Need("mke2fs", "e2fsprogs", "build: the ext4 boot and rootfs file systems of the disk image"),
    Need("debugfs", "e2fsprogs", "build: inode times of the disk's ext4 file systems "
         "(reproducible); test: files read back out of them"),
    Need("fakeroot", "fakeroot", "build: Buildroot's rootfs.cpio unpacked with its owners and "
         "device nodes for the ext4 rootfs, without root"),
    Need("fdtoverlay", "device-tree-compiler", "build: rk3588's OPP overlay applied to the "
         "kernel's rk3588-rock-5b.dtb; boot: the same on QEMU's DT for a direct OS boot"),
    # /sbin is not on a user's PATH on Debian: looked for there by absolute path (os_modules).
    Need("/sbin/depmod", "kmod", "build: modules.dep of the kernel package and the rootfs's "
         "module index (the ext4 root's modules, seedfw.linux.modules)", "file"),
    Need("/sbin/modinfo", "kmod", "build: soft dependencies of the root modules (ext4 → crc32c)",
         "file"),
    Need("bmaptool", "bmap-tools", "build: .bmap of the disk image; flash: sdcard runner"),
    Need("fdtget", "device-tree-compiler", "test: reserved-memory node of U-Boot's DT"),
    # The manual and the HTML reports, as a reader sees them (tests/test_docs.py, test_tune_html.py)
    Need("chromium", "chromium", "test: the manual and tune/report.html rendered headless"),
    # NPU models (seedfw.models.rknn): the compiler runs with ASLR off, so a cold compile is repeatable
    Need("setarch", "util-linux", "build: rknn-toolkit2 compiles with ASLR off (setarch -R)"),
]


def packages(needs=NEEDS) -> list[str]:
    """The apt list: every package a row names, once, in the table's order."""
    return list(dict.fromkeys(n.package for n in needs))


APT_PACKAGES = packages()


def missing_packages(pkgs=None) -> list[str]:
    """Packages dpkg does not report as installed."""
    pkgs = APT_PACKAGES if pkgs is None else list(pkgs)
    if not shutil.which("dpkg-query"):
        return pkgs
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *pkgs],
                         capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
    return [p for p in pkgs if p not in installed]


OS_RELEASE = "/etc/os-release"


def distro() -> str:
    """The machine's Debian codename (VERSION_CODENAME of /etc/os-release, e.g. bookworm): the
    `distro` qualifier of a deb purl, since the same version string names other builds on
    another release. "" when the file says none."""
    from .. import reading
    text = reading.read_text(OS_RELEASE, "kconfig")      # KEY=value lines, a few hundred bytes
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "VERSION_CODENAME":
            return value.strip().strip('"')
    return ""


def owners(commands) -> dict[str, tuple[str, str]]:
    """{command: (file that runs, Debian package that ships it)} of the commands on PATH that
    dpkg knows; the rest are left out (not installed, or not from a package). The file is the
    command's real path (aarch64-linux-gnu-gcc is a link to ...-gcc-12, whose package is the
    compiler itself, not the metapackage NEEDS installs it by); on a merged-/usr machine dpkg
    may know a /usr/sbin tool by its /sbin name, so that is asked too."""
    found = {}
    for cmd in commands:
        path = shutil.which(cmd)
        if path:
            real = os.path.realpath(path)
            found[cmd] = [real, path, *([real[4:]] if real.startswith("/usr/") else [])]
    every = sorted({p for ps in found.values() for p in ps})
    if not every or not shutil.which("dpkg-query"):
        return {}
    out = subprocess.run(["dpkg-query", "-S", *every], capture_output=True, text=True).stdout
    package = {}
    for line in out.splitlines():       # "pkg[, pkg2]: /path" (diversions: "diversion by")
        pkgs, sep, path = line.partition(": ")
        if sep and not pkgs.startswith("diversion"):
            package.setdefault(path.strip(), pkgs.split(",")[0].strip())
    return {cmd: (paths[0], pkg) for cmd, paths in found.items()
            for pkg in [next((package[p] for p in paths if p in package), None)] if pkg}


def package_versions(pkgs) -> dict[str, dict[str, str]]:
    """{package: {version, arch, source, source_version}} from dpkg for installed packages."""
    pkgs = sorted(set(pkgs))
    if not pkgs or not shutil.which("dpkg-query"):
        return {}
    fmt = "${Package}|${Version}|${Architecture}|${source:Package}|${source:Version}|" \
          "${db:Status-Status}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt, *pkgs], capture_output=True,
                         text=True).stdout
    got = {}
    for line in out.splitlines():
        f = line.split("|")
        if len(f) == 6 and f[5] == "installed":
            got[f[0]] = {"version": f[1], "arch": f[2], "source": f[3], "source_version": f[4]}
    return got


def install_command(pkgs) -> list[str]:
    # --no-install-recommends on purpose: what we need must be in NEEDS, so a fresh machine and a
    # developer's machine with years of Recommends behave the same.
    return ["apt-get", "install", "-y", "--no-install-recommends", *pkgs]


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


# Python packages outside the core dependencies that a task or the test suite needs: every
# requirement of the pyproject extras except 'test' (which the README's first command installs
# itself). `invoke setup` installs the missing ones with pip and `invoke doctor` fails on them, so
# the README's `invoke test` finds them on a fresh machine — issue 27: the docs tests errored there
# because only CI installed the 'docs' extra. tests/test_fresh_machine.py checks this list against
# pyproject.toml. (module, requirement, why)
PY_NEEDS = [
    ("atheris", "atheris>=2.3,<4", "fuzz: Python reader campaigns (invoke fuzz --target py-*), "
                                   "pyproject extra 'fuzz'"),
    ("mkdocs", "mkdocs>=1.6,<2", "docs: invoke docs and tests/test_docs.py, pyproject extra 'docs'"),
    ("material", "mkdocs-material>=9.5,<10", "docs: the manual's theme, pyproject extra 'docs'"),
    ("oras", "oras>=0.2.38,<0.3", "cache: the artifact store's OCI remote (SEEDFW_CACHE_REMOTE), "
                                  "pyproject extra 'cache'"),
    ("cyclonedx", "cyclonedx-python-lib==11.12.0",
     "sbom: CycloneDX 1.6 SBOM + VEX and their validator (every build), pyproject extra 'sbom'"),
    ("spdx_python_model", "spdx-python-model==0.0.6", "sbom: the SPDX 3.0.1 SBOM (every build), "
                                                      "pyproject extra 'sbom'"),
    ("packageurl", "packageurl-python==0.17.6", "sbom: component purls, pyproject extra 'sbom'"),
    ("license_expression", "license-expression==30.4.4",
     "sbom: licences as SPDX expressions (imported by seedfw.sbom itself, not only through "
     "cyclonedx-python-lib), pyproject extra 'sbom'"),
    ("univers", "univers==32.0.1", "sbom: version ranges (invoke cve), pyproject extra 'sbom'"),
    ("sbom_cve_check", "sbom_cve_check==1.3.5", "sbom: the offline CVE matcher (invoke cve), "
                                                "pyproject extra 'sbom'"),
    ("ntia_conformance_checker", "ntia_conformance_checker==6.0.0",
     "sbom: the BSI TR-03183-2 conformance table (tests/test_sbom.py), pyproject extra 'sbom'"),
    ("labgrid", "labgrid==26.0.1", "lab: the board farm (invoke lab, --place, tests/hil), "
                                   "pyproject extra 'lab'"),
]


def missing_python() -> list[tuple[str, str, str]]:
    import importlib.util
    return [n for n in PY_NEEDS if importlib.util.find_spec(n[0]) is None]


def setup_python() -> list[str]:
    """pip-install the missing PY_NEEDS into this interpreter; returns what was installed."""
    import sys
    missing = missing_python()
    if not missing:
        return []
    cmd = [sys.executable, "-m", "pip", "install", *(req for _m, req, _w in missing)]
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        raise SeedfwError(f"'{shlex.join(cmd)}' failed with exit code {proc.returncode}")
    return [m for m, _r, _w in missing]
