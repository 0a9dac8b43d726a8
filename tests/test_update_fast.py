"""Field updates (issue 29), the fast half: U-Boot env images, the rendered system.conf and
fw_env.config, the development keys never shown, `invoke bundle` (signed, read back by the
host's rauc 1.8, refused for another board or compatible), `invoke inspect` of env images and
bundles, and `invoke config` refusing UPDATE while RAUC's sources are missing.

The bundles here are made from a small hand-made ext4 (mke2fs -d), in a fake build output whose
manifest.json and config.json say what a build would; the QEMU half is tests/test_update.py."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import time
import zlib
from pathlib import Path

import pytest

from cli import invoke, one_error_line
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.parts.layout import guid as layout_guid
from seedfw.buildroot import rauc as sources
from seedfw.update import bundle, env, hosttool, keys, slots


def _env(cache) -> dict:
    """The environment with the seedfw cache (hence the keys) moved to `cache`, downloads (the
    host's rauc tree) where they are."""
    from seedfw import paths
    return dict(os.environ, SEEDFW_CACHE_DIR=str(cache), SEEDFW_DL_DIR=str(paths.download_dir()))


class _Ctx:
    def __init__(self, board):
        self.board = board


# ---- U-Boot env images ------------------------------------------------------------------------

def test_env_round_trip_and_crc():
    blob = env.encode({"BOOT_ORDER": "A B", "BOOT_A_LEFT": "3", "BOOT_B_LEFT": "3"}, 0x8000)
    assert len(blob) == 0x8000
    assert struct.unpack("<I", blob[:4])[0] == zlib.crc32(blob[4:])
    assert blob[4:].startswith(b"BOOT_ORDER=A B\0BOOT_A_LEFT=3\0BOOT_B_LEFT=3\0\0")
    e = env.decode(blob)
    assert e.vars == {"BOOT_ORDER": "A B", "BOOT_A_LEFT": "3", "BOOT_B_LEFT": "3"}
    red = env.encode({"a": "1"}, 0x100, redundant=True, flag=7)
    assert red[4] == 7 and env.decode(red, redundant=True).flag == 7


def test_env_with_a_flipped_bit_is_bad_crc():
    blob = bytearray(env.encode({"BOOT_ORDER": "A B"}, 0x8000))
    blob[20] ^= 0x01
    with pytest.raises(SeedfwError) as err:
        env.decode(bytes(blob), "uboot.env")
    assert err.value.field == "crc"
    assert err.value.message.startswith("U-Boot env: CRC-32 0x")
    assert err.value.message.endswith("(U-Boot says 'bad CRC' and uses its default)")


def test_env_refuses_what_u_boot_would_read_differently():
    with pytest.raises(SeedfwError, match="is not \\[A-Za-z0-9_.:-\\]\\+"):
        env.encode({"A=B": "1"}, 0x100)
    with pytest.raises(SeedfwError, match="more than the 92 of an env of 96 bytes"):
        env.encode({"x": "y" * 200}, 96)
    data = b"novalue" + b"\0" * 9     # no '=' in the first variable, CRC made right
    with pytest.raises(SeedfwError, match="is not name=value"):
        env.decode(struct.pack("<I", zlib.crc32(data)) + data)
    data = b"a=" + b"b" * 14          # no terminator at all
    with pytest.raises(SeedfwError, match="without its NUL terminator"):
        env.decode(struct.pack("<I", zlib.crc32(data)) + data)


def test_inspect_lists_an_env_and_fails_a_bad_crc(tmp_path):
    good = tmp_path / "uboot.env"
    good.write_bytes(env.encode(env.boot_vars(("A", "B"), 3), 0x8000))
    p = invoke("inspect", good, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["format"] == "u-boot env"
    assert doc["rows"][0]["name"] == "env" and doc["rows"][0]["hash_ok"]
    assert {r["name"]: r["detail"] for r in doc["rows"][1:]} == {
        "env:BOOT_ORDER": "A B", "env:BOOT_A_LEFT": "3", "env:BOOT_B_LEFT": "3"}
    assert "boot counting: BOOT_ORDER=A B, BOOT_A_LEFT=3, BOOT_B_LEFT=3" in doc["notes"]
    bad = bytearray(good.read_bytes())
    bad[10] ^= 0x80
    good.write_bytes(bytes(bad))
    line = one_error_line(invoke("inspect", good))
    assert line == f"error: {good}: 1 entries failed verification: env (bad CRC)"


# ---- the target's files -----------------------------------------------------------------------

@pytest.mark.parametrize("board", ["rk3588", "qemu-aarch64"])
def test_system_conf_names_both_slots_by_partuuid(board):
    b = boards.get(board)
    p = slots.plan(b, {"UPDATE_SLOT_SIZE": "64M", "BUILDROOT_ROOTFS_EXT4_SIZE": "32M",
                       "UPDATE_BOOT_ATTEMPTS": 3})
    text = slots.system_conf(p)
    a = layout_guid(_Ctx(b), "part-rootfs.0")
    bb = layout_guid(_Ctx(b), "part-rootfs.1")
    assert a != bb
    for block in (f"[slot.rootfs.0]\ndevice=/dev/disk/by-partuuid/{a}\ntype=ext4\nbootname=A\n",
                  f"[slot.rootfs.1]\ndevice=/dev/disk/by-partuuid/{bb}\ntype=ext4\nbootname=B\n",
                  f"[system]\ncompatible=seedfw-{board}\nbootloader=uboot\n",
                  "[keyring]\npath=/etc/rauc/keyring.pem\n", "data-directory=/data/rauc\n"):
        assert block in text
    assert p.bootnames == ("A", "B") and p.attempts == 3


def test_fw_env_config_matches_where_u_boot_keeps_its_env():
    rk = slots.plan(boards.get("rk3588"), {})
    assert slots.fw_env_config(rk).splitlines()[2:] == ["/dev/mmcblk0\t0xe00000\t0x8000",
                                                        "/dev/mmcblk0\t0xe08000\t0x8000"]
    qemu = slots.plan(boards.get("qemu-aarch64"), {})
    assert slots.fw_env_config(qemu).splitlines()[2:] == ["/boot/env/uboot.env\t0x0\t0x8000"]
    assert "mount -t vfat /dev/disk/by-partuuid/" in slots.partuuid_links(qemu)


def test_a_rootfs_larger_than_a_slot_is_refused():
    with pytest.raises(SeedfwError) as err:
        slots.plan(boards.get("rk3588"), {"UPDATE_SLOT_SIZE": "16M",
                                          "BUILDROOT_ROOTFS_EXT4_SIZE": "32M"})
    assert err.value.field == "CONFIG_UPDATE_SLOT_SIZE"
    assert err.value.message == "the rootfs (32M) does not fit a slot of 16M"


# ---- invoke config ----------------------------------------------------------------------------

def test_update_is_refused_at_config_while_raucs_sources_are_missing(tmp_path):
    frag = tmp_path / "update.fragment"
    frag.write_text("CONFIG_UPDATE=y\nCONFIG_UPDATE_RAUC=y\n")
    envv = dict(os.environ, SEEDFW_MIRROR_DIR=str(tmp_path / "empty-mirror"))
    (tmp_path / "empty-mirror").mkdir()
    line = one_error_line(invoke("config", "--board", "rk3588", "--output", tmp_path / "out",
                                 "--fragment", frag, env=envv))
    gone = sources.missing()
    assert gone, "the primary site already holds RAUC's sources: this case cannot be shown here"
    assert line == (f"error: {frag}:2: CONFIG_UPDATE_RAUC needs {len(gone)} Buildroot source tarballs "
                    f"this machine cannot obtain (first: {gone[0]}); put Buildroot's own files "
                    "into $SEEDFW_MIRROR_DIR/buildroot-src/ (checked against Buildroot's .hash), "
                    "see docs/updates.md")


def test_update_adds_rauc_to_the_buildroot_fragment_when_its_sources_are_there(tmp_path):
    mirror = tmp_path / "mirror" / "buildroot-src"
    mirror.mkdir(parents=True)
    for _pkg, name in sources.MIRRORED:           # presence is what config checks; fill() hashes
        (mirror / name).write_bytes(b"")
    frag = tmp_path / "update.fragment"
    frag.write_text("CONFIG_UPDATE=y\nCONFIG_UPDATE_RAUC=y\n")
    envv = dict(os.environ, SEEDFW_MIRROR_DIR=str(tmp_path / "mirror"))
    p = invoke("config", "--board", "rk3588", "--output", tmp_path / "out", "--fragment", frag,
               env=envv)
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "out" / "buildroot.fragment").read_text().splitlines()
    assert "BR2_PACKAGE_RAUC=y" in lines and "BR2_PACKAGE_LIBUBOOTENV=y" in lines
    values = json.loads((tmp_path / "out" / "config.json").read_text())
    assert values["UPDATE_BOOT_ATTEMPTS"] == 3 and values["UPDATE_SLOT_SIZE"] == "64M"
    # Negative control: the default rk3588 configuration has no RAUC in its fragment.
    p = invoke("config", "--board", "rk3588", "--output", tmp_path / "plain")
    assert p.returncode == 0, p.stderr
    assert "BR2_PACKAGE_RAUC=y" not in (tmp_path / "plain" / "buildroot.fragment").read_text()


def test_a_mirrored_file_with_other_bytes_is_refused(tmp_path, monkeypatch):
    from seedfw.buildroot import tree
    root = tree.ensure()
    mirror = tmp_path / "mirror" / "buildroot-src"
    mirror.mkdir(parents=True)
    (mirror / "libffi-3.4.6.tar.gz").write_bytes(b"not libffi")
    monkeypatch.setenv("SEEDFW_MIRROR_DIR", str(tmp_path / "mirror"))
    monkeypatch.setenv("SEEDFW_DL_DIR", str(tmp_path / "dl"))
    monkeypatch.setattr(sources, "ORIGS", ())
    monkeypatch.setattr(sources, "MIRRORED", (("libffi", "libffi-3.4.6.tar.gz"),))
    with pytest.raises(SeedfwError) as err:
        sources.fill(root, None, lambda m: None)
    assert Path(err.value.file) == mirror / "libffi-3.4.6.tar.gz"
    assert err.value.message == ("sha256 7a78f317e88d is not the b0dea9df23c8 Buildroot pins for "
                                 "libffi-3.4.6.tar.gz")


def test_overlay_keyring_is_a_certificate_and_a_private_key_is_refused(tmp_path, monkeypatch):
    from seedfw.update import overlay
    monkeypatch.setenv("SEEDFW_CACHE_DIR", str(tmp_path / "cache"))

    class Cfg:
        board = boards.get("qemu-aarch64")
        values = {"UPDATE": True, "UPDATE_KEYRING": ""}
        outdir = tmp_path
    files = overlay.files(Cfg)
    ring = files["etc/rauc/keyring.pem"]
    assert ring.startswith("-----BEGIN CERTIFICATE-----") and "PRIVATE" not in ring
    assert files["etc/default/seedfw-update"] == "SEEDFW_MARK_GOOD=y\n"
    leaked = tmp_path / "leak.pem"
    leaked.write_text(ring + (keys.dev_dir() / "ca.key").read_text())
    Cfg.values = {"UPDATE": True, "UPDATE_KEYRING": str(leaked)}
    with pytest.raises(SeedfwError) as err:
        overlay.files(Cfg)
    assert (err.value.message, err.value.field) == (
        "the update keyring must hold PEM certificates only", "CONFIG_UPDATE_KEYRING")


# ---- bundles ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def host_rauc():
    hosttool.ensure()
    return hosttool.tree()


def _ext4(path: Path, files: dict[str, bytes], size="8M") -> Path:
    tree = path.parent / (path.name + ".d")
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", str(tree), str(path), size],
                   check=True, env=dict(os.environ, E2FSPROGS_FAKE_TIME="1700000000"))
    return path


