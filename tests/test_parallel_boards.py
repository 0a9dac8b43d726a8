"""Every board at once under one job limit (issue 15): `invoke build --board A,B -j N`.

Fast: real GNU make under seedfw.plan with a shared seedfw.plan.jobserver.JobServer — the jobs that
run at the same time, measured from timestamps the jobs write themselves, never exceed the limit,
while the same plans without the jobserver (negative control) run twice as many.
Slow (real builds of the two cheap boards, the MCU board and qemu-aarch64 without U-Boot): the
images equal those of serial builds; the cross compilers, wrapped by a probe that logs when each
runs, never run more than 2 at once under -j 2; a board whose compiler is broken fails with the
exit status and one-line error naming it and its step while the other board's images are made;
Ctrl-C stops both boards with status 130 and leaves no process behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import builds
from cli import ROOT, invoke, processes_mentioning
from seedfw import util
from seedfw.plan.jobserver import JobServer
from seedfw.plan import Plan, Step, run_command

NOBOOT = ROOT / "tests" / "data" / "no-uboot.fragment"
BOARDS = ("mps2-an385", "qemu-aarch64")


def max_overlap(log: Path) -> int:
    """Most intervals open at once, from lines "s <id> <time>" / "e <id> <time>"."""
    events = []
    for line in log.read_text().splitlines():
        kind, _, t = line.split()
        events.append((float(t), 1 if kind == "e" else 0, kind))   # an end before a start at a tie
    now = most = 0
    for _, _, kind in sorted(events):
        now += 1 if kind == "s" else -1
        most = max(most, now)
    return most


# ---- fast: real make, no board build --------------------------------------------------------------

def _sleepy_plans(tmp_path: Path, jobserver) -> Path:
    """Two plans (two "boards") run at once, each with two `make -j4` steps of 4 jobs of 0.3 s and
    one step that is Python only; every job and the Python step log their start and end."""
    tmp_path.mkdir()
    log = tmp_path / "jobs.log"
    mk = tmp_path / "Makefile"
    mk.write_text("all: j1 j2 j3 j4\nj1 j2 j3 j4:\n"
                  f"\t@echo s $@ $$(date +%s.%N) >> {log}; sleep 0.3; "
                  f"echo e $@ $$(date +%s.%N) >> {log}\n")

    def make_step(name):
        return Step(name, lambda s: run_command(["make", "-j4", "-s", "-f", mk], log=s.log),
                    inputs={"n": name})

    def python_step(s):
        with open(log, "a") as f:
            f.write(f"s py {time.time()}\n")
        time.sleep(0.3)
        with open(log, "a") as f:
            f.write(f"e py {time.time()}\n")

    plans = []
    for board in ("one", "two"):
        p = Plan(tmp_path / board, jobs=4, jobserver=jobserver)
        p.add(make_step("a.make"), make_step("b.make"), Step("c.py", python_step))
        plans.append(p)
    threads = [threading.Thread(target=p.run) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in plans:
        assert {r["action"] for r in p.records} == {"ran"}, p.records
    return log


def test_shared_jobserver_limits_steps_and_make_jobs_together(tmp_path):
    with JobServer(2) as js:
        log = _sleepy_plans(tmp_path / "shared", js)
        assert max_overlap(log) == 2            # the limit, and reached (the makes do share it)
        left = os.read(js.read_fd, 64)
        assert left == b"++"                     # every slot came back
    for p in (tmp_path / "shared").glob("*/logs/*.log"):
        assert "forced in submake" not in p.read_text()
    # Negative control: the same plans without the jobserver oversubscribe.
    assert max_overlap(_sleepy_plans(tmp_path / "control", None)) >= 4


def test_a_waiting_step_notices_the_group_interrupt(tmp_path):
    with JobServer(1) as js:
        token = js.acquire(lambda: False)        # the only slot is taken
        stopper = threading.Timer(0.3, js.interrupt)
        stopper.start()
        started = time.monotonic()
        assert js.acquire(lambda: js.cancelled) is None
        waited = time.monotonic() - started      # the interrupt comes at 0.3 s
        assert waited < 10, f"host bound: the waiting step noticed the interrupt after {waited:.1f} s"
        js.release(token)


# ---- slow: real builds of the two cheap boards ------------------------------------------------------

def _probe_dir(tmp: Path, log: Path) -> Path:
    """Wrappers named like the two cross compilers, first on PATH, logging each run's start/end."""
    probe = tmp / "probe-bin"
    probe.mkdir()
    for name in ("aarch64-linux-gnu-gcc", "arm-none-eabi-gcc"):
        real = shutil.which(name)
        (probe / name).write_text(f"#!/bin/sh\necho s $$ $(date +%s.%N) >> {log}\n"
                                  f'{real} "$@"; rc=$?\necho e $$ $(date +%s.%N) >> {log}\n'
                                  "exit $rc\n")
        (probe / name).chmod(0o755)
    return probe


