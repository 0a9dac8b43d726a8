"""plan.py: stamps, skipping, propagation to dependents, parallel steps, failure tails."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

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
            # Until `jobs` steps run at once (an event, not a guess at how fast threads start on
            # a loaded host), generously bounded; the sleep gives an over-eager plan (jobs=1) the
            # chance to overlap.
            deadline = time.monotonic() + 30
            while state["max"] < jobs and time.monotonic() < deadline:
                time.sleep(0.01)
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


# ---- interrupted builds (SIGINT): nothing half-done is left behind ---------------------------------

def _sigint_main_when(condition, timeout=20.0):
    """From a helper thread: once `condition()` holds, deliver a real SIGINT to the main thread (as
    Ctrl-C does), so the plan's KeyboardInterrupt path runs exactly as in a terminal."""
    def watch():
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_sigint_ends_the_commands_process_group_and_writes_no_stamp(tmp_path):
    out = tmp_path / "out"
    final = out / "images" / "product.bin"
    final.parent.mkdir(parents=True)
    final.write_bytes(b"previous good image")
    pidfile = tmp_path / "grandchild.pid"

    def slow(step):
        # A grandchild in the command's group stands for the compilers make starts.
        plan.run_command(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo started; wait"],
                         log=step.log)
        built = tmp_path / "built.bin"
        built.write_bytes(b"new")
        step.install({final: built})

    def quick(step):
        (tmp_path / "quick.txt").write_text("done")

    p = plan.Plan(out, jobs=2)
    p.add(plan.Step("pkg.slow", slow, package="pkg"), plan.Step("other.quick", quick))
    log = out / "logs" / "pkg.log"
    # The line "started", not the echoed command line that contains the word.
    _sigint_main_when(lambda: log.is_file() and "\nstarted\n" in log.read_text())
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        p.run()
    took = time.monotonic() - started
    assert took < plan.KILL_GRACE + 10, f"host bound: the interrupted run took {took:.1f} s to end"
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 30                 # an event (it is gone), generously bounded
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the command's process group outlived the interrupt"
    assert actions(out) == {"other.quick": "ran", "pkg.slow": "interrupted"}
    assert not (out / "stamps" / "pkg.slow.stamp").exists()
    assert (out / "stamps" / "other.quick.stamp").exists()
    assert final.read_bytes() == b"previous good image"
    assert not list(out.rglob("*.tmp"))
    # Negative control: the same step left alone installs its product and gets a stamp.
    (tmp_path / "built.bin").write_bytes(b"new")
    p = plan.Plan(out, jobs=2)
    p.add(plan.Step("pkg.slow", lambda s: (s.install({final: tmp_path / "built.bin"})),
                    package="pkg"))
    p.run()
    assert final.read_bytes() == b"new" and (out / "stamps" / "pkg.slow.stamp").exists()


def test_products_are_installed_only_when_the_step_succeeds(tmp_path):
    out = tmp_path / "out"
    images = out / "images"
    images.mkdir(parents=True)
    for name in ("a.bin", "b.bin"):
        (images / name).write_text("old")
        (tmp_path / name).write_text("new")

    def failing(step):
        step.install({images / "a.bin": tmp_path / "a.bin"})
        raise SeedfwError("compiler failed after the first output was made")

    p = plan.Plan(out)
    p.add(plan.Step("pkg.build", failing, package="pkg"))
    with pytest.raises(SeedfwError, match="compiler failed"):
        p.run()
    assert [(images / n).read_text() for n in ("a.bin", "b.bin")] == ["old", "old"]
    with pytest.raises(SeedfwError, match="expected build output is missing: .*nothing.bin"):
        plan.Step("x", lambda s: None).install({images / "c.bin": tmp_path / "nothing.bin"})

    p = plan.Plan(out)
    p.add(plan.Step("pkg.build", lambda s: s.install({images / n: tmp_path / n
                                                       for n in ("a.bin", "b.bin")}),
                    package="pkg"))
    p.run()
    assert [(images / n).read_text() for n in ("a.bin", "b.bin")] == ["new", "new"]
    assert sorted(p.name for p in images.iterdir()) == ["a.bin", "b.bin"]     # no temporaries


