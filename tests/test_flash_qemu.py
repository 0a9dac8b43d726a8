"""The qemu runner (board.yaml flash.backend: qemu): `invoke flash --board qemu-aarch64` after a
build programs TF-A's flash image into the board's 64 MiB secure flash drive under <out>/qemu/,
reads it back, and the next `invoke run` boots from that drive (negative control: an erased
drive does not boot)."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from cli import invoke, one_error_line
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash.qemu_drive import QemuDriveRunner
from seedfw.run import qemu

FLASH_SIZE = 0x04000000          # QEMU virt's secure flash (pflash unit 0), board.yaml qemu.drives


def _copy(build, dest):
    """The build's manifest and images (a copy, so the session build's output stays unflashed)."""
    dest.mkdir()
    shutil.copytree(build.outdir / "images", dest / "images")
    shutil.copy(build.outdir / "manifest.json", dest)
    return dest


def test_a_board_without_drives_has_nothing_to_program(tmp_path):
    with pytest.raises(SeedfwError) as err:
        QemuDriveRunner(boards.get("mps2-an385"), output=tmp_path)
    assert err.value.line().endswith("board/mps2-an385/board.yaml: qemu.drives: "
                                     "board 'mps2-an385' has no QEMU drive to program")


@pytest.mark.parametrize("qemu_decl, path", [({"load": "floppy", "modes": ["firmware"]}, "images/x"),
                                             ("bios", "images/x"),
                                             ({"load": "bios", "modes": "firmware"}, "images/x"),
                                             ({"load": "loader", "modes": ["firmware"],
                                               "addr": -1}, "images/x")])
def test_a_hostile_manifest_declaration_is_one_error(tmp_path, qemu_decl, path):
    """manifest.json is read back by run/: a load kind QEMU has no option for, or a path out of
    the output directory, is refused naming the file and field (never handed to QEMU)."""
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": [
        {"name": "x", "path": path, "declared": {"role": "bios", "qemu": qemu_decl}}]}))
    with pytest.raises(SeedfwError) as err:
        qemu.command(boards.get("qemu-aarch64"), tmp_path, "firmware")
    assert err.value.line() == (f"{tmp_path / 'manifest.json'}: artifacts[0].declared.qemu: not a "
                                "QEMU load declaration (load one of bios, kernel, initrd, loader, "
                                "drive, dtb-overlay, a relative path)")


def test_a_manifest_path_out_of_the_output_directory_is_one_error(tmp_path):
    """The schema (seedfw/schema/manifest-v1.json) refuses it for every reader, naming the path."""
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": [
        {"name": "x", "path": "../../etc/passwd",
         "declared": {"role": "bios", "qemu": {"load": "bios", "modes": ["firmware"]}}}]}))
    with pytest.raises(SeedfwError) as err:
        qemu.command(boards.get("qemu-aarch64"), tmp_path, "firmware")
    assert err.value.line() == (f"{tmp_path / 'manifest.json'}: artifacts[0].path: must be a path "
                                "relative to the output directory, without '..'")


@pytest.mark.slow
def test_invoke_flash_programs_the_secure_flash_and_run_boots_from_it(qemu_aarch64_build, tmp_path):
    out = _copy(qemu_aarch64_build, tmp_path / "out")
    bios = out / "images" / "qemu_fw.bios"
    proc = invoke("flash", "--board", "qemu-aarch64", "--output", out)
    assert proc.returncode == 0, proc.stderr
    drive = out / "qemu" / "secure-flash.img"
    data = drive.read_bytes()
    image = bios.read_bytes()
    # byte for byte: the image at offset 0, the rest of the 64 MiB erased (0xff)
    assert len(data) == FLASH_SIZE and len(image) > 1_000_000
    assert data[:len(image)] == image
    assert data[len(image):] == b"\xff" * (FLASH_SIZE - len(image))
    assert f"ok: {bios} -> qemu-aarch64 via qemu ({len(image)} bytes, {FLASH_SIZE} verified)" \
        in proc.stdout
    record = json.loads((out / "qemu" / "secure-flash.json").read_text())
    assert record["image_sha256"] == hashlib.sha256(image).hexdigest()
    assert record["drive_sha256"] == hashlib.sha256(data).hexdigest()

    # the next run boots from the drive (not -bios), through BL1 to the payload
    run = invoke("run", "--board", "qemu-aarch64", "--output", out, "--timeout", "120")
    assert run.returncode == 0, run.stderr
    log = (out / "logs" / "run.log").read_text()
    cmdline = log.splitlines()[0]
    assert f"-drive if=pflash,format=raw,unit=0,file={drive}" in cmdline and "-bios" not in cmdline
    assert f"run: booting drive 'secure-flash' from {drive} (flashed with qemu_fw.bios)" \
        in run.stdout
    assert "NOTICE:  BL1: Booting BL2" in log and "seedfw payload" in log

    # negative control: the same drive erased holds no BL1, so nothing boots from it
    drive.write_bytes(b"\xff" * FLASH_SIZE)
    run = invoke("run", "--board", "qemu-aarch64", "--output", out, "--timeout", "5")
    assert run.returncode != 0
    assert "BL1" not in (out / "logs" / "run.log").read_text()


@pytest.mark.slow
def test_verify_finds_a_drive_that_did_not_store_the_image(qemu_aarch64_build, tmp_path,
                                                          monkeypatch):
    """The readback is what proves the write: a drive that kept one bit wrong fails verify."""
    from seedfw import util

    out = _copy(qemu_aarch64_build, tmp_path / "out")
    runner = QemuDriveRunner(boards.get("qemu-aarch64"), output=out, log=lambda *_: None)
    assert runner.flash(out / "images" / "qemu_fw.bios").verified_bytes == FLASH_SIZE

    def lossy(target, data, write=util.write_bytes):     # the "medium" flips a FIP header bit
        if len(data) == FLASH_SIZE:
            data = data[:0x40000] + bytes([data[0x40000] ^ 0x01]) + data[0x40001:]
        return write(target, data)

    monkeypatch.setattr(util, "write_bytes", lossy)
    with pytest.raises(SeedfwError) as err:
        runner.flash(out / "images" / "qemu_fw.bios")
    assert err.value.message == "verify failed: byte 0x40000 of the drive differs from what was written"


@pytest.mark.slow
def test_an_image_the_build_did_not_declare_is_refused(qemu_aarch64_build, tmp_path):
    out = _copy(qemu_aarch64_build, tmp_path / "out")
    line = one_error_line(invoke("flash", "--board", "qemu-aarch64", "--output", out,
                                 "--image", out / "images" / "bl33.bin"))
    assert line == (f"error: {out / 'images' / 'bl33.bin'}: --image: the build declares no QEMU "
                    "load for bl33.bin, so no drive of board 'qemu-aarch64' holds it")
    assert not (out / "qemu").exists()


@pytest.mark.slow
def test_the_command_line_comes_from_the_declarations(qemu_aarch64_build):
    """Nothing in seedfw.run names a file: the -bios and the disk are what the manifest declares."""
    out = qemu_aarch64_build.outdir
    board = boards.get("qemu-aarch64")
    cmd = qemu.command(board, out, "firmware")
    manifest = json.loads((out / "manifest.json").read_text())
    loads = {a["declared"]["qemu"]["load"]: out / a["path"] for a in manifest["artifacts"]
             if a.get("declared", {}).get("qemu") and
             "firmware" in a["declared"]["qemu"]["modes"]}
    assert cmd[cmd.index("-bios") + 1] == str(loads["bios"])
    assert f"if=none,format=raw,file={loads['drive']},id=seedfw-disk" in cmd
    # the bench target loads nothing, but has the board's memory and no NIC (bench.py dropped both)
    bare = qemu.command(board, None, "bare", gdb=1234, halted=True)
    assert "-bios" not in bare and bare[bare.index("-m") + 1] == "1024"
    assert bare[bare.index("-nic") + 1] == "none" and bare[-3:] == ["-S", "-gdb", "tcp:127.0.0.1:1234"]


@pytest.mark.slow
def test_run_names_no_artifact_file(qemu_aarch64_build, mps2_build):
    """What QEMU loads comes from the declarations: no file the builds make is named in run/."""
    from pathlib import Path

    import seedfw.run

    sources = {p.name: p.read_text() for p in Path(seedfw.run.__file__).parent.glob("*.py")}
    for build in (qemu_aarch64_build, mps2_build):
        manifest = json.loads((build.outdir / "manifest.json").read_text())
        for name in (a["name"] for a in manifest["artifacts"]):
            assert not [m for m, text in sources.items() if name in text], name