def artifacts(outdir: Path) -> dict[str, str]:
    manifest = json.loads((outdir / "manifest.json").read_text())
    for a in manifest["artifacts"]:           # the files are what the manifest says
        assert util.sha256_file(outdir / a["path"]) == a["sha256"], a
    return {a["path"]: a["sha256"] for a in manifest["artifacts"]}


@pytest.fixture(scope="session")
def serial_builds(tmp_path_factory):
    return {b: builds.build_board(b, tmp_path_factory, [NOBOOT], tag="noboot") for b in BOARDS}


@pytest.fixture(scope="session")
def parallel_build(tmp_path_factory):
    """Both boards at once, as a user runs it (the default configuration, ccache included)."""
    tmp = tmp_path_factory.mktemp("parallel")
    p = invoke("build", "--no-store", "--board", ",".join(BOARDS), "-j", "2", "--output", tmp / "out",
               "--fragment", NOBOOT)
    return p, tmp / "out"


@pytest.mark.slow
def test_parallel_images_equal_serial_ones(parallel_build, serial_builds):
    p, out = parallel_build
    assert p.returncode == 0, p.stderr
    for board in BOARDS:
        assert artifacts(out / board) == artifacts(serial_builds[board].outdir), board
        assert (out / board / "logs" / "steps.jsonl").is_file()      # each board's own logs


@pytest.mark.slow
def test_parallel_progress_and_summary_name_each_board(parallel_build):
    p, out = parallel_build
    lines = p.stdout.splitlines()
    for board in BOARDS:
        mine = [l for l in lines if l.startswith(f"{board:<12} | ")]
        assert any("built   " in l for l in mine), board             # its steps, prefixed
        assert any(l.startswith(f"  {board:<12}  ok      ") for l in lines), lines
    assert "2 of 2 boards built" in p.stdout
    # both boards were running at the same time: mps2's build line comes before qemu's last step
    first_done = min(i for i, l in enumerate(lines) if "step(s) ran," in l and " | " in l)
    assert any("built" in l for l in lines[first_done + 1:] if " | " in l)


@pytest.mark.slow
def test_parallel_compilers_never_exceed_the_job_limit(tmp_path):
    log = tmp_path / "compilers.log"
    log.touch()
    env = {**os.environ, "PATH": f"{_probe_dir(tmp_path, log)}:{os.environ['PATH']}",
           "CCACHE_DISABLE": "1"}       # a cache hit runs no compiler for the probe to see
    p = invoke("build", "--no-store", "--board", ",".join(BOARDS), "-j", "2", "--output", tmp_path / "out",
               "--fragment", NOBOOT, env=env)
    assert p.returncode == 0, p.stderr
    runs = log.read_text().count("\ns ") + log.read_text().startswith("s ")
    assert runs > 20                              # the probe did see the compiles (both boards)
    assert max_overlap(log) <= 2


