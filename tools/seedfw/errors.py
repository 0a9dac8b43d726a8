"""The one exception type the project raises for bad input.

Every user-facing failure is a SeedfwError: it carries the file, the field (or line, or offset)
and a message, so the Invoke front can print exactly one line and exit non-zero without a
traceback. Code deeper down never prints errors itself; it raises.
"""

from __future__ import annotations

import os


class SeedfwError(Exception):
    """A clear, one-line error about a named input.

    file:  path of the offending input (shown relative to the cwd when possible)
    field: where in that file (a field name, "line 12", "offset 0x40"); optional
    """

    def __init__(self, message: str, file: str | os.PathLike | None = None,
                 field: str | None = None):
        self.message = message
        self.file = os.fspath(file) if file is not None else None
        self.field = field
        super().__init__(self.line())

    def line(self) -> str:
        where = ""
        if self.file:
            where = _display_path(self.file)
            if self.field and self.field.startswith("line ") and self.field[5:].isdigit():
                where += f":{self.field[5:]}"  # file:line, the form editors jump to
            elif self.field:
                where += f": {self.field}"
        elif self.field:
            where = self.field
        return f"{where}: {self.message}" if where else self.message


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    # Relative only when the file is below the current directory; otherwise the path as given.
    return rel if not rel.startswith("..") else path
