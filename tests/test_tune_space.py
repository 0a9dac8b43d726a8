"""invoke tune's search space follows Kconfig's visibility (seedfw.tune.space.Space).

Every sampled configuration is checked the way a trial's build would take it: its fragment goes
through seedfw.config.resolve(strict=True), where a value Kconfig's dependencies override is an
error naming the symbol. The negative control plants a `depends on`, a choice member's
dependency and a conditional range in a Kconfig tree of its own and shows that the old
independent space samples configurations Kconfig refuses while the visibility-derived one
samples none; a space that wrongly ignored visibility would fail it.
"""

from __future__ import annotations

import collections
import re

import kconfiglib
import optuna
import pytest

from seedfw import config, dvfs
from seedfw.dvfs import hints as dvfs_hints
from seedfw.errors import SeedfwError
from seedfw.tune import space, study

optuna.logging.set_verbosity(optuna.logging.WARNING)
BOARD = "qemu-aarch64"
ROOT = config.ROOT


def _study(sampler):
    return optuna.create_study(directions=["minimize"], sampler=sampler)


def _samples(sp, n, sampler):
    """n configurations asked of an in-memory study, each told a made-up objective so that TPE
    leaves its start-up phase and models the conditional space."""
    st = _study(sampler)
    out = []
    for i in range(n):
        trial = st.ask()
        values = sp.suggest(trial)
        st.tell(trial, [float(sum(hash(str(v)) % 97 for v in values.values()) + i % 7)])
        out.append((trial.params, values))
    return out


def _resolve_strict(tmp_path, base, params, values):
    frag = tmp_path / "trial.fragment"
    frag.write_text(space.fragment(params, values))
    return config.resolve(BOARD, tmp_path / "out", [base, frag], strict=True)


# A base where BL31 does not compress but the payload does: every parameter below is tunable
# there (the space is judged at the study's base point), and sampling TFA_COMPRESS_RODATA=y
# hides the resident dictionary again.
BASE = "# CONFIG_TFA_COMPRESS_RODATA is not set\nCONFIG_COMPRESS_SECTIONS=y\n"


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_sampled_configurations_all_stick(tmp_path, sampler):
    base = tmp_path / "base.fragment"
    base.write_text(BASE)
    kc = config.resolve(BOARD, tmp_path / "base", [base]).kconf
    # The default space plus COMPRESS_SECTIONS (payload-only compression when BL31's is off,
    # where a resident dictionary is allowed)
    params = space.load(kc, [e for e in space.DEFAULT_SPACE if "RK3588" not in e]
                        + ["COMPRESS_SECTIONS"])
    sp = space.Space(params, kc)
    smp = (optuna.samplers.RandomSampler(seed=7) if sampler == "random"
           else study.sampler_for("tpe", 7))
    n = 200 if sampler == "random" else 80         # TPE's cost grows with the trials
    seen = collections.Counter()
    for names, values in _samples(sp, n, smp):
        # strict: raises on a value that did not stick
        cfg = _resolve_strict(tmp_path, base, params, values)
        assert space.current_values(cfg.kconf, [p for p in params if p.name in values]) == values
        assert space.trial_values(names) == values
        if values.get("TFA_COMPRESS_RODATA") == "y":
            assert values.get("COMPRESS_DICT_SOURCE") != "COMPRESS_DICT_RESIDENT"
        seen[(values.get("TFA_COMPRESS_RODATA"), values.get("COMPRESS_DICT_SOURCE"))] += 1
    if sampler == "random":
        # The conditions restrict, they do not starve: the resident dictionary is sampled where
        # Kconfig allows it (payload-only compression), and so is every other source with BL31's.
        assert seen[("n", "COMPRESS_DICT_RESIDENT")] > 0
        for source in ("NONE", "TRAINED", "FILE"):
            assert seen[("y", f"COMPRESS_DICT_{source}")] > 0


