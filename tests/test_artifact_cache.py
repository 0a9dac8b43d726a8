"""The artifact store (seedfw.cache): step outputs by stamp, restored only when every byte checks.

Fast tests drive a real Plan with small steps that write files; the slow ones (in
test_artifact_cache_build.py) drive real builds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seedfw import cache as cache_mod
from seedfw.cache import local as local_mod
from seedfw.plan import Plan, Step, source


def _store(tmp_path, cap=1 << 30) -> cache_mod.ArtifactCache:
    return cache_mod.ArtifactCache(local_mod.LocalStore(tmp_path / "store", cap))


def _plan(outdir: Path, store, payload: bytes = b"firmware bytes", calls=None) -> Plan:
    """Two steps: `a.make` writes build/a/a.bin and installs images/a.img; `b.pack` reads a.img.
    a.img is deliberately not among a.make's declared outputs (b.pack reads it as a source,
    plan.source): the store's key still covers it, by content."""
    calls = calls if calls is not None else []
    a_bin = outdir / "build" / "a" / "a.bin"
    a_img = outdir / "images" / "a.img"
    b_out = outdir / "images" / "b.pkg"

    def make(step):
        calls.append("a.make")
        with open(step.log, "a") as f:
            f.write("compiling a.bin\n")
        a_bin.parent.mkdir(parents=True, exist_ok=True)
        a_bin.write_bytes(payload)
        os.chmod(a_bin, 0o755)
        tmp = outdir / "build" / "a" / "img"
        tmp.write_bytes(payload[::-1])
        step.install({a_img: tmp})

    def pack(step):
        calls.append("b.pack")
        b_out.parent.mkdir(parents=True, exist_ok=True)
        b_out.write_bytes(b"PKG" + a_img.read_bytes())

    plan = Plan(outdir, jobs=1, cache=store)
    plan.add(Step("a.make", make, inputs={"payload": payload.hex()}, outputs=(a_bin,)),
             Step("b.pack", pack, needs=(source(a_img),), inputs={"v": 1}, outputs=(b_out,)))
    return plan


def _actions(records):
    return {r["step"]: r["action"] for r in records}


def test_a_second_output_directory_restores_every_step_byte_for_byte(tmp_path):
    store = _store(tmp_path)
    calls: list[str] = []
    first = _plan(tmp_path / "one", store, calls=calls).run()
    assert _actions(first) == {"a.make": "ran", "b.pack": "ran"}
    second = _plan(tmp_path / "two", store, calls=calls).run()
    assert _actions(second) == {"a.make": "restored", "b.pack": "restored"}
    assert calls == ["a.make", "b.pack"]                     # nothing ran the second time
    for rel in ("build/a/a.bin", "images/a.img", "images/b.pkg"):
        assert (tmp_path / "two" / rel).read_bytes() == (tmp_path / "one" / rel).read_bytes()
    assert os.stat(tmp_path / "two" / "build/a/a.bin").st_mode & 0o777 == 0o755
    assert os.stat(tmp_path / "two" / "images/a.img").st_mode & 0o777 == 0o644
    log = (tmp_path / "two" / "logs" / "a.make.log").read_text()
    assert "restored 2 file(s), 28 bytes, from the local artifact store; nothing ran here" in log
    assert "compiling a.bin\n=== end of the restored log of a.make" in log
    rec = [r for r in second if r["step"] == "a.make"][0]
    assert rec["bytes"] == 2 * len(b"firmware bytes") and rec["source"] == "local"
    # the restored stamps are those a run writes: a third build there skips everything
    assert _actions(_plan(tmp_path / "two", store).run()) == {"a.make": "skipped",
                                                              "b.pack": "skipped"}


def test_a_changed_input_misses_and_the_step_runs(tmp_path):
    store = _store(tmp_path)
    _plan(tmp_path / "one", store).run()
    calls: list[str] = []
    got = _plan(tmp_path / "two", store, payload=b"other bytes", calls=calls).run()
    assert _actions(got) == {"a.make": "ran", "b.pack": "ran"} and calls == ["a.make", "b.pack"]
    assert (tmp_path / "two/images/b.pkg").read_bytes() == b"PKG" + b"other bytes"[::-1]


