"""seedfw on a labgrid farm (seedfw.lab, issue 31): what is generated from board data (fast),
the ROCK 5B env in labgrid's own loader (fast), and a real local coordinator + exporter on
127.0.0.1 running the HIL suite against the QEMU places, refusing a held place with the
holder's name, releasing after Ctrl-C and after a SIGKILL (slow). The HIL suite's agent checks
refuse a tampered console (fast: the negative control of what the slow runs assert)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cli import ROOT, invoke, one_error_line
from seedfw import boards
from seedfw.errors import SeedfwError
from hil.agent_checks import agent_lines, opp_check, perf_check
from seedfw.lab import client, generate

labgrid = pytest.importorskip("labgrid")


def fake_output(tmp_path: Path, board: str, files: dict[str, dict]) -> Path:
    """A build output with a manifest listing `files` {relpath: declared} (tiny contents)."""
    out = tmp_path / board
    arts = []
    for rel, declared in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(b"x" * 16)
        arts.append({"name": Path(rel).name, "path": rel, "declared": declared})
    flash = {b: [rel] for rel, d in files.items() for b in d.get("flash", [])}
    (out / "manifest.json").write_text(json.dumps({"artifacts": arts, "flash": flash}))
    return out


def rk3588_outputs(tmp_path):
    rk = fake_output(tmp_path, "rk3588", {
        "images/rk3588-disk.img": {"role": "disk", "flash": ["rockusb", "sdcard"]},
        "images/rk3588_spl_loader_v1.18.113.bin": {"role": "loader"}})
    mcu = fake_output(tmp_path, "mps2-an385", {"images/mcu.elf": {"role": "mcu", "flash": ["pyocd"]}})
    return {"rk3588": rk, "mps2-an385": mcu}


# -- generation (fast) ------------------------------------------------------------------------------
def test_every_board_has_a_place_and_the_qemu_places_export_the_bench_host():
    ps = {p.name: p for p in generate.places()}
    assert {p.board for p in ps.values()} == set(boards.names())
    assert {n: p.qemu for n, p in ps.items()} == {
        "qemu-aarch64": "firmware", "mps2-an385": "bare", "rk3588-virt": "os", "rock5b": None,
        "rock5a": None}
    exp = generate.exporter(list(ps.values()), host={"address": "bench1", "username": "ci"})
    for name in ("qemu-aarch64", "mps2-an385", "rk3588-virt"):
        assert exp[name] == {"host": {"cls": "NetworkService", "address": "bench1",
                                      "username": "ci"}}
    assert exp["rock5b"]["loader"] == {"cls": "RKUSBLoader",
                                       "match": {"ID_VENDOR_ID": "2207", "ID_MODEL_ID": "350b"}}
    assert exp["rock5b"]["console"]["speed"] == 1500000
    assert exp["rock5b"]["mcu-probe"]["cls"] == "USBDebugger"


def test_the_env_names_images_by_the_manifests_keys(tmp_path):
    out = fake_output(tmp_path, "qemu-aarch64", {
        "images/qemu_fw.bios": {"role": "bios", "flash": ["qemu"]},
        "images/qemu-aarch64-disk.img": {"role": "disk", "flash": ["rockusb"]}})
    env = generate.environment(generate.place("qemu-aarch64"), {"qemu-aarch64": out},
                               coordinator="127.0.0.1:1")
    assert env["images"] == {"manifest": str(out / "manifest.json"),
                             "qemu_fw.bios": str(out / "images/qemu_fw.bios"),
                             "role-bios": str(out / "images/qemu_fw.bios"),
                             "qemu-aarch64-disk.img": str(out / "images/qemu-aarch64-disk.img"),
                             "role-disk": str(out / "images/qemu-aarch64-disk.img"),
                             "flash-qemu": str(out / "images/qemu_fw.bios"),
                             "flash-rockusb": str(out / "images/qemu-aarch64-disk.img")}
    main = env["targets"]["main"]
    assert main["resources"] == [{"RemotePlace": {"name": "qemu-aarch64"}}]
    flash = next(d["SeedfwFlashDriver"] for d in main["drivers"] if "SeedfwFlashDriver" in d)
    assert flash["image"] == "flash-qemu"                 # a key, never a path
    assert env["options"] == {"coordinator_address": "127.0.0.1:1"}


def test_a_manifest_path_out_of_the_output_is_one_error(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"artifacts": [{"name": "x", "path": "../../etc/passwd"}]}))
    with pytest.raises(SeedfwError) as err:
        generate.image_keys(tmp_path)
    # the one manifest reader's line (seedfw.manifest), whoever asks
    assert err.value.line() == (f"{tmp_path.resolve() / 'manifest.json'}: artifacts[0].path: must "
                                "be a path relative to the output directory, without '..'")


def test_a_bad_lab_field_is_refused_by_the_board_schema(tmp_path):
    src = (ROOT / "board/qemu-aarch64/board.yaml").read_text()
    bad = tmp_path / "board.yaml"
    bad.write_text(src.replace("qemu: firmware", "qemu: floppy"))
    with pytest.raises(SeedfwError) as err:
        boards.load_file(bad)
    assert "lab.places[0].qemu" in err.value.line() and "floppy" in err.value.line()


@pytest.mark.parametrize("power, resource, driver", [
    ({"driver": "usb-relay", "match": {"ID_SERIAL_SHORT": "relay-7"}, "index": 2},
     ("HIDRelay", {"index": 2}), "DigitalOutputPowerDriver"),
    ({"driver": "pdu", "host": "pdu.bench", "pdu": "rack1", "index": 3},
     ("PDUDaemonPort", {"host": "pdu.bench", "pdu": "rack1", "index": 3}), "PDUDaemonDriver"),
    ({"driver": "external"}, None, "ExternalPowerDriver"),
], ids=["usb-relay", "pdu", "external"])
def test_each_power_driver_board_data_can_name_loads_in_labgrid(tmp_path, power, resource,
                                                                   driver):
    """A real-board place's power as board data names it (lab.places[].power.driver): the
    generated env loads in labgrid's own loader with labgrid's resource and driver for it; the
    external one really runs its commands (no shell: labgrid splits them)."""
    from labgrid import Environment

    marker = tmp_path / "powered"
    if power["driver"] == "external":
        power = dict(power, on=f"touch {marker}", off=f"rm {marker}")
    p = generate.Place("bench-b", "rk3588", dict(generate.place("rock5b").spec, power=power))
    envfile = generate.write_yaml(tmp_path / "b.yaml", generate.environment(
        p, rk3588_outputs(tmp_path), local=True), "test")
    target = Environment(str(envfile)).get_target("main")
    got = {r.name: r for r in target.resources}
    if resource is None:
        assert "power" not in got
    else:
        cls, params = resource
        assert type(got["power"]).__name__ == cls
        assert {k: getattr(got["power"], k) for k in params} == params
    drv = next(d for d in target.drivers if d.name == "power")
    assert type(drv).__name__ == driver
    assert target.get_driver("SeedfwStrategy", activate=False).power is drv
    if driver == "ExternalPowerDriver":
        target.activate(drv)
        drv.on()
        assert marker.is_file()
        drv.off()
        assert not marker.exists()
    target.cleanup()


def test_the_rock5b_env_loads_in_labgrids_own_loader_with_every_driver_resolved(tmp_path):
    """The real-board template as labgrid reads it: its Environment loads the generated file
    (imports seedfw.lab.drivers), every resource and driver is made and bound — the USB serial
    console, the maskrom loader, the power driver board data names, the MCU's SWD probe."""
    from labgrid import Environment

    p = generate.place("rock5b")
    envfile = generate.write_yaml(tmp_path / "rock5b.yaml",
                                  generate.environment(p, rk3588_outputs(tmp_path), local=True),
                                  "test")
    target = Environment(str(envfile)).get_target("main")
    assert sorted((type(r).__name__, r.name) for r in target.resources) == [
        ("RKUSBLoader", "loader"), ("USBDebugger", "mcu-probe"), ("USBSerialPort", "console")]
    made = sorted((type(d).__name__, d.name or "") for d in target.drivers)
    assert made == [("ManualPowerDriver", "power"), ("SeedfwFlashDriver", "soc"),
                    ("SeedfwMCUFlashDriver", "mcu"), ("SeedfwStrategy", ""),
                    ("SerialDriver", "console")]
    soc = target.get_driver("SeedfwFlashDriver", name="soc", activate=False)
    assert soc.loader.name == "loader" and soc.board == "rk3588"
    mcu = target.get_driver("SeedfwMCUFlashDriver", name="mcu", activate=False)
    assert mcu.probe.name == "mcu-probe" and mcu.board == "mps2-an385"
    # what seedfw's runners get: the MCU's pyOCD probe is the SWD adapter the place matches
    assert mcu.runner_args() == {"output": str(tmp_path / "mps2-an385"),
                                 "probe": "cmsisdap:CHANGE-ME-swd"}
    assert soc.runner_args() == {"output": str(tmp_path / "rk3588")}
    strategy = target.get_driver("SeedfwStrategy", activate=False)
    assert strategy.flash is soc and strategy.done == "^agent: (ok|FAILED)"
    target.cleanup()
    # and the remote form names only the place: the resources come from the exporter
    remote = generate.environment(p, rk3588_outputs(tmp_path / "r"))
    assert remote["targets"]["main"]["resources"] == [{"RemotePlace": {"name": "rock5b"}}]


