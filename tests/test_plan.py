"""plan.py: stamps, skipping, propagation to dependents, parallel steps, failure tails."""

from __future__ import annotations

import json
import threading
import time

import pytest

from seedfw import plan, util
from seedfw.errors import SeedfwError


def steps_log(out):
    return [json.loads(l) for l in (out / "logs" / "steps.jsonl").read_text().splitlines()]


def actions(out):
    return {r["step"]: r["action"] for r in steps_log(out)}


def make_plan(out, knobs, calls, jobs=2):
    """a → b, c independent; each step writes a file so its output can be checked."""
    def body(name):
        def run(step):
            calls.append(name)
            (out / f"{name}.txt").write_text(str(knobs[name]))
        return run

    p = plan.Plan(out, jobs=jobs)
    p.add(plan.Step("a", body("a"), inputs=lambda: {"k": knobs["a"]}, package="pkg"),
          plan.Step("b", body("b"), deps=("a",), inputs=lambda: {"k": knobs["b"]}, package="pkg",
                    outputs=(out / "b.txt",)),
          plan.Step("c", body("c"), inputs=lambda: {"k": knobs["c"]}, package="other"))
    return p


def test_second_run_skips_everything_and_says_so(tmp_path):
    knobs, calls = {"a": 1, "b": 1, "c": 1}, []
    make_plan(tmp_path, knobs, calls).run()
    assert sorted(calls) == ["a", "b", "c"]
    assert set(actions(tmp_path).values()) == {"ran"}
    stamp = json.loads((tmp_path / "stamps" / "b.stamp").read_text())
    assert stamp["inputs"] == {"k": 1} and set(stamp["deps"]) == {"a"}
    calls.clear()
    make_plan(tmp_path, knobs, calls).run()
    assert calls == []
    assert actions(tmp_path) == {"a": "skipped", "b": "skipped", "c": "skipped"}


def test_a_changed_input_reruns_the_step_and_its_dependents_only(tmp_path):
    knobs, calls = {"a": 1, "b": 1, "c": 1}, []
    make_plan(tmp_path, knobs, calls).run()
    calls.clear()
    knobs["a"] = 2
    make_plan(tmp_path, knobs, calls).run()
    assert sorted(calls) == ["a", "b"]
    assert actions(tmp_path) == {"a": "ran", "b": "ran", "c": "skipped"}
    # A change to a leaf re-runs the leaf only.
    calls.clear()
    knobs["b"] = 7
    make_plan(tmp_path, knobs, calls).run()
    assert calls == ["b"]


def test_a_missing_output_forces_a_rerun(tmp_path):
    knobs, calls = {"a": 1, "b": 1, "c": 1}, []
    make_plan(tmp_path, knobs, calls).run()
    (tmp_path / "b.txt").unlink()
    calls.clear()
    make_plan(tmp_path, knobs, calls).run()
    assert calls == ["b"]
    assert (tmp_path / "b.txt").exists()


def test_independent_steps_run_in_parallel_and_jobs_1_serialises(tmp_path):
    def measure(jobs):
        lock, state = threading.Lock(), {"now": 0, "max": 0}

        def run(step):
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            time.sleep(0.1)
            with lock:
                state["now"] -= 1

        p = plan.Plan(tmp_path / f"j{jobs}", jobs=jobs)
        p.add(*(plan.Step(f"s{i}", run, inputs={"i": i}) for i in range(3)))
        p.add(plan.Step("after", run, deps=("s0", "s1", "s2")))
        p.run()
        return state["max"]

    assert measure(3) == 3
    assert measure(1) == 1


def test_dependencies_finish_before_dependents_start(tmp_path):
    order = []
    p = plan.Plan(tmp_path, jobs=4)
    p.add(plan.Step("late", lambda s: order.append("late"), deps=("early",)),
          plan.Step("early", lambda s: (time.sleep(0.1), order.append("early"))))
    p.run()
    assert order == ["early", "late"]


