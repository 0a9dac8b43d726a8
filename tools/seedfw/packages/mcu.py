"""The wake-controller firmware (firmware/mcu): a Cortex-M image built by its own Makefile."""

from __future__ import annotations

from .. import plan, util
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR, ROOT
from . import Package

SOURCE = FIRMWARE_DIR / "mcu"


class McuPackage(Package):
    """Cortex-M wake-controller image for the armv7m boards (mps2-an385 stands in for it).

    Kconfig symbols read: MCU (enables it), CROSS_COMPILE_M, BUILD_ID, BUILD_JOBS.
    Contract with firmware/mcu/Makefile:
      make -C firmware/mcu O=<dir> CROSS_COMPILE=<prefix> BUILD_ID=<id>
      → <dir>/mcu.elf, <dir>/mcu.bin, <dir>/mcu.hex
    Outputs: <out>/images/mcu.elf, mcu.bin, mcu.hex. Build directory: <out>/build/mcu.
    """

    name = "mcu"
    symbols = ("MCU", "CROSS_COMPILE_M", "BUILD_ID", "BUILD_JOBS")
    STEP_VERSION = "1"
    OUTPUTS = ("mcu.elf", "mcu.bin", "mcu.hex")

    def enabled(self, values):
        return bool(values.get("MCU"))

    def artifacts(self, ctx):
        return [ctx.images / n for n in self.OUTPUTS]

    def steps(self, ctx):
        makefile = SOURCE / "Makefile"
        if not makefile.is_file():
            raise SeedfwError("the wake-MCU firmware is not in this tree yet, so CONFIG_MCU cannot be "
                              "built (disable MCU or add firmware/mcu)", makefile)
        prefix = ctx.values["CROSS_COMPILE_M"]

        def inputs():
            return {"source": self.source_hashes(SOURCE), "build_id": ctx.build_id,
                    "symbols": plan.symbols(ctx.values, self.symbols),
                    "toolchain": ctx.toolchain(prefix + "gcc")}

        def build(step):
            out = self.fresh_dir(ctx.build_dir("mcu"))
            util.run(["make", "-C", SOURCE.relative_to(ROOT), f"-j{ctx.make_jobs}", f"O={out}",
                      f"CROSS_COMPILE={prefix}", f"BUILD_ID={ctx.build_id}"], cwd=ROOT, log=step.log)
            self.install({n: out / n for n in self.OUTPUTS}, ctx.images)

        return [plan.Step("mcu.build", build, inputs=inputs, version=self.STEP_VERSION,
                          package=self.name, outputs=tuple(self.artifacts(ctx)))]
