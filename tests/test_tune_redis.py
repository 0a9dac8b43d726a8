"""Scale-out: a real redis-server started here on a free loopback port, and two `invoke tune
--worker` processes sharing one study through Optuna's Redis journal backend. Each trial must
run exactly once: disjoint trial numbers per worker, one worker recorded per trial."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from cli import ROOT
from tune_helpers import output_with_base

REDIS = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    if REDIS is None:
        pytest.skip("redis-server is not installed (invoke setup installs it; host.py NEEDS)")
    port = free_port()
    proc = subprocess.Popen([REDIS, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 60            # an event (it answers), generously bounded
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.terminate()
                pytest.fail(f"redis-server did not answer on port {port} within 60 s (host "
                            "deadline)" if proc.poll() is None else "redis-server exited at start")
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_two_workers_share_one_study(redis_url, tmp_path_factory, tmp_path):
    out = output_with_base("qemu-aarch64", tmp_path_factory, tmp_path / "out")
    args = [sys.executable, "-m", "invoke", "tune", "--board", "qemu-aarch64", "--output", str(out),
            "--storage", redis_url, "--worker", "--trials", "6", "--objectives", "storage,boot-decode",
            "--space", "COMPRESS_HC_LEVEL,LZ4_DECODER_CHOICE"]
    workers = [subprocess.Popen(args + ["--seed", str(i)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    outs = [w.communicate(timeout=900) for w in workers]
    for w, (so, se) in zip(workers, outs):
        assert w.returncode == 0, so + se
    ran = [{int(n) for n in re.findall(r"^trial (\d+)/6 \(#\d+\):", so, re.M)} for so, _ in outs]
    assert ran[0].isdisjoint(ran[1]), ran
    assert ran[0] | ran[1] == set(range(1, 7))
    assert ran[0] and ran[1], "both workers took part"

    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalRedisBackend
    st = optuna.load_study(study_name="seedfw-qemu-aarch64-storage-boot-decode",
                           storage=JournalStorage(JournalRedisBackend(redis_url)))
    trials = st.get_trials()
    assert sorted(t.number for t in trials) == list(range(6))
    assert all(t.state.name == "COMPLETE" for t in trials)
    workers_seen = {t.user_attrs["worker"] for t in trials}
    assert len(workers_seen) == 2
    assert len({(t.user_attrs["worker"], t.number) for t in trials}) == 6
    # each trial built once, in its own directory, unless it had the configuration of an
    # earlier one (then it says which and was not built)
    built = sorted(int(p.name) for p in (out / "tune" / "trials").iterdir())
    assert built == sorted(t.number for t in trials if "same_as" not in t.user_attrs)
    assert all(t.user_attrs["same_as"] < t.number for t in trials if "same_as" in t.user_attrs)
