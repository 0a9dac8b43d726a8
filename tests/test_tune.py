"""invoke tune: search space from Kconfig, objectives, the Optuna loop, outputs, and (slow) a real
study of 6 trials on qemu-aarch64: real incremental builds, deterministic QEMU boots, Pareto front,
reproduction of a trial, --export accepted by invoke config, --resume, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cli import ROOT, invoke
from seedfw import boards, config
from seedfw.errors import SeedfwError
from seedfw.tune import objectives, output, space, study, trial
from tune_helpers import output_with_base

QEMU = boards.get("qemu-aarch64")
STATS = ("stats: addr=0x60100520 version=1 bytes_decompressed=1216 bytes_read=1001 cycles=502416 "
         "cycle_hz=62500000 milestones=0,500720,0,0,502415")


def kconf(board="qemu-aarch64", tmp=None):
    return config.resolve(board, tmp or "/nonexistent-tune-test").kconf


# ---- space --------------------------------------------------------------------------------

def test_space_reads_ranges_and_choices_from_kconfig():
    kc = kconf()
    params = space.by_name(space.load(kc))
    hc = kc.syms["COMPRESS_HC_LEVEL"]
    lo, hi, _ = hc.ranges[0]
    assert (params["COMPRESS_HC_LEVEL"].low, params["COMPRESS_HC_LEVEL"].high) == \
        (int(lo.str_value), int(hi.str_value))
    block = next(c for c in kc.unique_choices if c.name == "COMPRESS_BLOCK")
    assert params["COMPRESS_BLOCK"].values == tuple(s.name for s in block.syms)
    assert params["COMPRESS_DICT_SIZE"].step == 1024
    assert params["TFA_COMPRESS_RODATA"].values == ("y", "n")
    assert "POWER_PROFILE_CHOICE" not in params         # searchable only when asked for
    assert "RK3588_COMPRESS_RODATA" not in params       # not this board's symbol


def test_space_drops_what_the_board_cannot_change():
    names = [p.name for p in space.load(kconf("rk3588"))]
    # rk3588's defconfig sets RK3588_COMPRESS_RODATA, which selects TFA_COMPRESS_RODATA
    assert "RK3588_COMPRESS_RODATA" in names and "TFA_COMPRESS_RODATA" not in names
    with pytest.raises(SeedfwError, match="another option selects it"):
        space.load(kconf("rk3588"), ["TFA_COMPRESS_RODATA"])


@pytest.mark.parametrize("entry,message", [
    ("COMPRESS_SECTION_LIST", "a string symbol"),
    ("NO_SUCH_SYMBOL", "no such symbol"),
    ("COMPRESS_BLOCK_SIZE", "no prompt"),
    ("COMPRESS_DICT_SIZE/1000", "does not divide"),
])
def test_space_refuses(entry, message):
    with pytest.raises(SeedfwError, match=message):
        space.load(kconf(), [entry])


def test_fragment_gives_the_configuration(tmp_path):
    kc = kconf()
    params = space.load(kc)
    values = dict(space.current_values(kc, params), COMPRESS_HC_LEVEL=5,
                  COMPRESS_BLOCK="COMPRESS_BLOCK_4K", LZ4_DECODER_CHOICE="LZ4_DECODER_SMALL")
    frag = tmp_path / "f.conf"
    frag.write_text(space.fragment(params, values))
    cfg = config.resolve("qemu-aarch64", tmp_path / "out", [frag], strict=True)
    assert cfg.values["COMPRESS_HC_LEVEL"] == 5 and cfg.values["COMPRESS_BLOCK_SIZE"] == 4096
    assert cfg.values["LZ4_DECODER"] == "small"
    assert space.current_values(cfg.kconf, params) == values


# ---- objectives ---------------------------------------------------------------------------

def test_boot_figures_are_instruction_counts():
    got = objectives.boot_figures(["seedfw payload", STATS, "verified: all images at tick 574424"])
    # 62.5 MHz timer under -icount shift=0: one tick = 16 instructions
    assert got["boot-main"] == 502416 * 16 and got["boot-verified"] == 574424 * 16
    assert got["boot-decode"] == (502415 - 500720) * 16
    with pytest.raises(SeedfwError, match="no 'stats:"):
        objectives.boot_figures(["seedfw payload"])


def _manifest(out, files):
    (out / "images").mkdir(parents=True)
    arts = []
    for name, data in files.items():
        (out / "images" / name).write_bytes(data)
        arts.append({"name": name, "path": f"images/{name}", "size": len(data), "role": "boot"})
    (out / "manifest.json").write_text(json.dumps({"board": "x", "artifacts": arts}))


def test_storage_counts_each_image_once(tmp_path):
    a, b = os.urandom(300), os.urandom(200)
    _manifest(tmp_path / "layout", {"a.bin": a, "b.bin": b, "all.bin": a + bytes(4096) + b})
    assert objectives.storage_bytes(tmp_path / "layout") == 500       # padding is never read
    # negative control: real content between the pieces makes it an image of its own
    _manifest(tmp_path / "image", {"a.bin": a, "all.bin": a + b"\x01" + bytes(99)})
    assert objectives.storage_bytes(tmp_path / "image") == 400


def test_objectives_are_checked_and_labelled():
    assert [o.name for o in objectives.parse(None, QEMU)][:2] == ["storage", "boot-main"]
    assert objectives.OBJECTIVES["boot-main"].kind == "emulated (instruction count)"
    assert objectives.OBJECTIVES["storage"].kind == "computed"
    assert objectives.OBJECTIVES["decode-cycles"].kind == "estimated"
    with pytest.raises(SeedfwError, match="unknown objective 'speed'"):
        objectives.parse("storage,speed", QEMU)
    with pytest.raises(SeedfwError, match="needs a QEMU boot"):
        objectives.parse("boot-main", boards.get("rk3588"))
    assert [o.name for o in objectives.parse(None, boards.get("rk3588"))] == \
        ["storage", "decode-cycles", "decoder-size"]


def test_storage_urls(tmp_path):
    with pytest.raises(SeedfwError, match="unknown storage"):
        study.storage_for("http://127.0.0.1:1", tmp_path)
    with pytest.raises(SeedfwError, match="is not redis://HOST:PORT"):
        study.storage_for("redis://127.0.0.1", tmp_path)
    with pytest.raises(SeedfwError, match="no such directory"):
        study.storage_for(str(tmp_path / "nope" / "x.journal"), tmp_path)
    study.storage_for(None, tmp_path / "tune")
    assert (tmp_path / "tune").is_dir()


# ---- the loop, with real Optuna and a stand-in for the build ------------------------------

def _fake_results(fail_at=None, interrupt_at=None):
    calls = []

    def run_trial(number, values):
        calls.append(number)
        if number == interrupt_at:
            raise KeyboardInterrupt
        r = trial.TrialResult(seconds={"total": 0.0})
        if number == fail_at:
            r.error = "out/logs/tfa.log: step tfa.build failed"
        else:
            lvl = values["COMPRESS_HC_LEVEL"]
            r.values = {"storage": 1000 - 10 * lvl, "boot-decode": 100 + lvl * lvl}
        return r
    return run_trial, calls


def test_loop_records_failures_and_resumes_after_ctrl_c(tmp_path):
    objs = objectives.parse("storage,boot-decode", QEMU)
    params = space.load(kconf(), ["COMPRESS_HC_LEVEL"])
    store = study.storage_for(None, tmp_path)
    st = study.open_study("t", store, objs, study.sampler_for("tpe", 1), create=True)
    run_trial, calls = _fake_results(fail_at=1, interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        study.run(st, params, objs, run_trial, 6, lambda m: None)
    # reopened from the file, as `--resume` does: consistent, nothing left RUNNING
    st = study.open_study("t", study.storage_for(None, tmp_path), objs,
                          study.sampler_for("tpe", 1), create=False)
    states = [t.state.name for t in st.trials]
    assert states == ["COMPLETE", "FAIL", "COMPLETE", "FAIL"]
    assert st.trials[1].user_attrs["error"].endswith("step tfa.build failed")
    assert st.trials[3].user_attrs.get("interrupted") and study.counted(st) == 3
    run_trial, calls = _fake_results()
    mine = study.run(st, params, objs, run_trial, 6, lambda m: None)
    assert mine == [4, 5, 6] and study.counted(st) == 6
    doc = output.document(st, "qemu-aarch64", objs, params, "x", "tpe")
    assert [t["number"] for t in doc["trials"]] == list(range(7))
    assert doc["front"] and all(doc["trials"][n]["state"] == "COMPLETE" for n in doc["front"])


def test_same_configuration_is_not_rebuilt(tmp_path):
    objs = objectives.parse("storage,boot-decode", QEMU)
    params = space.load(kconf(), ["COMPRESS_HC_LEVEL"])
    st = study.open_study("t", study.storage_for(None, tmp_path), objs,
                          study.sampler_for("random", 3), create=True)
    run_trial, calls = _fake_results()
    # only "low" or "high" matters in this stand-in configuration: most proposals are twins
    key = lambda v: "high" if v["COMPRESS_HC_LEVEL"] > 6 else "low"  # noqa: E731
    study.run(st, params, objs, run_trial, 8, lambda m: None, config_key=key)
    twins = [t for t in st.trials if "same_as" in t.user_attrs]
    assert len(calls) == 8 - len(twins) <= 2 and twins
    for t in twins:
        first = st.trials[t.user_attrs["same_as"]]
        assert first.number not in [x.number for x in twins] and t.values == first.values
        assert key(first.params) == key(t.params)


def test_report_marks_front_and_default():
    objs = [o.describe() for o in objectives.parse("storage,boot-decode", QEMU)]
    trials = [{"number": 0, "state": "COMPLETE", "params": {"A": 1}, "default": True,
               "objectives": {"storage": 100, "boot-decode": 50}},
              {"number": 1, "state": "COMPLETE", "params": {"A": 2},
               "objectives": {"storage": 80, "boot-decode": 60}},
              {"number": 2, "state": "COMPLETE", "params": {"A": 3},
               "objectives": {"storage": 90, "boot-decode": 70}},
              {"number": 3, "state": "FAIL", "params": {"A": 4}, "objectives": None,
               "error": "x: step tfa.build failed"}]
    doc = {"board": "qemu-aarch64", "study": "s", "storage": "f", "sampler": "tpe",
           "objectives": objs, "space": [], "default_trial": 0, "front": [0, 1], "trials": trials}
    svg = output.svg(doc)
    assert svg.count('<circle class="front"') == 2 and svg.count('<circle class="trial"') == 1
    assert svg.count('class="default"') == 1
    md = output.markdown(doc)
    assert "| #1 | 80 | 60 | 0.8000 | 1.2000 |" in md and "#3: x: step tfa.build failed" in md
    assert "emulated (instruction count)" in md
    assert output.knee(doc) in (0, 1)


# ---- slow: a real study on qemu-aarch64 ------------------------------------------------------

SPACE = "COMPRESS_BLOCK,COMPRESS_HC_LEVEL,LZ4_DECODER_CHOICE"
OBJS = "storage,boot-main,boot-decode"
COMPILE_STEPS = {"tfa.build", "payload.build"}


@pytest.mark.slow
def test_six_trials_front_reproduction_export_resume(tmp_path_factory, tmp_path):
    out = output_with_base("qemu-aarch64", tmp_path_factory, tmp_path / "out")
    args = ["tune", "--board", "qemu-aarch64", "--output", out, "--space", SPACE,
            "--objectives", OBJS, "--seed", "5"]
    p = invoke(*args, "--trials", "6")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "trial 6/6 (#5):" in p.stdout and "front:" in p.stdout
    doc = json.loads((out / "tune" / "tune.json").read_text())
    assert [t["state"] for t in doc["trials"]] == ["COMPLETE"] * 6
    front = [doc["trials"][n] for n in doc["front"]]
    points = {tuple(t["objectives"].values()) for t in front}
    assert len(points) >= 2, doc["front"]

    # trial 0 is the defconfig's point: copied from the base, every step up to date
    t0 = doc["trials"][0]
    assert t0["default"] and t0["steps_ran"] == [] and t0["steps_skipped"] >= 8
    for t in doc["trials"]:          # a decoder change recompiles; compression-only never does
        if "same_as" in t:
            continue                 # a configuration measured before: not built again
        ran = set(t["steps_ran"])
        if t["params"]["LZ4_DECODER_CHOICE"] != "LZ4_DECODER_FAST":
            # rebuilt, or restored from the artifact store when this machine built it before
            assert "tfa.build" in ran | set(t.get("steps_restored", [])), t
        else:
            assert not ran & COMPILE_STEPS

    # Compression options only: only the steps downstream of them run, counted from steps.jsonl
    objs = objectives.parse(OBJS, QEMU)
    params = space.load(kconf(), SPACE.split(","))
    base = out / "tune" / "base"
    hc_only = dict(t0["params"], COMPRESS_HC_LEVEL=4)
    r = trial.run(QEMU, params, hc_only, objs, base, tmp_path / "hc4")
    assert r.error is None and not set(r.steps_ran) & COMPILE_STEPS
    # (run here, or restored from the artifact store when this machine built that level before)
    assert {"tfa.compress", "payload.compress", "image.pack"} <= set(r.steps_ran) | set(
        r.steps_restored)
    assert r.values["storage"] != t0["objectives"]["storage"]

    # Determinism: a front trial's configuration, rebuilt in a new directory, scores the same
    pick = next(t for t in front if t["number"] != 0)
    again = trial.run(QEMU, params, pick["params"], objs, base, tmp_path / "again")
    assert again.error is None
    assert again.values == pick["objectives"]

    md = (out / "tune" / "report.md").read_text()
    assert "## Pareto front" in md and all(f"| #{n}" in md for n in doc["front"])
    html = (out / "tune" / "report.html").read_text()
    assert html.count('<circle class="front"') == len(doc["front"]) and 'class="default"' in html

    # --export → a fragment invoke config accepts, giving the trial's values
    frag = tmp_path / "tuned.conf"
    p = invoke(*args, "--export", frag, "--trial", pick["number"])
    assert p.returncode == 0, p.stderr
    p = invoke("config", "--board", "qemu-aarch64", "--output", tmp_path / "cfg", "--fragment",
               frag, "--strict")
    assert p.returncode == 0, p.stderr
    values = json.loads((tmp_path / "cfg" / "config.json").read_text())
    assert values["COMPRESS_HC_LEVEL"] == pick["params"]["COMPRESS_HC_LEVEL"]
    assert values[pick["params"]["LZ4_DECODER_CHOICE"]] is True

    # An existing study is continued only on request; --resume raises the budget by one
    p = invoke(*args, "--trials", "7")
    assert p.returncode != 0 and "continue it with --resume" in p.stderr
    p = invoke(*args, "--trials", "7", "--resume")
    assert p.returncode == 0, p.stderr
    assert "trial 7/7 (#6):" in p.stdout and "trial 6/" not in p.stdout
    assert len(json.loads((out / "tune" / "tune.json").read_text())["trials"]) == 7


@pytest.mark.slow
def test_ctrl_c_leaves_the_study_resumable(tmp_path_factory, tmp_path):
    out = output_with_base("qemu-aarch64", tmp_path_factory, tmp_path / "out")
    args = [sys.executable, "-m", "invoke", "tune", "--board", "qemu-aarch64", "--output", str(out),
            "--objectives", "storage,decoder-size", "--space", "LZ4_DECODER_CHOICE,COMPRESS_HC_LEVEL",
            "--seed", "2"]
    proc = subprocess.Popen(args + ["--trials", "20"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    for line in proc.stdout:                 # after trial 2, inside trial 3 (a build)
        if line.startswith("trial 2/20"):
            time.sleep(1.0)
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
            break
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    doc = json.loads((out / "tune" / "tune.json").read_text())
    assert not [t for t in doc["trials"] if t["state"] == "RUNNING"]
    done = [t for t in doc["trials"] if not t.get("interrupted")]
    p = subprocess.run(args + ["--trials", str(len(done) + 1), "--resume"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads((out / "tune" / "tune.json").read_text())
    assert len([t for t in doc["trials"] if t["state"] == "COMPLETE"]) == len(done) + 1
