"""Hostile agent logs and UART lines (issue 28): `invoke counters --agent-log` and the QEMU UART
line parsers, in the corpus form of tests/test_hostile_inputs.py — every case runs the CLI under
RLIMIT_AS = 1 GiB and a timeout (tests/hostile.py) and asserts the exit code, the exact one
error line (or the exact provenance line) and a time and memory bound.

Classes: unbounded (regex backtracking, huge logs), traceback (numbers Python's int() refuses,
Unicode digits), hang (a FIFO), silent (a log cut without a word), laundering (a hand-typed log
reported as measured on the board). Provenance is earned: only a log seedfw captured itself
(`invoke counters --serial`, here on a pty) is live.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

import pytest

import hostile

TIME_BOUND = 20.0
RSS_BOUND_MIB = 512
FAST = 1.0                  # seconds: any one line through any parser

WINDOW = "agent: perf rockchip_ddr window=verify ns=2000000 read-bytes=123456 write-bytes=789"
# The 239-byte line: runs of `=` the old `(?: \S+=\S+)*$` split 2^42 ways.
BACKTRACK_239 = "agent: perf p window=w ns=1" + " ====" * 42 + " x"


def _log(tmp, *lines, name="serial.log") -> Path:
    f = tmp / name
    f.write_text("".join(line + "\n" for line in lines))
    return f


# Each case: (tmp) -> (args, returncode, exact error line or None, check of stdout or None)
def case_unbounded_backtrack_239(tmp):
    assert len(BACKTRACK_239) == 239
    f = _log(tmp, BACKTRACK_239)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: 43 events is over the limit of 32 per line", None)


def case_unbounded_backtrack_31_runs(tmp):
    """Within the event cap (2^31 splits for the old regex): the token itself is refused."""
    f = _log(tmp, "agent: perf p window=w ns=1" + " ====" * 31)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: '====': expected EVENT=<count>", None)


def case_unbounded_long_line(tmp):
    f = _log(tmp, "booting", WINDOW + " x=1" * 2000)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:2: an 'agent: perf' line over 4096 bytes: refused", None)


def case_unbounded_too_many_lines(tmp):
    f = _log(tmp, *[WINDOW] * 4097)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:4097: more than 4096 'agent: perf' lines: refused", None)


def case_unbounded_most_work_allowed(tmp):
    """The most a log may ask for: 4096 lines of 32 twenty-digit counts, padded to the cap
    with noise lines (about 256 MiB): read whole, within the bounds."""
    f = tmp / "dense.log"
    line = ("agent: perf p window=w ns=1" + "".join(f" e{i}=18446744073709551615"
                                                      for i in range(32)) + "\n").encode()
    noise = b"n" * 4095 + b"\n"
    with open(f, "wb") as out:
        out.write(line * 4096)
        out.write(noise * (((256 << 20) - len(line) * 4096) // len(noise)))
    return (["counters", "--board", "rk3588", "--agent-log", f], 0, None,
            lambda out: "'e31': 18446744073709551615" in out)


def case_unbounded_too_many_windows(tmp):
    f = _log(tmp, *[f"agent: perf p window=w{i} ns=1" for i in range(1025)])
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1025: more than 1024 window/PMU pairs: refused", None)


def case_silent_2gib_log(tmp):
    f = tmp / "big.log"
    with open(f, "wb") as out:
        out.write((WINDOW + "\n").encode())
        out.truncate(2 << 30)           # sparse: 2 GiB that cost nothing
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}: 2147483648 bytes is over the 256 MiB limit for log inputs", None)


def case_unbounded_log_at_cap(tmp):
    """Just under the cap (sparse, the agent's line at the end): read whole, within bounds."""
    f = tmp / "full.log"
    with open(f, "wb") as out:
        out.truncate((256 << 20) - 200)
        out.seek(0, 2)
        out.write(("\n" + WINDOW + "\n").encode())
    return (["counters", "--board", "rk3588", "--agent-log", f], 0, None,
            lambda out: "read-bytes': 123456" in out)


def case_traceback_5000_digits(tmp):
    """The issue's number: the line is over the line cap before int() could see it."""
    f = _log(tmp, "agent: perf p window=w ns=" + "7" * 5000)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: an 'agent: perf' line over 4096 bytes: refused", None)


def case_traceback_4000_digits(tmp):
    """Under the line cap (int() alone would take seconds on a few of these, and raises past
    4300 digits): the 20-digit limit answers first."""
    f = _log(tmp, "agent: perf p window=w ns=1 cycles=" + "7" * 4000)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: cycles: 4000 characters is over the 20-digit limit of a 64-bit "
            "count", None)


