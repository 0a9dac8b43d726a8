"""Section compression in the real build (seedfw.compress.stage, packages/tfa.py, packages/payload.py).

The defconfigs turn it on (qemu-aarch64: TFA_COMPRESS_RODATA, which selects COMPRESS_SECTIONS;
rk3588: RK3588_COMPRESS_RODATA), so the session builds `qemu_aarch64_build` and `rk3588_build`
(tests/conftest.py) ARE the compressed builds:

* qemu-aarch64 boots BL1 → BL2 → BL31 (its .rodata zeroed in the image, expanded by the TF-A patch's
  hook: the banner strings come out of the decoder) → BL33 (our payload, whose .rodata is not in
  bl33.bin at all: sections.c expands it before main). The payload prints the crc32 of its
  expanded .rodata; we compare it with the crc32 of the section in the uncompressed ELF.
  Negative control: one flipped byte in the payload's container and the payload stops before
  main, saying so.
* rk3588 is absent hardware: its BL31 is built with RK3588_COMPRESS_RODATA=y and the FIT is read
  back with dumpimage: it carries the load segments with the container instead of .rodata, which
  decodes (on the host) to the original section.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zlib

import pytest
from elftools.elf.elffile import ELFFile

import builds
from seedfw import boards, build as build_mod
from seedfw.run import payload as qemu
from seedfw.compress import bl31, stage
from seedfw.compress.container import read_container
from seedfw.compress.sections import read_elf_sections
from seedfw.config import configure
from seedfw.errors import SeedfwError
from seedfw.parts import BuildContext, declare
from seedfw.plan import Plan

LINE = re.compile(r"^lz4: \.rodata (\d+) -> (\d+) bytes, crc32 0x([0-9a-f]{8})$")


# ---- fast: settings, the step graph, fragments, manifest roles ----------------------------------

def test_settings_follow_kconfig(tmp_path):
    s = stage.settings(configure("qemu-aarch64", tmp_path).values)
    assert (s.sections, s.block_size, s.level, s.dict_source, s.dict_size, s.dict_path) == \
        ((".rodata",), 65536, 12, "trained", 2048, stage.PROJECT_DICT)
    assert len(s.dictionary().data) == 2048 and s.stamp()["dict_sha256"]
    none = stage.settings({"COMPRESS_DICT_NONE": True, "COMPRESS_DICT_SIZE": 0})
    assert none.dict_size == 0 and none.dictionary().data == b"" and none.stamp()["dict_path"] == ""


def test_bad_settings_are_one_line_naming_the_field(tmp_path):
    with pytest.raises(SeedfwError) as e:
        stage.settings({"COMPRESS_DICT_FILE": True, "COMPRESS_DICT_SIZE": 2048,
                        "COMPRESS_DICT_PATH": "firmware/lz4/dict/missing.dict"}, tmp_path / ".config")
    assert e.value.line() == (f"{tmp_path / '.config'}: CONFIG_COMPRESS_DICT_PATH: dictionary file "
                              "firmware/lz4/dict/missing.dict not found")
    s = stage.settings({"COMPRESS_SECTION_LIST": ".rodata .data"})
    with pytest.raises(SeedfwError) as e:
        stage.check_sections(s, (".rodata",), "the payload", ".config")
    assert e.value.line() == (".config: CONFIG_COMPRESS_SECTION_LIST: the payload can store only "
                              ".rodata compressed, not .data")


def step_graph(board, tmp_path) -> Plan:
    cfg = configure(board, tmp_path)
    ctx = BuildContext(cfg, progress=lambda m: None)
    plan = Plan(tmp_path)
    declare(ctx, plan)
    plan.link()                 # needs → dependencies, as a run does first
    return plan


def test_qemu_step_graph_compresses_before_the_fip(tmp_path):
    plan = step_graph("qemu-aarch64", tmp_path)
    deps = {n: set(s.deps) for n, s in plan.steps.items()}
    assert deps["tfa.compress"] == {"tfa.build"}
    # the FIP's BL33 is U-Boot, which loads the (compressed) payload from the disk image
    assert deps["tfa.fip"] == {"tfa.compress", "uboot.build"}
    assert deps["payload.compress"] == {"payload.build"}
    assert deps["compress.report"] == {"tfa.compress", "payload.compress"}
    order = plan.order()
    assert order.index("uboot.build") < order.index("tfa.fip")


def test_rk3588_step_graph_has_no_fip(tmp_path):
    plan = step_graph("rk3588", tmp_path)
    assert {"tfa.build", "tfa.compress", "compress.report"} <= set(plan.steps)
    assert "tfa.fip" not in plan.steps and "payload.build" not in plan.steps


def test_uncompressed_config_keeps_one_tfa_step(tmp_path):
    frag = tmp_path / "off.fragment"
    frag.write_text("# CONFIG_TFA_COMPRESS_RODATA is not set\n")
    cfg = configure("qemu-aarch64", tmp_path / "out", [frag])
    ctx = BuildContext(cfg, progress=lambda m: None)
    plan = Plan(tmp_path)
    stale = ctx.outdir / "compression.json"       # from an earlier build with compression on
    stale.write_text("{}")
    declare(ctx, plan)
    assert "compress.report" not in plan.steps
    assert not stale.exists()                     # the report must not describe old images
    assert sorted(plan.steps) == ["disk.image", "image.pack", "models.compile", "payload.build",
                                  "qemu-plugin.build", "qemu-plugin.fetch", "tfa.build",
                                  "tfa.extract", "tfa.fetch", "uboot.build", "uboot.fetch"]


def test_manifest_roles(tmp_path):
    (tmp_path / "a.elf").write_bytes(b"\x7fELF" + bytes(60))
    (tmp_path / "qemu_fw.bios").write_bytes(b"\x7fELF-not-really")
    (tmp_path / "fip.bin").write_bytes(b"x")
    boot = {"qemu_fw.bios"}
    assert [build_mod.artifact_role(tmp_path / n, boot) for n in ("a.elf", "qemu_fw.bios",
                                                                  "fip.bin")] == \
        ["debug", "boot", "aux"]


# ---- slow: the real builds ---------------------------------------------------------------------

def boot_lines(result) -> list[str]:
    run = qemu.run(boards.get("qemu-aarch64"), result.outdir, timeout=120, echo=lambda s: None)
    assert run.returncode == 0, run.lines
    return run.lines


@pytest.mark.slow
def test_qemu_boots_with_compressed_bl31_and_payload_rodata(qemu_aarch64_build):
    result = qemu_aarch64_build
    lines = boot_lines(result)
    # BL31's banner strings live in its .rodata, which is all zeros in the image BL2 loads
    bl31_elf = builds.image(result, "bl31.elf")
    sym = bl31.elf_symbols(bl31_elf)
    packed = builds.image(result, "bl31-lz4.bin").read_bytes()
    ro = slice(sym["__RODATA_START__"] - sym["__BL31_START__"],
               sym["__RODATA_END__"] - sym["__BL31_START__"])
    assert not any(packed[ro]) and any(builds.image(result, "bl31.bin").read_bytes()[ro])
    assert any("BL31: v2.12.1(release)" in l for l in lines), lines
    # the payload's .rodata: not in bl33.bin, expanded before main, checksum printed
    address, original = read_elf_sections(builds.image(result, "bl33.elf"), [".rodata"])[".rodata"]
    assert b"seedfw payload %s" in original
    bl33 = builds.image(result, "bl33.bin").read_bytes()
    assert original not in bl33          # (LZ4 keeps literal runs, so short strings may remain)
    found = [m for m in (LINE.match(l) for l in lines) if m]
    assert len(found) == 1, lines
    raw, stored, crc = int(found[0][1]), int(found[0][2]), int(found[0][3], 16)
    assert raw == len(original) and crc == zlib.crc32(original)
    payload = [s for s in json.loads((result.outdir / "compression.json").read_text())["sections"]
               if s["owner"] == "payload"][0]
    assert stored == payload["chosen"] < raw and payload["crc32"] == crc
    banner = next(i for i, l in enumerate(lines) if l.startswith("seedfw payload "))
    assert lines[banner + 1] == found[0][0]
    # the stats block's view of the same expansion (QEMU's generic timer: emulated time)
    timing = re.match(r"^lz4: expanded (\d+) bytes in (\d+) ticks of (\d+) Hz$", lines[banner + 2])
    assert timing and int(timing[1]) == raw and int(timing[2]) > 0 and int(timing[3]) > 0, lines
    assert any(l.startswith("psci ") for l in lines[banner:])


@pytest.mark.slow
def test_corrupt_payload_container_stops_before_main(qemu_aarch64_build, tmp_path):
    """Negative control: the same firmware FIT with one byte of the payload's container flipped."""
    result = qemu_aarch64_build
    images = result.outdir / "images"
    frag = json.loads((result.outdir / "build" / "compress" / "payload.json").read_text())
    sym = bl31.elf_symbols(images / "bl33.elf", ("__image_start", "seedfw_payload_lz4"))
    bl33 = bytearray((images / "bl33.bin").read_bytes())
    desc = bl31.DESC.unpack_from(bl33, sym["seedfw_payload_lz4"] - sym["__image_start"])
    container = desc[2] - sym["__image_start"]
    assert read_container(bytes(bl33[container:container + desc[3]])) == \
        read_elf_sections(images / "bl33.elf", [".rodata"])[".rodata"][1]
    assert desc[3] == frag["sections"][0]["chosen"]
    bl33[container + desc[3] - 3] ^= 0x5A                 # inside the last block
    # U-Boot (BL33) loads the payload from the firmware FIT on the virtio disk: a twin output
    # dir whose FIT carries the bad payload with matching hashes, so U-Boot starts it.
    shutil.copytree(result.outdir, tmp_path / "out", symlinks=True)
    (tmp_path / "out" / "images" / "bl33.bin").write_bytes(bytes(bl33))
    builds.rebuild_disk(tmp_path / "out")
    run = qemu.run(boards.get("qemu-aarch64"), tmp_path / "out", timeout=120, echo=lambda s: None)
    assert any(l.startswith("lz4: .rodata expand failure fffffff") for l in run.lines), run.lines
    assert not any(l.startswith("seedfw payload ") for l in run.lines), run.lines


