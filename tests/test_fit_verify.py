"""U-Boot verifies the firmware FIT before Linux starts, and hands the verified boot package over
(seedfw.parts.fit_verify, fit_verify_part; docs/images-boot.md "Chain of trust").

Fast: the script (partition by GPT name, iminfo before anything is copied, the signature check
when signing), the boot commands that run it, the .env that carries it into U-Boot's default
environment, the control-DT key node against mkimage's own, the overlay decoded with seedfw's
FDT reader, the step's refusal of a package larger than its region.
Slow: rk3588's built U-Boot carries the script (its default environment, read out of
u-boot.itb) and its image the overlay and the package; the same script proven on qemu_arm64 in
QEMU down to the agent's `ok`, and a flipped byte in the FIT's package image stopping the boot
in U-Boot before Linux.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

import builds
from seedfw import boards, build as build_mod, config as config_mod, parts
from seedfw.errors import SeedfwError
from seedfw.images import fdt, gpt, idblock
from seedfw.parts import fit_verify, fit_verify_part, uboot
from seedfw.paths import ROOT
from seedfw.plan import Plan

RK = boards.get("rk3588")
QEMU = boards.get("qemu-aarch64")


def _ctx(board, tmp_path, **values):
    base = {"UBOOT": True, "BUILDROOT": True, "BUILDROOT_ROOTFS_CPIO": True, "KERNEL": True}
    images = tmp_path / "images"
    return types.SimpleNamespace(board=board, outdir=tmp_path, images=images,
                                 values={**base, **values}, progress=lambda m: None,
                                 build_dir=lambda n: tmp_path / "build" / n,
                                 capable=lambda c: c in board.capabilities,
                                 file=lambda role: {"boot-package":
                                                    images / f"{board.name}-boot.pkg"}.get(role))


def _planned(board, tmp_path, fragments=()):
    """The real declarations (every enabled part's Outputs and Places) of a configuration."""
    cfg = config_mod.configure(board, tmp_path / board, fragments)
    ctx = parts.BuildContext(cfg, progress=lambda m: None)
    plan = Plan(ctx.outdir)
    parts.declare(ctx, plan)
    plan.link()
    return plan, ctx


# ---- fast ---------------------------------------------------------------------------------------

def test_the_script_finds_the_partition_by_name_and_verifies_before_it_copies():
    r = RK.region("boot-package")
    text = fit_verify.script(RK, sign=False)
    commands = [c.strip() for c in re.split(r";|&&|\bthen\b", text)]
    # SD (mmc 1) then eMMC (mmc 0), bootstd's boot_targets order, by name: tried in reverse,
    # so the preferred device found is the one that stays set
    assert "if part start mmc 1 firmware seedfw_blk" in commands
    assert commands.index("if part start mmc 0 firmware seedfw_blk") < \
        commands.index("if part start mmc 1 firmware seedfw_blk")
    assert not re.search(r"read \S+ (0x)?\d", text)          # no sector in the script
    order = ["mmc read ${kernel_addr_r} ${seedfw_blk} ${seedfw_cnt}", "iminfo ${kernel_addr_r}",
             f"imxtract ${{kernel_addr_r}} package 0x{r.base:x}", "setenv seedfw_fit verified"]
    at = [commands.index(c) for c in order]
    assert at == sorted(at), list(zip(order, at))
    assert "else echo seedfw: firmware FIT rejected, not booting" in commands
    assert commands[0] == "setenv seedfw_fit rejected"       # a stale "verified" never survives
    assert commands[-1] == "test ${seedfw_fit} = verified"
    assert "fdt checksign" not in text and "(" not in text     # old hush: no parentheses
    # Signing: the configuration's signature, after every hash and before the copy.
    signed = [c.strip() for c in re.split(r";|&&|\bthen\b", fit_verify.script(RK, sign=True))]
    assert signed.index("iminfo ${kernel_addr_r}") < signed.index("fdt checksign") < \
        signed.index(f"imxtract ${{kernel_addr_r}} package 0x{r.base:x}")
    # The same script on QEMU: the virtio disk (scanned first), its own region, nothing else.
    q = fit_verify.script(QEMU, sign=False)
    assert f"imxtract ${{kernel_addr_r}} package 0x{QEMU.region('boot-package').base:x}" in q
    generic = text.replace("mmc", "IF").replace(f"0x{r.base:x}", "ADDR").replace(
        "if part start IF 1 firmware seedfw_blk; then setenv seedfw_dev 1; fi; ", "")
    assert q.replace("virtio", "IF").replace("0x60400000", "ADDR").replace(
        "IF scan; ", "") == generic
    # and the order is the board's own: its environment's boot_targets (tested on the build)


def test_a_board_the_script_cannot_serve_is_one_line():
    bare = types.SimpleNamespace(boot={"storage": "sd-emmc"}, memory=(), dir=Path("board/x"))
    with pytest.raises(SeedfwError) as err:
        fit_verify.script(bare, sign=False)
    assert str(err.value) == ("board/x/board.yaml: memory: no memory region 'boot-package' (where "
                              "U-Boot hands the verified boot package to the OS)")
    flash = types.SimpleNamespace(boot={"storage": "flash"}, memory=(), dir=Path("board/x"))
    with pytest.raises(SeedfwError) as err:
        fit_verify.script(flash, sign=False)
    assert str(err.value) == ("board/x/board.yaml: boot.storage: U-Boot cannot verify the "
                              "firmware FIT from storage 'flash'")


def test_both_boot_commands_run_the_verify_step_first(tmp_path):
    part = uboot.UbootPart()
    rk = part.bootcmd(_ctx(RK, tmp_path))
    assert rk == "run seedfw_verify; if test ${seedfw_fit} = verified; then bootflow scan -lb; fi"
    q = part.bootcmd(_ctx(QEMU, tmp_path))
    assert q.startswith("run seedfw_verify; if test ${seedfw_fit} = verified && imxtract "
                        "${kernel_addr_r} payload 0x60000000; then ")
    assert part.verify_signature(_ctx(RK, tmp_path, IMAGE_SIGN=True))
    assert not part.verify_signature(_ctx(QEMU, tmp_path, IMAGE_SIGN=True))   # QEMU's own DT
    # Negative control: the same board without a "boot-package" region keeps U-Boot's own
    # boot command and gets no seedfw_verify (board data decides, not the board's name).
    bare = _without_region(tmp_path)
    assert bare.name == "rk3588" and part.verifies(_ctx(RK, tmp_path))
    assert not part.verifies(_ctx(bare, tmp_path)) and part.bootcmd(_ctx(bare, tmp_path)) is None


def _without_region(tmp_path):
    dst = tmp_path / "board" / "rk3588"
    shutil.copytree(ROOT / "board" / "rk3588", dst)
    text = (dst / "board.yaml").read_text()
    line = "  - {name: boot-package, base: 0x7e000000, size: 0x00800000}\n"
    assert line in text
    (dst / "board.yaml").write_text(text.replace(line, ""))
    return boards.load_file(dst / "board.yaml")


def test_the_env_file_keeps_the_boards_own_environment(tmp_path):
    tree = tmp_path / "src"
    own = tree / "board" / "emulation" / "qemu-arm" / "qemu-arm.env"
    own.parent.mkdir(parents=True)
    own.write_text("kernel_addr_r=0x40400000\n")
    build = tmp_path / ".qemu_arm64-0123.building"
    build.mkdir()
    (build / ".config").write_text('CONFIG_SYS_VENDOR="emulation"\nCONFIG_SYS_BOARD="qemu-arm"\n')
    value, found = fit_verify.env_source_file(tree, build, build / "seedfw")
    assert value == "../../../../.qemu_arm64-0123.building/seedfw" and found == own
    assert (own.parent / f"{value}.env").resolve() == (build / "seedfw.env").resolve()
    text = fit_verify.env_text(QEMU, False, found)
    assert text.splitlines()[0] == f'#include "{own}"'
    assert text.splitlines()[1] == "seedfw_verify=" + fit_verify.script(QEMU, False)
    # A board without its own .env (rock5b-rk3588): nothing to include.
    (build / ".config").write_text('CONFIG_SYS_VENDOR="radxa"\nCONFIG_SYS_BOARD="rock5b-rk3588"\n')
    assert fit_verify.env_source_file(tree, build, build / "seedfw")[1] is None
    assert not fit_verify.env_text(RK, False, None).startswith("#include")


def test_the_control_dt_key_is_the_one_mkimage_writes(tmp_path):
    """pubkey_dtsi computes U-Boot's RSA properties from the certificate; mkimage -K (what
    U-Boot's own docs use) writes them from the private key: the same bytes, `required`."""
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", keys / "dev.key"], check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-batch", "-new", "-x509", "-key", keys / "dev.key",
                    "-out", keys / "dev.crt", "-subj", "/CN=dev"], check=True, capture_output=True)
    values = {"IMAGE_SIGN": True, "IMAGE_SIGN_KEY_DIR": str(keys), "IMAGE_SIGN_KEY_NAME": "dev"}
    ours = tmp_path / "ours.dts"
    ours.write_text("/dts-v1/;\n" + fit_verify.pubkey_dtsi(values))
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", tmp_path / "ours.dtb", ours],
                   check=True)
    (tmp_path / "d.bin").write_bytes(b"x" * 64)
    (tmp_path / "f.its").write_text(
        '/dts-v1/;\n/ {\n\tdescription = "t";\n\t#address-cells = <1>;\n\timages {\n\t\td {\n'
        '\t\t\tdata = /incbin/("d.bin");\n\t\t\ttype = "firmware";\n\t\t\tarch = "arm64";\n'
        '\t\t\tcompression = "none";\n\t\t\thash-1 { algo = "sha256"; };\n\t\t};\n\t};\n'
        '\tconfigurations {\n\t\tdefault = "c";\n\t\tc {\n\t\t\tfirmware = "d";\n'
        '\t\t\tsignature-1 { algo = "sha256,rsa2048"; key-name-hint = "dev"; '
        'sign-images = "firmware"; };\n\t\t};\n\t};\n};\n')
    empty = tmp_path / "theirs.dts"
    empty.write_text("/dts-v1/;\n/ {\n};\n")
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", tmp_path / "theirs.dtb", empty],
                   check=True)
    subprocess.run(["mkimage", "-f", "f.its", "-k", keys, "-K", "theirs.dtb", "-r", "f.itb"],
                   cwd=tmp_path, check=True, capture_output=True)
    mine = fdt.parse((tmp_path / "ours.dtb").read_bytes()).children["signature"].children["key-dev"]
    theirs = fdt.parse((tmp_path / "theirs.dtb").read_bytes()).children["signature"] \
        .children["key-dev"]
    for prop in ("required", "algo", "key-name-hint", "rsa,num-bits", "rsa,n0-inverse",
                 "rsa,exponent", "rsa,modulus", "rsa,r-squared"):
        assert mine.props[prop] == theirs.props[prop], prop
    assert mine.str("required") == "conf"
    # Negative control: no certificate is one line naming the option.
    with pytest.raises(SeedfwError) as err:
        fit_verify.pubkey_dtsi({**values, "IMAGE_SIGN_KEY_NAME": "nope"})
    assert err.value.field == "IMAGE_SIGN_KEY_DIR" and "'nope.crt' not found" in err.value.message


