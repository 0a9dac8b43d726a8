"""A farm on this machine: labgrid's coordinator and exporter on 127.0.0.1 (free ports), the
places created and matched to the exporter's groups. What the HIL suite's slow test and
bench/farm_cycles.py run against; a real farm runs the same three programs on its hosts
(docs/farm.md). Everything started here is stopped by `stop` (the context manager's exit),
by process id only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..errors import SeedfwError
from . import generate
from .client import run_client

WAIT = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _program(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise SeedfwError(f"{name} not found: the 'lab' extra is not installed (run 'invoke setup')")
    return exe


def create_places(places: list[generate.Place], coordinator: str,
                  exporter: str = generate.EXPORTER_NAME) -> None:
    """Create each place on the coordinator and match it to the exporter's group of its name
    (labgrid-client create / add-match; an existing place is kept)."""
    for p in places:
        run_client(p.name, "create", coordinator=coordinator)
        proc = run_client(p.name, "add-match", f"{exporter}/{p.name}/*", coordinator=coordinator)
        if proc.returncode and "already" not in proc.stderr + proc.stdout:
            raise SeedfwError(f"labgrid-client add-match for place '{p.name}' failed: "
                              f"{(proc.stderr or proc.stdout).strip()[-200:]}")


class LocalFarm:
    """labgrid-coordinator + labgrid-exporter for `places` under `workdir`; a context manager."""

    def __init__(self, workdir: str | Path, places: list[generate.Place]):
        self.workdir = Path(workdir)
        self.places = places
        self.address = ""
        self.procs: list[subprocess.Popen] = []

    def _start(self, cmd: list[str], log: str) -> subprocess.Popen:
        out = open(self.workdir / log, "w")
        proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        out.close()
        self.procs.append(proc)
        return proc

    def start(self) -> "LocalFarm":
        self.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        coord = self._start([_program("labgrid-coordinator"), "-l", self.address], "coordinator.log")
        deadline = time.monotonic() + WAIT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if coord.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise SeedfwError("labgrid-coordinator did not start",
                                      self.workdir / "coordinator.log") from None
                time.sleep(0.1)
        config = generate.write_yaml(self.workdir / "exporter.yaml", generate.exporter(self.places),
                                     "seedfw.lab.farm: the exporter of this machine's places",
                                     exporter=True)
        exp = self._start([_program("labgrid-exporter"), "-c", self.address, "-n",
                           generate.EXPORTER_NAME, "--hostname", "127.0.0.1", str(config)],
                          "exporter.log")
        wanted = {f"{generate.EXPORTER_NAME}/{p.name}/" for p in self.places}
        while True:
            proc = run_client(None, "resources", coordinator=self.address)
            if all(any(line.startswith(w) for line in proc.stdout.splitlines()) for w in wanted):
                break
            if exp.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SeedfwError("labgrid-exporter did not publish the places' resources",
                                  self.workdir / "exporter.log")
            time.sleep(0.3)
        create_places(self.places, self.address)
        return self

    def stop(self) -> None:
        for proc in reversed(self.procs):          # exporter first, then the coordinator
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def copy_build(src: str | Path, dest: str | Path) -> Path:
    """A place's copy of a build: its images, manifest.json and config.json (the Kconfig values
    an OS place's boot checks, seedfw.run.os_virt.refuse), so flashing and the QEMU driver's
    work files never touch the build itself; an older copy at `dest` is replaced."""
    src, dest = Path(src), Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src / "images", dest / "images")
    for name in ("manifest.json", "config.json"):
        if (src / name).is_file():
            shutil.copy(src / name, dest)
    return dest


def run_hil(place: str, env_file: Path, address: str) -> subprocess.CompletedProcess:
    """tests/hil against `place` (held for the run) under labgrid's pytest plugin."""
    from ..paths import ROOT
    from .client import held

    with held(place, None, address):
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(ROOT / "tests" / "hil"), "--lg-env", str(env_file)],
                              capture_output=True, text=True, timeout=600, cwd=ROOT,
                              stdin=subprocess.DEVNULL,
                              env=dict(os.environ, PYTHONPATH=str(ROOT / "tools")))


def hil_suite(outdirs: dict[str, Path], workdir: Path) -> list[str]:
    """`invoke ci`'s farm step: a local farm of the QEMU places whose boards were built
    (`outdirs` {board: output}; their images are copied, flashing never touches the build),
    the HIL suite against each; one summary line per place. A failing suite is an error."""
    workdir = Path(workdir)
    ps = [p for p in generate.places() if p.qemu and p.board in outdirs]
    copies = {p.board: copy_build(outdirs[p.board], workdir / "out" / p.board) for p in ps}
    lines = []
    with LocalFarm(workdir / "farm", ps) as farm:
        for p in ps:
            env = generate.write_yaml(workdir / f"{p.name}.yaml", generate.environment(
                p, {p.board: copies[p.board]}, coordinator=farm.address), "invoke ci")
            proc = run_hil(p.name, env, farm.address)
            last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
            if proc.returncode:
                err = SeedfwError(f"HIL suite failed on place {p.name}: {last}", env)
                err.tail = proc.stdout.strip().splitlines()[-15:]
                raise err
            lines.append(f"hil {p.name}: {last}")
    return lines
