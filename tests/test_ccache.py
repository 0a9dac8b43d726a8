"""ccache for every C compile (seedfw.cache.ccache), with a real redis-server as the team cache.

Slow proof (one module-scoped pair of builds of qemu-aarch64's firmware without U-Boot: TF-A,
the payload and the QEMU plugin, about 240 compiles in 25 s; U-Boot would add hundreds more compiles
and two minutes per build and prove nothing the 240 do not): output dir A with an empty local
cache and an empty remote, then a fresh output dir B with a *different*, empty seedfw cache dir
— B's compiles are remote hits, and B's images equal A's byte for byte. Then the same build
again, C, whose redis-server is killed while it compiles: it finishes, warns once, and its
images are still A's. Fast: the remote syntax, the doctor's feature check, a dead remote (one
warning, local-only build of mps2-an385) with a live one as the negative control.
The bad-input corpus has the malformed-URL cases: tests/bad_inputs/ccache-*.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from cli import invoke
from seedfw.cache import ccache
from seedfw import paths
from seedfw.errors import SeedfwError

REDIS = shutil.which("redis-server")
WARNING = "ccache: warning:"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """A real redis-server on a free loopback port, nothing persisted."""

    def __init__(self, workdir: Path):
        if REDIS is None:
            pytest.skip("redis-server is not installed (invoke setup installs it; host.py NEEDS)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([REDIS, "--bind", "127.0.0.1", "--port", str(self.port),
                                      "--save", "", "--appendonly", "no", "--dir", str(workdir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60        # an event (it answers), generously bounded
        while time.monotonic() < deadline and self.proc.poll() is None:
            if ccache.probe(self.url) is None:
                return
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"redis-server did not answer on {self.url} within 60 s (host deadline)"
                    if self.proc.poll() is None else "redis-server exited at start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def build_env(cache: Path) -> dict:
    """The build's own seedfw cache dir (empty U-Boot cache and local ccache), the shared
    download cache (nothing is fetched twice), the machine's rknn venv and compiled models
    (what this test measures is the C compiler cache)."""
    from seedfw.models.rknn import compile as rknn_compile, venv
    return dict(os.environ, SEEDFW_CACHE_DIR=str(cache), SEEDFW_DL_DIR=str(paths.download_dir()),
                SEEDFW_RKNN_VENV=str(venv.venv_dir()), SEEDFW_MODEL_CACHE=str(rknn_compile.cache_root()))


def remote_fragment(tmp: Path, url: str) -> Path:
    frag = tmp / f"remote-{url.rsplit(':', 1)[1]}.fragment"
    frag.write_text(f'CONFIG_CCACHE=y\nCONFIG_CCACHE_REMOTE_STORAGE="{url}"\n')
    return frag


def image_bytes(out: Path) -> dict[str, bytes]:
    """Every image file of the build (ccache.json, the build's cache figures, is not an image)."""
    images = out / "images"
    return {str(p.relative_to(images)): p.read_bytes() for p in sorted(images.rglob("*"))
            if p.is_file() and p.name != ccache.STATS_FILE}


def warnings(proc) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if WARNING in line]


# ---- fast ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("redis//127.0.0.1:6390", "'redis//127.0.0.1:6390' is not a ccache remote storage URL "
                              "(scheme one of redis://, redis+unix://, http://, file://)"),
    ("memcached://h:1", "'memcached://h:1' is not a ccache remote storage URL (scheme one of "
                        "redis://, redis+unix://, http://, file://)"),
    ("redis://:6390", "'redis://:6390': expected redis://HOST[:PORT]"),
    ("redis://h:port", "'redis://h:port': expected redis://HOST[:PORT]"),
    ("file://relative/dir", "'file://relative/dir': expected file:///ABSOLUTE/PATH"),
    ("redis://h:1|read only", None),      # split at the space: "only" is no URL
])
def test_malformed_remote_is_one_error_naming_the_field(text, message):
    with pytest.raises(SeedfwError) as err:
        ccache.settings({"CCACHE": True, "CCACHE_REMOTE_STORAGE": text}, "out/.config")
    assert err.value.file == "out/.config" and err.value.field == "CONFIG_CCACHE_REMOTE_STORAGE"
    if message:
        assert err.value.message == message


