"""The build, top-down: configure → plan (every enabled part's steps) → run → SBOM → manifest →
report.

Everything the build schedules is a part (seedfw.parts: one module each, one registry). Each part
declares its outputs once, by role, with their placement, then adds its steps; what runs before
what comes from the roles each step needs (seedfw.plan.Plan.link). The SBOM (seedfw.sbom) is made
from the steps' outputs and the manifest lists it (path, size, sha256), so the manifest is written
after it; the report describes what the manifest lists, so it comes last.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .. import __version__, parts, paths, sbom, util
from ..cache import ccache
from .. import cache as artifact_cache
from .. import config as config_mod
from ..parts.base import Placement
from ..plan import Plan
from ..report import stage as report_stage


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

    @property
    def restored(self) -> list[str]:
        return [r["step"] for r in self.records if r["action"] == "restored"]


def build(board: str, output=None, fragments=(), jobs: int | None = None, strict: bool = False,
          console=None, counter: str = "", jobserver=None, store: bool | str = True) -> BuildResult:
    """Build one board into its output directory; returns what ran and the manifest.

    `counter` (e.g. " (2/3)") follows the board name in the progress lines of a multi-board build.
    `jobserver`: the job limit shared with the other boards of `invoke build --board all` (see
    seedfw.plan.jobserver and seedfw.build.multi); None: this plan's own `jobs` steps in parallel.
    Ctrl-C (KeyboardInterrupt) leaves the previous images, stamps and manifest of the interrupted
    steps as they were (see seedfw.plan) and propagates.
    `store`: False builds every step that is not up to date here, taking nothing from the
    artifact store (seedfw.cache) and putting nothing in it (`invoke build --no-store`);
    "write" builds every such step here too but puts what it made in the store (a real compile
    others may restore from: the test suite's Buildroot build).
    """
    say = console.print if console is not None else (lambda *a, **k: None)
    # One build per output directory at a time: two would compile into the same tree and read
    # each other's half-written ELFs. The second waits, saying for whom.
    outdir = paths.output_dir(board, output)
    with util.file_lock(outdir / ".lock", f"output directory {_shown(outdir)}",
                        say=(lambda m: say(m, markup=False, highlight=False)) if console else None):
        return _build(board, output, fragments, jobs, strict, console, say, counter, jobserver,
                      store)


def _build(board, output, fragments, jobs, strict, console, say, counter, jobserver,
           use_store) -> BuildResult:
    started = time.monotonic()
    cfg = config_mod.configure(board, output, fragments, strict)
    for warning in cfg.warnings:
        say(f"[yellow]warning:[/] {warning}", markup=True)
    ctx = parts.BuildContext(cfg, progress=lambda m: say(m, markup=False, highlight=False))
    say(f"[bold]{board}[/]{counter}: build {ctx.build_id} → {_shown(ctx.outdir)}")

    store = artifact_cache.from_environment() if use_store else None
    if store is not None and use_store == "write":
        store.reads = False
    plan = Plan(ctx.outdir, jobs, console, jobserver=jobserver, cache=store)
    parts.declare(ctx, plan)          # every part's Outputs by role, then its steps

    ccache.begin(ctx)                 # this build's stats log (the remote: first compile)
    try:
        records = plan.run()
    finally:
        if store is not None:
            from rich.markup import escape
            for note in store.notes:
                say(f"  [yellow]artifact store:[/] {escape(note)}", markup=True)
            store.trim()
    ccache.finish(ctx)                # images/ccache.json, read by the report
    sbom.after_build(ctx, say=lambda m: say(m, markup=False, highlight=False))   # <out>/sbom/
    manifest = write_manifest(ctx)        # lists the SBOM: after it
    for name, why in manifest.get("non_functional", {}).items():
        say(f"  [bold red]NON-FUNCTIONAL[/] {name}: {why}")
    written, report_dir = report_stage.after_build(ctx.outdir, board)
    say(f"  {'wrote' if written else 'skipped':<7} {'report':<24} "
        f"{_shown(report_dir)}/report.{{json,md,html}}")
    seconds = time.monotonic() - started
    ran = sum(r["action"] == "ran" for r in records)
    restored = sum(r["action"] == "restored" for r in records)
    reused = sum(r["action"] == "ran" and bool(r.get("reused")) for r in records)
    say(f"[bold]{board}[/]{counter}: {ran} step(s) ran, "
        + (f"{reused} of them only reused this machine's caches, " if reused else "")
        + (f"{restored} restored from the artifact store, " if restored else "")
        + f"{len(records) - ran - restored} up to date, {seconds:.1f} s; "
        f"images in {_shown(ctx.outdir / 'images')}")
    return BuildResult(board, ctx.outdir, records, manifest, seconds)


def write_manifest(ctx) -> dict:
    """<out>/manifest.json: board, config hash, build id and each artifact's sha256, size and role.

    The artifacts are the `listed` Outputs the enabled parts declared (seedfw.parts.base.Output,
    in `ctx`). Each entry carries its "roles" and "placement" (storage, offset, partition,
    load_addr, path: the Output's own, else where a part placed one of its roles); a file
    declared as read at boot or flashed carries its declaration under "declared" and, when the
    board reads it from storage at boot (at_boot), role "boot"; and "flash" lists, per flash
    backend, the files `invoke flash` programs by default (in order); "sbom" lists the SBOM
    documents (seedfw.sbom.listing: format, name, path, sha256, size), which the build writes
    before this and which never describe this file.
    A file that a part marked as a placeholder (uboot.json "non_functional") carries
    "functional": false, and the manifest "non_functional" names them all.
    Paths are relative to the output directory, so two output dirs of the same build give the same
    manifest.
    """
    listed = [o for o in ctx.outputs if o.listed]
    # A later declaration of a file name wins (the OS stage's initramfs over Buildroot's).
    by_name = {o.name: o for o in listed if o.declared}
    for place in ctx.places():             # a part declaring where it puts another's file
        for o in listed:
            if place.role in o.roles and place.kind:
                by_name[o.name] = place.declare(o)
    placeholders = non_functional(ctx.images)
    entries = []
    hashes = util.StatCache(ctx.outdir / "build" / "manifest-hashes.json", util.sha256_file)
    by_path: dict[Path, list] = {}
    for o in listed:
        by_path.setdefault(Path(o.path), []).append(o)
    boot = {n for n, d in by_name.items() if d.at_boot}
    for path in sorted(by_path):
        if path.is_file():
            outs = by_path[path]
            placement = next((p for p in map(ctx.placement, outs) if p is not None), None)
            entry = {"name": path.name, "path": os.path.relpath(path, ctx.outdir),
                     "size": path.stat().st_size, "sha256": hashes(path),
                     "role": artifact_role(path, boot),
                     "roles": sorted({r for o in outs for r in o.roles}),
                     "placement": (placement or Placement()).manifest()}
            if path.name in by_name:
                entry["declared"] = by_name[path.name].manifest()
            if path.name in placeholders:
                entry["functional"] = False
            entries.append(entry)
    sbom_files = sbom.listing(ctx.outdir, hashes)
    hashes.save()
    present = {e["name"]: e["path"] for e in entries}
    flash: dict[str, list[str]] = {}
    for d in [o for o in listed if o.declared]:
        for backend in d.flash:
            if d.name in present and present[d.name] not in flash.get(backend, []):
                flash.setdefault(backend, []).append(present[d.name])
    manifest = {"board": ctx.board.name, "seedfw_version": __version__,
                "config_hash": config_mod.config_hash(ctx.values), "build_id": ctx.build_id,
                "artifacts": entries, "flash": flash, "sbom": sbom_files}
    if placeholders:
        manifest["non_functional"] = placeholders
    util.write_json(ctx.outdir / "manifest.json", manifest)
    return manifest


def non_functional(images: Path) -> dict[str, str]:
    """{file name: why} of placeholder images (CONFIG_UBOOT_ALLOW_MISSING_BLOBS), from the
    descriptions the steps that made them wrote (uboot.json, loader.json)."""
    import json
    out: dict[str, str] = {}
    for name in ("uboot.json", "loader.json"):
        try:
            doc = json.loads((images / name).read_text())
        except (OSError, ValueError):
            continue
        out.update(doc.get("non_functional") or {})
    return out


def artifact_role(path: Path, boot) -> str:
    """"boot": read from storage at boot (declared by its part); "debug": ELFs (symbols,
    GDB); "aux": everything else (intermediate binaries, tables, image descriptions)."""
    if path.name in boot:
        return "boot"
    with open(path, "rb") as f:
        return "debug" if f.read(4) == b"\x7fELF" else "aux"


def _shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else rel
