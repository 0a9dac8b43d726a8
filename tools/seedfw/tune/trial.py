"""One trial: a real build of one configuration in its own output directory, then a QEMU boot.

Why trials copy a base build instead of building from nothing: the plan skips a step whose
stamp is unchanged, and stamps hold no absolute paths, so a copy of an up-to-date output
directory is up to date too. Each trial starts from the study's base build (the defconfig with
the build id pinned) and only the steps downstream of a changed symbol run: a trial that only
changes compression options re-runs the compress/pack steps, not TF-A's compile.

Why the build id is pinned (CONFIG_BUILD_ID="tune"): by default it is derived from the
configuration hash and compiled into the payload and TF-A, so every trial would recompile both
whatever it changed. The images of a trial are therefore not bit-identical to a normal build of
the same options (the banner's build id differs); every objective is unaffected by it.

Why U-Boot is left out of the boards that boot here (CONFIG_UBOOT=n on qemu-aarch64, so TF-A
starts the payload as BL33): U-Boot loads the firmware FIT from a virtio disk and polls for the
request to complete, and under -icount the number of polling instructions follows the host's
I/O latency. Measured on one image, three boots: 90.2, 80.4 and 78.6 million instructions to
main; without U-Boot, three boots give 8,039,680 each. U-Boot does not change with any tuned
option, so the comparison between trials loses nothing but a constant.

Downloads come from the shared cache (seedfw.paths.download_dir), as for any build.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import build as build_mod
from .. import util
from ..run import payload as qemu
from ..errors import SeedfwError
from . import objectives as objectives_mod
from . import space as space_mod

PIN = 'CONFIG_BUILD_ID="tune"'
NO_UBOOT = "# CONFIG_UBOOT is not set"
# Not copied from the base: the base's own logs and report describe the base build.
_NOT_COPIED = {"logs", "report", ".lock"}


@dataclass
class TrialResult:
    values: dict = field(default_factory=dict)     # objective name → number
    notes: dict = field(default_factory=dict)
    error: str | None = None                        # the one error line of a failed trial
    steps_ran: list[str] = field(default_factory=list)
    steps_restored: list[str] = field(default_factory=list)   # from the artifact store
    steps_skipped: int = 0
    seconds: dict = field(default_factory=dict)     # seed (copy), build, boot, total

    def attrs(self) -> dict:
        return {"error": self.error, "steps_ran": self.steps_ran,
                "steps_restored": self.steps_restored,
                "steps_skipped": self.steps_skipped, "seconds": self.seconds, "notes": self.notes}


def pins(board) -> str:
    """The fragment lines every build of a study carries (the base's and each trial's).
    U-Boot is left out on every board QEMU boots, whether or not this study boots: all the
    studies of a board then share one base build instead of rebuilding it back and forth."""
    return PIN + ("\n" + NO_UBOOT if objectives_mod.can_boot(board) else "")


def base_config(board, tune_dir: Path):
    """The study's base configuration, resolved in memory exactly as `ensure_base` builds it
    (the defconfig plus the pins): the Kconfig whose visibility the search space follows.
    Judged at the defconfig alone, a parameter that depends on a pinned option (anything
    under UBOOT on qemu-aarch64) would be sampled in trials that build without it."""
    import tempfile

    from .. import config as config_mod
    with tempfile.TemporaryDirectory(prefix="seedfw-tune-") as tmp:
        frag = Path(tmp) / "base.fragment"
        frag.write_text(pins(board) + "\n")
        return config_mod.resolve(board.name, tune_dir / "base", [frag])


def ensure_base(board, tune_dir: Path, jobs=None, say=print) -> Path:
    """The study's base build (defconfig + pins), built once; later calls find it up to date."""
    base = tune_dir / "base"
    frag = tune_dir / "base.fragment"
    util.write_text(frag, pins(board) + "\n")
    with util.file_lock(tune_dir / ".base.lock", f"tune base {base}"):
        started = time.monotonic()
        result = build_mod.build(board.name, base, [frag], jobs=jobs)
        # The trials share the base's source trees (see `seed`), which holds only if make has
        # run in them: TF-A's make builds tools/fiptool inside its tree. A step restored from
        # the artifact store ran no make here, so the first trial that rebuilds the FIP would
        # write into the shared tree (and fail check_sources). Those steps run here, once.
        owners = {s.split(".")[0] for s in result.ran if s.endswith(".extract")}
        warm = [s for s in result.restored if s.split(".")[0] in owners]
        if warm:
            for name in warm:
                (base / "stamps" / f"{name}.stamp").unlink(missing_ok=True)
            again = build_mod.build(board.name, base, [frag], jobs=jobs, store=False)
            result.records.extend(again.records)
        if result.ran:
            say(f"base build: {len(result.ran)} step(s) ran, {time.monotonic() - started:.1f} s "
                f"→ {base}")
    return base


def seed(base: Path, outdir: Path) -> None:
    """outdir = a copy of the base's output directory (a fresh one: a leftover of an
    interrupted trial with the same number is replaced).

    Why the unpacked source trees (build/*-src) are shared through a symlink, not copied: they
    are most of the bytes and files (TF-A's: 47 of 54 MB, 4,770 of 5,300 files) and copying
    them was most of a compression-only trial (1.4-2.2 s of 2.3-2.7 s, bench/tune_speed.py).
    No step a trial re-runs writes into them: extraction is up to date (same pins), and the
    one product make keeps inside TF-A's tree (tools/fiptool) is up to date from the base build.
    `check_sources` verifies that after every trial, so a change that breaks this is caught
    instead of silently mixing trials."""
    check_sources(base)                   # remembers the trees' state before the first trial
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    shared = {p.name for p in (base / "build").glob("*-src") if p.is_dir()}

    def ignore(d, names):
        if Path(d) == base:
            return [n for n in names if n in _NOT_COPIED]
        if Path(d) == base / "build":
            return [n for n in names if n in shared]
        return []

    shutil.copytree(base, outdir, symlinks=True, ignore=ignore)
    for name in shared:
        os.symlink(base / "build" / name, outdir / "build" / name, target_is_directory=True)


