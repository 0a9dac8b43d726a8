"""Buildroot driven by seedfw (tools/seedfw/buildroot, packages/buildroot.py, packages/kernel.py).

One real Buildroot build per session (`br_build`, qemu-aarch64 + configs/buildroot.fragment: a
cold build is ~4 minutes on 2 cores; the relocated toolchain and host tar come from the seedfw
cache after the first run on a machine). Fast tests use the pinned tree only (from the mirror).
The bad-input corpus has the one-line errors: tests/bad_inputs/buildroot-*.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cli import invoke
from seedfw import boards
from seedfw import build as build_mod
from seedfw.run import os_boot as osboot
from seedfw.buildroot import make, mirror, tree
from seedfw.errors import SeedfwError
from seedfw.parts.buildroot import cpio_entries

ROOT = Path(__file__).resolve().parents[1]
FRAGMENT = ROOT / "configs" / "buildroot.fragment"


def cpio_names(path: Path) -> list[str]:
    out = subprocess.run(["cpio", "-t", "--quiet"], stdin=open(path, "rb"), capture_output=True,
                         check=True)
    return out.stdout.decode().split()


# ---- fast: no Buildroot build ---------------------------------------------------------------

def test_every_debian_orig_is_the_file_buildroot_pins():
    root = tree.ensure()
    for orig in mirror.ORIGS:
        assert mirror.buildroot_hashes(root, orig.package)[orig.br_name] == orig.file.sha256


def test_a_changed_hash_file_refuses_the_orig(tmp_path, monkeypatch):
    root = tree.ensure()
    fake = tmp_path / "tree"
    (fake / "package" / "busybox").mkdir(parents=True)
    text = (root / "package/busybox/busybox.hash").read_text()
    (fake / "package/busybox/busybox.hash").write_text(text.replace("3311dff3", "0000dff3"))
    monkeypatch.setattr(mirror, "ORIGS", mirror.ORIGS[:1])
    with pytest.raises(SeedfwError) as err:
        mirror.fill_primary(fake, None, lambda m: None)
    assert "busybox_1.37.0.orig.tar.bz2 (sha256 3311dff32e74) is not the busybox-1.37.0.tar.bz2 " \
           "Buildroot pins (0000dff32e74)" in str(err.value)


def test_menu_maps_to_a_defconfig_fragment(tmp_path):
    frag = tmp_path / "frag"
    frag.write_text('CONFIG_BUILDROOT=y\nCONFIG_BUILDROOT_PACKAGES="htop"\n'
                    'CONFIG_BUILDROOT_EXTRA_CONFIG="BR2_PACKAGE_BUSYBOX_SHOW_OTHERS=y"\n')
    p = invoke("config", "--board", "qemu-aarch64", "--output", tmp_path / "out", "--fragment", frag)
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "out" / "buildroot.fragment").read_text().splitlines()
    for line in ("BR2_aarch64=y", "BR2_cortex_a57=y", "BR2_TARGET_ROOTFS_CPIO=y",
                 "BR2_REPRODUCIBLE=y",
                 "BR2_PACKAGE_SEEDFW_AGENT=y", "BR2_PACKAGE_HTOP=y",
                 "BR2_PACKAGE_BUSYBOX_SHOW_OTHERS=y", 'BR2_TARGET_GENERIC_GETTY_PORT="ttyAMA0"'):
        assert line in lines
    # Negative control: without the symbol the fragment is not written (and an old one goes).
    p = invoke("config", "--board", "qemu-aarch64", "--output", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "out" / "buildroot.fragment").exists()


def test_rk3588_maps_its_own_cpu_and_console(tmp_path):
    p = invoke("config", "--board", "rk3588", "--output", tmp_path, "--fragment", FRAGMENT)
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "buildroot.fragment").read_text().splitlines()
    assert "BR2_cortex_a76_a55=y" in lines and 'BR2_TARGET_GENERIC_GETTY_PORT="ttyS2"' in lines


def test_a_modified_tree_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDFW_CACHE_DIR", str(tmp_path / "cache"))
    root = tree.ensure(progress=lambda m: None)          # unpacked from the (mirror's) tarball
    tree.check(root)                                     # negative control: pristine passes
    mk = root / "package" / "busybox" / "busybox.mk"
    mk.write_text(mk.read_text() + "# one more line\n")
    with pytest.raises(SeedfwError) as err:
        tree.check(root)
    assert "Buildroot 2025.02.16 tree was modified after it was unpacked from the pinned " \
           "tarball" in err.value.message


def test_progress_reads_buildroot_step_lines(tmp_path):
    log = tmp_path / "log"
    log.write_text("")
    said = []
    with make.Progress(log, said.append) as progress:
        with open(log, "a") as f:
            f.write("\x1b[7m>>> host-skeleton  Extracting\x1b[27m\n"
                    ">>> busybox 1.37.0 Extracting\nCC foo.o\n>>> busybox 1.37.0 Building\n")
    assert said == ["[ 1] host-skeleton", "[ 2] busybox 1.37.0"]
    assert progress.last == ("busybox", "1.37.0", "Building")


def test_a_failing_make_names_the_package_and_keeps_the_tail(tmp_path):
    """make.run against a stand-in tree whose Makefile fails the way Buildroot does."""
    fake = tmp_path / "tree"
    fake.mkdir()
    (fake / "Makefile").write_text(
        "all:\n\t@echo '>>> host-m4 custom Building'\n\t@echo '>>> busybox 1.37.0 Building'\n"
        "\t@echo 'libbb/foo.c:1: error: boom'\n\t@false\n")
    log = tmp_path / "buildroot.log"
    with pytest.raises(SeedfwError) as err:
        make.run(fake, tmp_path / "o", ["all"], log, lambda m: None, {})
    assert err.value.message == "Buildroot failed in package busybox 1.37.0 (step 'Building'); " \
                                "make exited non-zero"
    assert "libbb/foo.c:1: error: boom" in err.value.tail
    assert ">>> busybox 1.37.0 Building" in log.read_text()


def test_override_file_names_every_override():
    text = mirror.override_file_text()
    for ov in mirror.OVERRIDES:
        assert f"{ov.variable} = {ov.srcdir()}" in text
    assert "HOST_PATCHELF_AUTORECONF = YES" in text


def test_cpio_override_is_buildable_and_enables_reproducible():
    """host-cpio comes from Debian bookworm's orig (no byte-identical cpio 2.15 here), so
    BR2_REPRODUCIBLE can be on; the edits seedfw makes to it are listed with the override."""
    cpio = next(o for o in mirror.OVERRIDES if o.package == "cpio")
    assert cpio.describe() == "host-cpio 2.13 instead of 2.15 (cpio_2.13+dfsg.orig.tar.bz2, " \
                              "Debian bookworm orig)"
    text = mirror.override_file_text()
    assert 'HOST_CPIO_CONF_ENV = CFLAGS="$(HOST_CFLAGS) -fcommon"' in text
    assert cpio.edits == (("Makefile.in", "SUBDIRS = doc gnu lib rmt src po tests",
                           "SUBDIRS = gnu lib rmt src po tests"),)


def test_an_override_edit_that_does_not_apply_is_refused(tmp_path, monkeypatch):
    import dataclasses
    root = tree.ensure()
    monkeypatch.setenv("SEEDFW_CACHE_DIR", str(tmp_path / "cache"))
    cpio = next(o for o in mirror.OVERRIDES if o.package == "cpio")
    bad = dataclasses.replace(cpio, edits=(("Makefile.in", "SUBDIRS = nope", "SUBDIRS ="),))
    monkeypatch.setattr(mirror, "OVERRIDES", (bad,))
    with pytest.raises(SeedfwError) as err:
        mirror.prepare_overrides(root, None, lambda m: None)
    assert err.value.message == "cpio_2.13+dfsg.orig.tar.bz2: Makefile.in does not hold " \
                                "'SUBDIRS = nope' exactly once; the edit seedfw makes does not apply"
    assert not bad.srcdir().exists()                     # nothing half-prepared is left
    # Negative control: the real edit applies, and the prepared dir records it.
    monkeypatch.setattr(mirror, "OVERRIDES", (cpio,))
    mirror.prepare_overrides(root, None, lambda m: None)
    assert "SUBDIRS = gnu lib rmt src po tests" in (cpio.srcdir() / "Makefile.in").read_text()
    assert json.loads((cpio.srcdir() / mirror.MARK).read_text())["edits"] == \
        [list(e) for e in cpio.edits]


# ---- the OPP overlay U-Boot applies, and the agent's check of it (no Buildroot build) ------------

def _fdt_to_dir(dtb: Path, dest: Path, node: str = "/") -> None:
    """A /proc/device-tree-like directory of `dtb` (a file-backed stand-in for the kernel's view:
    one dir per node, one file per property holding its raw bytes), made with fdtget."""
    def get(*args):
        return subprocess.run(["fdtget", *args], capture_output=True, text=True,
                              check=True).stdout.split()
    dest.mkdir(parents=True, exist_ok=True)
    for prop in get("-p", str(dtb), node):
        raw = subprocess.run(["fdtget", "-t", "bx", str(dtb), node, prop], capture_output=True,
                             text=True, check=True).stdout.split()
        (dest / prop).write_bytes(bytes(int(b, 16) for b in raw))
    for sub in get("-l", str(dtb), node):
        _fdt_to_dir(dtb, dest / sub, node.rstrip("/") + "/" + sub)


@pytest.fixture(scope="module")
def opp_overlay(tmp_path_factory):
    """The overlay osimage makes from a build's opp.dtb, and QEMU virt's own DT with it applied
    by fdtoverlay (the same operation as U-Boot's `fdt apply`)."""
    from seedfw import dvfs
    from seedfw.dvfs import hints as dvfs_hints
    from seedfw.parts import os_fit as osimage
    work = tmp_path_factory.mktemp("opp-overlay")
    board = boards.get("qemu-aarch64")
    outs = dvfs_hints.build_outputs(board, {"POWER_PROFILE": "balanced"}, work)
    dtbo = osimage.make_overlay(outs["dtb"], work / "opp.dtbo", None)
    base = work / "virt.dtb"
    subprocess.run(["qemu-system-aarch64", "-machine", f"virt,dumpdtb={base}", "-cpu",
                    "cortex-a57", "-nographic", "-nic", "none"], capture_output=True, check=True)
    applied = work / "applied.dtb"
    subprocess.run(["fdtoverlay", "-i", str(base), "-o", str(applied), str(dtbo)], check=True)
    return {"dtb": outs["dtb"], "dtbo": dtbo, "base": base, "applied": applied,
            "table": dvfs.load(board.dvfs_file), "work": work}


def test_opp_overlay_is_a_real_overlay_fdtoverlay_applies(opp_overlay):
    o = opp_overlay
    def fget(*a):
        return subprocess.run(["fdtget", *map(str, a)], capture_output=True, text=True,
                              check=True).stdout.split()
    assert fget("-l", o["dtbo"], "/") == ["fragment@0"]
    assert fget("-t", "s", o["dtbo"], "/fragment@0", "target-path") == ["/"]
    for dom in o["table"].domains:
        node = f"/opp-table-{dom.name}"
        # (fdtoverlay, like U-Boot, adds new subnodes in reverse order: compare as sets)
        assert sorted(fget("-l", o["applied"], node)) == sorted(f"opp-{p.hz}" for p in dom.opps)
        for p in dom.opps:
            assert [int(x) for x in fget("-t", "u", o["applied"], f"{node}/opp-{p.hz}",
                                         "opp-microvolt")] == [p.uv_target, p.uv_min, p.uv_max]
    # QEMU's own nodes are still there (an overlay on "/", not a replacement).
    assert "pl011@9000000" in fget("-l", o["applied"], "/")
    # Negative control: the plain fragment (opp.dtb) is no overlay: fdtoverlay finds no fragment
    # in it and the result has no OPP table.
    subprocess.run(["fdtoverlay", "-i", str(o["base"]), "-o", str(o["work"] / "x.dtb"),
                    str(o["dtb"])], check=True)
    assert not [n for n in fget("-l", o["work"] / "x.dtb", "/") if n.startswith("opp-table")]


@pytest.fixture(scope="module")
def host_agent(tmp_path_factory):
    """firmware/agent built with the host cc (the same sources Buildroot cross-compiles)."""
    agent = ROOT / "firmware" / "agent"
    common, include = ROOT / "firmware" / "common", ROOT / "firmware" / "include"
    exe = tmp_path_factory.mktemp("agent") / "seedfw-agent"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{common}",
                    f"-I{include}", "-o", str(exe), str(agent / "agent.c"),
                    str(agent / "perf_window.c"), str(agent / "models.c"),
                    *(str(common / n) for n in ("pkg_verify.c", "sha256.c", "crc32.c"))],
                   check=True)
    return exe