def test_well_formed_remotes_pass():
    s = ccache.settings({"CCACHE": True, "CCACHE_REMOTE_STORAGE":
                         "redis://127.0.0.1:6390 redis://u:p@cache.lan/2|connect-timeout=50 "
                         "http://cache.lan:8080/ccache file:///srv/cc redis+unix:///run/r.sock "
                         "redis+unix:/run/r.sock"})
    assert len(s.remote) == 6 and s.enabled


def test_cache_dir_defaults_under_the_seedfw_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDFW_CACHE_DIR", str(tmp_path))
    assert ccache.settings({"CCACHE": True}).dir == tmp_path / "ccache"
    assert ccache.settings({"CCACHE": True, "CCACHE_DIR": str(tmp_path / "x")}).dir == \
        tmp_path / "x"


def test_this_ccache_has_the_redis_backend():
    text = subprocess.run(["ccache", "--version"], capture_output=True, text=True).stdout
    assert ccache.has_remote_feature(text, "redis://127.0.0.1:6390")
    # Negative control: a ccache built without it (the "Features:" line of such a build).
    assert not ccache.has_remote_feature("ccache version 4.7.5\nFeatures: file-storage "
                                         "http-storage\n", "redis://127.0.0.1:6390")


def test_stats_log_counts_per_compile():
    log = "# a.c\ncache_miss\nremote_storage_miss\n# b.c\ndirect_cache_hit\nremote_storage_hit\n"
    assert ccache.parse_stats_log(log) == {"cache_miss": 1, "remote_storage_miss": 1,
                                           "direct_cache_hit": 1, "remote_storage_hit": 1}


def test_probe_of_a_closed_port_says_why():
    assert ccache.probe(f"redis://127.0.0.1:{free_port()}") == "Connection refused"


def test_doctor_checks_a_configured_remote(tmp_path):
    server = Redis(tmp_path)
    try:
        cfg = tmp_path / ".config"
        dead = f"redis://127.0.0.1:{free_port()}"
        cfg.write_text(f'CONFIG_CCACHE_REMOTE_STORAGE="{server.url} {dead}"\n')
        p = invoke("doctor", "--quiet", "--config", cfg)
        assert p.returncode == 0, p.stderr
        assert f"ok: ccache remote {server.url} ({cfg}): back-end compiled in, answers" in p.stdout
        assert (f"warning: ccache remote {dead} ({cfg}) does not answer (Connection refused): "
                "builds will use the local cache only") in p.stdout
    finally:
        server.stop()


