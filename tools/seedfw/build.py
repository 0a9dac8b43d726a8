"""The build, top-down: configure → plan (every enabled part's steps) → run → manifest → report.

Everything the build schedules is a part (seedfw.parts: one module each, one registry). Each part
adds its steps and declares its artifacts and the files the board reads at boot; what runs before
what comes from the files each step needs (seedfw.plan). The report describes what the manifest
lists, so it comes last.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from . import __version__, ccache, parts, paths, util
from . import cache as artifact_cache
from . import config as config_mod
from .plan import Plan
from .report import stage as report_stage


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
          console=None, counter: str = "", jobserver=None, store: bool = True) -> BuildResult:
    """Build one board into its output directory; returns what ran and the manifest.

    `counter` (e.g. " (2/3)") follows the board name in the progress lines of a multi-board build.
    `jobserver`: the job limit shared with the other boards of `invoke build --board all` (see
    seedfw.jobserver and seedfw.multibuild); None: this plan's own `jobs` steps in parallel.
    Ctrl-C (KeyboardInterrupt) leaves the previous images, stamps and manifest of the interrupted
    steps as they were (see seedfw.plan) and propagates.
    `store`: False builds every step that is not up to date here, taking nothing from the
    artifact store (seedfw.cache) and putting nothing in it (`invoke build --no-store`).
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
    plan = Plan(ctx.outdir, jobs, console, jobserver=jobserver, cache=store)
    artifacts: list[Path] = []
    declared = []           # BootArtifacts: what the board reads at boot (see write_manifest)
    for part in parts.enabled(cfg.values):
        plan.add(*part.steps(ctx))
        artifacts += part.artifacts(ctx)
        declared += part.boot_artifacts(ctx)

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
    manifest = write_manifest(ctx, artifacts, declared)
    for name, why in manifest.get("non_functional", {}).items():
        say(f"  [bold red]NON-FUNCTIONAL[/] {name}: {why}")
    written, report_dir = report_stage.after_build(ctx.outdir, board)
    say(f"  {'wrote' if written else 'skipped':<7} {'report':<24} "
        f"{_shown(report_dir)}/report.{{json,md,html}}")
    seconds = time.monotonic() - started
    ran = sum(r["action"] == "ran" for r in records)
    restored = sum(r["action"] == "restored" for r in records)
    say(f"[bold]{board}[/]{counter}: {ran} step(s) ran, "
        + (f"{restored} restored from the artifact store, " if restored else "")
        + f"{len(records) - ran - restored} up to date, {seconds:.1f} s; "
        f"images in {_shown(ctx.outdir / 'images')}")
    return BuildResult(board, ctx.outdir, records, manifest, seconds)


class _HashCache:
    """sha256 of the artifacts, reused while a file's (size, mtime_ns, inode) is what it was
    when hashed: a no-op build then reads none of the ~200 MB an OS build leaves in images/
    (the plan installs a rebuilt file by rename, which gives it a new inode and mtime)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.old = json.loads(path.read_text())
        except (OSError, ValueError):
            self.old = {}
        self.new: dict[str, list] = {}

    def sha256(self, file: Path) -> str:
        st = file.stat()
        key = [st.st_size, st.st_mtime_ns, st.st_ino]
        got = self.old.get(str(file))
        digest = got[3] if isinstance(got, list) and len(got) == 4 and got[:3] == key \
            else util.sha256_file(file)
        self.new[str(file)] = key + [digest]
        return digest

    def save(self) -> None:
        if self.new != self.old and self.path.parent.is_dir():
            util.write_json(self.path, self.new)


def write_manifest(ctx, artifacts: list[Path], declared=()) -> dict:
    """<out>/manifest.json: board, config hash, build id and each artifact's sha256, size and role.

    `declared`: the BootArtifacts the parts declared (what the board reads at boot
    and from where); a declared file carries its declaration under "declared" and, when the
    board reads it from storage at boot (at_boot), role "boot"; and
    "flash" lists, per flash backend, the files `invoke flash` programs by default (in order).
    A file that a part marked as a placeholder (uboot.json "non_functional") carries
    "functional": false, and the manifest "non_functional" names them all.
    Paths are relative to the output directory, so two output dirs of the same build give the same
    manifest.
    """
    by_name = {d.name: d for d in declared}
    placeholders = non_functional(ctx.images)
    entries = []
    hashes = _HashCache(ctx.outdir / "build" / "manifest-hashes.json")
    for path in sorted(set(artifacts)):
        if path.is_file():
            entry = {"name": path.name, "path": os.path.relpath(path, ctx.outdir),
                     "size": path.stat().st_size, "sha256": hashes.sha256(path),
                     "role": artifact_role(path, {n for n, d in by_name.items() if d.at_boot})}
            if path.name in by_name:
                entry["declared"] = by_name[path.name].manifest()
            if path.name in placeholders:
                entry["functional"] = False
            entries.append(entry)
    hashes.save()
    present = {e["name"]: e["path"] for e in entries}
    flash: dict[str, list[str]] = {}
    for d in declared:
        for backend in d.flash:
            if d.name in present:
                flash.setdefault(backend, []).append(present[d.name])
    manifest = {"board": ctx.board.name, "seedfw_version": __version__,
                "config_hash": config_mod.config_hash(ctx.values), "build_id": ctx.build_id,
                "artifacts": entries, "flash": flash}
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
