"""Helpers of the hostile-input corpus: run the CLI under an address-space limit and a timeout
(measuring time and peak RSS), and write crafted FDTs (duplicate properties and nodes, odd
names) that dtc would refuse to compile."""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AS_LIMIT = 1 << 30          # 1 GiB of address space for the command under test
TIME_LIMIT = 60.0           # seconds (wall); every case must also finish well inside it


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mib: float


def invoke_bounded(*args, env=None, cwd=ROOT, timeout=TIME_LIMIT, real=False) -> Run:
    """`python -m invoke ARGS` with RLIMIT_AS = 1 GiB; time and peak RSS of that child.

    The child is forked from a warm interpreter (tests/warm.py) unless `real`: still one process
    per case, each with its own address-space limit, timeout kill and wait4 figures."""
    import warm
    env = dict(env or os.environ)
    env.setdefault("PYTHONPATH", str(ROOT / "tools"))
    run = warm.run_invoke(args, cwd=cwd, env=env, timeout=timeout, as_limit=AS_LIMIT, real=real)
    if run.timed_out or run.seconds >= timeout:
        raise AssertionError(f"invoke {' '.join(map(str, args))} took over {timeout} s")
    return Run(run.returncode, run.stdout.decode(errors="replace"),
               run.stderr.decode(errors="replace"), run.seconds, run.max_rss_kib / 1024)


def error_lines(run: Run) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("error: ")]


# ---- crafted FDTs ---------------------------------------------------------------------------

def fdt(tree) -> bytes:
    """tree = (name, [(prop, bytes), ...], [child trees]); duplicates are written as given."""
    strings = bytearray()
    offsets: dict[str, int] = {}
    body = bytearray()

    def name_off(name: str) -> int:
        if name not in offsets:
            offsets[name] = len(strings)
            strings.extend(name.encode() + b"\0")
        return offsets[name]

    def pad(b: bytes) -> bytes:
        return b + bytes(-len(b) % 4)

    def node(t):
        name, props, children = t
        body.extend(struct.pack(">I", 1) + pad(name if isinstance(name, bytes) else
                                               name.encode() + b"\0"))
        for p, v in props:
            body.extend(struct.pack(">III", 3, len(v), name_off(p)) + pad(v))
        for c in children:
            node(c)
        body.extend(struct.pack(">I", 2))

    node(tree)
    body.extend(struct.pack(">I", 9))
    off_struct = 40 + 16
    off_strings = off_struct + len(body)
    total = off_strings + len(strings)
    return (struct.pack(">10I", 0xD00DFEED, total, off_struct, off_strings, 40, 17, 16, 0,
                        len(strings), len(body)) + bytes(16) + bytes(body) + bytes(strings))


def s(text: str) -> bytes:
    return text.encode() + b"\0"


def u32(n: int) -> bytes:
    return struct.pack(">I", n)


def image_node(name, data: bytes, extra_props=(), hashed: bytes | None = None):
    """A FIT image node with a sha256 hash node over `hashed` (default: `data`)."""
    digest = hashlib.sha256(data if hashed is None else hashed).digest()
    return (name, [("description", s("x")), ("data", data), ("type", s("firmware")),
                   *extra_props],
            [("hash-1", [("algo", s("sha256")), ("value", digest)], [])])


def fit(images, configs=None) -> bytes:
    confs = configs if configs is not None else [
        ("conf-1", [("firmware", s(images[0][0] if isinstance(images[0][0], str)
                                   else "x"))], [])]
    return fdt(("", [("description", s("crafted")), ("#address-cells", u32(1))],
                [("images", [], list(images)), ("configurations", [("default", s("conf-1"))],
                                                 confs)]))


def check_case(args, rc: int, line: str | None, check=None, time_bound: float = 20.0,
               rss_bound_mib: float = 512, real: bool = False) -> Run:
    """One corpus case: `invoke ARGS` under the bounds ends with exit `rc`, no traceback, exactly
    `line` as its one error line (none when rc is 0), and `check(stdout)` when given."""
    run = invoke_bounded(*args, timeout=time_bound * 3, real=real)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == rc, run.stdout + run.stderr
    assert run.seconds <= time_bound, run.seconds
    assert run.max_rss_mib <= rss_bound_mib, run.max_rss_mib
    assert error_lines(run) == ([line] if rc else []), run.stderr
    if check is not None:
        assert check(run.stdout), run.stdout + run.stderr
    return run
