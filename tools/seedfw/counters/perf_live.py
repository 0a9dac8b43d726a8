"""The OS agent's perf counters (firmware/agent/perf_window.c) as a counters document.

The agent reads the PMUs board.yaml `perf` names (PMU/EVENTS/KCONFIG) with perf_event_open over
two windows — `idle` (100 ms asleep) and `verify` (while it checks the boot package and the
model blobs) — and prints one line per window:

    agent: perf armv8_pmuv3_0 window=verify ns=1234 cpu_cycles=5678 inst_retired=910

or, for a PMU the kernel does not have, the kernel option that provides it:

    agent: perf rockchip_ddr absent (no PMU of that name: the kernel needs CONFIG_…)

Parsing is a hand tokenizer, not a line regex: the lines come from a serial console or a log file
anyone can write, and the regex this replaced (`(?: \\S+=\\S+)*$`) backtracked exponentially on
a 239-byte line of `====` runs. Here every line costs one `split` and a check per field; a
line is at most MAX_LINE bytes, names and counts have a fixed grammar (ASCII names, ASCII
digits up to a 64-bit count: `²` and `٣` are digits to str.isdigit, not to the agent), and
the counts of lines and entries are capped — each over-limit case is one error naming the
file, the line and the field.

Provenance is earned, never inferred from the text (seedfw.counters.provenance, `capture`):
a log seedfw captured itself (a board's serial console through `invoke counters --serial`,
a QEMU UART through seedfw.run.uart) has a capture record beside it; with a record that
matches the log byte for byte the document is `live` (console) or `emulated` (QEMU); any other
log is `recorded (user-supplied log)`.
"""

from __future__ import annotations

import re

from . import provenance
from .base import CounterSource
from ..errors import SeedfwError

PREFIX = "agent: perf "
MAX_LINE = 4096          # bytes of one agent line (the agent's are < 1 KiB: 8 events × 48 chars)
MAX_DIGITS = 20          # a 64-bit count has at most 20 decimal digits
MAX_COUNT = (1 << 64) - 1
MAX_NAME = 256           # PERF_SPEC_MAX in firmware/agent/perf_window.h
MAX_EVENTS = 32          # events on one window line (the agent has PERF_EVENTS_MAX 8)
MAX_ENTRIES = 1024       # windows × PMUs, absent PMUs, unavailable events: each
MAX_LINES = 4096         # 'agent: perf' lines in one log (one boot prints a dozen): the bound on time
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-")
_DIGITS = frozenset("0123456789")
# One well-formed EVENT=COUNT token, checked in one C call: flat classes, bounded repeats, no
# nesting, `=` in neither class — linear, and fullmatch'ed on one token at a time. Anything it
# does not match goes the slow way below, which says what is wrong.
_PAIR = re.compile(r"([A-Za-z0-9_.:-]{1,%d})=([0-9]{1,%d})" % (MAX_NAME, MAX_DIGITS))


def _shown(text: str, limit: int = 40) -> str:
    """A field from the log in an error line: control characters escaped, long ones cut."""
    from ..reading import plain
    return plain(text if len(text) <= limit else text[:limit] + "…")


class _Line:
    """Errors about one line of one source: `file:N: message`."""

    def __init__(self, source, number: int):
        self.source, self.number = source, number

    def fail(self, message: str):
        raise SeedfwError(message, self.source, f"line {self.number}")

    def name(self, text: str, what: str) -> str:
        if not text:
            self.fail(f"{what}: empty")
        if len(text) > MAX_NAME:
            self.fail(f"{what}: {len(text)} characters is over the {MAX_NAME}-character limit")
        if not _NAME_CHARS.issuperset(text):
            self.fail(f"{what} '{_shown(text)}': not a PMU/event name (ASCII letters, digits, "
                      "_ . : -)")
        return text

    def count(self, text: str, what: str) -> int:
        if len(text) > MAX_DIGITS:
            self.fail(f"{what}: {len(text)} characters is over the {MAX_DIGITS}-digit limit of "
                      "a 64-bit count")
        if not text or not _DIGITS.issuperset(text):
            self.fail(f"{what}: '{_shown(text)}' is not a count (ASCII digits 0-9)")
        value = int(text)
        if value > MAX_COUNT:
            self.fail(f"{what}: {text} is over 2^64-1")
        return value


