"""U-Boot 2025.01 for rk3588: pinned sources, the cached compile, binman's outputs read back byte by
byte (RKNS idblock, u-boot.itb with BL31, FDT and the DVFS loadable), and the missing-blob paths.

The slow tests share the session's rk3588 build (tests/builds.py); its U-Boot compile is cached in
<seedfw cache>/u-boot, so the extra output directories here only run binman (~2 s).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

import pytest

import builds
from c_layout import c_layout, c_macros
from cli import invoke, one_error_line
from seedfw.sources.debian_pool import pool_directory
from seedfw.errors import SeedfwError
from seedfw.images import idblock
from seedfw.parts import uboot_rockchip as rockchip
from seedfw.sources import rkbin

DDR_BLOB = rkbin.DDR.name


# ---- fast ----------------------------------------------------------------------------------------

def test_rkns_layout_matches_c_header():
    lay = c_layout("seedfw/rkns.h", {"rkns_header": ["magic", "size_and_nimage", "boot_flag",
                                                     "images", "hash"],
                                     "rkns_image": ["size_and_off", "hash"]})
    h, i = lay["rkns_header"], lay["rkns_image"]
    assert h["sizeof"] == idblock.HEADER_SIZE and h["images"] == idblock.IMAGES_OFFSET
    assert i["sizeof"] == idblock.IMAGE_ENTRY_SIZE and i["hash"] == idblock.IMAGE_HASH_OFFSET
    assert (h["size_and_nimage"], h["boot_flag"], i["size_and_off"]) == (8, 12, 0)
    m = c_macros("seedfw/rkns.h", ["RKNS_MAGIC", "RKNS_SECTOR", "RKNS_MAX_IMAGES"])
    assert m["RKNS_MAGIC"].to_bytes(4, "little") == idblock.MAGIC
    assert (m["RKNS_SECTOR"], m["RKNS_MAX_IMAGES"]) == (idblock.SECTOR, idblock.MAX_IMAGES)


def test_pool_directory_from_showsrc():
    text = ("Package: u-boot\nVersion: 2024.01-1\nDirectory: pool/main/u/old\n\n"
            "Package: u-boot\nVersion: 2025.01-3+deb13u1\nDirectory: pool/main/u/u-boot\n")
    assert pool_directory(text, "2025.01-3+deb13u1") == "pool/main/u/u-boot"
    with pytest.raises(SeedfwError, match="no version 2025.01-9"):
        pool_directory(text, "2025.01-9")


def test_not_an_idblock_is_one_clear_error(tmp_path):
    with pytest.raises(SeedfwError) as err:
        idblock.parse(b"\0" * 4096, 0, tmp_path / "x.bin")
    assert err.value.line().endswith("x.bin: offset 0x0: no RKNS idblock header (found 00000000): "
                                     "not a bootable RK3588 image")


# ---- slow: the session's rk3588 build --------------------------------------------------------------

def _dumpimage_list(path) -> str:
    return subprocess.run(["dumpimage", "-l", str(path)], check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.slow
def test_u_boot_rockchip_layout(rk3588_build):
    sd = builds.image(rk3588_build, "u-boot-rockchip.bin").read_bytes()
    itb = builds.image(rk3588_build, "u-boot.itb").read_bytes()
    ddr = (rkbin.fetch(progress=lambda m: None)[DDR_BLOB]).read_bytes()
    assert sd[:4] == b"RKNS"
    block = idblock.parse(sd)
    assert block.ok and block.hash_algo == "sha256" and len(block.images) == 2
    assert block.images[0].offset == 0x800 and block.image_bytes(sd, 0)[:len(ddr)] == ddr
    assert sd[0x7F8000:0x7F8004] == b"\xd0\x0d\xfe\xed" and sd[0x7F8000:0x7F8000 + len(itb)] == itb
    spi = builds.image(rk3588_build, "u-boot-rockchip-spi.bin").read_bytes()
    assert spi[0x8000:0x8004] == b"RKNS" and spi[0x60000:0x60000 + len(itb)] == itb
    idb = builds.image(rk3588_build, "idbloader.img").read_bytes()
    assert sd[:len(idb)] == idb


@pytest.mark.slow
def test_u_boot_itb_has_bl31_fdt_and_dvfs(rk3588_build, tmp_path):
    itb = builds.image(rk3588_build, "u-boot.itb")
    listing = _dumpimage_list(itb)
    images = re.findall(r"Image (\d+) \((\S+)\)", listing)
    names = [n for _, n in images]
    assert names[:2] == ["u-boot", "atf-1"] and "fdt-1" in names and "dvfs" in names
    assert "fdt-rockchip/rk3588-rock-5b" in listing
    assert re.search(r"\(atf-1\)(?:.|\n)*?Load Address: 0x00040000", listing)
    assert re.search(r"\(atf-\d\)(?:.|\n)*?Load Address: 0xff100000", listing)
    assert re.search(r"\(dvfs\)(?:.|\n)*?Load Address: 0x1f000000", listing)
    assert re.search(r"Loadables:\s+u-boot\s+dvfs", listing)
    index = dict((n, i) for i, n in images)
    out = tmp_path / "dvfs.out"
    subprocess.run(["dumpimage", "-T", "flat_dt", "-p", index["dvfs"], "-o", str(out), str(itb)],
                   check=True, capture_output=True)
    assert out.read_bytes() == builds.image(rk3588_build, "dvfs/dvfs.bin").read_bytes()
    # The address is reserved in the DT SPL hands to U-Boot (fdt-1)
    fdt = tmp_path / "fdt.dtb"
    subprocess.run(["dumpimage", "-T", "flat_dt", "-p", index["fdt-1"], "-o", str(fdt), str(itb)],
                   check=True, capture_output=True)
    reg = subprocess.run(["fdtget", "-t", "x", str(fdt), "/reserved-memory/seedfw-dvfs@1f000000",
                          "reg"], check=True, capture_output=True, text=True).stdout.split()
    assert reg == ["0", "1f000000", "0", "100000"]


@pytest.mark.slow
def test_corrupted_spl_is_caught(rk3588_build, tmp_path):
    """Negative control for the build's own check: one flipped byte inside SPL."""
    images = builds.image(rk3588_build, "")
    out = tmp_path / "out"
    out.mkdir()
    for n in ("u-boot-rockchip.bin", "u-boot-rockchip-spi.bin", "idbloader.img", "u-boot.itb"):
        shutil.copy(images / n, out / n)
    ddr = rkbin.fetch(progress=lambda m: None)[DDR_BLOB].read_bytes()
    dvfs = (images / "dvfs" / "dvfs.bin").read_bytes()
    segments = rockchip.bl31_segments(images / "bl31-lz4.elf")
    assert len(rockchip.check_outputs(out, ddr, dvfs, 0x1F000000, segments)) == 3
    blob = bytearray((out / "u-boot-rockchip.bin").read_bytes())
    blob[0x13000 + 100] ^= 1
    (out / "u-boot-rockchip.bin").write_bytes(bytes(blob))
    assert [i.hash_ok for i in idblock.parse(bytes(blob)).images] == [True, False]
    with pytest.raises(SeedfwError, match="RKNS digests do not match"):
        rockchip.check_outputs(out, ddr, dvfs, 0x1F000000, segments)


