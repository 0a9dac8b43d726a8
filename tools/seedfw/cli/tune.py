"""invoke tune: multi-objective search of the build options (Optuna), see seedfw.tune."""

from __future__ import annotations

import os
from pathlib import Path

from . import command
from .config import default_board
from .. import boards
from ..errors import SeedfwError
from ..paths import output_dir

__all__ = ["tune"]


@command(help={
    "board": "board name (see 'invoke boards')",
    "output": "the board's output directory (default output/<board>/); the study lives in its tune/",
    "trials": "the study's budget: trials finished or running, over all workers (default 20)",
    "objectives": "comma-separated, all minimised: storage, boot-main, boot-verified, boot-decode, "
                  "decoder-size, "
                  "decode-cycles, dram-read (DRAM bytes read during boot, emulated by the QEMU "
                  "plugin) (default: the board's; boot-* and dram-read need QEMU)",
    "space": "comma-separated Kconfig symbols or choices to search, SYMBOL/STEP for an int's stride "
             "(default: seedfw.tune.space.DEFAULT_SPACE)",
    "storage": "Optuna storage: FILE.journal, redis://HOST:PORT, or an sqlite:// postgresql:// "
               "mysql:// URL (default <out>/tune/study.journal)",
    "resume": "continue an existing study (raise its budget with --trials)",
    "worker": "join the study as one of several workers (creates it when absent)",
    "sampler": "tpe (default), nsga2 or random",
    "seed": "sampler seed, for a repeatable sequence of trials",
    "export": "write the chosen Pareto point as a Kconfig fragment to this file, then stop",
    "trial": "with --export: the trial number to export (default: the front's balanced point)",
    "jobs": "steps run in parallel in each trial build",
    "timeout": "seconds a trial's QEMU boot may take (default 30)",
    "keep_builds": "keep each trial's build/ tree (default: removed after scoring; images stay)",
})
def tune(c, board=None, output=None, trials=20, objectives=None, space=None, storage=None,
         resume=False, worker=False, sampler="tpe", seed=None, export=None, trial=None, jobs=0,
         timeout=30.0, keep_builds=False):
    """Search the build options for the Pareto front.

    Search the build options for the Pareto front of storage, boot cost and decoder size."""
    name = default_board(board)
    if name == "all":
        raise SeedfwError("'tune' takes one board, not 'all'", None, "--board")
    brd = boards.get(name)
    from .. import config as config_mod
    from ..tune import objectives as obj_mod
    from ..tune import output as out_mod
    from ..tune import space as space_mod
    from ..tune import study as study_mod
    from ..tune import trial as trial_mod

    objs = obj_mod.parse(objectives, brd)
    tune_dir = output_dir(name, output) / "tune"
    if export is None and trial is not None:
        raise SeedfwError("--trial only goes with --export", None, "--trial")
    # The defconfig's point with the study's pins (U-Boot off where QEMU boots), as the trials
    # build it: the space's visibility is judged there.
    kconf = trial_mod.base_config(brd, tune_dir).kconf
    params = space_mod.load(kconf, space.split(",") if space else None)
    # Define-by-run over Kconfig's visibility: a trial samples only what the values so far
    # leave visible, so the build never refuses a combination Kconfig would have refused.
    live = space_mod.Space(params, kconf)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # our progress lines say it all
    smp = study_mod.sampler_for(sampler, int(seed) if seed is not None else None)
    # The label goes into tune.json and the reports: never a password from the URL.
    from ..secrets import home_relative, redact
    label = redact(storage) if storage else home_relative(_shown(tune_dir / "study.journal"))
    if export is None and not storage:
        tune_dir.mkdir(parents=True, exist_ok=True)
    elif export is not None and not storage and not (tune_dir / "study.journal").is_file():
        raise SeedfwError(f"no tune study for {name} here (run 'invoke tune --board {name}' first)",
                          tune_dir / "study.journal", "--export")
    store = study_mod.storage_for(storage, tune_dir)
    sname = study_mod.study_name(name, objs)

    if export is not None:
        study = study_mod.open_study(sname, store, objs, smp, create=False)
        if study is None or not study_mod.front(study):
            raise SeedfwError(f"study '{sname}' has no complete trial to export (run 'invoke tune "
                              f"--board {name}' first)", None, "--export")
        doc = out_mod.document(study, name, objs, params, label, sampler)
        number = out_mod.knee(doc) if trial is None else int(trial)
        known = {t["number"]: t for t in doc["trials"]}
        if number not in known or known[number]["state"] != "COMPLETE":
            raise SeedfwError(f"trial #{number} is not a complete trial of study '{sname}'",
                              None, "--trial")
        try:                    # every parameter live in that trial has a value
            live.fixed(known[number]["params"])
        except KeyError as exc:
            raise SeedfwError(f"trial #{number} has no value for {exc.args[0]}, which is in the "
                              "search space (was the study run with another --space?)", None,
                              "--space") from None
        path, _ = out_mod.export(
            doc, params, number, Path(export),
            resolve=lambda f: config_mod.resolve(name, tune_dir / "base", [f]).warnings)
        print(f"wrote {_shown(path)}: trial #{number} "
              + ", ".join(f"{k} {v:,}" for k, v in known[number]["objectives"].items())
              + ("" if number in doc["front"] else " (not on the Pareto front)"))
        return

    existing = study_mod.open_study(sname, store, objs, smp, create=False)
    if existing is not None and study_mod.counted(existing) and not (resume or worker):
        raise SeedfwError(f"study '{sname}' already has {study_mod.counted(existing)} trial(s); "
                          "continue it with --resume (and --trials to raise its budget)",
                          None, "--resume")
    study = study_mod.open_study(sname, store, objs, smp, create=True)
    if not study.trials:
        # The defconfig's point first: the reference the report's ratios and the plot's ring use.
        study.enqueue_trial(live.fixed(space_mod.current_values(kconf, params)),
                            user_attrs={"default": True}, skip_if_exists=True)
    for p in params:
        study.set_user_attr(f"space:{p.name}", p.describe())

    jobs = int(jobs) or None
    base = trial_mod.ensure_base(brd, tune_dir, jobs)

    def run_one(number, values):
        return trial_mod.run(brd, params, values, objs, base, tune_dir / "trials" / f"{number:04d}",
                             jobs=jobs, timeout=float(timeout), keep_build=keep_builds)

    def config_key(values):
        frag = tune_dir / "key.fragment" if not worker else tune_dir / f"key-{os.getpid()}.fragment"
        frag.write_text(space_mod.fragment(params, values, header=trial_mod.pins(brd)))
        return config_mod.config_hash(config_mod.resolve(name, tune_dir / "base", [frag]).values)

    print(f"tune {name}: study '{sname}' in {label}, {len(params)} parameter(s), objectives "
          + ", ".join(f"{o.name} [{o.kind}]" for o in objs) + f"; budget {trials} trial(s)")
    try:
        study_mod.run(study, live, objs, run_one, int(trials), print, config_key)
    finally:
        # Written on every exit, Ctrl-C included: the files always describe the stored study.
        doc = out_mod.document(study, name, objs, params, label, sampler)
        written = out_mod.write_all(doc, tune_dir)
    distinct = {tuple(doc["trials"][n]["objectives"].values()) for n in doc["front"]}
    print(f"front: {len(distinct)} distinct point(s) ({len(doc['front'])} trial(s)) of "
          f"{len(doc['trials'])} trial(s); wrote "
          + ", ".join(_shown(p) for p in written))


def _shown(path: Path) -> str:
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel
