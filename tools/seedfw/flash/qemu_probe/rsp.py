"""Minimal GDB Remote Serial Protocol client for QEMU's gdbstub.

Only what the probe needs: memory (`m`/`M`), registers (`g`/`G` for r0-r15, cached while stopped;
`p`/`P` for the rest), run control (`c`, `s`,
^C), hardware breakpoints (`Z1`/`z1`), monitor commands (`qRcmd`) and target.xml. QEMU 7.2 does not
support QStartNoAckMode, so packets are acknowledged with `+` (handled transparently).

QEMU facts this relies on: single-register `p`/`P` answer only after target.xml was read; any byte
received while the guest runs pauses it and produces a stop reply.
"""

from __future__ import annotations

import re
import select
import socket
import time
from collections import Counter

from ...errors import SeedfwError

# Bytes per m/M packet. QEMU 7.2 announces PacketSize=1000 (hex: 4096 characters) and silently drops
# a longer packet; "Mffffffff,7f0:" plus 2 x 2032 hex digits is 4078. Every m/M costs one round trip,
# so the biggest chunk that fits is the cheapest (measured 2026-12-03: 1024 -> 2032 halves the packets
# of a 128 KiB write + readback; docs/measurements/2026-12-03-flash.md).
CHUNK = 2032
POLL_WAIT = 0.001  # seconds poll_stop waits for a stop reply (see there)
# r0-r15 lead QEMU's `g`/`G` block on 32-bit Arm (4 bytes each). With `g_regs = G_REGS` (set by
# the M-profile probe once target.xml confirmed that layout; off by default, AArch64's block is
# x0-x30 of 8 bytes) they are cached while the target is stopped: one `g` serves every read,
# writes are gathered and go out as one `G` before the target runs. pyOCD sets ~5 and reads ~3
# registers around every flash-algo call, one `p`/`P` each before (issue 33).
G_REGS = 16


# Packets sent by every RspClient of this process, by command letter (bench/flash_throughput.py
# prints them: round trips are what a stub-backed probe pays for, and they do not vary with load).
SENT: Counter = Counter()


class RspError(SeedfwError):
    """The stub answered with an error or did not answer."""


def _checksum(data: bytes) -> bytes:
    return b"%02x" % (sum(data) & 0xFF)


def _escape(data: bytes) -> bytes:
    if b"#" not in data and b"$" not in data and b"}" not in data and b"*" not in data:
        return data  # hex memory writes never need escaping: skip the per-byte loop
    out = bytearray()
    for b in data:
        if b in b"#$}*":
            out += bytes((0x7D, b ^ 0x20))
        else:
            out.append(b)
    return bytes(out)


def _unescape(data: bytes) -> bytes:
    if b"}" not in data and b"*" not in data:
        return data  # the common case (hex memory replies): no per-byte loop in Python
    out = bytearray()
    i = 0
    while i < len(data):
        b = data[i]
        if b == 0x7D:
            i += 1
            out.append(data[i] ^ 0x20)
        elif b == 0x2A and out:  # run-length: previous byte repeated (n - 29) more times
            i += 1
            out += bytes((out[-1],)) * (data[i] - 29)
        else:
            out.append(b)
        i += 1
    return bytes(out)


