"""The compression report part: one compression.json per build (seedfw.compress.stage)."""

from __future__ import annotations

import json
import os

from .. import plan as plan_mod
from .. import util
from ..compress.stage import SYMBOLS, VERSION, fragment_path, merge, settings, table
from .base import Part


def owners(ctx) -> list[str]:
    """Which parts compress something in this configuration (each in its own `<part>.compress`
    step, which writes the fragment this part merges)."""
    v = ctx.values
    out = []
    if v.get("TFA") and v.get("TFA_COMPRESS_RODATA"):
        out.append("tfa")
    if v.get("PAYLOAD") and v.get("COMPRESS_SECTIONS"):
        out.append("payload")
    return out


class CompressPart(Part):
    """Section compression report: merges the parts' compression fragments.

    The parts compress what they build, in steps of their own, because where a container goes is
    specific to each image: TF-A BL31 (`tfa.compress`) and the BL33 payload (`payload.compress`).
    Each hands the plan a fragment, `<out>/build/compress/<part>.json` (the sections it compressed,
    the file they went into, the boot image that file ends up in). This part's one step,
    `compress.report`, needs those fragments and merges them into `<out>/compression.json` (read
    by the report), printing the per-section table (raw, without/with dictionary, dictionary bytes
    stored, net gain, blocks).

    Kconfig symbols read: COMPRESS_SECTIONS, COMPRESS_SECTION_LIST, COMPRESS_BLOCK_SIZE,
    COMPRESS_HC_LEVEL, COMPRESS_DICT_NONE/TRAINED/FILE/RESIDENT, COMPRESS_DICT_SIZE,
    COMPRESS_DICT_PATH, TFA_COMPRESS_RODATA.
    Output: <out>/compression.json (removed when nothing is compressed, so the report never
    describes images this build no longer makes).
    """

    name = "compress"
    symbols = SYMBOLS

    when = "always"

    def enabled(self, ctx):
        return True

    def steps(self, ctx):
        who = owners(ctx)
        out = ctx.outdir / "compression.json"
        if not who:
            # Compression turned off: an earlier compression.json would describe images this
            # build no longer makes. (The step is not in the plan, so turning compression on
            # again re-runs it.)
            out.unlink(missing_ok=True)
            (ctx.stamp_dir / "compress.report.stamp").unlink(missing_ok=True)
            return []

        def run(step):
            s = settings(ctx.values, ctx.outdir / ".config")
            fragments = [json.loads(fragment_path(ctx.outdir, o).read_text()) for o in who]
            doc = merge(fragments, s)
            staged = util.write_json(ctx.build_dir("compress") / "compression.json", doc)
            step.install({out: staged})
            ctx.progress(f"  compression ({s.block_size} B blocks, HC {s.level}, dictionary "
                         f"{s.dict_source} {s.dict_size} B):")
            for line in table(doc).splitlines():
                ctx.progress(f"    {line}")
            ctx.progress(f"    written to {os.path.relpath(out, ctx.outdir)}")

        return [plan_mod.Step("compress.report", run,
                              needs=("compression-fragment",),
                              inputs={"owners": who}, version=VERSION, package="compress",
                              outputs=(out,))]
