"""Invoke task modules, one per area; tasks.py at the tree root gathers them into one namespace.

`command` wraps a task body so that a SeedfwError becomes one line on stderr and a non-zero exit,
never a traceback (set SEEDFW_DEBUG=1 to see one). A reader that goes away (`invoke dvfs | head`)
ends the task quietly, as SIGPIPE ends any Unix filter: exit 141, nothing on stderr.

Short flags: Invoke would give each option the first free letter of its name, so `-j` was
`--jobs` in one task and `--objectives` in another. Here only the options of `SHORT_FLAGS` have a
letter, the same in every task; every other option is long only (tests/test_cli_consistency.py).

`invoke TASK --help` prints TASK's help for a task with a positional argument too (`inspect
IMAGE`, `flash BOARD`). Invoke 3.0.3's parser fills a missing positional with the next token
before it looks for the core --help flag, so `invoke inspect --help` ran inspect on a file named
"--help" (upstream pyinvoke/invoke#982, fixes still open as of 3.0.3). `_help_after_positional`
keeps Invoke's parser and adds the one thing it misses: when the token it just took as a
positional value is --help/-h, the core help flag is set to the task, as Invoke does for --help
after a task without positionals; Invoke then prints the task's help and exits 0 before any task
runs.
"""

from __future__ import annotations

import functools
import os
import select
import sys

from invoke import Task, task
from invoke.exceptions import Exit
from invoke.parser.parser import ParseMachine

from .. import paths, util
from ..errors import SeedfwError


# The one letter of each option that has one, in every task alike. The single-letter options
# of `invoke test` (`-k`, `-x`: pytest's own) are names, not entries here; no entry may use them.
SHORT_FLAGS = {"board": "b", "output": "o", "jobs": "j", "timeout": "t", "fragment": "f",
               "probe": "p", "image": "i", "verify": "v", "quiet": "q"}
SIGPIPE_EXIT = 141          # 128 + SIGPIPE: what a shell reports for a filter its reader closed
HELP_FLAGS = ("--help", "-h")   # Invoke's core help flag, long and short


def _help_after_positional(handle):
    """ParseMachine.handle, plus: --help/-h taken as a positional value also asks for the help
    of the task being parsed (see the module docstring). The positional keeps the token, so the
    parse completes; no task runs, because Invoke prints the help and exits first."""

    @functools.wraps(handle)
    def wrapped(self, token):
        helping = (token in HELP_FLAGS and self.current_state != "unknown"
                   and self.context is not None and self.context.missing_positional_args
                   and not self.waiting_for_flag_value and token not in self.context.flags
                   and self.initial is not None and token in self.initial.flags)
        handle(self, token)
        if helping:
            self.initial.flags[token].value = self.context.name
    wrapped.seedfw_help_fix = True
    return wrapped


if not getattr(ParseMachine.handle, "seedfw_help_fix", False):     # once per process
    ParseMachine.handle = _help_after_positional(ParseMachine.handle)


class SeedfwTask(Task):
    """Invoke's Task with seedfw's short flags (`SHORT_FLAGS`) instead of first-free-letter ones."""

    def __init__(self, *args, **kwargs):
        kwargs["auto_shortflags"] = False
        super().__init__(*args, **kwargs)

    def get_arguments(self, *args, **kwargs):
        # Invoke pops each option's help text off the Task as it builds the parser (what is left
        # names options that do not exist), so the second parser built in one process (a test,
        # `invoke docs` after a run, mkdocs serve) would print bare options: the task keeps them.
        kept = dict(self.help)
        try:
            return super().get_arguments(*args, **kwargs)
        finally:
            self.help = kept

    def arg_opts(self, name, default, taken_names):
        opts = super().arg_opts(name, default, taken_names)
        letter = SHORT_FLAGS.get(name.rstrip("_"))
        if letter and letter not in taken_names:
            opts["names"].append(letter)
        return opts


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports POLLERR on the write end),
    as opposed to a broken pipe to one of our own subprocesses, which is a real error."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _quiet_sigpipe() -> Exit:
    # Python would flush stdout again at exit and print "Exception ignored ... BrokenPipeError":
    # point the descriptor at /dev/null first (the Python documentation's recipe for SIGPIPE).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return Exit(code=SIGPIPE_EXIT)


def command(*args, **kwargs):
    """Like invoke's @task, plus the one-line error contract, quiet SIGPIPE and SHORT_FLAGS."""

    def decorate(body):
        @functools.wraps(body)
        def wrapper(c, *a, **kw):
            try:
                paths.absolute_environment()
                try:
                    result = body(c, *a, **kw)
                    sys.stdout.flush()      # a closed reader shows here, inside the handler
                    return result
                except BrokenPipeError as exc:
                    if _stdout_gone():
                        raise _quiet_sigpipe() from None
                    raise util.os_error(exc) from None
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

        return task(wrapper, *args, klass=SeedfwTask, **kwargs)

    if len(args) == 1 and callable(args[0]) and not kwargs:
        body, args = args[0], ()
        return decorate(body)
    return decorate
