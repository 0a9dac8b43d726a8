"""Builds that share things: the download cache, an output directory, a full disk; and paths from
the environment (made absolute at the edge; empty means unset)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seedfw import paths, sources, util
from seedfw.errors import SeedfwError
from seedfw.parts import tfa

from cli import ROOT, invoke, one_error_line


def start_invoke(*args, env=None, cwd=ROOT) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "invoke", *map(str, args)], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def lines_until(proc: subprocess.Popen, needle: str, timeout: float = 60) -> list[str]:
    """Read `proc`'s output until a line contains `needle` (fails on exit or timeout)."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if needle in line:
            return seen
    proc.kill()
    why = (f"host deadline: no line with {needle!r} within {timeout:g} s"
           if time.monotonic() >= deadline else f"the process ended without a line with {needle!r}")
    pytest.fail(f"{why}; it printed:\n" + "\n".join(seen))


def image_hashes(outdir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((outdir / "images").iterdir()) if p.is_file()}


# ---- paths from the environment ------------------------------------------------------------------

def test_relative_dl_dir_is_made_absolute_against_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEEDFW_DL_DIR", "dl")
    paths.absolute_environment()
    assert os.environ["SEEDFW_DL_DIR"] == str(tmp_path / "dl")
    monkeypatch.chdir(ROOT)                                 # later chdirs do not move it
    assert paths.download_dir() == tmp_path / "dl"


@pytest.mark.parametrize("name", ["SEEDFW_DL_DIR", "SEEDFW_MIRROR_DIR", "SEEDFW_BENCH"])
def test_empty_path_variable_means_unset(name, monkeypatch):
    monkeypatch.setenv(name, "")
    paths.absolute_environment()
    assert name not in os.environ
    assert paths.env_path(name) is None
    if name == "SEEDFW_DL_DIR":
        assert paths.download_dir() == paths.cache_dir() / "dl"
        assert paths.download_dir().is_absolute()


