"""OS tasks: buildroot (make passthrough), mirror (offline Buildroot sources), boot (the OS in
QEMU), legal (licence bundle + SBOM). Not named os.py: the submodule would replace the `os` name
that seedfw.cli's own __init__ imports."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from . import command
from .config import default_board
from ..errors import SeedfwError
from ..paths import output_dir

__all__ = ["buildroot", "mirror", "boot", "legal"]


@command(help={"board": "board name", "output": "output directory (default output/<board>/)"})
def buildroot(c, board=None, output=None):
    """Run Buildroot's make in a built board's output dir.

    Run Buildroot's make in a built board's Buildroot output dir: invoke buildroot -- ARGS.

    e.g. `invoke buildroot --board qemu-aarch64 -- menuconfig`, `-- busybox-menuconfig`,
    `-- legal-info`, `-- show-info`. The same tree, external tree, toolchain and host tar as
    `invoke build`; a change made this way lasts until seedfw regenerates the defconfig.
    """
    from ..buildroot import hosttar, make, tree

    name = default_board(board)
    # Buildroot's O= of seedfw.parts.buildroot (<out>/build/buildroot)
    brout = output_dir(name, output) / "build" / "buildroot"
    if not (brout / ".config").is_file():
        raise SeedfwError(f"no Buildroot output yet (enable CONFIG_BUILDROOT and run "
                          f"'invoke build --board {name}')", brout)
    args = shlex.split(c.remainder or "")
    if not args:
        raise SeedfwError("nothing to pass to make: give its arguments after '--' "
                          "(e.g. invoke buildroot -- menuconfig)")
    root = tree.ensure()
    tree.check(root)
    env = dict(os.environ, **make.environment(hosttar.bin_dir()))
    cmd = ["make", "-C", str(root), f"O={brout}", *args]
    print(f"$ {shlex.join(cmd)}", file=sys.stderr)
    # Interactive targets (menuconfig) need the terminal: no capture, no log.
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        raise SeedfwError(f"Buildroot's make {shlex.join(args)} exited with status {rc}", brout)


@command
def mirror(c):
    """Fill Buildroot's offline download directory.

    Fill Buildroot's offline download dir: Debian origs checked against Buildroot's .hash files,
    plus the source overrides; list both."""
    from ..buildroot import mirror as brmirror, tree

    brmirror.check_overrides(require_all=False)   # a broken override dir: before any fetch
    brmirror.fetch_mirror_only(None, print)        # a missing mirror file: before the unpack
    root = tree.ensure()
    brmirror.prepare_overrides(root, None, print)  # mirror-only files first, then the archive
    names = brmirror.fill_primary(root, None, print)
    print(f"primary site {brmirror.primary_dir()}:")
    for orig, br_name in zip(brmirror.ORIGS, names):
        print(f"  {br_name:<28} = Debian {orig.file.name} ({orig.suite}), sha256 "
              f"{orig.file.sha256[:16]}… as in package/{orig.package}/{orig.package}.hash")
    print("source overrides (BR2_PACKAGE_OVERRIDE_FILE):")
    for ov in brmirror.OVERRIDES:
        print(f"  {ov.describe()}")


@command(help={"board": "board name", "output": "output directory (default output/<board>/)",
               "timeout": "seconds the OS has to print the agent's report and power off "
                          "(default 90, 600 with --counters: -icount and the plugin are slower)",
               "counters": "count memory traffic with seedfw's QEMU plugin (-icount; slower) into "
                           "<out>/counters/emulated-boot.json",
               "place": "labgrid place to hold for the boot (acquired, released always)"})
def boot(c, board=None, output=None, timeout=None, counters=False, place=None):
    """Boot the built OS in QEMU and check the agent's report.

    Boot the built OS in QEMU (Debian kernel + Buildroot initramfs + agent); check the agent's
    report. A board QEMU has no model of (rk3588) boots its image's own OS on QEMU virt
    (board.yaml qemu_os; what differs from the board is printed)."""
    from .. import boards
    from ..run import os_boot as osboot, os_virt

    name = default_board(board)
    brd, outdir, counted = boards.get(name), output_dir(name, output), None
    # A board QEMU has no model of (rk3588) boots its own OS image on QEMU virt instead.
    virt = not brd.qemu and os_virt.section(brd) is not None
    # Everything that can refuse is asked before the counter writes its plan (issue 33).
    if virt:
        os_virt.refuse(brd, outdir)
    else:
        osboot.refuse(brd, outdir)
    if counters:
        from ..counters import emulated
        counted = emulated.default_file(outdir, "boot")
    if not counted:
        extra = []
    elif virt:
        extra = emulated.virt_args(brd, outdir, counted)
    else:
        extra = emulated.qemu_args(brd, outdir, counted, os_boot=True)
    timeout = float(timeout) if timeout else 600.0 if counted else 90.0
    from ..lab import held
    with held(place, name):
        if virt:
            result = os_virt.boot(brd, outdir, timeout=timeout, extra_args=extra)
        else:
            result = osboot.boot(brd, outdir, timeout=timeout, extra_args=extra)
    how = "the image's own kernel, initramfs and ext4 root on QEMU virt" if virt else \
        "TF-A → U-Boot → Linux" if result.chain else "QEMU -kernel/-initrd (no U-Boot OS FIT)"
    print(f"OS booted ({how}) and powered off in {result.seconds:.1f} s (QEMU exit 0); "
          f"{len(result.agent_lines())} agent lines; UART log: {result.log}")
    if virt:
        print(f"emulated, not the board: {os_virt.differs_line(brd)}")
    if counted:
        print(emulated.summary_line(emulated.collect(brd, outdir, counted, "boot")) +
              f"; {counted}")
    from ..counters import perf_live           # the agent's perf PMU windows, if it read any
    perf = perf_live.write(brd, outdir, result.lines, emulated=True)
    if perf:
        print(f"agent perf counters: {perf}")


@command(help={"board": "board name", "output": "output directory (default output/<board>/)"})
def legal(c, board=None, output=None):
    """Write the licence bundle and SBOM of the whole firmware.

    Licence bundle + SBOM (CycloneDX 1.6, SPDX 3.0.1) of the whole firmware: Buildroot's
    legal-info (cross-checked against the SBOM) plus TF-A, U-Boot, rkbin blobs, the kernel
    package and the Buildroot tree, in <out>/legal/."""
    from .. import config as kcfg
    from ..sbom import legal as brlegal
    from ..parts import BuildContext

    name = default_board(board)
    cfg = kcfg.resolve(name, output)
    cfg.values = kcfg.load_values(cfg.outdir)       # what was built (fragments included)
    ctx = BuildContext(cfg)
    brlegal.bundle(ctx)
