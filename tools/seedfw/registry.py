"""Plug-in registries: for each kind (part, flash runner, counter source, report section) one table
that is the only list of its names (west's `get_runner_cls`, binman's `Entry.Lookup`).

A registry maps a name to "module:Class" and imports the module only when that plug-in is asked for,
so listing names (schema enums, `invoke --list`, shell completion) costs no imports. Every plug-in
class must carry a docstring: it is the plug-in's reference page, and `classes()` refuses an
undocumented one the way binman's WriteDocs refuses "Documentation is missing for modules".
"""

from __future__ import annotations

import importlib
import inspect

from .errors import SeedfwError


class Registry:
    """Names of one plug-in kind → "module:Class", in the order given (the order a build uses)."""

    def __init__(self, kind: str, table: dict[str, str]):
        self.kind = kind
        self._table = dict(table)

    def names(self) -> list[str]:
        """Every registered name, without importing anything."""
        return list(self._table)

    def __contains__(self, name: str) -> bool:
        return name in self._table

    def get(self, name: str) -> type:
        """The class registered as `name`; an unknown name is one line listing the known ones."""
        try:
            target = self._table[name]
        except KeyError:
            raise SeedfwError(f"no {self.kind} '{name}' (known: {', '.join(self._table)})") from None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def classes(self) -> list[tuple[str, type]]:
        """(name, class) for every entry, in order; a class without a docstring is refused."""
        out = []
        for name in self._table:
            cls = self.get(name)
            if not (inspect.getdoc(cls) or "").strip() or cls.__doc__ is None:
                raise SeedfwError(f"documentation is missing for {self.kind} '{name}' "
                                  f"({self._table[name]}): write its class docstring")
            out.append((name, cls))
        return out

    def doc(self, name: str) -> str:
        """The reference page of one plug-in: its class docstring, dedented."""
        return inspect.getdoc(self.get(name)) or ""
