"""rk3588 counted in emulation: `invoke boot --board rk3588 --counters` (seedfw.run.os_virt,
seedfw.counters.emulated.virt_args) boots the image's own kernel, initramfs and ext4 root on QEMU
virt under seedfw's traffic plugin; the report shows the per-phase table, labelled emulated, with
what differs from the board. The DDR monitor's driver (rockchip_dfi, OS_MODULES_AGENT) is in the
rootfs and loaded by the agent's init script; on QEMU virt it binds to nothing and the agent
prints the rockchip_ddr PMU absent.

Fast tests need no build. The slow test reuses the session's rk3588 build (conftest.py
`rk3588_build`, never a new one) through a hard-linked copy of what a boot reads, so the
session's output directory gets no counters document that other tests would see. A second
boot of the same build repeats the rows docs/counters.md marks (DMA, PCIe) exactly and the
instruction counts within 0.1 %.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli import invoke, one_error_line
from seedfw import boards
from seedfw.counters import emulated
from seedfw.linux import modules as os_modules
from seedfw.run import os_virt

DFI_ABSENT = ("agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs "
              "CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)")


# ---- fast --------------------------------------------------------------------------------------

def test_boot_refuses_an_unbuilt_output_and_leaves_nothing(tmp_path):
    out = tmp_path / "rk"
    out.mkdir()
    p = invoke("boot", "--board", "rk3588", "--output", out, "--counters")
    assert one_error_line(p) == (f"error: {out / 'config.json'}: not built yet (run 'invoke "
                                 "build --board rk3588')")
    assert list(out.iterdir()) == []             # no log, no work dir, no counters plan


def test_boot_refuses_a_build_with_the_os_off_naming_the_symbol(tmp_path):
    out = tmp_path / "rk"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"BUILDROOT": False, "KERNEL": False}))
    p = invoke("boot", "--board", "rk3588", "--output", out)
    assert one_error_line(p) == (
        f"error: {out / 'config.json'}: CONFIG_BUILDROOT: the OS is off in this build: "
        "CONFIG_BUILDROOT=y turns it on (the board's defconfig has it; invoke build --board "
        "rk3588, or menuconfig)")
    assert sorted(x.name for x in out.iterdir()) == ["config.json"]


def test_the_counted_map_is_qemu_virts_and_the_machine_repeatable():
    rk = boards.get("rk3588")
    got = {(r.name, r.kind, r.base, r.size) for r in emulated.regions(rk)}
    assert ("dram", "dram", 0x40000000, 0x40000000) in got
    assert ("mmio", "mmio", 0x08000000, 0x06000000) in got
    # the boot package region lies inside virt's DRAM (where QEMU's loader puts it)
    r = rk.region("boot-package")
    assert 0x40000000 <= r.base and r.base + r.size <= 0x80000000
    cmd = os_virt.machine(rk)
    assert cmd[:3] == ["qemu-system-aarch64", "-machine", "virt,dtb-randomness=off"]
    assert cmd[cmd.index("-smp") + 1] == "1" and cmd[-2:] == ["-nic", "none"]
    assert set(os_virt.differs(rk)) == {"dtb", "storage", "loader", "cpu"}


def test_agent_modules_are_rootfs_only_and_follow_the_ext4_root():
    from types import SimpleNamespace

    from seedfw.buildroot import external
    rk = boards.get("rk3588")
    on = SimpleNamespace(board=rk, values={"OS_ROOT_EXT4": True, "OS_MODULES_AGENT": "rockchip_dfi"})
    assert external.agent_modules(on) == "rockchip_dfi"
    off = SimpleNamespace(board=rk, values={"OS_ROOT_EXT4": False, "OS_MODULES_AGENT": "rockchip_dfi"})
    assert external.agent_modules(off) == ""
    # the initramfs's order stays the root mount's; the agent's module is listed apart
    dep = os_modules.parse_dep("kernel/fs/ext4/ext4.ko.xz: kernel/lib/crc16.ko.xz\n"
                               "kernel/lib/crc16.ko.xz:\n"
                               "kernel/drivers/devfreq/event/rockchip-dfi.ko.xz:\n")
    none = lambda p: ([], [])                                              # noqa: E731
    root = os_modules.closure([("ext4", "OS_MODULES")], dep, set(), {}, none)
    extra = os_modules.closure([("rockchip-dfi", "OS_MODULES_AGENT"), ("crc16", "OS_MODULES_AGENT")],
                               dep, set(), {}, none)
    mods = os_modules.with_agent(root, extra)
    assert mods.order == ["crc16", "ext4"] and mods.agent == ["rockchip_dfi"]
    assert mods.files["rockchip_dfi"] == "kernel/drivers/devfreq/event/rockchip-dfi.ko.xz"


def test_rk3588_kconfig_turns_on_the_counter_and_the_agent_module(tmp_path):
    p = invoke("config", "--board", "rk3588", "--output", tmp_path / "rk")
    assert p.returncode == 0, p.stderr
    config = (tmp_path / "rk" / ".config").read_text().splitlines()
    assert "CONFIG_COUNTERS_EMULATED=y" in config
    assert 'CONFIG_OS_MODULES_AGENT="rockchip_dfi"' in config


# ---- slow: the session's rk3588 build ------------------------------------------------------------

def _linked_copy(build, dest: Path) -> Path:
    """What a boot and a report read of the build, hard-linked (no 130 MB copies)."""
    src = Path(build.outdir)
    dest.mkdir()
    for name in ("config.json", "manifest.json", ".config"):
        if (src / name).is_file():
            shutil.copyfile(src / name, dest / name)
    for sub in ("images", "host"):
        if (src / sub).is_dir():
            shutil.copytree(src / sub, dest / sub, copy_function=os.link, symlinks=True)
    return dest


@pytest.mark.slow
def test_rk3588_os_boot_counted_in_qemu_virt_and_reported(rk3588_build, tmp_path):
    from seedfw.report import build_report, write_report

    out = _linked_copy(rk3588_build, tmp_path / "rk")
    p = invoke("boot", "--board", "rk3588", "--output", out, "--counters", timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "OS booted (the image's own kernel, initramfs and ext4 root on QEMU virt)" in p.stdout
    assert "emulated, not the board: dtb: QEMU virt's own DT" in p.stdout
    log = (out / "logs" / "os-boot.log").read_text(errors="replace").splitlines()
    assert "agent: module rockchip_dfi loaded" in log
    assert DFI_ABSENT in log and "agent: ok" in log

    doc = json.loads((out / "counters" / "emulated-boot.json").read_text())
    prov = doc["provenance"]
    assert prov["source"] == "emulated" and prov["machine"] == "virt,dtb-randomness=off"
    assert prov["how"].startswith("QEMU 7.2.") and prov["cpu"] == "cortex-a76"
    assert set(prov["differs_from_board"]) == {"dtb", "storage", "loader", "cpu"}
    declared = {d["name"]: d for d in doc["settings"]["phases_declared"]}
    assert list(declared) == ["linux", "userspace"]
    assert all(d["ran"] and d["classified_by"] == "physical address" for d in declared.values())
    ph = doc["readings"]["phases"]
    for name in ("linux", "userspace"):
        assert ph[name]["instructions"] > 0 and ph[name]["regions"]["dram"]["load_bytes"] > 0
        assert "flash0" not in ph[name]["regions"]           # Linux never reads virt's flash
    assert ph["linux"]["instructions"] > 100_000_000
    # the root disk: at least the initramfs' switch_root target was read over virtio-blk
    assert doc["readings"]["dma"]["virtio-blk"]["read_bytes"] > 1 << 20

    perf = json.loads((out / "counters" / "perf-boot.json").read_text())
    assert perf["provenance"]["source"] == "emulated"
    assert perf["settings"]["absent"]["rockchip_ddr"].endswith("CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI")
    assert "armv8_cortex_a76" in perf["settings"]["absent"]          # the board's CPU PMU
    verify = perf["readings"]["windows"]["verify"]
    (pmu,) = verify
    assert pmu.startswith("armv8_pmuv3") and verify[pmu]["inst_retired"] > 0

    report = build_report(out, board="rk3588")
    sec = report["bandwidth"]["emulated"]
    assert sec["available"]
    (item,) = sec["items"]
    assert item["provenance"]["source"] == "emulated"
    rows = {r["phase"]: r for r in item["rows"]}
    assert rows["linux"]["status"] == "ran" and rows["linux"]["dram.load_bytes"] == \
        ph["linux"]["regions"]["dram"]["load_bytes"]
    md = write_report(report, tmp_path / "report")["md"].read_text()
    assert "### Memory traffic per boot phase (measured, emulated)" in md
    assert "**emulated-boot.json** (boot) — kind: measured (emulated in QEMU 7.2." in md
    assert f"| linux | ran | {ph['linux']['instructions']:,} |" in md
    assert "- differs from the board: storage: virtio_blk (OS_MODULES_EMULATION)" in md
    assert f"- absent PMU rockchip_ddr: {perf['settings']['absent']['rockchip_ddr']}" in md

    # A second boot of the same build (issue 33): the rows docs/counters.md marks repeat
    # exactly; the rest moves with the host's disk completions, within a small tolerance.
    again = _linked_copy(rk3588_build, tmp_path / "rk-again")
    counted = emulated.default_file(again, "boot")
    os_virt.boot(boards.get("rk3588"), again, timeout=900, echo=lambda s: None,
                 extra_args=emulated.virt_args(boards.get("rk3588"), again, counted))
    doc2 = emulated.collect(boards.get("rk3588"), again, counted, "boot")
    assert doc2["readings"]["dma"] == doc["readings"]["dma"]
    ph2 = doc2["readings"]["phases"]
    for region in ("pcie-ecam-high", "pcie-mmio"):
        assert ph2["linux"]["regions"][region] == ph["linux"]["regions"][region]
    for name in ("linux", "userspace"):
        a, b = ph[name]["instructions"], ph2[name]["instructions"]
        assert abs(a - b) <= a * 0.001, (name, a, b)        # 0.04 % seen here; 0.1 % allowed

