"""The part that builds the boot-package overlay U-Boot applies (extlinux fdtoverlays).

Everything it builds comes from the generators in seedfw.parts.fit_verify (a leaf module, so
the U-Boot part can compile the same script in without importing this part). It provides the
overlay by role ("boot-package-overlay"); os-boot-files places that role in the "boot"
partition and names it in extlinux.conf, so neither part knows the other's file names.
"""

from __future__ import annotations

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from . import layout
from .base import Output, Part
from .fit_verify import DOC, OVERLAY, VERSION, overlay_dts, region

ROLE = "boot-package-overlay"


def enabled_by(ctx) -> bool:
    """Boards whose OS U-Boot boots through extlinux.conf (layout.extlinux_os) and that name the
    region U-Boot hands the package over in (board.yaml memory "boot-package")."""
    return layout.extlinux_os(ctx) and region(ctx.board) is not None


class FitVerifyPart(Part):
    __doc__ = DOC
    name = "fit-verify"
    symbols = ("UBOOT", "IMAGE_SIGN")
    provides = (ROLE,)
    when = ("BUILDROOT, KERNEL, UBOOT and BUILDROOT_ROOTFS_CPIO are y on a board with "
            "capability extlinux and a memory region boot-package")

    def enabled(self, ctx):
        return enabled_by(ctx)

    def outputs(self, ctx):
        # Where it sits and who reads it is the placing part's (os-boot-files' Place): the
        # file means nothing to the board outside the boot partition extlinux.conf names.
        return [Output(ctx.images / OVERLAY, "fit-verify.overlay", (ROLE,))]

    def steps(self, ctx):
        return _steps(ctx)


def _steps(ctx) -> list:
    out = ctx.images / OVERLAY

    def inputs():
        return {"dts": overlay_dts(ctx.board), "version": VERSION}

    def run(step):
        r = region(ctx.board)
        size = ctx.file("boot-package").stat().st_size
        if size > r.size:
            raise SeedfwError(f"the boot package ({size:,} bytes) does not fit the boot-package "
                              f"region (0x{r.size:x} bytes) U-Boot copies it to",
                              ctx.board.dir / "board.yaml", "memory")
        work = ctx.build_dir("fit-verify")
        Part.fresh_dir(work)
        src = work / OVERLAY.replace(".dtbo", ".dts")
        util.write_text(src, overlay_dts(ctx.board))
        plan_mod.run_command(["dtc", "-q", "-@", "-I", "dts", "-O", "dtb", "-o", work / OVERLAY,
                              src], log=step.log)
        ctx.progress(f"  fit-verify: {OVERLAY} reserves 0x{r.base:x}+0x{r.size:x} for the "
                     f"boot package ({size:,} bytes)")
        step.install({out: work / OVERLAY})

    # after image.pack: the size check reads the package
    return [plan_mod.Step("fit-verify.overlay", run, needs=("boot-package",), inputs=inputs,
                          version=VERSION, package="fit-verify", tools=("dtc",))]