def _reserved(dtbo: bytes) -> tuple[str, list[int], bool]:
    root = fdt.parse(dtbo, "overlay")
    frag = root.children["fragment@0"]
    node = frag.children["__overlay__"].children["reserved-memory"]
    (name, region), = node.children.items()
    cells = [int.from_bytes(region.props["reg"][i:i + 4], "big") for i in range(0, 16, 4)]
    return frag.str("target-path"), [name, (cells[0] << 32) | cells[1], (cells[2] << 32) | cells[3]], \
        "no-map" in region.props


def test_the_overlay_reserves_exactly_the_boards_region(tmp_path):
    src = tmp_path / "o.dts"
    src.write_text(fit_verify.overlay_dts(RK))
    subprocess.run(["dtc", "-q", "-@", "-I", "dts", "-O", "dtb", "-o", tmp_path / "o.dtbo", src],
                   check=True)
    r = RK.region("boot-package")
    assert _reserved((tmp_path / "o.dtbo").read_bytes()) == \
        ("/", [f"seedfw-boot-package@{r.base:x}", r.base, r.size], True)
    # It applies to a DT that has no reserved-memory yet (fdtoverlay, as U-Boot's fdt apply).
    base = tmp_path / "b.dts"
    base.write_text("/dts-v1/;\n/ {\n\t#address-cells = <2>;\n\t#size-cells = <2>;\n};\n")
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", tmp_path / "b.dtb", base], check=True)
    subprocess.run(["fdtoverlay", "-i", tmp_path / "b.dtb", "-o", tmp_path / "a.dtb",
                    tmp_path / "o.dtbo"], check=True)
    applied = fdt.parse((tmp_path / "a.dtb").read_bytes())
    assert f"seedfw-boot-package@{r.base:x}" in applied.children["reserved-memory"].children


