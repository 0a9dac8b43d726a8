"""Dependencies come from the files steps need (issue 19, defect 2): the firmware image does not
wait for the OS, a rootfs-only change re-runs only the OS steps, and switching Buildroot on or off
does not change U-Boot's compile (so does not recompile it)."""

from __future__ import annotations

import json
import shutil

import pytest

import builds
from seedfw import build as build_mod
from seedfw import config as config_mod
from seedfw import parts
from seedfw.plan import Plan


def plan_for(board, out, fragments=()):
    cfg = config_mod.configure(board, out, fragments)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(ctx.outdir)
    parts.declare(ctx, plan)
    plan.link()
    return plan, ctx


def upstream(plan, name) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        for d in plan.steps[todo.pop()].deps:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def test_image_pack_waits_only_for_what_it_packs(tmp_path):
    plan, _ = plan_for("qemu-aarch64", tmp_path / "q", [builds.BUILDROOT_FRAGMENT])
    up = upstream(plan, "image.pack")
    assert not any(s.startswith(("buildroot.", "kernel.", "os-")) for s in up), up
    assert "payload.compress" in up                # it packs the (compressed) payload
    # the OS steps do wait for the OS
    assert {"buildroot.build", "kernel.extract", "image.pack"} <= upstream(plan, "os-fit.build")
    assert {"os-fit.build", "image.pack"} <= upstream(plan, "disk.image")
    # rk3588: U-Boot is not in the firmware FIT, so image.pack does not wait for it
    plan, _ = plan_for("rk3588", tmp_path / "r")
    assert not any(s.startswith("uboot.") for s in upstream(plan, "image.pack"))
    assert {"uboot.build", "image.pack"} <= upstream(plan, "uboot-rockchip.binman")


def test_a_role_links_to_its_maker_a_source_to_nothing_and_two_makers_are_refused(tmp_path):
    from seedfw.errors import SeedfwError
    from seedfw.parts import Output
    from seedfw.plan import Step, source
    plan = Plan(tmp_path)
    made = tmp_path / "a.bin"
    plan.declare("x", [Output(made, "x.make", ("thing",))])
    plan.add(Step("x.make", lambda s: None),
             Step("y.use", lambda s: None, needs=("thing", source(tmp_path / "source.c"))))
    plan.link()
    assert plan.steps["y.use"].deps == ("x.make",)
    assert plan.steps["y.use"].files == (made, tmp_path / "source.c")
    assert plan.steps["x.make"].outputs == (made,)
    plan.add(Step("z.make", lambda s: None, outputs=(made,)))
    with pytest.raises(SeedfwError, match="steps 'x.make' and 'z.make' both declare"):
        plan.link()


def test_buildroot_on_or_off_is_the_same_uboot_compile(tmp_path):
    from seedfw.parts.uboot import UbootPart
    _, off = plan_for("qemu-aarch64", tmp_path / "off")
    _, on = plan_for("qemu-aarch64", tmp_path / "on", [builds.BUILDROOT_FRAGMENT])
    assert UbootPart().key_doc(off) == UbootPart().key_doc(on)


def steps_of(outdir) -> dict[str, str]:
    return {r["step"]: r["action"] for r in
            map(json.loads, (outdir / "logs" / "steps.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_rootfs_only_change_reruns_only_the_os_steps(br_build, qemu_aarch64_build, tmp_path):
    result, _ = br_build   # a real Buildroot output dir: its rootfs change is incremental
    # Both session builds used one U-Boot compile (the cache dir its cache.json names).
    cache = [json.loads((r.outdir / "build" / "u-boot" / "cache.json").read_text())["build"]
             for r in (result, qemu_aarch64_build)]
    assert cache[0] == cache[1]
    out = tmp_path / "copy"
    shutil.copytree(result.outdir, out, symlinks=True)
    # The firmware's build id is the configuration hash unless CONFIG_BUILD_ID names one, so a
    # Kconfig change rebuilds what embeds it: pin it first (one rebuild), then change the rootfs.
    pinned = tmp_path / "pinned.fragment"
    pinned.write_text(builds.BUILDROOT_FRAGMENT.read_text() + 'CONFIG_BUILD_ID="deps-test"\n')
    # (without the artifact store: what re-runs is the point, not where the files come from)
    build_mod.build("qemu-aarch64", out, [pinned], store=False)
    # A rootfs-only change that Buildroot makes incrementally (the agent's post-build setting:
    # same defconfig, another rootfs). A BR2_ option change was a clean Buildroot build, 250 s
    # of the slow suite; that decision (keep vs clean) is test_suite_budget's fast test.
    frag = tmp_path / "rootfs.fragment"
    frag.write_text(pinned.read_text() + "# CONFIG_BUILDROOT_AGENT_POWEROFF is not set\n")
    build_mod.build("qemu-aarch64", out, [frag], store=False)
    actions = steps_of(out)
    assert "SEEDFW_AGENT_POWEROFF=n" in (out / "build" / "buildroot-external" / "board"
                                         / "qemu-aarch64" / "post-build.sh").read_text()
    assert actions["buildroot.build"] == "ran" and actions["os-fit.build"] == "ran"
    assert actions["disk.image"] == "ran"
    for step in ("image.pack", "uboot.build", "tfa.fip", "payload.build", "kernel.extract"):
        assert actions[step] == "skipped", (step, actions)
