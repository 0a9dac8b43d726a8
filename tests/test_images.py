"""Boot package and FIT: layout vs pkg.h, round trips, real mkimage/dumpimage, inspect, signing.

Firmware entries in these tests are arbitrary bytes standing in for BL31/the payload (the image
stage does not look inside them); the DVFS table, DT fragment and models are the real outputs for
the board.
"""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from c_layout import c_layout, c_macros
from cli import invoke, one_error_line
from seedfw import boards, dvfs
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.images import build_images, entries as ent, fdt, fit, package
from seedfw.images.inspect import inspect

SYNTH = ROOT / "tests/data/synth-models/models"
CFG = {"POWER_PROFILE": "balanced", "MODELS": True,
       "MODEL_MANIFEST": "tests/data/synth-models/models.yaml"}  # SYNTHETIC fixture


def test_package_layout_matches_pkg_h():
    layout = c_layout("seedfw/pkg.h", {
        "seedfw_pkg_header": ["magic", "version", "header_size", "entry_size", "entry_count",
                              "total_size", "alignment", "flags", "header_crc"],
        "seedfw_pkg_entry": ["type", "subtype", "flags", "name", "offset", "size",
                             "uncompressed_size", "crc32", "sha256"],
    })
    h, e = layout["seedfw_pkg_header"], layout["seedfw_pkg_entry"]
    assert h["sizeof"] == package.HEADER.size and e["sizeof"] == package.ENTRY.size
    assert h["header_crc"] == package.HEADER_CRC_OFFSET
    assert [h[f] for f in ("version", "entry_count", "total_size", "alignment")] == [4, 10, 12, 16]
    assert [e[f] for f in ("flags", "name", "offset", "crc32", "sha256")] == [4, 8, 24, 36, 40]
    m = c_macros("seedfw/pkg.h", ["SEEDFW_PKG_MAGIC", "SEEDFW_PKG_VERSION", "SEEDFW_PKG_ALIGN",
                                  "SEEDFW_PKG_T_FIRMWARE", "SEEDFW_PKG_T_DVFS", "SEEDFW_PKG_T_FDT",
                                  "SEEDFW_PKG_T_MODEL", "SEEDFW_PKG_M_RKNN", "SEEDFW_PKG_M_ONNX",
                                  "SEEDFW_PKG_F_LZ4", "SEEDFW_PKG_F_ENCRYPTED"])
    assert m == {"SEEDFW_PKG_MAGIC": package.MAGIC, "SEEDFW_PKG_VERSION": package.VERSION,
                 "SEEDFW_PKG_ALIGN": package.ALIGN, "SEEDFW_PKG_T_FIRMWARE": ent.T_FIRMWARE,
                 "SEEDFW_PKG_T_DVFS": ent.T_DVFS, "SEEDFW_PKG_T_FDT": ent.T_FDT,
                 "SEEDFW_PKG_T_MODEL": ent.T_MODEL, "SEEDFW_PKG_M_RKNN": ent.M_RKNN,
                 "SEEDFW_PKG_M_ONNX": ent.M_ONNX, "SEEDFW_PKG_F_LZ4": ent.F_LZ4,
                 "SEEDFW_PKG_F_ENCRYPTED": ent.F_ENCRYPTED}


def sample_entries():
    return [ent.FirmwareEntry("bl31", b"\x11" * 1000, load=0x40000),
            ent.DvfsEntry("dvfs", dvfs.encode(dvfs.load(boards.get("rk3588").dvfs_file), "balanced")),
            ent.ModelEntry("yolo", b"RKNN" + bytes(300), alignment=4096, model_type="rknn"),
            ent.ModelEntry("enc", b"CYPTRKNN" + bytes(10), model_type="rknn", encrypted=True)]


