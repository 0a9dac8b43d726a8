"""A report is a function of its build output and its command line (issue 33), and what it lists
is the product's.

- The same output directory reported with an empty $HOME and with a $HOME whose seedfw cache
  holds this host's benchmark results (bench/lz4_speed.py, bench/cache_speed.py) gives the same
  bytes; the planted results are shown to be ones the cache readers do pick up (negative
  control), and their figures and paths appear nowhere. Given on the command line
  (--decoder-bench), the host's figure is shown, labelled as the host's, without its directory.
- One model-traffic figure: the compiled models' weight bytes (images/models.json), with its
  assumption; a "compressed" figure only for a model stored compressed.
- The ELFs listed are the manifest's: a real ARM ELF planted where the MCU build leaves its
  negative-control flash algorithm is not listed (until the manifest declares it).
- The simulator's accuracy is `simulated`; an old models.json's `npu` is read as a synonym.

The output directories are tests/elf_builds.py's (real cross-built ELFs, no board build).
"""

from __future__ import annotations

import json
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path

import pytest

import elf_builds
from cli import invoke, one_error_line
from seedfw import util
from seedfw.report import build_report, json_out, markdown

PLANTED_CPB = 0.57          # the host figure: an x86 host's, never the board's
# The rk3588 build's three compiled models (output/rk3588/images/models.json at 3c7d444).
CARDS = [("digits", 32833, 8960), ("ppocr_det", 2503445, 1340672),
         ("ppocr_cls", 858318, 235776)]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return elf_builds.make_output_dir(tmp_path_factory.mktemp("pure"), "a")


@pytest.fixture
def out(base, tmp_path) -> Path:
    """A fresh copy of the output directory, with a ccache summary so the report's cache section
    (which used to read the ccache bench result from $HOME) is rendered too."""
    o = tmp_path / "out"
    shutil.copytree(base, o, ignore=shutil.ignore_patterns("report"))
    util.write_json(o / "images" / "ccache.json", {"hits": 3, "misses": 1, "hit_rate": 0.75,
                                                   "remote": None, "source": "ccache stats log"})
    return o