@pytest.mark.slow
@pytest.mark.parametrize("value", ["dl", ""])
def test_tfa_fetch_with_relative_or_empty_dl_dir(value, tmp_path, monkeypatch):
    """Wave 1: both broke the TF-A fetch, and the private apt state landed under /var/lib/apt/.apt/
    (apt resolves a relative Dir::State::Lists against Dir::State) and in the current directory."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, SEEDFW_DL_DIR=value, HOME=str(home), XDG_CACHE_HOME="",
               SEEDFW_CACHE_DIR="")
    code = ("from seedfw import paths, sources; from seedfw.parts import tfa;"
            "paths.absolute_environment(); src = tfa.source('2.12.1');"
            "src = sources.Source(src.name, src.version, src.files, src.sites[:1], src.archive);"
            "print(sorted(p.name for p in sources.fetch(src, progress=lambda m: None).values()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    dl = work / "dl" if value else home / ".cache" / "seedfw" / "dl"
    for f in tfa.source("2.12.1").files:
        assert (dl / "arm-trusted-firmware" / f.name).stat().st_size == f.size
    assert (dl / ".apt" / "trixie" / "lists").is_dir()
    assert not Path("/var/lib/apt/.apt").exists()
    assert sorted(p.name for p in work.iterdir()) == (["dl"] if value else [])


# ---- the shared download cache -------------------------------------------------------------------

def test_cache_lock_waits_and_names_the_holder(tmp_path, monkeypatch):
    """A second process wanting the cache says for whom it waits, then proceeds."""
    dl = tmp_path / "dl"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data = b"pinned\n" * 1000
    (mirror / "pkg-1.0.tar").write_bytes(data)
    monkeypatch.setenv("SEEDFW_DL_DIR", str(dl))
    code = ("import sys; from seedfw import sources; f = sources.SourceFile('pkg-1.0.tar', %d, %r);"
            "src = sources.Source('pkg', '1.0', (f,), (sources.MirrorDirSite(%r),), f.name);"
            "print(sources.fetch(src, progress=lambda m: print(m, flush=True))['pkg-1.0.tar'])"
            % (len(data), hashlib.sha256(data).hexdigest(), str(mirror)))
    with sources.cache_lock(progress=lambda m: None):
        proc = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        first = lines_until(proc, "waiting for")
        assert first[-1] == (f"waiting for the download cache {dl}: locked by pid {os.getpid()} "
                             f"({util._command_line()})")
        time.sleep(0.3)
        assert proc.poll() is None                          # still waiting while we hold it
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert out.strip().splitlines()[-1] == str(dl / "pkg" / "pkg-1.0.tar")


def test_file_lock_is_reentrant_in_one_process(tmp_path):
    lock = tmp_path / "x.lock"
    with util.file_lock(lock, "x"):
        with util.file_lock(lock, "x"):
            assert "pid" in lock.read_text()
    assert lock.read_text() == ""                           # released: no holder named


@pytest.mark.slow
def test_two_builds_share_one_fresh_download_cache(tmp_path):
    """Wave 1: 'E: Unable to lock directory …/dl/.apt/trixie/lists/' and a failed fetch."""
    env = dict(os.environ, SEEDFW_DL_DIR=str(tmp_path / "dl"))
    a = start_invoke("build", "--no-store", "--board", "qemu-aarch64", "--output", tmp_path / "a", env=env)
    b = start_invoke("build", "--no-store", "--board", "qemu-aarch64", "--output", tmp_path / "b", env=env)
    out_a, _ = a.communicate(timeout=900)
    out_b, _ = b.communicate(timeout=900)
    assert a.returncode == 0, out_a
    assert b.returncode == 0, out_b
    assert "Unable to lock" not in out_a + out_b
    assert "waiting for the download cache" in out_a + out_b
    for out in ("a", "b"):
        assert json.loads((tmp_path / out / "manifest.json").read_text())["artifacts"]


# ---- one output directory ------------------------------------------------------------------------

def test_output_dir_lock_waits_and_names_the_holder(mps2_build, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(mps2_build.outdir, out)
    with util.file_lock(out / ".lock", "test"):
        proc = start_invoke("build", "--no-store", "--board", "mps2-an385", "--output", out)
        seen = lines_until(proc, "waiting for output directory")
        assert seen[-1].endswith(f": locked by pid {os.getpid()} ({util._command_line()})")
        time.sleep(0.3)
        assert proc.poll() is None
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, rest
    assert "0 step(s) ran" in rest


@pytest.mark.slow
def test_two_builds_into_one_output_dir_at_once(tmp_path):
    """Wave 1: one died with a traceback (elftools ELFError: Magic number does not match)."""
    out = tmp_path / "out"
    procs = [start_invoke("build", "--no-store", "--board", "qemu-aarch64", "--output", out) for _ in range(2)]
    outputs = [p.communicate(timeout=900)[0] for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text
        assert "Traceback" not in text
    waited = [t for t in outputs if "waiting for output directory" in t]
    assert len(waited) == 1, outputs
    assert "0 step(s) ran" in waited[0]                     # the second found it all up to date
    proc = invoke("inspect", "--image", out / "images" / "qemu-aarch64-boot.pkg")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- a full disk ---------------------------------------------------------------------------------

@pytest.fixture
def tmpfs(tmp_path):
    """A 3 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "seedfw-test", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(directory: Path) -> None:
    """Write until the filesystem is full."""
    # Unbuffered: a buffered file would still hold the last chunk that did not fit and raise
    # ENOSPC again from close(), outside the try.
    with open(directory / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass


@pytest.mark.slow
def test_build_into_a_full_filesystem_is_one_error_line(tmpfs, tmp_path):
    out = tmpfs / "out"
    proc = invoke("build", "--no-store", "--board", "mps2-an385", "--output", out)
    assert proc.returncode == 0, proc.stderr
    before = image_hashes(out)
    manifest = (out / "manifest.json").read_bytes()
    fill(tmpfs)
    fragment = tmp_path / "id.conf"
    fragment.write_text('CONFIG_BUILD_ID="full-disk"\n')
    proc = invoke("build", "--no-store", "--board", "mps2-an385", "--output", out, "--fragment", fragment)
    line = one_error_line(proc)
    assert line.startswith(f"error: {out}/") and line.endswith(": No space left on device"), line
    assert image_hashes(out) == before                      # previous outputs intact
    assert (out / "manifest.json").read_bytes() == manifest
    assert not list(out.rglob(".*.tmp"))                    # no half-written file left behind