def test_package_round_trip():
    es = sample_entries()
    blob = package.encode(es)
    pkg = package.decode(blob)
    assert [(e.name, e.type_id, e.subtype, e.flags, e.size) for e in pkg.entries] == [
        ("bl31", 1, 0, 0, 1000), ("dvfs", 2, 0, 0, len(es[1].data)), ("yolo", 4, 1, 0, 304),
        ("enc", 4, 1, 2, 18)]
    assert all(e.ok for e in pkg.entries)
    assert pkg.entries[2].offset % 4096 == 0 and all(e.offset % 64 == 0 for e in pkg.entries)
    for src, e in zip(es, pkg.entries):
        assert pkg.data(blob, e) == src.data
        assert e.sha256 == hashlib.sha256(src.data).digest() and e.crc32 == zlib.crc32(src.data)
    assert len(blob) % 64 == 0 and package.encode(es) == blob      # deterministic


def test_package_reader_rejects_damage():
    blob = package.encode(sample_entries())
    flipped = bytearray(blob)
    flipped[package.decode(blob).entries[2].offset + 7] ^= 0x80
    pkg = package.decode(bytes(flipped))
    assert [e.ok for e in pkg.entries] == [True, True, False, True]
    table = bytearray(blob)
    table[package.HEADER.size + 30] ^= 1                              # an entry's offset
    with pytest.raises(SeedfwError) as exc:
        package.decode(bytes(table))
    assert exc.value.message.startswith("header crc32 0x") and exc.value.field == "offset 0x18"
    with pytest.raises(SeedfwError) as exc:
        package.decode(b"NOPE" + blob[4:])
    assert exc.value.message == "bad magic 0x45504f4e (expected 0x474b5053 'SPKG')"
    with pytest.raises(SeedfwError) as exc:
        package.decode(blob[:200])
    assert exc.value.message.startswith("total_size")


def test_package_partition_limit(tmp_path):
    with pytest.raises(SeedfwError) as exc:
        package.write(sample_entries(), tmp_path / "p.pkg", partition_size=4096)
    assert "over the partition limit of 4096 bytes (0x1000)" in exc.value.message
    assert not (tmp_path / "p.pkg").exists()                          # nothing half-written


@pytest.fixture(scope="module")
def rk3588_images(tmp_path_factory):
    out = tmp_path_factory.mktemp("rk3588")
    bl31 = out / "bl31.bin"
    bl31.write_bytes(bytes(range(256)) * 20)
    paths = build_images(CFG, boards.get("rk3588"), out / "images", {"bl31": bl31})
    return {p.suffix: p for p in paths}


def test_fit_listed_by_dumpimage(rk3588_images):
    listing = subprocess.run(["dumpimage", "-l", str(rk3588_images[".itb"])], capture_output=True,
                             text=True, check=True).stdout
    # "package": the boot package U-Boot's seedfw_verify copies to RAM (seedfw.parts.fit_verify)
    names = ["bl31", "dvfs", "opp", "model-yolov8s", "model-mobilenet_v2", "model-face_detect",
             "model-labels", "package"]
    for i, name in enumerate(names):
        assert f" Image {i} ({name})" in listing
    assert listing.count("Hash algo:    sha256") == len(names)
    assert "Default Configuration: 'conf-1'" in listing
    assert "OS:           ARM Trusted Firmware" in listing and "Load Address: 0x00040000" in listing
    # The hash dumpimage prints is the sha256 of the bytes we put in.
    dvfs_bin = (rk3588_images[".json"].parent / "dvfs" / "dvfs.bin").read_bytes()
    assert hashlib.sha256(dvfs_bin).hexdigest() in listing


def test_inspect_verifies_fit_and_package(rk3588_images):
    for suffix, rows in ((".itb", 8), (".pkg", 7)):       # the FIT also carries the package
        report = inspect(rk3588_images[suffix])
        assert report.ok and len(report.rows) == rows
        d = next(r for r in report.rows if r.type == "dvfs")
        assert "6 domains, 39 opps" in d.detail and "crc ok" in d.detail


