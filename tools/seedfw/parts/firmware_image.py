"""The firmware image part: DVFS table + OPP fragment + model blobs + built firmware → the boot
package and, for FIT boards, the firmware FIT (seedfw.images builds both)."""

from __future__ import annotations

from pathlib import Path

from .. import models, plan as plan_mod, util
from ..paths import ROOT
from ..images import build_images
from .base import Output, Part, Placement

SYMBOLS = ("POWER_PROFILE", "MODELS", "MODEL_MANIFEST", "MODELS_COMPRESS", "IMAGE_SIGN",
           "IMAGE_SIGN_KEY_DIR", "IMAGE_SIGN_KEY_NAME", "IMAGE_SIGN_REQUIRED", "TFA", "PAYLOAD",
           "MCU", "TFA_COMPRESS_RODATA")
VERSION = "2"   # 2: declares every file it writes (the .its too), for the artifact store


# The firmware roles a container of this part can carry, and the manifest key of each.
FIRMWARE_ROLES = ("bl31", "payload", "mcu")


def bl31_in_uboot(ctx) -> bool:
    """Boards whose U-Boot SPL loads BL31 from U-Boot's own FIT (capability spl-fit, with
    U-Boot built: binman's atf-1/atf-2): the firmware FIT then carries no second copy, which
    nothing would read."""
    return bool(ctx.values.get("UBOOT")) and ctx.capable("spl-fit")


def carried(ctx) -> tuple[str, ...]:
    """The firmware roles this board's image carries (image.format is data):
    fit: board.yaml's FIT "firmware" (image.fits), BL31 only when no U-Boot FIT carries it;
    package: the BL33 payload (BL31 travels in TF-A's FIP); raw: the MCU image."""
    fmt = ctx.board.image["format"]
    if fmt == "fit":
        roles = ctx.board.fit_roles("firmware") or ("bl31", "payload")
        return tuple(r for r in FIRMWARE_ROLES if r in roles
                     and not (r == "bl31" and bl31_in_uboot(ctx)))
    return {"package": ("payload",), "raw": ("mcu",)}.get(fmt, ())


def firmware_for(ctx) -> dict[str, Path]:
    """Which built firmware the image carries: {role: the file providing it} for the carried
    roles some enabled part provides."""
    return {role: ctx.file(role) for role in carried(ctx) if ctx.file(role) is not None}


def hint_elfs(ctx) -> list[Path]:
    """ELFs whose .dvfs_hint records go into the table (every provider of "dvfs-hints")."""
    return ctx.files("dvfs-hints")


def _outputs(ctx) -> list[Output]:
    images, board = ctx.images, ctx.board
    fmt = board.image["format"]
    step = "image.pack"
    region = next((r for r in board.memory if r.name == "boot-package"), None)
    if fmt == "package":
        # QEMU puts it where the bootloader would; in the firmware run only when no U-Boot
        # carries it (U-Boot copies it out of the firmware FIT on the disk, seedfw.parts.disk).
        modes = ("os",) if ctx.values.get("UBOOT") else ("firmware", "os")
        pkg = Output(images / f"{board.name}-boot.pkg", step, ("boot-package",),
                     carries=carried(ctx) + ("dvfs", "models"),
                     placement=Placement(load_addr=region.base if region else None),
                     kind="boot-package", read_by="the BL33 payload (verifies it)",
                     location="DRAM at the boot-package region",
                     qemu="loader" if region else "", qemu_modes=modes)
    else:
        pkg = Output(images / f"{board.name}-boot.pkg", step, ("boot-package",),
                     carries=carried(ctx) + ("dvfs", "models"))
    out = [pkg, Output(images / "images.json", step, ("image-description",)),
           Output(images / "dvfs" / "dvfs.bin", step, ("dvfs",)),
           Output(images / "dvfs" / "opp.dtb", step, ("opp-fragment",))]
    if fmt == "fit":
        verified = region is not None and ctx.values.get("UBOOT")
        # seedfw.parts.fit_verify: U-Boot's seedfw_verify, before Linux starts
        reader = ("U-Boot seedfw_verify (iminfo: every hash; fdt checksign when signed), "
                  "then its package image, copied to RAM, by the OS agent (--mem)") if verified \
            else "U-Boot (bootm/iminfo verify every hash)" if ctx.values.get("UBOOT") else \
            "the board's loader"
        package = ("boot-package",) if region is not None and \
            "boot-package" in board.fit_roles("firmware") else ()
        out.append(Output(images / f"{board.name}.itb", step, ("firmware-fit",),
                          carries=carried(ctx) + ("dvfs", "models") + package,
                          placement=Placement(storage=board.boot["storage"], partition="firmware"),
                          kind="firmware-fit", read_by=reader,
                          location="firmware partition of the disk image"))
    # Every other file image.pack writes: a restore from the artifact store (seedfw.cache)
    # puts back exactly the step's outputs.
    extra = [images / "dvfs" / "opp.dts", images / "dvfs" / "dvfs_table.h"]
    if fmt == "fit":
        extra.append(images / f"{board.name}.itb.its")    # mkimage's input, kept
        if ctx.values.get("IMAGE_SIGN"):
            extra.append(images / f"{board.name}-pubkey.dtb")
    return out + [Output(p, step, listed=False) for p in extra]


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
    Board fields read: image.format (fit: the roles of image.fits "firmware"; package: the BL33
    payload; raw: the MCU image), image.partition_size, dvfs, memory (load regions),
    capabilities (spl-fit: BL31 travels in U-Boot's FIT instead).
    Needs roles: those the board's image carries (`carried`: bl31, payload, mcu, each when some
    enabled part provides it), dvfs-hints (every ELF with .dvfs_hint records), models.
    Outputs in <out>/images/: <board>-boot.pkg, <board>.itb (fit), images.json,
    dvfs/dvfs.bin, dvfs/opp.dtb (and <board>-pubkey.dtb when signing).
    """

    name = "image"
    symbols = SYMBOLS
    provides = ("boot-package", "image-description", "dvfs", "opp-fragment", "firmware-fit")
    when = "always"

    def enabled(self, ctx):
        return True

    def outputs(self, ctx):
        return _outputs(ctx)

    def steps(self, ctx):
        def run(step):
            build_images(ctx.values, ctx.board, ctx.images, firmware_for(ctx),
                         [p for p in hint_elfs(ctx) if p.is_file()], log=step.log)

        needs = carried(ctx) + ("dvfs-hints",)
        if ctx.values.get("MODELS"):      # the compiled models (their cards name the cache entries)
            needs += ("models",)
        # A carried role no enabled part provides is no need (rk3588 without a payload).
        needs = tuple(n for n in needs if n == "models" or ctx.files(n))
        # dtc: the OPP fragment; mkimage: the firmware FIT (seedfw.images.fit)
        tools = ("dtc", *(("mkimage",) if ctx.board.image["format"] == "fit" else ()))
        return [plan_mod.Step("image.pack", run, needs=needs, inputs=lambda: _inputs(ctx),
                              version=VERSION, package="image", tools=tools)]
