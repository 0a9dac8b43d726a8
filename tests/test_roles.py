"""Parts meet by role (issue 32): a step needs roles, never another part's file names; a need
nothing provides fails with one line; the manifest carries every artifact's roles and
placement; no part asks which board it is building for."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from seedfw import boards, build as build_mod, config as config_mod, parts
from seedfw.errors import SeedfwError
from seedfw.paths import ROOT
from seedfw.plan import Plan, Step

PARTS = ROOT / "tools" / "seedfw" / "parts"


def planned(board, out, fragments=()):
    cfg = config_mod.configure(board, out, fragments)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(ctx.outdir)
    parts.declare(ctx, plan)
    return plan, ctx


def test_a_planted_typo_fails_the_link_with_one_line(tmp_path):
    plan, _ = planned("rk3588", tmp_path / "r")
    disk = plan.steps["disk.image"]
    disk.needs = (*disk.needs, "kernal")
    with pytest.raises(SeedfwError) as err:
        plan.link()
    assert err.value.message == "step disk.image needs role 'kernal', which no enabled part provides"
    # negative control: without the typo the same plan links, and disk.image waits for the kernel
    disk.needs = disk.needs[:-1]
    plan.link()
    assert "kernel.extract" in disk.deps


def test_a_role_of_a_disabled_part_names_the_part_and_what_enables_it(tmp_path):
    plan, _ = planned("qemu-aarch64", tmp_path / "q")        # no Buildroot, no kernel
    disk = plan.steps["disk.image"]
    disk.needs = (*disk.needs, "kernel")
    with pytest.raises(SeedfwError) as err:
        plan.link()
    assert err.value.message == ("step disk.image needs role 'kernel', which no enabled part "
                                 "provides (kernel provides it when KERNEL=y)")


def test_a_file_is_no_need(tmp_path):
    plan = Plan(tmp_path)
    plan.add(Step("x.use", lambda s: None, needs=(tmp_path / "bl33.bin",)))
    with pytest.raises(SeedfwError, match=r"^step x.use needs .*bl33.bin: a need is a role or "
                                          r"plan.source\(path\), never another part's file$"):
        plan.link()


def test_an_output_of_a_step_that_is_not_there_is_refused(tmp_path):
    plan = Plan(tmp_path)
    plan.declare("x", [parts.Output(tmp_path / "a.bin", "x.make", ("a",))])
    with pytest.raises(SeedfwError, match="^part x declares a.bin as made by step 'x.make', "
                                          "which is not in the plan$"):
        plan.link()


@pytest.mark.parametrize("board", ["rk3588", "qemu-aarch64", "mps2-an385"])
def test_every_step_log_is_its_part_and_every_step_is_named_after_it(board, tmp_path):
    plan, ctx = planned(board, tmp_path / board, [ROOT / "configs" / "buildroot.fragment"]
                        if board != "mps2-an385" else [])
    plan.link()
    owner = {}
    for part in parts.enabled(ctx):
        for step in part.steps(ctx):
            owner[step.name] = part.name
    for name, step in plan.steps.items():
        assert step.log.name == f"{owner[name]}.log", name
        assert name.split(".")[0] == owner[name], name


def _manifest(board, tmp_path, fragments=()):
    """write_manifest over dummy files standing for every declared output."""
    plan, ctx = planned(board, tmp_path / board, fragments)
    for o in ctx.outputs:
        Path(o.path).parent.mkdir(parents=True, exist_ok=True)
        Path(o.path).write_bytes(b"x")
    return {e["name"]: e for e in build_mod.write_manifest(ctx)["artifacts"]}


def test_the_manifest_carries_roles_and_placement(tmp_path):
    got = _manifest("rk3588", tmp_path)
    keys = {"storage", "offset", "partition", "load_addr", "path"}
    assert all(set(e["placement"]) == keys and isinstance(e["roles"], list) for e in got.values())
    assert got["u-boot.itb"]["roles"] == ["u-boot-itb"]
    assert got["u-boot.itb"]["placement"] == {"storage": "sd-emmc", "offset": 0x800000,
                                              "partition": None, "load_addr": None, "path": None}
    assert got["idbloader.img"]["placement"]["offset"] == 0x8000
    # where another part put a file: the kernel at /Image of the ext4 "boot" partition
    assert got["Image"]["placement"] == {"storage": "sd-emmc", "offset": None,
                                         "partition": "boot", "load_addr": None, "path": "/Image"}
    assert got["initramfs.cpio"]["declared"]["role"] == "initramfs"
    assert got["initramfs.cpio"]["placement"]["path"] == "/initramfs.cpio"
    # rk3588 has a "boot-package" region: U-Boot hands the package over in RAM out of the
    # firmware FIT (seedfw.parts.fit_verify), so no copy in the rootfs; the overlay reserving
    # the region is placed by role in "boot" (tests/test_fit_verify.py has the rest)
    assert got["rk3588-boot.pkg"]["placement"]["path"] is None
    assert got["seedfw-boot-package.dtbo"]["placement"]["path"] == "/seedfw-boot-package.dtbo"
    assert got["rk3588.itb"]["placement"]["partition"] == "firmware"
    # the keys of today stay (h-manifest drops declared.location later)
    assert got["rk3588.itb"]["declared"]["location"] == "firmware partition of the disk image"
    assert got["bl31.elf"]["role"] == "aux" and "declared" not in got["bl31.elf"]


def test_qemu_placements_are_load_addresses_and_drives(tmp_path):
    got = _manifest("qemu-aarch64", tmp_path)
    assert got["qemu-aarch64-boot.pkg"]["placement"]["load_addr"] == 0x60400000
    assert got["qemu-aarch64-boot.pkg"]["declared"]["qemu"]["addr"] == 0x60400000
    assert got["qemu_fw.bios"]["placement"] == {"storage": "pflash", "offset": 0,
                                                "partition": None, "load_addr": None, "path": None}
    assert got["qemu-aarch64.itb"]["roles"] == ["firmware-fit"]


def _board_without(tmp_path, capability):
    src = ROOT / "board" / "rk3588"
    dst = tmp_path / "rk3588"
    shutil.copytree(src, dst)
    text = (dst / "board.yaml").read_text()
    assert f", {capability}]" in text
    (dst / "board.yaml").write_text(text.replace(f", {capability}]", "]"))
    return boards.load_file(dst / "board.yaml")


def test_capabilities_not_names_choose_the_parts(tmp_path):
    values = config_mod.resolve("rk3588", tmp_path / "r").values
    on = {p.name for p in parts.enabled(parts.context(boards.get("rk3588"), tmp_path, values))}
    assert {"uboot-rockchip", "os-boot-files", "loader"} <= on and "os-fit" not in on
    # the same board without the capability: no extlinux boot files (its name is still rk3588)
    board = _board_without(tmp_path, "extlinux")
    assert board.name == "rk3588"
    off = {p.name for p in parts.enabled(parts.context(board, tmp_path, values))}
    # (nor the overlay extlinux.conf would name: fit-verify follows the same capability)
    assert off == on - {"os-boot-files", "fit-verify"}


def _calls(tree, pattern):
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Compare)
            and re.search(pattern, ast.unparse(n))]


def test_no_part_branches_on_the_board_name_or_boot_kind():
    found = []
    for path in sorted(PARTS.glob("*.py")):
        tree = ast.parse(path.read_text())
        found += [f"{path.name}: {c}" for c in _calls(
            tree, r"boot\[['\"](rom|flow)['\"]\]|platform\(ctx\)|board\.name ==|\.soc ==")]
    assert found == []
    # negative control: the check sees such a comparison
    assert _calls(ast.parse('x = ctx.board.boot["rom"] == "rockchip"'), r"boot\[['\"]rom")


def _imports(path: Path) -> set[str]:
    """The sibling modules of seedfw.parts a module imports (at any level)."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level == 1:
            out |= {n.module} if n.module else {a.name for a in n.names}
    return out


