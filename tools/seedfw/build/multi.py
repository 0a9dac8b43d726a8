"""Several boards built at the same time under one job limit (`invoke build --board all -j N`).

Each board keeps its own plan, output directory, lock, logs and stamps (seedfw.build.build, one
thread per board); what they share is a seedfw.plan.jobserver.JobServer of N slots, so the steps of all
boards and the makes they start together run at most N jobs. One console shows every board's
progress, each line prefixed by its board. A board that fails does not stop the others: every
board runs to its end and `build_all` returns one BoardOutcome per board, in the order given.

Ctrl-C reaches the main thread only (the boards' plans run in worker threads, where Python never
raises KeyboardInterrupt): it stops the whole group through the jobserver — no new step or
command, SIGTERM then SIGKILL to every running command of every board (seedfw.plan.stop) — and
re-raises KeyboardInterrupt once every board's thread has ended, so interrupted steps leave their
previous images and no stamp, as in a single-board build.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from .. import build as build_mod
from .. import plan as plan_mod
from ..errors import SeedfwError
from ..plan.jobserver import JobServer


@dataclass
class BoardOutcome:
    """How one board's build ended: status "ok", "failed" or "interrupted"."""

    board: str
    status: str
    result: "build_mod.BuildResult | None" = None
    error: str = ""                 # the board's one-line error (failed only)
    step: str | None = None         # the step that failed, when a step did
    seconds: float = 0.0
    tail: list = field(default_factory=list)

    @property
    def where(self) -> str:
        """Where it failed: "step tfa.build", or "configuration" for an error before any step."""
        return f"step {self.step}" if self.step else "configuration"


class PrefixedConsole:
    """A rich Console seen through one board: every line printed starts with the board's name.

    Why a wrapper and not a console per board: one terminal, one lock, so the lines of two
    boards never interleave inside a line."""

    _lock = threading.Lock()

    def __init__(self, console, prefix: str):
        self._console = console
        self._prefix = prefix

    def print(self, *objects, **kwargs) -> None:
        text = " ".join(str(o) for o in objects)
        lines = text.split("\n") or [""]
        with self._lock:
            for line in lines:
                # The prefix is a board name (letters, digits, '-'): no markup to escape.
                self._console.print(self._prefix + line, **kwargs)

    def __getattr__(self, name):
        return getattr(self._console, name)


def build_all(targets: list[tuple[str, Path | None]], fragments=(), jobs: int | None = None,
              strict: bool = False, console=None, store: bool = True) -> list[BoardOutcome]:
    """Build every (board, output dir) of `targets` at once under `jobs` job slots in total
    (default: the number of cores). Returns the outcomes in the order of `targets`; raises
    KeyboardInterrupt (after stopping every board) on Ctrl-C."""
    slots = max(1, jobs or os.cpu_count() or 1)
    width = max(len(name) for name, _ in targets)
    with JobServer(slots) as jobserver:
        pool = ThreadPoolExecutor(max_workers=len(targets), thread_name_prefix="board")
        futures = []
        try:
            for i, (name, out) in enumerate(targets, 1):
                shown = PrefixedConsole(console, f"{name:<{width}} | ") if console else None
                futures.append(pool.submit(_one, name, out, list(fragments), slots, strict, shown,
                                           f" ({i}/{len(targets)})", jobserver, store))
            wait(futures)
        except KeyboardInterrupt:
            jobserver.cancel.set()
            plan_mod.stop(futures, jobserver.interrupt)
            raise
        finally:
            pool.shutdown(wait=True)
        return [f.result() for f in futures]


def _one(name, out, fragments, jobs, strict, console, counter, jobserver, store=True) -> BoardOutcome:
    """One board's build in its own thread; whatever happens becomes its outcome."""
    started = time.monotonic()
    try:
        result = build_mod.build(name, out, fragments, jobs=jobs, strict=strict, console=console,
                                 counter=counter, jobserver=jobserver, store=store)
    except (plan_mod.Interrupted, KeyboardInterrupt):
        return BoardOutcome(name, "interrupted", seconds=time.monotonic() - started)
    except SeedfwError as exc:
        if jobserver.cancelled:         # a command ended by Ctrl-C: not this board's fault
            return BoardOutcome(name, "interrupted", seconds=time.monotonic() - started)
        return BoardOutcome(name, "failed", error=exc.line(), step=getattr(exc, "step", None),
                            seconds=time.monotonic() - started, tail=getattr(exc, "tail", None) or [])
    except OSError as exc:              # e.g. a full disk outside any step: one line, the file
        from ..util import os_error
        return BoardOutcome(name, "failed", error=os_error(exc).line(),
                            seconds=time.monotonic() - started)
    return BoardOutcome(name, "ok", result=result, seconds=result.seconds)


def summary_lines(outcomes: list[BoardOutcome]) -> list[str]:
    """One plain line per board: result, steps that ran, time, and for a failure where and why."""
    width = max(len(o.board) for o in outcomes)
    lines = []
    for o in outcomes:
        if o.status == "ok":
            ran = len(o.result.ran)
            detail = f"ok      {ran} step(s) ran, {len(o.result.records) - ran} up to date"
        elif o.status == "failed":
            # a step's error starts "step <name> failed: …" already
            detail = f"FAILED  {o.error}" if o.step else f"FAILED  {o.where}: {o.error}"
        else:
            detail = "stopped interrupted"
        lines.append(f"  {o.board:<{width}}  {detail} ({o.seconds:.1f} s)")
    return lines


def failure(outcomes: list[BoardOutcome]) -> SeedfwError | None:
    """The one-line error of a multi-board build with failed boards, else None:
    `N of M boards failed: <board> (step <step>), <board> (configuration)`."""
    failed = [o for o in outcomes if o.status == "failed"]
    if not failed:
        return None
    err = SeedfwError(f"{len(failed)} of {len(outcomes)} boards failed: "
                      + ", ".join(f"{o.board} ({o.where})" for o in failed))
    # The end of each failed board's log, prefixed by its board, printed before the error line.
    err.tail = [f"{o.board} | {line}" for o in failed for line in o.tail[-TAIL:]]
    return err


TAIL = 10           # log lines shown per failed board (its whole log is in its output dir)
