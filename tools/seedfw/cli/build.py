"""Build tasks: build, run, clean, distclean."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from . import command
from .config import default_board
from .. import boards
from ..errors import SeedfwError
from .. import paths
from ..paths import ROOT, output_dir

__all__ = ["build", "run", "clean", "distclean"]

# --allow-missing-blobs is this fragment (CONFIG_UBOOT_ALLOW_MISSING_BLOBS=y), so the choice is in
# the configuration hash, the .config and every stamp like any other setting.
ALLOW_MISSING_BLOBS = ROOT / "configs" / "allow-missing-blobs.fragment"
_BOARD_HELP = ("board name, 'all' for every board, or a comma-separated list (see 'invoke boards'); "
               "several boards build at the same time")
_OUTPUT_HELP = "output directory (default output/<board>/; with several boards: DIR/<board>)"


def _outputs(board: str, output: str | None) -> list[tuple[str, Path | None]]:
    if "," in board:
        names = [boards.get(n.strip()).name for n in board.split(",") if n.strip()]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise SeedfwError(f"board {twice[0]} is named twice", field="--board")
    else:
        names = [b.name for b in boards.resolve(board)]
    if board == "all" or "," in board:
        return [(n, Path(output) / n if output else None) for n in names]
    return [(names[0], Path(output) if output else None)]


@command(iterable=["fragment"], help={
    "board": _BOARD_HELP, "output": _OUTPUT_HELP,
    "fragment": "configuration fragment merged after the defconfig (repeatable, in order)",
    "jobs": "one board: steps run in parallel (default: number of cores); several boards: jobs "
            "in total, steps and their makes' compilers together (one shared make jobserver)",
    "strict": "treat configuration values that do not stick as errors",
    "allow_missing_blobs": "a missing vendor blob (rkbin DDR init) gives NON-FUNCTIONAL placeholder "
                           "images instead of an error (CI of forks; invoke flash refuses them)",
    "no_store": "build every step that is not up to date here: take nothing from the artifact "
                "store and put nothing in it (see docs/artifact-cache.md)",
})
def build(c, board=None, output=None, fragment=None, jobs=0, strict=False, allow_missing_blobs=False,
          no_store=False):
    """Build a board's firmware into <out>/images.

    Build a board's firmware (TF-A, payload, MCU) into <out>/images with stamps, logs and a manifest."""
    from rich.console import Console   # rich and the build machinery: only when building

    from .. import build as build_mod

    console = Console(highlight=False, soft_wrap=True)
    targets = _outputs(default_board(board), output)
    frags = list(fragment or ()) + ([str(ALLOW_MISSING_BLOBS)] if allow_missing_blobs else [])
    if len(targets) > 1:
        return _build_boards(targets, frags, int(jobs) or None, strict, console, not no_store)
    name, out = targets[0]
    result = build_mod.build(name, out, frags, jobs=int(jobs) or None, strict=strict, console=console,
                             store=not no_store)
    line = _models_line(result)
    if line:
        console.print(line)


def _build_boards(targets, frags, jobs, strict, console, store=True) -> None:
    """Every board at once under one job limit (seedfw.build.multi); then one summary line per
    board. Exit status: 0 when every board built; 1 with the one line
    `error: N of M boards failed: <board> (step <step>), …` on stderr when any failed (the
    others still ran to their end); 130 and `interrupted` on Ctrl-C."""
    from ..build import multi as multibuild

    started = time.monotonic()
    outcomes = multibuild.build_all(targets, frags, jobs, strict, console, store=store)
    for o in outcomes:
        line = _models_line(o.result) if o.result else None
        if line:
            console.print(f"{o.board}: {line.strip()}")
    ran = sum(len(o.result.ran) for o in outcomes if o.result)
    restored = sum(len(o.result.restored) for o in outcomes if o.result)
    ok = sum(o.status == "ok" for o in outcomes)
    console.print(f"[bold]{ok} of {len(outcomes)} boards[/] built, {ran} step(s) ran, "
                  + (f"{restored} restored, " if restored else "") +
                  f"{time.monotonic() - started:.1f} s (wall clock, measured):", markup=True)
    for line in multibuild.summary_lines(outcomes):
        console.print(line, markup=False)
    err = multibuild.failure(outcomes)
    if err is not None:
        raise err