def _package(tmp_path: Path) -> Path:
    from seedfw import dvfs
    from seedfw.images import package
    from seedfw.images.entries import DvfsEntry
    table = dvfs.load(boards.get("qemu-aarch64").dvfs_file)
    path = tmp_path / "pkg.bin"
    path.write_bytes(package.encode([DvfsEntry("dvfs", dvfs.encode(table, "balanced"))]))
    return path


def test_agent_checks_the_dt_opp_tables_against_the_dvfs_table(opp_overlay, host_agent, tmp_path):
    pkg = _package(tmp_path)
    dt = tmp_path / "device-tree"                    # stand-in for /proc/device-tree
    _fdt_to_dir(opp_overlay["applied"], dt)

    def agent(d):
        p = subprocess.run([str(host_agent), "--file", str(pkg), "--dt-opp", str(d)],
                           capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()

    rc, lines = agent(dt)
    assert rc == 0 and lines[-1] == "agent: ok", lines
    assert "agent: dt opp: cpu 4 opps match dvfs table" in lines
    assert "agent: dt opp: npu 3 opps match dvfs table" in lines
    # Negative controls: one voltage changed; the DT without the overlay.
    (dt / "opp-table-cpu" / "opp-500000000" / "opp-microvolt").write_bytes(
        bytes.fromhex("000aae61" "000aae60" "0010c8e0"))
    rc, lines = agent(dt)
    assert rc == 1 and lines[-1] == "agent: FAILED, 1 errors"
    assert "agent: dt opp: cpu mismatch: opp-500000000 opp-microvolt is not " \
           "<700000 700000 1100000>" in lines
    assert "agent: dt opp: npu 3 opps match dvfs table" in lines
    bare = tmp_path / "bare"
    _fdt_to_dir(opp_overlay["base"], bare)
    rc, lines = agent(bare)
    assert rc == 1 and lines[-1] == "agent: FAILED, 2 errors"
    assert f"agent: dt opp: cpu mismatch: no {bare}/opp-table-cpu in the device tree" in lines


# ---- one real Buildroot build per session (br_build: tests/conftest.py) ----------------------


@pytest.mark.slow
def test_build_lists_overrides_and_package_progress(br_build):
    result, output = br_build
    assert [r for r in result.records if r["step"] == "buildroot.build"][0]["action"] == "ran"
    for ov in mirror.OVERRIDES:
        assert f"buildroot: override: {ov.describe()}" in output
    assert "buildroot: [ 1] host-skeleton" in output
    assert "] busybox 1.37.0" in output and "] seedfw-agent local" in output
    assert (result.outdir / "logs" / "buildroot.log").read_text().count(">>> busybox 1.37.0") >= 4


@pytest.mark.slow
def test_rootfs_holds_the_agent_and_its_settings(br_build):
    result, _ = br_build
    cpio = result.outdir / "images" / "rootfs.cpio"
    names = cpio_names(cpio)
    assert "usr/bin/seedfw-agent" in names and "etc/init.d/S99seedfw-agent" in names
    assert "bin/busybox" in names
    info = json.loads((result.outdir / "images" / "buildroot.json").read_text())
    assert info["rootfs"]["rootfs.cpio"]["entries"] == len(names) == cpio_entries(cpio)
    assert {o["package"] for o in info["overrides"]} == \
        {"host-m4", "host-libtool", "host-fakeroot", "host-patchelf", "host-cpio"}
    # BR2_REPRODUCIBLE builds rootfs.cpio with host-cpio, i.e. from the override dir.
    assert all(o["built"] for o in info["overrides"]), info["overrides"]
    work = result.outdir / "scratch"
    work.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "usr/bin/seedfw-agent", "etc/default/seedfw-agent"],
                   stdin=open(cpio, "rb"), cwd=work, check=True)
    assert (work / "usr/bin/seedfw-agent").read_bytes()[:4] == b"\x7fELF"
    assert (work / "usr/bin/seedfw-agent").read_bytes()[18] == 183        # EM_AARCH64
    # the board's perf PMU windows (board.yaml perf), then where the boot package is
    assert ('SEEDFW_AGENT_ARGS="--perf armv8_pmuv3/cpu_cycles,inst_retired/CONFIG_ARM_PMUV3 '
            '--perf rockchip_ddr/read-bytes,write-bytes,cycles/CONFIG_DEVFREQ_EVENT_ROCKCHIP_DFI '
            '--mem 0x60400000:0x400000 --dt-opp /proc/device-tree"') in \
        (work / "etc/default/seedfw-agent").read_text()


