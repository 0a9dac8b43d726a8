"""firmware/common (sha256.c, crc32.c, pkg_verify.c) compiled with the host cc and run on packages
the Python writer made — the same C the payload links, so its boot lines are known to match
package.expected_boot_lines() before QEMU ever runs. Also: it builds freestanding for both targets.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import zlib

import pytest

from c_layout import INCLUDE
from seedfw import boards, dvfs, models
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.images import package
from seedfw.images.entries import DvfsEntry, FirmwareEntry, ModelEntry

COMMON = INCLUDE.parent / "common"
SOURCES = [COMMON / "sha256.c", COMMON / "crc32.c", COMMON / "pkg_verify.c"]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    exe = tmp_path_factory.mktemp("pkgc") / "pkg_verify_host"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
                    f"-I{COMMON}", "-fsanitize=address,undefined", "-o", str(exe),
                    str(COMMON / "host" / "pkg_verify_host.c"), *map(str, SOURCES)], check=True)
    return exe


def run(harness, *args):
    proc = subprocess.run([str(harness), *map(str, args)], capture_output=True, text=True)
    return proc.returncode, proc.stdout.splitlines()


@pytest.fixture
def good_package(tmp_path):
    board = boards.get("qemu-aarch64")
    table = dvfs.load(board.dvfs_file)
    ms = models.load_manifest(ROOT / "tests/data/synth-models/models.yaml")  # SYNTHETIC fixture
    entries = [FirmwareEntry("payload", bytes(range(256)) * 9),
               DvfsEntry("dvfs", dvfs.encode(table, "balanced"))]
    entries += [ModelEntry.from_model(m) for m in ms]
    blob = package.encode(entries)
    path = tmp_path / "pkg.bin"
    path.write_bytes(blob)
    return path, blob


def test_good_package_prints_expected_lines(harness, good_package):
    path, blob = good_package
    rc, lines = run(harness, "verify", path)
    assert rc == 0
    assert lines == package.expected_boot_lines(blob)
    assert "dvfs: 2 domains, 7 opps, profile=balanced, crc ok" in lines
    assert "model yolov8s sha256 ok" in lines


def test_flipped_model_byte_fails(harness, good_package, tmp_path):
    path, blob = good_package
    pkg = package.decode(blob)
    yolo = next(e for e in pkg.entries if e.name == "yolov8s")
    bad = bytearray(blob)
    bad[yolo.offset + 100] ^= 0x01
    path.write_bytes(bad)
    rc, lines = run(harness, "verify", path)
    assert rc == 1
    assert "model yolov8s sha256 BAD" in lines and "model labels sha256 ok" in lines
    assert lines[-1] == "pkg: FAILED, 1 errors"


def test_damaged_entry_table_fails(harness, good_package):
    path, blob = good_package
    bad = bytearray(blob)
    bad[package.HEADER.size + 20] ^= 0xFF          # first entry's name
    path.write_bytes(bad)
    assert run(harness, "verify", path) == (1, ["pkg: header crc BAD", "pkg: FAILED"])


def test_bad_magic_and_short_region(harness, good_package):
    path, blob = good_package
    assert run(harness, "verify", path, len(blob) - 64) == (
        1, ["pkg: unsupported header", "pkg: FAILED"])          # package larger than its region
    path.write_bytes(b"XPKG" + blob[4:])
    assert run(harness, "verify", path) == (1, ["pkg: bad magic", "pkg: FAILED"])


def test_dvfs_crc_checked_inside_a_hash_valid_entry(harness, tmp_path):
    # A table whose own crc is wrong but whose package hashes match: only the DVFS crc can catch it.
    table = bytearray(dvfs.encode(dvfs.load(boards.get("rk3588").dvfs_file), "performance"))
    table[40] ^= 0x10
    path = tmp_path / "p.bin"
    path.write_bytes(package.encode([DvfsEntry("dvfs", bytes(table))]))
    rc, lines = run(harness, "verify", path)
    assert rc == 1
    assert "dvfs: 6 domains, 39 opps, profile=performance, crc BAD" in lines


@pytest.mark.parametrize("size", [0, 1, 55, 56, 63, 64, 65, 1000, 4097])
def test_sha256_and_crc32_match_python(harness, tmp_path, size):
    data = os.urandom(size)
    p = tmp_path / "d"
    p.write_bytes(data)
    assert run(harness, "sha256", p) == (0, [hashlib.sha256(data).hexdigest()])
    assert run(harness, "crc32", p) == (0, [f"{zlib.crc32(data):08x}"])


@pytest.mark.parametrize("cc", [["aarch64-linux-gnu-gcc"],
                                ["arm-none-eabi-gcc", "-mcpu=cortex-m3", "-mthumb"]])
def test_freestanding_cross_build(tmp_path, cc):
    if not shutil.which(cc[0]):
        pytest.fail(f"{cc[0]} missing (run 'invoke setup')")
    objs = []
    for src in SOURCES:
        obj = tmp_path / (src.stem + ".o")
        subprocess.run([*cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding",
                        "-nostdlib", f"-I{INCLUDE}", f"-I{COMMON}", "-c", "-o", str(obj), str(src)],
                       check=True)
        objs.append(obj)
    nm = cc[0].replace("gcc", "nm")
    listing = subprocess.run([nm, "-u", *map(str, objs)], capture_output=True, text=True,
                             check=True).stdout
    undefined = {line.split()[-1] for line in listing.splitlines() if line.strip().startswith("U ")}
    # Nothing from libc (no memcpy/memset the compiler slipped in): only our own three modules.
    assert undefined == {"seedfw_crc32", "seedfw_sha256"}


# ---------------------------------------------------------------- the same C on AArch64 in QEMU

PKG_ADDR = 0x60400000   # the address proposed for the qemu-aarch64 payload (inside DRAM)


@pytest.fixture(scope="module")
def qemu_verifier(tmp_path_factory):
    elf = tmp_path_factory.mktemp("qemu") / "verify.elf"
    qdir = COMMON / "qemu"
    subprocess.run(["aarch64-linux-gnu-gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-ffreestanding", "-nostdlib", "-mstrict-align", "-mgeneral-regs-only",
                    f"-DPKG_ADDR={PKG_ADDR:#x}UL", f"-I{INCLUDE}", f"-I{COMMON}",
                    "-T", str(qdir / "link.ld"), "-Wl,--no-warn-rwx-segments", "-o", str(elf),
                    str(qdir / "start.S"), str(qdir / "main.c"), *map(str, SOURCES)], check=True)
    return elf


def boot(elf, pkg_path):
    proc = subprocess.run(
        ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a57", "-m", "1024", "-nographic", "-nic", "none",
         "-monitor", "none", "-semihosting-config", "enable=on,target=native", "-kernel", str(elf),
         "-device", f"loader,file={pkg_path},addr={PKG_ADDR:#x}"],
        capture_output=True, text=True, timeout=60)
    return proc.returncode, [l.rstrip("\r") for l in proc.stdout.splitlines()]


@pytest.mark.slow
def test_verifier_in_qemu_good_and_corrupted(qemu_verifier, good_package, tmp_path):
    """Real QEMU AArch64, the package loaded at PKG_ADDR the way the qemu-aarch64 build will."""
    path, blob = good_package
    rc, lines = boot(qemu_verifier, path)
    assert rc == 0, lines
    assert lines == package.expected_boot_lines(blob)
    bad = bytearray(blob)
    yolo = next(e for e in package.decode(blob).entries if e.name == "yolov8s")
    bad[yolo.offset + yolo.size - 1] ^= 0x80
    corrupted = tmp_path / "bad.bin"
    corrupted.write_bytes(bad)
    rc, lines = boot(qemu_verifier, corrupted)
    assert rc == 1
    assert "model yolov8s sha256 BAD" in lines and lines[-1] == "pkg: FAILED, 1 errors"


def test_random_corruptions_c_and_python_agree(harness, good_package, tmp_path):
    """Flip one random bit at 16 random places (half in covered bytes, half in padding): the C
    verifier fails exactly when the byte is covered (header, entry table, an entry's data),
    never crashes (ASan), and the Python reader agrees."""
    import random

    path, blob = good_package
    pkg = package.decode(blob)
    table_end = package.HEADER.size + package.ENTRY.size * len(pkg.entries)
    covered = [(0, table_end)] + [(e.offset, e.offset + e.size) for e in pkg.entries]
    rng = random.Random(1234)
    seen = set()
    places = [i for i in range(len(blob)) if any(a <= i < b for a, b in covered)]
    padding = sorted(set(range(len(blob))) - set(places))
    for at in rng.sample(places, 8) + rng.sample(padding, 8):
        bad = bytearray(blob)
        bad[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bad)
        rc, lines = run(harness, "verify", path)
        is_covered = any(a <= at < b for a, b in covered)
        seen.add(is_covered)
        assert rc == (1 if is_covered else 0), (at, lines)
        try:
            py_ok = all(e.ok for e in package.decode(bytes(bad)).entries)
        except SeedfwError:                           # structural damage (header, entry table)
            py_ok = False
        assert py_ok == (not is_covered)
    assert seen == {True, False}          # both kinds of place were hit


# ------------------------------------------- both SHA-256 block functions, on an A76 in QEMU

# How each block function is chosen (sha256.c): the compiler's target decides. The portable
# build keeps the payload's -mgeneral-regs-only; the SHA2 one enables the Crypto Extensions.
SHA256_BUILDS = {"portable": ["-mgeneral-regs-only"], "armv8-sha2": ["-march=armv8-a+crypto"]}
HASH_SIZES = [0, 1, 55, 56, 63, 64, 65, 1000, 300_001]


def build_hasher(dest, impl):
    qdir = COMMON / "qemu"
    elf = dest / f"hash-{impl}.elf"
    subprocess.run(["aarch64-linux-gnu-gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-ffreestanding", "-nostdlib", "-mstrict-align", *SHA256_BUILDS[impl],
                    "-DHASH_ONLY", f"-DPKG_ADDR={PKG_ADDR:#x}UL", f"-I{INCLUDE}", f"-I{COMMON}",
                    "-T", str(qdir / "link.ld"), "-Wl,--no-warn-rwx-segments", "-o", str(elf),
                    str(qdir / "start.S"), str(qdir / "main.c"), str(COMMON / "sha256.c")],
                   check=True)
    return elf


@pytest.fixture(scope="module")
def hashers(tmp_path_factory):
    dest = tmp_path_factory.mktemp("hash")
    return {impl: build_hasher(dest, impl) for impl in SHA256_BUILDS}


def hash_in_qemu(elf, data, tmp_path):
    blob = tmp_path / "in.bin"
    blob.write_bytes(len(data).to_bytes(8, "little") + bytes(56) + data)
    proc = subprocess.run(
        ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a76", "-m", "1024", "-nographic",
         "-nic", "none", "-monitor", "none", "-semihosting-config", "enable=on,target=native",
         "-kernel", str(elf), "-device", f"loader,file={blob},addr={PKG_ADDR:#x}"],
        capture_output=True, text=True, timeout=300)
    return proc.returncode, [l.rstrip("\r") for l in proc.stdout.splitlines()]


def test_sha2_build_has_the_instructions_and_portable_has_none(hashers):
    """The build-time choice is real: the SHA2 ELF carries SHA256H/H2/SU0/SU1, the portable one
    none of them (negative control)."""
    for impl, elf in hashers.items():
        dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(elf)], capture_output=True,
                             text=True, check=True).stdout
        ops = {op: len(re.findall(rf"\t{op}\t", dis))
               for op in ("sha256h", "sha256h2", "sha256su0", "sha256su1")}
        if impl == "portable":
            assert ops == dict.fromkeys(ops, 0), ops
        else:
            assert ops == {"sha256h": 16, "sha256h2": 16, "sha256su0": 12, "sha256su1": 12}, ops


@pytest.mark.slow
def test_both_sha256_block_functions_match_hashlib_in_qemu(hashers, tmp_path):
    """Each build hashes random bytes of the boundary sizes (and a large one) on an emulated
    Cortex-A76; the digest must be hashlib's, and the line names the block function that ran."""
    rng = random.Random(33)
    for size in HASH_SIZES:
        data = rng.randbytes(size)
        for impl, elf in hashers.items():
            assert hash_in_qemu(elf, data, tmp_path) == (
                0, [f"{impl} {hashlib.sha256(data).hexdigest()}"]), (impl, size)
    # negative control: a digest of other bytes is not accepted as this one
    rc, lines = hash_in_qemu(hashers["armv8-sha2"], b"abc", tmp_path)
    assert lines != [f"armv8-sha2 {hashlib.sha256(b'abd').hexdigest()}"]
