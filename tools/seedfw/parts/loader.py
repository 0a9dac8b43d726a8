"""The maskrom loader part: `rkdeveloptool db`'s loader, written from rkbin's recipe."""

from __future__ import annotations

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..images.loader import VERSION, decode, encode, from_ini
from . import rkbin
from .base import BootArtifact, Part


def wanted(ctx) -> bool:
    return bool(ctx.values.get("UBOOT")) and ctx.board.boot["rom"] == "rockchip"


def output_name() -> str:
    return rkbin.LOADER_NAME


class LoaderPart(Part):
    """Maskrom loader (board boot.rom: rockchip): the file `rkdeveloptool db` sends to the RK3588
    boot ROM over USB, written by seedfw.images.loader from rkbin's recipe (RK3588MINIALL.ini,
    pinned with the blobs it names in seedfw.parts.rkbin).

    Step: loader.build. Kconfig symbols read: UBOOT, UBOOT_ALLOW_MISSING_BLOBS (without the blobs:
    an empty NON-FUNCTIONAL placeholder). Outputs in <out>/images/: the .ini's [OUTPUT] PATH
    (rk3588_spl_loader_v1.18.113.bin) and loader.json (the entries and their sha256). What is
    written is decoded again and must read back as what was meant.
    """

    name = "loader"
    symbols = ("UBOOT", "UBOOT_ALLOW_MISSING_BLOBS")

    def enabled(self, values):
        return bool(values.get("UBOOT"))

    def artifacts(self, ctx):
        return [ctx.images / output_name(), ctx.images / "loader.json"] if wanted(ctx) else []

    def boot_artifacts(self, ctx):
        if not wanted(ctx):
            return []
        # Sent over USB in maskrom mode, never read from storage: not a boot-bytes figure.
        return [BootArtifact(output_name(), "loader", "RK3588 boot ROM in maskrom mode (USB)",
                             "sent over USB by `rkdeveloptool db`; never written to storage",
                             at_boot=False)]

    def steps(self, ctx):
        if not wanted(ctx):
            return []
        out = self.artifacts(ctx)
        return [plan_mod.Step("loader.build", lambda step: self._run(ctx, step, out),
                              inputs=lambda: {"pins": rkbin.SOURCE.pins(),
                                              "epoch": util.source_date_epoch(),
                                              "allow": bool(ctx.values.get(
                                                  "UBOOT_ALLOW_MISSING_BLOBS"))},
                              version=VERSION, package="loader", outputs=tuple(out))]

    def _run(self, ctx, step, out) -> None:
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
            (work / output_name()).write_bytes(b"")
            util.write_json(work / "loader.json", {"non_functional": {output_name(): why}})
            step.install({o: work / o.name for o in out})
            return
        loader, name = from_ini(files[rkbin.INI.name].read_text(), files,
                                util.source_date_epoch(), files[rkbin.INI.name])
        if name != output_name():
            raise SeedfwError(f"the recipe names its output {name}, expected {output_name()}",
                              files[rkbin.INI.name], "OUTPUT.PATH")
        blob = encode(loader)
        back = decode(blob)                 # what we wrote must read back as what we meant
        if not back.crc_ok or [(e.type, e.name, e.data[:len(o.data)]) for e, o in
                               zip(back.entries, loader.entries)] != \
                [(o.type, o.name, o.data) for o in loader.entries]:
            raise SeedfwError("the loader does not read back as written", work / name)
        util.write_bytes(work / name, blob)
        util.write_json(work / "loader.json", {"recipe": rkbin.INI.name, "entries": [
            {"type": e.kind, "name": e.name, "size": len(e.data), "delay_ms": e.delay,
             "sha256": util.sha256_bytes(e.data)} for e in loader.entries]})
        ctx.progress(f"  loader: {name} {len(blob):,} B from {rkbin.INI.name} "
                     f"({', '.join(e.name for e in loader.entries)})")
        step.install({o: work / o.name for o in out})
