"""One registry shape for every plug-in kind (flash runners, counter sources; parts and report
sections can use the same): `Registry(kind, {name: "module:Class"})`.

Why strings: `names()` answers without importing anything, so listing runners (or generating the
board.yaml schema enums from them) never imports pyOCD; `get(name)` imports the one module asked
for. The registry is the only list of names: the schema, the CLI and the tests read it.
"""

from __future__ import annotations

import importlib
from typing import Iterator

from .errors import SeedfwError


class Registry:
    """Names → "module:Class", in declaration order. `kind` names the plug-in in messages
    ("flash backend", "counter source")."""

    def __init__(self, kind: str, entries: dict[str, str]):
        for name, target in entries.items():
            if target.count(":") != 1:
                raise ValueError(f"{kind} '{name}': '{target}' is not 'module:Class'")
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> list[str]:
        """Every registered name, in declaration order (imports nothing)."""
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def target(self, name: str) -> str:
        return self._entries[name]

    def get(self, name: str, file=None, field: str | None = None):
        """The class registered as `name`; an unknown name is a SeedfwError naming `file` and
        `field` (where the name came from) and listing the known names."""
        if name not in self._entries:
            raise SeedfwError(f"no {self.kind} '{name}' (known: {', '.join(self._entries)})",
                              file, field)
        module, cls = self._entries[name].split(":")
        return getattr(importlib.import_module(module), cls)

    def classes(self) -> dict[str, type]:
        """Every registered class (imports every module: for tests and documentation)."""
        return {name: self.get(name) for name in self._entries}