def test_a_package_larger_than_its_region_fails_the_step(tmp_path):
    ctx = _ctx(RK, tmp_path)
    ctx.images.mkdir(parents=True)
    r = RK.region("boot-package")
    (ctx.images / "rk3588-boot.pkg").write_bytes(b"\0" * (r.size + 1))
    (step,) = fit_verify_part._steps(ctx)
    with pytest.raises(SeedfwError) as err:
        step.run(types.SimpleNamespace(log=tmp_path / "log", install=lambda files: None))
    assert str(err.value) == ("board/rk3588/board.yaml: memory: the boot package "
                              f"({r.size + 1:,} bytes) does not fit the boot-package region "
                              f"(0x{r.size:x} bytes) U-Boot copies it to")


def _manifest(board, tmp_path, fragments=()):
    """write_manifest over dummy files standing for every declared output."""
    _, ctx = _planned(board, tmp_path, fragments)
    for o in ctx.outputs:
        Path(o.path).parent.mkdir(parents=True, exist_ok=True)
        Path(o.path).write_bytes(b"x")
    return {e["name"]: e for e in build_mod.write_manifest(ctx)["artifacts"]}, ctx


def test_the_manifest_names_what_really_reads_the_firmware_fit(tmp_path):
    got, ctx = _manifest("rk3588", tmp_path)
    fit = got["rk3588.itb"]
    assert fit["placement"]["partition"] == "firmware"
    assert fit["declared"]["read_by"] == (
        "U-Boot seedfw_verify (iminfo: every hash; fdt checksign when signed), then its "
        "package image, copied to RAM, by the OS agent (--mem)")
    # The overlay by role: fit-verify makes it, os-boot-files places it in "boot" (and names
    # it in extlinux.conf), the manifest says who reads it.
    dtbo = got[fit_verify.OVERLAY]
    assert dtbo["roles"] == ["boot-package-overlay"]
    assert dtbo["placement"] == {"storage": "sd-emmc", "offset": None, "partition": "boot",
                                 "load_addr": None, "path": f"/{fit_verify.OVERLAY}"}
    assert dtbo["declared"]["role"] == "dtb-overlay"
    assert dtbo["declared"]["location"] == (f'disk partition "boot" (ext4): /{fit_verify.OVERLAY}'
                                            "; reserves 0x7e000000+0x800000")
    from seedfw.parts import disk, os_boot_files
    assert disk.boot_files(ctx)[fit_verify.OVERLAY] == fit_verify.OVERLAY
    assert f"\tfdtoverlays /{fit_verify.OVERLAY}\n" in os_boot_files.extlinux(ctx, "", "")
    # ... and no second copy of the package in the rootfs (U-Boot hands it over in RAM)
    assert got["rk3588-boot.pkg"]["placement"]["path"] is None
    assert ctx.places("boot-package") == []
    # Negative control: qemu-aarch64 reserves the region in its OS FIT's boot script instead.
    q, qctx = _manifest("qemu-aarch64", tmp_path, [ROOT / "configs" / "buildroot.fragment"])
    assert fit_verify.OVERLAY not in q and qctx.providers("boot-package-overlay") == []


