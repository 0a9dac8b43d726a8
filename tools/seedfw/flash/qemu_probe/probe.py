"""`QemuProbe`: a pyOCD DebugProbe whose "wire" is QEMU's GDB stub.

pyOCD discovers targets through DP and AP registers, so the probe presents an SW-DP (DPIDR
0x2BA01477, DPv1) with one AHB-AP (IDR 0x24770011, BASE 0xE00FF003) whose ROM table is synthesised
in debug_regs. All memory traffic takes the accelerated path (`get_memory_interface_for_ap`): the
debug block is emulated, everything else becomes RSP `m`/`M`, bracketed by stop/continue when the
guest runs.

Unique ID: `qemu:HOST:PORT` (the part after `qemu:` is what pyOCD hands to get_probe_with_id).
"""

from __future__ import annotations

import struct

from pyocd.core import exceptions
from pyocd.core.memory_interface import MemoryInterface
from pyocd.probe.debug_probe import DebugProbe

from ..probe_ids import parse_qemu_uid as parse_uid  # one parser for the CLI check and the plug-in
from .debug_regs import DebugRegisters, StoppedWhile
from .rsp import RspClient, RspError

DPIDR = 0x2BA01477
AHB_AP_IDR = 0x24770011
AP_BASE = 0xE00FF003
PPB_START = 0xE0000000  # private peripheral bus: where emulated registers may live
# pyOCD session options this probe makes the default (see QemuProbe.open)
QEMU_RESET_OPTIONS = {"reset.post_delay": 0.0, "reset.core_recover.timeout": 0.0}
CSW_DEFAULT = 0x23000052  # 32-bit, single auto-increment, DeviceEn, HPROT privileged data