def _window(at: _Line, rest: str, windows: dict) -> None:
    """`PMU window=W ns=N EVENT=COUNT…` (single spaces, as the agent prints them)."""
    tokens = rest.split(" ")
    pmu = at.name(tokens[0], "PMU")
    window = at.name(tokens[1][len("window="):], "window")
    if len(tokens) < 3 or not tokens[2].startswith("ns="):
        at.fail("expected ns=<count> after the window")
    values = {"ns": at.count(tokens[2][3:], "ns")}
    if len(tokens) - 3 > MAX_EVENTS:
        at.fail(f"{len(tokens) - 3} events is over the limit of {MAX_EVENTS} per line")
    for pair in tokens[3:]:
        if (m := _PAIR.fullmatch(pair)) and m.group(1) not in values:   # the common case
            values[m.group(1)] = n = int(m.group(2))
            if n > MAX_COUNT:
                at.count(m.group(2), m.group(1))
            continue
        key, eq, value = pair.partition("=")
        if not key or not eq:
            at.fail(f"'{_shown(pair)}': expected EVENT=<count>")
        key = at.name(key, "event")
        if key in values:
            at.fail(f"event '{key}' given twice")
        if value == "unreadable":      # the agent's word for a read() that failed
            continue
        values[key] = at.count(value, key)
    per = windows.setdefault(window, {})
    if pmu not in per and sum(map(len, windows.values())) >= MAX_ENTRIES:
        at.fail(f"more than {MAX_ENTRIES} window/PMU pairs: refused")
    per[pmu] = values


def _why(at: _Line, rest: str, head: str) -> str | None:
    """The text of `HEAD (WHY)`, or None when `rest` is not of that form."""
    if not (rest.startswith(head) and rest.endswith(")")):
        return None
    return _shown(rest[len(head):-1], MAX_LINE)


def parse_line(at: _Line, line: str, got: dict) -> None:
    """One line into `got` (the dict parse returns); lines not the agent's perf are ignored."""
    if not line.startswith(PREFIX):
        return
    if len(line) > MAX_LINE:
        at.fail(f"an '{PREFIX.strip()}' line over {MAX_LINE} characters: refused")
    got["lines"] += 1
    if got["lines"] > MAX_LINES:
        at.fail(f"more than {MAX_LINES} '{PREFIX.strip()}' lines: refused")
    rest = line[len(PREFIX):].rstrip()
    tokens = rest.split(" ", 3)
    if len(tokens) >= 2 and tokens[1].startswith("window="):
        _window(at, rest, got["windows"])
        return
    if len(tokens) >= 2 and tokens[1] == "absent" and (why := _why(at, rest, f"{tokens[0]} "
                                                                        "absent (")) is not None:
        got["absent"][at.name(tokens[0], "PMU")] = why
    elif len(tokens) >= 3 and tokens[2] == "unavailable" and \
            (why := _why(at, rest, f"{tokens[0]} {tokens[1]} unavailable (")) is not None:
        got["unavailable"].append(f"{at.name(tokens[0], 'PMU')} {at.name(tokens[1], 'event')}: "
                                  f"{why}")
    else:
        return                          # another agent perf message ("bad spec …"): not a reading
    if len(got["absent"]) + len(got["unavailable"]) > MAX_ENTRIES:
        at.fail(f"more than {MAX_ENTRIES} absent/unavailable entries: refused")


def parse(lines, source=None) -> dict:
    """{windows: {window: {pmu: {ns, event: value}}}, absent: {pmu: why}, unavailable: [...]}
    from text lines (a UART's); `source` names them in errors (the log file)."""
    got = {"windows": {}, "absent": {}, "unavailable": [], "lines": 0}
    for number, line in enumerate(lines, 1):
        parse_line(_Line(source, number), line, got)
    del got["lines"]
    return got


