"""The emulated memory-traffic counter: seedfw's QEMU TCG plugin (firmware/qemu-plugin/) and
seedfw.counters.emulated, which gives it the board's regions and the build's phases.

Fast tests: a hand-written guest with known traffic (tests/data/traffic_guest/guest.S), built
with the cross gcc and run on QEMU virt, must be counted exactly. Slow tests boot the real
qemu-aarch64 chain (TF-A → U-Boot → payload) with the counter.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from seedfw import boards
from seedfw.counters import emulated, plugin_build
from seedfw.errors import SeedfwError


GUEST = Path(__file__).parent / "data" / "traffic_guest" / "guest.S"
DRAM_BYTES, FLASH_BYTES, STORE_BYTES = 40000, 777, 1024


@pytest.fixture(scope="session")
def plugin(tmp_path_factory) -> Path:
    """The plugin built the way the build builds it (pinned header, same compile)."""
    work = tmp_path_factory.mktemp("qemu-plugin")
    plugin_build.header(work / "include", progress=lambda m: None)
    return plugin_build.compile_plugin(work / "include", work / plugin_build.PLUGIN_NAME)


def build_guest(tmp: Path, strip: bool = False) -> tuple[Path, Path]:
    elf, binary = tmp / "guest.elf", tmp / "guest.bin"
    subprocess.run(["aarch64-linux-gnu-gcc", "-nostdlib", "-static", "-Wl,-Ttext=0",
                    "-Wl,--build-id=none", f"-DDRAM_BYTES={DRAM_BYTES}",
                    f"-DFLASH_BYTES={FLASH_BYTES}", f"-DSTORE_BYTES={STORE_BYTES}",
                    "-o", elf, GUEST], check=True)
    if strip:
        subprocess.run(["aarch64-linux-gnu-strip", "--strip-all", elf], check=True)
    subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", elf, binary], check=True)
    return elf, binary


def run_guest(plugin: Path, tmp: Path, phases) -> dict:
    """Boot the guest under the plugin with qemu-aarch64's memory map; the plugin's raw JSON."""
    board = boards.get("qemu-aarch64")
    out = tmp / "counts.json"
    arg = emulated.plugin_arg(board, phases, [], None, out, plugin)
    res = subprocess.run(["qemu-system-aarch64", "-machine", "virt", "-cpu", "cortex-a57",
                          "-m", "1024", "-nographic", "-nic", "none", "-bios", tmp / "guest.bin",
                          *emulated.ICOUNT, "-plugin", arg],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(out.read_text())


def test_known_guest_counted_exactly(plugin, tmp_path):
    elf, _ = build_guest(tmp_path)
    phase, _syms = emulated._elf_phase("guest", elf)
    assert phase.missing is None and (phase.start, phase.end) == (0, 0x50)
    raw = run_guest(plugin, tmp_path, [phase])
    (guest,) = raw["phases"]
    r = guest["regions"]
    assert guest["entered"] is True
    assert r["dram"] == {"loads": DRAM_BYTES // 8, "load_bytes": DRAM_BYTES,
                         "stores": STORE_BYTES // 4, "store_bytes": STORE_BYTES}
    assert r["secure-flash"] == {"loads": FLASH_BYTES, "load_bytes": FLASH_BYTES,
                                 "stores": 0, "store_bytes": 0}
    # code fetches are not data accesses: nothing else was read or written anywhere
    others = {k: v for k, v in r.items() if k not in ("dram", "secure-flash")}
    assert all(not any(v.values()) for v in others.values()), others
    # 3 + 3*5000 (DRAM loop) + 2 + 3*777 (flash) + 2 + 3*256 (stores) + 3 up to the hvc; the
    # last block (hvc) counts its instructions at entry
    assert guest["insns"] == 3 + 3 * 5000 + 2 + 3 * 777 + 2 + 3 * 256 + 3
    assert not any(v["loads"] or v["stores"] for v in raw["other"]["regions"].values())


def test_guest_without_symbols_reported_not_merged(plugin, tmp_path):
    elf, _ = build_guest(tmp_path, strip=True)
    phase, syms = emulated._elf_phase("guest", elf)
    assert syms is None and phase.missing == "guest.elf has no symbols (stripped)"
    raw = run_guest(plugin, tmp_path, [phase])
    # the phase is not passed to the plugin: its traffic is "other", never another phase's
    assert raw["phases"] == []
    assert raw["other"]["regions"]["dram"]["load_bytes"] == DRAM_BYTES


def test_plugin_rejects_bad_arguments(plugin, tmp_path):
    res = subprocess.run(["qemu-system-aarch64", "-machine", "none", "-display", "none", "-S",
                          "-monitor", "none", "-plugin",
                          f"file={plugin},out={tmp_path}/x.json,phase=bl1:0x10:0x5"],
                         capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode != 0
    assert "seedfw-traffic: bad argument 'phase=bl1:0x10:0x5'" in res.stderr


def test_doctor_check_loads_plugin(plugin):
    ok, line = plugin_build.check_installed(plugin)
    assert ok, line
    assert line.startswith("QEMU 7.2.") and line.endswith("loads the plugin (API 1)")
    ok, line = plugin_build.check_installed(Path("/bin/true"))
    assert not ok and "cannot dynamically load" in line


def test_regions_need_a_kind(tmp_path):
    import dataclasses
    rk = boards.get("rk3588")
    # no region of rk3588's own map has a kind: without its qemu_os section nothing to count by
    bare = dataclasses.replace(rk, raw={k: v for k, v in rk.raw.items() if k != "qemu_os"})
    with pytest.raises(SeedfwError, match="no memory region has a 'kind'"):
        emulated.regions(bare)


def test_dma_from_trace(tmp_path):
    trace = tmp_path / "t.log"
    trace.write_text("virtio_blk_handle_read vdev 0x1 req 0x2 sector 0 nsectors 1\n"
                     "12@34.5:virtio_blk_handle_read vdev 0x1 req 0x3 sector 2 nsectors 32\n"
                     "virtio_blk_handle_write vdev 0x1 req 0x4 sector 9 nsectors 2\n"
                     "garbage line\n")
    assert emulated.dma(trace) == {"reads": 2, "read_bytes": 33 * 512, "writes": 1,
                                   "write_bytes": 1024}


# --- the real chain (slow) -------------------------------------------------------------------

def counted_run(build, tag: str) -> dict:
    from seedfw.run import payload as qemu

    board = boards.get("qemu-aarch64")
    out = Path(build.outdir) / "counters" / f"emulated-{tag}.json"
    qemu.run(board, build.outdir, timeout=120, echo=lambda s: None,
             extra_args=emulated.qemu_args(board, build.outdir, out))
    return emulated.collect(board, build.outdir, out, "run")


def deterministic_part(doc: dict) -> dict:
    """Per-phase counts without the two parts that are documented to vary."""
    return {name: {"instructions": p["instructions"], "regions": p["regions"]}
            for name, p in doc["readings"]["phases"].items() if name != "after_stop"}


@pytest.mark.slow
def test_chain_phases_deterministic_and_match_elfs(qemu_aarch64_build):
    docs = [counted_run(qemu_aarch64_build, f"t{i}") for i in range(3)]
    parts = [deterministic_part(d) for d in docs]
    assert parts[0] == parts[1] == parts[2]
    doc = docs[0]
    assert doc["provenance"]["source"] == "emulated"
    assert doc["provenance"]["how"].startswith("QEMU 7.2.") and \
        doc["provenance"]["how"].endswith("-icount shift=0: CPU loads/stores by region and "
                                          "phase; device DMA from trace events")
    declared = {p["name"]: p for p in doc["settings"]["phases_declared"]}
    assert [n for n, p in declared.items() if p["ran"]] == \
        ["bl1", "bl2", "bl31", "u-boot", "u-boot-relocated", "payload"]
    # U-Boot's relocation offset was learned, page-aligned, into DRAM's top
    off = int(declared["u-boot-relocated"]["relocation_offset"], 16)
    assert off % 0x1000 == 0 and 0x60000000 + off > 0x70000000
    ph = doc["readings"]["phases"]
    images = Path(qemu_aarch64_build.outdir) / "images"
    bl31 = (images / "bl31-lz4.bin") if (images / "bl31-lz4.bin").is_file() else images / "bl31.bin"
    bl33 = (images / "u-boot.bin").stat().st_size
    # BL2 reads BL31 and BL33 (U-Boot) from the FIP in flash: at least those bytes, plus the
    # FIP's table of contents and nothing near a second copy
    flash = ph["bl2"]["regions"]["secure-flash"]["load_bytes"]
    assert bl31.stat().st_size + bl33 <= flash < bl31.stat().st_size + bl33 + 64 * 1024
    # BL1 runs from flash and reads BL2 from it; the payload never touches flash
    assert ph["bl1"]["regions"]["secure-flash"]["load_bytes"] >= (images / "bl2.bin").stat().st_size
    assert "secure-flash" not in ph["payload"]["regions"]
    assert ph["other"]["instructions"] == 0
    # device DMA: the firmware FIT (payload + package) came from the virtio disk
    fit = (images / "qemu-aarch64.itb").stat().st_size
    assert doc["readings"]["dma"]["virtio-blk"]["read_bytes"] >= fit


@pytest.mark.slow
def test_stripped_uboot_reported_as_such(qemu_aarch64_build, tmp_path):
    """A copy of the build whose u-boot.elf has no symbols: both U-Boot phases say so and
    their blocks are counted as "other" rather than merged into a neighbour."""
    from seedfw.run import payload as qemu

    out = tmp_path / "out"
    shutil.copytree(qemu_aarch64_build.outdir, out, symlinks=True)
    subprocess.run(["aarch64-linux-gnu-strip", "--strip-all", out / "images" / "u-boot.elf"],
                   check=True)
    board = boards.get("qemu-aarch64")
    counted = out / "counters" / "emulated-run.json"
    qemu.run(board, out, timeout=120, echo=lambda s: None,
             extra_args=emulated.qemu_args(board, out, counted))
    doc = emulated.collect(board, out, counted, "run")
    declared = {p["name"]: p for p in doc["settings"]["phases_declared"]}
    assert declared["u-boot"]["missing"] == "u-boot.elf has no symbols (stripped)"
    assert declared["u-boot-relocated"]["missing"] == "u-boot.elf has no symbols (stripped)"
    assert doc["readings"]["phases"]["other"]["instructions"] > 1_000_000
    assert declared["payload"]["ran"] and declared["bl31"]["ran"]


@pytest.mark.slow
def test_report_shows_phase_table_and_plot(qemu_aarch64_build, tmp_path):
    """The report of a counted run: Markdown table rows with the measured (emulated) kind, and
    an HTML page whose inline SVG plot renders in headless Chromium (when installed)."""
    from seedfw.report import build_report, write_report

    counted_run(qemu_aarch64_build, "report")
    report = build_report(qemu_aarch64_build.outdir, board="qemu-aarch64")
    sec = report["bandwidth"]["emulated"]
    assert sec["available"]
    item = next(i for i in sec["items"] if i["source"] == "emulated-report.json")
    assert item["provenance"]["source"] == "emulated"
    rows = {r["phase"]: r for r in item["rows"]}
    assert rows["bl2"]["status"] == "ran" and rows["bl2"]["flash.load_bytes"] > 0
    paths = write_report(report, tmp_path)
    md = paths["md"].read_text()
    assert "### Memory traffic per boot phase (measured, emulated)" in md
    assert "kind: measured (emulated in QEMU 7.2." in md
    assert "emulated time is not board time" in md and "GB/s) is derived" in md
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no headless Chromium on this machine")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          paths["html"].as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    i = dom.index('id="plot-traffic-emulated-report"')
    figure = dom[i:dom.index("</figure>", i)]
    assert "<svg" in figure and "u-boot-relocated" in figure and "<rect" in figure


# --- the agent's perf PMU windows (live path; exercised in QEMU by the OS boot) ---------------

def test_agent_names_the_kernel_option_of_an_absent_pmu(tmp_path):
    """Negative control on the host (no rockchip_ddr PMU here): one line naming the option."""
    from seedfw.paths import FIRMWARE_DIR

    work = tmp_path / "agent"
    shutil.copytree(FIRMWARE_DIR / "agent", work / "agent")
    for d in ("common", "include"):
        shutil.copytree(FIRMWARE_DIR / d, work / d)
    subprocess.run(["make", "-s", "-C", work / "agent", "CC=gcc"], check=True)
    pkg = tmp_path / "not-a-package.bin"         # the perf windows come first either way
    pkg.write_bytes(b"\0" * 64)
    res = subprocess.run([work / "agent" / "seedfw-agent", "--perf",
                          "rockchip_ddr/read-bytes,write-bytes,cycles/CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI",
                          "--file", pkg], capture_output=True, text=True, timeout=30)
    lines = res.stdout.splitlines()
    assert lines[0] == ("agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs "
                        "CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)")
    assert lines[-1].startswith("agent: FAILED") and res.returncode == 1
    bad = subprocess.run([work / "agent" / "seedfw-agent", "--perf", "nonsense", "--file", pkg],
                         capture_output=True, text=True, timeout=30)
    assert bad.stdout.splitlines()[0] == ("agent: perf bad spec 'nonsense' (want "
                                          "PMU/EVENT,EVENT/KCONFIG)")


def test_perf_lines_parsed_into_a_document():
    from seedfw.counters import perf_live

    lines = ["agent: perf armv8_pmuv3_0 window=idle ns=100000000 cpu_cycles=1200 inst_retired=900",
             "agent: perf armv8_pmuv3_0 window=verify ns=5000 cpu_cycles=77 inst_retired=66",
             "agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs "
             "CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)", "agent: ok"]
    doc = perf_live.AgentPerfCounters(boards.get("qemu-aarch64"), emulated=True).document_from(lines)
    assert doc["provenance"]["source"] == "emulated"
    assert doc["readings"]["windows"]["verify"]["armv8_pmuv3_0"] == \
        {"ns": 5000, "cpu_cycles": 77, "inst_retired": 66}
    assert doc["settings"]["absent"] == {"rockchip_ddr": "no PMU of that name: the kernel needs "
                                                         "CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI"}
    live = perf_live.AgentPerfCounters(boards.get("rk3588"), emulated=False).document_from(lines)
    assert live["provenance"]["source"] == "live"
    assert perf_live.AgentPerfCounters(boards.get("rk3588"), False).document_from(["x"]) is None


def test_tune_objective_sums_dram_loads_of_the_phases_only():
    from seedfw.tune import objectives

    doc = {"settings": {"regions": [{"name": "dram", "kind": "dram"},
                                    {"name": "secure-flash", "kind": "flash"}]},
           "readings": {"phases": {
               "bl2": {"regions": {"dram": {"load_bytes": 100}, "secure-flash": {"load_bytes": 7}}},
               "payload": {"regions": {"dram": {"load_bytes": 23}}},
               "other": {"regions": {"dram": {"load_bytes": 1000}}},
               "after_stop": {"regions": {"dram": {"load_bytes": 5000}}}}}}
    assert objectives.dram_read_bytes(doc) == 123
    (o,) = objectives.parse("dram-read", boards.get("qemu-aarch64"))
    assert o.counted and o.unit == "bytes" and "emulated" in o.how


@pytest.mark.slow
def test_os_boot_counted_with_linux_phases_and_agent_perf(os_build):
    """The OS boot (TF-A → U-Boot → Linux → agent) counted: the firmware phases, then Linux
    and user space by address space; the agent reads QEMU's PMUv3 by name over its windows and
    names the kernel option of the absent rockchip_ddr PMU (the negative control)."""
    from seedfw.run import os_boot as osboot
    from seedfw.counters import perf_live

    result = os_build
    board = boards.get("qemu-aarch64")
    out = Path(result.outdir)
    counted = emulated.default_file(out, "boot")
    booted = osboot.boot(board, out, timeout=600, echo=lambda s: None,
                         extra_args=emulated.qemu_args(board, out, counted, os_boot=True))
    doc = emulated.collect(board, out, counted, "boot")
    declared = {p["name"]: p for p in doc["settings"]["phases_declared"]}
    assert [n for n, p in declared.items() if p["ran"]] == \
        ["bl1", "bl2", "bl31", "u-boot", "u-boot-relocated", "linux", "userspace"]
    assert declared["linux"]["by"] == "address space"
    ph = doc["readings"]["phases"]
    assert ph["linux"]["instructions"] > 100_000_000 and ph["userspace"]["instructions"] > 0
    assert ph["linux"]["regions"]["dram"]["load_bytes"] > 0
    assert "secure-flash" not in ph["linux"]["regions"]       # Linux never reads the flash
    perf = perf_live.AgentPerfCounters(board, emulated=True).document_from(booted.lines)
    assert perf["settings"]["absent"] == {
        "rockchip_ddr": "no PMU of that name: the kernel needs CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI"}
    windows = perf["readings"]["windows"]
    (pmu,) = windows["verify"]
    assert pmu.startswith("armv8_pmuv3")
    assert windows["verify"][pmu]["inst_retired"] > 0 and windows["idle"][pmu]["ns"] >= 100_000_000


def test_agent_log_handed_in_is_recorded_not_live(tmp_path):
    """Provenance is earned (tests/test_hostile_agentlog.py has the capture side): a log file
    seedfw did not capture is recorded (user-supplied log), whatever its first line says."""
    from seedfw.counters import perf_live

    body = ["[    1.0] Linux booting", "agent: perf rockchip_ddr window=verify ns=2000000 "
            "read-bytes=123456 write-bytes=789 cycles=42", "agent: ok"]
    board_log = tmp_path / "serial.log"
    board_log.write_text("\n".join(body) + "\n")
    doc = perf_live.from_log(boards.get("rk3588"), board_log)
    assert doc["provenance"]["source"] == "recorded" and doc["provenance"]["user_supplied"]
    assert doc["readings"]["windows"]["verify"]["rockchip_ddr"] == \
        {"ns": 2000000, "read-bytes": 123456, "write-bytes": 789, "cycles": 42}
    qemu_log = tmp_path / "os-boot.log"
    qemu_log.write_text("$ qemu-system-aarch64 -machine virt\n" + "\n".join(body) + "\n")
    assert perf_live.from_log(boards.get("qemu-aarch64"), qemu_log)["provenance"]["label"] == \
        "recorded (user-supplied log)"
    empty = tmp_path / "empty.log"
    empty.write_text("nothing\n")
    with pytest.raises(SeedfwError, match="no 'agent: perf' lines"):
        perf_live.from_log(boards.get("rk3588"), empty)
