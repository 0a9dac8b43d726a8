"""The search space, declared from Kconfig: a list of symbol names, and Kconfig says the rest.

A named `choice` becomes a categorical over its member symbols, an int symbol with a `range`
an integer parameter over that range, a bool a categorical y/n. Only an optional step is
given here (`COMPRESS_DICT_SIZE/1024`), because Kconfig has no notion of a sensible stride and
65,537 dictionary sizes would drown the sampler; the bounds themselves are never repeated.

A symbol the board's configuration cannot change (not defined for the board, no prompt, or a
bool that another option `select`s) is dropped from the default space and refused when the
user names it, so that a trial never records a parameter that had no effect.

Which values a trial may take is Kconfig's answer too, asked at every parameter (`Space`):
Optuna's define-by-run API samples the parameters in Kconfig's menu order, each value is set
in a kconfiglib instance before the next parameter is looked at, and a parameter is only
sampled when it is visible given the values so far (a choice over its visible members, an int
over its active range, a bool only when both values are assignable), and a bool or choice
value only when it leaves the values sampled before it as they were (an option that `select`s
an earlier one would overturn it). The base is the study's own (seedfw.tune.trial.base_config:
the defconfig plus the pins every trial builds with). So a rule written as a
`depends on` (COMPRESS_DICT_RESIDENT depends on !TFA_COMPRESS_RODATA: BL31's decoder runs
before any resident bytes are in memory) is a rule of the search space, with no second copy
here, and no trial is spent on a configuration the build would refuse.

Why a restricted choice gets its own Optuna name (`COMPRESS_DICT_SOURCE[NONE,TRAINED,FILE]`):
Optuna refuses a categorical whose choices change between trials ("dynamic value space"), and
the usual way to a conditional space is one parameter per branch. `symbol_of` maps the name
back; trial values, reports and exported fragments always use the Kconfig name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import kconfiglib

from ..errors import SeedfwError

# The knobs of issue 14: whether BL31 compresses its .rodata (or the board's own switch),
# block size, HC level, dictionary source and size, decoder variant. Not the power profile
# (POWER_PROFILE_CHOICE, searchable with --space): it only picks the DVFS table's starting
# profile, which changes no objective here. (Its ULTRA_LOW, which the payload's DVFS hints
# reject on qemu-aarch64, is hidden by Kconfig there, so --space samples it only where valid.)
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
            value = int(kconf.syms[p.name].str_value or str(p.low), 0)
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


# ---- the conditional space: Kconfig's visibility at every parameter ---------------------------

def symbol_of(optuna_name: str) -> str:
    """The Kconfig name of an Optuna parameter (a restricted choice carries its members)."""
    return optuna_name.partition("[")[0]


def trial_values(optuna_params: dict) -> dict:
    """A trial's parameters under their Kconfig names."""
    return {symbol_of(k): v for k, v in optuna_params.items()}


