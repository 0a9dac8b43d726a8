"""The one shape of everything a build schedules: `Part` (binman's one entry type per module, west's
runner base), the `BuildContext` every part is given, and `BootArtifact`, a part's declaration of a
file the board reads at boot.

A part turns a configuration into plan Steps. Each Step names the files it `needs` and the files it
makes (`outputs`); the plan links a need to the step that makes it, so no part names another
part's steps. Its class docstring is its reference page (what it builds, the Kconfig symbols it
reads, inputs, outputs); the registry (seedfw.parts.REGISTRY) refuses a part without one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import plan, util
from ..paths import FIRMWARE_DIR

# Firmware code shared between our C programs (binary layouts, crc32/sha256): every firmware
# package's stamp includes these trees, since any of them may be compiled into its image.
SHARED_FIRMWARE = ("include", "common")

# The disk's "boot" partition when it holds an OS (the OS FIT raw, or extlinux's ext4): the parts
# that fill it check their files against it, the disk part makes it.
OS_PARTITION_SIZE = 64 << 20


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
        return self.values.get("BUILD_ID") or util.config_hash(self.values)[:12]

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
    qemu:     how QEMU loads it (seedfw.run.qemu.LOADS): "bios", "kernel", "initrd", "loader"
              (-device loader at `addr`), "drive" (the board's qemu.drives entry that holds
              drives); "" when QEMU never loads it itself (it travels inside another file)
    qemu_modes: the run modes in which QEMU loads it: "firmware" (`invoke run`, the chain as
              the board boots it) and/or "os" (QEMU starts Linux itself: seedfw.run.os_boot)
    addr:     load address for qemu="loader"
    partition: the disk partition it occupies, when it is written into one
    slot:     the boot slot it belongs to (A/B), when the board has slots
    The manifest carries this declaration ("declared") and gives role "boot" to the files read
    at boot; flash defaults (manifest "flash"), the default loader, the QEMU command line
    (seedfw.run) and the report read it from there, so no file name is hard-coded outside the
    package that makes it.
    """

    name: str
    role: str
    read_by: str
    location: str
    flash: tuple[str, ...] = ()
    at_boot: bool = True
    qemu: str = ""
    qemu_modes: tuple[str, ...] = ("firmware",)
    addr: int | None = None
    partition: str | None = None
    slot: str | None = None

    def manifest(self) -> dict:
        doc = {"role": self.role, "read_by": self.read_by, "location": self.location,
               "flash": list(self.flash), "at_boot": self.at_boot}
        if self.qemu:
            doc["qemu"] = {"load": self.qemu, "modes": list(self.qemu_modes), "addr": self.addr}
        if self.partition is not None:
            doc["partition"] = self.partition
        if self.slot is not None:
            doc["slot"] = self.slot
        return doc


class Part:
    """Base class. `name` is the part's log name and step prefix; `symbols` the Kconfig it reads."""

    name = ""
    symbols: tuple[str, ...] = ()

    def enabled(self, values: dict) -> bool:
        raise NotImplementedError

    def check_config(self, cfg):
        """Refuse (SeedfwError naming the file and symbol) a configuration this part cannot build;
        called by seedfw.config.configure for every enabled part before anything is written.
        What it returns is handed to `write_config`."""
        return None

    def write_config(self, cfg, checked) -> None:
        """Write what this part derives from the configuration beside .config (`checked`: what
        check_config returned; None when the part is disabled, to remove a stale file)."""

    def steps(self, ctx: BuildContext) -> list[plan.Step]:
        raise NotImplementedError

    def artifacts(self, ctx: BuildContext) -> list[Path]:
        """Files this package leaves in <out>/images/."""
        return []

    def boot_artifacts(self, ctx: BuildContext) -> list[BootArtifact]:
        """Which of its files the board reads at boot, and from where (see BootArtifact)."""
        return []

    def sbom(self, ctx: BuildContext) -> list[dict]:
        """What this part puts into the firmware that came from elsewhere: one CycloneDX
        component per third-party input, each with "files" (the pinned files to bundle, removed
        from the SBOM itself); seedfw.legal joins those of every enabled part."""
        return []

    def check_legal(self, ctx: BuildContext) -> None:
        """Refuse `invoke legal` before this part has built what its bundle needs."""

    def legal(self, ctx: BuildContext, dest: Path, log: Path, say) -> tuple[list[dict], dict | None]:
        """Bundle files of this part's own into the licence bundle at `dest` (beside the pinned
        files of `sbom()`); returns (more SBOM components, the tool that listed them or None)."""
        return [], None

    @staticmethod
    def component(name: str, version: str, licence: dict, files: list[Path],
                  kind: str = "firmware", note: str = "") -> dict:
        """A CycloneDX component for `sbom()`: sha256 of the first file, the files' names."""
        from .. import util
        c = {"type": kind, "name": name, "version": version, "licenses": [{"license": licence}],
             "hashes": [{"alg": "SHA-256", "content": util.sha256_file(f)} for f in files[:1]],
             "properties": [{"name": "seedfw:files", "value": ", ".join(f.name for f in files)}],
             "files": list(files)}
        if note:
            c["properties"].append({"name": "seedfw:note", "value": note})
        return c

    # helpers shared by parts
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
