"""invoke tune samples only configurations the build accepts (issue 33): no builds, samples only.

A trial used to be a configuration Kconfig accepted and the build refused (a 4-trial study lost
2 of them to "BL31 has no resident dictionary"). The rules now live in Kconfig and the study's
space follows kconfiglib at every parameter (seedfw.tune.space.Space). Shown here:

- the study's own space, judged where `invoke tune` judges it (trial.base_config: the defconfig
  plus the pins the trials build with), gives 200 seeded configurations whose every sampled
  value is the value kconfiglib ends with when the trial's own fragment is resolved;
- every tunable option of a board at once (each prompted bool, choice and ranged int) passes
  what the build checks before its first step: the values stick, every enabled part's
  check_config, and the plan's role links. Two combinations failed there before this change
  and are Kconfig rules now: MODELS on the MCU board (a traceback: it has no model manifest)
  and qemu-aarch64's U-Boot without the payload its firmware FIT carries;
- the negative control: a planted Kconfig with a `depends on`, a choice member's dependency and
  a later option that `select`s an earlier one. The independent space samples combinations
  Kconfig overturns; the derived space never does (before this change it did for the
  `select`: a value sampled first was overturned by one sampled after it);
- the build's real refusal for COMPRESS_DICT_RESIDENT with TFA_COMPRESS_RODATA (run from the
  tfa.compress step of a plan) cannot be reached by any configuration the tuner samples.
"""

from __future__ import annotations

import collections

import kconfiglib
import optuna
import pytest

from seedfw import boards, config, parts
from seedfw.errors import SeedfwError
from seedfw.plan import Plan
from seedfw.tune import space, study, trial

optuna.logging.set_verbosity(optuna.logging.WARNING)
BOARD = "qemu-aarch64"
RESIDENT_REFUSAL = ("BL31 has no resident dictionary (its decoder runs before anything else is "
                    "in memory): choose none, trained or file")
# Their refusals are about this machine, not about a combination of options: IMAGE_SIGN wants
# the signing key pair in keys/ (made by `invoke keys`), UPDATE_RAUC Buildroot source tarballs
# the mirror may lack. Kconfig cannot know either. (UPDATE itself, the A/B disk, is a free choice
# on rk3588 now; qemu-aarch64's refusal of it is a board rule the tuner's base never meets.)
MACHINE_BOUND = ("IMAGE_SIGN", "UPDATE", "UPDATE_RAUC")


def _samples(sp, n, sampler):
    """n configurations asked of an in-memory study, each told a made-up objective (so that
    TPE leaves its start-up phase)."""
    st = optuna.create_study(directions=["minimize"], sampler=sampler)
    out = []
    for i in range(n):
        t = st.ask()
        values = sp.suggest(t)
        st.tell(t, [float(sum(hash(str(v)) % 89 for v in values.values()) + i % 5)])
        out.append(values)
    return out


def _trial_config(tmp_path, brd, params, values, header=None):
    """What trial.run builds for `values`: its fragment (the pins, then the values) over the
    board's defconfig, resolved by seedfw.config as `invoke build` resolves it."""
    frag = tmp_path / "tune.fragment"
    frag.write_text(space.fragment(params, values, header=header or trial.pins(brd)))
    return frag, config.resolve(brd.name, tmp_path / "trial", [frag])


def _not_kept(cfg, frag, params, values) -> list[str]:
    """Sampled values kconfiglib did not end with, and warnings about the trial's fragment."""
    got = space.current_values(cfg.kconf, [p for p in params if p.name in values])
    mine = {a.where() for a in cfg.origins.values() if a.file == frag}
    return ([f"{k}: sampled {v}, got {got[k]}" for k, v in values.items() if got[k] != v]
            + [w for w in cfg.warnings if w.partition(": ")[0] in mine])


def _plan(cfg, tmp_path):
    """What the build checks before its first step: every enabled part's check_config, then
    every part's outputs and steps, linked by role (Plan.order). Nothing is run."""
    for part in parts.enabled(cfg):
        part.check_config(cfg)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(tmp_path / "trial", 1)
    parts.declare(ctx, plan)
    plan.order()
    return ctx, plan


