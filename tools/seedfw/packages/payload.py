"""The seedfw BL33 payload (firmware/payload): our own freestanding AArch64 program."""

from __future__ import annotations

from .. import __version__, plan
from ..paths import FIRMWARE_DIR, ROOT
from . import BuildContext, Package

SOURCE = FIRMWARE_DIR / "payload"


class PayloadPackage(Package):
    """BL33 payload for the A-class boards that boot through TF-A's BL2 (QEMU virt).

    Kconfig symbols read: PAYLOAD (enables it), CROSS_COMPILE_A, BUILD_ID, BUILD_JOBS.
    Board fields read: memory regions `bl33` (link/load address) and `boot-package` (where the
    payload verifies the boot package, optional), `uart.base` (PL011).
    Outputs: <out>/images/bl33.elf, <out>/images/bl33.bin (raw binary; TF-A's BL33= for the FIP).
    Build directory: <out>/build/payload (payload.elf, payload.bin, payload.map, objects).
    """

    name = "payload"
    symbols = ("PAYLOAD", "CROSS_COMPILE_A", "BUILD_ID", "BUILD_JOBS")
    STEP_VERSION = "1"

    def enabled(self, values):
        return bool(values.get("PAYLOAD"))

    def artifacts(self, ctx):
        return [ctx.images / "bl33.elf", ctx.images / "bl33.bin"]

    def make_vars(self, ctx: BuildContext) -> dict:
        board = ctx.board
        return {
            "CROSS_COMPILE": ctx.values["CROSS_COMPILE_A"],
            "BUILD_ID": ctx.build_id,
            "VERSION": __version__,
            "BOARD": board.name,
            "LOAD_ADDR": hex(board.region("bl33").base),
            "UART_BASE": hex((board.uart or {}).get("base", 0)),
            **self.package_vars(board),
        }

    @staticmethod
    def package_vars(board) -> dict:
        """Where the payload finds its boot package, when the board has a region for one."""
        region = next((r for r in board.memory if r.name == "boot-package"), None)
        return {"PKG_ADDR": hex(region.base), "PKG_MAX": hex(region.size)} if region else {}

    def steps(self, ctx):
        cc = ctx.values["CROSS_COMPILE_A"] + "gcc"

        def inputs():
            return {"source": self.source_hashes(SOURCE), "make": self.make_vars(ctx),
                    "symbols": plan.symbols(ctx.values, self.symbols),
                    "toolchain": ctx.toolchain(cc)}

        def build(step):
            out = self.fresh_dir(ctx.build_dir("payload"))
            args = [f"{k}={v}" for k, v in self.make_vars(ctx).items()]
            plan.run_command(["make", "-C", SOURCE.relative_to(ROOT), f"-j{ctx.make_jobs}",
                              f"O={out}", *args], cwd=ROOT, log=step.log)
            self.install(step, {"bl33.elf": out / "payload.elf", "bl33.bin": out / "payload.bin"},
                         ctx.images)

        return [plan.Step("payload.build", build, inputs=inputs, version=self.STEP_VERSION,
                          package=self.name, outputs=tuple(self.artifacts(ctx)))]