def test_run_command_streams_into_the_log_and_keeps_util_runs_contract(tmp_path):
    log = tmp_path / "x.log"
    proc = plan.run_command(["sh", "-c", "echo out; echo err >&2"], log=log)
    assert proc.returncode == 0 and proc.stdout == b"out\nerr\n"
    assert log.read_text() == "$ sh -c 'echo out; echo err >&2'\nout\nerr\n"
    with pytest.raises(SeedfwError) as info:
        plan.run_command(["sh", "-c", "echo bad; exit 4"], log=log)
    assert info.value.message == f"'sh -c 'echo bad; exit 4'…' failed with exit code 4 (log: {log})"
    assert info.value.tail == ["bad"]
    with pytest.raises(SeedfwError, match="command not found: no-such-tool"):
        plan.run_command(["no-such-tool"])


def test_run_command_outside_a_plan_ends_its_group_on_ctrl_c(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    _sigint_main_when(lambda: pidfile.exists() and pidfile.read_text().endswith("\n"))
    with pytest.raises(KeyboardInterrupt):
        plan.run_command(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"])
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 30                 # an event (it is gone), generously bounded
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "host deadline: the grandchild outlived the interrupt by 30 s"


def test_a_steps_code_is_in_its_stamp_down_to_the_framework(tmp_path, monkeypatch):
    """The artifact store outlives code: an edited generator must change the stamp (and so the
    store's key) without anyone bumping a version; the framework below it must not."""
    from seedfw.plan import stamp_of
    from seedfw.plan.stamps import code_digest

    reached = code_digest("seedfw.parts.os_root")
    assert {"parts/os_root.py", "linux/initramfs.py", "linux/modules.py"} <= set(reached)
    assert not any(p.startswith(("plan/", "cache/", "cli/", "report/")) for p in reached)
    assert "util.py" not in reached and "parts/base.py" not in reached

    gen = tmp_path / "mygen.py"
    gen.write_text("from seedfw.linux import initramfs\n\ndef run(step):\n    return 'A'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import mygen

    step = plan.Step("x.gen", mygen.run, inputs={"a": 1})
    first, doc = stamp_of(step, {})
    assert {"mygen.py", "linux/initramfs.py", "linux/modules.py"} == set(doc["code"])   # transitively
    assert stamp_of(step, {})[0] == first                      # same code: same stamp
    gen.write_text(gen.read_text().replace("'A'", "'B'"))      # edited, version not bumped
    assert stamp_of(step, {})[0] != first


def test_a_command_killed_by_sigint_is_an_interrupt_not_a_failure(tmp_path):
    """Ctrl-C reaches the whole process group: a compiler can die of it before the main thread
    has handled its own copy. That is still an interrupt (KeyboardInterrupt, record
    "interrupted", no stamp), never "step failed"; a command that exits 1 is a failure."""
    def step(cmd):
        return plan.Step("s", lambda s: plan.run_command(["sh", "-c", cmd], log=s.log),
                         inputs={"cmd": cmd})

    p = plan.Plan(tmp_path / "a")
    p.add(step("kill -INT $$"))
    with pytest.raises(KeyboardInterrupt):
        p.run()
    assert [r["action"] for r in p.records] == ["interrupted"]
    assert not list((tmp_path / "a" / "stamps").glob("*.stamp"))
    control = plan.Plan(tmp_path / "b")
    control.add(step("exit 1"))
    with pytest.raises(SeedfwError):
        control.run()
    assert [r["action"] for r in control.records] == ["failed"]


def test_a_run_that_only_found_its_per_machine_product_says_reused(tmp_path):
    """A step whose declared outputs live outside the output dir (a per-machine cache) and
    that leaves them untouched is recorded `reused`; one that rewrites them is `built` (the
    negative control), and so is any step whose outputs are in the output dir."""
    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    (cache / "tree.mark").write_text("made earlier")

    def check_only(step):
        assert (cache / "tree.mark").is_file()

    def rewrite(step):
        (cache / "tool.bin").write_bytes(b"new")

    (cache / "tool.bin").write_bytes(b"old")
    p = plan.Plan(out, jobs=1)
    p.add(plan.Step("m.tree", check_only, outputs=(cache / "tree.mark",)),
          plan.Step("m.tool", rewrite, outputs=(cache / "tool.bin",)),
          plan.Step("o.file", lambda s: (out / "f").write_text("x"), outputs=(out / "f",)))
    p.run()
    recs = {r["step"]: r for r in steps_log(out)}
    assert recs["m.tree"]["action"] == "ran" and recs["m.tree"]["reused"] == "this machine's cache"
    assert "reused" not in recs["m.tool"] and "reused" not in recs["o.file"]
