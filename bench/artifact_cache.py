#!/usr/bin/env python3
"""A clean workspace of an unchanged tree, every board: cold vs local artifact store vs remote one.

Three builds of `invoke build --board all` (as a user types it), each into a new, empty output
directory, in one run of this script:
  cold    no store to read: every step runs (it fills an empty local store, as CI's first run does)
  local   that local store, warm: what a second checkout or `rm -rf output` gets
  remote  an EMPTY local store and a remote store (an OCI registry: Debian's docker-registry on
          loopback, started here) that the cold run pushed to: what another machine or CI
          runner gets (with --no-remote, skipped)
The machine's per-machine caches (downloads, U-Boot's compiled tree, the Buildroot tree, its host
tar and toolchain copy, ccache) are the same for all three: they are what a developer's machine
or a CI runner with a persistent cache keeps; the store is what differs.

Printed: wall seconds (the whole `invoke build` process, measured here), steps restored / ran
(and of those, how many only reused a per-machine cache: a download, the Buildroot tree) / up
to date, the share of steps restored (of all steps, and of the steps the store can hold:
seedfw.cache.cacheable), the share that built nothing (restored, reused or up to date), bytes
restored, and the ratios cold/local and cold/remote. Goals:
>= 90 % of the storable steps restored, >= 10x faster than cold. The images of the three runs are
compared through their manifests (they must be equal).

    python3 bench/artifact_cache.py [--boards all] [--keep DIR] [--no-remote]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(workdir: Path) -> tuple[subprocess.Popen, str]:
    """Debian's docker-registry (distribution 2.8) on a loopback port, storage in workdir."""
    exe = shutil.which("docker-registry")
    if exe is None:
        raise SystemExit("docker-registry is not installed (invoke setup installs it)")
    port = free_port()
    conf = workdir / "registry.yml"
    conf.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                    f"    rootdirectory: {workdir / 'registry'}\n  delete:\n    enabled: true\n"
                    f"http:\n  addr: 127.0.0.1:{port}\n")
    proc = subprocess.Popen([exe, "serve", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"oci://127.0.0.1:{port}/seedfw/steps"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("docker-registry did not answer within 20 s")


def build(boards: str, out: Path, env: dict, extra=()) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "invoke", "build", "--board", boards, "--output",
                           str(out), *extra], cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"build into {out} failed")
    return took, proc.stdout


def tally(out: Path) -> dict:
    """Step actions over every board's steps.jsonl; `storable`: steps that ran and went into the
    store (their record carries "stored") or came out of it."""
    counts = {"restored": 0, "ran": 0, "reused": 0, "skipped": 0, "storable": 0, "bytes": 0,
              "boards": {}, "built": {}}
    for steps in sorted(out.glob("*/logs/steps.jsonl")):
        records = [json.loads(line) for line in steps.read_text().splitlines()]
        counts["boards"][steps.parent.parent.name] = {r["step"]: r["action"] for r in records}
        counts["built"][steps.parent.parent.name] = [r["step"] for r in records
                                                     if r["action"] == "ran" and not r.get("reused")]
        for r in records:
            counts[r["action"]] = counts.get(r["action"], 0) + 1
            # ran, but only found its product in a per-machine cache (seedfw.plan.Step.reused)
            counts["reused"] += r["action"] == "ran" and bool(r.get("reused"))
            counts["bytes"] += r.get("bytes", 0)
            if r["action"] == "restored" or r.get("stored") is not None:
                counts["storable"] += 1
    return counts


def manifests(out: Path) -> dict:
    got = {}
    for m in sorted(out.glob("*/manifest.json")):
        doc = json.loads(m.read_text())
        got[m.parent.name] = {a["path"]: a["sha256"] for a in doc["artifacts"]}
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="all")
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one)")
    ap.add_argument("--no-remote", action="store_true", help="skip the remote store run")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="seedfw-artifact-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEEDFW_CACHE_REMOTE")}
    registry = None
    rows = []
    try:
        cold_env = {**env, "SEEDFW_ARTIFACT_CACHE": str(work / "store")}
        if not args.no_remote:
            registry, url = start_registry(work)
            cold_env.update(SEEDFW_CACHE_REMOTE=url, SEEDFW_CACHE_REMOTE_MODE="rw")
        runs = [("cold", cold_env)]
        runs.append(("local", {**env, "SEEDFW_ARTIFACT_CACHE": str(work / "store")}))
        if registry is not None:
            runs.append(("remote", {**env, "SEEDFW_ARTIFACT_CACHE": str(work / "store-empty"),
                                    "SEEDFW_CACHE_REMOTE": url, "SEEDFW_CACHE_REMOTE_MODE": "ro"}))
        results = {}
        for name, run_env in runs:
            out = work / name
            shutil.rmtree(out, ignore_errors=True)
            seconds, _ = build(args.boards, out, run_env)
            results[name] = (seconds, tally(out), manifests(out))
            print(f"{name}: {seconds:.1f} s", flush=True)
        cold_s = results["cold"][0]
        print(f"\nbench/artifact_cache.py, boards {args.boards}, {time.strftime('%Y-%m-%d')}, "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} (measured: wall time of "
              "each `invoke build` process)")
        print(f"{'run':8} {'wall s':>8} {'restored':>9} {'ran':>5} {'(reused)':>8} "
              f"{'up to date':>10} {'restored %':>10} {'of storable':>11} {'built nothing %':>15} "
              f"{'bytes restored':>15} {'cold/this':>9}")
        for name, (seconds, t, _m) in results.items():
            total = t["restored"] + t["ran"] + t["skipped"]
            storable = max(1, results["cold"][1]["storable"])
            idle = t["restored"] + t["reused"] + t["skipped"]     # steps that built nothing
            print(f"{name:8} {seconds:8.1f} {t['restored']:9} {t['ran']:5} {t['reused']:8} "
                  f"{t['skipped']:10} {100 * t['restored'] / max(1, total):9.0f}% "
                  f"{100 * t['restored'] / storable:10.0f}% {100 * idle / max(1, total):14.0f}% "
                  f"{t['bytes']:15,} {cold_s / seconds:8.1f}x")
            rows.append(name)
        same = all(m == results["cold"][2] for _, _, m in results.values())
        print(f"images identical to the cold run's: {'yes' if same else 'NO'}")
        ran_elsewhere = sorted({s for _, t, _ in list(results.values())[1:]
                                for b in t["boards"].values() for s, a in b.items() if a == "ran"})
        print(f"steps that ran with a warm store (not storable): {', '.join(ran_elsewhere) or '-'}")
        built = sorted({s for _, t, _ in list(results.values())[1:]
                        for b in t["built"].values() for s in b})
        print(f"of them, steps that built something (not only reused a per-machine cache): "
              f"{', '.join(built) or '-'}")
        return 0 if same else 1
    finally:
        if registry is not None:
            registry.terminate()
            registry.wait(timeout=10)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
