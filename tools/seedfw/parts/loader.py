"""The maskrom loader part: `rkdeveloptool db`'s loader, written from a boot_merger recipe."""

from __future__ import annotations

from pathlib import Path

from .. import paths, util
from .. import plan as plan_mod
from ..errors import SeedfwError
from ..images import ldr_recipe
from .. import reading
from ..reading import plain
from ..images.loader import VERSION, build_loader, read_recipe
from ..sources import rkbin
from .base import Output, Part, Placement

SYMBOLS = ("UBOOT", "LOADER_RECIPE", "UBOOT_ALLOW_MISSING_BLOBS")
FIELD = "CONFIG_LOADER_RECIPE"


def local_recipe(ctx) -> Path | None:
    """The recipe file when LOADER_RECIPE names a local .ini; None for the pinned rkbin one."""
    value = ctx.values.get("LOADER_RECIPE") or ""
    if value == rkbin.INI.name:
        return None
    p = Path(value)
    p = p if p.is_absolute() else paths.ROOT / p
    if not p.exists():
        raise SeedfwError(f"loader recipe {plain(value)} is neither the pinned {rkbin.INI.name} "
                          "nor an existing file", ctx.outdir / ".config", FIELD)
    try:
        # the door's check: a FIFO, a device or a directory named as the recipe is refused
        # here, naming the symbol (a read of a FIFO would block the build forever)
        reading.refuse_special(p)
    except SeedfwError as exc:
        raise SeedfwError(f"loader recipe {plain(value)}: {exc.message}", ctx.outdir / ".config",
                          FIELD) from None
    return p


def output_name(ctx=None) -> str:
    recipe = local_recipe(ctx) if ctx is not None else None
    if recipe is None:
        return rkbin.LOADER_NAME
    return ldr_recipe.parse(read_recipe(recipe), recipe).output


class LoaderPart(Part):
    """Maskrom loader: the file `rkdeveloptool db` sends to the boot ROM over USB, written by
    seedfw.images.loader from a boot_merger recipe byte for byte as rkbin's boot_merger 1.35 writes
    it (but the release time, from SOURCE_DATE_EPOCH, and so the CRC).

    Kconfig symbols read: UBOOT, LOADER_RECIPE (the pinned rkbin recipe's name, default
    RK3588MINIALL.ini on boards whose boot ROM takes one, or a path to a local .ini; empty: no
    loader; every blob a recipe names must be a pinned rkbin file), UBOOT_ALLOW_MISSING_BLOBS
    (without the blobs: an empty NON-FUNCTIONAL placeholder).
    Step: loader.build. Outputs in <out>/images/: the recipe's [OUTPUT] PATH
    (rk3588_spl_loader_v1.18.113.bin) and loader.json (each entry, its sha256, the blob it is).
    What is written is decoded again and must read back as what was meant.
    """

    name = "loader"
    symbols = SYMBOLS

    provides = ("loader", "loader-info")
    when = "UBOOT=y and LOADER_RECIPE set, on a board with capability maskrom"

    def enabled(self, ctx):
        v = ctx.values
        return bool(v.get("UBOOT")) and bool(v.get("LOADER_RECIPE")) and ctx.capable("maskrom")

    def outputs(self, ctx):
        # Sent over USB in maskrom mode, never read from storage: not a boot-bytes figure.
        return [Output(ctx.images / output_name(ctx), "loader.build", ("loader",),
                       placement=Placement(storage="usb"), kind="loader",
                       read_by="boot ROM in maskrom mode (USB)",
                       location="sent over USB by `rkdeveloptool db`; never written to storage",
                       at_boot=False),
                Output(ctx.images / "loader.json", "loader.build", ("loader-info",))]

    def sbom(self, ctx):
        """The rkbin blobs the loader carries (the same components U-Boot's images declare)."""
        from ..sources import rkbin
        return rkbin.sbom_components(self)

    def steps(self, ctx):
        local = local_recipe(ctx)
        name = output_name(ctx)              # a local recipe is parsed here: errors before any step
        out = [ctx.images / name, ctx.images / "loader.json"]
        return [plan_mod.Step("loader.build", lambda step: self._run(ctx, step, local, name, out),
                              inputs=lambda: {
                                  "pins": rkbin.SOURCE.pins(), "epoch": util.source_date_epoch(),
                                  "recipe": util.sha256_bytes(read_recipe(local).encode())
                                  if local else rkbin.INI.sha256,
                                  "config": plan_mod.symbols(ctx.values, SYMBOLS)},
                              version=VERSION, package="loader")]

    def _run(self, ctx, step, local, name, out) -> None:
        work = Part.fresh_dir(ctx.build_dir("loader"))
        try:
            files = rkbin.fetch(step.log, lambda m: ctx.progress(f"  loader: {m}"))
        except SeedfwError as exc:
            if "sha256 mismatch" in exc.message:
                raise
            if not ctx.values.get("UBOOT_ALLOW_MISSING_BLOBS"):
                raise SeedfwError(f"missing rkbin blobs for the maskrom loader: {exc.message} "
                                  f"({rkbin.mirror_note()}; --allow-missing-blobs builds a "
                                  "NON-FUNCTIONAL placeholder)", exc.file, exc.field) from None
            why = f"placeholder: rkbin blobs unavailable: {exc.message} (--allow-missing-blobs)"
            (work / name).write_bytes(b"")
            util.write_json(work / "loader.json", {"non_functional": {name: why}})
            step.install({o: work / o.name for o in out})
            return
        recipe = local or files[rkbin.INI.name]
        blob, loader, got = build_loader(recipe, files, util.source_date_epoch())
        if got != name:
            raise SeedfwError(f"the recipe names its output {got}, expected {name}", recipe,
                              "[OUTPUT] PATH")
        util.write_bytes(work / name, blob)
        by_sha = {f.sha256: f.name for f in rkbin.BLOBS}
        util.write_json(work / "loader.json", {
            "recipe": recipe.name, "newidb": loader.newidb, "version": list(loader.version),
            "entries": [{"type": e.kind, "name": e.name, "size": len(e.data), "delay_ms": e.delay,
                         "sha256": util.sha256_bytes(e.data),
                         "blob": by_sha.get(util.sha256_bytes(e.data))} for e in loader.entries]})
        ctx.progress(f"  loader: {name} {len(blob):,} B from {recipe.name} "
                     f"({', '.join(e.name for e in loader.entries)})")
        step.install({o: work / o.name for o in out})
