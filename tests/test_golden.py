"""The golden check (issue 33, "figures that follow the code"): the figures the manual marks with
`<!-- figure: ... -->` are regenerated from builds and compared with the pages
(seedfw.figures.golden, `invoke docs --golden DIR`, the end of `invoke ci`).

Fast: the manual's markers parse; a figure on a scratch page against a scratch build passes,
then fails with the exact line once the file grows (the negative control), and --regenerate
makes it pass again; malformed markers are one line naming page:line. Slow: the real pages
against the session builds of qemu-aarch64 (with a counted boot, as `invoke ci` makes) and
rk3588 (with its counted OS boot on QEMU virt, whose DMA and PCIe rows the pages mark) pass; a payload rebuilt from a copy of firmware/ with one string more fails, naming the
page and figure of every payload size that moved.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from seedfw.errors import SeedfwError
from seedfw.figures import golden

ROOT = Path(__file__).resolve().parents[1]


def _scratch(tmp_path: Path, page: str, size: int = 1000) -> tuple[Path, Path]:
    """docs/p.md with `page`, and a qemu-aarch64 'build' whose images/x.bin has `size` bytes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "p.md").write_text(page)
    out = tmp_path / "ci" / "qemu-aarch64"
    (out / "images").mkdir(parents=True)
    (out / "manifest.json").write_text("{}")
    (out / "images" / "x.bin").write_bytes(bytes(size))
    return docs, tmp_path / "ci"


FIG = "<!-- figure: file-bytes board=qemu-aarch64 file=images/x.bin{} -->{}<!-- /figure -->"


def test_the_manual_marks_figures_that_parse():
    found = golden.markers(ROOT / "docs")
    assert {m.board for m in found} == {"qemu-aarch64", "rk3588"}
    assert {m.producer.name for m in found} == {"file-bytes", "elf-section-bytes",
                                                "elf-load-bytes", "compressed-section",
                                                "emulated-phase", "emulated-dma"}
    assert {"docs/counters.md", "docs/compression.md", "docs/report-walkthrough.md"} <= \
        {m.page for m in found}
    # what each marker encloses is a rendered integer, nothing else
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*|\d+", m.text) for m in found)


def test_a_figure_that_disagrees_names_page_and_figure(tmp_path):
    page = "# p\n\nA file of " + FIG.format("", "1,000") + " bytes\n(" + \
        FIG.format(" fmt=plain", "1000") + " as a tool prints it).\n"
    docs, root = _scratch(tmp_path, page)
    bad, found = golden.check(docs, root)
    assert bad == [] and len(found) == 2
    (root / "qemu-aarch64" / "images" / "x.bin").write_bytes(bytes(1001))     # negative control
    bad, _ = golden.check(docs, root)
    assert bad == [
        "docs/p.md:3: figure file-bytes board=qemu-aarch64 file=images/x.bin: the page says "
        "1,000, the build gives 1,001",
        "docs/p.md:4: figure file-bytes board=qemu-aarch64 file=images/x.bin fmt=plain: the "
        "page says 1000, the build gives 1001"]
    assert golden.regenerate(docs, root) == [
        "docs/p.md:3: figure file-bytes board=qemu-aarch64 file=images/x.bin: 1,000 -> 1,001",
        "docs/p.md:4: figure file-bytes board=qemu-aarch64 file=images/x.bin fmt=plain: "
        "1000 -> 1001"]
    assert (docs / "p.md").read_text() == page.replace("1,000", "1,001").replace(">1000<", ">1001<")
    assert golden.check(docs, root)[0] == []
    # a board without a build is a disagreement too, not a pass
    shutil.rmtree(root / "qemu-aarch64")
    assert golden.check(docs, root)[0][0] == (
        f"docs/p.md:3: figure file-bytes board=qemu-aarch64 file=images/x.bin: "
        f"{root / 'qemu-aarch64'}: no build of qemu-aarch64 (no manifest.json)")