@pytest.mark.parametrize("suffix", [".itb", ".pkg"])
def test_inspect_catches_flipped_byte(rk3588_images, tmp_path, suffix):
    blob = bytearray(rk3588_images[suffix].read_bytes())
    target = (SYNTH / "yolov8s.rknn").read_bytes()
    at = bytes(blob).find(target)
    assert at > 0
    blob[at + 500] ^= 0x04
    bad = tmp_path / f"bad{suffix}"
    bad.write_bytes(blob)
    report = inspect(bad)
    assert not report.ok
    assert [r.name for r in report.rows if not r.hash_ok] in (["model-yolov8s"], ["yolov8s"])
    proc = invoke("inspect", bad)
    assert one_error_line(proc).endswith("1 entries failed verification: "
                                         + ("model-yolov8s" if suffix == ".itb" else "yolov8s"))


def test_inspect_cli_good_image(rk3588_images):
    proc = invoke("inspect", rk3588_images[".itb"])
    assert proc.returncode == 0, proc.stderr
    assert "all hashes ok" in proc.stdout and "model-yolov8s" in proc.stdout


SYNTHETIC_MODELS = ["yolov8s", "mobilenet_v2", "face_detect"]   # what their own metadata says


@pytest.mark.parametrize("suffix", [".itb", ".pkg"])
def test_inspect_flags_synthetic_models(rk3588_images, suffix):
    """The image carries the SYNTHETIC fixture blobs (tests/data/synth-models): inspect
    flags them (from the blobs'
    metadata, read back out of the image), in the table, the notes, the CLI and its JSON."""
    import json

    prefix = "model-" if suffix == ".itb" else ""
    report = inspect(rk3588_images[suffix])
    flagged = [r.name for r in report.rows if r.synthetic]
    assert flagged == [prefix + n for n in SYNTHETIC_MODELS]
    assert all("SYNTHETIC" in r.detail for r in report.rows if r.synthetic)
    assert not any("SYNTHETIC" in r.detail for r in report.rows if not r.synthetic)
    assert any(n.startswith("3 model blob(s) are SYNTHETIC") for n in report.notes)
    proc = invoke("inspect", rk3588_images[suffix])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("SYNTHETIC") >= 4 and "warning: 3 model blob(s) are SYNTHETIC" in \
        " ".join(proc.stdout.split())
    doc = json.loads(invoke("inspect", rk3588_images[suffix], "--json").stdout)
    assert doc["synthetic"] == flagged
    assert [r["name"] for r in doc["rows"] if r["synthetic"]] == flagged


def test_fit_is_reproducible(tmp_path):
    es = sample_entries()[:2]
    env_before = os.environ.get("SOURCE_DATE_EPOCH")
    try:
        os.environ["SOURCE_DATE_EPOCH"] = "1700000000"
        a = fit.build(es, tmp_path / "a.itb", description="t")
        b = fit.build(es, tmp_path / "b.itb", description="t")
        assert a.read_bytes() == b.read_bytes()
        os.environ["SOURCE_DATE_EPOCH"] = "1700000001"                  # negative control
        c = fit.build(es, tmp_path / "c.itb", description="t")
        assert c.read_bytes() != a.read_bytes()
        assert fdt.parse(c.read_bytes()).u32("timestamp") == 1700000001
    finally:
        if env_before is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = env_before
    assert str(tmp_path).encode() not in a.read_bytes()


def test_images_json_and_boot_lines(rk3588_images):
    import json
    doc = json.loads(rk3588_images[".json"].read_text())
    assert doc["fit"] == "rk3588.itb" and doc["entries"][0]["name"] == "bl31"
    lines = doc["package"]["expected_boot_lines"]
    assert "dvfs: 6 domains, 39 opps, profile=balanced, crc ok" in lines
    assert "model yolov8s sha256 ok" in lines and lines[-1] == "pkg: ok"