@pytest.mark.slow
def test_manifest_declares_boot_artifacts(rk3588_build):
    manifest = json.loads((rk3588_build.outdir / "manifest.json").read_text())
    boot = {a["name"]: a["declared"]["role"] for a in manifest["artifacts"] if a["role"] == "boot"}
    # The combined SD/SPI images hold idbloader.img + u-boot.itb: declared, but not counted as
    # read at boot a second time.
    # ... and the OS the defconfig turns on (docs/os.md): what extlinux.conf names.
    assert boot == {"idbloader.img": "idbloader", "u-boot.itb": "fit", "rk3588.itb": "firmware-fit",
                    "Image": "kernel", "rk3588-rock-5b-seedfw.dtb": "dtb",
                    "initramfs.cpio": "initramfs", "extlinux.conf": "extlinux",
                    # the overlay reserving the boot package U-Boot verified (seedfw.parts.fit_verify)
                    "seedfw-boot-package.dtbo": "dtb-overlay"}
    declared = {a["name"]: a["declared"]["role"] for a in manifest["artifacts"] if "declared" in a}
    assert declared["rk3588-disk.img"] == "disk" and declared[rkbin.LOADER_NAME] == "loader"
    assert manifest["flash"] == {"rockusb": ["images/rk3588-disk.img"],
                                 "sdcard": ["images/rk3588-disk.img"]}
    assert "non_functional" not in manifest
    doc = json.loads(builds.image(rk3588_build, "uboot.json").read_text())
    assert doc["functional"] and doc["blobs"]["rockchip-tpl"]["sha256"] == rkbin.DDR.sha256


# ---- slow: blobs missing or wrong ------------------------------------------------------------------

