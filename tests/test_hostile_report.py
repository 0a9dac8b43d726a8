"""The hostile-input corpus of `invoke report` (issue 28, docs/hostile-input.md): one case per
class of the report's share — script injection into report.html, Markdown injection into
report.md, non-finite and negative numbers, tracebacks from wrong types and deep JSON. Each
runs the CLI in a subprocess under RLIMIT_AS = 1 GiB and a timeout (tests/hostile.py) and
asserts the exit code, the exact error line (or, for a hostile string that is a valid value,
exit 0 and what the three files hold), and a time and memory bound.

The output directory is made by hand (a config, a manifest, one image, optionally a real
cross-built ELF from tests/elf_builds.py and the counters documents the run stages write), so
each case changes one field of one file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import elf_builds
import hostile
from seedfw.report import fuzzing

TIME_BOUND = 20.0          # seconds per case
RSS_BOUND_MIB = 512
SCRIPT = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'


def seed_doc(name: str) -> dict:
    """The well-formed document of one report input (the fuzz target's seed)."""
    seed = next(s for s in fuzzing.seeds() if fuzzing.KINDS[s[0]] == name)
    return json.loads(seed[1:])


@pytest.fixture
def outdir(tmp_path) -> Path:
    out = tmp_path / "out"
    (out / "images").mkdir(parents=True)
    (out / "images" / "a.bin").write_bytes(b"\0" * 512)
    (out / "config.json").write_text(json.dumps({"BOARD": "rk3588", "BUILD_ID": "hostile"}))
    (out / "manifest.json").write_text(json.dumps({"board": "rk3588",
                                                   "images": [{"file": "a.bin", "size": 512}]}))
    return out


def declare_elf(out: Path, rel: str) -> None:
    """Add an ELF to the manifest's artifacts: the report lists declared ELFs only."""
    doc = json.loads((out / "manifest.json").read_text())
    doc.setdefault("artifacts", []).append({"path": rel})
    (out / "manifest.json").write_text(json.dumps(doc))


def write(out: Path, name: str, doc) -> Path:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def report(out: Path, *extra) -> hostile.Run:
    run = hostile.invoke_bounded("report", "--output", out, *extra)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.seconds < TIME_BOUND and run.max_rss_mib < RSS_BOUND_MIB, \
        (run.seconds, run.max_rss_mib)
    return run


def fails_with(run: hostile.Run, line: str) -> None:
    assert run.returncode == 1, run.stdout + run.stderr
    assert hostile.error_lines(run) == [line], run.stderr


def files(out: Path) -> dict[str, str]:
    return {k: (out / "report" / f"report.{k}").read_text() for k in ("json", "md", "html")}


# ---- script injection into report.html --------------------------------------------------------

def test_script_in_emulated_counters_is_text_not_markup(outdir):
    doc = seed_doc("counters/emulated-run.json")
    doc["settings"]["note"] = SCRIPT
    doc["provenance"]["how"] = SCRIPT
    write(outdir, "counters/emulated-run.json", doc)
    run = report(outdir)
    assert run.returncode == 0, run.stderr
    page = files(outdir)["html"]
    assert "<script" not in page and "<img" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x "
                      "onerror=alert(1)&gt;") == 2


def test_string_where_emulated_counters_have_a_count(outdir):
    doc = seed_doc("counters/emulated-run.json")
    doc["readings"]["dma"]["virtio-blk"]["reads"] = SCRIPT        # the example field
    path = write(outdir, "counters/emulated-run.json", doc)
    fails_with(report(outdir), f"error: {path}: readings.dma.virtio-blk.reads: must be a "
                               "non-negative whole number, not a string")
    assert not (outdir / "report").exists()


# ---- Markdown injection into report.md (the CI summary) -----------------------------------------

def test_elf_section_name_with_newline_and_heading(outdir, tmp_path):
    elf = elf_builds.cross_build(tmp_path / "elf", "aarch64")
    data = elf.read_bytes()
    assert data.count(b".rodata\0") == 1
    (outdir / "images" / "payload.elf").write_bytes(data.replace(b".rodata\0", b"\n# <b>|\0"))
    declare_elf(outdir, "images/payload.elf")
    (outdir / "images" / "x\n## fake <img src=x onerror=alert(1)>|.bin").write_bytes(b"1")
    run = report(outdir)
    assert run.returncode == 0, run.stderr
    out = files(outdir)
    md = out["md"]
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == ["# seedfw report: rk3588", "## Images", "## ELF sections",
                        "### images/payload.elf (AArch64)", "## Compression per section",
                        "## Size deltas", "## Bandwidth",
                        "### Memory traffic per boot phase (measured, emulated)", "## Update",
                        "## Notes"]
    assert "<b>" not in md and "<img" not in md
    assert "| \\\\x0a\\# &lt;b&gt;\\| | PROGBITS |" in md          # the section row, one row
    assert "| x\\\\x0a\\#\\# fake &lt;img src=x onerror=alert(1)&gt;\\|.bin | raw |" in md
    assert "<img" not in out["html"] and "<b>|" not in out["html"]
    # report.json keeps the names exactly as they are
    names = [s["name"] for e in json.loads(out["json"])["elfs"]["items"] for s in e["sections"]]
    assert "\n# <b>|" in names