def test_emulated_dma_and_pcie_figures_follow_the_counters_document(tmp_path):
    """The rk3588 rows the manual marks (docs/counters.md): DMA and a phase's PCIe bytes of
    counters/emulated-boot.json; a changed document is a disagreement (negative control)."""
    import json
    dma = "<!-- figure: emulated-dma board=qemu-aarch64 value=read_bytes -->3,040,256<!-- /figure -->"
    pcie = ("<!-- figure: emulated-phase board=qemu-aarch64 run=boot phase=linux "
           "value=pcie-mmio.store_bytes -->40<!-- /figure -->")
    docs, root = _scratch(tmp_path, f"# p\n\n{dma} read, {pcie} stored to PCIe\n")
    counters = root / "qemu-aarch64" / "counters"
    counters.mkdir()
    doc = {"settings": {"regions": [{"name": "pcie-mmio"}]},
           "readings": {"dma": {"virtio-blk": {"read_bytes": 3040256, "reads": 128}},
                        "phases": {"linux": {"regions": {"pcie-mmio": {"store_bytes": 40}}}}}}
    (counters / "emulated-boot.json").write_text(json.dumps(doc))
    bad, found = golden.check(docs, root)
    assert bad == [] and len(found) == 2
    doc["readings"]["dma"]["virtio-blk"]["read_bytes"] += 512
    doc["readings"]["phases"]["linux"]["regions"]["pcie-mmio"]["store_bytes"] = 44
    (counters / "emulated-boot.json").write_text(json.dumps(doc))
    assert golden.check(docs, root)[0] == [
        "docs/p.md:3: figure emulated-dma board=qemu-aarch64 value=read_bytes: the page says "
        "3,040,256, the build gives 3,040,768",
        "docs/p.md:3: figure emulated-phase board=qemu-aarch64 run=boot phase=linux "
        "value=pcie-mmio.store_bytes: the page says 40, the build gives 44"]
    del doc["readings"]["dma"]
    (counters / "emulated-boot.json").write_text(json.dumps(doc))
    assert golden.check(docs, root)[0][0] == (
        "docs/p.md:3: figure emulated-dma board=qemu-aarch64 value=read_bytes: "
        f"{counters / 'emulated-boot.json'}: readings.dma.virtio-blk: no DMA count read_bytes "
        "of virtio-blk")


@pytest.mark.parametrize("line, error", [
    ("x <!-- figure: nosuch board=rk3588 -->1<!-- /figure -->",
     "docs/p.md:3: no figure 'nosuch' (known: file-bytes, elf-section-bytes, elf-load-bytes, "
     "compressed-section, emulated-phase, emulated-dma)"),
    ("x <!-- figure: file-bytes board=rk3588 -->1<!-- /figure -->",
     "docs/p.md:3: figure file-bytes board=rk3588: parameter 'file' missing (takes: file)"),
    ("x <!-- figure: file-bytes board=rk9 file=a -->1<!-- /figure -->",
     "docs/p.md:3: figure file-bytes board=rk9 file=a: no board 'rk9' (known: "),
    ("x <!-- figure: file-bytes board=rk3588 file=a -->1 and no closing tag",
     "docs/p.md:3: figure marker without its <!-- /figure --> on the same line"),
])
def test_a_malformed_marker_is_one_line(tmp_path, line, error):
    docs, root = _scratch(tmp_path, f"# p\n\n{line}\n")
    with pytest.raises(SeedfwError) as err:
        golden.markers(docs)
    assert err.value.line().replace(str(docs.parent) + "/", "").startswith(error)


def test_examples_in_code_are_not_figures(tmp_path):
    page = ("# p\n\n`<!-- figure: nosuch -->`\n\n````markdown\n```\n"
            "<!-- figure: nosuch board=x -->1<!-- /figure -->\n```\n````\n")
    docs, _ = _scratch(tmp_path, page)
    assert golden.markers(docs) == []


# --- the real pages against real builds (slow) ----------------------------------------------

def _counted_run(build, dest: Path) -> Path:
    """The counted boot `invoke ci` makes, into counters/emulated-run.json of a copy of the
    build (`dest`): the session build is shared, and the boot writes into its disk image."""
    from seedfw import boards
    from seedfw.counters import emulated
    from seedfw.run import payload as qemu

    shutil.copytree(build.outdir, dest, symlinks=True)
    board, out = boards.get("qemu-aarch64"), dest
    counted = emulated.default_file(out, "run")
    qemu.run(board, out, timeout=120, echo=lambda s: None,
             extra_args=emulated.qemu_args(board, out, counted))
    emulated.collect(board, out, counted, "run")
    return dest


