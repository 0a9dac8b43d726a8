"""Reading a board's counters back: the stats block through pyOCD (Cortex-M), through the GDB stub
of a QEMU we start (A-class payload) or one already running, and the RK3588 DFI registers (live
or recorded). `read_stats_block` returns the counters document (provenance,
settings, readings: seedfw.counters.provenance); each path says which provenance it gives."""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError
from ..flash.reach import reach_probe
from . import provenance


def read_stats_block(b, cls, probe, elf, flash_first, bench_path, output=None):
    if b.arch != "armv7m" and not probe:
        from ..paths import output_dir

        outdir = output_dir(b.name, output)
        if elf is None:
            elf = outdir / "images" / "bl33.elf"
            if not elf.is_file():
                raise SeedfwError(f"not built yet (run 'invoke build --board {b.name}')", elf)
        source = cls(b, elf=elf)        # checks the ELF before QEMU is started
        values = _stats_counters_qemu(b, source, outdir)
        return source.document(values, provenance.emulated(
            b, "stats block read through the GDB stub of a QEMU this command booted with the "
               "built image", started=True))
    source = cls(b, elf=elf)            # checks the ELF before any probe is reached
    if b.arch != "armv7m":
        values = _stats_counters_gdb(b, source, probe)
        return source.document(values, provenance.emulated(
            b, "stats block read through the GDB stub of a QEMU already running", target=probe,
            started=False))

    from pyocd.core.helpers import ConnectHelper

    from .base import PyocdReader
    from ..flash import runner_class

    with reach_probe(b, probe, bench_path) as (uid, target, qemu):
        target = target or (b.pyocd or {}).get("target")
        if flash_first or qemu is not None:
            runner_class("pyocd").from_board(b, uid, target=target, log=lambda *_: None).flash(elf)
        if qemu is not None:
            qemu.wait_uart("stats:")       # the pump of seedfw.run.bench
        session = ConnectHelper.session_with_chosen_probe(unique_id=uid, target_override=target,
                                                          blocking=False, options={"connect_mode": "attach"})
        if session is None:
            raise SeedfwError(f"debug probe '{uid}' not found", None, "--probe")
        with session:
            values = source.sample(PyocdReader(session.target))
        return source.document(values, provenance.through_pyocd(b, uid, target, qemu is not None))


def _stats_counters_gdb(b, source, probe):
    """A-class guests: pyOCD drives Cortex-M only, so read the block straight through the GDB stub
    of a running QEMU (the guest is paused for the read and continues afterwards)."""
    from .base import RspReader
    from ..flash.probe_ids import parse_qemu_uid as parse_uid
    from ..flash.qemu_probe.rsp import RspClient

    try:
        host, port = parse_uid(probe or "")
    except ValueError:
        raise SeedfwError(f"board '{b.name}' is read through a running QEMU's GDB stub: "
                          "pass --probe qemu:HOST:PORT", None, "--probe") from None
    rsp = RspClient(host, port)
    try:
        values = source.sample(RspReader(rsp))
        if rsp.was_running_at_connect:
            rsp.cont()
    finally:
        rsp.close()
    return values


def _stats_counters_qemu(b, source, outdir: Path, timeout: float = 30.0):
    """A-class board, no probe: boot the built image in QEMU with a GDB stub on an ephemeral
    loopback port and -no-shutdown (PSCI SYSTEM_OFF then stops the guest instead of ending QEMU),
    wait for the firmware's `stats:` UART line, read the block through the stub, stop QEMU.
    The UART goes to <out>/logs/counters.log (through the one pump, seedfw.run.uart)."""
    from .base import RspReader
    from ..flash.qemu_probe.rsp import RspClient
    from ..run import qemu
    from ..run.bench import free_port
    from ..run.target import Target

    log = outdir / "logs" / "counters.log"
    for _ in range(3):              # free_port() can race with another program taking the port
        port = free_port()
        cmd = qemu.command(b, outdir, "firmware", gdb=port, extra=["-no-shutdown"])
        values = exited = None
        with Target(cmd, b, log) as target:         # never leave QEMU behind, whatever happens
            if target.wait_line(r"^stats:", timeout) is not None:
                rsp = RspClient("127.0.0.1", port)      # connecting pauses the guest if it still runs
                try:
                    # By now the guest is usually in TF-A's SYSTEM_OFF at EL3, whose MMU does not map
                    # the payload's RAM, so a virtual read fails (E14): read physical memory instead
                    # (the payload runs with the MMU off, so its symbol addresses are physical).
                    rsp.checked(b"Qqemu.PhyMemMode:1")
                    values = source.sample(RspReader(rsp))
                finally:
                    rsp.close()
            elif target.ended:              # the UART ended: QEMU exited (reap it for its status)
                exited = target.reap(5)
        if values is not None:
            return values
        if exited is None:
            raise SeedfwError(f"no 'stats:' line on the UART within {timeout:g} s", log)
        if not any("Address already in use" in line for line in target.lines):
            raise SeedfwError(f"QEMU exited (status {exited}) before the firmware printed its 'stats:' "
                              "line", log)
    raise SeedfwError("QEMU could not open its GDB stub on a free loopback port (3 tries)", log)
