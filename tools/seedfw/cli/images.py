"""Image tasks: inspect (FIT, boot package, disk, U-Boot, loader, env or bundle image), dvfs (validate and show/write a board's tables)."""

from __future__ import annotations

import json as jsonlib
import os
from dataclasses import asdict
from pathlib import Path

from invoke.exceptions import Exit

from . import command
from ..paths import shown as shown_path
from .. import boards, dvfs as dvfs_mod, models as models_mod, textout
from ..dvfs import hints as dvfs_hints
from ..errors import SeedfwError
from ..images import inspect as inspect_mod

__all__ = ["inspect", "dvfs", "models"]


# Every format seedfw.images.inspect recognises (by its bytes, not its name), named in --help.
FORMATS = ("a FIT (.itb)", "a seedfw boot package (.pkg)",
           "a GPT disk image (-disk.img: the FITs in its partitions too)",
           "u-boot-rockchip.bin or its -spi variant (idblock, FIT)", "idbloader.img",
           "a maskrom loader (*_loader*.bin, LDR)", "a U-Boot environment image (uboot.env)",
           "a RAUC bundle (.raucb)")


@command(help={"image": "what the build wrote: " + ", ".join(FORMATS),
               "json": "print JSON for machines instead of the table",
               "key": "public-key DTB (mkimage -K output, <board>-pubkey.dtb): verify FIT signatures "
                      "(also the FITs inside a disk image; for formats without signatures "
                      "the check fails, saying so)"})
def inspect(c, image, json=False, key=None):
    """Read an image back and verify every hash in it.

    Read a FIT (.itb), boot package (.pkg), GPT disk image, u-boot-rockchip.bin (or -spi),
    idbloader.img, maskrom loader, U-Boot environment or RAUC bundle back, verify every hash,
    print a table; exit 1 if any hash fails. The format is read from the bytes (an environment
    image also by its name)."""
    report = inspect_mod.inspect(image, key)
    if json:
        print(jsonlib.dumps({"path": str(report.path), "format": report.format, "ok": report.ok,
                             "rows": [asdict(r) for r in report.rows], "notes": report.notes,
                             "verified_bytes": report.verified_bytes,
                             "listed_bytes": report.listed_bytes,
                             "synthetic": [r.name for r in report.rows if r.synthetic]},
                            indent=2))
    else:
        inspect_mod.render(report)
    if not report.ok:
        from ..reading import plain     # names come from the file: no raw ESC
        failed = [plain(r.name) + (f" ({r.verdict})" if r.verdict else "")
                  for r in report.rows if not r.hash_ok]
        raise Exit(f"error: {image}: {len(failed)} entries failed verification: "
                   f"{', '.join(failed)}", code=1)


@command(name="dvfs", help={
    "board": "board name (see 'invoke boards')",
    "file": "validate this dvfs.yaml instead of the board's",
    "profile": "default power profile for the outputs (ultra_low, balanced, performance)",
    "output": "write dvfs.bin, opp.dts/.dtb and dvfs_table.h into OUTPUT/dvfs/",
})
def dvfs(c, board=None, file=None, profile="balanced", output=None):
    """Validate a board's DVFS table and print or write it.

    Validate a board's DVFS table and print its domains, OPPs and profiles (or write the outputs)."""
    board = board or os.environ.get("SEEDFW_BOARD")
    if not board and not file:
        raise SeedfwError("no board given (use --board NAME or --file dvfs.yaml)")
    path = Path(file) if file else boards.get(board).dvfs_file
    table = dvfs_mod.load(path)
    table.profile(profile)
    if output:
        paths = dvfs_hints.build_outputs(boards.get(board) if board else None,
                                       {"POWER_PROFILE": profile}, output, dvfs_file=path)
        for p in paths.values():
            print(shown_path(p))
        return
    for d in table.domains:
        latency = f", latency {d.clock_latency_ns} ns" if d.clock_latency_ns is not None else ""
        print(f"{d.name} ({d.source}; {d.regulator} {d.reg_min_uv}..{d.reg_max_uv} µV{latency})")
        for i, o in enumerate(d.opps):
            marks = " ".join(p.name for p in table.profiles if i in p.allowed[d.name])
            print(f"  opp[{i}] {o.hz / 1e6:7.1f} MHz  {o.uv_target:>7} µV "
                  f"[{o.uv_min}..{o.uv_max}]  {marks}")
    print(f"{len(table.domains)} domains, {table.opp_count} opps, profiles: "
          f"{', '.join(p.name for p in table.profiles)}; {shown_path(path)} ok")


@command(name="models", help={
    "board": "board name (see 'invoke boards'); checks against its partition size",
    "manifest": "check this models.yaml instead of board/<board>/models.yaml",
})
def models(c, board=None, manifest=None):
    """Check a model manifest and print each blob's sha256.

    Check a model manifest (RKNN/ONNX framing, sizes, partition limit) and print each blob's sha256."""
    board = board or os.environ.get("SEEDFW_BOARD")
    if not board and not manifest:
        raise SeedfwError("no board given (use --board NAME or --manifest models.yaml)")
    b = boards.get(board) if board else None
    path = Path(manifest) if manifest else b.dir / "models.yaml"
    # the board's Kconfig defaults (plus its defconfig) give compiled models their settings
    from .. import config as config_mod
    values = config_mod.resolve(board).values if board else {}
    ms = models_mod.load_manifest(path, partition_size=b.image["partition_size"] if b else None,
                                  values=values)
    rows = []
    for m in ms:
        framing = None
        if m.rknn is not None:
            framing = "encrypted" if m.encrypted else f"rknn v{m.rknn.version:#x}"
        card = None
        if m.card:
            c = m.card
            card = (f"{c['target']} {c['dtype']} {c['metric']} simulated "
                    f"{c['simulated']:.4f} (FP32 "
                    f"{c['fp32']:.4f}, {c['simulator']}){' cached' if m.cached else ''}")
        rows.append((m.name, m.type, f"{m.size:>9} B", f"align {m.alignment}", m.compression,
                     m.sha256, framing, card, f"SYNTHETIC filler ({m.synthetic})" if m.synthetic
                     else None))
    print(textout.table([tuple(c or "" for c in r) for r in rows], first=5,
                        labels=("sha256",)))
    print(f"{len(ms)} models, {sum(m.stored_size for m in ms)} bytes stored; "
          f"{shown_path(path)} ok")
    summary = models_mod.synthetic_summary(ms)
    if summary:
        print(f"warning: {summary}")
