"""One job limit for several builds at once: a GNU make jobserver that seedfw's plans also use.

`invoke build --board all -j N` runs every board's step plan at the same time. Without a shared
limit each plan would run up to N steps and each step's make another N compilers: N boards × N
steps × N jobs on a 2-core machine. The limit here is N *jobs in total*: running steps plus the
extra compilers their makes start.

Why GNU make's own jobserver (make 4.3's `--jobserver-auth=R,W`, pipe descriptors) and not a
token scheme of our own: make already knows how to share a pool with other makes — every make we
start becomes a jobserver client, and so does every sub-make (U-Boot's Kbuild, TF-A, Buildroot's
per-package makes, which drop their own `-jN` when MAKEFLAGS carries a `j`). A Python-only token
scheme would have to hand each step a fixed `-jN` up front and so either idle cores or
oversubscribe them. The protocol (make's manual, "POSIX Jobserver Interaction"):
  * the pipe holds one byte per free slot; a client reads a byte before starting an extra job
    and writes the same byte back when the job ends;
  * every make also runs one job without a token (its "implicit" slot) — here that slot is the
    token its step took (seedfw.plan takes one byte for every step it runs, make or not), so the
    pipe starts with N bytes and at most N jobs run: running steps + tokens held by makes ≤ N.
  * a make given `-jN` on its command line leaves the jobserver (make prints "-jN forced in
    submake: resetting jobserver mode"), so seedfw.plan.run_command drops `-jN` from a make's
    arguments while a jobserver is in use; an explicit `-j1` (CONFIG_BUILD_JOBS=1) is kept, a
    serial make within its step's token.
Only interruption loses tokens (a make killed by SIGKILL does not give its bytes back); the
build is ending then anyway.
"""

from __future__ import annotations

import os
import re
import select
import signal
import threading
import time
from concurrent.futures import wait
from typing import Callable

from .. import util
from ..errors import SeedfwError


class JobServer:
    """`slots` job slots shared by the plans registered with it and by every make they start.

    Also the group's interrupt: `interrupt(sig)` stops all of its plans (seedfw.plan checks
    `cancelled` wherever it checks its own Ctrl-C flag).
    """

    def __init__(self, slots: int):
        if slots < 1:
            raise SeedfwError(f"-j must be at least 1, not {slots}", field="--jobs")
        self.slots = slots
        self.read_fd, self.write_fd = os.pipe()
        # Non-blocking reads: a worker waiting for a slot must still notice an interrupt. make
        # 4.3 uses the read end the same way (pselect, then a read that may find nothing).
        os.set_blocking(self.read_fd, False)
        os.write(self.write_fd, b"+" * slots)
        self.cancel = threading.Event()
        self._plans: set = set()
        self._lock = threading.Lock()

    # -- slots --

    def acquire(self, cancelled) -> bytes | None:
        """Wait for a free slot; returns its token, or None once `cancelled()` says so."""
        while not cancelled():
            select.select([self.read_fd], [], [], 0.1)
            try:
                token = os.read(self.read_fd, 1)
            except BlockingIOError:         # another thread or a make took it first
                continue
            if token:
                return token
        return None

    def release(self, token: bytes) -> None:
        os.write(self.write_fd, token)

    def make_environment(self) -> dict[str, str]:
        """What a make needs to join the pool: MAKEFLAGS as a parent make 4.3 would pass it."""
        return {"MAKEFLAGS": f"-j{self.slots} --jobserver-auth={self.read_fd},{self.write_fd}"}

    @property
    def fds(self) -> tuple[int, int]:
        return self.read_fd, self.write_fd

    # -- the group --

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def register(self, plan) -> None:
        with self._lock:
            self._plans.add(plan)

    def interrupt(self, sig: int = signal.SIGTERM) -> None:
        """Stop every registered plan: no new step or command, `sig` to every running command."""
        self.cancel.set()
        with self._lock:
            plans = list(self._plans)
        for plan in plans:
            plan._signal_children(sig)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "JobServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_MAKE_JOBS = re.compile(r"^(-j\d*|--jobs(=\d+)?)$")


def join(cmd: list, env: dict | None, jobserver) -> tuple[list, dict | None, tuple]:
    """A make becomes a client of the shared jobserver (see seedfw.plan.jobserver): its own `-jN`
    goes (make would leave the pool for it), MAKEFLAGS names the pool's pipe, the pipe is
    inherited. `-j1` stays: a serial make needs no slot beyond its step's. Other commands run
    as they are, within their step's slot."""
    if os.path.basename(str(cmd[0])) != "make" or "-j1" in map(str, cmd):
        return cmd, env, ()
    cmd = [c for c in cmd if not _MAKE_JOBS.match(str(c))]
    return cmd, {**(env or {}), **jobserver.make_environment()}, jobserver.fds


def stop(futures, signal_all: Callable[[int], None]) -> None:
    """SIGTERM through `signal_all`, then wait for `futures` (the workers running the commands);
    SIGKILL to whatever is left after KILL_GRACE or at a further Ctrl-C. Shared by one plan's
    interrupt and that of a group of plans (seedfw.build.multi)."""
    signal_all(signal.SIGTERM)
    futures = list(futures)
    deadline = time.monotonic() + util.KILL_GRACE
    while futures:
        try:
            _, left = wait(futures, timeout=max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            left = futures
            deadline = time.monotonic()
        futures = list(left)
        if futures and time.monotonic() >= deadline:
            signal_all(signal.SIGKILL)
            deadline = time.monotonic() + util.KILL_GRACE
