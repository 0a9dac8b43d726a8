"""Cortex-M debug registers emulated on top of QEMU's GDB stub.

QEMU 7.2 reads the debug block (DHCSR, DCRSR, DCRDR, DEMCR, DFSR), the FPB and the ROM table as
zero through the stub, but pyOCD drives a Cortex-M through exactly those registers. This module is
the translation table:

    DHCSR C_HALT / C_STEP / resume   -> ^C / `s` / `c` (RspClient)
    DCRSR + DCRDR                     -> `p` / `P` (gdb numbers from target.xml)
    FP_COMPn enable / disable         -> `Z1` / `z1`
    AIRCR SYSRESETREQ or VECTRESET    -> `qRcmd system_reset`
    DFSR, S_RESET_ST, S_RETIRE_ST     -> emulated from what the probe did
    MSP, PSP, CONTROL/PRIMASK         -> shadowed (the stub exposes only SP and xPSR); firmware
                                         that stays on MSP in privileged thread mode (ours) is exact.

A SCS, an FPB and a ROM table pointing at both are synthesised with Arm's CoreSight ID values so
pyOCD's discovery finds a v7-M core.
"""

from __future__ import annotations

import time

from .rsp import G_REGS, RspClient, RspError

DHCSR, DCRSR, DCRDR, DEMCR = 0xE000EDF0, 0xE000EDF4, 0xE000EDF8, 0xE000EDFC
DFSR, AIRCR = 0xE000ED30, 0xE000ED0C
FPB_BASE, SCS_BASE, ROM_BASE = 0xE0002000, 0xE000E000, 0xE00FF000
FPB_COMPARATORS = 6

C_DEBUGEN, C_HALT, C_STEP, C_MASKINTS = 1 << 0, 1 << 1, 1 << 2, 1 << 3
S_REGRDY, S_HALT, S_RETIRE_ST, S_RESET_ST = 1 << 16, 1 << 17, 1 << 24, 1 << 25
DBGKEY = 0xA05F << 16
DFSR_HALTED, DFSR_BKPT, DFSR_VCATCH = 1 << 0, 1 << 1, 1 << 3
VC_CORERESET = 1 << 0
AIRCR_VECTKEY = 0x05FA << 16
AIRCR_RESET_BITS = (1 << 2) | (1 << 0)  # SYSRESETREQ | VECTRESET

# DCRSR REGSEL values of the registers the stub does not have
REG_XPSR, REG_MSP, REG_PSP, REG_CFBP = 16, 17, 18, 20


def _coresight_ids(part: int, component_class: int) -> dict[int, int]:
    """PIDR/CIDR words (offsets 0xFD0-0xFFC) of an Arm component (JEP106 0x43B)."""
    return {
        0xFD0: 0x04,                               # PIDR4: JEP106 continuation code 4, 4 KiB
        0xFE0: part & 0xFF,                        # PIDR0: part[7:0]
        0xFE4: (part >> 8) | 0xB0,                 # PIDR1: part[11:8], JEP106 id[3:0] = 0xB
        0xFE8: 0x0B,                               # PIDR2: JEP106 id[6:4] = 3, JEDEC bit
        0xFEC: 0x00,
        0xFF0: 0x0D, 0xFF4: component_class << 4, 0xFF8: 0x05, 0xFFC: 0xB1,  # CIDR preamble
    }


SCS_IDS = _coresight_ids(0x000, 0xE)   # "SCS v7-M" in pyOCD's component table
FPB_IDS = _coresight_ids(0x003, 0xE)   # "FPB v7-M"
ROM_IDS = _coresight_ids(0x4C3, 0x1)   # Cortex-M3 ROM table
ROM_ENTRIES = [
    ((SCS_BASE - ROM_BASE) & 0xFFFFF000) | 3,  # present, 32-bit format
    ((FPB_BASE - ROM_BASE) & 0xFFFFF000) | 3,
    0,
]