def parse_log(lines, source) -> dict:
    """parse() of a log's (line number, bytes) as reading.find_lines/log_lines find them: only
    lines starting with PREFIX, each at most MAX_LINE + 1 bytes; line numbers are the file's."""
    got = {"windows": {}, "absent": {}, "unavailable": [], "lines": 0}
    for number, raw in lines:
        if len(raw) > MAX_LINE:             # bytes, before decoding can shorten it
            _Line(source, number).fail(f"an '{PREFIX.strip()}' line over {MAX_LINE} bytes: "
                                       "refused")
        parse_line(_Line(source, number), raw.decode(errors="replace"), got)
    del got["lines"]
    return got


class AgentPerfCounters(CounterSource):
    """Counters the OS agent read from perf PMUs during one boot."""

    name = "agent-perf"
    SETTINGS = frozenset({"pmus", "absent", "unavailable", "windows_meaning"})

    def __init__(self, board, emulated: bool, prov: dict | None = None):
        super().__init__(board)
        self.emulated = emulated
        self.prov = prov

    @classmethod
    def read(cls, board, args: dict) -> dict:
        """The agent's perf windows from the UART log of an OS boot (`--agent-log FILE`)."""
        if not args.get("agent_log"):
            raise SeedfwError("the agent's perf counters come from an OS boot's UART log: pass "
                              "--agent-log FILE", None, "--agent-log")
        return from_log(board, args["agent_log"])

    def how(self) -> str:
        return ("Linux perf_event_open by seedfw-agent over its windows, PMUs chosen by name: "
                + ", ".join(self.board.raw.get("perf", [])))

    def provenance(self) -> dict:
        if self.prov is not None:
            return self.prov
        if self.emulated:
            return provenance.emulated(self.board, self.how() + " (QEMU's emulated PMU)")
        return {"source": "live", "how": self.how() + " (on the board)", "probe": None,
                "target": self.board.name, "host": None, "when": provenance.now()}

    def document_from(self, lines, source=None) -> dict | None:
        return self.document_of(parse(lines, source))

    def document_of(self, got: dict) -> dict | None:
        if not got["windows"] and not got["absent"]:
            return None
        values = {"pmus": list(self.board.raw.get("perf", [])), "absent": got["absent"],
                  "unavailable": got["unavailable"],
                  "windows_meaning": {"idle": "100 ms asleep", "verify": "while the agent "
                                      "verifies the boot package and model blobs"},
                  "windows": got["windows"]}
        return self.document(values, self.provenance())


def write(board, outdir, lines, emulated: bool = True, source=None):
    """<out>/counters/perf-boot.json from a boot's UART lines; None when the agent read none."""
    from pathlib import Path

    from .. import util

    doc = AgentPerfCounters(board, emulated).document_from(lines, source)
    if doc is None:
        return None
    return util.write_json(Path(outdir) / "counters" / "perf-boot.json", doc)


def from_log(board, path) -> dict:
    """A counters document from a UART log of an OS boot (the agent's `agent: perf` lines),
    read through the door (regular files only, SIZE_CAPS['log']); its provenance is what the
    capture record beside it earns (provenance.of_log), else recorded (user-supplied log)."""
    from pathlib import Path

    import hashlib

    from ..reading import log_lines

    path = Path(path)
    digest = hashlib.sha256()           # of every byte read: what a capture record must match
    got = parse_log(log_lines(path, PREFIX.encode(), MAX_LINE, digest), path)
    prov = provenance.of_log(board, path, digest.hexdigest(), AgentPerfCounters(board, True).how())
    doc = AgentPerfCounters(board, prov["source"] == "emulated", prov).document_of(got)
    if doc is None:
        raise SeedfwError("no 'agent: perf' lines (board.yaml `perf` empty, or not an OS boot "
                          "log?)", path)
    doc["provenance"]["log"] = provenance.shown_path(path)
    return doc