@pytest.mark.slow
def test_list_defconfigs_shows_the_seedfw_external_tree(br_build):
    result, _ = br_build
    p = invoke("buildroot", "--board", "qemu-aarch64", "--output", result.outdir, "--",
               "list-defconfigs")
    assert p.returncode == 0, p.stderr
    assert 'External configs in "SEEDFW":' in p.stdout
    assert "seedfw_qemu_aarch64_defconfig" in p.stdout.split('External configs in "SEEDFW":')[1]


@pytest.mark.slow
def test_noop_rebuild_runs_no_buildroot_step(br_build):
    result, _ = br_build
    log = result.outdir / "logs" / "buildroot.log"
    before = (log.stat().st_mtime_ns, log.stat().st_size)
    again = build_mod.build("qemu-aarch64", result.outdir, [FRAGMENT])
    br_steps = [r for r in again.records if r["step"].startswith(("buildroot.", "kernel.", "os-"))]
    assert len(br_steps) == 8 and all(r["action"] == "skipped" for r in br_steps), br_steps
    # Buildroot did not even start: its log is as the first build left it. (Other steps may run
    # when someone edits firmware/ during the session; Buildroot's inputs did not change.)
    assert (log.stat().st_mtime_ns, log.stat().st_size) == before


# ---- the OS boots (kernel + initramfs + agent) -------------------------------------------------

