"""The build pipeline end to end: real TF-A, payload and MCU builds, QEMU boots, incremental rebuilds.

Slow tests build real firmware with the Debian cross-compilers (TF-A 2.12.1 from Debian's source
archive, sha256-pinned) and boot QEMU; they share one build per board through tests/builds.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import socket
import time

import pytest

from seedfw import paths
from elftools.elf.elffile import ELFFile

import builds
from cli import invoke, one_error_line
from seedfw import __version__, boards
from seedfw.run import payload as qemu
from seedfw.run import qemu as qemu_cmd
from seedfw.errors import SeedfwError
from seedfw.paths import BOARD_DIR

COMPILING_STEPS = {"tfa.build", "payload.build", "mcu.build"}


@pytest.fixture(scope="session")
def rk3588_second_dir(tmp_path_factory):
    """A second, independent cold build of rk3588 (for reproducibility and option changes)."""
    result = builds.build_board("rk3588", tmp_path_factory, tag="second")
    return result, builds.image(result, "bl31.elf").read_bytes()


def load_segments(path):
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [(s["p_vaddr"], s["p_paddr"], s["p_memsz"]) for s in elf.iter_segments()
                if s["p_type"] == "PT_LOAD"]


def steps(outdir):
    return [json.loads(l) for l in (outdir / "logs" / "steps.jsonl").read_text().splitlines()]


# ---- fast: bad input -----------------------------------------------------------------------------

def test_unknown_board_is_one_error_line():
    line = one_error_line(invoke("build", "--board", "nosuch"))
    assert line.startswith("error: unknown board 'nosuch' (known: ")


def test_bad_extra_make_vars_stop_before_anything_runs(tmp_path):
    frag = tmp_path / "bad.fragment"
    frag.write_text('CONFIG_TFA_EXTRA_MAKE_VARS="LOG_LEVEL=40 oops"\n')
    line = one_error_line(invoke("build", "--board", "rk3588", "--output", tmp_path / "out",
                                 "--fragment", frag))
    assert line == (f"error: {frag}:1: CONFIG_TFA_EXTRA_MAKE_VARS: \"LOG_LEVEL=40 oops\" is not a "
                    "list of make variables (shell-quoted words NAME=value, NAME "
                    "[A-Za-z_][A-Za-z0-9_]*, value [A-Za-z0-9_.,:/+@%=~- ]*)")
    assert not (tmp_path / "out" / "stamps").exists() or not any((tmp_path / "out" / "stamps").iterdir())


def test_mcu_without_its_makefile_is_a_clear_error(tmp_path, monkeypatch):
    from seedfw.parts import BuildContext, mcu
    from seedfw import config

    monkeypatch.setattr(mcu, "SOURCE", tmp_path / "mcu")
    cfg = config.configure("mps2-an385", tmp_path / "out")
    with pytest.raises(SeedfwError) as info:
        mcu.McuPart().steps(BuildContext(cfg))
    assert info.value.file == str(tmp_path / "mcu" / "Makefile")
    assert info.value.message.startswith("the wake-MCU firmware is not in this tree yet")


def test_clean_keeps_config_and_logs_distclean_removes_all(tmp_path):
    out = tmp_path / "out"
    for sub in ("build/tf-a", "stamps", "images", "logs"):
        (out / sub).mkdir(parents=True)
        (out / sub / "x").write_text("x")
    (out / ".config").write_text("CONFIG_TFA=y\n")
    (out / "manifest.json").write_text("{}\n")
    (out / paths.OUTPUT_MARKER).write_text(paths.MARKER_TEXT)    # what seedfw writes at creation
    proc = invoke("clean", "--board", "rk3588", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [".config", paths.OUTPUT_MARKER, "logs"]
    proc = invoke("distclean", "--board", "rk3588", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert not out.exists()


def test_clean_of_an_output_dir_without_config_creates_none(tmp_path):
    """clean keeps a .config when there is one and never makes one: an output dir that only has
    build products (stamps, images) is cleaned and stays without .config; a missing one is left
    missing."""
    out = tmp_path / "out"
    for sub in ("stamps", "images", "build/mcu"):
        (out / sub).mkdir(parents=True)
        (out / sub / "x").write_text("x")
    (out / paths.OUTPUT_MARKER).write_text(paths.MARKER_TEXT)
    proc = invoke("clean", "--board", "mps2-an385", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"cleaned {out}"
    assert [p.name for p in out.iterdir()] == [paths.OUTPUT_MARKER]
    missing = tmp_path / "never-built"
    proc = invoke("clean", "--board", "mps2-an385", "--output", missing)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"nothing to clean: {missing} does not exist"
    assert not missing.exists()


def test_clean_and_distclean_refuse_a_directory_that_is_not_an_output_dir(tmp_path):
    project = tmp_path / "project"
    (project / "build").mkdir(parents=True)
    (project / "build" / "keep.o").write_text("someone else's")
    for task in ("clean", "distclean"):
        line = one_error_line(invoke(task, "--board", "rk3588", "--output", project))
        assert line == (f"error: {project}: --output: not a seedfw output directory (no "
                        ".seedfw-output, which seedfw writes when it creates one); not touching it")
    assert (project / "build" / "keep.o").read_text() == "someone else's"


def test_run_until_with_a_bad_expression_is_one_error_line(tmp_path):
    line = one_error_line(invoke("run", "--board", "mps2-an385", "--output", tmp_path,
                                 "--until", "stats: ("))
    assert line == ("error: --until: 'stats: (' is not a valid regular expression: "
                    "missing ), unterminated subpattern at position 7")


def test_board_ready_expression_is_checked_with_its_file_and_field(tmp_path):
    board_file = tmp_path / "board.yaml"
    board_file.write_text((BOARD_DIR / "mps2-an385" / "board.yaml").read_text()
                          .replace('ready: "^stats: "', 'ready: "[stats"'))
    board = boards.load_file(board_file)
    with pytest.raises(SeedfwError) as info:
        qemu.ready_pattern(board)
    assert info.value.line() == (f"{board_file}: qemu.ready: '[stats' is not a valid regular "
                                 "expression: unterminated character set at position 0")
    assert qemu.ready_pattern(boards.get("mps2-an385")).pattern == "^stats: "
    assert qemu.ready_pattern(boards.get("mps2-an385"), until="banner").pattern == "banner"
    assert qemu.ready_pattern(boards.get("qemu-aarch64")) is None


def test_run_before_build_says_what_to_do(tmp_path):
    line = one_error_line(invoke("run", "--board", "qemu-aarch64", "--output", tmp_path))
    # what QEMU loads is what the build declared (manifest.json): no build, no manifest
    assert line == (f"error: {tmp_path / 'manifest.json'}: not built yet "
                    "(run 'invoke build --board qemu-aarch64')")


# ---- slow: real builds ---------------------------------------------------------------------------

@pytest.mark.slow
def test_rk3588_bl31_has_its_two_load_segments(rk3588_build):
    bl31 = builds.image(rk3588_build, "bl31.elf")
    segments = load_segments(bl31)
    # BL31 proper at 0x40000 (code, then data; two segments with SEPARATE_CODE_AND_RODATA=1) and the
    # PMU SRAM code at 0xff100000 — each segment inside the board's bl31 or pmu-sram region.
    assert segments[0][0] == 0x40000 and segments[-1][0] == 0xFF100000
    board = boards.get("rk3588")
    home = {}
    for vaddr, _, size in segments:
        for region in (board.region("bl31"), board.region("pmu-sram")):
            if region.base <= vaddr and vaddr + size <= region.base + region.size:
                home[vaddr] = region.name
    assert sorted(set(home.values())) == ["bl31", "pmu-sram"] and len(home) == len(segments)
    # SEPARATE_CODE_AND_RODATA=1 from the rk3588 defconfig: .rodata is a section of its own.
    with open(bl31, "rb") as f:
        assert ELFFile(f).get_section_by_name(".rodata") is not None
    manifest = json.loads((rk3588_build.outdir / "manifest.json").read_text())
    entry = {a["name"]: a for a in manifest["artifacts"]}["bl31.elf"]
    assert entry["size"] == bl31.stat().st_size and entry["path"] == "images/bl31.elf"
    assert str(rk3588_build.outdir) not in (rk3588_build.outdir / "manifest.json").read_text()


@pytest.mark.slow
def test_tfa_build_log_and_no_build_paths_in_the_image(rk3588_build):
    log = (rk3588_build.outdir / "logs" / "tfa.log").read_text()
    assert "PLAT=rk3588" in log and "BUILD_BASE=" in log
    data = builds.image(rk3588_build, "bl31.elf").read_bytes()
    assert f"seedfw-{json.loads((rk3588_build.outdir / 'manifest.json').read_text())['build_id']}".encode() in data
    for leak in (str(rk3588_build.outdir).encode(), b"/work/", b"/tmp/"):
        assert leak not in data


@pytest.mark.slow
def test_qemu_chain_boots_to_the_payload_banner(qemu_aarch64_build):
    board = boards.get("qemu-aarch64")
    result = qemu.run(board, qemu_aarch64_build.outdir, timeout=120, echo=lambda s: None)
    build_id = json.loads((qemu_aarch64_build.outdir / "manifest.json").read_text())["build_id"]
    banner = f"seedfw payload {__version__} build {build_id} on qemu-aarch64"
    assert banner in result.lines, result.lines
    assert result.returncode == 0
    # BL1 → BL2 → BL31 ran before BL33, and the UART went to the run log too.
    assert any("BL31: Built" in l for l in result.lines)
    assert banner in (qemu_aarch64_build.outdir / "logs" / "run.log").read_text()
    # The payload is linked where the board's bl33 region says.
    entry = load_segments(builds.image(qemu_aarch64_build, "bl33.elf"))[0][0]
    assert entry == board.region("bl33").base


@pytest.mark.slow
def test_a_guest_that_does_not_power_off_in_time_is_an_error(qemu_aarch64_build):
    board = boards.get("qemu-aarch64")
    with pytest.raises(SeedfwError) as info:
        qemu.run(board, qemu_aarch64_build.outdir, timeout=0.01, echo=lambda s: None,
                 log=qemu_aarch64_build.outdir / "logs" / "timeout.log")
    assert info.value.message == "guest did not power off within 0.01 s"
    assert info.value.file == str(qemu_aarch64_build.outdir / "logs" / "timeout.log")


@pytest.mark.slow
def test_start_with_extra_args_gives_a_waiting_gdb_stub(qemu_aarch64_build):
    """What the pyOCD probe uses: QEMU halted at reset (-S) with a GDB stub on a free local port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    board = boards.get("qemu-aarch64")
    proc = qemu_cmd.start(qemu_cmd.command(board, qemu_aarch64_build.outdir, "firmware",
                                           gdb=port, halted=True), board)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert proc.poll() is None, "QEMU exited before its GDB stub listened"
                assert time.monotonic() < deadline, \
                    f"host deadline: QEMU's GDB stub did not listen on {port} within 60 s"
                time.sleep(0.05)
        conn.sendall(b"$?#3f")                      # "why did you stop?" — halted at reset
        reply = b""
        while not re.search(rb"#[0-9a-f]{2}$", reply):     # "+" ack, then "$T05…#cs"
            chunk = conn.recv(256)
            assert chunk, reply
            reply += chunk
        conn.close()
        assert reply.startswith(b"+$T05") or reply.startswith(b"+$S05"), reply
    finally:
        assert qemu_cmd.stop(proc) is not None
    assert proc.poll() is not None


