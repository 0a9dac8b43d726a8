"""`invoke config --explain SYMBOL`: why a symbol has the value it has.

Answers the three questions an engineer asks when an option "does not work": what is the value,
who set it (a file:line of a defconfig/fragment, or a Kconfig default, or a select), and which
dependencies allow or block it, each with its current value.
"""

from __future__ import annotations

import kconfiglib
from kconfiglib import expr_str, expr_value

from . import Config
from ..errors import SeedfwError

_TRI = {0: "n", 1: "m", 2: "y"}


def _expr(e) -> str:
    """An expression with the value of each symbol in it, like menuconfig's help screen."""
    return kconfiglib.expr_str(e, lambda sc: f"{sc.name} [={sc.str_value or 'n'}]"
                               if isinstance(sc, kconfiglib.Symbol) and not sc.is_constant
                               else kconfiglib.standard_sc_expr_str(sc))


def _ok(e) -> str:
    return "satisfied" if expr_value(e) else "NOT satisfied"


def explain(cfg: Config, name: str) -> list[str]:
    name = name.removeprefix("CONFIG_")
    kconf = cfg.kconf
    sym = kconf.syms.get(name)
    if sym is None or not sym.nodes:
        raise SeedfwError(f"undefined symbol CONFIG_{name}", field="--explain")
    lines = [f"CONFIG_{name} = {sym.str_value or 'n'}"
             f"  ({kconfiglib.TYPE_TO_STR[sym.orig_type]}, board {cfg.board.name})"]
    for node in sym.nodes:
        prompt = f' prompt "{node.prompt[0]}"' if node.prompt else " (no prompt: set only by defaults/select)"
        lines.append(f"  defined at {node.filename}:{node.linenr}{prompt}")

    assigned = cfg.origins.get(name)
    if assigned:
        stuck = sym.str_value == assigned.value or (
            sym.orig_type in (kconfiglib.INT, kconfiglib.HEX) and sym.str_value
            and int(sym.str_value, 0) == int(assigned.value, 0))
        verb = "set" if stuck else f"assigned '{assigned.value}' but got '{sym.str_value or 'n'}'"
        lines.append(f"  value: {verb} at {assigned.where()}")
    elif expr_value(sym.rev_dep):
        lines.append(f"  value: selected by {_expr(sym.rev_dep)}")
    elif sym.choice is not None:
        lines.append(f"  value: choice {sym.choice.name or '(unnamed)'} selects "
                     f"{sym.choice.selection.name if sym.choice.selection else 'nothing'}")
    else:
        lines.append(f"  value: {_default_origin(sym)}")

    if sym.direct_dep is not kconf.y:
        lines.append(f"  depends on: {_expr(sym.direct_dep)} -> {_ok(sym.direct_dep)}")
    else:
        lines.append("  depends on: nothing")
    if sym.rev_dep is not kconf.n:
        lines.append(f"  selected by: {_expr(sym.rev_dep)} -> {'active' if expr_value(sym.rev_dep) else 'inactive'}")
    if sym.weak_rev_dep is not kconf.n:
        lines.append(f"  implied by: {_expr(sym.weak_rev_dep)}")
    for low, high, cond in sym.ranges:
        if expr_value(cond):
            lines.append(f"  range: {expr_str(low)}..{expr_str(high)}")
    for selected, cond in sym.selects:
        lines.append(f"  selects: {selected.name}" + (f" if {_expr(cond)}" if cond is not kconf.y else ""))
    return lines


def _default_origin(sym) -> str:
    for node in sym.nodes:
        for value, cond in node.defaults:
            if expr_value(cond):
                at = f"{node.filename}:{node.linenr}"
                when = f" if {_expr(cond)}" if cond is not sym.kconfig.y else ""
                return f"default {expr_str(value)}{when} (Kconfig {at})"
    if sym.orig_type in (kconfiglib.BOOL, kconfiglib.TRISTATE):
        return "n (no default applies and nothing sets it)"
    return "empty (no default applies)"
