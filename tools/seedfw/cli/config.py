"""Configuration and board tasks: config, menuconfig, savedefconfig, boards."""

from __future__ import annotations

import json as jsonlib
import os
import sys

from . import command
from ..paths import shown as shown_path
from .. import boards, config as kcfg, textout
from ..config import explain as kexplain
from ..errors import SeedfwError

__all__ = ["config", "menuconfig", "savedefconfig", "boards_"]

_BOARD_HELP = "board name (see 'invoke boards')"
_OUTPUT_HELP = "output directory (default output/<board>/), like Buildroot's O="


def default_board(board: str | None) -> str:
    board = board or os.environ.get("SEEDFW_BOARD")
    if not board:
        raise SeedfwError("no board given (use --board NAME or set SEEDFW_BOARD)")
    return board


def print_warnings(cfg) -> None:
    for w in cfg.warnings:
        print(f"warning: {w}", file=sys.stderr)


@command(iterable=["fragment"], help={
    "board": _BOARD_HELP, "output": _OUTPUT_HELP,
    "fragment": "configuration fragment merged after the defconfig (repeatable, in order)",
    "strict": "treat values that do not stick (unmet dependencies) as errors",
    "explain": "print SYMBOL's value, where it was set, and the dependencies that allow or block it",
})
def config(c, board=None, output=None, fragment=None, strict=False, explain=None):
    """Configure a board: defconfig + fragments -> .config.

    Configure a board: defconfig + fragments + your menuconfig changes -> .config, autoconf.h, config.json."""
    board = default_board(board)
    if explain:
        cfg = kcfg.resolve(board, output, fragment or (), strict)
        print("\n".join(kexplain.explain(cfg, explain)))
        return
    cfg = kcfg.configure(board, output, fragment or (), strict)
    print_warnings(cfg)
    print(f"configured {board}: {shown_path(cfg.outdir / '.config')}")


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP})
def menuconfig(c, board=None, output=None):
    """Edit a board's configuration in a terminal menu.

    Edit a board's configuration in kconfiglib's terminal menuconfig; changes persist as user.fragment."""
    import menuconfig as kmenu

    board = default_board(board)
    cfg = kcfg.configure(board, output)
    dotconfig = cfg.outdir / ".config"
    os.environ["KCONFIG_CONFIG"] = str(dotconfig)
    cfg.kconf.load_config(str(dotconfig))
    kmenu.menuconfig(cfg.kconf)
    changed = kcfg.record_user_changes(cfg, dotconfig)
    kcfg.configure(board, output)
    print(f"kept {len(changed)} change(s) in {cfg.outdir / kcfg.USER_FRAGMENT}: {' '.join(changed) or '-'}")


@command(help={"board": _BOARD_HELP, "output": _OUTPUT_HELP,
               "to": "where to write the minimal defconfig (default <output>/defconfig)"})
def savedefconfig(c, board=None, output=None, to=None):
    """Write a minimal defconfig of the current configuration.

    Write a minimal defconfig of the current configuration (only what differs from defaults)."""
    board = default_board(board)
    path = kcfg.savedefconfig(board, output, to)
    print(f"wrote {shown_path(path)}")


@command(name="boards", help={"json": "print JSON for machines",
                              "check": "validate a board.yaml file (e.g. a new board) and print its summary"})
def boards_(c, json=False, check=None):
    """List the boards: name, SoC, architecture, description.

    One line per board; --json for machines, --check FILE validates a new board.yaml."""
    if check:
        b = boards.load_file(check)
        from ..reading import plain
        print(plain(f"{check}: ok ({b.name}, {b.soc}, {b.arch})"))
        return
    items = [boards.get(n).summary() for n in boards.names()]
    if json:
        print(jsonlib.dumps(items, indent=2))
        return
    print(textout.table([(b["name"], b["soc"], b["arch"], b["description"]) for b in items],
                        first=3))