@pytest.mark.slow
def test_rk3588_uboot_fit_carries_the_compressed_bl31(rk3588_build, tmp_path):
    result = rk3588_build
    images = result.outdir / "images"
    elf = images / "bl31.elf"                             # the unmodified ELF stays, for GDB
    with open(elf, "rb") as f:
        e = ELFFile(f)
        assert e.get_section_by_name(".rodata") is not None
        loaded = sum(s["p_filesz"] for s in e.iter_segments() if s["p_type"] == "PT_LOAD")
    sym = bl31.elf_symbols(elf)
    original = read_elf_sections(elf, [".rodata"])[".rodata"][1]
    # SPL loads BL31 from u-boot.itb (binman's atf-N images); the firmware FIT has no copy
    listing = subprocess.run(["dumpimage", "-l", images / "u-boot.itb"], check=True,
                             capture_output=True, text=True).stdout
    parts = re.findall(r"Image (\d+) \((atf-\d+)\).*?Data Size:\s+(\d+) Bytes.*?Load Address: "
                       r"0x([0-9a-f]+)", listing, re.S)
    assert len(parts) == 3, listing
    assert "bl31" not in subprocess.run(["dumpimage", "-l", images / "rk3588.itb"], check=True,
                                        capture_output=True, text=True).stdout
    fit_bytes = sum(int(p[2]) for p in parts)
    frag = json.loads((result.outdir / "build" / "compress" / "tfa.json").read_text())
    assert fit_bytes == frag["bl31_bytes"]["after"] < frag["bl31_bytes"]["before"] == loaded
    # the segment that follows .rodata starts at its end and carries the container
    index, _, size, load = next(p for p in parts if int(p[3], 16) == sym["__RODATA_END__"])
    out = tmp_path / "seg.bin"
    subprocess.run(["dumpimage", "-T", "flat_dt", "-p", index, "-o", out, images / "u-boot.itb"],
                   check=True, capture_output=True)
    seg = out.read_bytes()
    assert len(seg) == int(size)
    desc = bl31.DESC.unpack_from(seg, sym["seedfw_lz4_rodata"] - sym["__RODATA_END__"])
    assert desc[0] == bl31.DESC_MAGIC and desc[4:6] == (sym["__RODATA_START__"], len(original))
    start = desc[2] - sym["__RODATA_END__"]
    assert read_container(seg[start:start + desc[3]]) == original
    assert not any(int(p[3], 16) == sym["__RODATA_START__"] for p in parts)   # .rodata left