def case_traceback_superscript(tmp):
    f = _log(tmp, "x", "agent: perf p window=w ns=1 cycles=²")
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:2: cycles: '²' is not a count (ASCII digits 0-9)", None)


def case_traceback_arabic_digit(tmp):
    f = _log(tmp, "agent: perf p window=w ns=٣")      # '٣'.isdigit() is True
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: ns: '٣' is not a count (ASCII digits 0-9)", None)


def case_traceback_over_u64(tmp):
    f = _log(tmp, "agent: perf p window=w ns=18446744073709551616")
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: ns: 18446744073709551616 is over 2^64-1", None)


def case_terminal_escape_in_name(tmp):
    f = _log(tmp, "agent: perf p\x1b]8;;x\x07 window=w ns=1")
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}:1: PMU 'p\\x1b]8;;x\\x07': not a PMU/event name (ASCII letters, digits, "
            "_ . : -)", None)


def case_hang_fifo(tmp):
    f = tmp / "serial.fifo"
    os.mkfifo(f)
    return (["counters", "--board", "rk3588", "--agent-log", f], 1,
            f"error: {f}: is a FIFO, not a regular file: refused", None)


def case_hang_char_device(tmp):
    return (["counters", "--board", "rk3588", "--agent-log", "/dev/zero"], 1,
            "error: /dev/zero: is a character device, not a regular file: refused", None)


def case_hang_serial_not_a_tty(tmp):
    f = _log(tmp, WINDOW)
    return (["counters", "--board", "rk3588", "--serial", f], 1,
            f"error: {f}: --serial: is not a character device (a serial console): refused", None)


def case_laundering_hand_typed_log(tmp):
    f = _log(tmp, "[    1.0] Linux booting", WINDOW, "agent: ok")
    return (["counters", "--board", "rk3588", "--agent-log", f], 0, None,
            lambda out: out.splitlines()[0] == "provenance           recorded (user-supplied "
            "log): read from a log file given to seedfw, which did not capture it: nothing "
            "shows that it came from a board")


def case_laundering_qemu_banner(tmp):
    """A first line that looks like seedfw's QEMU log earns nothing either."""
    f = _log(tmp, "$ qemu-system-aarch64 -M virt", WINDOW, "agent: ok")
    return (["counters", "--board", "rk3588", "--agent-log", f, "--json"], 0, None,
            lambda out: '"label": "recorded (user-supplied log)"' in out)


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_agentlog(name, tmp_path):
    hostile.check_case(*CASES[name](tmp_path), time_bound=TIME_BOUND, rss_bound_mib=RSS_BOUND_MIB)


# ---- provenance: a capture seedfw made is live; the same bytes handed in are not --------------

def _pty_feeding(lines, delay=0.3):
    """A pty whose slave is the 'board's console'; a thread writes `lines` (CRLF, as a UART)."""
    master, slave = os.openpty()
    tty.setraw(slave)           # as the capture will: no CR translation of what is queued early
    name = os.ttyname(slave)

    def feed():
        time.sleep(delay)
        os.write(master, b"".join(line.encode() + b"\r\n" for line in lines))
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return name, (master, slave), t


def test_capture_through_serial_is_live(tmp_path):
    log = tmp_path / "console.log"
    name, fds, feeder = _pty_feeding(["U-Boot 2024.10", WINDOW, "agent: ok"], delay=1.5)
    try:
        run = hostile.invoke_bounded("counters", "--board", "rk3588", "--serial", name,
                                     "--agent-log", log, "--timeout", "30",
                                     timeout=TIME_BOUND * 3)
    finally:
        feeder.join()
        for fd in fds:
            os.close(fd)
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith("provenance           live, serial console: Linux perf_event_open"), first
    assert f"serial console {name} captured by seedfw at 1500000 baud" in first
    assert not hostile.error_lines(run) and "warning" not in run.stderr
    assert log.read_text().splitlines() == ["U-Boot 2024.10", WINDOW, "agent: ok"]
    assert run.seconds <= TIME_BOUND and run.max_rss_mib <= RSS_BOUND_MIB


