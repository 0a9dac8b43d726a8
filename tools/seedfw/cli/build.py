"""Build tasks: build, run, clean, distclean."""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console

from . import command
from .config import default_board
from .. import boards, build as build_mod, qemu
from ..errors import SeedfwError
from ..paths import output_dir

__all__ = ["build", "run", "clean", "distclean"]

_BOARD_HELP = "board name, or 'all' for every board (see 'invoke boards')"
_OUTPUT_HELP = "output directory (default output/<board>/; with --board all: DIR/<board>)"


def _outputs(board: str, output: str | None) -> list[tuple[str, Path | None]]:
    names = [b.name for b in boards.resolve(board)]
    if board == "all":
        return [(n, Path(output) / n if output else None) for n in names]
    return [(names[0], Path(output) if output else None)]


@command(iterable=["fragment"], help={
    "board": _BOARD_HELP, "output": _OUTPUT_HELP,
    "fragment": "configuration fragment merged after the defconfig (repeatable, in order)",
    "jobs": "steps run in parallel (default: number of cores)",
    "strict": "treat configuration values that do not stick as errors",
})
def build(c, board=None, output=None, fragment=None, jobs=0, strict=False):
    """Build a board's firmware (TF-A, payload, MCU) into <out>/images with stamps, logs and a manifest."""
    console = Console(highlight=False, soft_wrap=True)
    for name, out in _outputs(default_board(board), output):
        build_mod.build(name, out, fragment or (), jobs=int(jobs) or None, strict=strict,
                        console=console)


@command(help={"board": "board name", "output": _OUTPUT_HELP,
               "timeout": "seconds the guest has to power off (default 30)"})
def run(c, board=None, output=None, timeout=30.0):
    """Boot a built board in QEMU; stream the UART to the terminal and <out>/logs/run.log."""
    name = default_board(board)
    if name == "all":
        raise SeedfwError("'run' takes one board, not 'all'")
    brd = boards.get(name)
    result = qemu.run(brd, output_dir(name, output), timeout=float(timeout))
    print(f"guest powered off after {result.seconds:.1f} s (exit status {result.returncode}); "
          f"UART log: {result.log}")


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP})
def clean(c, board=None, output=None):
    """Remove build trees, stamps and images (keeps .config and the download cache)."""
    for name, out in _outputs(default_board(board), output):
        outdir = output_dir(name, out)
        for sub in ("build", "stamps", "images"):
            shutil.rmtree(outdir / sub, ignore_errors=True)
        (outdir / "manifest.json").unlink(missing_ok=True)
        print(f"cleaned {outdir}")


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP})
def distclean(c, board=None, output=None):
    """Remove a board's whole output directory (the download cache stays)."""
    for name, out in _outputs(default_board(board), output):
        outdir = output_dir(name, out)
        shutil.rmtree(outdir, ignore_errors=True)
        print(f"removed {outdir}")
