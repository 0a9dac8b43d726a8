"""Everything a build schedules, one shape (seedfw.parts.base.Part), one registry.

Adding a part is one module in this folder plus one line in REGISTRY. The order is the order in
which the build asks the parts for their outputs and steps (and the order reports list them);
what runs before what comes from the roles each step needs (seedfw.parts.base.Output), never
from this order.
"""

from __future__ import annotations

from ..registry import Registry
from .base import BuildContext, Output, Part, Place, Placement

__all__ = ["REGISTRY", "BuildContext", "Output", "Part", "Place", "Placement", "all_parts",
           "enabled"]

REGISTRY = Registry("part", {
    "payload": "seedfw.parts.payload:PayloadPart",
    "tfa": "seedfw.parts.tfa:TfaPart",
    "uboot": "seedfw.parts.uboot:UbootPart",
    "mcu": "seedfw.parts.mcu:McuPart",
    "buildroot": "seedfw.parts.buildroot:BuildrootPart",
    "kernel": "seedfw.parts.kernel:KernelPart",
    "models": "seedfw.parts.models:ModelsPart",
    "compress": "seedfw.parts.compress:CompressPart",
    "image": "seedfw.parts.firmware_image:FirmwareImagePart",
    "uboot-rockchip": "seedfw.parts.uboot_rockchip:UbootRockchipPart",
    "os-fit": "seedfw.parts.os_fit:OsFitPart",
    "os-root": "seedfw.parts.os_root:OsRootPart",
    # before os-boot-files: its places() names the overlay file this part declares
    "fit-verify": "seedfw.parts.fit_verify_part:FitVerifyPart",
    "os-boot-files": "seedfw.parts.os_boot_files:OsBootFilesPart",
    "disk": "seedfw.parts.disk:DiskPart",
    "loader": "seedfw.parts.loader:LoaderPart",
    "qemu-plugin": "seedfw.parts.qemu_plugin:QemuPluginPart",
})


def all_parts() -> list[Part]:
    """One instance of every registered part, in registry order."""
    return [cls() for _, cls in REGISTRY.classes()]


def enabled(ctx) -> list[Part]:
    """The parts this configuration builds on its board (`ctx`: a BuildContext, or the
    seedfw.config.Config it wraps)."""
    if not isinstance(ctx, BuildContext):
        ctx = BuildContext(ctx, progress=lambda m: None)
    return [p for p in all_parts() if p.enabled(ctx)]


def context(board, outdir, values: dict) -> BuildContext:
    """A BuildContext for `values` on `board` with every enabled part's declarations in, for
    code that runs one part's functions outside a build (tests re-make a disk with them)."""
    from types import SimpleNamespace
    ctx = BuildContext(SimpleNamespace(board=board, outdir=outdir, values=values),
                       progress=lambda m: None)
    declare(ctx)
    return ctx


def declare(ctx: BuildContext, plan=None) -> list[Part]:
    """Ask every enabled part for its Outputs and Places (into `ctx`, and `plan` when given),
    then for its steps: a part's steps may look up any role (ctx.file) because every
    declaration is in before the first step is made. Disabled parts give the plan their hints
    (which roles they would provide, and when). Returns the enabled parts."""
    on = enabled(ctx)
    outputs = {}
    for part in on:
        outputs[part.name] = part.outputs(ctx)
        ctx.declare(part.name, outputs[part.name], part.places(ctx))
    if plan is not None:
        for part in all_parts():
            plan.hint(part.name, part.provides, part.when)
        for part in on:
            plan.declare(part.name, outputs[part.name])
        for part in on:
            plan.add(*part.steps(ctx))
    return on