@pytest.mark.slow
def test_invoke_run_streams_the_banner(qemu_aarch64_build):
    proc = invoke("run", "--board", "qemu-aarch64", "--output", qemu_aarch64_build.outdir,
                  "--timeout", "120")
    assert proc.returncode == 0, proc.stderr
    assert any(l.startswith("seedfw payload ") for l in proc.stdout.splitlines())


@pytest.mark.slow
def test_second_build_runs_no_compiler(rk3588_build, qemu_aarch64_build):
    for first in (rk3588_build, qemu_aarch64_build):
        again = builds.rebuild(first)
        records = steps(first.outdir)
        assert records and all(r["action"] == "skipped" for r in records), records
        assert not COMPILING_STEPS & set(again.ran)
        # A host-time bound (a budget, not the proof: the proof is above, nothing ran): 1.6 s
        # for rk3588 on an idle 2-core machine (the manifest, the SBOM and the report are
        # rewritten), 8.6 s at load 10 under two test workers; 30 s still catches a no-op that
        # re-hashes the rootfs or re-reads every tree.
        assert again.seconds < 30.0, \
            f"host bound: the no-op rebuild of {first.board} took {again.seconds:.2f} s (over 30 s)"


@pytest.mark.slow
def test_changing_tfa_log_level_rebuilds_tfa_only(rk3588_second_dir, tmp_path):
    second, before = rk3588_second_dir
    # On a copy (output directories can move), so the session's second build stays pristine
    # for the reproducibility test.
    shutil.copytree(second.outdir, tmp_path / "out", symlinks=True)
    result = dataclasses.replace(second, outdir=tmp_path / "out")
    frag = tmp_path / "loud.fragment"
    frag.write_text("CONFIG_TFA_LOG_LEVEL=40\n")
    again = builds.rebuild(result, fragments=[frag])
    actions = {r["step"]: r["action"] for r in steps(result.outdir)}
    assert actions["tfa.fetch"] == actions["tfa.extract"] == "skipped"
    # TF-A and what depends on it (later stages: images, reports) ran, nothing else. The stamps
    # record each step's dependencies.
    deps = {f.name[:-len(".stamp")]: set(json.loads(f.read_text())["deps"])
            for f in (result.outdir / "stamps").glob("*.stamp")}
    downstream = {"tfa.build"}
    while True:
        more = {s for s, d in deps.items() if d & downstream} - downstream
        if not more:
            break
        downstream |= more
    assert set(again.ran) == downstream, (again.ran, downstream)
    assert again.ran[0] == "tfa.build" and not COMPILING_STEPS - {"tfa.build"} & set(again.ran)
    assert "LOG_LEVEL=40" in (result.outdir / "logs" / "tfa.log").read_text()
    assert builds.image(result, "bl31.elf").read_bytes() != before