def _tunable(kc) -> list[space.Param]:
    """Every option a user could name in --space for this base: prompted choices, bools and
    ints with a range that Kconfig leaves free here (space._param's rules), in menu order."""
    names = []
    for node in kc.node_iter():
        item = node.item
        if not node.prompt or not isinstance(item, (kconfiglib.Symbol, kconfiglib.Choice)):
            continue
        if isinstance(item, kconfiglib.Symbol) and (item.choice is not None or item.orig_type
                                                    not in (kconfiglib.BOOL, kconfiglib.INT)):
            continue
        if item.name and item.name not in MACHINE_BOUND and item.name not in names:
            names.append(item.name)
    return [p for p in (space._param(kc, n, "--space", False) for n in names) if p is not None]


# ---- (a) the real Kconfig tree ---------------------------------------------------------------

def test_200_sampled_trials_of_the_study_space_are_what_kconfig_ends_with(tmp_path):
    brd = boards.get(BOARD)
    kc = trial.base_config(brd, tmp_path / "tune").kconf       # as `invoke tune` does
    params = space.load(kc)
    sp = space.Space(params, kc)
    seen = collections.Counter()
    for values in _samples(sp, 200, optuna.samplers.RandomSampler(seed=33)):
        frag, cfg = _trial_config(tmp_path, brd, params, values)
        assert _not_kept(cfg, frag, params, values) == [], values
        seen[values["TFA_COMPRESS_RODATA"], values.get("COMPRESS_DICT_SOURCE")] += 1
    # Not vacuous: both branches and every dictionary source BL31 may use were sampled, and
    # with BL31's compression off nothing under it was (Kconfig hides it on this board).
    assert set(seen) == {("n", None), ("y", "COMPRESS_DICT_NONE"), ("y", "COMPRESS_DICT_TRAINED"),
                         ("y", "COMPRESS_DICT_FILE")}, seen


@pytest.mark.parametrize("board", ["qemu-aarch64", "rk3588", "mps2-an385"])
def test_every_tunable_option_at_once_passes_the_builds_own_checks(tmp_path, board):
    brd = boards.get(board)
    kc = trial.base_config(brd, tmp_path / "tune").kconf
    params = _tunable(kc)
    assert len(params) >= 6, [p.name for p in params]          # mps2-an385 has 6
    sp = space.Space(params, kc)
    refused = []
    for values in _samples(sp, 50, optuna.samplers.RandomSampler(seed=7)):
        frag, cfg = _trial_config(tmp_path, brd, params, values)
        assert _not_kept(cfg, frag, params, values) == [], values
        try:
            _plan(cfg, tmp_path)
        except SeedfwError as exc:
            refused.append((exc.line(), values))
    assert refused == []


def test_the_two_combinations_the_plan_refused_are_kconfig_rules_now(tmp_path):
    frag = tmp_path / "models.fragment"
    frag.write_text("CONFIG_MODELS=y\n")
    cfg = config.resolve("mps2-an385", tmp_path / "mcu", [frag])
    assert cfg.warnings == [f"{frag}:1: CONFIG_MODELS was assigned 'y' but got 'n' (depends on "
                            "ARCH_AARCH64)"]
    _plan(cfg, tmp_path)                        # was: FileNotFoundError (a traceback)
    frag.write_text("CONFIG_UBOOT=y\n# CONFIG_PAYLOAD is not set\n")
    cfg = config.resolve(BOARD, tmp_path / "qemu", [frag])
    assert cfg.warnings == [f"{frag}:2: CONFIG_PAYLOAD was assigned 'n' but got 'y' (selected "
                            "by BOARD_QEMU_AARCH64 && UBOOT)"]
    _, plan = _plan(cfg, tmp_path)              # was: disk.image needs role 'payload'
    assert {"payload.build", "disk.image"} <= set(plan.steps)
    # and the sampler never proposes the pair: PAYLOAD is not a choice once U-Boot is on
    # (at the study's base, where U-Boot is pinned off: the defconfig's U-Boot selects it)
    kc = trial.base_config(boards.get(BOARD), tmp_path / "tune").kconf
    params = space.load(kc, ["UBOOT", "PAYLOAD"])
    got = {tuple(sorted(v.items())) for v in _samples(space.Space(params, kc), 40,
                                                      optuna.samplers.RandomSampler(seed=1))}
    assert got == {(("PAYLOAD", "n"), ("UBOOT", "n")), (("PAYLOAD", "y"), ("UBOOT", "n")),
                   (("UBOOT", "y"),)}