def _captured(tmp_path, board="rk3588") -> Path:
    from seedfw import boards
    from seedfw.run import console
    name, fds, feeder = _pty_feeding(["boot", WINDOW, "agent: ok"], delay=0.1)
    try:
        got = console.capture(boards.get(board), name, tmp_path / "cap.log", timeout=20)
    finally:
        feeder.join()
        for fd in fds:
            os.close(fd)
    assert got.ended
    return got.log


def test_capture_record_earns_live_and_loses_it_on_edit(tmp_path):
    from seedfw import boards
    from seedfw.counters import perf_live, provenance
    log = _captured(tmp_path)
    doc = perf_live.from_log(boards.get("rk3588"), log)
    assert doc["provenance"]["source"] == "live"
    assert provenance.label(doc["provenance"]) == "live, serial console"
    with open(log, "a") as f:               # one line added after the capture
        f.write("agent: perf rockchip_ddr window=idle ns=1 read-bytes=999\n")
    doc = perf_live.from_log(boards.get("rk3588"), log)
    assert provenance.label(doc["provenance"]) == "recorded (user-supplied log)"
    assert doc["provenance"]["note"] == ("the capture record cap.log.seedfw-capture.json does "
                                         "not match it (the log changed after seedfw captured it)")


def test_capture_record_of_another_board_and_a_broken_record(tmp_path):
    log = _captured(tmp_path, board="qemu-aarch64")
    run = hostile.invoke_bounded("counters", "--board", "rk3588", "--agent-log", log)
    assert hostile.error_lines(run) == [f"error: {log}.seedfw-capture.json: board: captured "
                                        "from board 'qemu-aarch64', not 'rk3588'"]
    Path(str(log) + ".seedfw-capture.json").write_text('{"seedfw_capture": 1, "source": "live"')
    run = hostile.invoke_bounded("counters", "--board", "rk3588", "--agent-log", log)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert hostile.error_lines(run) == [f"error: {log}.seedfw-capture.json:1: not valid JSON: "
                                        "Expecting ',' delimiter"]


def test_qemu_uart_log_captured_by_seedfw_stays_emulated(tmp_path):
    """seedfw.run.uart writes the record when it closes a QEMU's UART log: emulated."""
    from seedfw import boards
    from seedfw.counters import perf_live
    from seedfw.run.uart import Uart
    log = tmp_path / "os-boot.log"
    proc = subprocess.Popen([sys.executable, "-c", f"print({WINDOW!r}); print('agent: ok')"],
                            stdout=subprocess.PIPE)
    uart = Uart(proc, log, board="qemu-aarch64")
    assert uart.wait_end(20)
    proc.wait(20)
    uart.close()
    proc.stdout.close()
    doc = perf_live.from_log(boards.get("qemu-aarch64"), log)
    assert doc["provenance"]["source"] == "emulated"
    assert doc["provenance"]["capture"].endswith("os-boot.log.seedfw-capture.json")


def test_report_says_recorded_for_a_handed_in_log(tmp_path):
    """The report's label for such a counters document (report/provenance.py takes the label
    from seedfw.counters.provenance)."""
    from seedfw import boards
    from seedfw.counters import perf_live
    from seedfw.report import provenance as report_provenance
    doc = perf_live.from_log(boards.get("rk3588"), _log(tmp_path, WINDOW))
    fig = report_provenance.for_figure(doc["provenance"])
    assert fig == {"source": "recorded", "label": "recorded (user-supplied log)",
                   "synthetic": False}
    assert report_provenance.kind_text({"kind": "measured", "provenance": fig}) == \
        "measured (recorded (user-supplied log))"
    from seedfw.report.sections.bandwidth import _measured_warning
    assert _measured_warning(fig, "c.json") == (
        "the counters in c.json come from a log file handed to seedfw, not one it captured "
        "from a board: recorded, not measured on the board")


# ---- every line parser, adversarial shapes, linear -------------------------------------------