def home_env(home: Path) -> dict:
    """This process's environment with HOME = `home` and no variable that moves seedfw's cache
    elsewhere: ~/.cache/seedfw is then <home>/.cache/seedfw."""
    import os
    env = {k: v for k, v in os.environ.items()
           if k not in ("SEEDFW_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    return env


def plant(home: Path) -> dict[str, Path]:
    """This host's results of both benchmarks, fresh and for the decoder the build links."""
    host = socket.gethostname()
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    bench = home / ".cache" / "seedfw" / "bench"
    lz4 = bench / "lz4_speed" / f"{host}-fast.json"
    ccache = bench / "cache_speed" / f"{host}.json"
    util.write_json(lz4, {"host": host, "date": now, "variant": "fast",
                          "cycles_per_byte": PLANTED_CPB, "machine": "x86_64",
                          "cpu_model": "Planted CPU 9000"})
    util.write_json(ccache, {"host": host, "date": now, "cold_s": 123.4, "warm_s": 23.4,
                             "ratio": 5.27})
    return {"lz4": lz4, "ccache": ccache}


def report_bytes(out: Path, env: dict, *extra) -> dict[str, bytes]:
    proc = invoke("report", "--output", out, *extra, env=env, real=True)
    assert proc.returncode == 0, proc.stderr
    return {k: (out / "report" / f"report.{k}").read_bytes() for k in ("json", "md", "html")}


def test_home_benchmark_cache_never_changes_the_report(out, tmp_path, monkeypatch):
    empty, planted = tmp_path / "home-empty", tmp_path / "home-planted"
    empty.mkdir()
    files = plant(planted)
    # Negative control: the planted files are what the cache readers find for this host under
    # that HOME (the old report read exactly these: decoder_speed.decompress_speed, and
    # ccache.bench_result), so an identical report below is not an unreadable plant.
    from seedfw.cache import ccache
    from seedfw.compress import decoder_speed
    monkeypatch.delenv("SEEDFW_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(planted))
    seen = decoder_speed.decompress_speed({"LZ4_DECODER": "fast"})
    assert (seen["value"], seen["kind"], seen["source"]) == (PLANTED_CPB, "measured",
                                                             str(files["lz4"]))
    assert ccache.bench_result()["cold_s"] == 123.4
    monkeypatch.undo()

    a = report_bytes(out, home_env(empty))
    b = report_bytes(out, home_env(planted))
    assert a["json"] == b["json"] and a["md"] == b["md"] and a["html"] == b["html"]
    doc = json.loads(b["json"])
    cpb = doc["bandwidth"]["cycles_per_byte"]
    assert (cpb["value"], cpb["kind"]) == (2.0, "estimated")
    assert "host_cycles_per_byte" not in doc["bandwidth"] and "time_saved" not in doc["cache"]
    for text in (b["json"], b["md"], b["html"]):
        for needle in ("0.57", "123.4", str(planted), str(empty), ".cache/seedfw", "~/"):
            assert needle.encode() not in text, needle
    expanded = doc["bandwidth"]["boot"]["totals"]["expanded"]["value"]
    assert doc["bandwidth"]["boot"]["totals"]["decompress_cycles"]["value"] == expanded * 2


def test_a_host_benchmark_given_on_the_command_line_is_the_hosts(out, tmp_path):
    files = plant(tmp_path / "home")
    got = report_bytes(out, home_env(tmp_path / "home"), "--decoder-bench", files["lz4"],
                       "--ccache-bench", files["ccache"])
    doc = json.loads(got["json"])
    bw = doc["bandwidth"]
    host = bw["host_cycles_per_byte"]
    label = "measured on the host (x86_64 Planted CPU 9000), not the board"
    assert (host["value"], host["kind"], host["source"]) == (
        PLANTED_CPB, "measured", f"--decoder-bench {files['lz4'].name}")
    assert host["provenance"] == {"source": "benchmark", "label": label, "synthetic": False}
    # The board's figure and every estimate made with it keep the constant.
    assert (bw["cycles_per_byte"]["value"], bw["cycles_per_byte"]["kind"]) == (2.0, "estimated")
    totals = bw["boot"]["totals"]
    assert totals["decompress_cycles"]["value"] == totals["expanded"]["value"] * 2
    md = got["md"].decode()
    assert (f"| decompressor cycles/byte {label} | 0.57 | cycles/byte | **measured ({label})** "
            f"| --decoder-bench {files['lz4'].name} |") in md
    saved = doc["cache"]["time_saved"]
    assert (saved["value"], saved["source"]) == (100.0, f"--ccache-bench {files['ccache'].name}")
    for text in got.values():
        assert str(tmp_path).encode() not in text and b".cache/seedfw" not in text
    json_out.validate(doc)
    # A result for the decoder the build does not link is refused, naming the file and field.
    other = tmp_path / "small.json"
    other.write_text(json.dumps(dict(json.loads(files["lz4"].read_text()), variant="small")))
    assert one_error_line(invoke("report", "--output", out, "--decoder-bench", other)) == (
        f"error: {other}: variant: is a result for the small decoder; this build links the fast "
        "decoder (run bench/lz4_speed.py --variants fast)")


def cards(simulated_key: str = "simulated") -> dict:
    return {"frame_rate": 30, "models": [
        {"name": name, "target": "rk3588", "dtype": "int8", "file_bytes": size,
         "sha256": f"{i:02x}" * 32, "metric": "top1", "fp32": 0.97, simulated_key: 0.96,
         "simulator": "emulated (rknn-toolkit2 2.5.0 simulator)", "weight_bytes": weights}
        for i, (name, size, weights) in enumerate(CARDS)]}


def package(compressed: set[str] = frozenset()) -> dict:
    """images/images.json: the models as the boot package stores them."""
    return {"board": "rk3588", "entries": [
        {"name": name, "type": "model", "size": size,
         "stored_size": size // 3 if name in compressed else size, "sha256": "00" * 32}
        for name, size, _ in CARDS]}


def test_one_model_traffic_figure_the_compiled_weights(out):
    util.write_json(out / "images" / "models.json", cards())
    util.write_json(out / "images" / "images.json", package())
    report = build_report(out)
    json_out.validate(report)
    m = report["bandwidth"]["models"]
    weights = sum(w for _, _, w in CARDS)
    files = sum(s for _, s, _ in CARDS)
    assert weights == 1_585_408 and files == 3_394_596
    (fig,) = m["per_inference"].values()
    assert (fig["value"], fig["kind"]) == (weights, "estimated")
    assert "once per inference" in fig["note"] and "no on-chip reuse" in fig["note"]
    assert list(m["per_second"]) == ["uncompressed"]
    assert m["per_second"]["uncompressed"]["value"] == weights * 30
    assert [i["compressed"] for i in m["items"]] == [None, None, None]   # stored as they are
    md = markdown.render(report)
    rows = [line for line in md.splitlines() if line.startswith("| model DDR read")]
    assert rows == [
        f"| model DDR read per inference | {weights:,} | bytes | **estimated** | "
        "images/models.json: sum of weight_bytes (the compiled models) |",
        f"| model DDR read per second | {weights * 30:,} | bytes/s | **estimated** | "
        "per inference x 30 frames/s |"]
    # Negative control: the file-size figure the report used to show is nowhere.
    assert f"{files:,}" not in md and "compressed" not in " ".join(rows)
    # A model the package stores compressed gets its stored size; still one traffic figure.
    util.write_json(out / "images" / "images.json", package({"ppocr_det"}))
    m = build_report(out)["bandwidth"]["models"]
    det = next(i for i in m["items"] if i["name"] == "ppocr_det")
    assert det["compressed"]["value"] == 2503445 // 3
    assert [i["compressed"] for i in m["items"] if i["name"] != "ppocr_det"] == [None, None]
    assert list(m["per_inference"]) == ["uncompressed"]
    assert m["per_inference"]["uncompressed"]["value"] == weights


def test_only_the_manifests_elfs_are_listed(out, tmp_path):
    from seedfw import stats
    # A real ARM executable, different bytes from every product ELF, where the MCU build leaves
    # its negative-control flash algorithm.
    planted = out / "build" / "mcu" / "flashalgo" / "algo-broken.elf"
    planted.parent.mkdir(parents=True)
    shutil.copy(elf_builds.cross_build(tmp_path / "b", "arm", "b"), planted)
    elf = stats.read_elf(planted, top=0)["elf"]
    assert (elf["type"], elf["machine"]) == ("EXEC", "ARM")   # the old walk's filter passed it
    listed = {util.sha256_file(out / "build" / p) for p in ("payload/payload.elf", "mcu/mcu.elf")}
    assert util.sha256_file(planted) not in listed             # ... and its hash was new
    report = build_report(out)
    paths = [i["path"] for i in report["elfs"]["items"]]
    assert paths == ["build/payload/payload.elf", "build/mcu/mcu.elf"]
    assert "algo-broken" not in markdown.render(report)
    # The list follows the manifest: declared, the same file is listed.
    doc = json.loads((out / "manifest.json").read_text())
    doc["artifacts"].append({"path": "build/mcu/flashalgo/algo-broken.elf"})
    (out / "manifest.json").write_text(json.dumps(doc))
    paths = [i["path"] for i in build_report(out)["elfs"]["items"]]
    assert paths[-1] == "build/mcu/flashalgo/algo-broken.elf"
    # No manifest: no ELFs, and the note says why.
    (out / "manifest.json").unlink()
    elfs = build_report(out)["elfs"]
    assert elfs == {"available": False,
                    "note": "not available: no manifest.json (the build's declared outputs)"}


def test_simulated_accuracy_and_old_npu_cards(out):
    util.write_json(out / "images" / "models.json", cards("simulated"))
    new = build_report(out)
    util.write_json(out / "images" / "models.json", cards("npu"))        # built before the rename
    old = build_report(out)
    assert old["models"] == new["models"]
    row = new["models"]["rows"][0]
    assert (row["simulated"], row["drop"]) == (0.96, 0.01) and "npu" not in row
    md = markdown.render(new)
    assert ("| model | target | dtype | bytes | metric | FP32 | simulated (rknn-toolkit2 "
            "simulator) | drop |") in md
    assert "| NPU |" not in md and "FP32 / simulated / drop" in md
    from seedfw.report import html
    assert "<th>simulated (rknn-toolkit2 simulator)</th>" in html.render(new)
    # Neither name: one error line naming the field.
    doc = cards("simulated")
    del doc["models"][1]["simulated"]
    util.write_json(out / "images" / "models.json", doc)
    err = one_error_line(invoke("report", "--output", out))
    assert err.startswith(f"error: {out / 'images' / 'models.json'}: models[1].simulated")
