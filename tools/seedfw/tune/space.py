"""The search space, declared from Kconfig: a list of symbol names, and Kconfig says the rest.

A named `choice` becomes a categorical over its member symbols, an int symbol with a `range`
an integer parameter over that range, a bool a categorical y/n. Only an optional step is
given here (`COMPRESS_DICT_SIZE/1024`), because Kconfig has no notion of a sensible stride and
65,537 dictionary sizes would drown the sampler; the bounds themselves are never repeated.

A symbol the board's configuration cannot change (not defined for the board, no prompt, or a
bool that another option `select`s) is dropped from the default space and refused when the
user names it, so that a trial never records a parameter that had no effect.
"""

from __future__ import annotations

from dataclasses import dataclass

import kconfiglib

from ..errors import SeedfwError

# The knobs of issue 14: whether BL31 compresses its .rodata (or the board's own switch),
# block size, HC level, dictionary source and size, decoder variant. Not the power profile
# (POWER_PROFILE_CHOICE, searchable with --space): it only picks the DVFS table's starting
# profile, which changes no objective here, and the payload's own DVFS hints reject
# ULTRA_LOW at image.pack, so it would spend trials on failures.
DEFAULT_SPACE = ("TFA_COMPRESS_RODATA", "RK3588_COMPRESS_RODATA", "COMPRESS_BLOCK",
                 "COMPRESS_HC_LEVEL", "COMPRESS_DICT_SOURCE", "COMPRESS_DICT_SIZE/1024",
                 "LZ4_DECODER_CHOICE")


@dataclass(frozen=True)
class Param:
    """One dimension. kind: "choice" (values = member symbols), "int" (low..high by step),
    "bool" (values = y, n)."""

    name: str
    kind: str
    values: tuple = ()
    low: int = 0
    high: int = 0
    step: int = 1

    def distribution(self):
        import optuna.distributions as d
        if self.kind == "int":
            return d.IntDistribution(self.low, self.high, step=self.step)
        return d.CategoricalDistribution(list(self.values))

    def fragment_lines(self, value) -> list[str]:
        """Kconfig fragment lines that give this parameter `value`."""
        if self.kind == "choice":
            return [f"CONFIG_{value}=y"]
        if self.kind == "bool":
            return [f"CONFIG_{self.name}=y" if value == "y" else f"# CONFIG_{self.name} is not set"]
        return [f"CONFIG_{self.name}={int(value)}"]

    def describe(self) -> dict:
        if self.kind == "int":
            return {"name": self.name, "kind": "int", "low": self.low, "high": self.high,
                    "step": self.step}
        return {"name": self.name, "kind": self.kind, "values": list(self.values)}


def _find_choice(kconf, name: str):
    return next((c for c in kconf.unique_choices if c.name == name), None)


def _param(kconf, entry: str, where: str, strict: bool) -> Param | None:
    name, _, step_text = entry.partition("/")
    name = name.strip().removeprefix("CONFIG_")
    try:
        step = int(step_text) if step_text else 1
    except ValueError:
        raise SeedfwError(f"step '{step_text}' of {name} is not an integer", None, where) from None

    def refuse(why):
        if strict:
            raise SeedfwError(f"CONFIG_{name} cannot be tuned: {why}", None, where)
        return None

    choice = _find_choice(kconf, name)
    if choice is not None:
        members = tuple(s.name for s in choice.syms if s.nodes and any(n.prompt for n in s.nodes))
        if not choice.visibility or len(members) < 2:
            return refuse("the choice is not visible for this board")
        return Param(name, "choice", members)
    sym = kconf.syms.get(name)
    if sym is None or not sym.nodes:
        return refuse("no such symbol or choice in this board's Kconfig")
    if not any(n.prompt for n in sym.nodes):
        return refuse("it has no prompt (derived from other symbols)")
    if sym.orig_type == kconfiglib.BOOL:
        if len(sym.assignable) < 2:
            return refuse("another option selects it, or its dependencies are not met")
        return Param(name, "bool", ("y", "n"))
    if sym.orig_type == kconfiglib.INT:
        ranges = [(lo, hi) for lo, hi, cond in sym.ranges if kconfiglib.expr_value(cond)]
        if not ranges:
            return refuse("an int without a 'range' in Kconfig")
        low, high = int(ranges[0][0].str_value, 0), int(ranges[0][1].str_value, 0)
        if step < 1 or (high - low) % step:
            raise SeedfwError(f"step {step} does not divide the range {low}..{high} of {name}",
                              None, where)
        return Param(name, "int", low=low, high=high, step=step)
    return refuse(f"a {kconfiglib.TYPE_TO_STR[sym.orig_type]} symbol (only choices, bools and "
                  "ints with a range are searched)")


def load(kconf, entries=None, where: str = "--space") -> list[Param]:
    """The space for a board's parsed Kconfig (seedfw.config.resolve(...).kconf, so that
    dependencies are evaluated with the defconfig's values). `entries`: the user's list
    (strict: a symbol that cannot be tuned is an error), or None for DEFAULT_SPACE."""
    strict = entries is not None
    params = []
    for entry in (entries if strict else DEFAULT_SPACE):
        if not entry.strip():
            continue
        p = _param(kconf, entry, where, strict)
        if p is not None and p.name not in {q.name for q in params}:
            params.append(p)
    if not params:
        raise SeedfwError("the search space is empty for this board", None, where)
    return params


def current_values(kconf, params: list[Param]) -> dict:
    """The parameters' values in a resolved configuration (the defconfig's point)."""
    out = {}
    for p in params:
        if p.kind == "choice":
            sel = _find_choice(kconf, p.name).selection
            out[p.name] = sel.name if sel is not None else p.values[0]
        elif p.kind == "bool":
            out[p.name] = "y" if kconf.syms[p.name].tri_value == 2 else "n"
        else:
            value = int(kconf.syms[p.name].str_value or p.low, 0)
            # Snap onto the grid (a default of 2048 with step 1024 is on it; others may not be)
            out[p.name] = min(p.high, p.low + round((value - p.low) / p.step) * p.step)
    return out


def fragment(params: list[Param], values: dict, header: str = "") -> str:
    lines = [header] if header else []
    for p in params:
        if p.name in values:
            lines += p.fragment_lines(values[p.name])
    return "\n".join(lines) + "\n"


def by_name(params: list[Param]) -> dict[str, Param]:
    return {p.name: p for p in params}
