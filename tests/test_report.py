"""seedfw.report: report.json against its shipped schema, the Markdown against the JSON, the
HTML offline and with its plots, and honest labels (computed / estimated / measured).

The output directories are made from real artifacts (tests/elf_builds.py): cross-built ELFs,
objcopy binaries, a FIT from mkimage, compression.json from seedfw's compression stage, a model
blob, and a counters JSON measured on the host.
"""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest

import elf_builds
from cli import invoke, one_error_line
from seedfw.errors import SeedfwError
from seedfw.report import build_report, html, json_out, markdown, write_report
from seedfw.report.sections import bandwidth


@pytest.fixture(scope="session")
def outdirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    base = elf_builds.make_output_dir(root, "a")
    new = elf_builds.make_output_dir(root, "b")
    counters = elf_builds.host_counters(new, root / "counters.json")
    return dict(root=root, base=base, new=new, counters=counters)


@pytest.fixture(scope="session")
def full(outdirs):
    report = build_report(outdirs["new"], baseline=outdirs["base"], counters=outdirs["counters"])
    paths = write_report(report, outdirs["new"])
    return report, paths


def figures(node, path=""):
    """Every figure {value, unit, kind, source} anywhere in the report, with its JSON path."""
    if isinstance(node, dict):
        if {"value", "unit", "kind", "source"} <= node.keys():
            yield path, node
        for k, v in node.items():
            yield from figures(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from figures(v, f"{path}/{i}")


def test_report_json_validates_against_shipped_schema(full, outdirs):
    report, paths = full
    on_disk = json.loads(paths["json"].read_text())
    assert on_disk == json.loads(json.dumps(report))
    # Reproducible: a second run over the same directory renders the same bytes.
    again = build_report(outdirs["new"], baseline=outdirs["base"], counters=outdirs["counters"])
    assert (json_out.render(again), markdown.render(again), html.render(again)) == \
        tuple(paths[k].read_text() for k in ("json", "md", "html"))
    jsonschema.Draft202012Validator(json_out.schema()).validate(on_disk)
    assert on_disk["schema"] == "seedfw-report/1"
    assert all(on_disk[k]["available"] for k in ("images", "elfs", "compression", "deltas"))
    # Negative controls: a figure that claims an unknown kind, or a computed estimate, fails.
    broken = json.loads(paths["json"].read_text())
    broken["images"]["items"][0]["size"]["kind"] = "guessed"
    with pytest.raises(SeedfwError, match="report.json: images/items/0/size/kind"):
        json_out.validate(broken)
    broken = json.loads(paths["json"].read_text())
    broken["bandwidth"]["boot"]["totals"]["decompress_cycles"]["kind"] = "computed"
    with pytest.raises(SeedfwError):
        json_out.validate(broken)


def test_images_and_deltas_come_from_the_files(full, outdirs):
    from seedfw import util
    report, _ = full
    images = {i["file"]: i for i in report["images"]["items"]}
    for path in (outdirs["new"] / "images").iterdir():
        assert images[path.name]["size"]["value"] == path.stat().st_size
        assert images[path.name]["sha256"] == util.sha256_file(path)
        assert images[path.name]["sha256_matches_manifest"] is True
    deltas = {i["file"]: i for i in report["deltas"]["images"]}
    mcu_old = (outdirs["base"] / "images" / "mcu.bin").stat().st_size
    mcu_new = (outdirs["new"] / "images" / "mcu.bin").stat().st_size
    assert deltas["mcu.bin"]["delta"]["value"] == mcu_new - mcu_old
    payload = next(e for e in report["deltas"]["elfs"] if e["file"] == "payload.elf")
    assert payload["symbols"]["grown"][0] | {"percent": None} == dict(
        name="lut", section=".rodata", old=1024, new=1088, delta=64, percent=None)


def test_labels_computed_estimated_measured(full, outdirs):
    report, paths = full
    figs = list(figures(report))
    assert figs and all(f["kind"] in ("computed", "estimated", "measured") for _, f in figs)
    measured = [p for p, f in figs if f["kind"] == "measured"]
    # Only the counters file is measured here: no benchmark result was given on the command
    # line, and the report never reads the benchmark cache (tests/test_report_pure.py).
    assert all(p.startswith("/bandwidth/measured/counters/") for p in measured)
    counters = report["bandwidth"]["measured"]["counters"]
    expected = json.loads(outdirs["counters"].read_text())["stats"]
    assert {c["name"]: c["value"] for c in counters} == {f"stats.{k}": v
                                                         for k, v in expected.items()}
    boot = report["bandwidth"]["boot"]["totals"]
    assert boot["decompress_cycles"]["kind"] == "estimated"
    assert "not a measurement" in boot["decompress_cycles"]["note"]
    assert report["bandwidth"]["models"]["per_second"]["uncompressed"]["kind"] == "estimated"
    assert report["images"]["items"][0]["size"]["kind"] == "computed"
    md = paths["md"].read_text()
    # host_counters writes a flat file without provenance: measured, but never plain measured.
    assert all(c["provenance"]["source"] == "unknown" for c in counters)
    for c in counters:
        assert re.search(rf"\| counter {re.escape(c['name'])} \| {c['value']:,} \| \S+ \| "
                         rf"\*\*measured \(provenance unknown\)\*\* \|", md)
    assert "**measured** |" not in md
    assert re.search(r"\| boot total: decompression cycles \| [\d,]+ \| cycles \| "
                     r"\*\*estimated\*\* \|", md)
    html_text = paths["html"].read_text()
    measured_rows = [f for _, f in bandwidth.rows_of(report["bandwidth"])
                     if f["kind"] == "measured"]
    assert html_text.count('class="kind-measured"') == len(measured_rows) >= len(counters)


def md_table(md: str, heading: str) -> list[list[str]]:
    """Rows (cells) of the first table after `heading`."""
    block = md.split(heading, 1)[1]
    rows = []
    for line in block.splitlines():
        if line.startswith("|"):
            if set(line) <= set("|-: "):
                continue
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
        elif rows:
            break
    return rows[1:]


def n(cell: str):
    return int(cell.replace(",", "").replace("+", "")) if cell not in ("–", "") else None


def test_markdown_numbers_equal_json(full):
    report, paths = full
    md = paths["md"].read_text()
    images = md_table(md, "## Images")
    for row, item in zip(images, report["images"]["items"]):
        assert (row[0], n(row[2]), row[3].strip("`")) == \
            (item["file"], item["size"]["value"], item["sha256"])
    assert n(images[-1][2]) == report["images"]["total"]["value"]
    comp = md_table(md, "## Compression per section")
    for row, item in zip(comp, report["compression"]["items"]):
        assert row[0] == item["section"]
        assert [n(row[2]), n(row[3]), n(row[4]), n(row[5]), n(row[6]), n(row[8])] == [
            item["raw"]["value"], item["compressed_no_dict"]["value"],
            item["compressed_dict"]["value"], item["compressed"]["value"],
            item["dict_bytes"]["value"], item["net_gain"]["value"]]
    assert n(comp[-1][5]) == report["compression"]["totals"]["compressed"]["value"]
    deltas = md_table(md, "## Size deltas")
    for row, item in zip(deltas, report["deltas"]["images"]):
        assert (row[0], n(row[2]), n(row[3]), n(row[4])) == (
            item["file"], item["old"]["value"], item["new"]["value"], item["delta"]["value"])
        assert row[4].startswith("+" if item["delta"]["value"] >= 0 else "-")
    bw = {row[0]: row for row in md_table(md, "## Bandwidth")}
    boot = report["bandwidth"]["boot"]["totals"]
    assert n(bw["boot total: read from storage"][1]) == boot["storage_read"]["value"]
    assert n(bw["boot total: expanded to"][1]) == boot["expanded"]["value"]
    per_sec = report["bandwidth"]["models"]["per_second"]
    assert n(bw["model DDR read per second"][1]) == per_sec["uncompressed"]["value"]
    # One model-traffic figure: the blob is stored as it is, so no "compressed" row (issue 33).
    assert list(per_sec) == ["uncompressed"] and "model DDR read per second, compressed" not in bw
    # Negative control: a changed JSON number no longer matches the rendered table.
    report2 = json.loads(json.dumps(report))
    report2["images"]["items"][0]["size"]["value"] += 1
    row = md_table(markdown.render(report2), "## Images")[0]
    assert n(row[2]) != report["images"]["items"][0]["size"]["value"]


def test_html_is_offline_and_has_the_plots(full):
    report, paths = full
    page = paths["html"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page
    for name in ("section-sizes", "compression", "bandwidth", "size-deltas"):
        figure = re.search(rf'<figure class="plot" id="plot-{name}"[^>]*>(.*?)</figure>', page,
                           re.S)
        assert figure, name
        assert figure.group(1).startswith("<svg") and figure.group(1).count("<rect") >= 2, name
    lut = re.search(r"<title>lut: \+64 bytes</title>", page)
    assert lut is None   # section-level deltas are plotted, symbol deltas listed in the table
    assert "<title>.rodata: +64 bytes</title>" in page


def test_missing_inputs_are_noted_not_fatal(outdirs, tmp_path):
    """Only ELFs present (and the manifest that declares them): everything else is 'not
    available: <why>', and it still validates."""
    bare = tmp_path / "bare"
    shutil.copytree(outdirs["base"] / "build", bare / "build")
    shutil.copy(outdirs["base"] / "manifest.json", bare / "manifest.json")
    report = build_report(bare)
    json_out.validate(report)
    for key in ("images", "compression", "deltas"):
        assert report[key]["available"] is False
        assert report[key]["note"].startswith("not available: ")
    assert report["elfs"]["available"] is True
    assert any(n.startswith("images: not available") for n in report["notes"])
    page = html.render(report)
    assert re.search(r'id="plot-compression"[^>]*><p class="na">not available: ', page)
    assert "<svg" in page.split('id="plot-section-sizes"')[1].split("</figure>")[0]


def test_bad_inputs(outdirs, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(outdirs["base"], broken, ignore=shutil.ignore_patterns("report"))
    (broken / "compression.json").write_text('{"sections": [')
    with pytest.raises(SeedfwError) as err:
        build_report(broken)
    assert err.value.line().endswith("compression.json:1: not valid JSON: Expecting value")
    (broken / "compression.json").write_text('{"sections": [{"name": ".rodata"}]}')
    with pytest.raises(SeedfwError) as err:
        build_report(broken)
    assert err.value.line().endswith(
        "compression.json: sections[0]: needs integer raw and compressed (chosen) byte counts")
    with pytest.raises(SeedfwError, match="output directory not found"):
        build_report(tmp_path / "nowhere")


def test_cli_report_writes_three_files(outdirs):
    out = outdirs["base"]
    proc = invoke("report", "--output", out, "--baseline", outdirs["new"],
                  "--counters", outdirs["counters"])
    assert proc.returncode == 0, proc.stderr
    for name in ("report.json", "report.md", "report.html"):
        assert (out / "report" / name).is_file()
    assert sorted(p.name for p in (out / "report").iterdir()) == \
        ["report.html", "report.json", "report.md"]            # no temporary files left
    data = json.loads((out / "report" / "report.json").read_text())
    assert data["deltas"]["baseline"] == "out-b"
    assert str(outdirs["root"]) not in (out / "report" / "report.json").read_text()
    err = one_error_line(invoke("report", "--output", out, "--counters", out / "missing.json"))
    assert err.endswith("missing.json: no such file")


@pytest.mark.slow
@pytest.mark.parametrize("board", ["qemu-aarch64", "rk3588"])
def test_report_on_real_board_build(tmp_path_factory, board):
    """`invoke report` on a real build: three files, valid JSON, ELF sections present."""
    builds_mod = pytest.importorskip("builds", reason="tests/builds.py not in the tree")
    outdir = builds_mod.build_board(board, tmp_path_factory).outdir
    proc = invoke("report", "--output", outdir)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((outdir / "report" / "report.json").read_text())
    json_out.validate(data)
    assert data["board"] == board and data["elfs"]["available"]
    assert any(e["file"] == "bl31.elf" for e in data["elfs"]["items"])
    page = (outdir / "report" / "report.html").read_text()
    assert "http://" not in page and "https://" not in page and "<svg" in page
    if board == "rk3588":   # real compiled models now (issue 21): nothing says synthetic
        models = data["bandwidth"]["models"]
        assert models["synthetic_models"] == []
        md = (outdir / "report" / "report.md").read_text()
        assert "synthetic filler model blobs" not in md
        assert 'data-synthetic="filler model blobs"' not in page


# ---- provenance: every measured figure says where it came from (issue 11) --------------------

def recorded_counters(tmp_path, provenance=None):
    """`invoke counters --board rk3588 --recorded <the repo's SYNTHETIC test data>` as a file
    (the Python entry the task calls), optionally with its provenance replaced."""
    from seedfw import boards
    from seedfw.counters import source_class
    from seedfw.paths import ROOT

    board = boards.get("rk3588")
    doc = source_class(board.counters).read(
        board, {"recorded": ROOT / "tests" / "data" / "rk3588_dfi_recorded.yaml"})
    if provenance is not None:
        doc["provenance"] = provenance
    path = tmp_path / "counters.json"
    path.write_text(json.dumps(doc))
    return path


def bandwidth_md_rows(md: str) -> dict[str, list[str]]:
    return {row[0]: row for row in md_table(md, "## Bandwidth")}


def test_recorded_synthetic_counters_never_read_as_plain_measured(outdirs, tmp_path):
    counters = recorded_counters(tmp_path)
    report = build_report(outdirs["new"], counters=counters)
    json_out.validate(report)
    md, page = markdown.render(report), html.render(report)
    measured = report["bandwidth"]["measured"]
    assert measured["provenance"]["label"] == "recorded, synthetic"
    assert measured["provenance"]["synthetic"] is True
    figs = measured["counters"]
    assert {f["name"] for f in figs} >= {"total.read_bytes", "channels.1.write_bytes"}
    assert all(f["provenance"]["synthetic"] and f["synthetic"] == "register values"
               for f in figs)
    rows = bandwidth_md_rows(md)
    assert rows["counter total.read_bytes"][1:4] == ["147,200", "bytes",
                                                     "**measured (recorded, synthetic)**"]
    for f in figs:
        assert rows[f"counter {f['name']}"][3] == "**measured (recorded, synthetic)**"
    assert "| **measured** |" not in md         # the kind cell is never bare
    # settings are not measurements: no figure, no row; listed apart as settings
    assert not any(name.endswith(("interval_ms", "ddr_type", "burst_length"))
                   for name in [f["name"] for f in figs])
    assert not any("interval_ms" in label for label in rows)
    assert measured["settings"]["interval_ms"] == 100
    settings_line = next(l for l in md.splitlines() if l.startswith("- counter settings"))
    assert "not measurements" in settings_line and "interval_ms = 100" in settings_line
    # the recording's own provenance is printed, and the notes warn
    assert "recording tests/data/rk3588_dfi_recorded.yaml: constructed by hand" in md
    assert any("SYNTHETIC recorded register values" in n for n in report["notes"])
    assert page.count(">measured (recorded, synthetic)</span>") == len(figs)
    assert ">measured</span>" not in page


def test_live_counters_render_as_measured_live(outdirs, tmp_path):
    """Negative control: the same readings with a live provenance render as measured (live …)
    and nothing says synthetic."""
    prov = {"source": "live", "how": "read through a debug probe", "probe": "cmsisdap:0001",
            "target": "rk3588", "host": "bench-1", "when": "2026-11-30T10:00:00+00:00"}
    report = build_report(outdirs["new"], counters=recorded_counters(tmp_path, prov))
    json_out.validate(report)
    md = markdown.render(report)
    rows = bandwidth_md_rows(md)
    assert rows["counter total.read_bytes"][3] == "**measured (live, probe cmsisdap:0001)**"
    assert "synthetic" not in json.dumps(report["bandwidth"]["measured"]["counters"]).replace(
        '"synthetic": false', "")
    assert not any("measured" in n for n in report["notes"])


def test_recording_without_provenance_is_unknown_never_live(outdirs, tmp_path):
    from seedfw import boards
    from seedfw.counters import source_class
    from seedfw.paths import ROOT

    text = (ROOT / "tests" / "data" / "rk3588_dfi_recorded.yaml").read_text()
    bare = tmp_path / "bare.yaml"
    bare.write_text(re.sub(r"(?ms)^provenance:\n(  .*?\n)+", "", text))
    assert "provenance:" not in bare.read_text() and "reads:" in bare.read_text()
    board = boards.get("rk3588")
    doc = source_class(board.counters).read(board, {"recorded": bare})
    assert doc["provenance"]["source"] == "recorded" and doc["provenance"]["recording"] is None
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    md = markdown.render(build_report(outdirs["new"], counters=path))
    assert bandwidth_md_rows(md)["counter total.read_bytes"][3] == \
        "**measured (recorded, provenance unknown)**"
    assert "live" not in bandwidth_md_rows(md)["counter total.read_bytes"][3]


def test_emulated_counters_say_qemu(outdirs, tmp_path):
    from seedfw import boards
    from seedfw.counters import provenance

    prov = provenance.emulated(boards.get("qemu-aarch64"), "stats block through the GDB stub")
    version = provenance.qemu_version("qemu-system-aarch64")
    assert version and re.fullmatch(r"\d+\.\d+(\.\d+)?", version)
    assert provenance.label(prov) == f"emulated in QEMU {version}, virt"
    doc = {"provenance": prov, "settings": {"cycle_hz": 62500000},
           "readings": {"bytes_decompressed": 4096, "cycles": 123456}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    report = build_report(outdirs["new"], counters=path)
    json_out.validate(report)
    md = markdown.render(report)
    assert bandwidth_md_rows(md)["counter cycles"][3] == \
        f"**measured (emulated in QEMU {version}, virt)**"
    assert "counter cycle_hz" not in bandwidth_md_rows(md)        # a setting, not a reading
    assert any("emulator" in n and "not from a chip" in n for n in report["notes"])
    # a QEMU this command did not start: its version is not claimed
    other = provenance.emulated(boards.get("qemu-aarch64"), "x", target="qemu:h:1", started=False)
    assert provenance.label(other) == "emulated in QEMU (version unknown), virt"


def test_schema_requires_provenance_on_measured_figures(outdirs, tmp_path):
    report = build_report(outdirs["new"], counters=recorded_counters(tmp_path))
    broken = json.loads(json.dumps(report))
    del broken["bandwidth"]["measured"]["counters"][0]["provenance"]
    with pytest.raises(SeedfwError, match="bandwidth/measured/counters/0"):
        json_out.validate(broken)
    broken = json.loads(json.dumps(report))
    broken["bandwidth"]["measured"]["counters"][0]["provenance"]["source"] = "guessed"
    with pytest.raises(SeedfwError):
        json_out.validate(broken)


def test_counters_with_bad_provenance_are_rejected(outdirs, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"provenance": {"source": "measured"}, "readings": {"a": 1}}))
    with pytest.raises(SeedfwError) as err:
        build_report(outdirs["new"], counters=path)
    assert err.value.line().endswith("c.json: provenance.source: 'measured' is not one of live, "
                                     "recorded, emulated")


def test_synthetic_model_blobs_are_flagged_in_all_three_formats(outdirs, tmp_path):
    """A filler blob (seedfw.models_synth) among the models: the model DDR figures say they are
    for filler; the real blob next to it is not flagged."""
    import models_synth

    out = tmp_path / "out"
    shutil.copytree(outdirs["new"], out, ignore=shutil.ignore_patterns("report"))
    (out / "models" / "detector.rknn").write_bytes(models_synth.rknn(6, models_synth.filler(512, 7)))
    report = build_report(out)
    json_out.validate(report)
    m = report["bandwidth"]["models"]
    assert m["synthetic_models"] == ["detector.rknn"]
    assert {i["name"]: i["synthetic"] for i in m["items"]} == {"detector.rknn": True,
                                                               "kernel.raw": False}
    for f in list(m["per_inference"].values()) + list(m["per_second"].values()):
        assert f["synthetic"] == "filler model blobs" and "SYNTHETIC filler" in f["note"]
    md, page = markdown.render(report), html.render(report)
    rows = bandwidth_md_rows(md)
    assert rows["model DDR read per second"][3] == \
        "**estimated (for synthetic filler model blobs)**"
    assert "1 of 2 model blobs are SYNTHETIC filler (detector.rknn)" in md
    assert page.count('data-synthetic="filler model blobs"') == \
        len(m["per_inference"]) + len(m["per_second"])
    assert "SYNTHETIC filler" in json_out.render(report)
    # negative control: the same directory without the filler blob flags nothing
    plain = build_report(outdirs["new"])
    assert plain["bandwidth"]["models"]["synthetic_models"] == []
    assert "synthetic" not in markdown.render(plain).split(markdown.KINDS_LINE)[1].lower()


def test_html_has_the_os_section(outdirs, tmp_path):
    """report.html's OS section shows what images/buildroot.json and the files say. The Buildroot
    output is a file-backed stand-in (a target dir and its packages-file-list.txt, the files
    Buildroot's graph-size reads); the sizes, cpio and overrides are computed by seedfw's own
    code from it, as in a real build (tests/test_buildroot.py checks those against Buildroot)."""
    import subprocess
    from seedfw.buildroot import mirror
    from seedfw.parts.buildroot import cpio_entries, package_sizes
    out = tmp_path / "out"
    shutil.copytree(outdirs["base"], out, ignore=shutil.ignore_patterns("report"))
    br = tmp_path / "buildroot-standin"
    files = {"busybox": ("bin/busybox", 5000), "seedfw-agent": ("usr/bin/seedfw-agent", 1234),
             "skeleton-init-sysv": ("etc/inittab", 100)}
    for pkg, (rel, size) in files.items():
        (br / "target" / rel).parent.mkdir(parents=True, exist_ok=True)
        (br / "target" / rel).write_bytes(b"\x01" * size)
    (br / "build").mkdir()
    (br / "build" / "packages-file-list.txt").write_text(
        "".join(f"{pkg},./{rel}\n" for pkg, (rel, _) in files.items()))
    images = out / "images"
    images.mkdir(exist_ok=True)
    cpio = images / "rootfs.cpio"
    names = subprocess.run(["find", "."], cwd=br / "target", capture_output=True, check=True).stdout
    with open(cpio, "wb") as f:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=br / "target", input=names,
                       stdout=f, check=True)
    info = {"version": "2025.02.16", "package_sizes": package_sizes(br),
            "rootfs": {"rootfs.cpio": {"size": cpio.stat().st_size, "entries": cpio_entries(cpio)}},
            "overrides": [dict(o, built=o["package"] != "host-patchelf") for o in mirror.listing()]}
    (images / "buildroot.json").write_text(json.dumps(info))
    (images / "Image").write_bytes(b"\0" * 4096)
    (images / "qemu-aarch64-os.itb").write_bytes(b"\0" * 8192)
    config = json.loads((out / "config.json").read_text())
    config["KERNEL_PACKAGE"] = "linux-image-6.1.0-50-cloud-arm64"
    (out / "config.json").write_text(json.dumps(config))
    page = html.render(build_report(out))
    assert "<h2>OS</h2>" in page
    os_part = page.split("<h2>OS</h2>")[1].split("<h2>")[0]
    size = f"{cpio.stat().st_size:,}"
    assert f'<tr><td>rootfs.cpio</td><td class="n">{size}</td><td class="n">8</td></tr>' \
        in os_part, os_part                              # 3 files + 5 dirs ("." too)
    assert '<td>Image (linux-image-6.1.0-50-cloud-arm64)</td><td class="n">4,096</td>' in os_part
    assert '<td>qemu-aarch64-os.itb</td><td class="n">8,192</td>' in os_part
    assert '<tr><td>busybox</td><td class="n">5,000</td><td class="n">78.9 %</td></tr>' in os_part
    assert '<tr><td>seedfw-agent</td><td class="n">1,234</td><td class="n">19.5 %</td></tr>' \
        in os_part
    assert "<td>host-cpio</td><td>2.13</td><td>2.15</td>" \
           "<td><code>cpio_2.13+dfsg.orig.tar.bz2</code></td><td>Debian bookworm orig</td>" \
        in os_part
    assert "<td>seedfw mirror buildroot-src/ (not built in this configuration)</td>" in os_part
    # Negative control: no buildroot.json, no OS section.
    (images / "buildroot.json").unlink()
    assert "<h2>OS</h2>" not in html.render(build_report(out))