def test_fit_signing_round_trip(tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(keys / "dev.key")], check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-batch", "-new", "-x509", "-days", "1", "-subj", "/CN=dev",
                    "-key", str(keys / "dev.key"), "-out", str(keys / "dev.crt")],
                   check=True, capture_output=True)
    bl31 = tmp_path / "bl31.bin"
    bl31.write_bytes(b"\x5a" * 2048)
    cfg = dict(CFG, IMAGE_SIGN=True, IMAGE_SIGN_KEY_DIR=str(keys), IMAGE_SIGN_KEY_NAME="dev",
               IMAGE_SIGN_REQUIRED=True)
    paths = build_images(cfg, boards.get("rk3588"), tmp_path / "images", {"bl31": bl31})
    itb = next(p for p in paths if p.suffix == ".itb")
    root = fdt.parse(itb.read_bytes())
    sig = root.children["configurations"].children["conf-1"].children["signature-1"]
    assert sig.str("algo") == "sha256,rsa2048" and sig.str("key-name-hint") == "dev"
    assert len(sig.props["value"]) == 256
    assert sig.strings("sign-images") == ["firmware", "fdt", "loadables"]
    # The public key mkimage wrote for the verifier is the one openssl generated.
    pub = fdt.parse(next(p for p in paths if p.name.endswith("pubkey.dtb")).read_bytes())
    key = pub.children["signature"].children["key-dev"]
    assert key.str("required") == "conf"
    modulus = subprocess.run(["openssl", "rsa", "-in", str(keys / "dev.key"), "-noout", "-modulus"],
                             capture_output=True, text=True, check=True).stdout.split("=")[1]
    assert key.props["rsa,modulus"].hex().upper() == modulus.strip()
    assert not any(p.suffix == ".key" for p in (tmp_path / "images").rglob("*"))
    assert inspect(itb).ok
    assert any("sha256,rsa2048 key 'dev', 256-byte signature" in n for n in inspect(itb).notes)
    # Cryptographic check with the public-key DTB, then negative controls.
    pubkey = next(p for p in paths if p.name.endswith("pubkey.dtb"))
    report = inspect(itb, pubkey)
    assert report.ok and ("conf-1/signature-1", "signature ok") in [(r.name, r.detail)
                                                                     for r in report.rows]
    proc = invoke("inspect", itb, "--key", pubkey)
    assert proc.returncode == 0 and "signature ok" in proc.stdout
    # Forgery: another DVFS table of the same size, its hash node updated to match. Every image
    # hash is then fine; only the signature can tell.
    blob = itb.read_bytes()
    dvfs_node = root.children["images"].children["dvfs"]
    old_data, old_hash = dvfs_node.props["data"], dvfs_node.children["hash-1"].props["value"]
    new_data = dvfs.encode(dvfs.load(boards.get("rk3588").dvfs_file), "performance")
    assert len(new_data) == len(old_data) and new_data != old_data
    # (the first occurrences: image "dvfs"; the boot package image keeps its own copy)
    forged = blob.replace(old_data, new_data, 1).replace(old_hash, hashlib.sha256(new_data).digest(), 1)
    (tmp_path / "forged.itb").write_bytes(forged)
    assert inspect(tmp_path / "forged.itb").ok                   # hashes alone are fooled
    bad = {r.name: r for r in inspect(tmp_path / "forged.itb", pubkey).rows}
    assert bad["dvfs"].hash_ok and "profile=performance" in bad["dvfs"].detail
    assert not bad["conf-1/signature-1"].hash_ok and bad["conf-1/signature-1"].detail == "signature BAD"
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", str(other / "dev.key")], check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-batch", "-new", "-x509", "-days", "1", "-subj", "/CN=dev",
                    "-key", str(other / "dev.key"), "-out", str(other / "dev.crt")],
                   check=True, capture_output=True)
    fit.build([ent.DvfsEntry("dvfs", b"x" * 64)], tmp_path / "o.itb", description="o", key_dir=other, key_name="dev", pubkey_dtb=other / "pub.dtb")
    wrong_key = {r.name: r for r in inspect(itb, other / "pub.dtb").rows}
    assert not wrong_key["conf-1/signature-1"].hash_ok