def test_no_part_names_another_parts_files_or_imports_it():
    """The files the issue named (parts/firmware_image.py naming bl31*.elf, bl33.bin, mcu.bin;
    tfa.py naming u-boot.bin and importing firmware_image/uboot; disk.py and
    os_boot_files.py naming Image, u-boot.elf and U-Boot's cache.json) ask for roles."""
    text = {p.stem: p.read_text() for p in PARTS.glob("*.py")}
    for part, names in {"firmware_image": ("bl31.elf", "bl31-lz4", "bl33.bin", "mcu.bin",
                                           "mcu.elf"),
                        "tfa": ("u-boot.bin", "bl33.bin"),
                        "disk": ('"Image"', "u-boot.elf", "bl33.bin"),
                        "os_boot_files": ('u-boot.elf"', "cache.json"),
                        "uboot_rockchip": ("cache.json",)}.items():
        assert [n for n in names if n in text[part]] == [], part
    # A part module imports the shared helpers, never another registered part's module
    # (os_root still takes the kernel package's pin from the kernel part: see the report).
    part_modules = {parts.REGISTRY.target(n).split(":")[0].rsplit(".", 1)[1]
                    for n in parts.REGISTRY.names()}
    got = {p.stem: _imports(p) & part_modules - {p.stem} for p in PARTS.glob("*.py")
           if p.stem in part_modules}
    assert {m: sorted(i) for m, i in got.items() if i} == {"os_root": ["kernel"]}
    assert "layout" in _imports(PARTS / "disk.py")      # negative control: imports are seen