@pytest.mark.slow
def test_a_broken_board_fails_alone_and_is_named(tmp_path, serial_builds):
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    gcc = broken / "arm-none-eabi-gcc"
    # Answers --version as the real one (stamps need it), fails every compile.
    gcc.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exec {shutil.which("arm-none-eabi-gcc")} '
                   '--version\necho "deliberately broken compiler (test_parallel_boards)" >&2\n'
                   "exit 1\n")
    gcc.chmod(0o755)
    # First on PATH: only the MCU board compiles with arm-none-eabi-gcc.
    env = {**os.environ, "PATH": f"{broken}:{os.environ['PATH']}"}
    out = tmp_path / "out"
    p = invoke("build", "--no-store", "--board", ",".join(BOARDS), "-j", "2", "--output", out,
               "--fragment", NOBOOT, env=env)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.splitlines()[-1] == "error: 1 of 2 boards failed: mps2-an385 (step mcu.build)"
    assert "Traceback" not in p.stderr + p.stdout
    assert "mps2-an385 | deliberately broken compiler (test_parallel_boards)" in p.stderr.splitlines()
    summary = p.stdout.splitlines()
    assert any(l.startswith("  mps2-an385    FAILED  step mcu.build failed: ") for l in summary)
    assert any(l.startswith("  qemu-aarch64  ok      ") for l in summary)
    assert "1 of 2 boards built" in p.stdout
    # the failure is in the broken board's own log; the other board's images are complete
    assert "deliberately broken compiler" in (out / "mps2-an385" / "logs" / "mcu.log").read_text()
    assert not (out / "mps2-an385" / "images" / "mcu.elf").exists()
    assert artifacts(out / "qemu-aarch64") == artifacts(serial_builds["qemu-aarch64"].outdir)


@pytest.mark.slow
def test_ctrl_c_stops_every_board(tmp_path):
    out = tmp_path / "out"
    tfa_log = out / "qemu-aarch64" / "logs" / "tfa.log"
    proc = subprocess.Popen([sys.executable, "-m", "invoke", "build", "--no-store", "--board", ",".join(BOARDS),
                             "-j", "2", "--output", str(out), "--fragment", str(NOBOOT)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while (tfa_log.read_text().count("\n  CC ") if tfa_log.is_file() else 0) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "TF-A compile never started"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)            # a terminal's Ctrl-C
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (stdout, stderr)
    assert stderr.splitlines() == ["interrupted"], stderr
    records = {json.loads(l)["step"]: json.loads(l)["action"]
               for l in (out / "qemu-aarch64" / "logs" / "steps.jsonl").read_text().splitlines()}
    assert records["tfa.build"] == "interrupted", records
    assert not (out / "qemu-aarch64" / "stamps" / "tfa.build.stamp").exists()
    assert processes_mentioning(str(out)) == []
    assert list(out.rglob("*.tmp")) == []


# ---- invoke ci's summary: builds and cache hit rate per board ------------------------------------

def test_ci_summary_shows_each_boards_hit_rate_or_na(tmp_path, monkeypatch):
    import seedfw
    from seedfw.cli import ci
    from seedfw.build.multi import BoardOutcome

    (tmp_path / "a" / "images").mkdir(parents=True)
    util.write_json(tmp_path / "a" / "images" / "ccache.json",
                    {"hits": 29, "misses": 208, "hit_rate": 0.1224})
    outcomes = [BoardOutcome("a", "ok"), BoardOutcome("b", "ok"),
                BoardOutcome("c", "failed", error="x", step="mcu.build")]
    lines = ci._builds_table(outcomes, tmp_path).splitlines()
    assert "| a | ok | 12.2 % | 29 / 208 |" in lines
    assert "| b | ok | n/a | – |" in lines                      # no ccache.json: nothing compiled
    assert "| c | **FAILED** (step mcu.build) | n/a | – |" in lines
    # Negative control: without seedfw.cache.ccache every rate is n/a, nothing fails.
    monkeypatch.delattr(seedfw.cache, "ccache", raising=False)
    monkeypatch.setitem(sys.modules, "seedfw.cache.ccache", None)
    assert "| a | ok | n/a | – |" in ci._builds_table(outcomes, tmp_path).splitlines()