def test_signing_missing_key_is_one_clear_error(tmp_path):
    with pytest.raises(SeedfwError) as exc:
        fit.build(sample_entries()[:1], tmp_path / "x.itb", description="t",
                  key_dir=tmp_path, key_name="nokey")
    assert exc.value.message == f"signing key 'nokey.key' not found in {tmp_path}"
    assert not (tmp_path / "x.itb").exists()


def test_fdt_reader_on_dtc_output(tmp_path):
    src = tmp_path / "t.dts"
    src.write_text('/dts-v1/;\n/ { a = "x"; b = <0x12345678>; n { c = "p", "q"; }; };\n')
    subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", str(tmp_path / "t.dtb"), str(src)],
                   check=True)
    root = fdt.parse((tmp_path / "t.dtb").read_bytes())
    assert root.str("a") == "x" and root.u32("b") == 0x12345678
    assert root.children["n"].strings("c") == ["p", "q"]
    with pytest.raises(SeedfwError):
        fdt.parse(b"\xd0\x0d\xfe\xed" + struct.pack(">9I", 10**6, 0, 0, 0, 17, 16, 0, 0, 0))


def test_compressed_models_round_trip(tmp_path):
    """MODELS_COMPRESS: models stored as lz4blk containers (the compression area's format); both
    formats record the original size and inspect expands and checks them."""
    from seedfw.compress import container

    bl31 = tmp_path / "bl31.bin"
    bl31.write_bytes(b"\x00" * 512)
    paths = build_images(dict(CFG, MODELS_COMPRESS=True), boards.get("rk3588"), tmp_path / "img",
                         {"bl31": bl31})
    # mobilenet_v2 leaves compression to Kconfig; yolov8s says `compression: none` and keeps it.
    original = (SYNTH / "mobilenet.rknn").read_bytes()
    for p in paths:
        if p.suffix not in (".itb", ".pkg"):
            continue
        report = inspect(p)
        assert report.ok, report.rows
        row = next(r for r in report.rows if r.name.endswith("mobilenet_v2"))
        assert row.size == len(original) and row.stored_size < row.size and "lz4 ok" in row.detail
        assert row.synthetic        # recognised inside the lz4 container too
        yolo_row = next(r for r in report.rows if r.name.endswith("yolov8s"))
        assert yolo_row.size == yolo_row.stored_size
    pkg_blob = next(p for p in paths if p.suffix == ".pkg").read_bytes()
    pkg = package.decode(pkg_blob)
    mob = next(e for e in pkg.entries if e.name == "mobilenet_v2")
    assert mob.flags & ent.F_LZ4 and mob.uncompressed_size == len(original)
    assert container.read_container(pkg.data(pkg_blob, mob)) == original


# ---- slow: the images step on real builds --------------------------------------------------------

def run_image_step(result):
    """Re-plan a finished build as seedfw.build does (every enabled part) and run it again."""
    from seedfw import config as config_mod, parts
    from seedfw.parts.firmware_image import FirmwareImagePart
    from seedfw.plan import Plan

    cfg = config_mod.configure(result.board, result.outdir)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(ctx.outdir, 2)
    parts.declare(ctx, plan)
    artifacts = [o.path for o in FirmwareImagePart().outputs(ctx) if o.listed]
    records = plan.run()
    return ctx, artifacts, {r["step"]: r["action"] for r in records}