def test_the_overlay_step_runs_after_the_package_and_only_with_the_extlinux_os(tmp_path):
    plan, _ = _planned("rk3588", tmp_path)
    assert "image.pack" in plan.steps["fit-verify.overlay"].deps
    assert "fit-verify.overlay" in plan.steps["disk.image"].deps
    # Negative control: without Buildroot (no extlinux OS) the part is off, and so the boot
    # partition has nothing of it.
    values = config_mod.resolve("rk3588", tmp_path / "r").values
    off = parts.context(RK, tmp_path, {**values, "BUILDROOT": False})
    assert "fit-verify" not in {p.name for p in parts.enabled(off)}
    assert "fit-verify" in {p.name for p in parts.enabled(parts.context(RK, tmp_path, values))}


# ---- slow: rk3588's U-Boot carries it --------------------------------------------------------------

def _default_env(blob: bytes) -> dict[str, str]:
    """U-Boot's compiled-in default environment: the NUL-separated block holding bootcmd=."""
    at = blob.index(b"\0bootcmd=") + 1          # env_default.h: bootcmd, ..., the .env text
    end = blob.index(b"\0\0", at)
    return dict(item.decode().split("=", 1) for item in blob[at:end].split(b"\0"))


@pytest.mark.slow
def test_rk3588_u_boot_carries_the_script_and_its_image_the_overlay(rk3588_build, tmp_path):
    itb = builds.image(rk3588_build, "u-boot.itb").read_bytes()
    _, images = idblock.fit_images(itb)
    env = _default_env(bytes(images["u-boot"]))
    assert env["seedfw_verify"] == fit_verify.script(RK, sign=False)
    assert env["bootcmd"] == fit_verify.bootcmd_extlinux()
    assert env["kernel_addr_r"] == "0x02000000"           # rk3588_common.h's layout kept
    # the devices in the order bootstd boots from (so the FIT checked is the booted disk's)
    targets = [t.removeprefix("mmc") for t in env["boot_targets"].split() if t.startswith("mmc")]
    tried = re.findall(r"if part start mmc (\d) firmware", env["seedfw_verify"])
    assert tried == targets[::-1] == ["0", "1"]
    # The overlay in the image reserves exactly board.yaml's region.
    r = RK.region("boot-package")
    dtbo = builds.image(rk3588_build, fit_verify.OVERLAY).read_bytes()
    assert _reserved(dtbo) == ("/", [f"seedfw-boot-package@{r.base:x}", r.base, r.size], True)
    # ... and sits in the boot partition extlinux.conf names it from.
    disk = builds.image(rk3588_build, "rk3588-disk.img").read_bytes()
    table = gpt.parse(disk)
    boot = table.partition("boot")
    (tmp_path / "boot.ext4").write_bytes(disk[boot.offset:boot.offset + boot.size])
    cat = subprocess.run(["debugfs", "-R", f"cat /{fit_verify.OVERLAY}", tmp_path / "boot.ext4"],
                         capture_output=True, check=True).stdout
    assert cat == dtbo
    conf = builds.image(rk3588_build, "extlinux.conf").read_text()
    assert f"\tfdtoverlays /{fit_verify.OVERLAY}\n" in conf
    # The firmware partition's FIT carries the very package the agent checks.
    fw = table.partition("firmware")
    root, fit_imgs = idblock.fit_images(disk[fw.offset:fw.offset + fw.size])
    assert bytes(fit_imgs["package"]) == builds.image(rk3588_build, "rk3588-boot.pkg").read_bytes()
    assert root.children["images"].children["package"].u32("load") == r.base