@pytest.mark.slow
def test_compression_json_and_manifest_roles(qemu_aarch64_build, rk3588_build):
    # boot: what the packages declare (seedfw.parts.base.Output); rk3588's U-Boot images too
    uboot = {"idbloader.img", "u-boot.itb"}     # the combined SD/SPI images contain these
    # Each section is counted in the file that carries its ELF to the board: on qemu-aarch64
    # BL31 travels in the FIP (qemu_fw.bios) and, with U-Boot as BL33, the payload in the boot
    # package U-Boot loads; on rk3588 BL31 travels in u-boot.itb.
    for result, owners, boot, image in ((qemu_aarch64_build, ["tfa", "payload"],
                                         {"qemu_fw.bios", "qemu-aarch64-boot.pkg"},
                                         {"tfa": "qemu_fw.bios", "payload": "qemu-aarch64-boot.pkg"}),
                                        (rk3588_build, ["tfa"], {"rk3588.itb"} | uboot | {
                                            # the OS of the defconfig (docs/os.md)
                                            "Image", "rk3588-rock-5b-seedfw.dtb",
                                            "initramfs.cpio", "extlinux.conf",
                                            # U-Boot's verified hand-over (seedfw.parts.fit_verify)
                                            "seedfw-boot-package.dtbo"},
                                         {"tfa": "u-boot.itb"})):
        doc = json.loads((result.outdir / "compression.json").read_text())
        assert [s["owner"] for s in doc["sections"]] == owners
        for s in doc["sections"]:
            assert s["name"] == ".rodata" and s["image"] == image[s["owner"]] and s["blocks"] == 1
            assert s["net_gain"] == s["no_dict"] - s["with_dict"] - s["dict_stored"]
            # a 2 KiB dictionary does not pay for a few KiB of .rodata: stored without it
            assert s["net_gain"] < 0 and not s["use_dict"] and s["chosen"] == s["no_dict"]
            assert s["verdict"].endswith("not worth it")
            assert (result.outdir / s["elf"]).is_file() and (result.outdir / s["file"]).is_file()
        assert doc["dictionary"]["stored"] == 0 and doc["block_size"] == 65536
        assert doc["total"]["chosen"] == sum(s["chosen"] for s in doc["sections"])
        manifest = json.loads((result.outdir / "manifest.json").read_text())
        roles = {a["name"]: a["role"] for a in manifest["artifacts"]}
        assert {n for n, r in roles.items() if r == "boot"} == boot
        assert all(r == "debug" for n, r in roles.items() if n.endswith(".elf"))
        log = (result.outdir / "logs" / "tfa.log").read_text()
        assert "SEEDFW_LZ4_RODATA=1" in log and "SEPARATE_CODE_AND_RODATA=1" in log