def _fake_build(out: Path, board="rk3588", build_id="t0001", compatible=None, rootfs_files=None):
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps({"board": board, "build_id": build_id}))
    values = {"BOARD": board, "UPDATE": True}
    if compatible:
        values["UPDATE_COMPATIBLE"] = compatible
    (out / "config.json").write_text(json.dumps(values))
    files = {"etc/os-release": b"NAME=seedfw\n", "usr/bin/blob": os.urandom(300_000)}
    files.update(rootfs_files or {})
    _ext4(out / "images" / "rootfs.ext4", files)
    return out


@pytest.fixture(scope="module")
def made(host_rauc, tmp_path_factory):
    """One bundle from a fake rk3588 build, with the output of the command that made it."""
    root = tmp_path_factory.mktemp("bundle")
    cache = root / "cache"
    out = _fake_build(root / "out")
    envv = _env(cache)
    started = time.monotonic()
    p = invoke("bundle", "--board", "rk3588", "--output", out, env=envv)
    seconds = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    return {"root": root, "out": out, "proc": p, "cache": cache, "seconds": seconds,
            "bundle": out / "bundle" / "rk3588-t0001.raucb"}


def test_bundle_is_signed_verity_adaptive_and_rauc_info_accepts_it(made):
    p = made["proc"]
    assert p.stdout.splitlines()[1] == ("  compatible seedfw-rk3588, version t0001, format verity, "
                                        "adaptive block-hash-index")
    rec = json.loads(made["bundle"].with_suffix(".json").read_text())
    assert rec["size"] == made["bundle"].stat().st_size
    ring = next((made["cache"] / "update-keys").glob("*/ca.crt"))
    info = bundle.read_info(made["bundle"], ring)
    assert (info["compatible"], info["version"], info["format"]) == ("seedfw-rk3588", "t0001",
                                                                     "verity")
    assert info["images"][0]["filename"] == "rootfs.ext4"
    assert info["images"][0]["adaptive"] == "block-hash-index"
    assert "seedfw update signer" in info["signer"]
    assert made["seconds"] < 120