@pytest.mark.slow
def test_missing_and_wrong_blob_are_errors(tmp_path):
    frag = tmp_path / "tpl.fragment"
    frag.write_text(f'CONFIG_UBOOT_ROCKCHIP_TPL="{tmp_path}/nope.bin"\n')
    line = one_error_line(invoke("build", "--board", "rk3588", "--output", tmp_path / "a",
                                 "--fragment", frag))
    assert line.endswith(f".config: CONFIG_UBOOT_ROCKCHIP_TPL: DDR init blob {tmp_path}/nope.bin "
                         f"does not exist (the pinned one is {DDR_BLOB}; unset it to fetch that, "
                         "or build with --allow-missing-blobs for a NON-FUNCTIONAL placeholder)")
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(b"\0" * 75320)
    frag.write_text(f'CONFIG_UBOOT_ROCKCHIP_TPL="{wrong}"\n')
    line = one_error_line(invoke("build", "--board", "rk3588", "--output", tmp_path / "b",
                                 "--fragment", frag, "--allow-missing-blobs"))
    zeros = hashlib.sha256(b"\0" * 75320).hexdigest()
    assert line.endswith(f"CONFIG_UBOOT_ROCKCHIP_TPL: DDR init blob {wrong} has sha256 {zeros}, "
                         f"not the pinned {rkbin.DDR.sha256} ({DDR_BLOB})")
    assert not (tmp_path / "b" / "images" / "u-boot-rockchip.bin").exists()


@pytest.mark.slow
def test_allow_missing_blobs_is_non_functional_everywhere(tmp_path):
    frag = tmp_path / "tpl.fragment"
    frag.write_text(f'CONFIG_UBOOT_ROCKCHIP_TPL="{tmp_path}/nope.bin"\n')
    out = tmp_path / "out"
    proc = invoke("build", "--board", "rk3588", "--output", out, "--fragment", frag,
                  "--allow-missing-blobs")
    assert proc.returncode == 0, proc.stderr
    assert "NON-FUNCTIONAL u-boot-rockchip.bin: placeholder: DDR init blob" in proc.stdout
    # the cached compile was reused: only binman ran for U-Boot
    assert "rock5b-rk3588: compiled build reused from the cache" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    flags = {a["name"]: a.get("functional", True) for a in manifest["artifacts"]}
    assert not flags["u-boot-rockchip.bin"] and not flags["idbloader.img"] and flags["rk3588.itb"]
    sd = (out / "images" / "u-boot-rockchip.bin").read_bytes()
    assert sd[:4] != b"RKNS"                 # what binman wrote, exit code 0 notwithstanding
    line = one_error_line(invoke("flash", "--board", "rk3588", "--output", out))
    assert "NON-FUNCTIONAL image, refusing to flash it: placeholder: DDR init blob" in line
    report = (out / "report" / "report.md").read_text()
    assert "NON-FUNCTIONAL u-boot-rockchip.bin: placeholder: DDR init blob" in report
    proc = invoke("inspect", out / "images" / "u-boot-rockchip.bin")
    assert proc.returncode == 1 and "NON-FUNCTIONAL" in proc.stdout
    assert "entries failed verification: NON-FUNCTIONAL" in proc.stderr


# ---- slow: qemu-aarch64, TF-A → U-Boot (BL33) → our payload from the virtio disk -----------------

def _boot(outdir, log_name):
    from seedfw import boards
    from seedfw.run import payload as qemu
    return qemu.run(boards.get("qemu-aarch64"), outdir, timeout=120, echo=lambda s: None,
                    log=outdir / "logs" / log_name)


@pytest.mark.slow
def test_qemu_boots_through_u_boot(qemu_aarch64_build):
    result = _boot(qemu_aarch64_build.outdir, "uboot-boot.log")
    lines = result.lines
    assert result.returncode == 0

    def at(prefix):
        return next(i for i, l in enumerate(lines) if l.startswith(prefix))

    assert at("U-Boot 2025.01-seedfw") < at("seedfw: firmware FIT from virtio") < \
        at("seedfw payload ") < at("pkg: ok")
    assert "   Hash(es) for Image 0 (payload): sha256+ " in lines
    assert "   Hash(es) for Image 1 (package): sha256+ " in lines
    assert "seedfw: FIT verified, starting the payload" in lines
    assert any(l.startswith("NOTICE:  BL31: v2.12.1") for l in lines)


@pytest.mark.slow
def test_tampered_fit_stops_in_u_boot(qemu_aarch64_build, tmp_path):
    """Negative control: one byte of the payload flipped inside the FIT on the disk, hashes left
    as they were: U-Boot must refuse it with its own hash error and never start the payload."""
    out = tmp_path / "out"
    shutil.copytree(qemu_aarch64_build.outdir, out, symlinks=True)
    disk = out / "images" / "qemu-aarch64-disk.img"
    blob = bytearray(disk.read_bytes())
    base = 16 << 20
    fit = bytes(blob[base:base + (4 << 20)])
    payload = idblock.fit_images(fit)[1]["payload"]
    at = base + fit.index(payload) + len(payload) // 2
    blob[at] ^= 0x01
    disk.write_bytes(bytes(blob))
    result = _boot(out, "tampered.log")
    lines = result.lines
    assert any("sha256 error!" in l for l in lines), lines
    assert "Bad hash value for 'hash-1' hash node in 'payload' image node" in lines
    assert "seedfw: firmware FIT rejected, not booting" in lines
    assert not any(l.startswith("seedfw payload ") for l in lines)