@pytest.mark.slow
def test_mcu_image_links_at_the_boards_addresses(mps2_build):
    result = mps2_build
    board = boards.get("mps2-an385")
    flash, sram = board.region("flash"), board.region("sram")
    segments = load_segments(builds.image(result, "mcu.elf"))
    assert segments[0][0] == flash.base                  # vector table at the start of flash
    for vaddr, paddr, size in segments:
        assert flash.base <= paddr < flash.base + flash.size          # stored in flash
        assert any(r.base <= vaddr and vaddr + size <= r.base + r.size for r in (flash, sram))
    hexfile = builds.image(result, "mcu.hex").read_text().splitlines()
    assert hexfile[-1] == ":00000001FF"
    binary = builds.image(result, "mcu.bin").read_bytes()
    initial_sp = int.from_bytes(binary[0:4], "little")
    assert sram.base < initial_sp <= sram.base + sram.size


@pytest.mark.slow
def test_build_all_and_output_dirs_can_move(rk3588_build, qemu_aarch64_build, tmp_path_factory,
                                            tmp_path):
    """`--board all` builds each board into DIR/<board>; stamps hold no absolute paths, so output
    directories copied elsewhere are still up to date (only boards not built before compile).
    Every board but mps2-an385 (the cheapest) is a copied session build: a board missing here
    would be a second Buildroot build of the suite."""
    copied = (rk3588_build, qemu_aarch64_build, builds.build_board("rock5a", tmp_path_factory))
    for result in copied:
        shutil.copytree(result.outdir, tmp_path / result.board, symlinks=True)
    proc = invoke("build", "--board", "all", "--output", tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    for name in boards.names():
        assert (tmp_path / name / "manifest.json").is_file()
        ran = [r["step"] for r in steps(tmp_path / name) if r["action"] == "ran"]
        if name in {r.board for r in copied}:
            assert ran == [], (name, ran)
    assert "mps2-an385" not in {r.board for r in copied}     # one board did build here


@pytest.mark.slow
def test_mcu_build_makes_the_flash_algorithms_and_checks_them(mps2_build, tmp_path):
    from seedfw.parts import mcu

    algos = mps2_build.outdir / "build" / "mcu" / "flashalgo"
    assert sorted(p.name for p in algos.glob("*.elf")) == ["algo-broken.elf", "algo.elf"]
    log = (mps2_build.outdir / "logs" / "mcu.log").read_text()
    assert "=== flash algo vs tools/seedfw/flash/targets/mps2_an385_algo.py: identical" in log
    assert mcu.algo_drift(algos / "algo.elf") is None
    # Negative control: a checked-in blob one byte off is reported, with how to regenerate it.
    stale = tmp_path / "stale_algo.py"
    text = mcu.CHECKED_IN_ALGO.read_text()
    stale.write_text(text.replace('    "00be', '    "01be', 1))
    assert stale.read_text() != text
    drift = mcu.algo_drift(algos / "algo.elf", stale)
    assert drift.startswith(f"firmware/mcu/flashalgo builds to a different algorithm than the "
                            f"checked-in {stale}, which 'invoke flash' uses; regenerate it with")
    # `invoke flash` finds its image through the manifest; the algorithms are not images.
    names = {a["name"] for a in json.loads((mps2_build.outdir / "manifest.json").read_text())["artifacts"]}
    assert {"mcu.elf", "mcu.bin", "mcu.hex"} <= names and not any("algo" in n for n in names)


@pytest.mark.slow
def test_invoke_run_mps2_stops_at_the_boards_ready_line(mps2_build):
    """The MCU never powers off: the run succeeds at board.yaml's qemu.ready line (the stats block)."""
    out = mps2_build.outdir
    build_id = json.loads((out / "manifest.json").read_text())["build_id"]
    proc = invoke("run", "--board", "mps2-an385", "--output", out, "--timeout", "120")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"seedfw mcu 0.1.0 build {build_id} on mps2-an385" in lines
    assert any(l.startswith("stats: addr=0x") for l in lines)
    assert lines[-1].startswith("guest ready after ") and "matched '^stats: '" in lines[-1]
    assert "terminating on signal" not in proc.stdout + proc.stderr
    assert "stats: addr=0x" in (out / "logs" / "run.log").read_text()
    # --until overrides it; a line the MCU never prints is a timeout (negative control).
    proc = invoke("run", "--board", "mps2-an385", "--output", out, "--until", "^image: bytes=")
    assert proc.returncode == 0 and "matched '^image: bytes='" in proc.stdout.splitlines()[-1]
    line = one_error_line(invoke("run", "--board", "mps2-an385", "--output", out,
                                 "--until", "^never printed", "--timeout", "3"))
    assert line == (f"error: {out / 'logs' / 'run.log'}: guest did not power off or print a line "
                    "matching '^never printed' within 3 s")