def test_the_development_keys_are_private_and_never_shown(made):
    d = next((made["cache"] / "update-keys").iterdir())
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    shown = made["proc"].stdout + made["proc"].stderr
    for name in ("ca.key", "signer.key"):
        key = d / name
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        body = [ln for ln in key.read_text().splitlines() if not ln.startswith("-----")]
        assert body and not any(ln in shown for ln in body)
        assert str(key) not in shown
    assert "PRIVATE KEY" not in shown
    # nothing private in the output directory either
    for f in made["out"].rglob("*"):
        if f.is_file() and f.suffix in (".json", ".raucb"):
            assert b"PRIVATE KEY" not in f.read_bytes()


def test_another_key_is_refused_with_raucs_error(made, tmp_path):
    other = tmp_path / "other.crt"
    subprocess.run(["openssl", "req", "-batch", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(other), "-subj",
                    "/CN=someone else", "-days", "1"], check=True, capture_output=True)
    with pytest.raises(SeedfwError) as err:
        bundle.read_info(made["bundle"], other)
    assert err.value.message == ("rauc info refused the bundle: signature verification failed: "
                                 "Verify error: unable to get local issuer certificate")


def test_a_bundle_for_another_board_is_refused(made):
    line = one_error_line(invoke("bundle", "--board", "qemu-aarch64", "--output", made["out"],
                                 env=_env(made["cache"])))
    assert line == (f"error: {made['out'] / 'manifest.json'}: board: this output was built for "
                    "board 'rk3588', not 'qemu-aarch64': a bundle for another board is refused")


