"""The Optuna study: where it lives, which sampler, and the ask/tell loop that runs trials.

Storage (--storage):
  (none)               a journal file, <out>/tune/study.journal: Optuna's JournalFileBackend
                       locks the file, so several processes on one machine can share it
  FILE.journal         the same, elsewhere
  redis://HOST:PORT[/DB]  Optuna's Redis journal backend: workers on several machines
  sqlite:///…, postgresql://…, mysql://…   an RDB URL (Optuna's RDBStorage, SQLAlchemy)
Trial numbers come from the storage, so workers sharing a study never get the same trial.

Sampler (--sampler): TPE by default — Optuna's multi-objective TPE (MOTPE) models good and bad
regions from every finished trial, so it improves after a handful of trials; a trial costs
seconds and budgets are tens of trials, which is where TPE beats NSGA-II, whose first
generation (its population, 50 by default) is random sampling. `--sampler nsga2` (population
8 here) is there for long studies, where its crowding-distance selection spreads the front.

The budget (--trials N) is the study's: each process asks for trials until N have finished
(complete or failed) or are running. A trial interrupted by Ctrl-C is told FAIL with the
attribute interrupted=True and does not count, so `--resume` runs it again under a new number.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from ..errors import SeedfwError

SAMPLERS = ("tpe", "nsga2", "random")
_RDB = re.compile(r"^(sqlite|postgresql|mysql)(\+\w+)?://")


def storage_for(spec: str | None, tune_dir: Path):
    """An Optuna storage from --storage (see the module docstring); SeedfwError when bad."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalRedisBackend

    if not spec:
        tune_dir.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(tune_dir / "study.journal")))
    from ..secrets import redact
    shown = redact(spec)                           # error lines never show a password
    if spec.startswith("redis://"):
        if not re.match(r"^redis://([^@/]*@)?[^/:@]+:\d+(/\d+)?$", spec):
            raise SeedfwError(f"'{shown}' is not redis://HOST:PORT[/DB]", None, "--storage")
        import warnings
        with warnings.catch_warnings():      # "experimental" since Optuna 3.1; we pin >= 4.2
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            backend = JournalRedisBackend(spec)
        try:
            backend._redis.ping()
        except Exception as exc:          # redis.ConnectionError and friends: one line
            raise SeedfwError(f"cannot reach {shown}: {redact(str(exc).splitlines()[0])}", None,
                              "--storage") from None
        return JournalStorage(backend)
    if _RDB.match(spec):
        try:
            return optuna.storages.RDBStorage(spec)
        except Exception as exc:
            raise SeedfwError(f"cannot open {shown}: {redact(str(exc).splitlines()[0])}", None,
                              "--storage") from None
    if spec.endswith(".journal") and "://" not in spec:
        path = Path(spec)
        if not path.parent.is_dir():
            raise SeedfwError("no such directory", path.parent, "--storage")
        return JournalStorage(JournalFileBackend(str(path)))
    raise SeedfwError(f"unknown storage '{shown}' (use FILE.journal, redis://HOST:PORT, or an "
                      "sqlite:// / postgresql:// / mysql:// URL)", None, "--storage")


def sampler_for(name: str, seed: int | None):
    import optuna
    if name == "tpe":
        # multivariate: the knobs interact (dictionary size matters only with a dictionary);
        # constant_liar: parallel workers do not all sample the point a running trial holds.
        # group: the space is conditional (seedfw.tune.space.Space samples only what Kconfig
        # shows given the values so far), and group decomposition models each set of
        # parameters that occur together instead of falling back to independent sampling.
        import warnings
        with warnings.catch_warnings():      # `group` is "experimental" since Optuna 2.8
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                              constant_liar=True, n_startup_trials=4)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=8)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SeedfwError(f"unknown sampler '{name}' (known: {', '.join(SAMPLERS)})", None, "--sampler")


def study_name(board: str, objectives) -> str:
    return f"seedfw-{board}-" + "-".join(o.name for o in objectives)


