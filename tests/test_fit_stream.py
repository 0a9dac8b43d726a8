"""seedfw.images.fit_stream writes the bytes `mkimage -f` (Debian's u-boot-tools 2023.01) writes
for the same .its: the firmware FIT's shapes, the OS FIT's .its, and the KiB growth mkimage does
when its additions pass the free space. mkimage runs here on the very .its and files the
writer read; sha256 recomputed by the test."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

from seedfw.errors import SeedfwError
from seedfw.images import entries as ent
from seedfw.images import fit, fit_stream, idblock, inspect
from seedfw.parts import os_fit

EPOCH = 1700000000


def mkimage(its, out):
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH))
    subprocess.run(["mkimage", "-f", its.name, out.name], cwd=its.parent, env=env, check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return out.read_bytes()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def firmware_entries():
    return [ent.FirmwareEntry("bl31-1", b"\x11" * 1001, os="arm-trusted-firmware", load=0x40000),
            ent.FirmwareEntry("bl31-2", b"\x22" * 77, load=0xff100000),
            ent.FirmwareEntry("payload", os.urandom(5000), load=0x1_0000_0000),
            ent.DvfsEntry("dvfs", b"D" * 64), ent.FdtEntry("opp", b"\xd0\x0d\xfe\xed" + bytes(60)),
            ent.ModelEntry("yolo", b"RKNN" + bytes(301), alignment=4096, model_type="rknn"),
            ent.ModelEntry("enc", b"CYPTRKNN" + bytes(10), model_type="rknn", encrypted=True),
            ent.ModelEntry("small", b"L" * 33, 100, model_type="raw", compression="lz4")]


@pytest.mark.parametrize("count", [1, 8, 40])
def test_firmware_fit_is_mkimages_bytes(tmp_path, monkeypatch, count):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    # 40 images: mkimage's additions pass its 1 KiB of free space, so it grows the file
    es = firmware_entries()[:count] if count <= 8 else \
        [ent.ModelEntry(f"m{i}", bytes([i]) * (i + 1)) for i in range(count)]
    ours = fit.build(es, tmp_path / "fw.itb", description="seedfw t").read_bytes()
    # mkimage on the .its fit.build left beside the image, with the blobs under its names
    its = tmp_path / "fw.itb.its"
    for i, e in enumerate(es):
        (tmp_path / f"{i:02d}-{e.name}.bin").write_bytes(e.data)
    theirs = mkimage(its, tmp_path / "mk.itb")
    assert sha(ours) == sha(theirs) and len(ours) == len(theirs)
    root, images = idblock.fit_images(ours)
    assert {k: bytes(v) for k, v in images.items()} == {fit.node_name(e): e.data for e in es}
    for e in es:      # every hash value is the sha256 of its image's data, recomputed here
        node = root.children["images"].children[fit.node_name(e)]
        assert node.children["hash-1"].props["value"] == hashlib.sha256(e.data).digest()


def test_os_fit_its_is_mkimages_bytes_and_reads_back(tmp_path):
    (tmp_path / "Image").write_bytes(os.urandom(3 << 20) + b"k")
    (tmp_path / "rootfs.cpio").write_bytes(os.urandom(1 << 20) + b"xyz")
    (tmp_path / "boot.cmd").write_text("echo seedfw\n")
    (tmp_path / os_fit.OVERLAY).write_bytes(b"\xd0\x0d\xfe\xed" + bytes(100))
    (tmp_path / "os.its").write_text(os_fit.its("rk3588", "6.1.0-test"))
    size = fit_stream.write_its(tmp_path / "os.its", tmp_path / "ours.itb", EPOCH)
    ours = (tmp_path / "ours.itb").read_bytes()
    theirs = mkimage(tmp_path / "os.its", tmp_path / "mk.itb")
    assert size == len(ours) and sha(ours) == sha(theirs)
    listing = subprocess.run(["mkimage", "-l", str(tmp_path / "ours.itb")], capture_output=True,
                             text=True, check=True).stdout
    assert hashlib.sha256((tmp_path / "Image").read_bytes()).hexdigest() in listing
    report = inspect.inspect(tmp_path / "ours.itb")
    assert report.ok and len(report.rows) == 4


def test_negative_controls(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"a" * 10)
    its = tmp_path / "t.its"
    its.write_text('/dts-v1/;\n/ {\n\tdescription = "t";\n\timages {\n\t\ta {\n'
                   '\t\t\tdescription = "a";\n\t\t\tdata = /incbin/("a.bin");\n'
                   '\t\t\ttype = "firmware";\n\t\t\tarch = "arm64";\n\t\t\tcompression = "none";\n'
                   '\t\t\thash-1 {\n\t\t\t\talgo = "sha256";\n\t\t\t};\n\t\t};\n\t};\n'
                   '\tconfigurations {\n\t\tdefault = "c";\n\t\tc {\n\t\t\tfirmware = "a";\n'
                   '\t\t};\n\t};\n};\n')
    fit_stream.write_its(its, tmp_path / "x.itb", EPOCH)
    fit_stream.write_its(its, tmp_path / "y.itb", EPOCH + 1)
    theirs = mkimage(its, tmp_path / "mk.itb")
    assert (tmp_path / "x.itb").read_bytes() == theirs != (tmp_path / "y.itb").read_bytes()
    its.write_text(its.read_text().replace('"sha256"', '"md5"'))
    with pytest.raises(SeedfwError) as e:
        fit_stream.write_its(its, tmp_path / "z.itb", EPOCH)
    assert str(e.value) == f"{its}: algo: hash node 'a/hash-1' has algo 'md5': only sha256 is written here"
    its.write_text("/dts-v1/;\n/ {\n\tx = &ref;\n};\n")
    with pytest.raises(SeedfwError) as e:
        fit_stream.write_its(its, tmp_path / "z.itb", EPOCH)
    assert str(e.value) == f"{its}:3: unsupported .its syntax at '&ref;'"
