"""The wake-controller firmware (firmware/mcu): a Cortex-M image built by its own Makefile."""

from __future__ import annotations

from pathlib import Path

from ..cache import ccache
from .. import plan
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR, ROOT
from .base import Output, Part, Placement

SOURCE = FIRMWARE_DIR / "mcu"
# The flash algorithm pyOCD runs on the target is checked in as generated Python (the pyOCD target
# embeds it); the build rebuilds it from source to notice when the two have drifted apart.
CHECKED_IN_ALGO = ROOT / "tools" / "seedfw" / "flash" / "targets" / "mps2_an385_algo.py"


class McuPart(Part):
    """Cortex-M wake-controller image for the armv7m boards (mps2-an385 stands in for it).

    Kconfig symbols read: MCU (enables it), CROSS_COMPILE_M, BUILD_ID, BUILD_JOBS.
    Contract with firmware/mcu/Makefile:
      make -C firmware/mcu O=<dir> CROSS_COMPILE=<prefix> BUILD_ID=<id> all flashalgo
      → <dir>/mcu.elf, <dir>/mcu.bin, <dir>/mcu.hex, <dir>/flashalgo/algo.elf, algo-broken.elf
    Outputs: <out>/images/mcu.elf, mcu.bin, mcu.hex. Build directory: <out>/build/mcu.
    The flash algorithms stay in <out>/build/mcu/flashalgo/: `invoke flash` does not read them (the
    pyOCD target embeds the checked-in blob, tools/seedfw/flash/targets/mps2_an385_algo.py); the
    build compares the fresh algo.elf with that blob and warns when they differ.
    """

    name = "mcu"
    symbols = ("MCU", "CROSS_COMPILE_M", "BUILD_ID", "BUILD_JOBS")
    STEP_VERSION = "2"
    OUTPUTS = ("mcu.elf", "mcu.bin", "mcu.hex")
    ALGOS = ("algo.elf", "algo-broken.elf")

    provides = ("mcu", "mcu-elf", "mcu-hex", "dvfs-hints")
    when = "MCU=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("MCU"))

    def outputs(self, ctx):
        # pyOCD programs the ELF (segment by segment) or the HEX when present; the raw image is
        # what the core reads from flash at reset.
        # QEMU's -kernel loads the ELF's segments as pyOCD would program them.
        i, step, storage = ctx.images, "mcu.build", ctx.board.boot["storage"]
        base = (ctx.board.pyocd or {}).get("flash", {}).get("base", 0)
        return [Output(i / "mcu.elf", step, ("mcu-elf", "dvfs-hints"), kind="mcu",
                       read_by="pyOCD or QEMU -kernel", location="load segments",
                       flash=("pyocd",), at_boot=False, qemu="kernel"),
                Output(i / "mcu.hex", step, ("mcu-hex",), kind="mcu", read_by="pyOCD",
                       location="Intel HEX records", flash=("pyocd",), at_boot=False),
                Output(i / "mcu.bin", step, ("mcu",), kind="mcu",
                       placement=Placement(storage=storage, offset=base),
                       read_by="Cortex-M3 at reset (vector table at 0x0)",
                       location="internal flash at 0x0", flash=("pyocd",))]

    def sbom(self, ctx):
        """seedfw's own MCU firmware: its source tree (firmware/mcu + the shared trees)."""
        return [self.own_firmware("seedfw-mcu", [FIRMWARE_DIR / "mcu"],
                             "Cortex-M wake controller (firmware/mcu)")]

    def steps(self, ctx):
        makefile = SOURCE / "Makefile"
        if not makefile.is_file():
            raise SeedfwError("the wake-MCU firmware is not in this tree yet, so CONFIG_MCU cannot be "
                              "built (disable MCU or add firmware/mcu)", makefile)
        prefix = ctx.values["CROSS_COMPILE_M"]
        out = ctx.build_dir("mcu")

        def inputs():
            return {"source": self.source_hashes(SOURCE), "build_id": ctx.build_id,
                    "symbols": plan.symbols(ctx.values, self.symbols),
                    "toolchain": ctx.toolchain(prefix + "gcc"),
                    "checked_in_algo": plan.file_hashes([CHECKED_IN_ALGO], ROOT)}

        def build(step):
            self.fresh_dir(out)
            plan.run_command(["make", "-C", SOURCE.relative_to(ROOT), f"-j{ctx.make_jobs}",
                              f"O={out}", f"CROSS_COMPILE={prefix}", f"BUILD_ID={ctx.build_id}",
                              "all", "flashalgo"], cwd=ROOT, log=step.log,
                             env=ccache.environment(ctx, FIRMWARE_DIR, out))
            for algo in self.ALGOS:
                if not (out / "flashalgo" / algo).is_file():
                    raise SeedfwError("expected build output is missing", out / "flashalgo" / algo)
            drift = algo_drift(out / "flashalgo" / "algo.elf")
            with open(step.log, "a") as f:
                f.write(f"=== flash algo vs {CHECKED_IN_ALGO.relative_to(ROOT)}: "
                        f"{drift or 'identical'}\n")
            if drift:
                ctx.progress(f"  mcu: warning: {drift}")
            self.install(step, {n: out / n for n in self.OUTPUTS}, ctx.images)

        outputs = tuple(out / "flashalgo" / a for a in self.ALGOS)
        return [plan.Step("mcu.build", build, inputs=inputs, version=self.STEP_VERSION,
                          package=self.name, outputs=outputs, tools=self.cross_tools(prefix))]


def algo_drift(algo_elf: Path, checked_in: Path = CHECKED_IN_ALGO) -> str | None:
    """None when `algo_elf` renders to exactly the checked-in algo module, else what to do about it."""
    from ..flash.targets import algo_blob

    blob, offsets = algo_blob.read_algo_elf(algo_elf)
    fresh = algo_blob.render_module(blob, offsets, "firmware/mcu/flashalgo")
    try:
        if checked_in.read_text() == fresh:
            return None
    except FileNotFoundError:
        pass
    shown = checked_in.relative_to(ROOT) if checked_in.is_relative_to(ROOT) else checked_in
    return (f"firmware/mcu/flashalgo builds to a different algorithm than the checked-in {shown}, "
            f"which 'invoke flash' uses; regenerate it with "
            f"'python -m seedfw.flash.targets.algo_blob {algo_elf} > {shown}'")
