"""Invoke task modules, one per area; tasks.py at the tree root gathers them into one namespace.

`command` wraps a task body so that a SeedfwError becomes one line on stderr and a non-zero exit,
never a traceback (set SEEDFW_DEBUG=1 to see one).
"""

from __future__ import annotations

import functools
import os
import sys

from invoke import task
from invoke.exceptions import Exit

from .. import paths, util
from ..errors import SeedfwError


def command(*args, **kwargs):
    """Like invoke's @task, plus the one-line error contract."""

    def decorate(body):
        @functools.wraps(body)
        def wrapper(c, *a, **kw):
            try:
                paths.absolute_environment()
                try:
                    return body(c, *a, **kw)
                except OSError as exc:      # e.g. a full disk: one line naming the file
                    raise util.os_error(exc) from None
            except SeedfwError as exc:
                if os.environ.get("SEEDFW_DEBUG"):
                    raise
                tail = getattr(exc, "tail", None)
                if tail:
                    print("\n".join(tail), file=sys.stderr)
                raise Exit(f"error: {exc.line()}", code=1) from None
            except KeyboardInterrupt:
                raise Exit("interrupted", code=130) from None

        return task(wrapper, *args, **kwargs)

    if len(args) == 1 and callable(args[0]) and not kwargs:
        body, args = args[0], ()
        return decorate(body)
    return decorate