def _models_line(result) -> str | None:
    """The build's model summary, with synthetic blobs flagged (seedfw.models decides which:
    the blob's own metadata), so nobody ships filler believing it is a network."""
    from rich.markup import escape

    from .. import models
    from ..report.inputs import read_config

    values, _ = read_config(result.outdir)
    ms = models.for_build(boards.get(result.board), values or {})
    if not ms:
        return None
    fake = models.synthetic_summary(ms)
    line = f"  models  {len(ms)} blobs, {sum(m.stored_size for m in ms)} bytes stored"
    if fake:
        return f"{escape(line)}; [bold yellow]{escape(fake)}[/]"
    return escape(line)


@command(help={"board": "board name", "output": _OUTPUT_HELP,
               "timeout": "seconds the guest has to power off or print its ready line (default 30)",
               "until": "regular expression: stop with success once a UART line matches it "
                        "(overrides board.yaml qemu.ready)",
               "counters": "count memory traffic with seedfw's QEMU plugin (-icount; slower) into "
                           "<out>/counters/emulated-run.json",
               "place": "labgrid place to hold for the run (acquired, released always)"})
def run(c, board=None, output=None, timeout=30.0, until=None, counters=False, place=None):
    """Boot a built board in QEMU and stream its UART.

    Boot a built board in QEMU; stream the UART to the terminal and <out>/logs/run.log."""
    name = default_board(board)
    if name == "all":
        raise SeedfwError("'run' takes one board, not 'all'")
    from ..run import payload as qemu

    brd = boards.get(name)
    outdir = output_dir(name, output)
    counted = None
    if counters:
        from ..counters import emulated
        counted = emulated.default_file(outdir, "run")
    extra = emulated.qemu_args(brd, outdir, counted) if counted else []
    from ..lab import held
    with held(place, name):
        result = qemu.run(brd, outdir, timeout=float(timeout), until=until, extra_args=extra)
    if result.ready_line is not None and result.returncode is None:
        print(f"guest ready after {result.seconds:.1f} s (UART line matched "
              f"'{qemu.ready_pattern(brd, until).pattern}'); QEMU stopped; UART log: {result.log}")
    else:
        print(f"guest powered off after {result.seconds:.1f} s (exit status {result.returncode}); "
              f"UART log: {result.log}")
    if counted:
        print(emulated.summary_line(emulated.collect(brd, outdir, counted, "run")) +
              f"; {counted}")


# Only a directory carrying seedfw's marker (paths.OUTPUT_MARKER, written when seedfw creates
# an output directory) is cleaned: `--output .`, a mistyped path, a directory that merely has a
# `.config` or a Buildroot-like tree never loses its `build/` folder or anything else.


def _check_output_dir(outdir: Path) -> bool:
    """True when `outdir` exists and is a seedfw output directory (or empty); False when absent."""
    if not outdir.exists():
        return False
    if not outdir.is_dir():
        raise SeedfwError("not a directory", outdir, "--output")
    if outdir.is_symlink():
        raise SeedfwError("is a symlink; not touching it", outdir, "--output")
    if not paths.is_output_dir(outdir):
        raise SeedfwError(f"not a seedfw output directory (no {paths.OUTPUT_MARKER}, which "
                          "seedfw writes when it creates one); not touching it", outdir,
                          "--output")
    return True


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP})
def clean(c, board=None, output=None):
    """Remove build trees, stamps and images (keeps .config).

    Remove build trees, stamps, images and manifest (keeps .config, logs and the download cache)."""
    for name, out in _outputs(default_board(board), output):
        outdir = output_dir(name, out)
        if not _check_output_dir(outdir):
            print(f"nothing to clean: {outdir} does not exist")
            continue
        for sub in ("build", "stamps", "images"):
            shutil.rmtree(outdir / sub, ignore_errors=True)
        (outdir / "manifest.json").unlink(missing_ok=True)
        print(f"cleaned {outdir}")


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP})
def distclean(c, board=None, output=None):
    """Remove a board's whole output directory.

    Remove a board's whole output directory (the download cache stays)."""
    for name, out in _outputs(default_board(board), output):
        outdir = output_dir(name, out)
        if not _check_output_dir(outdir):
            print(f"nothing to remove: {outdir} does not exist")
            continue
        shutil.rmtree(outdir)
        print(f"removed {outdir}")
