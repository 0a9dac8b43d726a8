"""Ctrl-C in the middle of a real TF-A compile (issue 8): the previous images stay valid, nothing
half-written is left, and the next build completes.

Runs `invoke build` as a user does, in a process group of its own, and sends SIGINT either to that
group, as a terminal's Ctrl-C does, or to the invoke process alone, as `kill -INT <pid>` or an IDE's
stop button does. The build's make runs in a process group of its own, so in both cases only the
build's own interrupt handling can stop it — which is what this test checks.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import builds
from cli import ROOT, invoke, processes_mentioning
from seedfw import util


def hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): util.sha256_file(p)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def steps(outdir: Path) -> dict[str, str]:
    records = [json.loads(l) for l in (outdir / "logs" / "steps.jsonl").read_text().splitlines()]
    return {r["step"]: r["action"] for r in records}


def manifest_matches_images(outdir: Path) -> dict:
    manifest = json.loads((outdir / "manifest.json").read_text())      # valid JSON
    for entry in manifest["artifacts"]:
        assert util.sha256_file(outdir / entry["path"]) == entry["sha256"], entry
    return manifest


@pytest.mark.slow
@pytest.mark.parametrize("target", ["group", "process"])
def test_sigint_during_tfa_compile_keeps_previous_images_and_next_build_completes(
        target, tmp_path_factory, tmp_path):
    first = builds.build_board("rk3588", tmp_path_factory)
    out = tmp_path / "rk3588"
    shutil.copytree(first.outdir, out, symlinks=True)     # the shared session build stays as it is
    (out / "logs" / "tfa.log").unlink()                   # so "compiling" below means *this* build
    images_before = hashes(out / "images")
    manifest_before = (out / "manifest.json").read_bytes()
    assert "bl31.elf" in images_before
    fragment = tmp_path / "log-level.fragment"
    fragment.write_text("CONFIG_TFA_LOG_LEVEL=30\n")      # rk3588 defaults to 20: TF-A must rebuild
    tfa_log = out / "logs" / "tfa.log"

    proc = subprocess.Popen([sys.executable, "-m", "invoke", "build", "--no-store", "--board", "rk3588",
                             "--output", str(out), "--fragment", str(fragment)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        # Wait until the compiler is visibly at work: TF-A's make prints "  CC  <file>" per file.
        deadline = time.monotonic() + 120
        while True:
            compiled = tfa_log.read_text().count("\n  CC ") if tfa_log.is_file() else 0
            if compiled >= 3:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "TF-A compile never started"
            time.sleep(0.02)
        assert processes_mentioning(str(out / "build" / "tf-a")), "no compiler running"
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    assert proc.returncode == 130, (stdout, stderr)
    assert stderr.splitlines() == ["interrupted"], stderr          # one line, no traceback
    recorded = steps(out)
    assert {k: recorded.pop(k, None) for k in ("tfa.fetch", "tfa.extract", "tfa.build")} == \
        {"tfa.fetch": "skipped", "tfa.extract": "skipped", "tfa.build": "interrupted"}
    # steps that do not depend on TF-A (U-Boot's cached compile, the maskrom loader) were up to date
    assert set(recorded.values()) <= {"skipped"}, recorded
    assert not (out / "stamps" / "tfa.build.stamp").exists()
    assert processes_mentioning(str(out)) == []                   # make and its compilers are gone
    assert hashes(out / "images") == images_before
    assert (out / "manifest.json").read_bytes() == manifest_before
    manifest_matches_images(out)
    # no half-written file of ours (Buildroot's own kconfig temp file in its O= dir, left by the
    # interrupted make running beside TF-A, is Buildroot's: its next make rewrites it)
    assert [p for p in out.rglob("*.tmp") if out / "build" / "buildroot" not in p.parents] == []

    again = invoke("build", "--no-store", "--board", "rk3588", "--output", out, "--fragment", fragment)
    assert again.returncode == 0, again.stderr
    assert steps(out)["tfa.build"] == "ran"
    assert (out / "stamps" / "tfa.build.stamp").exists()
    assert "LOG_LEVEL=30" in tfa_log.read_text()
    assert hashes(out / "images")["bl31.elf"] != images_before["bl31.elf"]
    manifest = manifest_matches_images(out)
    assert manifest["config_hash"] != json.loads(manifest_before)["config_hash"]
    # no half-written file of ours (Buildroot's own kconfig temp file in its O= dir, left by the
    # interrupted make running beside TF-A, is Buildroot's: its next make rewrites it)
    assert [p for p in out.rglob("*.tmp") if out / "build" / "buildroot" not in p.parents] == []