def _shapes(n: int) -> dict[str, str]:
    """The catastrophic-backtracking shapes of each pattern, `n` characters long."""
    def fill(head, unit, tail=""):
        return (head + unit * (n // len(unit)))[:n - len(tail)] + tail
    return {
        "eq-runs": fill("agent: perf p window=w ns=1", " ====", " x"),
        "digits": fill("agent: perf p window=w ns=", "1", "x"),
        "spaces": fill("agent: perf ", " ", "x"),
        "equals": fill("agent: perf p window=", "="),
        "pairs": fill("agent: perf p window=w ns=1", " a=a=a", " ="),
        "parens": fill("agent: perf x absent (", "(", "x"),
        "unavailable": fill("agent: perf x y unavailable (", ")(", "x"),
        "dt-opp": fill("", "agent: dt opp: "),
        "sha-tokens": fill("", "agent: a "),
        "stats": fill("stats: ", "cycles=1"),
        "stats-digits": fill("stats: cycles=", "1", " cycle_hz"),
        "trace": fill("1@1.1:virtio_blk_handle_read ", " "),
        "trace-digits": fill("", "1", "@"),
        "qemu": fill("qemu-system-", "a"),
        "qemu-colons": fill("qemu-system-", ":"),
    }


def _every_parser():
    from seedfw.counters import emulated, perf_live
    from seedfw.errors import SeedfwError
    from seedfw.run import os_boot, uart
    from seedfw.tune import objectives

    def agent(line):
        try:
            perf_live.parse([line], "x")
        except SeedfwError:
            pass
    yield "perf_live", agent
    for rx in (uart.QEMU_TERMINATING, uart.QEMU_MESSAGE, emulated._TRACE, objectives._STATS,
               objectives._VERIFIED):
        yield rx.pattern, rx.match
    for rx in os_boot.FAILURE_LINES:
        yield rx.pattern, lambda line, rx=rx: os_boot.first_match(rx, line)


@pytest.mark.parametrize("length", [239, 4096, 64 * 1024])
def test_every_uart_line_parser_is_fast_on_adversarial_lines(length):
    """Lines up to the UART's MAX_LINE (64 KiB: longer ones are cut) in every shape, through
    every parser of UART or serial lines: each under a second."""
    from seedfw.run.uart import MAX_LINE
    assert length <= MAX_LINE
    for shape, line in _shapes(length).items():
        for name, parse in _every_parser():
            start = time.perf_counter()
            parse(line)
            took = time.perf_counter() - start
            assert took < FAST, (shape, name, took)


def test_negative_control_the_old_regex_backtracks():
    """The shape is adversarial: the regex this replaced does not finish the 239-byte line in
    the time every parser above gets for 64 KiB."""
    old = r"^agent: perf (\S+) window=(\S+) ns=(\d+)((?: \S+=\S+)*)$"
    code = f"import re; re.match({old!r}, {BACKTRACK_239!r})"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], timeout=2 * FAST)


def test_uart_flood_without_newline_is_linear():
    """10 MB without a newline: cut into MAX_LINE pieces as it arrives, never rejoined."""
    from seedfw.run.uart import MAX_LINE, Uart
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write('=' * 10_000_000)"],
                            stdout=subprocess.PIPE)
    start = time.monotonic()
    uart = Uart(proc, None)
    assert uart.wait_end(30)
    proc.wait(10)
    uart.close()
    proc.stdout.close()
    assert time.monotonic() - start < 10
    assert max(map(len, uart.lines)) == MAX_LINE
    assert sum(map(len, uart.lines)) == 10_000_000
    assert len(uart.lines) == -(-10_000_000 // MAX_LINE)


def test_find_lines_and_streamed_log_lines(tmp_path):
    """The log reader's line finder (line numbers, CR, cut), and the streamed reader giving the
    same lines whatever the chunk size (lines across chunk boundaries, long ones skipped)."""
    from seedfw.reading import find_lines, log_lines
    data = (b"agent: perf a\r\nx\nagent: perf b\n\nagent: perf " + b"c" * 50 + b"\n"
            b"noise agent: perf d\n" + b"n" * 70 + b"\nagent: perf e\r")
    want = [(1, b"agent: perf a"), (3, b"agent: perf b"), (5, b"agent: perf " + b"c" * 9),
            (8, b"agent: perf e")]
    assert list(find_lines(data, b"agent: perf ", 20)) == want
    assert list(find_lines(b"", b"agent: perf ", 20)) == []
    f = tmp_path / "x.log"
    f.write_bytes(data)
    for chunk in range(1, len(data) + 2):
        assert list(log_lines(f, b"agent: perf ", 20, chunk_size=chunk)) == want, chunk