def test_the_rk3588_virt_env_boots_the_disk_image_by_key_with_nothing_to_flash(tmp_path):
    """The OS-in-QEMU-virt place in labgrid's loader: the QEMU driver in mode os takes the disk
    image by its manifest key, and the strategy has no flash driver to walk through."""
    from labgrid import Environment

    p = generate.place("rk3588-virt")
    envfile = generate.write_yaml(tmp_path / "rk3588-virt.yaml",
                                  generate.environment(p, rk3588_outputs(tmp_path), local=True),
                                  "test")
    target = Environment(str(envfile)).get_target("main")
    qemu = target.get_driver("SeedfwQEMUDriver", activate=False)
    assert (qemu.board, qemu.mode, qemu.image) == ("rk3588", "os", "role-disk")
    assert Path(target.env.config.get_image_path(qemu.image)) == \
        tmp_path / "rk3588/images/rk3588-disk.img"
    strategy = target.get_driver("SeedfwStrategy", activate=False)
    assert strategy.flash is None and strategy.power is qemu and strategy.console is qemu
    assert re.search(strategy.boot, "[    0.000000] Booting Linux on physical CPU 0x0 [0x414fd0b1]")
    assert re.search(strategy.done, "agent: ok")
    target.cleanup()


# What rk3588's agent printed booted on QEMU virt (invoke boot --board rk3588, 2026-12-03).
AGENT = """\
agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI)
agent: perf armv8_cortex_a76 absent (no PMU of that name: the kernel needs CONFIG_ARM_PMUV3)
agent: perf armv8_pmuv3 inst_retired unavailable (no /sys/bus/event_source/devices/armv8_pmuv3/events/inst_retired)
agent: perf armv8_pmuv3 window=idle ns=101330080 cpu_cycles=101667807
agent: pkg: 6 entries, 3410240 bytes, header crc ok
agent: dvfs dvfs sha256 ok
agent: dvfs: 6 domains, 39 opps, profile=balanced, crc ok
agent: perf armv8_pmuv3 window=verify ns=95935360 cpu_cycles=96007376
agent: dt opp: cpu-little 5 opps match dvfs table
agent: dt opp: cpu-big0 7 opps match dvfs table
agent: dt opp: cpu-big1 7 opps match dvfs table
agent: dt opp: gpu 8 opps match dvfs table
agent: dt opp: npu 8 opps match dvfs table
agent: dt opp: ddr 4 opps match dvfs table
agent: ok""".splitlines()


