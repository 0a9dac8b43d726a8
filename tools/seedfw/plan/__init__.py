"""The step graph of a build: stamps, skipping, a parallel runner, progress and logs.

A Step is a name, its dependencies, a function, and what affects its result (`inputs`). Its stamp is
the sha256 of: the step's code version, its inputs (file hashes, the Kconfig symbols it reads, the
toolchain version string, ...) and the stamps of the steps it depends on — so a change anywhere
upstream re-runs everything downstream and nothing else. A step whose stamp equals the one recorded
in `<out>/stamps/<step>.stamp` (and whose declared outputs exist) is skipped without calling it.

Every run leaves `<out>/logs/steps.jsonl`: one JSON line per step of *that* run
(`step`, `action` "ran"/"skipped"/"failed"/"interrupted", `stamp`, `seconds`; a run that found
its product in a per-machine cache also `reused`: see Step.reused), which is what tests
assert on; each package's full output goes to `<out>/logs/<package>.log`, streamed as it comes.

Interrupted builds (SIGINT): the previous images stay valid and the next build completes, because
  * a step hands its products to `step.install({final: built})` instead of writing <out>/images/
    itself; the plan copies them to temporary files beside their targets and renames them all only
    after the step succeeded (and the build is not being interrupted);
  * a step's stamp is removed before it runs and written only after its outputs are in place;
  * commands run through `run_command` get a process group of their own, so on SIGINT the plan ends
    every running make with all its compilers (SIGTERM, then SIGKILL), whether or not the signal
    reached them, and raises KeyboardInterrupt to the caller once the workers have stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .. import util
from ..errors import SeedfwError
from .jobserver import join as jobserver_join
from .jobserver import stop  # noqa: F401  (seedfw.build.multi calls plan.stop)
from .roles import Source, link, source  # noqa: F401  (parts call plan.source)
# What a step's stamp is made of (parts call them as plan.tree_hash, plan.symbols, ...).
from .stamps import code_digest, file_hashes, symbols, toolchain_version, tree_hash  # noqa: F401

KILL_GRACE = util.KILL_GRACE   # seconds between SIGTERM and SIGKILL for an interrupted step's commands


class Interrupted(Exception):
    """Raised inside a step when the build is being interrupted: not a failure of the step."""


@dataclass
class Step:
    """One unit of work.

    name:     unique in a plan, "<package>.<action>" (e.g. "tfa.build")
    run:      called with the Step when it must run; raises SeedfwError on failure
    deps:     names of steps of the same part that must finish first (their stamps feed this one's)
    needs:    roles this step reads ("bl31", "kernel": seedfw.parts.base.Output) and files of
              the tree it reads (`source(path)`): the plan links each role to the steps whose
              parts' Outputs provide it (a dependency, like `deps`); a role nothing provides
              is refused (`Plan.link`), never taken for a source. `files` is what they
              resolved to (the artifact store's key hashes them)
    after:    order-only dependencies (make's `| prereq`): must finish first, but their stamps do not
              feed this one's — for steps whose inputs already name what they take from them
    inputs:   JSON-able dict, or a callable returning one, of everything that affects the result
    version:  bump when the step's code changes what it produces
    package:  log name: output goes to <out>/logs/<package>.log (`self.log`)
    outputs:  files that must exist for a skip to be trusted
    shared_roots: per-user caches this step also writes into (label -> directory, e.g. the
              compiled-model cache); the run names what it wrote there with `step.wrote(label,
              files)`, and a restore from the artifact store puts those files back too
    cache:    False when this step's outputs must not be restored from the artifact store
              (seedfw.cache) into another output directory: they name where they were built.
              Steps whose outputs are not all regular files inside the output directory are
              never stored anyway (downloads, trees)
    tools:    host commands (or a part's build-scope component ref) that make its outputs: the
              SBOM's build components, file → compiler; not stamped (inputs name versions)
    `run` hands the files it produced to `step.install({final path: built path})`; the plan puts
    them in place (atomically, all together) only after `run` returned.
    """

    name: str
    run: Callable[["Step"], None]
    deps: tuple[str, ...] = ()
    needs: tuple = ()
    after: tuple[str, ...] = ()
    inputs: dict | Callable[[], dict] = field(default_factory=dict)
    version: str = "1"
    package: str | None = None
    outputs: tuple[Path, ...] = ()
    cache: bool = True
    shared_roots: dict = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    shared: list = field(default_factory=list, repr=False)   # (label, path) written by this run
    files: tuple[Path, ...] = ()     # what `needs` resolved to (set by Plan.link)
    log: Path | None = None          # set by the plan
    staged: dict = field(default_factory=dict, repr=False)   # final path -> built path
    log_start: int | None = field(default=None, repr=False)  # where this run's log began
    reuse: str | None = field(default=None, repr=False)      # set by `reused` during a run

    def resolved_inputs(self) -> dict:
        return self.inputs() if callable(self.inputs) else self.inputs

    def wrote(self, label: str, files) -> None:
        """Files this run wrote below `shared_roots[label]` (see `shared_roots`)."""
        root = Path(self.shared_roots[label]).resolve()
        for f in files:
            Path(f).resolve().relative_to(root)          # a file elsewhere is our bug: fail loudly
            self.shared.append((label, Path(f)))

    def reused(self, where: str) -> None:
        """This run found its product made in a per-machine cache (`where`) and built nothing:
        such steps (downloads, trees) are never in the artifact store, and "built" would be
        untrue. The record keeps action "ran" and carries `reused`."""
        self.reuse = where

    def install(self, files: dict) -> None:
        """Products of this step, committed by the plan after `run` succeeds: {final: built}."""
        for final, built in files.items():
            if not Path(built).is_file():
                raise SeedfwError(f"expected build output is missing: {built}")
            self.staged[Path(final)] = Path(built)


def _module_of(run) -> str | None:
    """The module whose code a step runs (a closure's, a method's, a partial's function's)."""
    run = getattr(run, "func", run)
    return getattr(run, "__module__", None)


def stamp_of(step: Step, dep_stamps: dict[str, str]) -> tuple[str, dict]:
    doc = {"step": step.name, "version": step.version, "inputs": step.resolved_inputs(),
           "code": code_digest(_module_of(step.run)),
           "deps": {d: dep_stamps[d] for d in step.deps}}
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest(), doc


# ---- commands run by steps -----------------------------------------------------------------------

_current = threading.local()        # .plan: the Plan whose step this worker thread is running


def run_command(cmd: Iterable, *, cwd=None, env: dict | None = None, log=None,
                check: bool = True) -> subprocess.CompletedProcess:
    """`util.run` for a build step: the command's process group is registered with the plan
    running the step, so an interrupted build ends it (and every compiler it started) with one
    signal. Raises `Interrupted` when the build is interrupted while (or before) it runs."""
    plan = getattr(_current, "plan", None)
    pass_fds: tuple = ()
    if plan is not None and plan.jobserver is not None:
        cmd, env, pass_fds = jobserver_join(list(cmd), env, plan.jobserver)
    result = util.run(cmd, cwd=cwd, env=env, log=log, check=False, pass_fds=pass_fds,
                      adopt=plan._adopt if plan else None, release=plan._release if plan else None)
    # A command killed by SIGINT is Ctrl-C too, even before the main thread has handled its own
    # copy of the signal (the terminal sends it to the whole group): otherwise the race turns
    # the user's interrupt into "step failed" (CI: `invoke tune` exited 1 instead of 130).
    if plan is not None and (plan.interrupted or result.returncode == -signal.SIGINT):
        raise Interrupted(result.args[0])
    if check and result.returncode != 0:
        raise util.command_failed(result, log)
    return result


# ---- the plan ------------------------------------------------------------------------------------

class Plan:
    """A set of steps for one output directory, run in dependency order with `jobs` in parallel.

    `jobserver` (seedfw.plan.jobserver.JobServer): the job limit shared with other plans running at
    the same time (`invoke build --board all`): every step that runs holds one of its slots and
    the makes it starts draw their extra jobs from it; its interrupt also stops this plan.
    """

    def __init__(self, outdir: Path, jobs: int | None = None, console=None, jobserver=None,
                 cache=None):
        self.outdir = Path(outdir)
        self.cache = cache              # seedfw.cache.ArtifactCache, or None
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.jobserver = jobserver
        if jobserver is not None:
            jobserver.register(self)
        self.steps: dict[str, Step] = {}
        self.declared: list[tuple[str, object]] = []      # (part, seedfw.parts.base.Output)
        self.hints: list[tuple[str, tuple, str]] = []     # (part, roles it can provide, when)
        self.console = console
        self.stamp_dir = self.outdir / "stamps"
        self.log_dir = self.outdir / "logs"
        self.records: list[dict] = []
        self._lock = threading.Lock()
        self._fresh_logs: set[str] = set()
        self._cancel = threading.Event()
        self._children: set[subprocess.Popen] = set()

    def add(self, *steps: Step) -> None:
        for step in steps:
            if step.name in self.steps:
                raise SeedfwError(f"step '{step.name}' is defined twice")
            step.log = self.log_dir / f"{step.package or step.name}.log"
            self.steps[step.name] = step

    def declare(self, part: str, outputs) -> None:
        """The Outputs of an enabled part: each names the step that makes it (Output.step)."""
        self.declared += [(part, o) for o in outputs]

    def hint(self, part: str, roles, when: str) -> None:
        """A registered part's roles and what enables it, for the refusal of an unmet need."""
        self.hints.append((part, tuple(roles), when))

    def link(self) -> None:
        """Turn every step's `needs` into dependencies on the steps that provide those roles
        (seedfw.plan.roles.link).

        Why roles and not step names or file names: a part then never names another part's
        steps or files, and a step depends on exactly what it reads (the firmware image does
        not wait for the root file system). Two steps declaring one file: refused.
        """
        link(self.steps, self.declared, self.hints)

    def order(self) -> list[str]:
        """Topological order; unknown dependencies and cycles are errors."""
        self.link()
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
        """Run every step whose stamp changed; return the step records (also in logs/steps.jsonl).

        On KeyboardInterrupt (SIGINT in the main thread: worker threads never see it) the running
        steps' commands are ended, their workers joined, the records written, and the
        KeyboardInterrupt re-raised — no stamp and no image of an unfinished step is written.
        """
        order = self.order()
        for name in order:          # parsed here, in one thread (see stamps._scan); memoised
            code_digest(_module_of(self.steps[name].run))
        self.stamp_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.records = []
        self._cancel.clear()
        stamps: dict[str, str] = {}
        pending = list(order)
        running = {}
        failure: BaseException | None = None
        # Not a `with` block: its exit would join the workers *before* an except clause could end
        # their commands, i.e. Ctrl-C would wait for the compile to finish.
        pool = ThreadPoolExecutor(max_workers=self.jobs)
        try:
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
        except KeyboardInterrupt:
            self._interrupt(list(running))
            self._write_records()
            raise
        finally:
            pool.shutdown(wait=True)
        self._write_records()
        if isinstance(failure, Interrupted):   # a step's command saw Ctrl-C first: the caller's
            raise KeyboardInterrupt           # contract is KeyboardInterrupt all the same
        if failure is not None:
            raise failure
        return self.records

    @property
    def interrupted(self) -> bool:
        """Ctrl-C seen by this plan, or the group of plans sharing its jobserver is stopping."""
        return self._cancel.is_set() or (self.jobserver is not None and self.jobserver.cancelled)

    def _interrupt(self, futures) -> None:
        """Stop everything running: no new commands, SIGTERM to every command's process group,
        SIGKILL to those still there after KILL_GRACE (or at a second Ctrl-C), then join."""
        self._cancel.set()
        stop(futures, self._signal_children)

    def _signal_children(self, sig: int) -> None:
        with self._lock:
            children = list(self._children)
        for proc in children:
            util.signal_group(proc, sig)

    def _adopt(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._children.add(proc)
            cancelled = self.interrupted
        if cancelled:                   # started while the interrupt was being handled
            util.signal_group(proc, signal.SIGTERM)

    def _release(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._children.discard(proc)
        if self.interrupted:            # a straggler of the group (a compiler make left behind)
            util.signal_group(proc, signal.SIGKILL)

    def _write_records(self) -> None:
        util.write_text(self.log_dir / "steps.jsonl",
                        "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.records))

    def _run_one(self, step: Step, dep_stamps: dict[str, str]) -> str:
        stamp, doc = stamp_of(step, dep_stamps)
        stamp_file = self.stamp_dir / f"{step.name}.stamp"
        started = time.monotonic()
        if self._recorded(stamp_file) == stamp and all(Path(o).exists() for o in step.outputs):
            self._record(step, "skipped", stamp, started)
            return stamp
        if self.interrupted:
            raise Interrupted(step.name)
        key = self._cache_key(step, stamp)
        restored = self._restore(step, stamp, key, stamp_file, dep_stamps, started)
        if restored is not None:
            return restored
        if self.jobserver is None:
            return self._run_held(step, stamp, stamp_file, dep_stamps, started, key)
        token = self.jobserver.acquire(lambda: self.interrupted)     # one slot per running step
        if token is None:
            raise Interrupted(step.name)
        try:        # the wait for a slot is not the step's time
            return self._run_held(step, stamp, stamp_file, dep_stamps, time.monotonic(), key)
        finally:
            self.jobserver.release(token)

    def _run_held(self, step: Step, stamp: str, stamp_file: Path, dep_stamps: dict,
                  started: float, key: str | None = None) -> str:
        stamp_file.unlink(missing_ok=True)          # a failed re-run must not look up to date
        try:
            self._open_log(step)
            with open(step.log, "a") as f:
                f.write(f"=== step {step.name} (stamp {stamp[:16]})\n")
                step.log_start = f.tell()       # what the store keeps of this step's log
        except OSError as exc:
            self._record(step, "failed", stamp, started)
            raise util.os_error(exc, step.log) from None
        step.staged = {}
        step.shared = []
        step.reuse = None
        kept = self._machine_products(step)
        _current.plan = self
        try:
            try:
                step.run(step)
                self._commit(step)
            except OSError as exc:      # e.g. a full disk while writing an output: name the file
                raise util.os_error(exc, step.log) from None
        except (SeedfwError, Interrupted) as exc:
            if self.interrupted or isinstance(exc, Interrupted):   # ended by Ctrl-C: not the step's fault
                self._record(step, "interrupted", stamp, started)
                raise Interrupted(step.name) from None
            self._record(step, "failed", stamp, started)
            raise self._failure(step, exc) from None
        finally:
            _current.plan = None
        if kept and step.reuse is None and kept == self._machine_products(step):
            step.reused("this machine's cache")      # its products there, untouched by the run
        # Recompute: a step may create what its inputs describe (e.g. a fetch fills the cache).
        stamp, doc = stamp_of(step, dep_stamps)
        stored = self._store(step, key)
        util.write_json(stamp_file, {"stamp": stamp, **doc})
        self._record(step, "ran", stamp, started, stored=stored,
                     key=key if stored is not None else None, reused=step.reuse)
        return stamp

    def _machine_products(self, step: Step) -> dict | None:
        """(inode, size, mtime) of each declared output when all are in per-machine caches
        (outside the output dir) and exist, else None: equal after a run, it only found them."""
        out, paths = self.outdir.resolve(), [Path(o) for o in step.outputs]
        if not paths or any(p.resolve().is_relative_to(out) for p in paths):
            return None
        try:
            return {str(p): (st.st_ino, st.st_size, st.st_mtime_ns) for p in paths
                    if (st := p.stat())}
        except OSError:
            return None

    # -- the artifact store (seedfw.cache: what goes in and the key live there) --

    def _cache_key(self, step: Step, stamp: str) -> str | None:
        return self.cache.step_key(step, stamp, self.outdir) if self.cache is not None else None

    def _restore(self, step: Step, stamp: str, key: str | None, stamp_file: Path,
                 dep_stamps: dict, started: float) -> str | None:
        """A step whose key the store knows: its files copied out (verified), renamed into place
        together like a run's products, its log, then the stamp, last. None on a miss."""
        got = self.cache.restore(step.name, key, self.outdir, step.shared_roots) \
            if key is not None else None
        if got is None:
            return None
        stamp_file.unlink(missing_ok=True)
        try:
            if self.interrupted:
                raise Interrupted(step.name)
            for tmp, final in got.moves:
                os.replace(tmp, final)
        finally:
            for tmp, _ in got.moves:
                tmp.unlink(missing_ok=True)
        self._open_log(step)
        with open(step.log, "ab") as f:
            f.write(got.log_text(step.name, stamp))
        stamp, doc = stamp_of(step, dep_stamps)
        util.write_json(stamp_file, {"stamp": stamp, **doc})
        self._record(step, "restored", stamp, started, bytes=got.bytes, source=got.source, key=key)
        return stamp

    def _store(self, step: Step, key: str | None) -> int | None:
        if key is None:
            return None
        return self.cache.save_step(step, key, self.outdir)

    def _commit(self, step: Step) -> None:
        """Put a finished step's products in place: all copied to temporary files beside their
        targets first, then (unless the build is being interrupted) renamed over them together."""
        moves: list[tuple[Path, Path]] = []
        try:
            for final, built in sorted(step.staged.items()):
                final.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
                os.close(fd)
                moves.append((Path(tmp), final))
                shutil.copyfile(built, tmp)
                os.chmod(tmp, 0o644)
            if self.interrupted:
                raise Interrupted(step.name)
            while moves:
                tmp, final = moves[0]
                os.replace(tmp, final)
                moves.pop(0)
        finally:
            for tmp, _ in moves:
                tmp.unlink(missing_ok=True)

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

    def _record(self, step: Step, action: str, stamp: str, started: float, **extra) -> None:
        seconds = round(time.monotonic() - started, 3)
        with self._lock:
            self.records.append({"step": step.name, "action": action, "stamp": stamp,
                                 "seconds": seconds,
                                 **{k: v for k, v in extra.items() if v is not None}})
        if self.console is not None:
            if action == "ran" and extra.get("reused"):
                self.console.print(f"  [green]reused[/]  {step.name:<22} {seconds:6.1f} s  "
                                   f"from {extra['reused']}, nothing built")
            elif action == "ran":
                self.console.print(f"  [green]built[/]   {step.name:<22} {seconds:6.1f} s")
            elif action == "failed":
                self.console.print(f"  [red]FAILED[/]  {step.name:<22} {seconds:6.1f} s")
            elif action == "restored":
                self.console.print(f"  [cyan]restored[/] {step.name:<21} {seconds:6.1f} s  "
                                   f"from the {extra.get('source')} artifact store")
            elif action == "interrupted":
                self.console.print(f"  [yellow]stopped[/] {step.name:<22} {seconds:6.1f} s")
            else:
                self.console.print(f"  [dim]skipped {step.name:<22}   up to date[/]")

    def _failure(self, step: Step, exc: BaseException) -> SeedfwError:
        try:
            lines = step.log.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        message = exc.message.replace(f" (log: {step.log})", "")   # said once, below
        err = SeedfwError(f"step {step.name} failed: {message} (full log: {step.log})",
                          exc.file, exc.field)
        err.tail = lines[-util.TAIL_LINES:] or getattr(exc, "tail", None)
        err.step = step.name
        return err