def test_a_rootfs_of_another_compatible_is_refused(host_rauc, tmp_path):
    out = _fake_build(tmp_path / "out", rootfs_files={
        "etc/rauc/system.conf": b"[system]\ncompatible=seedfw-other\nbootloader=uboot\n"})
    line = one_error_line(invoke("bundle", "--board", "rk3588", "--output", out,
                                 env=_env(tmp_path / "c")))
    assert line == (f"error: {out / 'images' / 'rootfs.ext4'}: /etc/rauc/system.conf: the "
                    "rootfs's system.conf says compatible 'seedfw-other', the bundle would say "
                    "'seedfw-rk3588': every device would refuse it")
    assert not (out / "bundle").exists()


def test_key_and_cert_come_together(made):
    line = one_error_line(invoke("bundle", "--board", "rk3588", "--output", made["out"],
                                 "--key", made["out"] / "x.key"))
    assert line == ("error: --cert: give both --key and --cert (or neither, for this checkout's "
                    "development key)")


def test_inspect_verifies_a_bundle_and_finds_a_flipped_bit(made, tmp_path):
    ring = next((made["cache"] / "update-keys").glob("*/ca.crt"))
    p = invoke("inspect", made["bundle"], "--key", ring, "--json")
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in json.loads(p.stdout)["rows"]}
    assert rows["signature"]["hash_ok"] and rows["signature"]["detail"] == "verified against ca.crt"
    assert rows["rootfs.ext4"]["hash_ok"] and rows["rootfs.ext4"]["checked"]
    flipped = tmp_path / "flipped.raucb"
    blob = bytearray(made["bundle"].read_bytes())
    blob[4096] ^= 0x10                  # inside the squashfs data: the image's bytes change
    flipped.write_bytes(bytes(blob))
    line = one_error_line(invoke("inspect", flipped))
    assert line == f"error: {flipped}: 1 entries failed verification: rootfs.ext4"


