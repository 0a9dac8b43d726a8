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
               "timeout": "seconds the OS has to print the agent's report and power off (90)",
               "counters": "count memory traffic with seedfw's QEMU plugin (-icount; slower) into "
                           "<out>/counters/emulated-boot.json"})
def boot(c, board=None, output=None, timeout=90.0, counters=False):
    """Boot the built OS in QEMU and check the agent's report.

    Boot the built OS in QEMU (Debian kernel + Buildroot initramfs + agent); check the agent's report."""
    from .. import boards
    from ..run import os_boot as osboot

    name = default_board(board)
    brd, outdir, counted = boards.get(name), output_dir(name, output), None
    if counters:
        from ..counters import emulated
        counted = emulated.default_file(outdir, "boot")
    extra = emulated.qemu_args(brd, outdir, counted, os_boot=True) if counted else []
    result = osboot.boot(brd, outdir, timeout=float(timeout), extra_args=extra)
    how = "TF-A → U-Boot → Linux" if result.chain else "QEMU -kernel/-initrd (no U-Boot OS FIT)"
    print(f"OS booted ({how}) and powered off in {result.seconds:.1f} s (QEMU exit 0); "
          f"{len(result.agent_lines())} agent lines; UART log: {result.log}")
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

    Licence bundle + CycloneDX SBOM of the whole firmware: Buildroot's legal-info plus TF-A,
    U-Boot, rkbin blobs and the kernel package, in <out>/legal/."""
    from .. import config as kcfg
    from .. import legal as brlegal
    from ..parts import BuildContext

    name = default_board(board)
    cfg = kcfg.resolve(name, output)
    cfg.values = kcfg.load_values(cfg.outdir)       # what was built (fragments included)
    ctx = BuildContext(cfg)
    brlegal.bundle(ctx)
