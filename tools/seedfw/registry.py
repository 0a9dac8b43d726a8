"""Plug-in registries: for each kind (part, flash runner, counter source, report section) one
ordered table of name -> "module:Class" that is the only list of its names (west's
`get_runner_cls`, binman's `Entry.Lookup`).

Listing names (`names()`, for a schema enum, `invoke --list` or a help text) imports nothing, so a
plug-in's heavy dependencies load only when it is used (`get`). Every plug-in class must carry a
docstring: it is the plug-in's reference page, and `classes()` refuses an undocumented one the way
binman's WriteDocs refuses "Documentation is missing for modules".

    SECTIONS = Registry("report section", {"images": "seedfw.report.sections.images:Images"})
    SECTIONS.names()          # ("images",) in table order
    SECTIONS.get("images")    # the class
"""

from __future__ import annotations

import importlib
import inspect

from .errors import SeedfwError


class Registry:
    """Names of one plug-in kind → "module:Class", in the order given (the order a build uses)."""

    def __init__(self, kind: str, entries: dict[str, str]):
        for name, target in entries.items():
            module, sep, cls = target.partition(":")
            if not (module and sep and cls):      # a typo here is ours, not the user's
                raise ValueError(f"{kind} '{name}': {target!r} is not 'module:Class'")
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> tuple[str, ...]:
        """Every registered name, in order, without importing anything."""
        return tuple(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self._entries)

    def target(self, name: str) -> str:
        """"module:Class" of `name`, without importing it."""
        return self._entries[name]

    def get(self, name: str, file=None, field=None) -> type:
        """The class registered as `name`; SeedfwError naming the known ones (and the file and
        field that asked for it, when given) otherwise."""
        if name not in self._entries:
            raise SeedfwError(f"no {self.kind} '{name}' (known: {', '.join(self._entries)})",
                              file, field)
        module, cls = self._entries[name].split(":")
        return getattr(importlib.import_module(module), cls)

    def classes(self) -> list[tuple[str, type]]:
        """(name, class) for every entry, in order; a class without its own docstring is refused."""
        out = []
        for name in self._entries:
            cls = self.get(name)
            if not (cls.__dict__.get("__doc__") or "").strip():
                raise SeedfwError(f"documentation is missing for {self.kind} '{name}' "
                                  f"({self._entries[name]}): write its class docstring")
            out.append((name, cls))
        return out

    def doc(self, name: str) -> str:
        """The reference page of one plug-in: its class docstring, dedented."""
        return inspect.getdoc(self.get(name)) or ""
