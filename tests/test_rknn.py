"""Real NPU models: rknn-toolkit2 2.5.0 (its own venv, made by `invoke setup`) compiles ONNX for
the board's NPU and checks it in its simulator (seedfw.models.rknn, docs/models.md).

The small classifier is compiled COLD every run, into a fresh model cache (seconds); the detector
in a slow test. Needs the venv: skipped, with the reason, only when setup has not made it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from cli import invoke, one_error_line
from seedfw import boards, config, models, util
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.models.rknn import compile as rc, rknn_file, venv

pytestmark = pytest.mark.skipif(venv.info() is None, reason=f"rknn-toolkit2 venv "
                                f"{venv.venv_dir()} not made ('invoke setup' makes it)")

DIGITS = (ROOT / "board/qemu-aarch64/models.yaml").read_text().split("  - name: digits\n")[1] \
    .split("  - {name: digits_labels")[0]          # the board's own digits entry, verbatim


def digits_manifest(directory, target="rk3588", extra="", source=None):
    """A manifest with the board's digits entry (optionally another source) for `target`."""
    entry = DIGITS if source is None else DIGITS.replace(
        "      source: {recipe: digits, seed: 0, epochs: 40, calibration_count: 100}\n",
        f"      source: {source}\n      calibration: {{recipe: digits, seed: 0, epochs: 40, "
        "calibration_count: 100}\n")
    p = directory / "models.yaml"
    p.write_text(f"target: {target}\nmodels:\n  - name: digits\n{entry}{extra}")
    return p


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """A fresh model cache for this session: the first compile in it is cold."""
    root = tmp_path_factory.mktemp("model-cache")
    old = os.environ.get("SEEDFW_MODEL_CACHE")
    os.environ["SEEDFW_MODEL_CACHE"] = str(root)
    yield root
    if old is None:
        os.environ.pop("SEEDFW_MODEL_CACHE", None)
    else:
        os.environ["SEEDFW_MODEL_CACHE"] = old


@pytest.fixture(scope="session")
def qemu_values():
    return config.resolve("qemu-aarch64").values


@pytest.fixture(scope="session")
def digits(model_cache, qemu_values):
    """The qemu-aarch64 manifest's models, the digits one compiled cold into the session cache."""
    b = boards.get("qemu-aarch64")
    ms = models.for_build(b, qemu_values, progress=lambda m: None)
    return next(m for m in ms if m.name == "digits")


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_venv_has_its_own_pins_and_imports_rknn():
    v = venv.probe(venv.python())
    assert (v["rknn"], v["numpy"], v["onnx"]) == ("2.5.0", "1.26.4", "1.18.0")
    assert v["torch"].endswith("+cpu")           # a CPU build, not the CUDA one
    ok, line = venv.doctor_line()
    assert ok and line.startswith("ok       rknn-toolkit2 2.5.0 in ")
    # the project's own environment keeps its own versions (the venv is never imported here)
    proc = subprocess.run([os.sys.executable, "-c", "import rknn"], capture_output=True, text=True)
    assert proc.returncode != 0 and "No module named 'rknn'" in proc.stderr


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_digits_compiled_cold_for_rk3588(digits):
    data = digits.path.read_bytes()
    assert not digits.cached and data[:4] == b"RKNN"
    f = rknn_file.read(data, digits.path)
    assert (f.version, f.targets, f.toolkit_version) == (6, ("rk3588",), "2.5.0")
    assert f.describe_io() == "x[1x1x8x8]:int8 logits[1x10]:int8"
    card = digits.card
    assert (card["target"], card["dtype"], card["metric"], card["eval_count"]) == \
        ("rk3588", "int8", "top1", 540)
    assert card["file_bytes"] == len(data) and card["sha256"] == digits.sha256
    assert 0 < card["weight_bytes"] < len(data) and card["internal_bytes"] > 0
    assert card["simulator"] == "emulated (rknn-toolkit2 2.5.0 simulator)"
    assert card["simulated"] >= 0.95 and card["fp32"] - card["simulated"] < 0.02


