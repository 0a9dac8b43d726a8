"""How a task reaches a board's probe: --probe wins, else the bench entry for the board (labgrid's
split: the bench file says what is there, this says how to talk to it)."""

from __future__ import annotations

import contextlib

from .. import paths
from ..errors import SeedfwError


@contextlib.contextmanager
def reach_probe(board, probe, bench_path, uart_log=None):
    """Yield (probe uid, pyOCD target or None, QemuGdbTarget or None) for a board: --probe wins,
    else the bench entry for the board; `qemu:auto` starts QEMU on loopback for the duration."""
    from ..lab import inventory as benchmod
    from ..run.bench import QemuGdbTarget

    entry = None
    if not probe:
        entries = benchmod.load(bench_path)         # no file: the board data's places
        entry = benchmod.entry_for_board(entries, board.name)
        if entry is None and not (bench_path or paths.env_path("SEEDFW_BENCH")):
            raise SeedfwError(f"no --probe, no bench file and no QEMU probe place for board "
                              f"'{board.name}'", None, "--probe")
        if entry is None:
            raise SeedfwError(f"no bench entry for board '{board.name}'", benchmod.bench_file(bench_path), "boards")
        probe = entry.probe
    target = entry.pyocd_target() if entry else None
    if entry is not None:
        benchmod.run_power(entry, "on")  # no-op unless the bench entry has a power.on command
    if probe.lower() == "qemu:auto":
        extra = entry.qemu_args if entry else ("-icount", "shift=3")
        with QemuGdbTarget(board, uart_log=uart_log, extra_args=extra) as q:
            yield q.uid, target, q
    else:
        yield probe, target, None