# ---- non-finite and negative numbers ------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    ("NaN", "NaN is not a finite number: refused"),
    ("Infinity", "Infinity is not a finite number: refused"),
    ("1e999", "Infinity is not a finite number: refused"),
    ("-4096", "must not be negative (-4096)"),
])
def test_counters_numbers_must_be_finite_and_not_negative(outdir, tmp_path, value, message):
    counters = tmp_path / "counters.json"
    counters.write_text('{"provenance": {"source": "live", "probe": "p"}, "settings": {}, '
                        f'"readings": {{"total": {{"read_bytes": {value}}}}}}}')
    run = report(outdir, "--counters", counters)
    fails_with(run, f"error: {counters}: readings.total.read_bytes: {message}")
    assert not (outdir / "report").exists()


def test_nan_in_emulated_counters(outdir):
    doc = seed_doc("counters/emulated-run.json")
    text = json.dumps(doc).replace('"read_bytes": 512', '"read_bytes": NaN')
    path = write(outdir, "counters/emulated-run.json", text)
    fails_with(report(outdir), f"error: {path}: readings.dma.virtio-blk.read_bytes: NaN is not "
                               "a finite number: refused")


def test_report_json_is_strict_json(outdir):
    run = report(outdir)
    assert run.returncode == 0, run.stderr
    text = files(outdir)["json"]
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in report.json"))


# ---- tracebacks: wrong types, deep JSON ---------------------------------------------------------

def test_number_where_models_json_has_a_string(outdir):
    doc = seed_doc("images/models.json")
    doc["models"][0]["name"] = 5
    path = write(outdir, "images/models.json", doc)
    fails_with(report(outdir), f"error: {path}: models[0].name: must be a string, not the "
                               "number 5")


def test_string_in_perf_boot(outdir):
    write(outdir, "counters/emulated-run.json", seed_doc("counters/emulated-run.json"))
    doc = seed_doc("counters/perf-boot.json")
    doc["readings"]["windows"]["boot"]["cpu"]["ns"] = "5 ns"
    path = write(outdir, "counters/perf-boot.json", doc)
    fails_with(report(outdir), f"error: {path}: readings.windows.boot.cpu.ns: must be a "
                               "non-negative whole number, not a string")


@pytest.mark.parametrize("name", ["manifest.json", "images/models.json", "images/ccache.json"])
def test_100000_deep_json(outdir, name):
    path = write(outdir, name, "[" * 100_000 + "]" * 100_000)
    fails_with(report(outdir), f"error: {path}: JSON nested deeper than 64 levels: refused")


def test_5000_digit_number(outdir):
    path = write(outdir, "images/ccache.json", '{"hits": ' + "9" * 5000 + "}")
    fails_with(report(outdir), f"error: {path}: JSON: an integer of 5000 digits: refused")


def test_manifest_path_outside_the_output_directory(outdir):
    write(outdir, "manifest.json", {"elfs": ["/etc/passwd"]})
    fails_with(report(outdir), f"error: {outdir / 'manifest.json'}: elfs[0]: names a path "
                               "outside the output directory: refused")


def test_manifest_elfs_not_a_list(outdir):
    """The py-report campaign's crash (tests/hostile_crashes/py-report/): `"elfs": 0` was
    `TypeError: 'int' object is not iterable` in find_elfs."""
    write(outdir, "manifest.json", {"images": [{}], "elfs": 0})
    fails_with(report(outdir), f"error: {outdir / 'manifest.json'}: elfs: must be a list or an "
                               "object of entries")


def test_terminal_notes_are_plain(outdir):
    write(outdir, "manifest.json", {"non_functional": {"a.bin": "\x1b]8;;http://x\x07click"}})
    run = report(outdir)
    assert run.returncode == 0, run.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", run.stdout), run.stdout
    assert "note: NON-FUNCTIONAL a.bin: \\x1b]8;;http://x\\x07click" in run.stdout
