"""The firmware image part: DVFS table + OPP fragment + model blobs + built firmware → the boot
package and, for FIT boards, the firmware FIT (seedfw.images builds both)."""

from __future__ import annotations

from pathlib import Path

from .. import models, plan as plan_mod, util
from ..paths import ROOT
from ..images import build_images
from .base import BootArtifact, Part

SYMBOLS = ("POWER_PROFILE", "MODELS", "MODEL_MANIFEST", "MODELS_COMPRESS", "IMAGE_SIGN",
           "IMAGE_SIGN_KEY_DIR", "IMAGE_SIGN_KEY_NAME", "IMAGE_SIGN_REQUIRED", "TFA", "PAYLOAD",
           "MCU", "TFA_COMPRESS_RODATA")
VERSION = "2"   # 2: declares every file it writes (the .its too), for the artifact store


def bl31_image(ctx) -> Path:
    """The BL31 a FIT carries, split into its load segments: with TFA_COMPRESS_RODATA the load
    segments with .rodata as its LZ4 container (tfa.compress); images/bl31.elf stays the
    unmodified ELF, for debugging."""
    return ctx.images / ("bl31-lz4.elf" if ctx.values.get("TFA_COMPRESS_RODATA") else "bl31.elf")


def bl31_in_uboot(ctx) -> bool:
    """Boards whose U-Boot SPL loads BL31 from U-Boot's own FIT (u-boot.itb, binman's
    atf-1/atf-2: boot.rom rockchip with U-Boot): the firmware FIT then carries no second copy,
    which nothing would read."""
    return bool(ctx.values.get("UBOOT")) and ctx.board.boot["rom"] == "rockchip"


def firmware_for(ctx) -> dict[str, Path]:
    """Which built firmware each board's image carries.

    fit (rk3588): the payload if one is built, and BL31 (bl31_image) only when no U-Boot FIT
    carries it (bl31_in_uboot). package (qemu-aarch64): the BL33 payload (BL31 travels in TF-A's
    FIP). raw (mps2-an385): the MCU image.
    """
    fmt = ctx.board.image["format"]
    v = ctx.values
    out: dict[str, Path] = {}
    if fmt == "fit" and v.get("TFA") and not bl31_in_uboot(ctx):
        out["bl31"] = bl31_image(ctx)
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


def written(ctx) -> list[Path]:
    """Every file image.pack writes, not only the artifacts: a restore from the artifact store
    (seedfw.cache) puts back exactly the step's outputs."""
    extra = [ctx.images / "dvfs" / "opp.dts", ctx.images / "dvfs" / "dvfs_table.h"]
    if ctx.board.image["format"] == "fit":
        extra.append(ctx.images / f"{ctx.board.name}.itb.its")    # mkimage's input, kept
        if ctx.values.get("IMAGE_SIGN"):
            extra.append(ctx.images / f"{ctx.board.name}-pubkey.dtb")
    return outputs(ctx) + extra


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


class FirmwareImagePart(Part):
    """Firmware image: the boot package and (image.format fit) the firmware FIT.

    One step, `image.pack`, because the DVFS table (with hints harvested from the built ELFs), the
    model checks and the two containers are one consistent set: re-running any of them alone
    could pair a new table with an old package. It needs the firmware the board's image carries
    (`firmware_for`) and the ELFs whose `.dvfs_hint` records go into the table, so it runs after
    the steps that make those files and after nothing else (a rootfs change does not touch it).

    Kconfig symbols read: POWER_PROFILE, MODELS, MODEL_MANIFEST, MODELS_COMPRESS, IMAGE_SIGN,
    IMAGE_SIGN_KEY_DIR, IMAGE_SIGN_KEY_NAME, IMAGE_SIGN_REQUIRED, TFA, PAYLOAD, MCU,
    TFA_COMPRESS_RODATA.
    Board fields read: image.format (fit: BL31 + payload in a FIT; package: the BL33 payload;
    raw: the MCU image), image.partition_size, dvfs, memory (load regions).
    Outputs in <out>/images/: <board>-boot.pkg, <board>.itb (fit), images.json,
    dvfs/dvfs.bin, dvfs/opp.dtb (and <board>-pubkey.dtb when signing).
    """

    name = "image"
    symbols = SYMBOLS

    def enabled(self, values):
        return True

    def artifacts(self, ctx):
        return outputs(ctx)

    def boot_artifacts(self, ctx):
        """The firmware FIT (fit boards) or the boot package (package boards), as the board reads them."""
        fmt = ctx.board.image["format"]
        if fmt == "fit":
            reader = "U-Boot (bootm/iminfo verify every hash)" if ctx.values.get("UBOOT") else \
                "the board's loader"
            return [BootArtifact(f"{ctx.board.name}.itb", "firmware-fit", reader,
                                 "firmware partition of the disk image", partition="firmware")]
        if fmt == "package":
            # QEMU puts it where the bootloader would; in the firmware run only when no U-Boot
            # carries it (U-Boot copies it out of the firmware FIT on the disk, seedfw.parts.disk).
            modes = ("os",) if ctx.values.get("UBOOT") else ("firmware", "os")
            region = next((r for r in ctx.board.memory if r.name == "boot-package"), None)
            return [BootArtifact(f"{ctx.board.name}-boot.pkg", "boot-package",
                                 "the BL33 payload (verifies it)", "DRAM at the boot-package region",
                                 qemu="loader" if region else "", qemu_modes=modes,
                                 addr=region.base if region else None)]
        return []

    def steps(self, ctx):
        def run(step):
            build_images(ctx.values, ctx.board, ctx.images, firmware_for(ctx),
                         [p for p in hint_elfs(ctx) if p.is_file()], log=step.log)

        needs = tuple(firmware_for(ctx).values()) + tuple(hint_elfs(ctx))
        if ctx.values.get("MODELS"):      # the compiled models (their cards name the cache entries)
            needs += (ctx.images / "models.json",)
        return [plan_mod.Step("image.pack", run, needs=needs, inputs=lambda: _inputs(ctx),
                              version=VERSION, package="image", outputs=tuple(written(ctx)))]
