"""The artifact store with real builds: a new output directory (or a second checkout) of an
unchanged tree restores every stored step byte for byte and runs no compiler; flipping any one
kind of input misses (issue "Build once, anywhere").

The session builds (conftest.py) fill the store; these tests only read it, plus a few small
rebuilds of what each flipped input touches.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from cli import ROOT, invoke
from seedfw import cache as cache_mod

# Steps that never go into the store, and why (the plan decides from their declared outputs;
# seedfw.cache.cacheable): each keeps a per-machine cache of its own under ~/.cache/seedfw.
NOT_STORED = {
    "tfa.fetch": "downloads into the shared download cache",
    "uboot.fetch": "downloads into the shared download cache",
    "qemu-plugin.fetch": "downloads into the shared download cache",
    "uboot.build": "the compiled U-Boot tree is shared per machine (binman runs in it)",
    "buildroot.tree": "the unpacked Buildroot tree is shared per machine",
    "buildroot.hosttar": "host tar is built once per machine",
    "buildroot.toolchain": "the toolchain copy is shared per machine",
    "buildroot.mirror": "fills the shared download cache",
    "tfa.extract": "a source tree (its declared file is only the marker)",
    "buildroot.external": "a generated tree (its declared file is only the marker)",
}


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "logs" / "steps.jsonl").read_text().splitlines()]


def _artifacts(out: Path) -> dict:
    doc = json.loads((out / "manifest.json").read_text())
    return {a["path"]: a["sha256"] for a in doc["artifacts"]}


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["rk3588_build", "qemu_aarch64_build", "mps2_build"])
def test_a_new_output_directory_restores_every_stored_step(fixture, request, tmp_path):
    """`rm -rf output && invoke build` with a warm store: every step but the per-machine ones is
    restored, the images are the session build's, and no compiler ran."""
    if cache_mod.from_environment() is None:
        pytest.skip("SEEDFW_ARTIFACT_CACHE=off")
    first = request.getfixturevalue(fixture)
    out = tmp_path / "out"
    proc = invoke("build", "--board", first.board, "--output", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    actions = {r["step"]: r["action"] for r in _records(out)}
    ran = {s for s, a in actions.items() if a == "ran"}
    assert ran <= set(NOT_STORED), sorted(ran - set(NOT_STORED))
    restored = [s for s, a in actions.items() if a == "restored"]
    assert restored and set(restored) == set(actions) - set(NOT_STORED), actions
    assert _artifacts(out) == _artifacts(first.outdir)
    # what the user reads: a "restored" line for each, and the summary says so
    for s in restored:
        assert f"restored {s}" in proc.stdout, proc.stdout
    assert f"{len(restored)} restored from the artifact store" in proc.stdout
    # Each restored step's log says so and carries the log of the build that made its files.
    for s in restored:
        package = s.split(".")[0]
        text = next((p.read_text(errors="replace") for p in (out / "logs").glob("*.log")
                     if f"=== step {s} (stamp " in p.read_text(errors="replace")), "")
        assert f"=== step {s} (stamp " in text and "from the local artifact store; nothing ran" \
            in text.split(f"=== step {s} (stamp ")[1].splitlines()[0], (s, package)
    if "uboot.build" in actions:
        assert "compiled build reused from the cache" in proc.stdout      # no make ran
    # The per-machine steps found their products in this machine's caches and say so; only the
    # two that write into the output dir itself did work (plan.Step.reused).
    reused = {r["step"] for r in _records(out) if r.get("reused")}
    assert ran - reused <= {"tfa.extract", "buildroot.external"}, sorted(ran - reused)
    for s in reused:
        assert f"reused  {s}" in proc.stdout, proc.stdout


# ---- every kind of input, flipped one at a time, misses ----------------------------------------

def _tree_copy(dest: Path) -> Path:
    """The parts of the checkout a build reads, copied (a second checkout of the same commit)."""
    for name in ("board", "configs", "firmware", "kconfig", "tools"):
        shutil.copytree(ROOT / name, dest / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("Kconfig", "tasks.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


def _private_store(outs, dest: Path) -> Path:
    """A store holding only the records the builds in `outs` used or made (their steps.jsonl
    names each key), blobs hard-linked: the flipped builds below may hit nothing else — not an
    entry an earlier run of this very test stored for the same flip."""
    src = cache_mod.from_environment().local
    dst = cache_mod.LocalStore(dest, src.cap)
    for out in outs:
        for rec in _records(out):
            if "key" not in rec:
                continue
            record = src.get_record(rec["key"])
            for f in record["files"] + ([record["log"]] if record.get("log") else []):
                blob = dst.blob_path(f["sha256"])
                blob.parent.mkdir(parents=True, exist_ok=True)
                if not blob.exists():
                    os.link(src.blob_path(f["sha256"]), blob)
            dst.put_record(rec["key"], record)
    return dest


def _build(tree: Path, board: str, out: Path, *args, env=None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree / "tools"), **(env or {})}
    proc = invoke("build", "--board", board, "--output", out, *args, cwd=tree, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {r["step"]: r["action"] for r in _records(out)}


def _edit(path: Path, change) -> callable:
    before = path.read_bytes()
    path.write_bytes(change(before))
    return lambda: path.write_bytes(before)


@pytest.mark.slow
def test_each_kind_of_input_flipped_alone_misses(qemu_aarch64_build, mps2_build, tmp_path):
    if cache_mod.from_environment() is None:
        pytest.skip("SEEDFW_ARTIFACT_CACHE=off")
    tree = _tree_copy(tmp_path / "checkout")
    # A second checkout of the same tree restores what the session built (no absolute path in
    # any stamp or key): the baseline every flip is compared with.
    base = _build(tree, "qemu-aarch64", tmp_path / "base")
    assert base["payload.build"] == base["tfa.build"] == base["models.compile"] == "restored", base
    base_m = _build(tree, "mps2-an385", tmp_path / "mps2-base")
    assert base_m["mcu.build"] == "restored", base_m
    private = {"SEEDFW_ARTIFACT_CACHE": str(_private_store(
        [tmp_path / "base", tmp_path / "mps2-base"], tmp_path / "store"))}
    # (a flip that reruns a later step after an earlier one was restored is what found that
    # tfa.extract's tree cannot come from a marker file: see NOT_STORED)
    payload_src = sorted((tree / "firmware" / "payload").glob("*.c"))[0]
    patch = sorted((tree / "firmware" / "tf-a" / "patches").glob("*.patch"))[0]
    flips = {
        # kind: (how, the step that must miss)
        "a source byte": (lambda: _edit(payload_src, lambda b: b + b"/* flipped */\n"),
                          "payload.build"),
        "a patch": (lambda: _edit(patch, lambda b: b"Flipped: one more line of description.\n" + b),
                    "tfa.build"),
        "a board file": (lambda: _edit(tree / "board" / "qemu-aarch64" / "dvfs.yaml",
                                       lambda b: b + b"# flipped\n"), "image.pack"),
        "a model's calibration set": (
            lambda: _edit(tree / "board" / "qemu-aarch64" / "models.yaml",
                          lambda b: b.replace(b"calibration_count: 100", b"calibration_count: 99")),
            "models.compile"),
    }
    seen = {}
    for i, (kind, (flip, step)) in enumerate(flips.items()):
        undo = flip()
        try:
            actions = _build(tree, "qemu-aarch64", tmp_path / f"flip{i}", env=private)
        finally:
            undo()
        seen[kind] = (step, actions[step])
    frag = tmp_path / "loud.fragment"
    frag.write_text("CONFIG_TFA_LOG_LEVEL=40\n")
    actions = _build(tree, "qemu-aarch64", tmp_path / "kconfig", "--fragment", frag, env=private)
    seen["a Kconfig symbol"] = ("tfa.build", actions["tfa.build"])
    # The toolchain: the same compiler answering another version (a wrapper first on PATH).
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    real = shutil.which("arm-none-eabi-gcc")
    gcc = wrap / "arm-none-eabi-gcc"
    gcc.write_text("#!/bin/sh\n"
                   f'[ "$1" = --version ] && {{ echo "arm-none-eabi-gcc (flipped) 99.0"; exit 0; }}\n'
                   f'exec {real} "$@"\n')
    gcc.chmod(gcc.stat().st_mode | stat.S_IEXEC)
    actions = _build(tree, "mps2-an385", tmp_path / "mps2-tc",
                     env={"PATH": f"{wrap}:{os.environ['PATH']}", **private})
    seen["a toolchain version"] = ("mcu.build", actions["mcu.build"])
    print("\ninput flipped -> step: action")
    for kind, (step, action) in seen.items():
        print(f"  {kind:28} -> {step}: {action}")
    assert {kind: action for kind, (_, action) in seen.items()} == {k: "ran" for k in seen}
    # and the private store does answer: the unflipped tree restores from it
    again = _build(tree, "qemu-aarch64", tmp_path / "again", env=private)
    assert again["payload.build"] == again["tfa.build"] == "restored", again