class RspClient:
    """One TCP connection to a gdbstub. `running` says whether a `c` is outstanding."""

    def __init__(self, host: str, port: int, timeout: float = 5.0):
        self.address = f"{host}:{port}"
        self.timeout = timeout
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise RspError(f"cannot connect to gdbstub at {self.address}: {exc.strerror or exc}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = b""
        self._ack = True
        self.running = False
        self.last_stop = b""
        self.g_regs = 0  # registers 0..g_regs-1 go through the cached `g` block (see G_REGS)
        self._gblock: bytearray | None = None
        self._gdirty = False
        self.command(b"qSupported:multiprocess-;swbreak+;hwbreak+;qRelocInsn-;xmlRegisters=arm")
        # A stop reply that arrived before the qSupported answer means the guest was running when we
        # connected and QEMU paused it for us (see command()).
        self.was_running_at_connect = bool(self.last_stop)
        if self.command(b"QStartNoAckMode") == b"OK":
            self._ack = False

    def close(self) -> None:
        try:
            self.forget_registers()  # registers set but not yet written must still reach the target
        except (RspError, OSError):
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    # -- framing ------------------------------------------------------------------------------
    def _send(self, payload: bytes) -> None:
        SENT[payload[:1].decode("latin-1")] += 1
        body = _escape(payload)
        self.sock.sendall(b"$" + body + b"#" + _checksum(body))

    def _fill(self, deadline: float | None) -> None:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([self.sock], [], [], wait)
        if not ready:
            raise TimeoutError
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RspError(f"gdbstub at {self.address} closed the connection (QEMU exited?)")
        self._buf += chunk

    def _recv(self, timeout: float | None) -> bytes:
        """Next packet payload; raises TimeoutError when none arrives in `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            start = self._buf.find(b"$")
            if start >= 0:
                end = self._buf.find(b"#", start)
                if end >= 0 and len(self._buf) >= end + 3:
                    body = self._buf[start + 1:end]
                    self._buf = self._buf[end + 3:]
                    if self._ack:
                        self.sock.sendall(b"+")
                    return _unescape(body)
            elif self._buf.strip(b"+"):
                self._buf = b""  # stray bytes outside a packet (acks) are dropped
            self._fill(deadline)

    def command(self, payload: bytes, timeout: float | None = None) -> bytes:
        if self.running:
            raise RspError("internal: command sent while the target runs")
        self._send(payload)
        try:
            while True:
                reply = self._recv(self.timeout if timeout is None else timeout)
                # QEMU sends an unsolicited stop reply when a client connects while the guest runs
                # (it pauses the guest); no command used here answers with T/S, so skip those.
                if reply[:1] in (b"T", b"S") and payload != b"?":
                    self.last_stop = reply
                    continue
                return reply
        except TimeoutError:
            raise RspError(f"gdbstub at {self.address} did not answer {payload[:16]!r}") from None

    def checked(self, payload: bytes) -> bytes:
        reply = self.command(payload)
        if reply.startswith(b"E") and len(reply) == 3:
            raise RspError(f"gdbstub refused {payload[:24]!r}: {reply.decode()}")
        return reply

    # -- run control --------------------------------------------------------------------------
    def cont(self) -> None:
        self.forget_registers()
        self._send(b"c")
        self.running = True

    def step(self) -> bytes:
        self.forget_registers()
        self._send(b"s")
        self.running = True
        return self.wait_stop(self.timeout)

    def halt(self) -> bytes:
        if not self.running:
            return self.last_stop
        self.sock.sendall(b"\x03")
        return self.wait_stop(self.timeout)

    def poll_stop(self, wait: float = POLL_WAIT) -> bool:
        """True when the running target has stopped (a stop reply is waiting or arrives within `wait`
        seconds). Why wait at all: pyOCD polls DHCSR in a tight loop while a flash-algo call runs; a
        zero timeout spun ~1000 times per flash, taking the CPU from the very QEMU it waits for on a
        2-core host. select() returns the moment the stop reply lands, so waiting costs no latency."""
        if not self.running:
            return True
        try:
            self.wait_stop(wait)
        except TimeoutError:
            return False
        return True

    def wait_stop(self, timeout: float | None) -> bytes:
        while True:
            reply = self._recv(timeout)
            if reply[:1] in (b"T", b"S"):
                self.running = False
                self.last_stop = reply
                return reply
            if reply[:1] in (b"W", b"X"):
                self.running = False
                raise RspError(f"QEMU at {self.address} ended the guest: {reply.decode()}")
            # O packets (console output) and anything else are ignored

    # -- data ---------------------------------------------------------------------------------
    def read_memory(self, addr: int, length: int) -> bytes:
        out = bytearray()
        while length:
            n = min(length, CHUNK)
            reply = self.checked(b"m%x,%x" % (addr, n))
            data = bytes.fromhex(reply.decode())
            if len(data) != n:
                raise RspError(f"short memory read at {addr:#x}: {len(data)} of {n} bytes")
            out += data
            addr += n
            length -= n
        return bytes(out)

    def write_memory(self, addr: int, data: bytes) -> None:
        for off in range(0, len(data), CHUNK):
            part = data[off:off + CHUNK]
            if self.checked(b"M%x,%x:%s" % (addr + off, len(part), part.hex().encode())) != b"OK":
                raise RspError(f"memory write at {addr + off:#x} failed")

    def _block(self) -> bytearray:
        if self._gblock is None:
            block = bytes.fromhex(self.checked(b"g").decode())
            if len(block) < 4 * self.g_regs:
                raise RspError(f"gdbstub at {self.address}: `g` gave {len(block)} bytes, fewer than "
                               f"{self.g_regs} registers")
            self._gblock = bytearray(block)
        return self._gblock

    def forget_registers(self) -> None:
        """Write gathered register writes back (one `G`) and drop the cache: call before the target
        runs or resets, and before re-reading a register that may have changed behind the stub."""
        if self._gdirty:
            self._gdirty = False
            if self.checked(b"G" + self._gblock.hex().encode()) != b"OK":
                raise RspError("register block write failed")
        self._gblock = None

    def read_register(self, num: int) -> int:
        if num < self.g_regs:
            return int.from_bytes(self._block()[4 * num:4 * num + 4], "little")
        reply = self.checked(b"p%x" % num)
        return int.from_bytes(bytes.fromhex(reply.decode()), "little")

    def write_register(self, num: int, value: int, size: int = 4) -> None:
        if num < self.g_regs and size == 4:
            self._block()[4 * num:4 * num + 4] = value.to_bytes(4, "little")
            self._gdirty = True
            return
        # A register outside the block: the block goes first, so a later `G` cannot put back the
        # copy of this register it was read with.
        self.forget_registers()
        if self.checked(b"P%x=%s" % (num, value.to_bytes(size, "little").hex().encode())) != b"OK":
            raise RspError(f"register {num} write failed")

    def breakpoint(self, addr: int, insert: bool, kind: int = 2) -> None:
        reply = self.checked(b"%s1,%x,%x" % (b"Z" if insert else b"z", addr, kind))
        if reply != b"OK":
            raise RspError(f"hardware breakpoint at {addr:#x} not supported by the stub")

    def monitor(self, text: str) -> str:
        """Run a QEMU monitor command (`qRcmd`, hex-encoded); returns its console output."""
        self.forget_registers()  # a command may reset the machine
        self._send(b"qRcmd," + text.encode().hex().encode())
        out = b""
        while True:
            reply = self._recv(self.timeout)
            if reply.startswith(b"O") and reply != b"OK":
                out += bytes.fromhex(reply[1:].decode())
                continue
            if reply.startswith(b"E"):
                raise RspError(f"monitor command '{text}' failed: {reply.decode()}")
            return out.decode(errors="replace")

    def read_xfer(self, obj: str, annex: str) -> bytes:
        data = b""
        while True:
            reply = self.checked(b"qXfer:%s:read:%s:%x,%x" % (obj.encode(), annex.encode(), len(data), 0x800))
            data += reply[1:]
            if reply[:1] == b"l":
                return data
            if reply[:1] != b"m":
                raise RspError(f"qXfer {obj} {annex} not supported: {reply[:20]!r}")

    def register_numbers(self) -> dict[str, int]:
        """Register name -> gdb number from target.xml (and its includes); enables `p`/`P`."""
        numbers: dict[str, int] = {}
        nxt = 0

        def walk(annex: str) -> None:
            nonlocal nxt
            xml = self.read_xfer("features", annex).decode()
            for m in re.finditer(r'<xi:include href="([^"]+)"|<reg ([^>]*)>?', xml):
                if m.group(1):
                    walk(m.group(1))
                    continue
                attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                if "regnum" in attrs:
                    nxt = int(attrs["regnum"])
                numbers[attrs["name"].lower()] = nxt
                nxt += 1

        walk("target.xml")
        return numbers
