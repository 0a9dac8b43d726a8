"""The build, top-down: configure → plan (packages, then stages) → run → manifest → report.

Packages (TF-A, payload, MCU) come from seedfw.packages; the stages after them plug in through
`STAGES`, each a module providing
    add_steps(plan: seedfw.plan.Plan, ctx: seedfw.packages.BuildContext) -> list[pathlib.Path]
that adds its steps to the plan (depending on e.g. "tfa.build") and returns the artifacts it
leaves in <out>/images/. The report describes what the manifest lists, so it comes last.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from . import __version__, packages, util
from . import config as config_mod
from .plan import Plan
from .report import stage as report_stage

# Modules providing add_steps, in pipeline order.
STAGES = [
    "seedfw.compress.stage",      # LZ4 section compression of built ELFs, compression.json
    "seedfw.images.steps",        # DVFS tables + hints, models, FIT / boot package
]


@dataclass
class BuildResult:
    board: str
    outdir: Path
    records: list[dict]
    manifest: dict
    seconds: float

    @property
    def ran(self) -> list[str]:
        return [r["step"] for r in self.records if r["action"] == "ran"]


def build(board: str, output=None, fragments=(), jobs: int | None = None, strict: bool = False,
          console=None, counter: str = "") -> BuildResult:
    """Build one board into its output directory; returns what ran and the manifest.

    `counter` (e.g. " (2/3)") follows the board name in the progress lines of a multi-board build.
    Ctrl-C (KeyboardInterrupt) leaves the previous images, stamps and manifest of the interrupted
    steps as they were (see seedfw.plan) and propagates.
    """
    started = time.monotonic()
    say = console.print if console is not None else (lambda *a, **k: None)
    cfg = config_mod.configure(board, output, fragments, strict)
    for warning in cfg.warnings:
        say(f"[yellow]warning:[/] {warning}", markup=True)
    ctx = packages.BuildContext(cfg, progress=lambda m: say(m, markup=False, highlight=False))
    say(f"[bold]{board}[/]{counter}: build {ctx.build_id} → {_shown(ctx.outdir)}")

    plan = Plan(ctx.outdir, jobs, console)
    artifacts: list[Path] = []
    for pkg in packages.enabled(cfg.values):
        plan.add(*pkg.steps(ctx))
        artifacts += pkg.artifacts(ctx)
    for module in STAGES:
        artifacts += importlib.import_module(module).add_steps(plan, ctx) or []

    records = plan.run()
    manifest = write_manifest(ctx, artifacts)
    written, report_dir = report_stage.after_build(ctx.outdir, board)
    say(f"  {'wrote' if written else 'skipped':<7} {'report':<24} "
        f"{_shown(report_dir)}/report.{{json,md,html}}")
    seconds = time.monotonic() - started
    ran = sum(r["action"] == "ran" for r in records)
    say(f"[bold]{board}[/]{counter}: {ran} step(s) ran, {len(records) - ran} up to date, {seconds:.1f} s; "
        f"images in {_shown(ctx.outdir / 'images')}")
    return BuildResult(board, ctx.outdir, records, manifest, seconds)


def write_manifest(ctx, artifacts: list[Path]) -> dict:
    """<out>/manifest.json: board, config hash, build id and each artifact's sha256, size and role.

    Paths are relative to the output directory, so two output dirs of the same build give the same
    manifest.
    """
    entries = []
    boot = boot_images(ctx)
    for path in sorted(set(artifacts)):
        if path.is_file():
            entries.append({"name": path.name, "path": os.path.relpath(path, ctx.outdir),
                            "size": path.stat().st_size, "sha256": util.sha256_file(path),
                            "role": artifact_role(path, boot)})
    manifest = {"board": ctx.board.name, "seedfw_version": __version__,
                "config_hash": config_mod.config_hash(ctx.values), "build_id": ctx.build_id,
                "artifacts": entries}
    util.write_json(ctx.outdir / "manifest.json", manifest)
    return manifest


def boot_images(ctx) -> set[str]:
    """Names of the files in images/ a board reads from storage at boot, by image format:
    fit → <board>.itb; package (QEMU's TF-A chain) → qemu_fw.bios and the boot package;
    raw → mcu.bin."""
    fmt = (ctx.board.image or {}).get("format")
    name = ctx.board.name
    return {"fit": {f"{name}.itb"}, "package": {"qemu_fw.bios", f"{name}-boot.pkg"},
            "raw": {"mcu.bin"}}.get(fmt, set())


def artifact_role(path: Path, boot: set[str]) -> str:
    """"boot": read from storage at boot; "debug": ELFs (symbols, GDB); "aux": everything else
    (intermediate binaries, tables, image descriptions)."""
    if path.name in boot:
        return "boot"
    with open(path, "rb") as f:
        return "debug" if f.read(4) == b"\x7fELF" else "aux"


def _shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else rel