def test_kconfig_refuses_the_resident_dictionary_for_bl31(tmp_path):
    """The rule lives in Kconfig: `invoke config` reports the combination, strict refuses it."""
    frag = tmp_path / "resident.fragment"
    frag.write_text("CONFIG_TFA_COMPRESS_RODATA=y\nCONFIG_COMPRESS_DICT_RESIDENT=y\n")
    cfg = config.resolve(BOARD, tmp_path / "out", [frag])
    assert cfg.warnings == [f"{frag}:2: CONFIG_COMPRESS_DICT_RESIDENT was assigned 'y' but got "
                            "'n' (depends on !TFA_COMPRESS_RODATA && "
                            "<choice COMPRESS_DICT_SOURCE>)"]
    assert cfg.values["COMPRESS_DICT_TRAINED"]            # the choice's default instead
    with pytest.raises(SeedfwError) as exc:
        config.resolve(BOARD, tmp_path / "out", [frag], strict=True)
    assert exc.value.line() == (f"{frag}:2: CONFIG_COMPRESS_DICT_RESIDENT was "
                                "assigned 'y' but got 'n' (depends on !TFA_COMPRESS_RODATA && "
                                "<choice COMPRESS_DICT_SOURCE>)")
    # Without BL31's compression (payload only) it is a valid choice
    frag.write_text("# CONFIG_TFA_COMPRESS_RODATA is not set\nCONFIG_COMPRESS_SECTIONS=y\n"
                    "CONFIG_COMPRESS_DICT_RESIDENT=y\n")
    assert config.resolve(BOARD, tmp_path / "out", [frag], strict=True).values[
        "COMPRESS_DICT_RESIDENT"]


def test_default_trial_is_enqueued_under_the_names_sampling_uses(tmp_path):
    kc = config.resolve(BOARD, tmp_path / "base").kconf
    params = space.load(kc)
    sp = space.Space(params, kc)
    current = space.current_values(kc, params)
    fixed = sp.fixed(current)
    # BL31 compresses in the defconfig, so the dictionary source is the restricted choice
    assert fixed["COMPRESS_DICT_SOURCE[NONE,TRAINED,FILE]"] == "COMPRESS_DICT_TRAINED"
    st = _study(optuna.samplers.RandomSampler(seed=1))
    st.enqueue_trial(fixed)
    trial = st.ask()
    assert sp.suggest(trial) == current and trial.params == fixed
    # the caller's Kconfig is back at the base after sampling
    assert space.current_values(kc, params) == current


# ---- the negative control: a planted constraint ------------------------------------------

PLANTED = """\
mainmenu "planted"

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
	bool "c"

endchoice

config LEVEL
	int "level"
	range 0 3 if !FAST
	range 0 9
	default 1
"""


@pytest.fixture
def planted(tmp_path):
    (tmp_path / "Kconfig").write_text(PLANTED)
    kc = kconfiglib.Kconfig(str(tmp_path / "Kconfig"), warn_to_stderr=False)
    return tmp_path, kc, space.load(kc, ["FAST", "CACHE", "MODE", "LEVEL"])


