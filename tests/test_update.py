"""Field updates (issue 29), the QEMU half: the boot-count script run by a real U-Boot.

firmware/uboot/rauc-bootcount.cmd is sourced by Debian's pinned U-Boot 2023.01 (qemu_arm64) in
QEMU virt for every simulated boot (seedfw.update.bootcount.UBootShell); what persists between
boots, and RAUC's and the agent's env writes, are modelled by bootcount.Device. What these tests
prove is the slot choice under updates, failed boots and power cuts; what they do not is RAUC's
own install on a target (the target build needs RAUC's sources, docs/updates.md). They take a
few seconds: one QEMU per test module, ~0.06 s per boot decision.
"""

from __future__ import annotations

import random

import pytest

from seedfw.update import bootcount

GOOD, BROKEN = {"A": True, "B": True}, {"A": True, "B": False}


@pytest.fixture(scope="module")
def shell():
    with bootcount.UBootShell() as sh:
        yield sh


def test_an_update_boots_the_new_slot_and_a_confirmed_slot_is_not_counted(shell):
    d = bootcount.Device()
    d.install("B")
    slot, after, saves, out = shell.decide(d.env)
    assert (slot, after["BOOT_B_LEFT"], saves) == ("B", "2", True)
    assert "seedfw: bootcount: slot B (order B A, A 3 left, B 2 left, good A, spent 1)" in out
    assert d.boot(shell, GOOD) == "B"
    assert (d.env["BOOT_B_LEFT"], d.env["seedfw_good"]) == ("3", "B")
    slot, after, saves, _ = shell.decide(d.env)
    assert (slot, after["BOOT_B_LEFT"], saves) == ("B", "3", False)


@pytest.mark.parametrize("attempts", [1, 3])
def test_a_slot_that_never_marks_good_gets_exactly_n_boots_then_a(shell, attempts):
    d = bootcount.Device(env=bootcount.factory_env(attempts))
    d.install("B", attempts)
    for _ in range(attempts + 3):
        d.boot(shell, BROKEN, attempts=attempts)
    assert d.history == ["B"] * attempts + ["A"] * 3
    assert (d.env["BOOT_B_LEFT"], d.env["BOOT_A_LEFT"]) == ("0", str(attempts))


def test_negative_control_without_counting_the_broken_slot_boots_forever():
    with bootcount.UBootShell(script_text=bootcount.variant("counting")) as sh:
        d = bootcount.Device()
        d.install("B")
        for _ in range(8):
            d.boot(sh, BROKEN)
    assert d.history == ["B"] * 8          # the counter is what brings A back


def test_when_every_slot_is_spent_the_counters_are_reset_not_bricked(shell):
    env = dict(bootcount.factory_env(), BOOT_A_LEFT="0", BOOT_B_LEFT="0", seedfw_good="")
    slot, after, saves, out = shell.decide(env)
    assert "seedfw: bootcount: no slot has attempts left; counters reset to 3" in out
    assert (slot, after["BOOT_A_LEFT"], after["BOOT_B_LEFT"], saves) == ("A", "3", "3", True)


def test_cuts_on_a_confirmed_slot_never_make_it_fall_back(shell):
    d = bootcount.Device()
    d.install("B")
    d.boot(shell, GOOD)                                  # B confirmed
    for _ in range(10):                                  # every boot cut before mark-good
        d.boot(shell, GOOD, cut="before mark-good")
    assert d.history == ["B"] * 11 and d.env["BOOT_B_LEFT"] == "3"


def test_negative_control_the_count_every_boot_rule_loses_a_good_slot_to_cuts():
    """rauc/rauc#490: with every boot counted, 3 cuts in a row on the confirmed B send the
    device back to the old A, and B stays at 0 until the next install."""
    with bootcount.UBootShell(script_text=bootcount.variant("confirmed")) as sh:
        d = bootcount.Device()
        d.install("B")
        d.boot(sh, GOOD)
        for _ in range(3):
            d.boot(sh, GOOD, cut="before mark-good")
        for _ in range(3):
            d.boot(sh, GOOD)
    assert d.history == ["B"] * 4 + ["A"] * 3 and d.env["BOOT_B_LEFT"] == "0"


def test_seeded_random_cuts_during_an_update_always_end_in_a_good_slot(shell):
    """20 seeded runs: install B, then boots with a cut at a random point of a random boot;
    each run ends booting a slot that reaches mark-good, the confirmed one when B was
    confirmed before the cut."""
    survived = 0
    for seed in range(20):
        rnd = random.Random(seed)
        d = bootcount.Device()
        cut_at = rnd.randrange(4)
        point = rnd.choice(["before saveenv", "before mark-good", "before seedfw_good"])
        if rnd.random() < 0.2:
            pass                                   # cut before RAUC's env write: no install
        else:
            d.install("B")
        for i in range(6):
            d.boot(shell, GOOD, cut=point if i == cut_at else None)
        final = d.history[-1]
        assert d.env["seedfw_good"] == final and d.env[f"BOOT_{final}_LEFT"] == "3", (seed, d)
        survived += 1
    assert survived == 20