def open_study(name: str, storage, objectives, sampler, create: bool):
    """Load the study `name`; create it when `create` (else SeedfwError if it does not exist)."""
    import optuna
    directions = ["minimize"] * len(objectives)
    if create:
        study = optuna.create_study(study_name=name, storage=storage, sampler=sampler,
                                    directions=directions, load_if_exists=True)
    else:
        try:
            study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        except KeyError:
            return None
    if len(study.directions) != len(objectives):
        raise SeedfwError(f"study '{name}' has {len(study.directions)} objectives, not "
                          f"{len(objectives)}", None, "--objectives")
    return study


def counted(study) -> int:
    """Trials that use up the budget: finished or running, not interrupted."""
    from optuna.trial import TrialState
    n = 0
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.FAIL and t.user_attrs.get("interrupted"):
            continue
        if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING):
            n += 1
    return n


def front(study) -> list:
    """The Pareto-optimal complete trials (Optuna's own non-domination), by number."""
    try:
        return sorted(study.best_trials, key=lambda t: t.number)
    except ValueError:
        return []


def _same_config(study, key: str):
    from optuna.trial import TrialState
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.user_attrs.get("config") == key:
            return t
    return None


def run(study, params, objectives, run_trial, budget: int, say, config_key=None) -> list[int]:
    """Ask/tell until the study holds `budget` counted trials; returns the numbers this process
    ran. `params`: a seedfw.tune.space.Space (define-by-run: each trial samples only the
    parameters Kconfig shows given its values so far), or a plain list of Params, sampled
    independently (tests whose parameters do not depend on each other).
    `run_trial(number, values) -> TrialResult`. Ctrl-C tells the running trial FAIL
    (interrupted) before propagating, so the storage never keeps a trial RUNNING forever.

    `config_key(values)`: the hash of the configuration the values resolve to. Parameters can
    be without effect (the block size when compression is off), so the sampler proposes
    configurations already measured under other names; such a trial is told the measured
    objectives (boots are deterministic, builds reproducible) with `same_as`, not rebuilt."""
    from optuna.trial import TrialState

    from .space import Space
    sp = params if isinstance(params, Space) else Space(params)
    mine = []
    while counted(study) < budget:
        trial = study.ask()
        try:
            values = sp.suggest(trial)
            said = _one(study, trial, values, objectives, run_trial, config_key)
        except KeyboardInterrupt:
            # Anywhere between ask and tell: the trial must not stay RUNNING in the storage.
            # The interrupt may land after this trial was told: then it stays as told.
            from optuna.exceptions import UpdateFinishedTrialError
            try:
                trial.set_user_attr("interrupted", True)
            except UpdateFinishedTrialError:
                raise KeyboardInterrupt from None
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise
        mine.append(trial.number)
        say(f"trial {trial.number + 1}/{budget} (#{trial.number}): {said}")
    return mine


def _one(study, trial, values, objectives, run_trial, config_key) -> str:
    """Run (or recognise) one asked trial (`values`: its parameters by Kconfig name) and tell
    the study; returns the progress text."""
    from optuna.trial import TrialState
    # Which process ran it: the multi-worker test checks that no trial ran twice.
    trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
    key = config_key(values) if config_key else None
    if key:
        trial.set_user_attr("config", key)
        twin = _same_config(study, key)
        if twin is not None:
            trial.set_user_attr("same_as", twin.number)
            study.tell(trial, twin.values)
            why = ("the same parameters" if twin.params == trial.params
                   else "parameters without effect differ")
            return f"same configuration as #{twin.number} ({why}): its objectives, not rebuilt"
    result = run_trial(trial.number, values)
    for name, value in result.attrs().items():
        trial.set_user_attr(name, value)
    if result.error:
        study.tell(trial, state=TrialState.FAIL)
        return f"FAILED: {result.error}"
    study.tell(trial, [result.values[o.name] for o in objectives])
    distinct: dict[tuple, int] = {}
    for t in front(study):
        distinct.setdefault(tuple(t.values), t.number)
    return (", ".join(f"{o.name} {result.values[o.name]:,}" for o in objectives)
            + f"  ({len(result.steps_ran)} step(s) ran, {result.steps_skipped} up to date, "
            f"{result.seconds.get('total', 0):.1f} s); front: {len(distinct)} point(s) "
            + "[" + ", ".join(f"#{n}" for n in sorted(distinct.values())) + "]")
