"""Reliability of the farm (issue 31): N acquire → flash → boot → test → release cycles on the
QEMU places of a local farm (labgrid's coordinator + exporter on 127.0.0.1, seedfw.lab.farm).

    PYTHONPATH=tools python3 bench/farm_cycles.py [--cycles 20] [--place qemu-aarch64 ...]

Each cycle holds the place through seedfw.lab.client.held (labgrid-client acquire, the
guardian, release), loads the generated environment in labgrid's Environment, walks the
strategy off → flashed → booted → agent, checks the done line and that nothing failed, powers
off and releases; then checks the coordinator says the place is free. A cycle that fails and
passes on its one retry is a flake; one that fails twice is a failure. The images are copies
of the builds in output/<board> (run `invoke build --board B` first), so the cycles never
flash a developer's output directory.

Prints one line per cycle, then per place and overall: pass/total, flakes, p50/p95 cycle time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from seedfw.errors import SeedfwError  # noqa: E402
from seedfw.lab import client, generate  # noqa: E402
from seedfw.lab.farm import LocalFarm, copy_build  # noqa: E402
from seedfw.paths import output_dir  # noqa: E402

FAILED = re.compile(r"(FAILED|sha256 BAD|Bad hash value|Kernel panic)")


def one_cycle(place, env_file: Path, address: str) -> float:
    """One cycle in a fresh process, as a CI job or a developer's command is one client
    (labgrid's RemotePlace manager is one per process and would carry the last cycle's view
    of the place)."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, __file__, "--one", place.name, str(env_file), address],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["(no output)"])[-1])
    if client.holder(place.name, address) is not None:
        raise RuntimeError("place still held after the cycle")
    return time.monotonic() - start


def cycle_body(place, env_file: Path, address: str) -> None:
    from labgrid import Environment

    with client.held(place.name, None, address):
        target = Environment(str(env_file)).get_target("main")
        try:
            strategy = target.get_driver("SeedfwStrategy")
            strategy.transition("agent")
            lines = strategy.lines
            if not re.search(place.expect["done"], lines[-1]) or any(FAILED.search(ln) for ln in lines):
                raise RuntimeError(f"bad console: {lines[-3:]}")
            done = strategy.flash and strategy.flash.result     # None: nothing to program
            if done and done.verified_bytes < done.programmed_bytes:
                raise RuntimeError("flash not verified")
            strategy.transition("off")
        finally:
            target.cleanup()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(name: str, times: list[float], passed: int, total: int, flakes: int) -> str:
    if not times:
        return f"{name}: {passed}/{total} passed, {flakes} flakes"
    return (f"{name}: {passed}/{total} passed, {flakes} flakes, cycle p50 "
            f"{statistics.median(times):.1f} s, p95 {percentile(times, 0.95):.1f} s")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--one"]:                       # the child of one_cycle
        try:
            cycle_body(generate.place(argv[1]), Path(argv[2]), argv[3])
        except Exception as exc:                    # noqa: BLE001 (one line for the parent)
            print(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  file=sys.stderr)
            return 1
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=20, help="cycles in all (default 20)")
    ap.add_argument("--place", action="append", help="QEMU place(s) (default: every one)")
    args = ap.parse_args(argv)
    places = [p for p in generate.places() if p.qemu and (not args.place or p.name in args.place)]
    if not places:
        print("error: no QEMU place selected", file=sys.stderr)
        return 1
    results = {p.name: {"times": [], "passed": 0, "total": 0, "flakes": 0} for p in places}
    with tempfile.TemporaryDirectory(prefix="seedfw-farm-") as tmp:
        tmp = Path(tmp)
        envs = {}
        for p in places:
            src = output_dir(p.board, None)
            if not (src / "manifest.json").is_file():
                print(f"error: {src}: not built (invoke build --board {p.board})", file=sys.stderr)
                return 1
            envs[p.name] = copy_build(src, tmp / "out" / p.board)
        with LocalFarm(tmp / "farm", places) as farm:
            for p in places:
                envs[p.name] = generate.write_yaml(
                    tmp / f"{p.name}.yaml",
                    generate.environment(p, {p.board: envs[p.name]}, coordinator=farm.address),
                    "bench/farm_cycles.py")
            for i in range(args.cycles):
                p = places[i % len(places)]
                r = results[p.name]
                r["total"] += 1
                for attempt in (1, 2):
                    try:
                        took = one_cycle(p, envs[p.name], farm.address)
                    except (SeedfwError, Exception) as exc:       # noqa: BLE001 (counted)
                        print(f"cycle {i + 1:>3} {p.name:<14} attempt {attempt} FAILED: "
                              f"{str(exc).splitlines()[0][:160]}", flush=True)
                        continue
                    r["times"].append(took)
                    r["passed"] += 1
                    r["flakes"] += attempt == 2
                    print(f"cycle {i + 1:>3} {p.name:<14} ok in {took:.1f} s"
                          f"{' (flake: passed on retry)' if attempt == 2 else ''}", flush=True)
                    break
    for name, r in results.items():
        print(summary(name, r["times"], r["passed"], r["total"], r["flakes"]))
    every = [t for r in results.values() for t in r["times"]]
    passed, total = sum(r["passed"] for r in results.values()), sum(r["total"] for r in results.values())
    print(summary("all", every, passed, total, sum(r["flakes"] for r in results.values())))
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
