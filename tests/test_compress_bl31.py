"""BL31 with an LZ4-compressed .rodata (firmware/tf-a/patches/0001-bl31-lz4-rodata.patch +
seedfw.compress.bl31), built for real and booted in QEMU.

The qemu chain (BL1, BL2, BL31, a 16-byte BL33 that calls PSCI SYSTEM_OFF) boots from a BL31
whose .rodata is all zeros in the image: BL31's own banner strings ("BL31: v2.12.1") live in
.rodata, so seeing them on the UART proves the early hook expanded it. Negative control: one
flipped byte in the container and BL31 stops before printing anything (the hook halts).
rk3588 is absent hardware: its BL31 is built and post-processed through the same code, and the
container is checked by decoding it on the host against the original .rodata.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from c_layout import c_layout, c_macros
from seedfw import sources
from seedfw.compress import bl31
from seedfw.compress.container import read_container
from seedfw.compress.dictionary import Dictionary
from seedfw.errors import SeedfwError

ROOT = Path(__file__).resolve().parents[1]
PROJECT_DICT = ROOT / "firmware" / "lz4" / "dict" / "aarch64-rodata.dict"
CROSS = "aarch64-linux-gnu-"


def test_unpatched_elf_is_one_clear_error(tmp_path):
    """A BL31 without the patch (here: any ELF without its symbols) is refused by name."""
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-o", tmp_path / "m.elf", tmp_path / "m.c"], check=True)
    with pytest.raises(SeedfwError) as e:
        bl31.embed_rodata_elf(tmp_path / "m.elf", tmp_path / "out.elf")
    assert e.value.line() == (f"{tmp_path / 'm.elf'}: symbols: symbols __BL31_END__ "
                              "__BL31_START__ __RODATA_END__ __RODATA_START__ seedfw_lz4_rodata "
                              "seedfw_lz4_stack not found: was BL31 built with the seedfw LZ4 "
                              ".rodata patch and SEEDFW_LZ4_RODATA=1?")
    assert not (tmp_path / "out.elf").exists()


def test_descriptor_layout_matches_c():
    lay = c_layout("seedfw/lz4blk.h", {"lz4blk_rodata_desc": ["magic", "status", "entry", "dict",
                                                              "dict_len"]})["lz4blk_rodata_desc"]
    assert lay == {"sizeof": bl31.DESC.size, "magic": 0, "status": 4, "entry": 8, "dict": 40,
                   "dict_len": 48}
    assert c_macros("seedfw/lz4blk.h", ["LZ4BLK_DESC_MAGIC"])["LZ4BLK_DESC_MAGIC"] == bl31.DESC_MAGIC


def make(tree: Path, *args, log: Path) -> None:
    with open(log, "a") as f:
        subprocess.run(["make", "-j2", f"CROSS_COMPILE={CROSS}", "SEPARATE_CODE_AND_RODATA=1",
                        "SEEDFW_LZ4_RODATA=1", f"SEEDFW_LZ4_DIR={ROOT / 'firmware' / 'lz4'}",
                        'BUILD_MESSAGE_TIMESTAMP="00:00:00, Jan  1 2024"', *args],
                       cwd=tree, check=True, stdout=f, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def tfa_tree(tmp_path_factory) -> Path:
    from seedfw.parts import tfa
    tree = tmp_path_factory.mktemp("tfa") / "src"
    sources.extract(tfa.source("2.12.1"), tree, progress=lambda s: None)
    assert (tree / "lib" / "seedfw_lz4" / "seedfw_lz4_rodata.c").is_file(), "patch not applied"
    return tree


def poweroff_bl33(d: Path) -> Path:
    (d / "off.S").write_text(".globl _start\n_start:\n movz w0, #0x0008\n"
                             " movk w0, #0x8400, lsl #16\n smc #0\n1: b 1b\n")
    subprocess.run([CROSS + "as", d / "off.S", "-o", d / "off.o"], check=True)
    subprocess.run([CROSS + "objcopy", "-O", "binary", d / "off.o", d / "off.bin"], check=True)
    return d / "off.bin"


def boot(bios: Path, timeout: float, hang_after: str | None = None,
         grace: float = 5.0) -> tuple[int | None, str]:
    """Boot `bios` on QEMU; (exit code, or None when it had to be killed; the UART output).

    `timeout` is a host deadline, generous (the boot takes about a second of TCG). With
    `hang_after` (a negative control that must hang): wait for that text, an event, within
    `timeout`, then give the guest `grace` more seconds (BL31's banner follows BL1's hand-over
    within milliseconds: a wide margin) before killing it."""
    p = subprocess.Popen(["qemu-system-aarch64", "-nographic", "-machine", "virt,secure=on",
                          "-cpu", "cortex-a57", "-smp", "1", "-m", "1024", "-bios", bios,
                          "-monitor", "none", "-serial", "stdio", "-nic", "none"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(p.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while hang_after and p.poll() is None and time.monotonic() < deadline:
        if any(hang_after in line for line in list(seen)):
            deadline = time.monotonic() + grace
            break
        time.sleep(0.05)
    try:
        p.wait(timeout=max(0.0, deadline - time.monotonic()))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = None
    reader.join(10)
    return rc, "".join(seen)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-aarch64") is None, reason="no qemu-system-aarch64")
def test_qemu_boots_with_compressed_bl31_rodata(tfa_tree, tmp_path):
    log = tmp_path / "build.log"
    base = tmp_path / "build"
    make(tfa_tree, "PLAT=qemu", f"BUILD_BASE={base}", "bl31", log=log)
    rel = base / "qemu" / "release"
    packed = tmp_path / "bl31.packed.bin"
    # the dictionary does not pay for BL31's 4-8 KiB .rodata (the verdict says so); store it
    # anyway so the boot exercises matches that reach into a dictionary
    res = bl31.embed_rodata(rel / "bl31" / "bl31.elf", rel / "bl31.bin", packed, 65536, 12,
                            Dictionary.from_file(PROJECT_DICT), always_dict=True)
    assert res.dict_size == 2048 and res.section.verdict.endswith("not worth it")
    image = packed.read_bytes()
    start = bl31.elf_symbols(rel / "bl31" / "bl31.elf")["__BL31_START__"]
    assert not any(image[res.rodata - start:res.rodata - start + res.rodata_size])
    assert res.container_size < res.rodata_size

    bl33 = poweroff_bl33(tmp_path)
    make(tfa_tree, "PLAT=qemu", f"BUILD_BASE={base}", f"BL33={bl33}", f"BL31={packed}", "all",
         "fip", log=log)
    rc, out = boot(rel / "qemu_fw.bios", 300)
    assert rc is not None, "host deadline: QEMU did not power off within 300 s:\n" + out
    assert "NOTICE:  BL31: v2.12.1(release)" in out, out
    assert rc == 0, out

    # negative control: a corrupted container stops BL31 before its first message
    bad = bytearray(image)
    bad[res.container - start + 100] ^= 0xFF
    badbin = tmp_path / "bl31.bad.bin"
    badbin.write_bytes(bad)
    base2 = tmp_path / "build-bad"
    make(tfa_tree, "PLAT=qemu", f"BUILD_BASE={base2}", f"BL33={bl33}", f"BL31={badbin}", "all",
         "fip", log=log)
    rc, out = boot(base2 / "qemu" / "release" / "qemu_fw.bios", 300, hang_after="BL1: Booting BL31")
    assert "BL1: Booting BL31" in out, "host deadline: BL1 did not hand over within 300 s:\n" + out
    assert "BL31: v2.12.1" not in out and rc is None, out


@pytest.mark.slow
def test_rk3588_bl31_builds_and_packs(tfa_tree, tmp_path):
    log = tmp_path / "build.log"
    make(tfa_tree, "PLAT=rk3588", f"BUILD_BASE={tmp_path}", "bl31", log=log)
    rel = tmp_path / "rk3588" / "release"
    elf = rel / "bl31" / "bl31.elf"
    # rk3588's bl31.bin would span DDR and SRAM: pack the DDR load segment as the flat image
    subprocess.run([CROSS + "objcopy", "-O", "binary", "-j", ".text", "-j", ".rodata", "-j",
                    ".data", elf, tmp_path / "ddr.bin"], check=True)
    sym = bl31.elf_symbols(elf)
    original = (tmp_path / "ddr.bin").read_bytes()[sym["__RODATA_START__"] - sym["__BL31_START__"]:
                                                    sym["__RODATA_END__"] - sym["__BL31_START__"]]
    res = bl31.embed_rodata(elf, tmp_path / "ddr.bin", tmp_path / "packed.bin", 65536, 12,
                            Dictionary.from_file(PROJECT_DICT))
    assert res.dict_size == 0 and not res.section.use_dict         # not worth its 2 KiB
    packed = (tmp_path / "packed.bin").read_bytes()
    off = res.container - sym["__BL31_START__"]
    assert read_container(packed[off:off + res.container_size]) == original
    desc = bl31.DESC.unpack_from(packed, sym["seedfw_lz4_rodata"] - sym["__BL31_START__"])
    assert desc == (bl31.DESC_MAGIC, 0, res.container, res.container_size, res.rodata,
                    res.rodata_size, 0, 0)

    # the ELF variant (rk3588 images are built from load segments): .rodata leaves the file
    out = tmp_path / "bl31.lz4.elf"
    eres = bl31.embed_rodata_elf(elf, out, 65536, 12)
    _, segs = bl31.load_segments(out)
    assert not [s for s in segs if s.vaddr < eres.rodata + eres.rodata_size
                and eres.rodata < s.vaddr + len(s.data)], "rodata still loaded"
    holder = next(s for s in segs if s.vaddr <= eres.container < s.vaddr + len(s.data))
    at = eres.container - holder.vaddr
    assert read_container(holder.data[at:at + eres.container_size]) == original
    saved = eres.image_size_before - eres.image_size_after     # file bytes of all segments
    assert eres.rodata_size - eres.container_size - 16 < saved <= (eres.rodata_size
                                                                   - eres.container_size)
