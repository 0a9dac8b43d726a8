"""How a plan's steps meet: by role (seedfw.parts.base.Output), never by file or step name.

`link` is Plan.link's body, here so plan.py stays the runner: every declared Output is added to
the outputs of the step that makes it (what a skip and the artifact store check), every role a
step needs becomes a dependency on the steps providing it, and `Step.files` what it resolved
to. A role nothing provides is refused with one line naming the step, the role and the parts
that could provide it; a need that is neither a role nor `plan.source(path)` is refused too:
a typo must never drop a dependency without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError


@dataclass(frozen=True)
class Source:
    """A file of the tree or the board that a step reads and no step makes (see Step.needs)."""

    path: Path


def source(path) -> Source:
    return Source(Path(path))


def link(steps: dict, declared: list, hints: list) -> None:
    """steps: name → Step; declared: (part, Output); hints: (part, roles, when)."""
    for part, out in declared:
        step = steps.get(out.step)
        if step is None:
            raise SeedfwError(f"part {part} declares {out.name} as made by step "
                              f"'{out.step}', which is not in the plan")
        if Path(out.path) not in map(Path, step.outputs):
            step.outputs = (*step.outputs, Path(out.path))
    producers: dict[Path, str] = {}
    for step in steps.values():
        for out in step.outputs:
            other = producers.setdefault(Path(out), step.name)
            if other != step.name:
                raise SeedfwError(f"steps '{other}' and '{step.name}' both declare {out}")
    roles: dict[str, list[tuple[str, Path]]] = {}
    for _, out in declared:
        for role in out.roles:
            roles.setdefault(role, []).append((out.step, Path(out.path)))
    for step in steps.values():
        files, linked = [], []
        for need in step.needs:
            if isinstance(need, Source):
                files.append(need.path)
                continue
            if not isinstance(need, str):
                raise SeedfwError(f"step {step.name} needs {need}: a need is a role or "
                                  "plan.source(path), never another part's file")
            if need not in roles:
                raise SeedfwError(unmet(step.name, need, hints))
            for maker, path in roles[need]:
                files.append(path)
                if maker != step.name:
                    linked.append(maker)
        step.files = tuple(dict.fromkeys(files))
        step.deps = tuple(dict.fromkeys((*step.deps, *linked)))


def unmet(step: str, role: str, hints) -> str:
    could = [f"{part} provides it when {when or 'enabled'}"
             for part, provides, when in hints if role in provides]
    return (f"step {step} needs role '{role}', which no enabled part provides"
            + (f" ({'; '.join(could)})" if could else ""))
