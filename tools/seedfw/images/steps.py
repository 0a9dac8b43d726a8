"""The images stage as plan steps, for seedfw.build's STAGES:

    ("image", "seedfw.images.steps")     # replaces the dvfs / models / image entries

`add_steps(plan, ctx)` adds one step, "image.pack", that runs after every step already in the
plan (the firmware builds and any post-processing), and returns the files it leaves in
<out>/images/. One step rather than three because the DVFS table (with hints harvested from the
built ELFs), the model checks and the two containers are one consistent set: re-running any part
alone could pair a new table with an old package.

Kconfig symbols read: POWER_PROFILE, MODELS, MODEL_MANIFEST, MODELS_COMPRESS, IMAGE_SIGN,
IMAGE_SIGN_KEY_DIR, IMAGE_SIGN_KEY_NAME, IMAGE_SIGN_REQUIRED, TFA, PAYLOAD, MCU.
Board fields read: image.format, image.partition_size, dvfs, memory (load regions).
"""

from __future__ import annotations

from pathlib import Path

from .. import models, plan as plan_mod, util
from ..paths import ROOT
from . import build_images

SYMBOLS = ("POWER_PROFILE", "MODELS", "MODEL_MANIFEST", "MODELS_COMPRESS", "IMAGE_SIGN",
           "IMAGE_SIGN_KEY_DIR", "IMAGE_SIGN_KEY_NAME", "IMAGE_SIGN_REQUIRED", "TFA", "PAYLOAD",
           "MCU", "TFA_COMPRESS_RODATA")
VERSION = "1"


def firmware_for(ctx) -> dict[str, Path]:
    """Which built firmware each board's image carries.

    fit (rk3588): BL31 (compressed .rodata when TFA_COMPRESS_RODATA), split into its load
    segments (U-Boot SPL loads each where it belongs),
    plus the payload if one is built. package (qemu-aarch64): the BL33 payload (BL31 travels in
    TF-A's FIP). raw (mps2-an385): the MCU image.
    """
    fmt = ctx.board.image["format"]
    v = ctx.values
    out: dict[str, Path] = {}
    if fmt == "fit" and v.get("TFA"):
        # TFA_COMPRESS_RODATA: the load segments with .rodata as its LZ4 container (tfa.compress);
        # images/bl31.elf stays the unmodified ELF, for debugging.
        out["bl31"] = ctx.images / ("bl31-lz4.elf" if v.get("TFA_COMPRESS_RODATA") else "bl31.elf")
    if fmt in ("fit", "package") and v.get("PAYLOAD"):
        out["payload"] = ctx.images / "bl33.bin"
    if fmt == "raw" and v.get("MCU"):
        out["mcu"] = ctx.images / "mcu.bin"
    return out


def hint_elfs(ctx) -> list[Path]:
    """ELFs whose .dvfs_hint records go into the table (the ones this build produced)."""
    v = ctx.values
    names = [("PAYLOAD", "bl33.elf"), ("MCU", "mcu.elf"), ("TFA", "bl31.elf")]
    return [ctx.images / n for sym, n in names if v.get(sym)]


def outputs(ctx) -> list[Path]:
    images = ctx.images
    out = [images / f"{ctx.board.name}-boot.pkg", images / "images.json",
           images / "dvfs" / "dvfs.bin", images / "dvfs" / "opp.dtb"]
    if ctx.board.image["format"] == "fit":
        out.append(images / f"{ctx.board.name}.itb")
    return out


def _inputs(ctx) -> dict:
    board = ctx.board
    doc = {"symbols": plan_mod.symbols(ctx.values, SYMBOLS),
           "board": plan_mod.tree_hash(board.dir),
           "source_date_epoch": util.source_date_epoch(),
           "firmware": {k: util.sha256_file(p) if p.is_file() else None
                        for k, p in firmware_for(ctx).items()}}
    manifest = models.resolve_manifest(board, ctx.values)
    if manifest is not None and manifest.is_file() and manifest.parent != board.dir:
        doc["models"] = plan_mod.tree_hash(manifest.parent)
    if ctx.values.get("IMAGE_SIGN"):
        key_dir = Path(ctx.values.get("IMAGE_SIGN_KEY_DIR") or "keys")
        crt = (key_dir if key_dir.is_absolute() else ROOT / key_dir) / \
            f"{ctx.values.get('IMAGE_SIGN_KEY_NAME') or 'dev'}.crt"
        doc["sign_cert"] = util.sha256_file(crt) if crt.is_file() else None
    return doc


def boot_artifacts(ctx):
    """The firmware FIT (fit boards) or the boot package (package boards), as the board reads them."""
    from ..packages import BootArtifact
    fmt = ctx.board.image["format"]
    if fmt == "fit":
        reader = "U-Boot (bootm/iminfo verify every hash)" if ctx.values.get("UBOOT") else \
            "the board's loader"
        return [BootArtifact(f"{ctx.board.name}.itb", "firmware-fit", reader,
                             "firmware partition of the disk image", partition="firmware")]
    if fmt == "package":
        # QEMU puts it where the bootloader would; in the firmware run only when no U-Boot
        # carries it (U-Boot copies it out of the firmware FIT on the disk, seedfw.images.disk).
        modes = ("os",) if ctx.values.get("UBOOT") else ("firmware", "os")
        region = next((r for r in ctx.board.memory if r.name == "boot-package"), None)
        return [BootArtifact(f"{ctx.board.name}-boot.pkg", "boot-package",
                             "the BL33 payload (verifies it)", "DRAM at the boot-package region",
                             qemu="loader" if region else "", qemu_modes=modes,
                             addr=region.base if region else None)]
    return []


def add_steps(plan, ctx) -> list[Path]:
    def run(step):
        build_images(ctx.values, ctx.board, ctx.images, firmware_for(ctx),
                     [p for p in hint_elfs(ctx) if p.is_file()], log=step.log)

    plan.add(plan_mod.Step("image.pack", run, deps=tuple(plan.steps), inputs=lambda: _inputs(ctx),
                           version=VERSION, package="image", outputs=tuple(outputs(ctx))))
    return outputs(ctx)