def _boot(result, outdir=None, **kw):
    return osboot.boot(boards.get("qemu-aarch64"), outdir or result.outdir, timeout=90,
                       echo=lambda s: None, **kw)


@pytest.mark.slow
def test_os_boots_through_tf_a_and_u_boot(br_build):
    result, _ = br_build
    booted = _boot(result)
    assert booted.chain and booted.returncode == 0
    text = "\n".join(booted.lines)
    order = ["NOTICE:  BL1: Booting BL2", "NOTICE:  BL1: Booting BL31", "U-Boot 2025.01-seedfw",
             "seedfw: firmware FIT verified", "seedfw: OS FIT verified, running its boot script",
             "seedfw: Linux with the boot package at 0x60400000 reserved (no-map)",
             "seedfw: OPP overlay applied to the DT",
             "Starting kernel ...", "Linux version 6.1.0-50-cloud-arm64",
             "agent: boot package at 0x60400000 (4194304 bytes reserved)",
             "agent: model digits sha256 ok", "agent: model digits rknn v6 target rk3588 ok",
             "agent: dt opp: cpu 4 opps match dvfs table",
             "agent: dt opp: npu 3 opps match dvfs table", "agent: ok"]
    positions = [text.find(line) for line in order]
    assert -1 not in positions and positions == sorted(positions), list(zip(order, positions))


