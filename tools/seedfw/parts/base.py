"""The one shape of everything a build schedules: `Part` (binman's one entry type per module, west's
runner base), the `BuildContext` every part is given, `Output` (a file a part makes, declared
once, by role, with its `Placement`) and `Place` (a part placing another part's file by role).

A part declares its Outputs, then turns the configuration into plan Steps. Each Step names the
roles it `needs`; the plan links a role to the step whose Output provides it, so no part names
another part's steps or files (binman's entries take `atf-bl31-path`, labgrid's drivers image
keys, the same way). Its class docstring is its reference page (what it builds, the Kconfig symbols it
reads, inputs, outputs); the registry (seedfw.parts.REGISTRY) refuses a part without one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from .. import plan, util
from ..errors import SeedfwError
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

    # -- the board's capabilities and the roles the enabled parts provide --------------------

    def capable(self, capability: str) -> bool:
        """board.yaml `capabilities` (maskrom, spl-fit, extlinux, os-fit, qemu-bios, ...): what
        the board's boot chain does, asked instead of the board's name or boot kind."""
        return capability in self.board.capabilities

    def declare(self, part: str, outputs, places=()) -> None:
        """The enabled parts' Outputs and Places (seedfw.build, before any part's steps)."""
        self.__dict__.setdefault("_outputs", []).extend((part, o) for o in outputs)
        self.__dict__.setdefault("_places", []).extend(places)

    @property
    def outputs(self) -> list[Output]:
        return [o for _, o in self.__dict__.get("_outputs", [])]

    @property
    def owners(self) -> dict[Path, str]:
        return {Path(o.path): part for part, o in self.__dict__.get("_outputs", [])}

    def providers(self, role: str) -> list[Output]:
        """Every declared Output with this role, in registry order."""
        return [o for o in self.outputs if role in o.roles]

    def file(self, role: str) -> Path | None:
        """The one file that provides `role` (None when no enabled part does: the plan's link
        then refuses the step that needs it, naming the role)."""
        got = self.providers(role)
        if len(got) > 1:
            raise SeedfwError(f"role '{role}' is provided by {len(got)} files: "
                              + ", ".join(o.name for o in got))
        return Path(got[0].path) if got else None

    def files(self, role: str) -> list[Path]:
        return [Path(o.path) for o in self.providers(role)]

    def carrier(self, role: str) -> Output | None:
        """The first declared file that carries `role` inside it (a FIT carrying "bl31")."""
        return next((o for o in self.outputs if role in o.carries), None)

    def places(self, role: str | None = None) -> list[Place]:
        got = self.__dict__.get("_places", [])
        return [p for p in got if role is None or p.role == role]

    def placement(self, out: Output) -> Placement | None:
        """Where the board finds `out`: its own placement, else where a part placed one of its
        roles (the kernel at /Image of the "boot" partition)."""
        got = out.placement if out.placement is not None else \
            next((p.placement for p in self.places() if p.role in out.roles), None)
        return self._at_partition_start(got)

    def _at_partition_start(self, got: Placement | None) -> Placement | None:
        """A file written raw into a partition that board.yaml places at a fixed offset (the
        firmware FIT at the start of rk3588's `firmware`) gets that offset too, so a flasher
        takes the sector from the manifest instead of guessing it from magic bytes."""
        if got is None or got.partition is None or got.offset is not None or got.path is not None:
            return got
        entry = next((e for e in self.board.partitions if e["name"] == got.partition), None)
        if entry is None or entry.get("offset") is None:
            return got
        return replace(got, offset=int(entry["offset"]))


@dataclass(frozen=True)
class Placement:
    """Where a file sits when the board reads it (the manifest's "placement"; None = unknown).

    storage:   the device it is written to (board.yaml boot.storage, "spi-nor", "pflash", "usb")
    offset:    byte offset on that storage, when it is written raw outside a file system
    partition: the disk partition holding it
    load_addr: where it is loaded in memory (QEMU's loader, U-Boot's imxtract, SPL)
    path:      path inside the file system of `partition` ("/" for a tree extracted there)
    """

    storage: str | None = None
    offset: int | None = None
    partition: str | None = None
    load_addr: int | None = None
    path: str | None = None

    def manifest(self) -> dict:
        return {"storage": self.storage, "offset": self.offset, "partition": self.partition,
                "load_addr": self.load_addr, "path": self.path}


@dataclass(frozen=True)
class Output:
    """One file a part makes, declared once: what it is to the others (`roles`), which of the
    part's steps makes it (`step`), and — when the board reads it — by whom and from where.

    Steps meet by role, never by file name: a step `needs=("bl31",)` and the plan links it to
    the step whose Output provides "bl31" (seedfw.plan.Plan.link), and asks the build context
    for the file (`ctx.file("bl31")`). The manifest lists every `listed` Output with its roles
    and placement (binman's entries own their inputs the same way: `atf-bl31-path`).

    path:      the file (in <out>/images/ unless it is a build-internal hand-over)
    step:      the name of the step (of this part) that makes it
    roles:     what it is ("bl31", "kernel", "firmware-fit", ...); a role may have several
               providers only where the consumer takes them all ("dvfs-hints")
    carries:   roles of other files it contains (u-boot.itb carries "bl31" and "dvfs")
    listed:    False for files the manifest does not list (mkimage's .its, a hand-over JSON)
    placement: where the board finds it (see Placement)
    kind:      the manifest's declared "role" (the word the readers of today use: "boot",
               "idbloader", "fit", "bios", "bl33", "firmware-fit", "boot-package", "mcu",
               "loader", "disk", "kernel", "initramfs", "extlinux", "dtb", "os-fit",
               "dtb-overlay"); empty = not declared as read at boot or flashed
    read_by:   who reads it (the boot ROM, SPL, QEMU's -bios, U-Boot, ...)
    location:  the same as placement, as text (kept for the manifest readers of today)
    flash:     backends (board.yaml flash.backend) that program this file when `invoke flash` is
               given no --image; the first declared one present wins
    at_boot:   False for a file only declared as a flash default or one whose bytes travel inside
               another file the report already counts
    qemu:      how QEMU loads it (seedfw.run.qemu.LOADS): "bios", "kernel", "initrd", "loader"
               (-device loader at placement.load_addr), "drive", "dtb-overlay"; "" = never itself
    qemu_modes: the run modes in which QEMU loads it: "firmware" and/or "os"
    slot:      the boot slot it belongs to (A/B), when the board has slots
    """

    path: Path
    step: str
    roles: tuple[str, ...] = ()
    carries: tuple[str, ...] = ()
    listed: bool = True
    placement: Placement | None = None
    kind: str = ""
    read_by: str = ""
    location: str = ""
    flash: tuple[str, ...] = ()
    at_boot: bool = True
    qemu: str = ""
    qemu_modes: tuple[str, ...] = ("firmware",)
    slot: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def declared(self) -> bool:
        return bool(self.kind)

    def manifest(self) -> dict:
        """The manifest's "declared" block (the keys of today, unchanged)."""
        doc = {"role": self.kind, "read_by": self.read_by, "location": self.location,
               "flash": list(self.flash), "at_boot": self.at_boot}
        p = self.placement
        if self.qemu:
            doc["qemu"] = {"load": self.qemu, "modes": list(self.qemu_modes),
                           "addr": p.load_addr if p else None}
        if p is not None and p.partition is not None:
            doc["partition"] = p.partition
        if self.slot is not None:
            doc["slot"] = self.slot
        return doc


@dataclass(frozen=True)
class Place:
    """A part placing a file another part provides, by role: os-boot-files puts the "kernel"
    at /Image of the "boot" partition (its extlinux.conf names that path); the disk part
    reads these to fill the partitions, the manifest to say where each file ends up."""

    role: str
    placement: Placement
    # When the placing part also declares how the board reads the file there (the manifest's
    # "declared", overriding its maker's): see Output for the fields.
    kind: str = ""
    read_by: str = ""
    location: str = ""
    at_boot: bool = True
    qemu: str = ""
    qemu_modes: tuple[str, ...] = ("firmware",)

    def declare(self, out: Output) -> Output:
        """`out` as this Place declares it (its maker's declaration when this one has none)."""
        if not self.kind:
            return out
        return replace(out, kind=self.kind, read_by=self.read_by, location=self.location,
                       at_boot=self.at_boot, qemu=self.qemu, qemu_modes=self.qemu_modes,
                       placement=self.placement, flash=())


class Part:
    """Base class. `name` is the part's log name and step prefix; `symbols` the Kconfig it reads.

    `provides`: every role the part can provide in some configuration and `when` what enables
    it, in words (e.g. "BUILDROOT_ROOTFS_CPIO=y"): the plan names them when a step needs a
    role no enabled part provides.
    """

    name = ""
    symbols: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()
    when = ""

    def enabled(self, ctx: BuildContext) -> bool:
        """Whether this configuration on this board builds the part (ctx.values, ctx.board)."""
        raise NotImplementedError

    def check_config(self, cfg):
        """Refuse (SeedfwError naming the file and symbol) a configuration this part cannot build;
        called by seedfw.config.configure for every enabled part before anything is written.
        What it returns is handed to `write_config`."""
        return None

    def write_config(self, cfg, checked) -> None:
        """Write what this part derives from the configuration beside .config (`checked`: what
        check_config returned; None when the part is disabled, to remove a stale file)."""

    def outputs(self, ctx: BuildContext) -> list[Output]:
        """Every file the part makes, once, by role (see Output)."""
        return []

    def places(self, ctx: BuildContext) -> list[Place]:
        """Where the part puts files of other parts, by role (see Place)."""
        return []

    def steps(self, ctx: BuildContext) -> list[plan.Step]:
        raise NotImplementedError

    def sbom(self, ctx: BuildContext) -> list:
        """What this part puts into (or builds) the firmware that came from elsewhere, and its own
        firmware: one seedfw.sbom.model.Component each (Part.component builds one), its
        `sources` the pinned files to hash and bundle. seedfw.sbom.collect joins those of every
        enabled part (with the artifacts and the graph); `invoke legal` bundles the same list.
        Raise SeedfwError only when an input is absent (the SBOM then names the part as left
        out)."""
        return []

    def check_legal(self, ctx: BuildContext) -> None:
        """Refuse `invoke legal` before this part has built what its bundle needs."""

    def legal(self, ctx: BuildContext, dest: Path, log: Path, say) -> None:
        """Bundle files of this part's own into the licence bundle at `dest` (beside the pinned
        files of `sbom()`, which seedfw.sbom.legal copies itself)."""

    @staticmethod
    def component(name: str, version: str, licence: str, files: list[Path],
                  kind: str = "firmware", note: str = "", **fields):
        """A component for `sbom()`: `licence` an SPDX expression, `files` the pinned files
        (the first is the source archive: its sha256 and SHA-512 are the component's); purl
        pkg:generic/<name>@<version> and NVD's CPE (seedfw.sbom.model.CPE_PRODUCTS) unless
        `fields` give others (any other Component field too: supplier, patches, scope...)."""
        from ..sbom import model
        fields.setdefault("purl", model.purl("generic", name, version))
        fields.setdefault("cpe", model.cpe23(name, version))
        c = model.Component(ref=fields.pop("ref", name), name=name, version=version, kind=kind,
                            licence=licence, sources=list(files), description=note, **fields)
        c.properties["seedfw:files"] = ", ".join(f.name for f in files)
        return c

    def own_firmware(self, name: str, trees, note: str):
        """A component for firmware of seedfw's own: hashed over its source trees (no archive
        exists; seedfw.sbom.collect.tree_hashes) plus the shared firmware trees it compiles in."""
        from ..sbom import model
        from .. import __version__
        c = self.component(name, __version__, model.OWN_LICENCE, [], "firmware", supplier="seedfw",
                           purl=model.purl("generic", name, __version__, namespace="seedfw"),
                           declared="NOASSERTION",
                           note=note + "; seedfw declares no licence of its own yet")
        digests = [model.tree_hashes(t) for t in [*trees, *(FIRMWARE_DIR / d for d in
                                                           SHARED_FIRMWARE)] if t.is_dir()]
        import hashlib
        for alg, fn in (("SHA-256", hashlib.sha256), ("SHA-512", hashlib.sha512)):
            c.hashes[alg] = fn("".join(d[alg] for d in digests).encode()).hexdigest()
        c.filename = ", ".join(t.name for t in trees)
        c.properties["seedfw:hash-of"] = "sorted paths and contents of the source trees"
        return c

    # helpers shared by parts
    @staticmethod
    def cross_tools(prefix: str) -> tuple[str, ...]:
        """A cross toolchain's commands for Step.tools: its compiler and (through it) the
        binutils that assemble and link, so the SBOM names both packages."""
        return (prefix + "gcc", prefix + "ld")

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
