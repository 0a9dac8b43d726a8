"""Named plug-ins: one ordered table of name -> "module:Class" per kind (report sections, flash
runners, counter sources, parts).

The table is the only list of names: listing them (`names()`, for a schema enum or a help text)
imports nothing, so a plug-in's heavy dependencies load only when it is used (`get`).

    SECTIONS = Registry("report section", {"images": "seedfw.report.sections.images:Images"})
    SECTIONS.names()          # ("images",) in table order
    SECTIONS.get("images")    # the class
"""

from __future__ import annotations

import importlib

from .errors import SeedfwError


class Registry:
    def __init__(self, kind: str, entries: dict[str, str]):
        for name, target in entries.items():
            module, sep, cls = target.partition(":")
            if not (module and sep and cls):      # a typo here is ours, not the user's
                raise ValueError(f"{kind} '{name}': {target!r} is not 'module:Class'")
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def get(self, name: str, file=None, field=None):
        """The class registered as `name`; SeedfwError naming the known ones (and the file and
        field that asked for it, when given) otherwise."""
        if name not in self._entries:
            raise SeedfwError(f"no {self.kind} '{name}' (known: {', '.join(self._entries)})",
                              file, field)
        module, cls = self._entries[name].split(":")
        return getattr(importlib.import_module(module), cls)
