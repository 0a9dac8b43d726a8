"""Flashing through pyOCD into QEMU mps2-an385 via the `qemu` probe plug-in (same code path as a
hardware probe: pyOCD's DAP/Cortex-M layers, flash algorithm run on the target CPU, our verify)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from mcu_build import BUILD_ID, ROOT, mcu_build
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash.targets import algo_blob

QEMU_ARGS = ["-icount", "shift=3"]
BANNER = f"seedfw mcu 0.1.0 build {BUILD_ID} on mps2-an385"


@pytest.fixture(scope="module")
def mcu(tmp_path_factory):
    return mcu_build(tmp_path_factory)


@pytest.fixture
def board():
    return boards.get("mps2-an385")


def test_flash_algo_blob_matches_source(mcu):
    """The checked-in algo blob is exactly what firmware/mcu/flashalgo builds to (reproducible)."""
    blob, offsets = algo_blob.read_algo_elf(mcu / "flashalgo" / "algo.elf")
    checked_in = ROOT / "tools/seedfw/flash/targets/mps2_an385_algo.py"
    assert algo_blob.render_module(blob, offsets, "firmware/mcu/flashalgo") == checked_in.read_text()


def test_mcu_build_is_reproducible(mcu, tmp_path):
    subprocess.run(["make", "-s", "-C", str(ROOT / "firmware/mcu"), f"O={tmp_path}", f"BUILD_ID={BUILD_ID}"],
                   check=True, capture_output=True)
    assert (tmp_path / "mcu.elf").read_bytes() == (mcu / "mcu.elf").read_bytes()
    assert b"/tmp" not in (mcu / "mcu.elf").read_bytes()


def test_wrong_board_image_refused(mcu, tmp_path):
    """In-process through the invoke task (same one-line error contract as the command line)."""
    from invoke import Context
    from invoke.exceptions import Exit

    from seedfw.cli.flash import flash

    img = tmp_path / "mcu.bin"
    shutil.copy(mcu / "mcu.bin", img)
    (tmp_path / "manifest.json").write_text(json.dumps({"board": "rk3588"}))
    with pytest.raises(Exit) as err:
        flash(Context(), board="mps2-an385", probe="qemu:127.0.0.1:1", image=str(img))
    assert err.value.code == 1
    assert err.value.message == (f"error: {tmp_path / 'manifest.json'}: board: image was built for board "
                                 "'rk3588', not 'mps2-an385'")
    # An ELF for the wrong architecture is refused from its header alone.
    with pytest.raises(Exit) as err:
        flash(Context(), board="qemu-aarch64", probe="qemu:127.0.0.1:1", image=str(mcu / "mcu.elf"))
    assert err.value.message == (f"error: {mcu / 'mcu.elf'}: e_machine: ELF is for EM_ARM, "
                                 "board 'qemu-aarch64' needs EM_AARCH64")


@pytest.mark.slow
def test_flash_api_runs_and_reads_back(mcu, board):
    from seedfw.run.bench import QemuGdbTarget
    from seedfw.flash.pyocd_runner import PyocdRunner
    from seedfw.flash.qemu_probe.rsp import RspClient

    image = (mcu / "mcu.bin").read_bytes()
    with QemuGdbTarget(board, extra_args=QEMU_ARGS) as q:
        result = PyocdRunner(board, q.uid, target="seedfw_mps2_an385").flash(mcu / "mcu.elf")
        assert result.verified_bytes == len(image)
        uart = q.wait_uart("mcu: idle")
        assert BANNER in uart
        # Independent readback over a fresh stub connection (not through pyOCD).
        rsp = RspClient("127.0.0.1", q.port)
        assert rsp.read_memory(0, len(image)) == image
        rsp.close()


@pytest.mark.slow
def test_flash_negative_control_fails_verify(mcu, board):
    """A ProgramPage that reports success and writes nothing: pyOCD is satisfied, our verify is not."""
    from seedfw.run.bench import QemuGdbTarget
    from seedfw.flash.pyocd_runner import PyocdRunner
    from seedfw.flash.targets.mps2_an385 import target_class_for_algo

    target_class_for_algo("seedfw_mps2_an385_broken", mcu / "flashalgo" / "algo-broken.elf")
    image = (mcu / "mcu.bin").read_bytes()
    ndiff = sum(1 for b in image if b != 0xFF)
    with QemuGdbTarget(board, extra_args=QEMU_ARGS) as q:
        with pytest.raises(SeedfwError) as err:
            PyocdRunner(board, q.uid, target="seedfw_mps2_an385_broken").flash(mcu / "mcu.bin")
    assert err.value.line() == (
        f"{mcu / 'mcu.bin'}: verify: readback differs from the image: first mismatch at offset 0x0 "
        f"(address 0x00000000): expected {image[0]:#04x}, read 0xff ({ndiff} of {len(image)} bytes differ)")


def _padded_image(mcu, tmp_path, size=100_000):
    """The firmware padded with seeded random bytes: three whole 32 KiB pages (checked by CRC on the
    target) and a 1,696-byte tail (read back)."""
    import random

    fw = (mcu / "mcu.bin").read_bytes()
    rng = random.Random(33)
    image = fw + bytes(rng.getrandbits(8) for _ in range(size - len(fw)))
    path = tmp_path / "padded.bin"
    path.write_bytes(image)
    return path, image


@pytest.mark.slow
def test_verify_by_target_crc_covers_whole_pages(mcu, board, tmp_path):
    """Whole pages are verified by pyOCD's CRC32 analyzer on the target, the tail by readback; an
    independent stub readback agrees with the image."""
    from seedfw.run.bench import QemuGdbTarget
    from seedfw.flash.pyocd_runner import PyocdRunner
    from seedfw.flash.qemu_probe.rsp import RspClient

    path, image = _padded_image(mcu, tmp_path)
    lines = []
    with QemuGdbTarget(board, extra_args=QEMU_ARGS) as q:
        result = PyocdRunner(board, q.uid, target="seedfw_mps2_an385", log=lines.append).flash(path)
        rsp = RspClient("127.0.0.1", q.port)
        readback = rsp.read_memory(0, len(image))
        rsp.close()
    assert result.verified_bytes == len(image) == 100_000
    assert any(line.endswith("(98304 by CRC32 on the target, 1696 read back): the target holds the image")
               for line in lines), lines
    assert readback == image


@pytest.mark.slow
def test_verify_catches_one_flipped_byte_inside_a_crc_page(mcu, board, tmp_path):
    """Negative control for the CRC path: an algorithm that writes every byte but flips bit 0 of the
    one at 0x9123 (inside the second whole page). pyOCD reports success; the on-target CRC of that
    page differs, and the readback names the byte."""
    from seedfw.run.bench import QemuGdbTarget
    from seedfw.flash.pyocd_runner import PyocdRunner
    from seedfw.flash.targets.mps2_an385 import target_class_for_algo

    flip = tmp_path / "algo" / "algo-flip.elf"
    subprocess.run(["make", "-s", "-C", str(ROOT / "firmware/mcu/flashalgo"), f"O={flip.parent}",
                    "CROSS_COMPILE=arm-none-eabi-", str(flip)], check=True, capture_output=True)
    target_class_for_algo("seedfw_mps2_an385_flip", flip)
    path, image = _padded_image(mcu, tmp_path)
    with QemuGdbTarget(board, extra_args=QEMU_ARGS) as q:
        with pytest.raises(SeedfwError) as err:
            PyocdRunner(board, q.uid, target="seedfw_mps2_an385_flip", log=lambda *_: None).flash(path)
    assert err.value.line() == (
        f"{path}: verify: readback differs from the image: first mismatch at offset 0x9123 "
        f"(address 0x00009123): expected {image[0x9123]:#04x}, read {image[0x9123] ^ 1:#04x} "
        f"(1 of {len(image)} bytes differ)")


@pytest.mark.slow
def test_pyocd_cli_flash_breakpoint_and_step(mcu, board):
    """Plain `pyocd flash` reaches the plug-in by UID prefix; then breakpoint + step via the API."""
    from elftools.elf.elffile import ELFFile
    from pyocd.core.helpers import ConnectHelper
    from pyocd.core.target import Target

    from seedfw.run.bench import EMULATED_WAIT, QemuGdbTarget

    with open(mcu / "mcu.elf", "rb") as f:
        main = ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name("main")[0]["st_value"] & ~1
    with QemuGdbTarget(board, extra_args=QEMU_ARGS) as q:
        res = subprocess.run(["pyocd", "flash", "-u", q.uid, "-t", "seedfw_mps2_an385", str(mcu / "mcu.elf")],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        q.wait_uart("mcu: idle")
        session = ConnectHelper.session_with_chosen_probe(unique_id=q.uid, target_override="seedfw_mps2_an385",
                                                          blocking=False)
        with session:
            t = session.target
            t.reset_and_halt()
            t.set_breakpoint(main)
            t.resume()
            deadline = time.monotonic() + EMULATED_WAIT
            while t.get_state() != Target.State.HALTED and time.monotonic() < deadline:
                time.sleep(0.01)
            assert t.get_state() == Target.State.HALTED, \
                f"host deadline: the core did not halt at main within {EMULATED_WAIT:g} s"
            assert t.read_core_register("pc") == main
            t.step()
            assert t.read_core_register("pc") != main
            t.remove_breakpoint(main)
            t.resume()
        # The breakpoint stopped the second boot before the banner; once resumed it prints again.
        deadline = time.monotonic() + EMULATED_WAIT
        while q.uart().count(BANNER) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert q.uart().count(BANNER) == 2, \
            f"host deadline: no second banner within {EMULATED_WAIT:g} s:\n{q.uart()}"


@pytest.mark.slow
def test_invoke_flash_with_bench(mcu, tmp_path):
    own = tmp_path / "bench.yaml"          # a developer's own bench file naming a QEMU probe
    own.write_text("boards:\n  - {name: wake-mcu, board: mps2-an385, probe: 'qemu:auto', "
                   "serial: qemu}\n")
    res = subprocess.run([sys.executable, "-m", "invoke", "flash", "--board", "mps2-an385",
                          "--bench", str(own), "--image", str(mcu / "mcu.hex")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert f"uart: {BANNER}" in res.stdout
    assert "verified 1992 bytes in " in res.stdout
    assert "s (read back): the target holds the image" in res.stdout