@pytest.mark.slow      # real builds of mps2-an385: integration, not unit
def test_dead_remote_warns_once_and_builds_locally(tmp_path):
    """mps2-an385 (one small C build): a remote nobody listens on gives exactly one warning, a
    successful local-only build and the reason in ccache.json; a live remote (negative
    control) gives no warning and remote traffic."""
    dead = f"redis://127.0.0.1:{free_port()}"
    p = invoke("build", "--no-store", "--board", "mps2-an385", "--output", tmp_path / "dead", "--fragment",
               remote_fragment(tmp_path, dead), env=build_env(tmp_path / "cache-dead"))
    assert p.returncode == 0, p.stderr
    assert warnings(p) == [f"  {WARNING} remote storage {dead} does not answer (Connection "
                           "refused); building with the local cache only"]
    doc = ccache.summary(tmp_path / "dead")
    assert doc["remote_unreachable"] == {dead: "Connection refused"}
    assert doc["misses"] > 0 and doc["remote_errors"] == 0 and doc["remote_misses"] == 0
    report = json.loads((tmp_path / "dead" / "report" / "report.json").read_text())["cache"]
    assert report["warnings"] == [f"remote {dead} did not answer at build start (Connection "
                                  "refused): local cache only"]
    assert "time_saved" not in report          # no bench result given (--ccache-bench)
    assert "Time saved: no bench/cache_speed.py result given (--ccache-bench)." in \
        (tmp_path / "dead" / "report" / "report.md").read_text()
    # A no-op rebuild compiles nothing, so it asks no server: no wait, no warning, and the
    # figures stay those of the build that made the images.
    again = invoke("build", "--no-store", "--board", "mps2-an385", "--output", tmp_path / "dead", "--fragment",
                   remote_fragment(tmp_path, dead), env=build_env(tmp_path / "cache-dead"))
    assert again.returncode == 0, again.stderr
    assert warnings(again) == [] and "0 step(s) ran" in again.stdout
    assert ccache.summary(tmp_path / "dead") == doc

    server = Redis(tmp_path)
    try:
        p = invoke("build", "--no-store", "--board", "mps2-an385", "--output", tmp_path / "live", "--fragment",
                   remote_fragment(tmp_path, server.url), env=build_env(tmp_path / "cache-live"))
        assert p.returncode == 0, p.stderr
        assert warnings(p) == []
        doc = ccache.summary(tmp_path / "live")
        assert doc["remote_misses"] == doc["misses"] > 0 and doc["remote_unreachable"] == {}
    finally:
        server.stop()


# ---- slow: two real builds of qemu-aarch64 through one redis-server ---------------------------