def _tampered(drop: str = "", add: str = "", swap: tuple[str, str] = ("", "")) -> list[str]:
    lines = [ln.replace(*swap) if swap[0] else ln for ln in AGENT if not (drop and drop in ln)]
    return lines + ([add] if add else [])


@pytest.mark.parametrize("lines, why", [
    (_tampered(drop="dt opp: ddr "), "5 'dt opp' lines"),
    (_tampered(swap=("gpu 8 opps match dvfs table", "gpu mismatch: 7 opp nodes, dvfs table "
                                                    "has 8")), "mismatch"),
    (_tampered(drop="dt opp:"), "no 'dt opp' line"),
], ids=["a-domain-missing", "a-mismatch", "no-check"])
def test_the_hil_opp_check_refuses_a_tampered_console(lines, why):
    assert opp_check(agent_lines(AGENT)) == {"cpu-little": 5, "cpu-big0": 7, "cpu-big1": 7,
                                             "gpu": 8, "npu": 8, "ddr": 4}
    with pytest.raises(AssertionError, match=why):
        opp_check(agent_lines(lines))


@pytest.mark.parametrize("lines, why", [
    (_tampered(add="agent: perf rockchip_ddr window=idle ns=5 read-bytes=64"),
     "rockchip_ddr said absent, yet read"),
    (_tampered(swap=("CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI", "CONFIG_NOPE")), "CONFIG_NOPE"),
    (_tampered(drop="window=verify"), "armv8_pmuv3: windows"),
    (_tampered(swap=("cpu_cycles=96007376", "cpu_cycles=0")), "verify"),
    (_tampered(drop="perf armv8_cortex_a76 absent"), "armv8_cortex_a76: windows"),
], ids=["window-on-an-absent-pmu", "wrong-kconfig", "a-window-missing", "a-zero-count",
        "neither-read-nor-absent"])