def test_inspect_refuses_a_bundle_whose_signature_size_lies(made, tmp_path):
    bad = tmp_path / "lies.raucb"
    blob = bytearray(made["bundle"].read_bytes())
    blob[-8:] = (1 << 40).to_bytes(8, "big")
    bad.write_bytes(bytes(blob))
    started = time.monotonic()
    line = one_error_line(invoke("inspect", bad))
    assert time.monotonic() - started < 20
    assert line == (f"error: {bad}: signature size: RAUC bundle: signature size 1099511627776 "
                    f"does not fit the {len(blob)} bytes (at most 1048576)")


# ---- the report's update section --------------------------------------------------------------

def test_report_update_section_labels_every_figure(made, tmp_path):
    import jsonschema
    from seedfw.report.sections.base import Inputs
    from seedfw.report.sections.update import Update
    from seedfw.paths import ROOT
    (made["out"] / "bundle" / "adaptive.json").write_text(json.dumps({
        "blocks": 8192, "reused_blocks": 8165, "fetched_bytes_estimate": 42373,
        "fetched_share_of_bundle": 0.0084, "change": "one string"}))
    config = {"UPDATE": True, "UPDATE_SLOT_SIZE": "64M", "UPDATE_DATA_SIZE": "16M",
              "UPDATE_BOOT_ATTEMPTS": 3}
    data = Update().data(Inputs(made["out"], config, None, "rk3588"))
    assert data["slot_size"] == {"value": 64 << 20, "unit": "bytes", "kind": "computed",
                                 "source": "config.json"}
    assert data["bundle"]["size"]["value"] == made["bundle"].stat().st_size
    assert data["bundle"]["compatible"] == "seedfw-rk3588"
    assert data["adaptive"]["share"] == {"value": 0.84, "unit": "%", "kind": "estimated",
                                         "source": "bundle/adaptive.json",
                                         "note": "of the full bundle"}
    schema = json.loads((ROOT / "tools/seedfw/report/schema/report-v1.json").read_text())
    sub = dict(schema["properties"]["update"], **{"$defs": schema["$defs"]})
    jsonschema.validate(Update().data(Inputs(tmp_path, {}, None, "rk3588")), sub)
    jsonschema.validate(data, sub)
    md = "\n".join(str(x) for x in Update().markdown(data))
    assert "| adaptive: fetched by a streaming install | 42,373 bytes (0.84 % of the bundle) | " \
           "estimated |" in md
    # no bundle and UPDATE off: unavailable, saying why
    assert Update().data(Inputs(tmp_path, {}, None, "rk3588")) == {
        "available": False, "note": "not available: CONFIG_UPDATE is off in this build and no "
                                    "bundle was written for it (invoke bundle)"}


