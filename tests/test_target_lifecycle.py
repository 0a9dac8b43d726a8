"""One target lifecycle (issue 32): seedfw.run.target.Target starts QEMU, pumps its UART and stops
it however the `with` ends, and the four callers that used to repeat start → UART → stop
(run.payload, run.os_boot, run.bench, counters.readback) go through it.

Each case starts a REAL QEMU: the smallest board (mps2-an385) in mode "bare" (nothing loaded,
halted at reset with -S, so it runs until it is stopped: the worst case for a leak). No build is
needed; the callers get that command line in place of the build's. After the block — an
exception, a KeyboardInterrupt, a timeout — the process must be gone (reaped: no zombie either)
within the stop grace.
"""

from __future__ import annotations

import os
import time

import pytest

from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.run import qemu
from seedfw.run.target import Target

BOARD = boards.get("mps2-an385")
BARE = qemu.command(BOARD, None, "bare", halted=True)


def gone(pid: int, within: float = 10.0) -> bool:
    """The process no longer exists (neither running nor a zombie awaiting its parent)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):     # a zombie (exited, not reaped) still counts
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def started(monkeypatch):
    """Every QEMU the code under test starts (through run.qemu.start), in order."""
    procs = []
    real = qemu.start

    def spy(cmd, board=None):
        proc = real(cmd, board)
        procs.append(proc)
        return proc
    monkeypatch.setattr(qemu, "start", spy)
    return procs


@pytest.fixture
def bare_build(monkeypatch):
    """The callers' command line is the bare, halted mps2-an385 QEMU (it never powers off)."""
    monkeypatch.setattr(qemu, "command", lambda *a, **k: list(BARE) + list(k.get("extra") or ()))


def test_an_exception_inside_the_with_stops_qemu(tmp_path, started):
    log = tmp_path / "uart.log"
    with pytest.raises(RuntimeError, match="boom"):
        with Target(BARE, BOARD, log) as target:
            assert target.running()
            pid = target.pid
            raise RuntimeError("boom")
    assert [p.pid for p in started] == [pid]
    assert gone(pid), f"QEMU {pid} still exists after an exception in the with block"
    assert target.returncode is not None and target.stopped
    assert started[0].stdout.closed
    assert log.read_text().startswith(f"$ {BARE[0]} ")         # the UART log was written


def test_ctrl_c_inside_the_with_stops_qemu(started):
    with pytest.raises(KeyboardInterrupt):
        with Target(BARE, BOARD) as target:
            target.wait_line("never printed", 0.2)
            raise KeyboardInterrupt
    assert gone(started[0].pid)


def test_a_timeout_stops_qemu_and_reports_it(started):
    with Target(BARE, BOARD) as target:
        assert target.wait_line("^never$", 0.3) is None         # the caller's timeout
    assert gone(started[0].pid) and target.stopped
    assert all(line.startswith("qemu-system-arm: ") for line in target.lines)  # QEMU's own only


def test_payload_run_timeout_leaves_no_qemu(tmp_path, started, bare_build):
    from seedfw.run import payload
    with pytest.raises(SeedfwError) as err:
        payload.run(BOARD, tmp_path, timeout=0.5, echo=lambda s: None, until="^never$")
    assert err.value.line() == (f"{tmp_path / 'logs' / 'run.log'}: guest did not power off or "
                                "print a line matching '^never$' within 0.5 s")
    assert len(started) == 1 and gone(started[0].pid)


def test_os_boot_interrupted_while_waiting_leaves_no_qemu(tmp_path, started, bare_build,
                                                         monkeypatch):
    """The wait for the end used to be outside the try: a Ctrl-C there left QEMU running."""
    from seedfw.run import os_boot

    def interrupted(self, timeout):
        raise KeyboardInterrupt
    monkeypatch.setattr(Target, "wait_end", interrupted)
    with pytest.raises(KeyboardInterrupt):
        os_boot.boot(BOARD, tmp_path, timeout=5, echo=lambda s: None, chain=True)
    assert len(started) == 1 and gone(started[0].pid)


