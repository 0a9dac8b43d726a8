"""ONNX → .rknn for a board's NPU, through a content-addressed cache (docs/models.md).

A manifest entry with a `compile` block (board/<b>/models.yaml) says where the ONNX comes from
(`source`: a recipe seedfw runs itself, a model file inside a pinned wheel, or an ONNX file next
to the manifest), how calibration and held-out inputs are made (`calibration`, a recipe of
prepare.py), the input (name, NCHW shape), mean/std and the metric. Kconfig says the rest:
quantization (MODELS_DTYPE_CHOICE, per model MODEL_<K>_DTYPE_*), the INT8 algorithm, the
optimization level and the accuracy floor (MODEL_<K>_MIN_ACCURACY, per mille).

Why a cache: rknn-toolkit2 2.5.0 is not byte-reproducible (FACTS.md: uninitialised memory in two
spans of the payload). The cache key is everything that affects the output — ONNX sha256, the
calibration / held-out / label arrays' sha256, the settings, the target, the toolkit version and
venv pins, and the driver's own sha256 — so rebuilds, other output directories and machines
sharing the cache embed the same bytes. A cold compile still runs in a fixed environment (ASLR
off with `setarch -R`, PYTHONHASHSEED=0, a fixed env and fixed paths): that makes the small
classifier's cold compiles identical (tests/test_rknn.py checks it), but not the detector's, whose
payload holds heap pointer values that depend on the compiler's thread timing (docs/models.md).
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ... import paths, util
from ...errors import SeedfwError
from .. import cards
from . import venv, wheels

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "driver.py"
PREPARE = HERE / "prepare.py"
TIMEOUT = 1800.0                 # a detector compile plus its simulator run, on a slow machine
CACHE_VERSION = "1"


@dataclass(frozen=True)
class Compiled:
    name: str
    path: Path            # the .rknn in the cache
    card: dict            # the model card (see card())
    cached: bool          # True when this call compiled nothing


def cache_root() -> Path:
    """Compiled models, prepared inputs and extracted ONNX ($SEEDFW_MODEL_CACHE, else
    <seedfw cache>/models); share it between machines to share compiled bytes."""
    return paths.env_path("SEEDFW_MODEL_CACHE") or paths.cache_dir() / "models"


def scratch_dir() -> Path:
    """Where every cold compile runs: one fixed path per user, whatever the cache root (the
    path is an input of the compiler's output as much as the environment is)."""
    return paths.cache_dir() / "rknn-scratch"


def settings(entry: dict, values: dict, where, field: str) -> dict:
    """The Kconfig side of one model's compile: dtype, algorithm, level, accuracy floor."""
    key = entry.get("kconfig")
    dtype = "fp16" if values.get("MODELS_DTYPE_FP16") else "int8"
    floor = 0
    if key:
        names = [f"MODEL_{key}_DTYPE_DEFAULT", f"MODEL_{key}_MIN_ACCURACY"]
        missing = [n for n in names if n not in values]
        if missing:
            raise SeedfwError(f"model '{entry['name']}': kconfig '{key}' names no Kconfig "
                              f"symbols ({', '.join('CONFIG_' + n for n in missing)} undefined; "
                              "see kconfig/Kconfig.models)", where, field)
        if values.get(f"MODEL_{key}_DTYPE_INT8"):
            dtype = "int8"
        elif values.get(f"MODEL_{key}_DTYPE_FP16"):
            dtype = "fp16"
        floor = int(values[f"MODEL_{key}_MIN_ACCURACY"])
    algorithm = ("mmse" if values.get("MODELS_QUANT_MMSE") else
                 "kl_divergence" if values.get("MODELS_QUANT_KL") else "normal")
    return {"dtype": dtype, "algorithm": algorithm if dtype == "int8" else None,
            "optimization_level": int(values.get("MODELS_OPTIMIZATION_LEVEL", 3)),
            "min_accuracy_permille": floor}


def _run_venv(script: Path, request: dict, cwd: Path, log: Path | None, what: str,
              where, field: str) -> dict:
    """Run a venv script with a fixed environment and ASLR off; its last stdout line is JSON."""
    py = venv.require()
    util.write_json(cwd / "request.json", request)
    env = {"PATH": f"{py.parent}:/usr/bin:/bin", "HOME": str(cwd), "PYTHONHASHSEED": "0",
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "TQDM_DISABLE": "1"}
    cmd = [str(py), str(script), "request.json"]
    if shutil.which("setarch"):
        cmd = ["setarch", platform.machine(), "-R", *cmd]
    # Through plan.run_command, so an interrupted build stops the toolkit (its process group)
    # like every other step's command. run_command adds to the caller's environment; `env -i`
    # keeps this one fixed (a PYTHONPATH of the caller must not reach the venv), and coreutils
    # `timeout` bounds a hung compile (exit 124).
    cmd = [shutil.which("env") or "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()),
           shutil.which("timeout") or "/usr/bin/timeout", "--kill-after=10", f"{TIMEOUT:g}",
           *cmd]
    from ...plan import run_command
    proc = run_command(cmd, cwd=cwd, log=log, check=False)
    if proc.returncode == 124:
        raise SeedfwError(f"{what}: rknn venv did not finish in {TIMEOUT:g} s", where, field)
    # stdout and stderr share one pipe there: the script's answer is its last JSON-object line.
    lines = proc.stdout.decode(errors="replace").splitlines()
    doc = {}
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                break
            doc = {}
    if proc.returncode != 0 or "error" in doc:
        why = doc.get("error") or next((l for l in reversed(lines) if l.strip()),
                                       f"exit code {proc.returncode}")
        if doc.get("toolkit"):
            why += f" ({doc['toolkit']})"
        raise SeedfwError(f"{what}: {why}", where, field)
    return doc


def _hash(doc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


RECIPES = ("digits", "text", "text_lines")      # prepare.py RECIPES


def prepare(recipe: dict, where, field: str, log=None) -> dict[str, Path]:
    """Run a prepare.py recipe once per (recipe, prepare.py, venv pins): {onnx?, calib, eval, labels?}."""
    if recipe.get("recipe") not in RECIPES:
        raise SeedfwError(f"unknown recipe {recipe.get('recipe')!r} (known: {', '.join(RECIPES)})",
                          where, f"{field}.recipe")
    key = _hash({"recipe": recipe, "prepare": util.sha256_file(PREPARE),
                 "venv": venv.pin_hash(), "v": CACHE_VERSION})[:24]
    out = cache_root() / "prep" / key
    names = {"onnx": "model.onnx", "calib": "calib.npy", "eval": "eval.npy",
             "labels": "labels.npy"}
    done = out / "prepared.json"
    if not done.is_file():
        with util.atomic_dir(out, first_wins=True) as tmp:
            request = {**recipe, **{k: str(tmp / v) for k, v in names.items()}}
            doc = _run_venv(PREPARE, request, tmp, log, f"recipe '{recipe.get('recipe')}'",
                            where, field)
            (tmp / "request.json").unlink()
            util.write_json(tmp / "prepared.json", doc)
    return {k: out / v for k, v in names.items() if (out / v).is_file()}


def onnx_source(entry: dict, manifest: Path, where, field: str, log=None,
                allow_outside: bool = False) -> tuple[Path, dict]:
    """(ONNX path, provenance record) for an entry's compile.source. An `onnx:` file is confined
    to the manifest's folder exactly as a `path:` is (seedfw.paths.confined)."""
    src = entry["compile"]["source"]
    kinds = [k for k in ("recipe", "wheel", "onnx") if k in src]
    if len(kinds) != 1:
        raise SeedfwError(f"model '{entry['name']}': source needs exactly one of recipe, wheel "
                          f"(+ file), onnx; got {', '.join(sorted(src)) or 'nothing'}", where,
                          f"{field}.source")
    if "recipe" not in src and "calibration" not in entry["compile"]:
        raise SeedfwError(f"model '{entry['name']}': a {kinds[0]} source needs a calibration "
                          "recipe (the inputs to calibrate and evaluate on)", where,
                          f"{field}.calibration")
    if "wheel" in src:
        path = wheels.member(src["wheel"], src["file"], where, f"{field}.source", log=log)
        return path, {"kind": "wheel", **wheels.sbom(src["wheel"], src["file"])}
    if "onnx" in src:
        try:
            path = paths.confined(manifest.parent, src["onnx"], where, field, allow_outside)
        except SeedfwError as exc:
            raise SeedfwError(f"model '{entry['name']}': compile.source.onnx: {exc.message}",
                              where, field) from None
        if not path.is_file():
            raise SeedfwError(f"model '{entry['name']}': {src['onnx']} does not exist", where,
                              f"{field}.source.onnx")
        return path, {"kind": "file", "file": src["onnx"]}
    files = prepare(src, where, f"{field}.source", log)
    return files["onnx"], {"kind": "recipe", "recipe": src, "licence": "generated by seedfw"}


def ensure(entry: dict, values: dict, target: str, manifest: Path, field: str,
           progress=print, log: Path | None = None, allow_outside: bool = False) -> Compiled:
    """The compiled model for one manifest entry: from the cache, else compiled now."""
    from .. import format as models       # the ONNX framing check lives there
    from ... import reading
    spec = entry["compile"]
    name = entry["name"]
    where = manifest
    cfg = settings(entry, values, where, field)
    onnx, provenance = onnx_source(entry, manifest, where, field, log, allow_outside)
    try:                          # regular file, size cap before a byte is read (reading.py)
        onnx_bytes = reading.read_bytes(onnx, "model")
    except SeedfwError as exc:
        raise SeedfwError(f"model '{name}': cannot read {onnx.name}: {exc.message}", where,
                          field) from None
    models.check_onnx(onnx_bytes, onnx)
    inputs = prepare(spec.get("calibration") or spec["source"], where, f"{field}.calibration", log)
    if spec["metric"] == "top1" and "labels" not in inputs:
        raise SeedfwError(f"model '{entry['name']}': metric top1 needs labelled inputs; recipe "
                          f"'{(spec.get('calibration') or spec['source'])['recipe']}' makes none",
                          where, f"{field}.metric")
    request = {"target": target, "dtype": cfg["dtype"], "algorithm": cfg["algorithm"] or "normal",
               "optimization_level": cfg["optimization_level"], "mean": spec["mean"],
               "std": spec["std"], "input": spec["input"]["name"],
               "shape": spec["input"]["shape"], "metric": spec["metric"],
               "box_threshold": spec.get("box_threshold", 0.3)}
    key = _hash({"request": request, "onnx": util.sha256_bytes(onnx_bytes),
                 "inputs": {k: util.sha256_file(p) for k, p in inputs.items() if k != "onnx"},
                 "toolkit": venv.TOOLKIT_VERSION, "venv": venv.pin_hash(),
                 "driver": util.sha256_file(DRIVER), "v": CACHE_VERSION})[:32]
    entry_dir = cache_root() / "rknn" / key
    cached = (entry_dir / "card.json").is_file()
    if not cached:
        # One compile at a time: they share the one fixed scratch path.
        with util.file_lock(paths.cache_dir() / ".rknn-scratch.lock", "the NPU model compiler",
                            say=progress):
            cached = (entry_dir / "card.json").is_file()
            if not cached:
                progress(f"{name}: compiling {onnx.name} for {target} ({cfg['dtype']}) with "
                         f"rknn-toolkit2 {venv.TOOLKIT_VERSION}")
                _compile(request, onnx, inputs, entry_dir, name, where, field, log)
    # The driver's card says `npu` (seedfw.models.cards: kept there so the driver, part of
    # every cache key, does not change); the card the build uses says `simulated`.
    card = cards.current(json.loads((entry_dir / "card.json").read_text()))
    card.update({"name": name, "cache_key": key, "source": provenance,
                 "onnx_sha256": util.sha256_bytes(onnx_bytes), "onnx_bytes": len(onnx_bytes),
                 "min_accuracy": cfg["min_accuracy_permille"] / 1000})
    check_floor(card, entry, where, field)
    return Compiled(name, entry_dir / "model.rknn", card, cached)


def _compile(request, onnx, inputs, entry_dir, name, where, field, log) -> None:
    scratch = scratch_dir()
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    try:
        # Every input under a fixed name in the fixed directory: the request the driver reads
        # is then the same bytes on every machine (even the length of a path in it changed the
        # compiler's uninitialised bytes, tests/test_rknn.py test_two_cold_compiles_match).
        shutil.copyfile(onnx, scratch / "model.onnx")
        for key in ("calib", "eval", "labels"):
            if key in inputs:
                shutil.copyfile(inputs[key], scratch / f"{key}.npy")
        req = dict(request, onnx="model.onnx", out="model.rknn", card="card.json",
                   calib="calib.npy", eval="eval.npy",
                   labels="labels.npy" if "labels" in inputs else None)
        started = time.monotonic()
        _run_venv(DRIVER, req, scratch, log, f"model '{name}': rknn-toolkit2", where, field)
        card = json.loads((scratch / "card.json").read_text())
        data = (scratch / "model.rknn").read_bytes()
        card.update({"file_bytes": len(data), "sha256": util.sha256_bytes(data),
                     "session_seconds": round(time.monotonic() - started, 2),
                     "simulator": f"emulated (rknn-toolkit2 {card['toolkit_version']} simulator)"})
        with util.atomic_dir(entry_dir, first_wins=True) as tmp:
            (tmp / "model.rknn").write_bytes(data)
            util.write_json(tmp / "card.json", card)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


METRIC_NAMES = {"top1": "top-1", "box_f1_vs_fp32": "box F1 against FP32's boxes"}


def check_floor(card: dict, entry: dict, where, field: str) -> None:
    """The accuracy floor (MODEL_<K>_MIN_ACCURACY): below it the build stops, naming both numbers."""
    floor = card["min_accuracy"]
    if card["simulated"] < floor:
        metric = METRIC_NAMES.get(card["metric"], card["metric"])
        raise SeedfwError(f"model '{entry['name']}': {card['dtype'].upper()} {metric} in the "
                          f"simulator is {card['simulated']:.4f}, below CONFIG_MODEL_"
                          f"{entry.get('kconfig')}_MIN_ACCURACY {floor:.3f} (ONNX Runtime FP32: "
                          f"{card['fp32']:.4f})", where, field)