def _counted_os_boot(build, dest: Path) -> Path:
    """rk3588's counted OS boot on QEMU virt as `invoke ci` makes it, into a copy of the build
    (`dest`: top-level files copied, images/ and host/ hard-linked, since the boot reads the
    disk with snapshot=on and writes only counters/, logs/ and build/os-virt/)."""
    from seedfw import boards
    from seedfw.counters import emulated
    from seedfw.run import os_virt

    src = Path(build.outdir)
    dest.mkdir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copyfile(f, dest / f.name)
    for sub in ("images", "host"):
        shutil.copytree(src / sub, dest / sub, copy_function=os.link, symlinks=True)
    board = boards.get("rk3588")
    counted = emulated.default_file(dest, "boot")
    os_virt.boot(board, dest, timeout=900, echo=lambda s: None,
                 extra_args=emulated.virt_args(board, dest, counted))
    emulated.collect(board, dest, counted, "boot")
    return dest


def _planted_payload(build, tmp_path: Path) -> Path:
    """bl33.elf built from a copy of firmware/ whose payload prints one string more, with the
    make variables the build used."""
    from seedfw import boards, config, parts
    from seedfw.parts.payload import PayloadPart

    fw = tmp_path / "firmware"
    for tree in ("payload", "common", "include", "lz4"):
        shutil.copytree(ROOT / "firmware" / tree, fw / tree)
    main = fw / "payload" / "main.c"
    text = main.read_text()
    banner = '\tprintf("seedfw payload %s build %s on %s\\n"'
    assert banner in text
    main.write_text(text.replace(banner, '\tprintf("planted by tests/test_golden.py\\n");\n'
                                 + banner, 1))
    out = Path(build.outdir)
    ctx = parts.context(boards.get("qemu-aarch64"), out, config.load_values(out))
    args = [f"{k}={v}" for k, v in PayloadPart().make_vars(ctx).items()]
    subprocess.run(["make", "-C", fw / "payload", f"O={tmp_path / 'payload-build'}", *args],
                   check=True, capture_output=True)
    return tmp_path / "payload-build" / "payload.elf"


def _section_size(elf: Path, name: str) -> int:
    """Read independently of seedfw.stats: binutils' readelf."""
    out = subprocess.run(["aarch64-linux-gnu-readelf", "-SW", elf], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(rf"\]\s+{re.escape(name)}\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s", out)
    return int(m[1], 16)


@pytest.mark.slow
def test_the_pages_agree_with_the_session_builds_and_a_planted_payload_fails(
        qemu_aarch64_build, rk3588_build, tmp_path):
    from seedfw.cli.docs import golden_check

    root = tmp_path / "ci"
    root.mkdir()
    counted = _counted_run(qemu_aarch64_build, root / "qemu-aarch64")
    rk = _counted_os_boot(rk3588_build, root / "rk3588")
    said: list[str] = []
    golden_check(root, say=said.append)
    found = golden.markers(ROOT / "docs")
    assert said == [f"golden: {len(found)} figures on {len({m.page for m in found})} pages "
                    f"agree with the builds of qemu-aarch64, rk3588 in {root}"]

    # The planted change: a copy of the build (hard links: nothing of the session build is
    # written) whose bl33.elf is the payload with one more string.
    planted = tmp_path / "planted"
    shutil.copytree(counted, planted / "qemu-aarch64", symlinks=True, copy_function=os.link)
    (planted / "rk3588").symlink_to(rk)
    elf = planted / "qemu-aarch64" / "images" / "bl33.elf"
    elf.unlink()
    shutil.copyfile(_planted_payload(qemu_aarch64_build, tmp_path), elf)
    expected = []
    for m in found:
        if m.board == "qemu-aarch64" and m.producer.name == "elf-section-bytes":
            size = m.render(_section_size(elf, m.producer.args["section"]))
            if size != m.text:
                expected.append(f"{m.page}:{m.line}: figure {m.spec}: the page says {m.text}, "
                                f"the build gives {size}")
    assert any(".rodata" in line for line in expected)      # the string moved .rodata
    said = []
    with pytest.raises(SeedfwError) as err:
        golden_check(planted, say=said.append)
    assert said == expected
    assert err.value.line() == (
        f"golden: {len(expected)} of {len(found)} figures disagree with the builds in "
        f"{planted} (invoke docs --golden {planted} --regenerate writes the builds' values)")