NOBOOT = paths.ROOT / "tests" / "data" / "no-uboot.fragment"
TFA_IMAGES = ("bl1.bin", "bl2.bin", "bl31.bin")


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    server = Redis(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote_builds(remote, tmp_path_factory):
    """A, then B: fresh output dirs, each with its own empty seedfw cache (local ccache),
    one remote; the firmware without U-Boot."""
    tmp = tmp_path_factory.mktemp("ccache-ab")
    frag = tmp / "ab.fragment"
    frag.write_text(remote_fragment(tmp, remote.url).read_text() + NOBOOT.read_text())
    procs = {}
    for name in ("a", "b"):
        procs[name] = invoke("build", "--no-store", "--board", "qemu-aarch64", "--output", tmp / name,
                             "--fragment", frag, env=build_env(tmp / f"cache-{name}"),
                             timeout=1800)
        assert procs[name].returncode == 0, procs[name].stdout[-3000:] + procs[name].stderr
    return tmp, procs


@pytest.mark.slow
def test_second_cache_dir_gets_remote_hits_and_identical_images(remote_builds):
    tmp, procs = remote_builds
    a, b = ccache.summary(tmp / "a"), ccache.summary(tmp / "b")
    # TF-A compiled in both; U-Boot in neither (the fragment leaves it out).
    for name in ("a", "b"):
        assert "built   tfa.build" in procs[name].stdout
        assert "compiling U-Boot" not in procs[name].stdout
        assert warnings(procs[name]) == []
    # A: the cold build (negative control): nothing to hit in an empty remote (208 misses
    # of 237 compiles measured on 2026-12-03; the rest are repeats inside the build).
    assert a["remote_hits"] == 0 and a["misses"] > 150
    # B: an empty local cache, so what A had to compile B took from the remote (ccache's own
    # counters; the repeats inside the build, A's local hits, are B's local hits too).
    compiles = b["hits"] + b["misses"]
    assert compiles == a["hits"] + a["misses"]
    assert b["remote_hits"] >= 0.9 * a["misses"], b
    assert b["hit_rate"] >= 0.9
    assert image_bytes(tmp / "b") == image_bytes(tmp / "a")
    # The report carries the figures, labelled as measured from the stats log.
    report = json.loads((tmp / "b" / "report" / "report.json").read_text())
    assert report["cache"]["remote_hits"]["value"] == b["remote_hits"]
    assert report["cache"]["remote_hits"]["kind"] == "measured"
    assert "## Compiler cache (ccache)" in (tmp / "b" / "report" / "report.md").read_text()


@pytest.mark.slow
def test_killed_redis_mid_build_finishes_warns_once_same_images(remote, remote_builds):
    """Runs after the pair (module order): kills the shared server while C, the same build as
    A and B with its own empty cache, compiles; its TF-A images must be A's byte for byte."""
    tmp, _ = remote_builds
    out, log = tmp / "c", ccache.stats_log(tmp / "c")
    frag = tmp / "ab.fragment"
    proc = subprocess.Popen(
        [os.sys.executable, "-m", "invoke", "build", "--no-store", "--board", "qemu-aarch64", "--output", out,
         "--fragment", frag], cwd=paths.ROOT,
        env=build_env(tmp / "cache-c"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if log.read_text().count("\n# ") >= 100:      # well into TF-A's 237 compiles
                break
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    assert proc.poll() is None, "the build ended before the server could be killed"
    remote.kill()
    stdout, stderr = proc.communicate(timeout=1800)
    assert proc.returncode == 0, stdout[-3000:] + stderr
    lines = [line for line in (stdout + stderr).splitlines() if WARNING in line]
    assert len(lines) == 1 and f"remote storage {remote.url} failed during the build" in lines[0]
    doc = ccache.summary(out)
    assert doc["remote_errors"] > 0 and doc["remote_hits"] > 0
    a, c = image_bytes(tmp / "a"), image_bytes(out)
    assert {n: c[n] for n in TFA_IMAGES} == {n: a[n] for n in TFA_IMAGES}


@pytest.mark.slow      # real builds of mps2-an385: integration, not unit
def test_report_quotes_the_bench_result_as_measured_by_the_bench(tmp_path):
    """The time saved comes from the bench/cache_speed.py result given with --ccache-bench,
    labelled with the bench, host and date, and named by its file name only; the build's own
    counters stay labelled as the stats log's. The same result left in the seedfw cache without
    --ccache-bench is not read (the report depends on the build and its arguments only)."""
    env = build_env(tmp_path / "cache")
    p = invoke("build", "--no-store", "--board", "mps2-an385", "--output", tmp_path / "out", env=env)
    assert p.returncode == 0, p.stderr
    host = socket.gethostname()
    bench = tmp_path / "cache" / "bench" / "cache_speed" / f"{host}.json"
    bench.parent.mkdir(parents=True)
    bench.write_text(json.dumps({"host": host, "date": "2026-12-01", "cold_s": 100.0,
                                 "warm_s": 20.0, "ratio": 5.0}))
    p = invoke("report", "--output", tmp_path / "out", env=env)
    assert p.returncode == 0, p.stderr
    cache = json.loads((tmp_path / "out" / "report" / "report.json").read_text())["cache"]
    assert "time_saved" not in cache           # in the cache, not given: not read
    p = invoke("report", "--output", tmp_path / "out", "--ccache-bench", bench, env=env)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "out" / "report" / "report.json").read_text()
    cache = json.loads(text)["cache"]
    saved = cache["time_saved"]
    assert (saved["value"], saved["unit"], saved["kind"]) == (80.0, "s", "measured")
    assert saved["provenance"] == {"source": "benchmark", "synthetic": False,
                                   "label": f"bench/cache_speed.py on the host {host}, "
                                            "2026-12-01, not this build"}
    assert saved["source"] == f"--ccache-bench {host}.json" and str(tmp_path) not in text
    assert cache["hits"]["provenance"]["label"] == "ccache stats log of this build"
    md = (tmp_path / "out" / "report" / "report.md").read_text()
    assert (f"| time saved per warm-remote build | 80.0 | s | measured (bench/cache_speed.py on "
            f"the host {host}, 2026-12-01, not this build) |") in md
    assert "time saved" in (tmp_path / "out" / "report" / "report.html").read_text()