@pytest.mark.slow
def test_rk3588_firmware_fit_leaves_bl31_to_uboot(tmp_path_factory):
    import builds

    result = builds.build_board("rk3588", tmp_path_factory)
    ctx, artifacts, actions = run_image_step(result)
    # the session build already ran image.pack with the same plan: up to date (or re-run)
    assert actions["image.pack"] in ("ran", "skipped") and actions["tfa.build"] == "skipped"
    itb = ctx.images / "rk3588.itb"
    assert itb in artifacts and itb.is_file()
    listing = subprocess.run(["dumpimage", "-l", str(itb)], capture_output=True, text=True,
                             check=True).stdout
    # BL31 travels in U-Boot's u-boot.itb (SPL loads it from there), so the firmware FIT carries
    # no second copy: the table, the fragment, the 4 models and the boot package (board.yaml
    # image.fits names it, for U-Boot's seedfw_verify), and nothing else.
    from elftools.elf.elffile import ELFFile

    bl31_image = lambda ctx: ctx.file("bl31")          # noqa: E731

    assert "bl31" not in listing
    for i, name in enumerate(["dvfs", "opp", "model-digits", "model-ppocr_det", "model-ppocr_cls",
                              "model-digits_labels", "package"]):
        assert f" Image {i} ({name})" in listing
    report = inspect(itb)
    assert report.ok and len(report.rows) == 7
    carried = ctx.build_dir("fit-check") / "package.bin"
    carried.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dumpimage", "-T", "flat_dt", "-p", "6", "-o", str(carried), str(itb)],
                   capture_output=True, check=True)
    assert carried.read_bytes() == (ctx.images / "rk3588-boot.pkg").read_bytes()
    # ... and u-boot.itb carries every BL31 load segment (with RK3588_COMPRESS_RODATA, the
    # defconfig, those of bl31-lz4.elf), each at its load address with its sha256
    with open(bl31_image(ctx), "rb") as f:
        segs = [(s["p_paddr"], s.data()) for s in ELFFile(f).iter_segments()
                if s["p_type"] == "PT_LOAD" and s["p_filesz"]]
    uboot = subprocess.run(["dumpimage", "-l", str(ctx.images / "u-boot.itb")],
                           capture_output=True, text=True, check=True).stdout
    for addr, data in segs:
        assert f"Load Address: 0x{addr:08x}" in uboot
        assert hashlib.sha256(data).hexdigest() in uboot
    assert {0x40000, 0xff100000} <= {a for a, _ in segs}
    assert inspect(ctx.images / "rk3588-boot.pkg").ok
    _, _, again = run_image_step(result)                       # nothing changed: nothing runs
    assert set(again.values()) == {"skipped"}


@pytest.mark.slow
def test_qemu_build_package_carries_the_payload(tmp_path_factory):
    import json

    import builds

    result = builds.build_board("qemu-aarch64", tmp_path_factory)
    ctx, artifacts, actions = run_image_step(result)
    assert actions["image.pack"] in ("ran", "skipped")     # the session build ran it already
    pkg_path = ctx.images / "qemu-aarch64-boot.pkg"
    blob = pkg_path.read_bytes()
    pkg = package.decode(blob)
    assert [e.name for e in pkg.entries] == ["payload", "dvfs", "opp", "digits", "digits_labels"]
    assert pkg.data(blob, pkg.entries[0]) == (ctx.images / "bl33.bin").read_bytes()
    doc = json.loads((ctx.images / "images.json").read_text())
    assert doc["package"]["expected_boot_lines"] == package.expected_boot_lines(blob)
    assert "dvfs: 2 domains, 7 opps, profile=balanced, crc ok" in doc["package"]["expected_boot_lines"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["raw", "rknn", "onnx"]), st.binary(max_size=300),
                          st.sampled_from([64, 128, 4096])), max_size=6))
def test_package_round_trip_property(specs):
    es = [ent.ModelEntry(f"m{i}", data, alignment=a, model_type=t)
          for i, (t, data, a) in enumerate(specs)]
    blob = package.encode(es)
    pkg = package.decode(blob)
    assert [pkg.data(blob, e) for e in pkg.entries] == [e.data for e in es]
    assert all(e.ok and e.offset % max(64, src.alignment) == 0 for e, src in zip(pkg.entries, es))
    assert len(blob) % package.ALIGN == 0