def test_a_model_manifest_that_is_not_there_is_one_line(tmp_path):
    frag = tmp_path / "manifest.fragment"
    frag.write_text('CONFIG_MODEL_MANIFEST="board/nowhere/models.yaml"\n')
    cfg = config.resolve(BOARD, tmp_path / "out", [frag])
    with pytest.raises(SeedfwError) as exc:
        _plan(cfg, tmp_path)
    assert exc.value.line().endswith("out/.config: CONFIG_MODEL_MANIFEST: model manifest "
                                     "board/nowhere/models.yaml: file not found")


# ---- (b) the negative control: a planted constraint --------------------------------------------

PLANTED = """\
mainmenu "planted"

config SPLIT
	bool "separate code and rodata"

config FAST
	bool "fast path"
	default y

config CACHE
	bool "cache (needs the fast path)"
	depends on FAST

choice MODE
	prompt "mode"
	default MODE_A

config MODE_A
	bool "a"

config MODE_B
	bool "b (not with the fast path)"
	depends on !FAST

config MODE_C
	bool "c (splits the image: selects an option that comes before it)"
	select SPLIT

endchoice
"""


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_planted_constraints_broken_by_independent_sampling_kept_by_the_derived(tmp_path,
                                                                                 sampler):
    (tmp_path / "Kconfig").write_text(PLANTED)
    kc = kconfiglib.Kconfig(str(tmp_path / "Kconfig"), warn_to_stderr=False)
    params = space.load(kc, ["SPLIT", "FAST", "CACHE", "MODE"])

    def smp():
        return (optuna.samplers.RandomSampler(seed=5) if sampler == "random"
                else study.sampler_for("tpe", 5))

    def overturned(values):
        fresh = kconfiglib.Kconfig(str(tmp_path / "Kconfig"), warn_to_stderr=False)
        frag = tmp_path / "sample.fragment"
        frag.write_text(space.fragment(params, values))
        fresh.load_config(str(frag))
        return space.current_values(fresh, [p for p in params if p.name in values]) != values

    n = 200 if sampler == "random" else 60
    naive = _samples(space.Space(params), n, smp())
    derived = _samples(space.Space(params, kc), n, smp())
    bad_naive = [v for v in naive if overturned(v)]
    assert [v for v in derived if overturned(v)] == []
    assert len(bad_naive) >= n // 5
    assert any(v["FAST"] == "n" and v["CACHE"] == "y" for v in bad_naive)        # depends on
    assert any(v["FAST"] == "y" and v["MODE"] == "MODE_B" for v in bad_naive)    # member's dep
    assert any(v["SPLIT"] == "n" and v["MODE"] == "MODE_C" for v in bad_naive)   # later select
    # the derived space still reaches every combination Kconfig allows (MODE is not a
    # parameter where only MODE_A is left: SPLIT=n with the fast path)
    if sampler == "random":
        assert {(v["SPLIT"], v["FAST"], v.get("MODE")) for v in derived} == {
            ("n", "y", None), ("n", "n", "MODE_A"), ("n", "n", "MODE_B"),
            ("y", "y", "MODE_A"), ("y", "y", "MODE_C"),
            ("y", "n", "MODE_A"), ("y", "n", "MODE_B"), ("y", "n", "MODE_C")}
    assert {v.get("CACHE") for v in derived if v["FAST"] == "y"} == {"y", "n"}


