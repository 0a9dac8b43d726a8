"""The one place that starts a target (labgrid's QEMUDriver: the whole command line from
configured image keys).

  qemu.py     `command(board, outdir, mode, ...)`: every QEMU command line, from board.yaml
              (`qemu:`) plus the boot artifacts the build declared in manifest.json (each says how
              QEMU loads it: -bios, -kernel, -initrd, -device loader at an address, a drive);
              `start`/`stop`
  uart.py     the one UART pump (QEMU's stdout → log, echo, lines; wait for a line or text)
  payload.py  `invoke run`: boot the firmware and wait for power-off or the ready line
  os_boot.py  `invoke boot`: the OS through TF-A and U-Boot, or QEMU loading Linux itself
  bench.py    a QEMU halted at reset behind its GDB stub (the pyOCD probe's target)

Users: cli (run, boot, flash, counters, ci), counters.readback, tune.trial, doctor.
"""