def test_os_boot_timeout_leaves_no_qemu(tmp_path, started, bare_build):
    from seedfw.run import os_boot
    with pytest.raises(SeedfwError) as err:
        os_boot.boot(BOARD, tmp_path, timeout=0.5, echo=lambda s: None, chain=True)
    assert err.value.line() == (f"{tmp_path / 'logs' / 'os-boot.log'}: OS boot failed: the guest "
                                "did not power off within 0.5 s (QEMU stopped)")
    assert gone(started[0].pid)


def test_counters_readback_without_a_stats_line_leaves_no_qemu(tmp_path, started, bare_build):
    from seedfw.counters import readback
    with pytest.raises(SeedfwError) as err:
        readback._stats_counters_qemu(BOARD, None, tmp_path, timeout=0.5)
    assert err.value.line() == (f"{tmp_path / 'logs' / 'counters.log'}: no 'stats:' line on the "
                                "UART within 0.5 s")
    assert len(started) == 1 and gone(started[0].pid)


def test_the_gdb_target_stops_qemu_after_an_exception(started):
    from seedfw.run.bench import QemuGdbTarget
    with pytest.raises(RuntimeError):
        with QemuGdbTarget(BOARD) as target:
            assert target.proc.poll() is None and target.port
            raise RuntimeError("probe failed")
    assert started and all(gone(p.pid) for p in started)


def test_the_negative_control_a_bare_popen_outlives_its_block(started):
    """Without the lifecycle object, the same exception leaves QEMU running: what the tests
    above would see if Target did not clean up (then this test stops it itself)."""
    proc = qemu.start(BARE, BOARD)
    try:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            pass
        assert not gone(proc.pid, within=0.5)
    finally:
        qemu.stop(proc)
        proc.stdout.close()
    assert gone(proc.pid)


# -- a refused boot leaves nothing behind (issue 33) -------------------------------------------------
def _tree(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_boot_on_a_board_without_qemu_is_refused_leaving_nothing(tmp_path):
    """`invoke boot --board rk3588` used to create logs/os-boot.log (empty) and build/os-boot/,
    then fail on a memory region. rk3588 now boots its image's own OS on QEMU virt
    (seedfw.run.os_virt); a build without the ext4 root it boots is refused first, naming the
    symbol, before anything is written."""
    from cli import invoke, one_error_line
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text('{"BOARD": "rk3588", "BUILDROOT": true, "KERNEL": true}')
    (out / "manifest.json").write_text('{"board": "rk3588", "artifacts": []}')
    before = _tree(out)
    proc = invoke("boot", "--board", "rk3588", "--output", out, timeout=120)
    assert proc.returncode == 1
    assert one_error_line(proc).endswith("config.json: CONFIG_OS_ROOT_EXT4: the OS is off in "
                                         "this build: CONFIG_OS_ROOT_EXT4=y turns it on (the "
                                         "board's defconfig has it; invoke build --board rk3588, "
                                         "or menuconfig)")
    assert _tree(out) == before


def test_boot_of_a_build_without_the_os_names_the_symbol_and_leaves_nothing(tmp_path):
    """qemu-aarch64's defconfig has the OS off: the refusal says so and which symbol turns it
    on, before anything is written."""
    from cli import invoke, one_error_line
    out = tmp_path / "out"
    proc = invoke("config", "--board", "qemu-aarch64", "--output", out, timeout=300)
    assert proc.returncode == 0, proc.stderr
    before = _tree(out)
    proc = invoke("boot", "--board", "qemu-aarch64", "--output", out, timeout=120)
    assert proc.returncode == 1
    assert one_error_line(proc) == (
        f"error: {out / 'config.json'}: CONFIG_BUILDROOT: the OS is off in this build: "
        "CONFIG_BUILDROOT=y turns it on (invoke build --board qemu-aarch64 --fragment "
        "configs/buildroot.fragment, or menuconfig)")
    assert _tree(out) == before


def test_boot_before_a_build_leaves_nothing(tmp_path):
    from seedfw.run import os_boot
    with pytest.raises(SeedfwError) as err:
        os_boot.boot(boards.get("qemu-aarch64"), tmp_path, timeout=1, echo=lambda s: None)
    assert err.value.line() == (f"{tmp_path / 'manifest.json'}: not built yet "
                                "(run 'invoke build --board qemu-aarch64')")
    assert _tree(tmp_path) == set()