def test_the_hil_perf_check_refuses_a_tampered_console(lines, why):
    specs = boards.get("rk3588").raw["perf"]
    assert perf_check(specs, AGENT) == {"rockchip_ddr": "absent", "armv8_cortex_a76": "absent",
                                        "armv8_pmuv3": "idle,verify"}
    with pytest.raises(AssertionError, match=why):
        perf_check(specs, lines)


def test_without_a_place_nothing_is_acquired(monkeypatch):
    monkeypatch.setattr(client, "run_client", lambda *a, **k: pytest.fail("labgrid-client ran"))
    with client.held(None, "qemu-aarch64") as h:
        assert h is None


def test_a_held_place_is_refused_naming_the_holder(monkeypatch):
    said = "labgrid-client: Error: Place rock5b is already acquired by bench2/alice. To work " \
           "simultaneously, alice can execute 'labgrid-client -p rock5b allow vm/bob' on bench2.\n"
    monkeypatch.setattr(client, "run_client", lambda place, *a, **k: subprocess.CompletedProcess(
        a, 1, "", said))
    with pytest.raises(SeedfwError) as err:
        client.acquire("rock5b")
    assert err.value.line() == ("--place: place 'rock5b' is held by bench2/alice (ask them, or "
                                "wait: labgrid-client -p rock5b show)")


def test_invoke_lab_env_and_exporter_write_the_files(tmp_path):
    proc = invoke("lab", "exporter", "--to", tmp_path / "exp.yaml")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "exp.yaml").read_text()
    assert text.startswith("## labgrid-exporter config") and "RKUSBLoader" in text
    bad = invoke("lab", "env", "--board", "qemu-aarch64", "--place", "nosuch")
    assert one_error_line(bad) == ("error: board/qemu-aarch64/board.yaml: lab.places: board "
                                   "'qemu-aarch64' has no place 'nosuch' (its places: "
                                   "qemu-aarch64)")