@pytest.mark.slow
def test_a_corrupted_rootfs_in_the_os_fit_is_stopped_by_u_boot(br_build, tmp_path):
    result, _ = br_build
    out = tmp_path / "out"
    shutil.copytree(result.outdir / "images", out / "images")
    shutil.copy(result.outdir / "manifest.json", out)    # what QEMU loads (seedfw.run.qemu)
    disk = out / "images" / "qemu-aarch64-disk.img"
    cpio = (result.outdir / "images" / "rootfs.cpio").read_bytes()
    data = bytearray(disk.read_bytes())
    at = data.find(cpio[4096:4160])
    assert at > 0
    data[at] ^= 0x01
    disk.write_bytes(bytes(data))
    with pytest.raises(SeedfwError) as err:
        _boot(result, out)
    assert err.value.message == "OS boot failed: Bad hash value for 'hash-1' hash node in " \
                                "'ramdisk' image node (QEMU exit status 0)"
    assert "seedfw: OS FIT rejected, not booting it" in err.value.tail
    assert not any(line.startswith("agent: ") for line in err.value.tail)


@pytest.mark.slow
def test_a_tampered_opp_overlay_is_reported_by_the_agent(br_build, tmp_path):
    """Negative control of the overlay check through the whole chain: the OS FIT rebuilt with
    one OPP voltage changed in its overlay (so every FIT hash is valid again, U-Boot accepts it
    and applies it); the agent finds the DT differs from the DVFS table and the boot fails."""
    result, _ = br_build
    out = tmp_path / "out"
    shutil.copytree(result.outdir / "images", out / "images")
    shutil.copy(result.outdir / "manifest.json", out)    # what QEMU loads (seedfw.run.qemu)
    fit = tmp_path / "fit"
    shutil.copytree(result.outdir / "build" / "os-fit", fit)
    name = "qemu-aarch64-os.itb"
    original = (fit / name).read_bytes()
    dtbo = bytearray((fit / "opp.dtbo").read_bytes())
    cells = bytes.fromhex("000aae60000aae600010c8e0")          # opp-500000000: 700000 uV
    assert dtbo.count(cells) == 1
    at = dtbo.find(cells)
    dtbo[at:at + 4] = bytes.fromhex("000aae61")               # 700001 uV
    (fit / "opp.dtbo").write_bytes(bytes(dtbo))
    subprocess.run(["mkimage", "-f", "os.its", name], cwd=fit, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": str(util_epoch())})
    tampered = (fit / name).read_bytes()
    assert len(tampered) == len(original) and tampered != original
    disk = out / "images" / "qemu-aarch64-disk.img"
    data = disk.read_bytes()
    at = data.find(original)
    assert at > 0
    disk.write_bytes(data[:at] + tampered + data[at + len(original):])
    with pytest.raises(SeedfwError) as err:
        _boot(result, out)
    assert err.value.message == "OS boot failed: agent: dt opp: cpu mismatch: opp-500000000 " \
                                "opp-microvolt is not <700000 700000 1100000> (QEMU exit status 0)"
    assert "agent: FAILED, 1 errors" in err.value.tail


@pytest.mark.slow
def test_os_boots_and_the_agent_reports(br_build):
    result, _ = br_build
    booted = _boot(result, chain=False)       # QEMU loads kernel and initramfs itself
    assert not booted.chain and booted.returncode == 0
    lines = booted.agent_lines()
    assert "agent: boot package at 0x60400000 (4194304 bytes reserved)" in lines
    assert any(line.startswith("agent: dvfs: 2 domains, 7 opps, profile=") and
               line.endswith("crc ok") for line in lines)
    assert "agent: model digits rknn v6 target rk3588 ok" in lines and lines[-1] == "agent: ok"
    # The direct boot applies the same overlay (fdtoverlay on the host), so the check passes.
    assert "agent: dt opp: cpu 4 opps match dvfs table" in lines
    assert any("Linux version 6.1.0-50-cloud-arm64" in line for line in booted.lines)


@pytest.mark.slow
def test_a_corrupted_model_fails_the_boot_with_the_agents_line(br_build, tmp_path):
    result, _ = br_build
    images = tmp_path / "images"
    shutil.copytree(result.outdir / "images", images)
    from seedfw.images import package
    pkg = images / "qemu-aarch64-boot.pkg"
    blob = bytearray(pkg.read_bytes())
    entry = next(e for e in package.decode(bytes(blob)).entries if e.name == "digits")
    blob[entry.offset + entry.size // 2] ^= 0x40
    pkg.write_bytes(bytes(blob))
    with pytest.raises(SeedfwError) as err:
        _boot(result, images=images, chain=False)
    assert "OS boot failed: agent: FAILED, 1 errors (QEMU exit status 0)" in err.value.message
    assert "agent: model digits sha256 BAD" in err.value.tail


@pytest.mark.slow
def test_a_truncated_rootfs_fails_the_boot_with_the_kernels_line(br_build, tmp_path):
    result, _ = br_build
    cpio = tmp_path / "rootfs.cpio"
    data = (result.outdir / "images" / "rootfs.cpio").read_bytes()
    cpio.write_bytes(data[:len(data) // 3])
    with pytest.raises(SeedfwError) as err:
        _boot(result, rootfs=cpio, chain=False)
    assert err.value.message.startswith("OS boot failed: Initramfs unpacking failed:") or \
        err.value.message.startswith("OS boot failed: Kernel panic - not syncing:")
    assert "agent: ok" not in "\n".join(err.value.tail)


# ---- reports and licences ---------------------------------------------------------------------

@pytest.mark.slow
def test_report_has_the_os_section(br_build):
    result, _ = br_build
    report = json.loads((result.outdir / "report" / "report.json").read_text())
    os_ = report["os"]
    cpio = result.outdir / "images" / "rootfs.cpio"
    assert os_["rootfs"]["rootfs.cpio"]["size"] == cpio.stat().st_size
    assert os_["package_sizes"]["busybox"] > 100_000
    assert os_["package_sizes"]["seedfw-agent"] > 1_000
    assert os_["kernel"] == {"package": "linux-image-6.1.0-50-cloud-arm64",
                             "image_size": (result.outdir / "images" / "Image").stat().st_size}
    md = (result.outdir / "report" / "report.md").read_text()
    assert "## OS" in md and "- host-fakeroot 1.29 instead of 1.36: fakeroot_1.29.tar.gz" in md
    page = (result.outdir / "report" / "report.html").read_text()
    os_html = page.split("<h2>OS</h2>")[1].split("<h2>")[0]
    assert f'<tr><td>rootfs.cpio</td><td class="n">{cpio.stat().st_size:,}</td>' \
           f'<td class="n">{os_["rootfs"]["rootfs.cpio"]["entries"]}</td></tr>' in os_html
    busybox, fit = os_["package_sizes"]["busybox"], os_["os_fit"]
    assert f'<tr><td>busybox</td><td class="n">{busybox:,}</td>' in os_html
    assert f'<td>{fit["name"]}</td><td class="n">{fit["size"]:,}</td>' in os_html
    assert "<td>host-cpio</td><td>2.13</td><td>2.15</td>" in os_html


@pytest.mark.slow
def test_legal_bundle_covers_the_whole_firmware(br_build):
    from seedfw.parts import uboot
    result, _ = br_build
    p = invoke("legal", "--board", "qemu-aarch64", "--output", result.outdir)
    assert p.returncode == 0, p.stderr
    legal = result.outdir / "legal"
    assert (legal / "buildroot" / "manifest.csv").is_file()
    orig = uboot.VERSIONS["2025.01"]["files"][0]
    assert util_sha(legal / "seedfw" / "u-boot" / orig.name) == orig.sha256
    sbom = json.loads((legal / "sbom.cdx.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX" and sbom["specVersion"] == "1.6"
    assert (legal / "sbom.cdx.json").read_bytes() == \
        (result.outdir / "sbom" / "sbom.cdx.json").read_bytes()     # the build's own SBOM
    comps = {c["name"]: c for c in sbom["components"]}
    for name in ("trusted-firmware-a", "u-boot", "linux", "busybox", "seedfw-agent"):
        assert name in comps, name
    assert comps["host-fakeroot"]["version"] == "1.29"   # what was built, not Buildroot's pin
    assert any(prop["name"] == "seedfw:override"
               for prop in comps["host-fakeroot"]["properties"])
    assert (legal / "seedfw" / "buildroot-overrides" / "fakeroot_1.29.tar.gz").is_file()
    # Reproducible: the same build gives the same SBOM.
    first = (legal / "sbom.cdx.json").read_bytes()
    assert invoke("legal", "--board", "qemu-aarch64", "--output", result.outdir).returncode == 0
    assert (legal / "sbom.cdx.json").read_bytes() == first


def util_epoch() -> int:
    from seedfw import util
    return util.source_date_epoch()


def util_sha(path: Path) -> str:
    from seedfw import util
    return util.sha256_file(path)


@pytest.mark.slow
def test_a_kernel_pin_that_left_the_archive_fails_clearly(tmp_path, monkeypatch):
    """Debian drops old kernel versions after point releases: one line naming the pin and the way
    to update it (uses the Debian archive through a private apt state; nothing is downloaded)."""
    from seedfw import sources
    from seedfw.parts import kernel
    monkeypatch.setenv("SEEDFW_DL_DIR", str(tmp_path / "dl"))
    monkeypatch.delenv("SEEDFW_MIRROR_DIR", raising=False)
    k = kernel.KERNELS["linux-image-6.1.0-50-cloud-arm64"]
    gone = kernel.KernelDeb(k.package, "6.1.170-1", k.suite, sources.SourceFile(
        f"{k.package}_6.1.170-1_arm64.deb", 1, "0" * 64), k.image)
    with pytest.raises(SeedfwError) as err:
        kernel.fetch(gone, progress=lambda m: None)
    assert err.value.message.startswith(
        "pinned kernel package linux-image-6.1.0-50-cloud-arm64=6.1.170-1 "
        "(linux-image-6.1.0-50-cloud-arm64_6.1.170-1_arm64.deb, sha256 000000000000) is neither "
        "in the mirror nor in the Debian archive any more; put the .deb into "
        "$SEEDFW_MIRROR_DIR/debian/, or pin the archive's current version")
    assert err.value.field == "KERNELS"