def test_a_corrupt_object_is_detected_deleted_and_rebuilt(tmp_path):
    store = _store(tmp_path)
    _plan(tmp_path / "one", store).run()
    sha = local_mod.hashlib_sha256(b"firmware bytes")
    blob = store.local.blob_path(sha)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"firmware bytez")                  # same size, one byte off
    calls: list[str] = []
    got = _plan(tmp_path / "two", store, calls=calls).run()
    assert _actions(got)["a.make"] == "ran" and "a.make" in calls
    assert (tmp_path / "two/build/a/a.bin").read_bytes() == b"firmware bytes"
    assert any("corrupt" in n for n in store.notes), store.notes
    # the run stored a good copy again: a third directory restores it
    assert _actions(_plan(tmp_path / "three", store).run())["a.make"] == "restored"
    assert blob.read_bytes() == b"firmware bytes"


def test_an_interrupted_restore_leaves_nothing_that_looks_complete(tmp_path, monkeypatch):
    store = _store(tmp_path)
    _plan(tmp_path / "one", store).run()
    real = local_mod.copy_verified
    seen = []

    def copy_then_stop(src, dst, sha, mode=0o644):
        seen.append(dst)
        if len(seen) == 2:                      # the second file of a.make's record
            raise KeyboardInterrupt
        return real(src, dst, sha, mode)

    monkeypatch.setattr(cache_mod, "copy_verified", copy_then_stop)
    out = tmp_path / "two"
    with pytest.raises(KeyboardInterrupt):
        _plan(out, store).run()
    assert not (out / "build/a/a.bin").exists() and not (out / "images/a.img").exists()
    assert not (out / "stamps" / "a.make.stamp").exists()
    assert [p for p in out.rglob("*") if p.is_file() and p.suffix == ".tmp"] == []
    monkeypatch.setattr(cache_mod, "copy_verified", real)
    assert _actions(_plan(out, store).run()) == {"a.make": "restored", "b.pack": "restored"}


def test_a_step_that_opts_out_or_writes_outside_the_output_directory_is_never_stored(tmp_path):
    store = _store(tmp_path)
    outside = tmp_path / "elsewhere" / "dl.tar"

    def fetch(step):
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_bytes(b"x")

    def own(step):
        (tmp_path / "o" / "images").mkdir(parents=True, exist_ok=True)
        (tmp_path / "o" / "images" / "named.json").write_text('{"built_in": "/abs"}')

    for out in ("o", "p"):
        plan = Plan(tmp_path / out, jobs=1, cache=store)
        plan.add(Step("x.fetch", fetch, outputs=(outside,)),
                 Step("x.own", own, outputs=(tmp_path / "o" / "images" / "named.json",),
                      cache=False))
        assert {r["action"] for r in plan.run()} <= {"ran", "skipped"}
    assert not (store.local.root / "ac").exists() or not list((store.local.root / "ac").rglob("*.json"))


def test_records_that_point_outside_the_output_directory_are_refused(tmp_path):
    store = _store(tmp_path)
    _plan(tmp_path / "one", store).run()
    rec_path = next((store.local.root / "ac").rglob("*.json"))
    rec = json.loads(rec_path.read_text())
    rec["files"][0]["path"] = "../../escaped.bin"
    rec_path.write_text(json.dumps(rec))
    got = _plan(tmp_path / "two", store).run()
    assert "ran" in _actions(got).values()
    assert not (tmp_path / "escaped.bin").exists()


def test_the_store_is_trimmed_least_recently_used_first(tmp_path):
    store = local_mod.LocalStore(tmp_path / "s", cap=3000)
    cache = cache_mod.ArtifactCache(store)
    out = tmp_path / "o"
    out.mkdir()
    for i in range(5):
        f = out / f"f{i}.bin"
        f.write_bytes(bytes([i]) * 1000)
        cache.save(f"s.{i}", cache.key(f"stamp{i}"), out, [f])
        os.utime(store._record_path(cache.key(f"stamp{i}")), (1000 + i, 1000 + i))
    assert store.usage()[2] == 5000
    assert cache.stored == 5000             # what the build stored: the cache trims after it
    freed = store.trim()
    assert freed >= 2000 and store.usage()[2] <= 2400
    assert store.get_record(cache.key("stamp4")) is not None     # the newest kept
    assert store.get_record(cache.key("stamp0")) is None         # the oldest gone


