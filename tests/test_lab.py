"""seedfw on a labgrid farm (seedfw.lab, issue 31): what is generated from board data (fast),
the ROCK 5B env in labgrid's own loader (fast), and a real local coordinator + exporter on
127.0.0.1 running the HIL suite against the QEMU places, refusing a held place with the
holder's name, releasing after Ctrl-C and after a SIGKILL (slow)."""

from __future__ import annotations

import json
import os
import shutil
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
    assert (ps["qemu-aarch64"].qemu, ps["mps2-an385"].qemu, ps["rock5b"].qemu) == \
        ("firmware", "bare", None)
    exp = generate.exporter(list(ps.values()), host={"address": "bench1", "username": "ci"})
    assert exp["qemu-aarch64"] == {"host": {"cls": "NetworkService", "address": "bench1",
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
def _copy(build, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copytree(build.outdir / "images", dest / "images")
    shutil.copy(build.outdir / "manifest.json", dest)
    return dest


@pytest.fixture(scope="module")
def farm(tmp_path_factory, qemu_aarch64_build, mps2_build):
    from seedfw.lab.farm import LocalFarm

    tmp = tmp_path_factory.mktemp("farm")
    outs = {"qemu-aarch64": _copy(qemu_aarch64_build, tmp / "out" / "qemu-aarch64"),
            "mps2-an385": _copy(mps2_build, tmp / "out" / "mps2-an385")}
    with LocalFarm(tmp / "farm", [p for p in generate.places() if p.qemu]) as f:
        f.outs = outs
        yield f


def _env(farm, place: str, tmp: Path) -> Path:
    p = generate.place(place)
    return generate.write_yaml(tmp / f"{place}.yaml", generate.environment(
        p, {p.board: farm.outs[p.board]}, coordinator=farm.address), "test")


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


@pytest.mark.slow
@pytest.mark.parametrize("place", ["qemu-aarch64", "mps2-an385"])
def test_the_hil_suite_passes_on_the_qemu_place(farm, place, tmp_path):
    from seedfw.lab.farm import run_hil

    proc = run_hil(place, _env(farm, place, tmp_path), farm.address)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("5 passed" if place == "qemu-aarch64" else "3 passed, 2 skipped")
    assert client.holder(place, farm.address) is None


@pytest.mark.slow
def test_flash_on_a_held_place_is_refused_with_the_holder_and_ctrl_c_releases(farm):
    env = dict(os.environ, LG_COORDINATOR=farm.address)
    other = _hold_as("alice", "qemu-aarch64", farm)
    try:
        proc = invoke("flash", "--board", "qemu-aarch64", "--place", "qemu-aarch64",
                      "--output", farm.outs["qemu-aarch64"], env=env, timeout=120)
        holder = client.holder("qemu-aarch64", farm.address)
        assert holder.endswith("/alice")
        assert one_error_line(proc) == (f"error: --place: place 'qemu-aarch64' is held by {holder} "
                                        "(ask them, or wait: labgrid-client -p qemu-aarch64 show)")
    finally:
        other.terminate()
        other.wait(30)
    _free_within("qemu-aarch64", farm, 30)

    # free: flash and run hold it for the command and release it
    out = farm.outs["qemu-aarch64"]
    flashed = invoke("flash", "--board", "qemu-aarch64", "--place", "qemu-aarch64",
                     "--output", out, env=env, timeout=180)
    assert flashed.returncode == 0, flashed.stderr
    assert "-> qemu-aarch64 via qemu" in flashed.stdout
    ran = invoke("run", "--board", "qemu-aarch64", "--place", "qemu-aarch64", "--output", out,
                 "--timeout", "120", env=env, timeout=240)
    assert ran.returncode == 0 and "guest powered off" in ran.stdout, ran.stderr
    assert client.holder("qemu-aarch64", farm.address) is None

    # Ctrl-C while the place is held: `invoke console` on the halted MCU prints nothing for 120 s
    console = subprocess.Popen([sys.executable, "-m", "invoke", "console", "--board", "mps2-an385",
                                "--place", "mps2-an385", "--output", farm.outs["mps2-an385"],
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