@pytest.mark.slow
def test_report_counts_only_boot_images(qemu_aarch64_build):
    from seedfw.report.model import build_report
    bw = build_report(qemu_aarch64_build.outdir)["bandwidth"]
    files = {i["file"]: i for i in bw["images"]["items"]}
    assert set(files) == {"qemu_fw.bios", "qemu-aarch64-boot.pkg"}
    doc = json.loads((qemu_aarch64_build.outdir / "compression.json").read_text())
    for name in ("qemu_fw.bios", "qemu-aarch64-boot.pkg"):    # each file counts its own sections
        item, mine = files[name], [s for s in doc["sections"] if s["image"] == name]
        assert mine, name
        assert [(s["owner"], s["read"]["value"], s["expands_to"]["value"]) for s in
                item["section_bytes"]] == [(s["owner"], s["chosen"], s["raw"]) for s in mine]
        assert item["expanded"]["value"] == item["storage_read"]["value"] + sum(
            s["raw"] - s["chosen"] for s in mine)


@pytest.mark.slow
def test_second_build_is_a_no_op(qemu_aarch64_build, rk3588_build):
    for first in (qemu_aarch64_build, rk3588_build):
        again = builds.rebuild(first)
        assert again.ran == [], again.ran
        assert {"tfa.compress", "compress.report"} <= {r["step"] for r in again.records}


@pytest.mark.slow
def test_no_dictionary_config_boots_too(qemu_aarch64_build, tmp_path):
    """COMPRESS_DICT_NONE flows through to both images (a copied output dir: stamps hold no
    absolute paths; the changed configuration hash is a new build id, so TF-A and the payload
    are compiled again, but nothing is fetched or extracted)."""
    out = tmp_path / "copy"
    shutil.copytree(qemu_aarch64_build.outdir, out, symlinks=True)
    frag = tmp_path / "nodict.fragment"
    frag.write_text("CONFIG_COMPRESS_DICT_NONE=y\n")
    again = build_mod.build("qemu-aarch64", out, [frag])
    assert not {"tfa.fetch", "tfa.extract"} & set(again.ran), again.ran
    doc = json.loads((out / "compression.json").read_text())
    assert doc["dictionary"]["source"] == "none" and doc["dictionary"]["size"] == 0
    assert [s["verdict"] for s in doc["sections"]] == ["no dictionary"] * 2
    lines = boot_lines(again)
    assert any(LINE.match(l) for l in lines) and any("BL31: v2.12.1" in l for l in lines), lines