FP32_CHECK = """
import json, sys, numpy as np, onnxruntime as ort
onnx, x, y = sys.argv[1:4]
s = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
x = np.load(x).astype(np.float32) / 16.0
pred = [int(s.run(None, {"x": xi[None]})[0].argmax()) for xi in x]
print(json.dumps({"top1": float(np.mean(np.array(pred) == np.load(y))), "n": len(pred)}))
"""


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_card_fp32_accuracy_recomputed_with_onnx_runtime(digits):
    """The test's own ONNX Runtime run (not the driver's) on the same held-out digits."""
    files = rc.prepare(digits.card["source"]["recipe"], "test", "source")
    proc = subprocess.run([str(venv.python()), "-c", FP32_CHECK, str(files["onnx"]),
                           str(files["eval"]), str(files["labels"])], capture_output=True,
                          text=True, check=True)
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["n"] == 540 and got["top1"] == pytest.approx(digits.card["fp32"], abs=1e-9)
    assert digits.card["onnx_sha256"] == util.sha256_file(files["onnx"])


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_second_load_is_a_cache_hit_with_the_same_bytes(digits, qemu_values):
    again = next(m for m in models.for_build(boards.get("qemu-aarch64"), qemu_values,
                                             progress=lambda m: None) if m.name == "digits")
    assert again.cached and again.sha256 == digits.sha256


def test_a_cache_entry_published_twice_keeps_the_first(tmp_path):
    """Two processes compiling one key at once (another SEEDFW_CACHE_DIR, so another scratch
    lock): the RKNN compiler is not reproducible, so the second must not replace bytes a build
    already embedded (CI: a parallel build's models.json differed from the serial one's)."""
    entry = tmp_path / "rknn" / "key"
    with util.atomic_dir(entry, first_wins=True) as tmp:
        (tmp / "model.rknn").write_bytes(b"first")
    with util.atomic_dir(entry, first_wins=True) as tmp:
        (tmp / "model.rknn").write_bytes(b"second")
    assert (entry / "model.rknn").read_bytes() == b"first"
    assert [p.name for p in entry.parent.iterdir()] == ["key"]        # no temporary left
    with util.atomic_dir(entry) as tmp:                  # negative control: a plain unpack replaces
        (tmp / "model.rknn").write_bytes(b"second")
    assert (entry / "model.rknn").read_bytes() == b"second"


@pytest.mark.slow      # a second complete cold train + calibrate + compile: a reproducibility pair
def test_two_cold_compiles_match(digits, qemu_values, tmp_path, monkeypatch):
    """A second cold compile (another cache root: training, calibration and compile again) gives
    the same bytes: ASLR off, fixed environment, fixed scratch path (docs/models.md)."""
    monkeypatch.setenv("SEEDFW_MODEL_CACHE", str(tmp_path / "other-cache"))
    other = next(m for m in models.for_build(boards.get("qemu-aarch64"), qemu_values,
                                             progress=lambda m: None) if m.name == "digits")
    assert not other.cached and other.sha256 == digits.sha256


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_accuracy_floor_above_int8_stops_naming_both_numbers(digits, qemu_values):
    values = dict(qemu_values, MODEL_DIGITS_MIN_ACCURACY=999)
    with pytest.raises(SeedfwError) as exc:
        models.for_build(boards.get("qemu-aarch64"), values, progress=lambda m: None)
    simulated, fp32 = digits.card["simulated"], digits.card["fp32"]
    assert exc.value.message == (f"model 'digits': INT8 top-1 in the simulator is {simulated:.4f}, "
                                 f"below CONFIG_MODEL_DIGITS_MIN_ACCURACY 0.999 (ONNX Runtime "
                                 f"FP32: {fp32:.4f})")
    assert exc.value.file.endswith("board/qemu-aarch64/models.yaml")