def test_the_factory_env_feeds_the_boot_count_script_and_reads_back(tmp_path):
    plan = slots.plan(boards.get("rk3588"), {})
    blob = env.image(plan)
    assert len(blob) == 0x8000 and blob[4] == 1            # rk3588: redundant, flag 1
    e = env.decode(blob, redundant=True)
    assert e.vars == {"BOOT_ORDER": "A B", "BOOT_A_LEFT": "3", "BOOT_B_LEFT": "3",
                      "seedfw_good": "A", "seedfw_attempts": "3",
                      "seedfw_root_A": plan.slots[0].partuuid,
                      "seedfw_root_B": plan.slots[1].partuuid}
    (tmp_path / "rk-env.bin").write_bytes(blob)            # a redundant copy on its own
    p = invoke("inspect", tmp_path / "rk-env.bin", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows"][0]["detail"].endswith(", redundant copy flag 1")
    qemu = env.image(slots.plan(boards.get("qemu-aarch64"), {}))
    assert env.decode(qemu).vars["BOOT_ORDER"] == "A B"     # FAT file: one copy, no flag
    (tmp_path / "uboot.env").write_bytes(qemu)
    p = invoke("inspect", tmp_path / "uboot.env")
    assert p.returncode == 0, p.stderr
    assert "boot counting: BOOT_ORDER=A B, BOOT_A_LEFT=3, BOOT_B_LEFT=3" in p.stdout


def test_inspect_of_a_disk_lists_the_slots_and_checks_the_raw_env(tmp_path):
    from seedfw.images import samples
    plan = slots.plan(boards.get("rk3588"), {})
    disk = bytearray(samples.gpt_disk([("rootfs.0", 2048, b"a" * 4096),
                                       ("rootfs.1", 4096, b"b" * 4096),
                                       ("data", 6144, b"d" * 4096)], lbas=32768 + 33))
    blob = env.image(plan)
    for at in (14 << 20, (14 << 20) + 0x8000):
        disk[at:at + len(blob)] = blob
    path = tmp_path / "ab-disk.img"
    path.write_bytes(bytes(disk))
    p = invoke("inspect", path, "--json")
    doc = json.loads(p.stdout)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["env0"]["hash_ok"] and rows["env1"]["hash_ok"]
    assert rows["env0"]["detail"].startswith("at 0xe00000, 7 variables")
    assert any(n.startswith("update slots: rootfs.0 ") and "rootfs.1" in n and "data" in n
               for n in doc["notes"])
    disk[(14 << 20) + 100] ^= 1                         # the first copy damaged
    path.write_bytes(bytes(disk))
    p = invoke("inspect", path, "--json")
    rows = {r["name"]: r for r in json.loads(p.stdout)["rows"]}
    assert not rows["env0"]["hash_ok"] and rows["env0"]["verdict"] == "bad CRC"
    assert rows["env1"]["hash_ok"]


def test_update_with_a_fat_env_is_refused_before_any_step(tmp_path):
    """qemu-aarch64 declares its env in a FAT partition (board.yaml update.env); seedfw does not
    write one yet, and says so naming the field instead of a genimage failure mid-build."""
    from seedfw import parts
    from seedfw.parts import disk
    board = boards.get("qemu-aarch64")
    ctx = parts.context(board, tmp_path, {"UBOOT": True, "UPDATE": True})
    with pytest.raises(SeedfwError) as err:
        disk.layout(ctx)
    assert str(err.value) == (
        "board/qemu-aarch64/board.yaml: update.env.kind: board qemu-aarch64: CONFIG_UPDATE with a "
        "'fat' environment is not written by seedfw yet (genimage's vfat needs dosfstools and "
        "mtools, which this host's setup does not install)")
    # Negative control: without UPDATE the same board's layout has its single rootfs.
    ctx = parts.context(board, tmp_path, {"UBOOT": True})
    assert [p.name for p in disk.layout(ctx) if p.in_table][-1] == "rootfs"


def test_the_env_place_is_board_data_and_a_bad_one_names_its_field(tmp_path):
    rk = boards.get("rk3588")
    place = slots.env_place(rk.update["env"], rk)
    assert (place.kind, place.offset, place.redundant_offset, place.size) == \
        ("raw", 14 << 20, (14 << 20) + 0x8000, 0x8000)
    with pytest.raises(SeedfwError) as err:
        slots.env_place({"kind": "raw", "size": 0x8000, "offset": 14 << 20,
                         "redundant_offset": (14 << 20) + 0x100}, rk)
    assert err.value.field == "update.env.offset" and "not overlap" in str(err.value)
    with pytest.raises(SeedfwError) as err:
        slots.env_place({"kind": "fat", "size": 0x8000}, rk)
    assert err.value.field == "update.env.partition"