class DebugRegisters:
    """The emulated debug block of one Cortex-M core behind `rsp`."""

    def __init__(self, rsp: RspClient):
        self.rsp = rsp
        self.regnums = rsp.register_numbers()  # also unlocks `p`/`P` on QEMU
        for name in ("r0", "sp", "lr", "pc", "xpsr"):
            if name not in self.regnums:
                raise RspError(f"gdbstub target.xml lacks register {name}; not an M-profile QEMU?")
        if all(self.regnums.get(f"r{n}") == n for n in range(13)) and self.regnums["sp"] == 13 \
                and self.regnums["lr"] == 14 and self.regnums["pc"] == 15:
            rsp.g_regs = G_REGS  # r0-r15 are the first 16 words of `g`: cache them (rsp.G_REGS)
        self.control = 0
        self.debugen = False
        self.maskints = False
        self.demcr = 0
        self.dfsr = 0
        self.dcrdr = 0
        self.reset_st = False
        self.retired = False
        self.shadow = {REG_PSP: 0, REG_CFBP: 0}
        self.fp_ctrl_enable = False
        self.fp_comp = [0] * FPB_COMPARATORS
        self.planted: set[int] = set()  # addresses with a stub breakpoint (FPB and temporary)
        self.temporary: int | None = None  # breakpoint planted at a flash algo's return BKPT

    # -- run state ----------------------------------------------------------------------------
    @property
    def halted(self) -> bool:
        if self.rsp.running and self.rsp.poll_stop():
            self._stopped()
        return not self.rsp.running

    def _stopped(self) -> None:
        pc = self.rsp.read_register(self.regnums["pc"])
        hit = pc in self.planted and (pc == self.temporary or pc in self._fpb_addresses())
        self.dfsr |= DFSR_BKPT if hit else DFSR_HALTED
        # The temporary breakpoint stays planted: pyOCD calls the same algo again and again with the
        # same return address, and planting + removing it on every call cost 3 of the ~12 stub round
        # trips per call (Z1, z1 and reading the BKPT back; issue 33). It goes when a resume has
        # another LR (resume) or when memory under it is rewritten (forget_code_at).

    def halt(self) -> None:
        if self.rsp.running:
            self.rsp.halt()
            self._stopped()

    def resume(self) -> None:
        if self.rsp.running:
            return
        # pyOCD's flash algo (and its function calls in general) return to a BKPT at LR; QEMU would
        # take a HardFault there instead of halting, so a stub breakpoint stands in for it.
        lr = self.rsp.read_register(self.regnums["lr"]) & ~1
        if lr != self.temporary:
            self.drop_temporary()
            try:
                insn = int.from_bytes(self.rsp.read_memory(lr, 2), "little")
            except RspError:
                insn = 0
            if insn & 0xFF00 == 0xBE00 and lr not in self.planted:
                self._plant(lr)
                self.temporary = lr
        self.retired = True
        self.rsp.cont()

    def step(self) -> None:
        if self.rsp.running:
            return
        self.rsp.step()
        self.retired = True
        self.dfsr |= DFSR_HALTED

    def reset(self) -> None:
        """System reset through the QEMU monitor; halts at the reset vector when VC_CORERESET is set."""
        self.halt()
        self.rsp.monitor("system_reset")
        # The monitor only requests the reset; QEMU's main loop performs it. Wait until the PC
        # shows the reset vector so no stale pre-reset state is read afterwards.
        vector = int.from_bytes(self.rsp.read_memory(4, 4), "little") & ~1
        deadline = time.monotonic() + 2.0
        while self.rsp.read_register(self.regnums["pc"]) != vector and time.monotonic() < deadline:
            time.sleep(0.0005)  # one stub round trip per poll; QEMU resets within a few
            self.rsp.forget_registers()  # the PC changes behind the stub: read it afresh
        self.reset_st = True
        self.control = 0
        self.shadow = {REG_PSP: 0, REG_CFBP: 0}
        if self.demcr & VC_CORERESET:
            self.dfsr |= DFSR_VCATCH
        else:
            self.resume()

    # -- breakpoints --------------------------------------------------------------------------
    def drop_temporary(self) -> None:
        """Remove the breakpoint kept at a flash algo's return BKPT (the guest must be stopped)."""
        if self.temporary is not None:
            self._unplant(self.temporary)
            self.temporary = None

    def forget_code_at(self, addr: int, length: int) -> None:
        """Memory at [addr, addr+length) is being rewritten: the BKPT the temporary breakpoint stood
        for may be gone, so the next resume must look again."""
        if self.temporary is not None and addr <= self.temporary < addr + length:
            self.drop_temporary()

    def _plant(self, addr: int) -> None:
        self.rsp.breakpoint(addr, True)
        self.planted.add(addr)

    def _unplant(self, addr: int) -> None:
        if addr in self.planted and addr not in self._fpb_addresses():
            self.rsp.breakpoint(addr, False)
            self.planted.discard(addr)

    def _fpb_addresses(self) -> set[int]:
        if not self.fp_ctrl_enable:
            return set()
        return {self._comp_address(c) for c in self.fp_comp if c & 1}

    @staticmethod
    def _comp_address(comp: int) -> int:
        # FPBv1: COMP[28:2] is the word address; REPLACE (bits 31:30) picks the halfword.
        return (comp & 0x1FFFFFFC) | (2 if (comp >> 30) == 2 else 0)

    def _sync_breakpoints(self, before: set[int]) -> None:
        with self._stopped_while():
            after = self._fpb_addresses()
            for addr in before - after:
                if addr != self.temporary:
                    self.rsp.breakpoint(addr, False)
                    self.planted.discard(addr)
            for addr in after - before:
                if addr not in self.planted:
                    self._plant(addr)

    def _stopped_while(self):
        return StoppedWhile(self)

    # -- core registers -----------------------------------------------------------------------
    def _gdb_number(self, regsel: int) -> int | None:
        if regsel <= 15:
            return regsel
        if regsel == REG_XPSR:
            return self.regnums["xpsr"]
        if regsel == REG_MSP and not self.control & 2:
            return self.regnums["sp"]
        if regsel == REG_PSP and self.control & 2:
            return self.regnums["sp"]
        return None

    def _register_transfer(self, dcrsr: int) -> None:
        regsel, write = dcrsr & 0x7F, bool(dcrsr & (1 << 16))
        num = self._gdb_number(regsel)
        if write:
            if num is not None:
                self.rsp.write_register(num, self.dcrdr)
            elif regsel == REG_CFBP:
                self.shadow[REG_CFBP] = self.dcrdr
                self.control = (self.dcrdr >> 24) & 0x3
            elif regsel in self.shadow:
                self.shadow[regsel] = self.dcrdr
        else:
            if num is not None:
                self.dcrdr = self.rsp.read_register(num)
            else:
                self.dcrdr = self.shadow.get(regsel, 0)

    # -- register file ------------------------------------------------------------------------
    def read32(self, addr: int) -> int | None:
        """Emulated value at `addr`, or None when the address is plain memory for the stub."""
        if addr == DHCSR:
            halted = self.halted
            value = (S_REGRDY | (S_HALT | C_HALT if halted else 0) | (C_DEBUGEN if self.debugen else 0)
                     | (C_MASKINTS if self.maskints else 0) | (S_RESET_ST if self.reset_st else 0)
                     | (S_RETIRE_ST if self.retired else 0))
            self.reset_st = False   # both sticky bits clear on read
            self.retired = not halted
            return value
        if addr == DCRSR:
            return 0
        if addr == DCRDR:
            return self.dcrdr
        if addr == DEMCR:
            return self.demcr
        if addr == DFSR:
            return self.dfsr
        if SCS_BASE + 0xFD0 <= addr <= SCS_BASE + 0xFFC:
            return SCS_IDS.get(addr - SCS_BASE, 0)
        if FPB_BASE <= addr < FPB_BASE + 0x1000:
            off = addr - FPB_BASE
            if off == 0:
                return (FPB_COMPARATORS << 4) | int(self.fp_ctrl_enable)
            if 8 <= off < 8 + 4 * FPB_COMPARATORS:
                return self.fp_comp[(off - 8) // 4]
            return FPB_IDS.get(off, 0)
        if ROM_BASE <= addr < ROM_BASE + 0x1000:
            off = addr - ROM_BASE
            if off < 4 * len(ROM_ENTRIES):
                return ROM_ENTRIES[off // 4]
            if off == 0xFCC:
                return 1  # MEMTYPE.SYSMEM: system memory is visible on this bus
            return ROM_IDS.get(off, 0)
        return None

    def write32(self, addr: int, value: int) -> bool:
        """Apply a write to an emulated register; False when `addr` is plain memory."""
        if addr == DHCSR:
            if value & 0xFFFF0000 != DBGKEY:
                return True  # writes without the key are ignored by the hardware too
            self.debugen = bool(value & C_DEBUGEN)
            self.maskints = bool(value & C_MASKINTS)
            if value & C_HALT:
                self.halt()
            elif value & C_STEP:
                self.step()
            elif self.debugen:
                self.resume()
            return True
        if addr == DCRSR:
            with self._stopped_while():
                self._register_transfer(value)
            return True
        if addr == DCRDR:
            self.dcrdr = value
            return True
        if addr == DEMCR:
            self.demcr = value
            return True
        if addr == DFSR:
            self.dfsr &= ~value  # write one to clear
            return True
        if addr == AIRCR and value & 0xFFFF0000 == AIRCR_VECTKEY and value & AIRCR_RESET_BITS:
            self.reset()
            return True
        if FPB_BASE <= addr < FPB_BASE + 0x1000:
            before = self._fpb_addresses()
            off = addr - FPB_BASE
            if off == 0 and value & 2:  # KEY must be set for ENABLE to change
                self.fp_ctrl_enable = bool(value & 1)
            elif 8 <= off < 8 + 4 * FPB_COMPARATORS:
                self.fp_comp[(off - 8) // 4] = value
            self._sync_breakpoints(before)
            return True
        if SCS_BASE + 0xFD0 <= addr <= SCS_BASE + 0xFFC or ROM_BASE <= addr < ROM_BASE + 0x1000:
            return True  # read-only identification registers
        return False


class StoppedWhile:
    """Context: stop a running guest for a stub access, then let it continue (QEMU pauses the
    guest on any byte received while it runs, so every access must be bracketed like this)."""

    def __init__(self, regs: DebugRegisters):
        self.regs = regs
        self.was_running = False

    def __enter__(self):
        rsp = self.regs.rsp
        if not rsp.running:
            return self
        if rsp.poll_stop(0):
            self.regs._stopped()  # it stopped by itself (breakpoint): a real stop
            return self
        reply = rsp.halt()
        # SIGINT (T02) is our ^C; anything else (T05 trap) means the guest stopped on its own just
        # before the ^C arrived: that stop is real and must not be undone.
        self.was_running = reply[:3] == b"T02"
        if not self.was_running:
            self.regs._stopped()
        return self

    def __exit__(self, *exc):
        if self.was_running and exc[0] is None:
            self.regs.rsp.cont()
        return False