def _invalid(tmp_path, params, values) -> bool:
    """Through a fresh kconfiglib instance: the fragment loaded over the defaults, then is
    every sampled value what Kconfig ended with?"""
    kc = kconfiglib.Kconfig(str(tmp_path / "Kconfig"), warn_to_stderr=False)
    frag = tmp_path / "sample.fragment"
    frag.write_text(space.fragment(params, values))
    kc.load_config(str(frag))
    return space.current_values(kc, [p for p in params if p.name in values]) != values


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_planted_constraint_naive_space_breaks_it_visibility_space_does_not(planted, sampler):
    tmp_path, kc, params = planted

    def smp():
        return (optuna.samplers.RandomSampler(seed=3) if sampler == "random"
                else study.sampler_for("tpe", 3))
    n = 200 if sampler == "random" else 80
    naive = [v for _, v in _samples(space.Space(params), n, smp())]
    derived = [v for _, v in _samples(space.Space(params, kc), n, smp())]
    bad_naive = [v for v in naive if _invalid(tmp_path, params, v)]
    bad_derived = [v for v in derived if _invalid(tmp_path, params, v)]
    assert bad_derived == []
    assert len(bad_naive) >= n // 10, bad_naive          # the old way: refused combinations
    # each planted rule is one the naive space breaks and the derived one keeps
    assert any(v["FAST"] == "n" and v["CACHE"] == "y" for v in bad_naive)
    assert any(v["FAST"] == "y" and v["MODE"] == "MODE_B" for v in bad_naive)
    assert any(v["FAST"] == "n" and v["LEVEL"] > 3 for v in bad_naive)
    assert not any("CACHE" in v for v in derived if v["FAST"] == "n")
    assert all(v["LEVEL"] <= 3 for v in derived if v["FAST"] == "n")
    # and the derived space still reaches every value Kconfig allows
    assert {v["MODE"] for v in derived if v["FAST"] == "n"} == {"MODE_A", "MODE_B", "MODE_C"}
    assert {v.get("CACHE") for v in derived if v["FAST"] == "y"} == {"y", "n"}


def test_planted_names_of_restricted_choices(planted):
    _, kc, params = planted
    sp = space.Space(params, kc)
    fixed = sp.fixed({"FAST": "y", "CACHE": "n", "MODE": "MODE_C", "LEVEL": 9})
    assert fixed == {"FAST": "y", "CACHE": "n", "MODE[A,C]": "MODE_C", "LEVEL": 9}
    assert sp.fixed({"FAST": "n", "MODE": "MODE_B", "LEVEL": 2}) == \
        {"FAST": "n", "MODE": "MODE_B", "LEVEL": 2}
    assert sp.refused({"FAST": "n", "CACHE": "y"}) == ["CONFIG_CACHE: y -> n"]


# ---- the power profile: Kconfig's rule against the payload's hints and the boards' tables -----

_HINT = re.compile(r"^SEEDFW_DVFS_HINT(_DOMAIN)?\((\w+),\s*(?:\"(\w*)\",\s*)?([\d.]+)f?,\s*(\d+),"
                   r"\s*(\d+),\s*(\d+)\)", re.M)


def _payload_hints():
    text = (ROOT / "firmware" / "payload" / "main.c").read_text()
    hints = [dvfs_hints.Hint(m[2], m[3] or "", float(m[4]), int(m[5]), int(m[6]), int(m[7]))
             for m in _HINT.finditer(text)]
    assert len(hints) == text.count("\nSEEDFW_DVFS_HINT")      # the regex read every one
    return hints


@pytest.mark.parametrize("board", ["qemu-aarch64", "rk3588"])
def test_power_profiles_kconfig_hides_exactly_what_the_payload_hints_refuse(tmp_path, board):
    """image.pack refuses a default profile that does not allow a payload hint's OPP; Kconfig
    must hide exactly those profiles when the payload is built (a drift guard: a new hint or a
    changed dvfs.yaml that breaks the rule fails here, not in a trial)."""
    table = dvfs.load(ROOT / "board" / board / "dvfs.yaml")
    hints = _payload_hints()

    def refused(profile):
        try:
            dvfs_hints.check(table, hints, profile)
        except SeedfwError:
            return True
        return False
    if refused("balanced"):
        pytest.skip(f"the payload's hints do not fit {board}'s table in any profile: the "
                    "payload is not built for it (CONFIG_PAYLOAD defaults to n there)")
    frag = tmp_path / "payload.fragment"
    frag.write_text("CONFIG_PAYLOAD=y\n")
    kc = config.resolve(board, tmp_path / "out", [frag], strict=True).kconf
    choice = next(c for c in kc.unique_choices if c.name == "POWER_PROFILE_CHOICE")
    for sym in choice.syms:
        profile = sym.name.removeprefix("POWER_PROFILE_").lower()
        assert bool(sym.visibility) == (not refused(profile)), profile