_WATCH: dict[Path, dict[Path, int]] = {}


def check_sources(base: Path) -> str | None:
    """An error line when a trial wrote into the base's shared source trees (see `seed`).

    Watched, per process: every directory of the trees (a new or removed file changes its
    mtime) and the files that were already build products when the first trial ran (modified
    after the tree's extraction), which are the ones make might rewrite. A few hundred stats
    instead of walking thousands of files after every trial."""
    if base not in _WATCH:
        extracted = [p.stat().st_mtime_ns for p in (base / "stamps").glob("*.extract.stamp")]
        since = max(extracted) if extracted else 0
        watch = {}
        for tree in (base / "build").glob("*-src"):
            for root, _, files in os.walk(tree):
                watch[Path(root)] = os.stat(root).st_mtime_ns
                for f in files:
                    path = Path(root) / f
                    mtime = path.lstat().st_mtime_ns
                    if mtime > since:
                        watch[path] = mtime
        _WATCH[base] = watch
        return None
    for path, mtime in _WATCH[base].items():
        try:
            now = path.lstat().st_mtime_ns
        except FileNotFoundError:
            now = None
        if now != mtime:
            return (f"{path}: changed by a trial build; the shared source tree is no longer the "
                    "base's (remove tune/base and run again)")
    return None


def restored_steps(outdir: Path) -> list[str]:
    """Steps the trial build took from the artifact store (seedfw.cache) instead of running."""
    path = outdir / "logs" / "steps.jsonl"
    if not path.is_file():
        return []
    return [r["step"] for r in map(json.loads, path.read_text().splitlines())
            if r["action"] == "restored"]


def step_counts(outdir: Path) -> tuple[list[str], int]:
    """(steps that ran, number skipped) from the trial build's logs/steps.jsonl."""
    ran, skipped = [], 0
    path = outdir / "logs" / "steps.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["action"] == "ran":
                ran.append(rec["step"])
            elif rec["action"] == "skipped":
                skipped += 1
    return ran, skipped


def run(board, params: list, values: dict, objectives: list, base: Path, outdir: Path,
        jobs=None, timeout: float = 30.0, keep_build: bool = False) -> TrialResult:
    """Build `values` (parameter name → value) into `outdir` seeded from `base`, boot it when an
    objective needs a boot, and score it. Failures (SeedfwError from the build, the boot or a
    missing figure) are returned as `error`, never raised; Ctrl-C propagates."""
    res = TrialResult()
    t0 = time.monotonic()
    seed(base, outdir)
    frag = outdir / "tune.fragment"
    boots = any(o.boots for o in objectives)
    util.write_text(frag, space_mod.fragment(params, values, header=pins(board)))
    t1 = time.monotonic()
    res.seconds["seed"] = round(t1 - t0, 3)
    try:
        _check_sampled(board, outdir, frag)
        try:
            build = build_mod.build(board.name, outdir, [frag], jobs=jobs)
        finally:
            res.seconds["build"] = round(time.monotonic() - t1, 3)
            res.steps_ran, res.steps_skipped = step_counts(outdir)
            res.steps_restored = restored_steps(outdir)
        uart = None
        if boots:
            t2 = time.monotonic()
            try:
                boot = qemu.run(board, outdir, timeout=timeout, echo=lambda s: None,
                                extra_args=objectives_mod.boot_args(objectives, board, outdir))
                objectives_mod.after_boot(objectives, board, outdir)
            finally:
                res.seconds["boot"] = round(time.monotonic() - t2, 3)
            uart = boot.lines
        scored = objectives_mod.compute(objectives, outdir, build.manifest and _values(outdir), uart)
        res.notes = scored.pop("_notes")
        res.values = scored
        res.error = check_sources(base)
    except SeedfwError as exc:
        res.error = exc.line()
    finally:
        res.seconds["total"] = round(time.monotonic() - t0, 3)
        if not keep_build:
            # build/ holds the package trees (tens of MB); the images, logs, stamps and config
            # that say what the trial was stay.
            shutil.rmtree(outdir / "build", ignore_errors=True)
    return res


def _check_sampled(board, outdir: Path, frag: Path) -> None:
    """Refuse, before building, a trial whose fragment Kconfig would overturn: the space only
    samples values that stick (seedfw.tune.space.Space), so this never fires unless the space
    has a bug, and then the trial says so instead of recording parameters its build did not
    use. Only the fragment's own lines count: a defconfig line a sampled value hides (TFA=n
    hides TFA_COMPRESS_RODATA) is Kconfig doing its job."""
    from .. import config as config_mod
    cfg = config_mod.resolve(board.name, outdir, [frag])
    mine = {a.where(): a.line for a in cfg.origins.values() if Path(a.file) == Path(frag)}
    for warning in cfg.warnings:
        where, _, why = warning.partition(": ")
        if where in mine:
            raise SeedfwError(f"the sampled value did not stick: {why}", frag,
                              f"line {mine[where]}")


def _values(outdir: Path) -> dict:
    return json.loads((outdir / "config.json").read_text())