def test_settings_come_from_the_environment_and_bad_ones_are_one_line(tmp_path, monkeypatch):
    from seedfw.errors import SeedfwError
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE", "off")
    assert cache_mod.from_environment() is None
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE", str(tmp_path / "s"))
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE_SIZE", "2G")
    got = cache_mod.from_environment()
    assert got.local.root == tmp_path / "s" and got.local.cap == 2 << 30
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE_SIZE", "lots")
    with pytest.raises(SeedfwError, match="'lots' is not a size"):
        cache_mod.from_environment()
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE_SIZE", "2G")
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE", "ftp://user:pw@host/x")
    with pytest.raises(SeedfwError) as err:
        cache_mod.from_environment()
    assert "no artifact store for 'ftp://'" in err.value.message and "pw" not in str(err.value)


def test_files_a_step_writes_into_a_per_user_cache_come_back_there(tmp_path):
    """The compiled-model cache's shape: the run writes its blob into a shared directory and
    names it (`step.wrote`); a restore on a machine with an empty one puts it back."""
    store = _store(tmp_path)

    def plan_with(out: Path, shared: Path, calls: list):
        def compile_(step):
            calls.append("m.compile")
            (shared / "k1").mkdir(parents=True, exist_ok=True)
            (shared / "k1" / "model.rknn").write_bytes(b"RKNN compiled")
            step.wrote("models", [shared / "k1" / "model.rknn"])
            card = out / "build" / "card.json"
            card.parent.mkdir(parents=True, exist_ok=True)
            card.write_text('{"key": "k1"}')
            step.install({out / "images" / "models.json": card})

        plan = Plan(out, jobs=1, cache=store)
        plan.add(Step("m.compile", compile_, outputs=(out / "images" / "models.json",),
                      shared_roots={"models": shared}))
        return plan

    calls: list[str] = []
    plan_with(tmp_path / "one", tmp_path / "cache-a", calls).run()
    got = plan_with(tmp_path / "two", tmp_path / "cache-b", calls).run()
    assert _actions(got) == {"m.compile": "restored"} and calls == ["m.compile"]
    assert (tmp_path / "cache-b" / "k1" / "model.rknn").read_bytes() == b"RKNN compiled"
    assert (tmp_path / "two" / "images" / "models.json").read_text() == '{"key": "k1"}'
    # a record naming a root the step does not have is a miss, never a write elsewhere
    plan = Plan(tmp_path / "three", jobs=1, cache=store)
    plan.add(Step("m.compile", lambda s: calls.append("m.compile"),
                  outputs=(tmp_path / "three" / "images" / "models.json",)))
    assert _actions(plan.run()) == {"m.compile": "ran"}
    assert calls == ["m.compile", "m.compile"]
    assert not (tmp_path / "three" / "images" / "models.json").exists()


def test_a_write_only_store_compiles_here_and_still_fills_the_store(tmp_path):
    """build(store="write"): every step runs in this directory (a real compile, what the suite's
    Buildroot run needs), and what it made is restorable elsewhere."""
    store = _store(tmp_path)
    calls: list[str] = []
    _plan(tmp_path / "one", store, calls=calls).run()
    store.reads = False
    again = _plan(tmp_path / "two", store, calls=calls).run()
    assert _actions(again) == {"a.make": "ran", "b.pack": "ran"}          # nothing restored
    assert calls == ["a.make", "b.pack", "a.make", "b.pack"]
    store.reads = True                                    # negative control: it was there
    third = _plan(tmp_path / "three", store, calls=calls).run()
    assert _actions(third) == {"a.make": "restored", "b.pack": "restored"}
    assert calls[4:] == []