def test_failure_names_the_log_and_carries_its_last_30_lines(tmp_path):
    def failing(step):
        util.run(["sh", "-c", "for i in $(seq 1 50); do echo line $i; done; exit 3"], log=step.log)

    ran = []
    p = plan.Plan(tmp_path, jobs=1)
    p.add(plan.Step("pkg.build", failing, package="pkg"),
          plan.Step("pkg.install", lambda s: ran.append(1), deps=("pkg.build",), package="pkg"))
    with pytest.raises(SeedfwError) as info:
        p.run()
    log = tmp_path / "logs" / "pkg.log"
    assert f"(full log: {log})" in info.value.message
    assert info.value.message.startswith(
        "step pkg.build failed: 'sh -c 'for i in $(seq 1 50); do echo line $i; done; exit 3'…' "
        "failed with exit code 3 (full log: ")
    assert info.value.tail == [f"line {i}" for i in range(21, 51)]
    assert ran == []                                     # dependents never start
    assert actions(tmp_path) == {"pkg.build": "failed"}
    assert not (tmp_path / "stamps" / "pkg.build.stamp").exists()


def test_a_failed_step_runs_again_next_time(tmp_path):
    fail = {"now": True}

    def flaky(step):
        if fail["now"]:
            raise SeedfwError("broken")

    def build():
        p = plan.Plan(tmp_path)
        p.add(plan.Step("x", flaky))
        return p.run()

    with pytest.raises(SeedfwError):
        build()
    fail["now"] = False
    assert [r["action"] for r in build()] == ["ran"]


def test_cycles_and_unknown_dependencies_are_errors(tmp_path):
    p = plan.Plan(tmp_path)
    p.add(plan.Step("a", lambda s: None, deps=("b",)), plan.Step("b", lambda s: None, deps=("a",)))
    with pytest.raises(SeedfwError, match="dependency cycle: a -> b -> a"):
        p.run()
    p = plan.Plan(tmp_path)
    p.add(plan.Step("a", lambda s: None, deps=("nope",)))
    with pytest.raises(SeedfwError, match="step 'a' depends on unknown step 'nope'"):
        p.run()


def test_toolchain_version_is_cached_by_path_and_mtime(tmp_path):
    version = plan.toolchain_version("aarch64-linux-gnu-gcc", tmp_path)
    assert version.startswith("aarch64-linux-gnu-gcc")
    cache = json.loads((tmp_path / "toolchains.json").read_text())
    assert list(cache.values()) == [version]
    assert plan.toolchain_version("aarch64-linux-gnu-gcc", tmp_path) == version
    with pytest.raises(SeedfwError, match="compiler not found: no-such-gcc"):
        plan.toolchain_version("no-such-gcc", tmp_path)


def test_tree_hash_sees_content_and_names(tmp_path):
    (tmp_path / "a.c").write_text("int a;\n")
    h1 = plan.tree_hash(tmp_path)
    (tmp_path / "a.c").write_text("int b;\n")
    h2 = plan.tree_hash(tmp_path)
    (tmp_path / "a.c").rename(tmp_path / "b.c")
    assert len({h1, h2, plan.tree_hash(tmp_path)}) == 3


def test_order_only_dependencies_order_but_do_not_propagate(tmp_path):
    knobs, calls = {"fetch": 1, "use": 1}, []

    def make():
        p = plan.Plan(tmp_path, jobs=4)
        p.add(plan.Step("use", lambda s: calls.append("use"), after=("fetch",),
                        inputs=lambda: {"k": knobs["use"]}),
              plan.Step("fetch", lambda s: (time.sleep(0.05), calls.append("fetch")),
                        inputs=lambda: {"k": knobs["fetch"]}))
        p.run()

    make()
    assert calls == ["fetch", "use"]
    calls.clear()
    knobs["fetch"] = 2
    make()
    assert calls == ["fetch"]