@pytest.mark.slow      # another complete compile in the rknn venv (FP16), ~20-30 s of the fast suite
def test_fp16_override_compiles_fp16(digits, qemu_values):
    values = dict(qemu_values, MODEL_DIGITS_DTYPE_DEFAULT=False, MODEL_DIGITS_DTYPE_FP16=True)
    m = next(m for m in models.for_build(boards.get("qemu-aarch64"), values,
                                         progress=lambda m: None) if m.name == "digits")
    assert m.card["dtype"] == "fp16" and m.sha256 != digits.sha256
    assert m.card["weight_bytes"] > digits.card["weight_bytes"]      # 2-byte weights
    assert rknn_file.read(m.path.read_bytes(), m.path).tensors[0]["dtype"]["qnt_type"] != "int8"


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_corrupted_onnx_is_one_error(digits, qemu_values, tmp_path):
    good = rc.prepare(digits.card["source"]["recipe"], "test", "source")["onnx"].read_bytes()
    (tmp_path / "bad.onnx").write_bytes(good[:len(good) // 2])     # cut in the middle
    p = digits_manifest(tmp_path, source="{onnx: bad.onnx}")
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(p, values=qemu_values, progress=lambda m: None)
    assert exc.value.file == str(p) and exc.value.message == (
        "model 'digits': rknn-toolkit2: load_onnx failed (google.protobuf.message.DecodeError: "
        "Error parsing message)")
    proc = invoke("models", "--board", "qemu-aarch64", "--manifest", str(p))   # cache: inherited
    assert "load_onnx failed" in one_error_line(proc)


@pytest.fixture(scope="session")
def digits_rk3566(digits, qemu_values, tmp_path_factory):
    """The same digits entry compiled for another NPU (rk3566)."""
    (other,) = models.load_manifest(digits_manifest(tmp_path_factory.mktemp("rk3566"),
                                                    target="rk3566"),
                                    values=qemu_values, progress=lambda m: None)
    return other


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_rk3566_model_refused_by_the_rk3588_manifest(digits_rk3566, tmp_path):
    other = digits_rk3566
    assert rknn_file.read(other.path.read_bytes(), other.path).targets == ("rk3566",)
    shutil.copyfile(other.path, tmp_path / "digits-rk3566.rknn")
    p = tmp_path / "models.yaml"
    p.write_text("target: rk3588\nmodels:\n  - {name: digits, path: digits-rk3566.rknn, "
                 "type: rknn}\n")
    proc = invoke("models", "--manifest", str(p))
    assert one_error_line(proc) == (f"error: {tmp_path / 'digits-rk3566.rknn'}: target_platform: "
                                    "compiled for rk3566, but this board's NPU is rk3588")


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_truncated_rknn_is_one_error(digits, tmp_path):
    data = digits.path.read_bytes()
    (tmp_path / "cut.rknn").write_bytes(data[:len(data) // 2])
    p = tmp_path / "models.yaml"
    p.write_text("target: rk3588\nmodels:\n  - {name: digits, path: cut.rknn, type: rknn}\n")
    line = one_error_line(invoke("models", "--manifest", str(p)))
    assert line.startswith(f"error: {tmp_path / 'cut.rknn'}: offset 0x10: data_size ")


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_model_larger_than_its_partition(digits, qemu_values):
    b = boards.get("qemu-aarch64")
    manifest = models.resolve_manifest(b, qemu_values)
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(manifest, partition_size=16384, values=qemu_values,
                             progress=lambda m: None)
    assert exc.value.message == (f"model 'digits': {digits.size} bytes is larger than the "
                                 "partition limit of 16384 bytes (0x4000)")


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_invoke_models_qemu_prints_real_models_only(digits):
    proc = invoke("models", "--board", "qemu-aarch64")   # the session's cache: inherited
    assert proc.returncode == 0, proc.stderr
    assert "SYNTHETIC" not in proc.stdout
    # one record per model (aligned columns when they fit, else the record's cells on the lines
    # under its name, never split): the digits record carries its sha256 and its card
    out = proc.stdout
    record = out[out.index("digits "):].split("\ndigits_labels", 1)[0]
    assert digits.sha256 in record and "rk3588 int8 top1" in record and "cached" in record


@pytest.mark.slow
def test_detector_compiles_fits_and_keeps_its_boxes(model_cache):
    """PP-OCRv4's detector and the direction classifier from the pinned wheel, INT8, on rendered
    text; together with digits they fit rk3588's partition."""
    b = boards.get("rk3588")
    ms = models.for_build(b, config.resolve("rk3588").values, progress=lambda m: None)
    det = next(m for m in ms if m.name == "ppocr_det")
    c = det.card
    assert c["metric"] == "box_f1_vs_fp32" and c["simulated"] >= 0.8 and c["cosine"] > 0.95
    assert c["fp32_boxes"] > 50 and c["source"]["licence"] == "Apache-2.0"
    cls = next(m for m in ms if m.name == "ppocr_cls").card
    assert cls["metric"] == "top1" and cls["eval_count"] == 200 and cls["simulated"] >= 0.9
    assert sum(m.stored_size for m in ms) < b.image["partition_size"]
    assert rknn_file.read(det.path.read_bytes(), det.path).targets == ("rk3588",)
    proc = invoke("models", "--board", "rk3588")     # the session's cache: inherited
    assert proc.returncode == 0 and "SYNTHETIC" not in proc.stdout


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_report_section_labels_every_figure(digits, tmp_path):
    from seedfw.report.sections import models as section
    (tmp_path / "images").mkdir()
    card = dict(digits.card, file_bytes=digits.size, sha256=digits.sha256)
    (tmp_path / "images" / "models.json").write_text(json.dumps({"models": [card],
                                                                 "frame_rate": 25}))
    doc = section.json(tmp_path)
    (row,) = doc["rows"]
    assert row["weight_bytes_per_second"] == 25 * digits.card["weight_bytes"]
    assert row["accuracy_kind"] == "emulated (rknn-toolkit2 2.5.0 simulator)"
    assert row["bandwidth_kind"] == "computed from the compiled model"
    text = "\n".join(section.markdown(doc))
    assert f"| digits | rk3588 | int8 | {digits.size:,} | top1 |" in text
    assert "MODEL_FRAME_RATE = 25 frames/s" in text and "emulated (rknn-toolkit2 2.5.0" in text
    assert not section.json(tmp_path / "nothing")["available"]


# ---- the agent on the OS checks each model's RKNN header and target (firmware/agent/models.c) ---

def test_rknn_header_layout_matches_rknn_h():
    from c_layout import c_layout, c_macros
    lay = c_layout("seedfw/rknn.h", {"rknn_header": ["magic", "version", "payload_size"]})
    h = lay["rknn_header"]
    assert (h["sizeof"], h["magic"], h["version"], h["payload_size"]) == \
        (models.rknn_header_size(6), 0, 8, 16)
    assert models.RKNN_PREFIX.size == 24 and models.RKNN_PREFIX.format == "<8sQQ"
    macros = c_macros("seedfw/rknn.h", ["RKNN_HEADER_SIZE", "RKNN_FLATBUFFER_ID_AT",
                                        "RKNN_FORMAT_VERSION"])
    assert macros == {"RKNN_HEADER_SIZE": 64, "RKNN_FLATBUFFER_ID_AT": rknn_file.FLATBUFFER_ID_AT,
                      "RKNN_FORMAT_VERSION": 6}


@pytest.fixture(scope="session")
def host_agent(tmp_path_factory):
    """firmware/agent built with the host cc, by its own Makefile (as Buildroot builds it)."""
    build = tmp_path_factory.mktemp("agent-src")
    shutil.copytree(ROOT / "firmware" / "agent", build / "agent")
    shutil.copytree(ROOT / "firmware" / "common", build / "common")
    shutil.copytree(ROOT / "firmware" / "include", build / "include")
    subprocess.run(["make", "-C", str(build / "agent"), "CC=cc"], check=True,
                   capture_output=True)
    return build / "agent" / "seedfw-agent"


def _agent_on(host_agent, tmp_path, model):
    from seedfw.images import package
    from seedfw.images.entries import ModelEntry
    pkg = tmp_path / "pkg.bin"
    pkg.write_bytes(package.encode([ModelEntry.from_model(model)]))
    p = subprocess.run([str(host_agent), "--file", str(pkg)], capture_output=True, text=True)
    return p.returncode, p.stdout.splitlines()


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_agent_accepts_the_rk3588_model(host_agent, digits, tmp_path):
    rc, lines = _agent_on(host_agent, tmp_path, digits)
    assert rc == 0 and lines[-1] == "agent: ok", lines
    assert "agent: model digits sha256 ok" in lines
    assert "agent: model digits rknn v6 target rk3588 ok" in lines


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_agent_refuses_an_rk3566_model(host_agent, digits_rk3566, tmp_path):
    rc, lines = _agent_on(host_agent, tmp_path, digits_rk3566)
    assert rc == 1 and lines[-1] == "agent: FAILED, 1 errors", lines
    assert "agent: model digits sha256 ok" in lines          # intact bytes, wrong NPU
    assert "agent: model digits rknn: compiled for rk3566, board NPU is rk3588" in lines


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_inspect_refuses_a_fit_model_for_another_npu(digits, digits_rk3566, tmp_path):
    """The FIT says which NPU its models were compiled for (seedfw,npu-target); inspect reads
    each model's own target_platform and refuses a mismatch in one line."""
    import dataclasses
    from seedfw.images import fit
    from seedfw.images.entries import ModelEntry
    good = fit.build([ModelEntry.from_model(digits)], tmp_path / "good.itb", description="t")
    proc = invoke("inspect", good, "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = [r for r in json.loads(proc.stdout)["rows"] if r["name"] == "model-digits"]
    assert row["detail"] == "rknn, rknn v6 rk3588 toolkit 2.5.0 x[1x1x8x8]:int8 logits[1x10]:int8"
    wrong = dataclasses.replace(digits_rk3566, target="rk3588")   # as if listed for rk3588
    bad = fit.build([ModelEntry.from_model(wrong)], tmp_path / "bad.itb", description="t")
    assert one_error_line(invoke("inspect", bad)) == (
        f"error: {bad}: model-digits: target_platform: compiled for rk3566, but this board's "
        "NPU is rk3588")


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_tune_model_objectives_read_the_cards(digits, tmp_path):
    from seedfw.tune import objectives
    (tmp_path / "images").mkdir()
    card = dict(digits.card, file_bytes=digits.size, sha256=digits.sha256)
    (tmp_path / "images" / "models.json").write_text(json.dumps({"models": [card]}))
    got = objectives.model_figures(tmp_path)
    assert got == {"model-bytes": digits.size, "model-weights": digits.card["weight_bytes"],
                   "model-drop": round((digits.card["fp32"] - digits.card["simulated"]) * 1000, 3)}
    assert objectives.OBJECTIVES["model-drop"].kind == "emulated (rknn-toolkit2 simulator)"


@pytest.mark.parametrize("source, message", [
    ("{recipe: mnist}", "unknown recipe 'mnist' (known: digits, text, text_lines)"),
    ("{wheel: rapidocr-onnxruntime, file: x.onnx, onnx: y.onnx}",
     "model 'digits': source needs exactly one of recipe, wheel (+ file), onnx; got file, onnx, "
     "wheel"),
])
def test_manifest_source_errors_name_the_field(tmp_path, qemu_values, source, message):
    p = tmp_path / "models.yaml"
    p.write_text(digits_manifest(tmp_path).read_text().replace(
        "{recipe: digits, seed: 0, epochs: 40, calibration_count: 100}", source))
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(p, values=qemu_values, progress=lambda m: None)
    assert exc.value.message == message and exc.value.file == str(p)


@pytest.mark.slow
def test_rk3588_build_embeds_only_real_compiled_models(rk3588_build):
    """`invoke build --board rk3588`: every model in the FIT parses as RKNN for rk3588, none is
    synthetic, and the model cards describe exactly those bytes."""
    from seedfw.images import inspect as inspect_mod
    out = rk3588_build.outdir
    report = inspect_mod.inspect(out / "images" / "rk3588.itb")
    rows = [r for r in report.rows if r.type == "model"]
    assert not any(r.synthetic for r in rows) and all(r.hash_ok for r in rows)
    rknn_rows = [r for r in rows if r.detail.startswith("rknn,")]
    assert [r.name for r in rknn_rows] == ["model-digits", "model-ppocr_det", "model-ppocr_cls"]
    assert all(" rk3588 toolkit 2.5.0 " in r.detail for r in rknn_rows)
    cards = json.loads((out / "images" / "models.json").read_text())["models"]
    assert {c["name"]: c["file_bytes"] for c in cards} == {r.name[6:]: r.size for r in rknn_rows}


@pytest.mark.slow      # runs the rknn venv (a real train + compile): integration
def test_sbom_names_the_toolkit_and_each_model_source(digits, tmp_path):
    from types import SimpleNamespace
    from seedfw.parts.models import ModelsPart
    # models.json as the build writes it (seedfw.parts.models): the card with the blob's size
    # and sha256, which is what the SBOM must name
    card = dict(digits.card, file_bytes=digits.size, sha256=digits.sha256)
    (tmp_path / "models.json").write_text(json.dumps({"models": [card]}))
    recs = ModelsPart().sbom(SimpleNamespace(images=tmp_path))     # seedfw.sbom.model.Component
    assert recs[0].name == "rknn-toolkit2" and recs[0].licence == "LicenseRef-RKNN-SDK"
    assert recs[0].scope == "build"                                  # never shipped
    assert recs[1].name == "digits" and recs[1].kind == "machine-learning-model"
    assert recs[1].hashes["SHA-256"] == digits.sha256
    assert recs[1].licence == "LicenseRef-seedfw"                    # seedfw's own recipe
    assert json.loads(recs[1].description) == digits.card["source"]
    from seedfw.models.rknn import wheels
    det = wheels.sbom("rapidocr-onnxruntime",
                      "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx")
    assert det["licence"] == "Apache-2.0" and det["archive_sha256"].startswith("971d7d5f")


def test_doctor_probes_the_venv_again_only_when_it_changed(tmp_path, monkeypatch):
    """The doctor's `import rknn.api` (~2 s: torch) is answered from the last probe of the very
    same venv state; installing into the venv (a new package directory) probes again. A stand-in
    venv whose python counts its runs."""
    venv_root = tmp_path / "venv"
    site = venv_root / "lib" / "python3.11" / "site-packages"
    (site / "rknn").mkdir(parents=True)
    (venv_root / "bin").mkdir()
    runs = tmp_path / "runs"
    (venv_root / "bin" / "python").write_text(
        f"#!/bin/sh\necho run >> {runs}\necho '{{\"rknn\": \"2.5.0\", \"torch\": \"t\", "
        "\"numpy\": \"n\", \"onnx\": \"o\"}'\n")
    (venv_root / "bin" / "python").chmod(0o755)
    util.write_json(venv_root / venv.MARKER, {"toolkit": "2.5.0", "bytes": 2**20})
    monkeypatch.setenv("SEEDFW_RKNN_VENV", str(venv_root))
    count = lambda: len(runs.read_text().splitlines())        # noqa: E731
    first = venv.doctor_line()
    assert first[0] and "rknn-toolkit2 2.5.0" in first[1] and count() == 1
    assert venv.doctor_line() == first and count() == 1        # the same state: no new probe
    (site / "onnx").mkdir()                                    # an install in the venv
    assert venv.doctor_line() == first and count() == 2
