"""Holding a place: acquire it through labgrid's own client, use it, release it — always.

`held(place, board)` is the one wrapping call of `invoke flash/run/boot/console/counters
--place P`. It runs `labgrid-client -p P acquire` (the coordinator's lock; labgrid's program, not
a re-implementation), refuses a place someone else holds with one line naming the holder, and
yields the place's acquired resources.

Why a guardian process: labgrid 26's coordinator never expires an acquisition (its
schedule_reservations keeps "acquired" for ever, and a client's disconnect releases nothing),
so a client killed with SIGKILL, or a CI job cancelled mid-flash, would leave the place locked
until someone runs `release --kick`. The acquiring process therefore starts a small guardian
(`python -m seedfw.lab.guard`, its own session so a terminal's Ctrl-C does not reach it) that
holds the read end of a pipe; whatever ends the holder — return, exception, Ctrl-C, SIGKILL —
closes the write end, and the guardian releases the place. The holder waits for that release
before it returns, so the next command finds the place free. docs/farm.md.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from ..errors import SeedfwError

CLIENT = "labgrid-client"
HELD_BY = re.compile(r"already acquired by (\S+?)\.?(?:\s|$)")
RELEASE_WAIT = 30.0          # seconds the guardian has to release (labgrid-client's own start-up)


@dataclass
class Held:
    """An acquired place (what `held` yields); `resources()` asks the coordinator for what
    the place acquired (one more labgrid-client call, so only when asked)."""

    place: str
    coordinator: str | None = None

    def resources(self) -> list[str]:
        return acquired_resources(self.place, self.coordinator)


def client_command(place: str | None, *args: str, coordinator: str | None = None) -> list[str]:
    exe = shutil.which(CLIENT)
    if exe is None:
        raise SeedfwError(f"{CLIENT} not found: the 'lab' extra is not installed "
                          "(run 'invoke setup')", None, "--place")
    cmd = [exe]
    if coordinator:
        cmd += ["-x", coordinator]
    return cmd + (["-p", place] if place else []) + list(args)


def run_client(place: str | None, *args: str, coordinator: str | None = None,
               timeout: float = 60.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(client_command(place, *args, coordinator=coordinator),
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SeedfwError(f"{CLIENT} {' '.join(args)} did not answer within {timeout:g} s "
                          "(is the coordinator up? LG_COORDINATOR)", None, "--place") from None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def holder(place: str, coordinator: str | None = None) -> str | None:
    """Who holds the place (labgrid's host/user), or None when it is free."""
    proc = run_client(place, "show", coordinator=coordinator)
    if proc.returncode:
        raise SeedfwError(f"{CLIENT} show: {_last_line(proc.stderr + proc.stdout)}", None,
                          "--place")
    m = re.search(r"^\s*acquired: (\S+)\s*$", proc.stdout, re.M)
    return None if m is None or m.group(1) == "None" else m.group(1)


def acquired_resources(place: str, coordinator: str | None = None) -> list[str]:
    proc = run_client(place, "show", coordinator=coordinator)
    text = proc.stdout.split("acquired resources:", 1)
    if len(text) < 2:
        return []
    out = []
    for line in text[1].splitlines()[1:] if text[1].startswith("\n") else text[1].splitlines():
        if not line.startswith("    "):
            break
        out.append(line.strip())
    return out


def acquire(place: str, coordinator: str | None = None) -> None:
    proc = run_client(place, "acquire", coordinator=coordinator)
    if proc.returncode == 0:
        return
    text = proc.stderr + proc.stdout
    m = HELD_BY.search(text)
    who = m.group(1) if m else (holder(place, coordinator) if "acquired" in text else None)
    if who:
        raise SeedfwError(f"place '{place}' is held by {who} (ask them, or wait: "
                          f"labgrid-client -p {place} show)", None, "--place")
    raise SeedfwError(f"cannot acquire place '{place}': {_last_line(text)}", None, "--place")


def release(place: str, coordinator: str | None = None) -> bool:
    proc = run_client(place, "release", coordinator=coordinator)
    return proc.returncode == 0


def start_guardian(place: str, coordinator: str | None = None) -> subprocess.Popen:
    """The process that releases the place once the holder is gone (see the module doc)."""
    env = dict(os.environ)
    if coordinator:
        env["LG_COORDINATOR"] = coordinator
    # the guardian imports seedfw from where this process did (a worktree's PYTHONPATH)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    return subprocess.Popen([sys.executable, "-m", "seedfw.lab.guard", place],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True,
                            close_fds=True)


@contextlib.contextmanager
def held(place: str | None, board: str | None = None, coordinator: str | None = None):
    """Acquire `place` for the block and release it always; yields a `Held` (None without a
    place: the command's local path, unchanged)."""
    if not place:
        yield None
        return
    from .generate import board_place

    if board:
        board_place(board, place)            # the board's own place, or one line saying not
    acquire(place, coordinator)
    try:
        guardian = start_guardian(place, coordinator)
    except BaseException:
        release(place, coordinator)
        raise
    try:
        yield Held(place, coordinator)
    finally:
        guardian.stdin.close()               # the guardian releases the place now
        try:
            guardian.wait(RELEASE_WAIT)
        except subprocess.TimeoutExpired:
            guardian.kill()
            guardian.wait()
            release(place, coordinator)
