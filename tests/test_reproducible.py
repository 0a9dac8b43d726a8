"""Reproducible outputs: two clean builds of each board into two different output directories give
bit-identical images, packages, FITs, manifests and reports (Yocto's standard: N identical,
0 different). Timestamps come from SOURCE_DATE_EPOCH; no absolute path may reach an artifact."""

import hashlib
import os
from pathlib import Path

import pytest

import builds
from seedfw import boards
from seedfw.report import build_report, write_report

# What a build leaves for users, CI and boards; logs and stamps record the machine's work and
# are not artifacts.
ARTIFACTS = ("images", "report", "manifest.json", "compression.json", "config.json",
             "include/autoconf.h", ".config")


# The build's compiler-cache figures (images/ccache.json, the report's "cache" section) record,
# like logs, how the build ran: the second build hits what the first compiled, by design.
NOT_ARTIFACTS = ("images/ccache.json",)


def artifact_hashes(outdir: Path) -> dict[str, str]:
    out = {}
    for name in ARTIFACTS:
        path = outdir / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else \
            ([path] if path.is_file() else [])
        for f in files:
            if str(f.relative_to(outdir)) not in NOT_ARTIFACTS:
                out[str(f.relative_to(outdir))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


# One pair per kind of boot chain. ROCK 5A is board data over rk3588's parts (the same TF-A,
# U-Boot, Buildroot, kernel and image code; its DT, U-Boot defconfig and issue string differ), and
# its pair would compile Buildroot cold once more (about 4 minutes of the suite's 20): it runs
# with SEEDFW_TEST_ALL_PAIRS=1. tests/test_os_rock5a.py builds and boots it in every run.
PAIRS = [b for b in boards.names()
         if b != "rock5a" or os.environ.get("SEEDFW_TEST_ALL_PAIRS") == "1"]


@pytest.mark.slow
@pytest.mark.parametrize("board", PAIRS)
def test_two_clean_builds_are_bit_identical(board, tmp_path_factory):
    first = builds.build_board(board, tmp_path_factory)
    second = builds.build_board(board, tmp_path_factory, tag="second")
    assert first.outdir != second.outdir
    for result in (first, second):
        report = build_report(result.outdir, board=board)
        report.pop("cache", None)                # see NOT_ARTIFACTS
        # counted runs (`invoke run --counters`) other tests made in the shared build: a
        # measurement of a run, like a log, not something the build made
        report["bandwidth"].pop("emulated", None)
        write_report(report, result.outdir)
    a, b = artifact_hashes(first.outdir), artifact_hashes(second.outdir)
    assert len(a) >= 8 and any(k.startswith("images/") for k in a)
    assert set(a) == set(b)
    different = sorted(k for k in a if a[k] != b[k])
    print(f"{board}: {len(a) - len(different)} identical, {len(different)} different")
    assert different == []
    for result in (first, second):
        for rel in a:
            data = (result.outdir / rel).read_bytes()
            assert str(result.outdir).encode() not in data, f"{rel} holds its output path"
