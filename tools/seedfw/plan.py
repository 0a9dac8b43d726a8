"""The step graph of a build: stamps, skipping, a parallel runner, progress and logs.

A Step is a name, its dependencies, a function, and what affects its result (`inputs`). Its stamp is
the sha256 of: the step's code version, its inputs (file hashes, the Kconfig symbols it reads, the
toolchain version string, ...) and the stamps of the steps it depends on — so a change anywhere
upstream re-runs everything downstream and nothing else. A step whose stamp equals the one recorded
in `<out>/stamps/<step>.stamp` (and whose declared outputs exist) is skipped without calling it.

Every run leaves `<out>/logs/steps.jsonl`: one JSON line per step of *that* run
(`step`, `action` "ran"/"skipped"/"failed", `stamp`, `seconds`), which is what tests assert on; each package's
full output goes to `<out>/logs/<package>.log`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from . import util
from .errors import SeedfwError

TAIL_LINES = 30


@dataclass
class Step:
    """One unit of work.

    name:     unique in a plan, "<package>.<action>" (e.g. "tfa.build")
    run:      called with the Step when it must run; raises SeedfwError on failure
    deps:     names of steps that must finish first (their stamps feed this one's)
    after:    order-only dependencies (make's `| prereq`): must finish first, but their stamps do not
              feed this one's — for steps whose inputs already name what they take from them
    inputs:   JSON-able dict, or a callable returning one, of everything that affects the result
    version:  bump when the step's code changes what it produces
    package:  log name: output goes to <out>/logs/<package>.log (`self.log`)
    outputs:  files that must exist for a skip to be trusted
    """

    name: str
    run: Callable[["Step"], None]
    deps: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    inputs: dict | Callable[[], dict] = field(default_factory=dict)
    version: str = "1"
    package: str | None = None
    outputs: tuple[Path, ...] = ()
    log: Path | None = None          # set by the plan

    def resolved_inputs(self) -> dict:
        return self.inputs() if callable(self.inputs) else self.inputs


# ---- input helpers: what a step's stamp is made of ----------------------------------------------

def file_hashes(files: Iterable[Path], root: Path | None = None) -> dict:
    """{name: sha256} of files (names relative to `root` when given, so stamps hold no absolute paths)."""
    out = {}
    for f in sorted(Path(p) for p in files):
        key = os.path.relpath(f, root) if root else f.name
        out[key] = util.sha256_file(f) if f.exists() else None
    return out


def tree_hash(root: Path, exclude: Iterable[str] = ()) -> str:
    """sha256 over every file below `root` (relative names + contents). For small source trees only."""
    h = hashlib.sha256()
    skip = set(exclude)
    for path in sorted(Path(root).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(part in skip for part in path.relative_to(root).parts):
            h.update(rel.encode() + b"\0" + util.sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def symbols(values: dict, names: Iterable[str]) -> dict:
    """The Kconfig symbols a step reads (absent ones as None, so enabling one changes the stamp)."""
    return {n: values.get(n) for n in names}


_toolchain_lock = threading.Lock()


def toolchain_version(compiler: str, cache_dir: Path) -> str:
    """`<compiler> --version` first line, cached in `cache_dir` keyed by the compiler's path and mtime.

    Why cached: starting gcc costs ~10 ms each, and the no-op build must stay well under a second.
    """
    path = shutil.which(compiler)
    if path is None:
        raise SeedfwError(f"compiler not found: {compiler} (run 'invoke setup')")
    real = os.path.realpath(path)
    key = f"{real}:{os.stat(real).st_mtime_ns}"
    cache_file = Path(cache_dir) / "toolchains.json"
    with _toolchain_lock:
        try:
            cache = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            cache = {}
        if key not in cache:
            proc = subprocess.run([real, "--version"], stdout=subprocess.PIPE, text=True)
            cache[key] = proc.stdout.splitlines()[0] if proc.stdout else "unknown"
            util.write_json(cache_file, cache)
        return cache[key]


def stamp_of(step: Step, dep_stamps: dict[str, str]) -> tuple[str, dict]:
    doc = {"step": step.name, "version": step.version, "inputs": step.resolved_inputs(),
           "deps": {d: dep_stamps[d] for d in step.deps}}
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest(), doc


# ---- the plan ------------------------------------------------------------------------------------

class Plan:
    """A set of steps for one output directory, run in dependency order with `jobs` in parallel."""

    def __init__(self, outdir: Path, jobs: int | None = None, console=None):
        self.outdir = Path(outdir)
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.steps: dict[str, Step] = {}
        self.console = console
        self.stamp_dir = self.outdir / "stamps"
        self.log_dir = self.outdir / "logs"
        self.records: list[dict] = []
        self._lock = threading.Lock()
        self._fresh_logs: set[str] = set()

    def add(self, *steps: Step) -> None:
        for step in steps:
            if step.name in self.steps:
                raise SeedfwError(f"step '{step.name}' is defined twice")
            step.log = self.log_dir / f"{step.package or step.name}.log"
            self.steps[step.name] = step

    def order(self) -> list[str]:
        """Topological order; unknown dependencies and cycles are errors."""
        done: list[str] = []
        state: dict[str, int] = {}

        def visit(name, chain):
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                raise SeedfwError(f"dependency cycle: {' -> '.join(chain + [name])}")
            if name not in self.steps:
                raise SeedfwError(f"step '{chain[-1]}' depends on unknown step '{name}'")
            state[name] = 1
            for dep in self.steps[name].deps + self.steps[name].after:
                visit(dep, chain + [name])
            state[name] = 2
            done.append(name)

        for name in self.steps:
            visit(name, [])
        return done

    # -- running --

    def run(self) -> list[dict]:
        """Run every step whose stamp changed; return the step records (also in logs/steps.jsonl)."""
        order = self.order()
        self.stamp_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.records = []
        stamps: dict[str, str] = {}
        pending = list(order)
        running = {}
        failure: BaseException | None = None
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            while pending or running:
                if failure is None:
                    for name in list(pending):
                        if len(running) >= self.jobs:
                            break
                        step = self.steps[name]
                        if all(d in stamps for d in step.deps + step.after):
                            pending.remove(name)
                            running[pool.submit(self._run_one, self.steps[name], dict(stamps))] = name
                else:
                    pending.clear()
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    name = running.pop(fut)
                    try:
                        stamps[name] = fut.result()
                    except BaseException as exc:       # keep the first failure; let others finish
                        failure = failure or exc
        util.write_text(self.log_dir / "steps.jsonl",
                        "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.records))
        if failure is not None:
            raise failure
        return self.records

    def _run_one(self, step: Step, dep_stamps: dict[str, str]) -> str:
        stamp, doc = stamp_of(step, dep_stamps)
        stamp_file = self.stamp_dir / f"{step.name}.stamp"
        started = time.monotonic()
        if self._recorded(stamp_file) == stamp and all(Path(o).exists() for o in step.outputs):
            self._record(step, "skipped", stamp, started)
            return stamp
        stamp_file.unlink(missing_ok=True)          # a failed re-run must not look up to date
        self._open_log(step)
        with open(step.log, "a") as f:
            f.write(f"=== step {step.name} (stamp {stamp[:16]})\n")
        try:
            step.run(step)
        except SeedfwError as exc:
            self._record(step, "failed", stamp, started)
            raise self._failure(step, exc) from None
        # Recompute: a step may create what its inputs describe (e.g. a fetch fills the cache).
        stamp, doc = stamp_of(step, dep_stamps)
        util.write_json(stamp_file, {"stamp": stamp, **doc})
        self._record(step, "ran", stamp, started)
        return stamp

    @staticmethod
    def _recorded(stamp_file: Path) -> str | None:
        try:
            return json.loads(stamp_file.read_text()).get("stamp")
        except (OSError, ValueError, AttributeError):
            return None

    def _open_log(self, step: Step) -> None:
        """The first step of a package that runs in this build starts its log afresh."""
        with self._lock:
            if step.log.name not in self._fresh_logs:
                self._fresh_logs.add(step.log.name)
                step.log.write_text("")

    def _record(self, step: Step, action: str, stamp: str, started: float) -> None:
        seconds = round(time.monotonic() - started, 3)
        with self._lock:
            self.records.append({"step": step.name, "action": action, "stamp": stamp,
                                 "seconds": seconds})
        if self.console is not None:
            if action == "ran":
                self.console.print(f"  [green]built[/]   {step.name:<22} {seconds:6.1f} s")
            elif action == "failed":
                self.console.print(f"  [red]FAILED[/]  {step.name:<22} {seconds:6.1f} s")
            else:
                self.console.print(f"  [dim]skipped {step.name:<22}   up to date[/]")

    def _failure(self, step: Step, exc: SeedfwError) -> SeedfwError:
        try:
            lines = step.log.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        message = exc.message.replace(f" (log: {step.log})", "")   # said once, below
        err = SeedfwError(f"step {step.name} failed: {message} (full log: {step.log})",
                          exc.file, exc.field)
        err.tail = lines[-TAIL_LINES:] or getattr(exc, "tail", None)
        err.step = step.name
        return err
