"""Buildroot's compiles through the host's ccache (seedfw.buildroot.make.ccache_environment,
the relocated toolchain's wrappers in seedfw.buildroot.toolchain).

Fast: the real relocated gcc wrapper with and without SEEDFW_CCACHE (a stats-log line per
compile only with it: the negative control), and Buildroot's make variables.
Slow: after the session's Buildroot build (`br_build`, tests/conftest.py), the same configuration
into a fresh output dir: its Buildroot compiles are cache hits (images/ccache.json, part
"buildroot", counted by ccache's stats log) and its rootfs.cpio is byte-identical.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from builds import BUILDROOT_FRAGMENT
from seedfw import build as build_mod
from seedfw import ccache
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


# ---- slow: a second output dir of the session's Buildroot configuration ------------------------

@pytest.fixture(scope="module")
def br_build_again(br_build, tmp_path_factory):
    other = tmp_path_factory.mktemp("build-qemu-aarch64-buildroot-ccache")
    return build_mod.build("qemu-aarch64", other, [BUILDROOT_FRAGMENT], store=False)


def _step(result, name="buildroot.build") -> dict:
    return next(r for r in result.records if r["step"] == name)


@pytest.mark.slow
def test_second_output_dir_hits_the_cache_and_gives_the_same_rootfs(br_build, br_build_again):
    first, _ = br_build
    again = br_build_again
    assert _step(first)["action"] == "ran" and _step(again)["action"] == "ran"
    a = ccache.summary(first.outdir)["parts"]["buildroot"]
    b = ccache.summary(again.outdir)["parts"]["buildroot"]
    print(f"\nbuildroot.build: {_step(first)['seconds']:.0f} s ({a}) then "
          f"{_step(again)['seconds']:.0f} s ({b}) in a fresh output dir")
    # The same configuration makes the same compiles; the second dir finds them in the cache.
    assert b["hits"] + b["misses"] == a["hits"] + a["misses"] > 500
    assert b["hits"] > 100 and b["hits"] >= 0.9 * (b["hits"] + b["misses"]), b
    # BR2_REPRODUCIBLE (host-cpio from its override): the other output dir gives the same
    # rootfs.cpio, byte for byte (ccache returns what the compiler wrote, so a warm cache
    # cannot hide a difference in what is compiled, only the time it takes).
    first_cpio = (first.outdir / "images" / "rootfs.cpio").read_bytes()
    assert (again.outdir / "images" / "rootfs.cpio").read_bytes() == first_cpio
    # Negative control: the archive does carry per-file times, all at SOURCE_DATE_EPOCH.
    from seedfw import util
    assert int(first_cpio[46:54], 16) == util.source_date_epoch()   # c_mtime, first entry
