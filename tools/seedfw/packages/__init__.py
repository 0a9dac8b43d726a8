"""Buildable packages: one class per thing we compile (binman-like: one entry type per module).

Each package class lists in its docstring the Kconfig symbols it reads and the outputs it produces,
and turns a configuration into plan Steps. Adding a package is one new module plus one line in
`REGISTRY` below.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import config as config_mod
from .. import plan
from ..paths import FIRMWARE_DIR

# Firmware code shared between our C programs (binary layouts, crc32/sha256): every firmware
# package's stamp includes these trees, since any of them may be compiled into its image.
SHARED_FIRMWARE = ("include", "common")


@dataclass
class BuildContext:
    """What every package needs to know about the build it is part of."""

    config: object                      # seedfw.config.Config (values, board, outdir)
    progress: Callable[[str], None] = print

    @property
    def values(self) -> dict:
        return self.config.values

    @property
    def board(self):
        return self.config.board

    @property
    def outdir(self) -> Path:
        return Path(self.config.outdir)

    @property
    def images(self) -> Path:
        return self.outdir / "images"

    @property
    def stamp_dir(self) -> Path:
        return self.outdir / "stamps"

    def build_dir(self, name: str) -> Path:
        return self.outdir / "build" / name

    @property
    def build_id(self) -> str:
        """CONFIG_BUILD_ID, or (empty) the first 12 hex digits of the configuration hash."""
        return self.values.get("BUILD_ID") or config_mod.config_hash(self.values)[:12]

    @property
    def make_jobs(self) -> int:
        """Parallel jobs inside one package's make: CONFIG_BUILD_JOBS, 0 = number of cores."""
        return int(self.values.get("BUILD_JOBS") or 0) or (os.cpu_count() or 1)

    def toolchain(self, compiler: str) -> str:
        return plan.toolchain_version(compiler, self.stamp_dir)


@dataclass(frozen=True)
class BootArtifact:
    """A file in images/ that a board reads at boot, as its package declares it.

    name:     file name in <out>/images/
    role:     what it is to the boot chain ("boot", "idbloader", "fit", "bios", "bl33",
              "firmware-fit", "boot-package", "mcu", "loader", "disk")
    read_by:  who reads it (the boot ROM, SPL, QEMU's -bios, U-Boot, ...)
    location: where it is read from (storage and offset, or how it is handed over)
    flash:    backends (board.yaml flash.backend) that program this file when `invoke flash` is
              given no --image; the first declared one present wins
    at_boot:  False for a file only declared as a flash default (e.g. the MCU's ELF, which pyOCD
              programs segment by segment), so it keeps its manifest role
    The manifest carries this declaration ("declared") and gives role "boot" to the files read
    at boot; flash defaults (manifest "flash"), the default loader, and the
    report read it from there, so no file name is hard-coded outside the package that makes it.
    """

    name: str
    role: str
    read_by: str
    location: str
    flash: tuple[str, ...] = ()
    at_boot: bool = True

    def manifest(self) -> dict:
        return {"role": self.role, "read_by": self.read_by, "location": self.location,
                "flash": list(self.flash), "at_boot": self.at_boot}


class Package:
    """Base class. `name` is the package's log name and step prefix; `symbols` the Kconfig it reads."""

    name = ""
    symbols: tuple[str, ...] = ()

    def enabled(self, values: dict) -> bool:
        raise NotImplementedError

    def steps(self, ctx: BuildContext) -> list[plan.Step]:
        raise NotImplementedError

    def artifacts(self, ctx: BuildContext) -> list[Path]:
        """Files this package leaves in <out>/images/."""
        return []

    def boot_artifacts(self, ctx: BuildContext) -> list[BootArtifact]:
        """Which of its files the board reads at boot, and from where (see BootArtifact)."""
        return []

    # helpers shared by packages
    @staticmethod
    def source_hashes(own: Path) -> dict:
        """Stamp input for a firmware tree of ours: its files plus the shared firmware trees."""
        trees = {own.name: own, **{d: FIRMWARE_DIR / d for d in SHARED_FIRMWARE}}
        return {name: plan.tree_hash(path) for name, path in trees.items() if path.is_dir()}

    @staticmethod
    def install(step: plan.Step, files: dict[str, Path], images: Path) -> None:
        """Hand build outputs to the plan under their final names in images/.

        They are copied only after the step succeeded, all together by temporary file + rename
        (see seedfw.plan), so an interrupted or failed build never leaves a half-updated set.
        """
        step.install({images / final: Path(built) for final, built in files.items()})

    @staticmethod
    def fresh_dir(path: Path) -> Path:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path


def _registry():
    from .mcu import McuPackage
    from .payload import PayloadPackage
    from .tfa import TfaPackage
    from .uboot import UbootPackage
    from .buildroot import BuildrootPackage
    from .kernel import KernelPackage
    from ..rknn.part import ModelsPart
    # Order matters only for display; dependencies between packages are explicit step deps.
    return [PayloadPackage(), TfaPackage(), UbootPackage(), McuPackage(), BuildrootPackage(),
            KernelPackage(), ModelsPart()]


def enabled(values: dict) -> list[Package]:
    """The packages this configuration builds."""
    return [p for p in _registry() if p.enabled(values)]


def all_packages() -> list[Package]:
    return _registry()