class Space:
    """The parameters with the Kconfig that decides which are live in a trial.

    kconf: a parsed Kconfig holding the base configuration (the defconfig's values, as from
    seedfw.config.resolve); each sampling starts again from those values. kconf=None gives the
    naive independent space (every parameter over its whole domain, whatever the others are):
    the old behaviour, kept as the negative control of tests/test_tune_space.py."""

    def __init__(self, params: list[Param], kconf=None):
        self.params = list(params)
        self.kconf = kconf
        if kconf is not None:
            # Only the parameters' own symbols are ever set here, so only they are restored:
            # resetting every symbol cost 0.28 s a sample, this a few ms.
            self._choices = [self._item(p) for p in self.params if p.kind == "choice"]
            syms = [s for c in self._choices for s in c.syms]
            syms += [self._item(p) for p in self.params if p.kind != "choice"]
            self._base = {s: s.user_value for s in syms}
            self._by_name = {p.name: p for p in self.params}
            order = {id(node.item): i for i, node in enumerate(kconf.node_iter())}
            self.params.sort(key=lambda p: order.get(id(self._item(p)), len(order)))

    def _item(self, p: Param):
        if p.kind == "choice":
            return _find_choice(self.kconf, p.name)
        return self.kconf.syms[p.name]

    def reset(self) -> None:
        """Back to the base configuration (the user values it was resolved with)."""
        for choice in self._choices:
            choice.unset_value()
        for sym, value in self._base.items():
            if value is None:
                sym.unset_value()
            else:
                sym.set_value(value)

    def live(self, p: Param, so_far: dict | None = None):
        """(Optuna name, distribution) of `p` given the values set so far (`so_far`, by Kconfig
        name), or None when Kconfig leaves it nothing to choose (invisible, one assignable
        value, or only one value that keeps every earlier one)."""
        if self.kconf is None:
            return p.name, p.distribution()
        import optuna.distributions as d
        item = self._item(p)
        so_far = so_far or {}
        if p.kind == "choice":
            members = tuple(m for m in p.values if self.kconf.syms[m].visibility
                            and self._keeps(p, m, so_far))
            if not item.visibility or len(members) < 2:
                return None
            if members == p.values:
                return p.name, p.distribution()
            prefix = os.path.commonprefix(list(p.values))
            prefix = prefix[:prefix.rfind("_") + 1]
            short = [m[len(prefix):] for m in members]
            return f"{p.name}[{','.join(short)}]", d.CategoricalDistribution(list(members))
        if p.kind == "bool":
            if len(item.assignable) < 2 or not all(self._keeps(p, v, so_far) for v in p.values):
                return None
            return p.name, p.distribution()
        if not item.visibility:
            return None
        ranges = [(lo, hi) for lo, hi, cond in item.ranges if kconfiglib.expr_value(cond)]
        if ranges:
            low, high = int(ranges[0][0].str_value, 0), int(ranges[0][1].str_value, 0)
            if (low, high) != (p.low, p.high):
                # A range that depends on other symbols: the part of the grid inside it.
                first = p.low + -(-(low - p.low) // p.step) * p.step
                last = p.low + (high - p.low) // p.step * p.step
                if first > last:
                    return None
                return p.name, d.IntDistribution(first, last, step=p.step)
        return p.name, p.distribution()

    def _keeps(self, p: Param, value, so_far: dict) -> bool:
        """Whether giving `p` this value leaves every value sampled before it as it was.

        Visibility looks only forward: a later option that `select`s an earlier one (the
        compression options select TFA_SEPARATE_CODE_AND_RODATA, which comes first in the menu)
        would overturn a value already sampled, and the trial would record a parameter its
        build did not use. So a bool or choice value that would is not offered. Ints are not
        tried (Kconfig cannot `select` through an int); a bool has at most two values here and
        a choice a handful, so this costs a few kconfiglib assignments per parameter."""
        if not so_far:
            return True
        earlier = [self._by_name[n] for n in so_far]
        self.set(p, value)
        try:
            return current_values(self.kconf, earlier) == so_far
        finally:
            self._restore(p)

    def _restore(self, p: Param) -> None:
        """`p` back to its base value (only `p`: the earlier parameters keep their values)."""
        if p.kind == "choice":
            choice = self._item(p)
            choice.unset_value()
            syms = choice.syms
        else:
            syms = [self._item(p)]
        for sym in syms:
            value = self._base[sym]
            if value is None:
                sym.unset_value()
            else:
                sym.set_value(value)

    def set(self, p: Param, value) -> None:
        if p.kind == "choice":
            self.kconf.syms[value].set_value(2)
        elif p.kind == "bool":
            self.kconf.syms[p.name].set_value(2 if value == "y" else 0)
        else:
            self.kconf.syms[p.name].set_value(str(int(value)))

    def sample(self, pick) -> dict:
        """Define-by-run: pick(optuna_name, distribution) -> value for each live parameter, in
        Kconfig order; returns {Kconfig name: value} of the parameters that were live."""
        if self.kconf is not None:
            self.reset()
        values = {}
        try:
            for p in self.params:
                live = self.live(p, values)
                if live is None:
                    continue
                values[p.name] = pick(*live)
                if self.kconf is not None:
                    self.set(p, values[p.name])
        finally:
            if self.kconf is not None:      # the caller's Kconfig holds the base again
                self.reset()
        return values

    def suggest(self, trial) -> dict:
        """The values of an asked Optuna trial."""
        import optuna.distributions as d

        def pick(name, dist):
            if isinstance(dist, d.IntDistribution):
                return trial.suggest_int(name, dist.low, dist.high, step=dist.step)
            return trial.suggest_categorical(name, dist.choices)
        return self.sample(pick)

    def fixed(self, values: dict) -> dict:
        """{Optuna name: value} of a configuration given by Kconfig names (for enqueue_trial):
        the names its sampling would use, only for the parameters live in it."""
        names = {}

        def pick(name, dist):
            value = values[symbol_of(name)]
            names[name] = value
            return value
        self.sample(pick)
        return names

    def refused(self, values: dict) -> list[str]:
        """The sampled values that did not stick in Kconfig (empty for a valid configuration)."""
        self.reset()
        try:
            for p in self.params:
                if p.name in values:
                    self.set(p, values[p.name])
            got = current_values(self.kconf, [p for p in self.params if p.name in values])
        finally:
            self.reset()
        return [f"CONFIG_{k}: {v} -> {got[k]}" for k, v in values.items() if got[k] != v]
