"""Everything a build schedules, one shape (seedfw.parts.base.Part), one registry.

Adding a part is one module in this folder plus one line in REGISTRY. The order is the order in
which the build asks the parts for their steps (and the order reports list them); what runs before
what comes from the files each step needs, never from this order.
"""

from __future__ import annotations

from ..registry import Registry
from .base import BootArtifact, BuildContext, Part

__all__ = ["REGISTRY", "BootArtifact", "BuildContext", "Part", "all_parts", "enabled"]

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
    "os-boot-files": "seedfw.parts.os_boot_files:OsBootFilesPart",
    "disk": "seedfw.parts.disk:DiskPart",
    "loader": "seedfw.parts.loader:LoaderPart",
    "qemu-plugin": "seedfw.parts.qemu_plugin:QemuPluginPart",
})


def all_parts() -> list[Part]:
    """One instance of every registered part, in registry order."""
    return [cls() for _, cls in REGISTRY.classes()]


def enabled(values: dict) -> list[Part]:
    """The parts this configuration builds."""
    return [p for p in all_parts() if p.enabled(values)]