# ---- slow: the same script, proven on qemu_arm64 -------------------------------------------------

@pytest.fixture(scope="module")
def qemu_os(tmp_path_factory):
    """qemu-aarch64 with the OS (configs/buildroot.fragment), through the artifact store."""
    return builds.build_board("qemu-aarch64", tmp_path_factory,
                              fragments=(builds.BUILDROOT_FRAGMENT,))


def _os_boot(outdir: Path):
    from seedfw.run import os_boot
    return os_boot.boot(QEMU, outdir, timeout=120, echo=lambda s: None)


@pytest.mark.slow
def test_qemu_u_boot_verifies_the_firmware_fit_and_the_agent_the_same_bytes(qemu_os):
    booted = _os_boot(qemu_os.outdir)
    assert booted.chain and booted.returncode == 0
    text = "\n".join(booted.lines)
    order = ["U-Boot 2025.01-seedfw", "seedfw: firmware FIT from virtio partition firmware",
             "   Hash(es) for Image 1 (package): sha256+ ",
             "seedfw: firmware FIT verified, every hash checked, boot package at 0x60400000",
             "seedfw: OS FIT verified, running its boot script", "Starting kernel ...",
             "agent: boot package at 0x60400000 (4194304 bytes reserved)", "agent: ok"]
    positions = [text.find(line) for line in order]
    assert -1 not in positions and positions == sorted(positions), list(zip(order, positions))


@pytest.mark.slow
def test_a_flipped_byte_in_the_package_image_stops_the_boot_in_u_boot(qemu_os, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(qemu_os.outdir / "images", out / "images")
    shutil.copy(qemu_os.outdir / "manifest.json", out)       # what QEMU loads (seedfw.run.qemu)
    disk = out / "images" / "qemu-aarch64-disk.img"
    data = bytearray(disk.read_bytes())
    fw = gpt.parse(bytes(data)).partition("firmware")
    fit = bytes(data[fw.offset:fw.offset + fw.size])
    package = bytes(idblock.fit_images(fit)[1]["package"])
    at = fw.offset + fit.index(package) + len(package) // 2
    data[at] ^= 0x01
    disk.write_bytes(bytes(data))
    with pytest.raises(SeedfwError) as err:
        _os_boot(out)
    assert err.value.message == ("OS boot failed: Bad hash value for 'hash-1' hash node in "
                                 "'package' image node (QEMU exit status 0)")
    assert "seedfw: firmware FIT rejected, not booting" in err.value.tail
    assert not any(line.startswith(("Starting kernel", "agent: ")) or "Linux version" in line
                   for line in err.value.tail)
