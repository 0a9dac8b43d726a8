"""Buildroot's compiles through the host's ccache (seedfw.buildroot.make.ccache_environment,
the relocated toolchain's wrappers in seedfw.buildroot.toolchain).

Fast: the real relocated gcc wrapper with and without SEEDFW_CCACHE (a stats-log line per
compile only with it: the negative control), and Buildroot's make variables.
Slow: rk3588's cold second build (the reproducibility pair's, in a fresh output dir): its
Buildroot compiles are cache hits (images/ccache.json, part "buildroot", counted by ccache's
stats log) and its rootfs.cpio is byte-identical.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import types
from pathlib import Path

import pytest

import builds
from seedfw.cache import ccache
from seedfw.buildroot import make, toolchain


def _ctx(tmp_path: Path, enabled=True):
    return types.SimpleNamespace(outdir=tmp_path / "out", values={
        "CCACHE": enabled, "CCACHE_DIR": str(tmp_path / "ccache")})


def test_relocated_gcc_goes_through_ccache_only_when_asked(tmp_path):
    gcc = toolchain.prepare(lambda m: None) / "bin" / f"{toolchain.TUPLE}-gcc"
    src = tmp_path / "x.c"
    src.write_text("int f(int x) { return x * 3; }\n")
    env = dict(os.environ, **make.ccache_environment(_ctx(tmp_path), tmp_path))
    log = Path(env["CCACHE_STATSLOG"])
    assert log == tmp_path / "out" / "build" / "ccache" / "stats-buildroot.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    def compile_(e, name):
        subprocess.run([str(gcc), "-O2", "-c", str(src), "-o", str(tmp_path / name)], env=e,
                       check=True)
        return (tmp_path / name).read_bytes()

    # Negative control: without SEEDFW_CCACHE the wrapper runs the compiler directly.
    plain = compile_({k: v for k, v in env.items() if k != "SEEDFW_CCACHE"}, "plain.o")
    assert not log.exists()
    cold, warm = compile_(env, "cold.o"), compile_(env, "warm.o")
    assert ccache.parse_stats_log(log.read_text())["cache_miss"] == 1
    assert ccache.parse_stats_log(log.read_text())["direct_cache_hit"] == 1
    assert plain == cold == warm


def test_make_variables_for_buildroot(tmp_path):
    env = make.ccache_environment(_ctx(tmp_path), tmp_path / "out" / "build" / "buildroot")
    masq = ccache.masquerade_dir(())
    assert env["HOSTCC"] == str(masq / "gcc") and env["HOSTCXX"] == str(masq / "g++")
    assert os.path.realpath(env["HOSTCC"]) == os.path.realpath(shutil.which("ccache"))
    assert env["HOSTCC_NOCCACHE"] == shutil.which("gcc")
    assert env["CCACHE_BASEDIR"] == str(tmp_path / "out" / "build" / "buildroot")
    assert env["CCACHE_DIR"] == str(tmp_path / "ccache") and env["CCACHE_NOHASHDIR"] == "1"
    assert env["SEEDFW_CCACHE"] == shutil.which("ccache") and "PATH" not in env
    # CONFIG_CCACHE=n: ccache explicitly off, nothing that would route compiles through it.
    assert make.ccache_environment(_ctx(tmp_path, False), tmp_path) == {"CCACHE_DISABLE": "1"}


def test_buildroot_does_not_unexport_the_ccache_variables():
    """Buildroot's Makefile unexports what would change its builds (CC, CFLAGS...); none of the
    variables ccache_environment passes may be among them, and HOSTCC must be taken from the
    environment (`ifndef HOSTCC`)."""
    from seedfw.buildroot import tree
    text = (tree.ensure() / "Makefile").read_text()
    unexported = {line.split()[1] for line in text.splitlines() if line.startswith("unexport ")}
    assert "CC" in unexported                                  # the list is where we look
    for var in ("CCACHE_DIR", "CCACHE_BASEDIR", "CCACHE_NOHASHDIR", "CCACHE_COMPILERCHECK",
                "CCACHE_STATSLOG", "CCACHE_REMOTE_STORAGE", "SEEDFW_CCACHE", "HOSTCC",
                "HOSTCXX"):
        assert var not in unexported
    assert "ifndef HOSTCC\nHOSTCC := gcc\n" in text


# ---- slow: a second output dir of the same OS configuration ------------------------------------

def _step(result, name="buildroot.build") -> dict:
    return next(r for r in result.records if r["step"] == name)


@pytest.mark.slow
def test_second_output_dir_hits_the_cache_and_gives_the_same_rootfs(rk3588_build,
                                                                     tmp_path_factory):
    """rk3588's reproducibility pair's second half (tests/test_reproducible.py: a fresh output
    dir, nothing from the artifact store) compiles Buildroot again: through the machine's ccache,
    which rk3588's OS went through before (the README's first command, or the session's first
    build), its compiles are hits, and its rootfs.cpio is the first build's byte for byte. One
    Buildroot build instead of a pair of its own (issue 27's budget)."""
    again = builds.build_board("rk3588", tmp_path_factory, tag="second")
    assert _step(again)["action"] == "ran"
    b = ccache.summary(again.outdir)["parts"]["buildroot"]
    print(f"\nbuildroot.build: {_step(again)['seconds']:.0f} s ({b}) in a fresh output dir")
    assert b["hits"] + b["misses"] > 500
    assert b["hits"] >= 0.9 * (b["hits"] + b["misses"]), b
    # BR2_REPRODUCIBLE (host-cpio from its override): the other output dir gives the same
    # rootfs.cpio, byte for byte (ccache returns what the compiler wrote, so a warm cache
    # cannot hide a difference in what is compiled, only the time it takes).
    first_cpio = (rk3588_build.outdir / "images" / "rootfs.cpio").read_bytes()
    assert (again.outdir / "images" / "rootfs.cpio").read_bytes() == first_cpio
    # Negative control: the archive does carry per-file times, all at SOURCE_DATE_EPOCH.
    from seedfw import util
    assert int(first_cpio[46:54], 16) == util.source_date_epoch()   # c_mtime, first entry