# ---- (c) the build's refusal of RESIDENT with BL31's compression ---------------------------------

def _tfa_compress_error(cfg, tmp_path) -> str | None:
    """Run the plan's tfa.compress step (None when the configuration has none) up to where it
    fails here: with no BL31 built, a valid configuration fails reading bl31.elf."""
    _, plan = _plan(cfg, tmp_path)
    step = plan.steps.get("tfa.compress")
    if step is None:
        return None
    try:
        step.run(step)
    except (SeedfwError, OSError) as exc:
        return exc.line() if isinstance(exc, SeedfwError) else str(exc)
    return ""


def test_the_resident_refusal_cannot_be_reached_from_the_tuner(tmp_path):
    brd = boards.get(BOARD)
    # The refusal itself, as the build gives it: a hand-edited .config (Kconfig cannot make
    # one) that asks BL31 for the resident dictionary.
    frag, cfg = _trial_config(tmp_path, brd, [], {}, header=trial.pins(brd))
    cfg.values.update(COMPRESS_DICT_TRAINED=False, COMPRESS_DICT_RESIDENT=True)
    assert _tfa_compress_error(cfg, tmp_path) == (
        f"{tmp_path / 'trial' / '.config'}: CONFIG_COMPRESS_DICT_RESIDENT: {RESIDENT_REFUSAL}")
    # The tuner's samples: the study's space, and one from a base where BL31's compression and
    # the payload's are both free, so that the resident dictionary is a live choice.
    base = "# CONFIG_TFA_COMPRESS_RODATA is not set\nCONFIG_COMPRESS_SECTIONS=y\n"
    wide = tmp_path / "wide.fragment"
    wide.write_text(trial.pins(brd) + "\n" + base)
    cases = [(trial.base_config(brd, tmp_path / "tune").kconf, None, None),
             (config.resolve(BOARD, tmp_path / "wide", [wide]).kconf,
              ["TFA_COMPRESS_RODATA", "COMPRESS_SECTIONS", "COMPRESS_DICT_SOURCE",
               "COMPRESS_BLOCK"], trial.pins(brd) + "\n" + base)]
    reached = collections.Counter()
    for kc, entries, header in cases:
        params = space.load(kc, entries)
        for values in _samples(space.Space(params, kc), 60,
                               optuna.samplers.RandomSampler(seed=11)):
            frag, cfg = _trial_config(tmp_path, brd, params, values, header)
            error = _tfa_compress_error(cfg, tmp_path)
            assert error is None or RESIDENT_REFUSAL not in error, values
            reached["tfa.compress" if error is not None else "no BL31 compression",
                    cfg.values["COMPRESS_DICT_RESIDENT"]] += 1
    # BL31's step was reached often, and the resident dictionary was sampled (for the payload)
    assert reached["tfa.compress", False] >= 30 and reached["no BL31 compression", True] > 0, \
        reached


def test_a_trial_kconfig_would_overturn_fails_before_building(tmp_path):
    """The safety net behind the space: such a trial says which value did not stick and builds
    nothing, instead of recording parameters its build did not use."""
    from seedfw.tune import objectives
    brd = boards.get(BOARD)
    kc = trial.base_config(brd, tmp_path / "tune").kconf
    params = space.load(kc)
    (tmp_path / "base").mkdir()
    res = trial.run(brd, params, {"TFA_COMPRESS_RODATA": "y",
                                  "COMPRESS_DICT_SOURCE": "COMPRESS_DICT_RESIDENT"},
                    objectives.parse(None, brd), tmp_path / "base", tmp_path / "t")
    assert res.error == (f"{tmp_path / 't' / 'tune.fragment'}:4: the sampled value did not "
                         "stick: CONFIG_COMPRESS_DICT_RESIDENT was assigned 'y' but got 'n' "
                         "(depends on !TFA_COMPRESS_RODATA && <choice COMPRESS_DICT_SOURCE>)")
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["tune.fragment"]