class QemuMemoryInterface(MemoryInterface):
    """Memory of the AHB-AP: emulated debug registers on the PPB, the stub everywhere else."""

    def __init__(self, probe: "QemuProbe"):
        self.probe = probe

    @property
    def regs(self) -> DebugRegisters:
        return self.probe.regs

    def _read_bytes(self, addr: int, size: int) -> bytes:
        try:
            with StoppedWhile(self.regs):
                return self.probe.rsp.read_memory(addr, size)
        except RspError as exc:
            raise exceptions.TransferFaultError(f"memory read at {addr:#x}: {exc}") from None

    def _write_bytes(self, addr: int, data: bytes) -> None:
        try:
            with StoppedWhile(self.regs):
                self.regs.forget_code_at(addr, len(data))
                self.probe.rsp.write_memory(addr, data)
        except RspError as exc:
            raise exceptions.TransferFaultError(f"memory write at {addr:#x}: {exc}") from None

    def _read_word(self, addr: int) -> int:
        value = self.regs.read32(addr)
        if value is not None:
            return value
        try:
            return struct.unpack("<I", self._read_bytes(addr, 4))[0]
        except exceptions.TransferFaultError:
            if addr >= PPB_START:
                return 0  # unimplemented system registers read as zero, as on silicon
            raise

    def _write_word(self, addr: int, value: int) -> None:
        if not self.regs.write32(addr, value):
            self._write_bytes(addr, struct.pack("<I", value))

    def write_memory(self, addr, data, transfer_size=32, **attrs):
        addr &= 0xFFFFFFFF
        if transfer_size == 32 and addr >= PPB_START:
            self._write_word(addr, data)
        else:
            self._write_bytes(addr, int(data).to_bytes(transfer_size // 8, "little"))

    def read_memory(self, addr, transfer_size=32, now=True, **attrs):
        addr &= 0xFFFFFFFF
        if transfer_size == 32 and addr >= PPB_START:
            value = self._read_word(addr)
        elif addr >= PPB_START and self.regs.read32(addr & ~3) is not None:
            word = self.regs.read32(addr & ~3)
            value = (word >> (8 * (addr & 3))) & ((1 << transfer_size) - 1)
        else:
            value = int.from_bytes(self._read_bytes(addr, transfer_size // 8), "little")
        return value if now else (lambda: value)

    def write_memory_block32(self, addr, data, **attrs):
        if addr >= PPB_START:
            for i, word in enumerate(data):
                self._write_word(addr + 4 * i, word)
        else:
            self._write_bytes(addr, struct.pack(f"<{len(data)}I", *data))

    def read_memory_block32(self, addr, size, **attrs):
        if addr >= PPB_START:
            return [self._read_word(addr + 4 * i) for i in range(size)]
        return list(struct.unpack(f"<{size}I", self._read_bytes(addr, 4 * size)))

    def write_memory_block8(self, addr, data, **attrs):
        self._write_bytes(addr, bytes(data))

    def read_memory_block8(self, addr, size, **attrs):
        return list(self._read_bytes(addr, size))


class QemuProbe(DebugProbe):
    """DebugProbe for `qemu:HOST:PORT`; nothing is enumerated (QEMU pauses on every new connection,
    so probing would disturb a running guest): the UID must be given explicitly."""

    @classmethod
    def get_all_connected_probes(cls, unique_id=None, is_explicit=False):
        probe = cls.get_probe_with_id(unique_id, is_explicit) if unique_id else None
        return [probe] if probe else []

    @classmethod
    def get_probe_with_id(cls, unique_id, is_explicit=False):
        if not is_explicit:
            return None
        try:
            host, port = parse_uid(unique_id)
        except ValueError:
            return None
        return cls(host, port)

    def __init__(self, host: str, port: int):
        super().__init__()
        self.host, self.port = host, port
        self.rsp: RspClient | None = None
        self.regs: DebugRegisters | None = None
        self._memif: QemuMemoryInterface | None = None
        self._is_open = False
        self._dp_ctrl_stat = 0
        self._ap_csw = CSW_DEFAULT
        self._ap_tar = 0

    # -- identity -----------------------------------------------------------------------------
    @property
    def description(self):
        return f"QEMU gdbstub {self.host}:{self.port}"

    @property
    def vendor_name(self):
        return "QEMU"

    @property
    def product_name(self):
        return "gdbstub"

    @property
    def supported_wire_protocols(self):
        return [DebugProbe.Protocol.DEFAULT, DebugProbe.Protocol.SWD]

    @property
    def unique_id(self):
        return f"qemu:{self.host}:{self.port}"

    @property
    def wire_protocol(self):
        return DebugProbe.Protocol.SWD if self._is_open else None

    @property
    def is_open(self):
        return self._is_open

    @property
    def capabilities(self):
        return {DebugProbe.Capability.MANAGED_AP_SELECTION, DebugProbe.Capability.MANAGED_DPBANKSEL}

    # -- session ------------------------------------------------------------------------------
    def open(self):
        try:
            self.rsp = RspClient(self.host, self.port)
            self.regs = DebugRegisters(self.rsp)
            if self.rsp.was_running_at_connect:
                # Attaching must not stop a running guest: QEMU paused it on connect, so let it go
                # on; pyOCD then sees a running core, as with a hardware probe.
                self.rsp.cont()
        except RspError as exc:
            raise exceptions.ProbeError(str(exc)) from None
        self._memif = QemuMemoryInterface(self)
        self._is_open = True
        session = getattr(self, "session", None)
        if session is not None:
            # After writing AIRCR pyOCD sleeps reset.post_delay (0.1 s) so a real chip can come out of
            # reset, then polls DHCSR every 10 ms until S_RESET_ST reads clear — and that sticky bit
            # always reads set once, so another 10 ms. Here the AIRCR write returns only once QEMU
            # shows the reset vector in the PC (DebugRegisters.reset): the core is out of reset, both
            # waits are pure waste (110 ms of a 275 ms flash, issue 33). Lowest-priority layer: a
            # user's option or config file still wins.
            session.options.add_back({key: value for key, value in QEMU_RESET_OPTIONS.items()
                                      if not session.options.is_set(key)})

    def close(self):
        if self.rsp is not None:
            self.rsp.close()
        self.rsp = self.regs = self._memif = None
        self._is_open = False

    def connect(self, protocol=None):
        pass

    def disconnect(self):
        pass

    def swj_sequence(self, length, bits):
        pass

    def set_clock(self, frequency):
        pass

    def reset(self):
        self.regs.reset()

    def assert_reset(self, asserted):
        # nRESET held: stop the core; released: reset the machine (halting if reset catch is on).
        if asserted:
            self.regs.halt()
        else:
            self.regs.reset()

    def is_reset_asserted(self):
        return False

    def flush(self):
        pass

    # -- DAP registers ------------------------------------------------------------------------
    def read_dp(self, addr, now=True):
        addr &= 0xF
        if addr == 0x0:
            value = DPIDR
        elif addr == 0x4:
            # Power-up requests (bits 28, 30) are acknowledged at once (bits 29, 31).
            value = self._dp_ctrl_stat | ((self._dp_ctrl_stat & 0x50000000) << 1)
        else:
            value = 0
        return value if now else (lambda: value)

    def write_dp(self, addr, data):
        if addr & 0xF == 0x4:
            self._dp_ctrl_stat = data

    def read_ap(self, addr, now=True):
        apsel, reg = addr >> 24, addr & 0xFC
        value = 0
        if apsel == 0:
            if reg == 0xFC:
                value = AHB_AP_IDR
            elif reg == 0xF8:
                value = AP_BASE
            elif reg == 0x00:
                value = self._ap_csw | (1 << 6)  # DeviceEn
            elif reg == 0x04:
                value = self._ap_tar
            elif reg == 0x0C:
                value = self._drw(None)
            elif 0x10 <= reg <= 0x1C:
                value = self._memif.read_memory((self._ap_tar & ~0xF) | (reg & 0xC))
        return value if now else (lambda: value)

    def write_ap(self, addr, data):
        apsel, reg = addr >> 24, addr & 0xFC
        if apsel != 0:
            return
        if reg == 0x00:
            self._ap_csw = data
        elif reg == 0x04:
            self._ap_tar = data
        elif reg == 0x0C:
            self._drw(data)
        elif 0x10 <= reg <= 0x1C:
            self._memif.write_memory((self._ap_tar & ~0xF) | (reg & 0xC), data)

    def _drw(self, data):
        """One DRW access at TAR with CSW's size, then TAR auto-increment if enabled."""
        size = 8 << (self._ap_csw & 0x7)
        lane = (self._ap_tar & 3) * 8
        if data is None:
            result = self._memif.read_memory(self._ap_tar, size) << lane
        else:
            self._memif.write_memory(self._ap_tar, (data >> lane) & ((1 << size) - 1), size)
            result = None
        if self._ap_csw & 0x30 == 0x10:
            self._ap_tar = (self._ap_tar + size // 8) & 0xFFFFFFFF
        return result

    def read_ap_multiple(self, addr, count=1, now=True):
        values = [self.read_ap(addr) for _ in range(count)]
        return values if now else (lambda: values)

    def write_ap_multiple(self, addr, values):
        for value in values:
            self.write_ap(addr, value)

    def get_memory_interface_for_ap(self, ap_address):
        return self._memif if getattr(ap_address, "apsel", 0) == 0 else None