# -- a real local farm (slow) -----------------------------------------------------------------------
BUILDS = {"qemu-aarch64": "qemu_aarch64_build", "mps2-an385": "mps2_build",
          "rk3588": "rk3588_build"}     # tests/conftest.py's session builds


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    from seedfw.lab.farm import LocalFarm

    tmp = tmp_path_factory.mktemp("farm")
    with LocalFarm(tmp / "farm", [p for p in generate.places() if p.qemu]) as f:
        f.tmp = tmp
        yield f


def _out(farm, request, board: str) -> Path:
    """The farm's copy of a board's session build (made once: a test builds only its boards)."""
    from seedfw.lab.farm import copy_build

    dest = farm.tmp / "out" / board
    if not dest.exists():
        copy_build(request.getfixturevalue(BUILDS[board]).outdir, dest)
    return dest


def _env(farm, request, place: str, tmp: Path) -> Path:
    p = generate.place(place)
    return generate.write_yaml(tmp / f"{place}.yaml", generate.environment(
        p, {p.board: _out(farm, request, p.board)}, coordinator=farm.address), "test")


def _hold_as(user: str, place: str, farm) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import time
        from seedfw.lab import client
        with client.held({place!r}, None, {farm.address!r}):
            print("held", flush=True)
            time.sleep(120)
    """)
    env = dict(os.environ, LG_USERNAME=user, PYTHONPATH=str(ROOT / "tools"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _free_within(place: str, farm, seconds: float) -> float:
    start = time.monotonic()
    while client.holder(place, farm.address):
        assert time.monotonic() - start < seconds, f"{place} still held after {seconds} s"
        time.sleep(0.2)
    return time.monotonic() - start


# each place's HIL run: (passed, the tests skipped and why, by a word of their reason)
HIL = {"qemu-aarch64": (5, {"no 'agent:' line", "not the OS agent"}),
       "mps2-an385": (3, {"raw image", "DVFS table", "not the OS agent"}),
       "rk3588-virt": (5, {"nothing is programmed", "no stats block"})}


@pytest.mark.slow
@pytest.mark.parametrize("place", list(HIL))
def test_the_hil_suite_passes_on_the_qemu_place(farm, place, tmp_path, request):
    from seedfw.lab.farm import run_hil

    proc = run_hil(place, _env(farm, request, place, tmp_path), farm.address)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    passed, reasons = HIL[place]
    skips = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED ")]
    assert summary.startswith(f"{passed} passed, {7 - passed} skipped"), summary
    assert all(any(r in ln for ln in skips) for r in reasons), skips
    assert client.holder(place, farm.address) is None


@pytest.mark.slow
def test_flash_on_a_held_place_is_refused_with_the_holder_and_ctrl_c_releases(farm, request):
    env = dict(os.environ, LG_COORDINATOR=farm.address)
    other = _hold_as("alice", "qemu-aarch64", farm)
    try:
        proc = invoke("flash", "--board", "qemu-aarch64", "--place", "qemu-aarch64",
                      "--output", _out(farm, request, "qemu-aarch64"), env=env, timeout=120)
        holder = client.holder("qemu-aarch64", farm.address)
        assert holder.endswith("/alice")
        assert one_error_line(proc) == (f"error: --place: place 'qemu-aarch64' is held by {holder} "
                                        "(ask them, or wait: labgrid-client -p qemu-aarch64 show)")
    finally:
        other.terminate()
        other.wait(30)
    _free_within("qemu-aarch64", farm, 30)

    # free: flash and run hold it for the command and release it
    out = _out(farm, request, "qemu-aarch64")
    flashed = invoke("flash", "--board", "qemu-aarch64", "--place", "qemu-aarch64",
                     "--output", out, env=env, timeout=180)
    assert flashed.returncode == 0, flashed.stderr
    assert "-> qemu-aarch64 via qemu" in flashed.stdout
    ran = invoke("run", "--board", "qemu-aarch64", "--place", "qemu-aarch64", "--output", out,
                 "--timeout", "120", env=env, timeout=240)
    assert ran.returncode == 0 and "guest powered off" in ran.stdout, ran.stderr
    assert client.holder("qemu-aarch64", farm.address) is None

    # Ctrl-C while the place is held: `invoke console` on the halted MCU prints nothing for 120 s
    mcu_out = _out(farm, request, "mps2-an385")
    console = subprocess.Popen([sys.executable, "-m", "invoke", "console", "--board", "mps2-an385",
                                "--place", "mps2-an385", "--output", mcu_out,
                                "--timeout", "120"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while client.holder("mps2-an385", farm.address) is None:
        assert time.monotonic() < deadline and console.poll() is None, console.communicate()
        time.sleep(0.2)
    time.sleep(2)                                           # QEMU started under the hold
    console.send_signal(signal.SIGINT)
    out, err = console.communicate(timeout=60)
    assert console.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert client.holder("mps2-an385", farm.address) is None     # released before it returned


@pytest.mark.slow
def test_a_killed_client_leaves_no_place_locked(farm):
    holder = _hold_as(os.environ.get("USER", "root"), "qemu-aarch64", farm)
    holder.kill()                                            # SIGKILL: no finally runs in it
    holder.wait()
    assert _free_within("qemu-aarch64", farm, 20) < 20


@pytest.mark.slow
def test_boot_and_counters_hold_their_place_and_a_held_one_is_refused(farm, request):
    """`invoke boot --place` (the rk3588 OS on its QEMU virt place) and `invoke counters
    --place` (the MCU's): refused in one line while someone else holds the place, nothing
    booted; then each holds its place for the command and releases it."""
    env = dict(os.environ, LG_COORDINATOR=farm.address)
    rk = _out(farm, request, "rk3588")
    other = _hold_as("alice", "rk3588-virt", farm)
    try:
        proc = invoke("boot", "--board", "rk3588", "--place", "rk3588-virt", "--output", rk,
                      env=env, timeout=120)
        holder = client.holder("rk3588-virt", farm.address)
        assert holder.endswith("/alice")
        assert one_error_line(proc) == (f"error: --place: place 'rk3588-virt' is held by {holder}"
                                        " (ask them, or wait: labgrid-client -p rk3588-virt show)")
        assert "OS booted" not in proc.stdout
    finally:
        other.terminate()
        other.wait(30)
    _free_within("rk3588-virt", farm, 30)
    booted = invoke("boot", "--board", "rk3588", "--place", "rk3588-virt", "--output", rk,
                    env=env, timeout=240)
    assert booted.returncode == 0, booted.stdout[-2000:] + booted.stderr[-2000:]
    assert "OS booted (the image's own kernel, initramfs and ext4 root on QEMU virt)" \
        in booted.stdout
    assert client.holder("rk3588-virt", farm.address) is None

    mcu = _out(farm, request, "mps2-an385")
    counted = invoke("counters", "--board", "mps2-an385", "--place", "mps2-an385",
                     "--elf", mcu / "images" / "mcu.elf", "--flash-first", "--json",
                     env=env, timeout=180)
    assert counted.returncode == 0, counted.stderr[-2000:]
    values = json.loads(counted.stdout)
    assert values["provenance"]["source"] == "emulated" and values["provenance"]["machine"] == \
        "mps2-an385"                                # QEMU's counts, said as such, not a chip's
    assert values["readings"]["cycles"] > 0 and values["readings"]["bytes_read"] > 0
    assert client.holder("mps2-an385", farm.address) is None
