"""U-Boot, built from Debian's hash-pinned source (orig tarball + Debian's patch series).

The compile is cached between output directories: it depends only on the pinned source, the
defconfig, our fragment and device-tree include, the toolchain and SOURCE_DATE_EPOCH — not on
BL31, the DDR blob or the DVFS table, which binman packs afterwards (seedfw.parts.uboot_rockchip) — so
every output directory of the same configuration (the test session's several rk3588 builds, a CI
run after a developer's) reuses one ~90 s compile.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import ccache, paths, plan, sources, util
from ..debian_pool import DebianPoolSite
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR
from .base import BootArtifact, BuildContext, Part

UBOOT_FIRMWARE = FIRMWARE_DIR / "uboot"

# Pins checked 2026-11-30 against trixie's signed Sources index (the orig tarball is byte-identical
# to upstream's release). Debian's patch series is applied: it carries the FIT verification fixes
# (CVE-2024-42040, CVE-2026-46728-1..3) U-Boot's `bootm`/`iminfo` and SPL rely on for us.
VERSIONS = {
    "2025.01": dict(
        debian_version="2025.01-3+deb13u1",
        files=(
            sources.SourceFile("u-boot_2025.01.orig.tar.bz2", 32_890_299,
                               "cdef7d507c93f1bbd9f015ea9bc21fa074268481405501945abc6f854d5b686f"),
            sources.SourceFile("u-boot_2025.01-3+deb13u1.debian.tar.xz", 174_476,
                               "c73a4efe85614af359f0be220e061a0b5c36bb4b3a121ca776dd988444b536f1"),
        ),
    ),
}


def source(version: str) -> sources.Source:
    if version not in VERSIONS:
        raise SeedfwError(f"U-Boot version '{version}' has no pinned source (pinned: "
                          f"{', '.join(VERSIONS)})", ".config", "CONFIG_UBOOT_VERSION")
    v = VERSIONS[version]
    return sources.Source(
        name="u-boot", version=version, files=v["files"],
        sites=(DebianPoolSite("u-boot", v["debian_version"]), sources.MirrorDirSite()),
        archive=v["files"][0].name)


def cache_root() -> Path:
    """Shared U-Boot source trees and compiles (<seedfw cache>/u-boot), reused by every output dir."""
    return paths.cache_dir() / "u-boot"


class UbootPart(Part):
    """U-Boot for the board's U-Boot defconfig (CONFIG_UBOOT_DEFCONFIG) plus our fragment.

    Kconfig symbols read: UBOOT (enables it), UBOOT_VERSION, UBOOT_DEFCONFIG, UBOOT_ROCKCHIP_TPL,
    UBOOT_ALLOW_MISSING_BLOBS, CROSS_COMPILE_A, BUILD_JOBS.
    Files read: firmware/uboot/<defconfig>.config (our fragment; every line must stick after
    `make olddefconfig`), firmware/uboot/rk3588-seedfw.dtsi (rk3588: the DVFS FIT loadable and
    its reserved-memory node, at board.yaml's memory region "dvfs").
    Steps: uboot.fetch (orig + debian.tar.xz, each by its pinned sha256, from the Debian pool or
    $SEEDFW_MIRROR_DIR) → uboot.build (cached compile: <cache>/u-boot/src-… is the patched
    tree, <cache>/u-boot/<defconfig>-<key>/ the build; a cache hit copies only the outputs).
    rk3588 adds uboot.binman (seedfw.parts.uboot_rockchip) after the image stage.
    Outputs in <out>/images/: u-boot.elf (debug ELF); qemu_arm64: u-boot.bin (TF-A's BL33);
    rk3588: u-boot-spl.elf, and from uboot.binman u-boot-rockchip.bin, u-boot-rockchip-spi.bin,
    idbloader.img, u-boot.itb, uboot.json (the blobs used and whether the images are functional).
    Reproducible: SOURCE_DATE_EPOCH fixes U-Boot's version date, -ffile-prefix-map keeps the
    cache paths out, and the fragment drops the machine-dependent version suffix.
    """

    name = "uboot"
    symbols = ("UBOOT", "UBOOT_VERSION", "UBOOT_DEFCONFIG", "CROSS_COMPILE_A", "BUILD_JOBS")
    FETCH_VERSION = "1"
    BUILD_VERSION = "3"

    def sbom(self, ctx):
        src = source(ctx.values["UBOOT_VERSION"])
        files = sources.fetch(src, progress=lambda m: None)
        out = [self.component("u-boot", src.version, {"id": "GPL-2.0-or-later"},
                              [files[f.name] for f in src.files],
                              note="upstream orig + Debian's patch series")]
        if self.rockchip(ctx):
            from . import rkbin
            got = rkbin.fetch(progress=lambda m: None)
            out.append(self.component("rkbin", rkbin.COMMIT,
                                      {"name": "LicenseRef-rkbin (see LICENSE)"},
                                      [got[f.name] for f in rkbin.SOURCE.files],
                                      note="binary-only vendor blobs"))
        return out

    def enabled(self, values):
        return bool(values.get("UBOOT"))

    # -- what the build is -------------------------------------------------------------------------

    def defconfig(self, ctx: BuildContext) -> str:
        name = ctx.values.get("UBOOT_DEFCONFIG") or ""
        if not name:
            raise SeedfwError("no U-Boot defconfig for this board", ctx.outdir / ".config",
                              "CONFIG_UBOOT_DEFCONFIG")
        return name

    def rockchip(self, ctx: BuildContext) -> bool:
        """Boards whose boot ROM is Rockchip's (board.yaml boot.rom): binman's Rockchip images,
        the DVFS table as a u-boot.itb loadable, U-Boot's own boot command (bootstd)."""
        return ctx.board.boot["rom"] == "rockchip"

    def fragment(self, ctx: BuildContext) -> Path:
        path = UBOOT_FIRMWARE / f"{self.defconfig(ctx)}.config"
        if not path.is_file():
            raise SeedfwError(f"no seedfw fragment for U-Boot defconfig '{self.defconfig(ctx)}'",
                              path)
        return path

    def dtsi_text(self, ctx: BuildContext) -> str | None:
        """The generated device-tree include (rk3588): the DVFS address from board.yaml, then
        our dtsi. None for boards without one."""
        if not self.rockchip(ctx):
            return None
        region = dvfs_region(ctx.board)
        return (f"#define SEEDFW_DVFS_ADDR 0x{region.base:08x}\n"
                f"#define SEEDFW_DVFS_SIZE 0x{region.size:08x}\n"
                f"#define SEEDFW_DVFS_NODE {region.base:x}\n"
                f'#include "{UBOOT_FIRMWARE / "rk3588-seedfw.dtsi"}"\n')

    def bootcmd(self, ctx: BuildContext) -> str | None:
        """qemu_arm64's boot script (CONFIG_BOOTCOMMAND), addresses from board.yaml: read the
        "firmware" partition of the virtio disk, verify every FIT hash (iminfo), copy the boot
        package and the payload where the payload expects them (imxtract verifies again); then,
        when the disk has a "boot" partition (an OS FIT, seedfw.parts.os_fit), verify it and run
        its boot script, else start the payload. A FIT that fails stops here with U-Boot's own
        hash error.

        Why the OS is found on the disk at boot and not written into this command when the OS is
        built: the command is part of U-Boot's compile key, so switching Buildroot on or off would
        recompile U-Boot (~90 s) for a difference the disk image already carries."""
        if self.rockchip(ctx):
            return None
        bl33 = ctx.board.region("bl33").base
        pkg = ctx.board.region("boot-package").base
        os_fit = f"0x{OS_FIT_ADDR:x}"
        return ("echo seedfw: firmware FIT from virtio partition firmware; virtio scan; "
                "if part start virtio 0 firmware fw_blk && part size virtio 0 firmware fw_cnt && "
                "virtio read ${kernel_addr_r} ${fw_blk} ${fw_cnt} && iminfo ${kernel_addr_r} && "
                f"imxtract ${{kernel_addr_r}} package 0x{pkg:x} && "
                f"imxtract ${{kernel_addr_r}} payload 0x{bl33:x}; then "
                # An OS FIT is there when the "boot" partition starts with a DT header (FDT magic
                # d00dfeed, read as a little-endian word); an empty partition means no OS.
                "if part start virtio 0 boot os_blk && part size virtio 0 boot os_cnt && "
                f"virtio read {os_fit} ${{os_blk}} 1 && itest.l *{os_fit} == 0xedfe0dd0; then "
                "echo seedfw: firmware FIT verified; "
                f"if virtio read {os_fit} ${{os_blk}} ${{os_cnt}} && iminfo {os_fit}; then "
                f"echo seedfw: OS FIT verified, running its boot script; source {os_fit}:boot; fi; "
                "echo seedfw: OS FIT rejected, not booting it; poweroff; fi; "
                f"echo seedfw: FIT verified, starting the payload; go 0x{bl33:x}; "
                "else echo seedfw: firmware FIT rejected, not starting it; fi; "
                "setenv seedfw_os none; poweroff")

    def key_doc(self, ctx: BuildContext) -> dict:
        """Everything the compile depends on (also the uboot.build stamp's inputs)."""
        src = source(ctx.values["UBOOT_VERSION"])
        dtsi = self.dtsi_text(ctx)
        return {"version": self.BUILD_VERSION, "pins": src.pins(), "defconfig": self.defconfig(ctx),
                "fragment": util.sha256_file(self.fragment(ctx)),
                "dtsi": None if dtsi is None else {
                    "generated": dtsi.replace(str(UBOOT_FIRMWARE), "firmware/uboot"),
                    "template": util.sha256_file(UBOOT_FIRMWARE / "rk3588-seedfw.dtsi")},
                "bootcmd": self.bootcmd(ctx),
                "cross_compile": ctx.values["CROSS_COMPILE_A"],
                "toolchain": ctx.toolchain(ctx.values["CROSS_COMPILE_A"] + "gcc"),
                "source_date_epoch": util.source_date_epoch()}

    def cache_dir(self, ctx: BuildContext) -> Path:
        key = util.sha256_bytes(json.dumps(self.key_doc(ctx), sort_keys=True).encode())
        return cache_root() / f"{self.defconfig(ctx)}-{key[:16]}"

    # -- declarations --------------------------------------------------------------------------------

    def artifacts(self, ctx):
        names = ["u-boot.elf"]
        if self.rockchip(ctx):
            names += ["u-boot-spl.elf", *ROCKCHIP_OUTPUTS, "uboot.json"]
        else:
            names.append("u-boot.bin")
        return [ctx.images / n for n in names]

    def boot_artifacts(self, ctx):
        if not self.rockchip(ctx):
            # inside the FIP of qemu_fw.bios (declared by TF-A), not read from storage itself
            return [BootArtifact("u-boot.bin", "bl33", "TF-A BL2, from the FIP (BL33)",
                                 "qemu_fw.bios", at_boot=False)]
        return [
            # The combined images are idbloader.img + u-boot.itb at their offsets (SD/eMMC or SPI
            # layout): written as a whole, but what the boot chain reads are the two parts
            # declared below, so they are not counted as read at boot (no double count).
            BootArtifact("u-boot-rockchip.bin", "boot", "RK3588 boot ROM (idblock), then SPL",
                         "eMMC/SD sector 64 (32 KiB); its u-boot.itb lands at 8 MiB",
                         at_boot=False),
            BootArtifact("u-boot-rockchip-spi.bin", "boot", "RK3588 boot ROM (idblock), then SPL",
                         "SPI NOR offset 0 (idblock at 0x8000, u-boot.itb at 0x60000)",
                         at_boot=False),
            BootArtifact("idbloader.img", "idbloader", "RK3588 boot ROM",
                         "eMMC/SD sector 64 (alone, with u-boot.itb at sector 16384)"),
            BootArtifact("u-boot.itb", "fit", "U-Boot SPL (verifies every image's sha256)",
                         "eMMC/SD sector 16384 (8 MiB)"),
        ]

    # -- steps ---------------------------------------------------------------------------------------

    def steps(self, ctx):
        src = source(ctx.values["UBOOT_VERSION"])
        self.fragment(ctx)                                   # a missing fragment fails up front
        say = lambda m: ctx.progress(f"  uboot: {m}")       # noqa: E731

        def fetch_inputs():
            state = {}
            for f in src.files:
                try:
                    st = (src.cache_dir() / f.name).stat()
                    state[f.name] = [st.st_size, st.st_mtime_ns]
                except FileNotFoundError:
                    state[f.name] = None
            return {"pins": src.pins(), "cache": state}

        def fetch(step):
            sources.fetch(src, log=step.log, progress=say)

        def build(step):
            cached = self.compile(ctx, src, step.log, say)
            files = {ctx.images / "u-boot.elf": cached / "u-boot",
                     ctx.build_dir("u-boot") / "cache.json": cached / "seedfw-cache.json"}
            if self.rockchip(ctx):
                files[ctx.images / "u-boot-spl.elf"] = cached / "spl" / "u-boot-spl"
            else:
                files[ctx.images / "u-boot.bin"] = cached / "u-boot.bin"
            step.install(files)

        # The cached build's marker too: a cleaned cache makes the step run (and compile) again.
        outputs = [ctx.images / "u-boot.elf", ctx.build_dir("u-boot") / "cache.json",
                   self.cache_dir(ctx) / "seedfw-cache.json",
                   ctx.images / ("u-boot-spl.elf" if self.rockchip(ctx) else "u-boot.bin")]
        return [
            plan.Step("uboot.fetch", fetch, inputs=fetch_inputs, version=self.FETCH_VERSION,
                      package=self.name),
            plan.Step("uboot.build", build, after=("uboot.fetch",),
                      inputs=lambda: self.key_doc(ctx), version=self.BUILD_VERSION,
                      package=self.name, outputs=tuple(outputs)),
        ]

    # -- the cached compile --------------------------------------------------------------------------

    def source_tree(self, src: sources.Source, log, say) -> Path:
        """The orig tarball unpacked with Debian's series applied, shared by every build."""
        files = sources.fetch(src, log=log, progress=say)
        key = util.sha256_bytes(json.dumps(src.pins(), sort_keys=True).encode())[:12]
        tree = cache_root() / f"src-{src.version}-{key}"
        # One lock for the tree: builds of other defconfigs (other boards, other processes) read
        # it, and an unpack must never replace a tree someone is compiling from.
        with util.file_lock(cache_root() / f".{tree.name}.lock", f"the U-Boot source tree {tree}",
                            say=say):
            if not (tree / ".seedfw-complete").is_file():
                self._unpack(src, files, tree, log, say)
        return tree

    def _unpack(self, src, files, tree: Path, log, say) -> None:
        say(f"unpacking {src.archive} and Debian's patch series into {tree}")
        with util.atomic_dir(tree) as tmp:
            plan.run_command(["tar", "-xf", files[src.archive], "--strip-components=1", "-C", tmp],
                             log=log)
            debian = tmp / ".debian"
            debian.mkdir()
            plan.run_command(["tar", "-xf", files[src.files[1].name], "-C", debian], log=log)
            patches = debian / "debian" / "patches"
            series = [line.split()[0] for line in (patches / "series").read_text().splitlines()
                      if line.strip() and not line.startswith("#")]
            for name in series:
                with open(log, "a") as f:
                    f.write(f"=== Debian patch {name} sha256 {util.sha256_file(patches / name)}\n")
                plan.run_command(["patch", "-p1", "--forward", "--batch", "-i", patches / name],
                                 cwd=tmp, log=log)
            say(f"applied Debian's {len(series)} patches")
            (tmp / ".seedfw-complete").write_text("\n".join(series) + "\n")

    def compile(self, ctx: BuildContext, src: sources.Source, log: Path, say) -> Path:
        """The cached build directory for this configuration, compiled when absent."""
        final = self.cache_dir(ctx)
        with util.file_lock(cache_root() / f".{final.name}.lock", f"the U-Boot build {final}",
                            say=say):
            if (final / "seedfw-cache.json").is_file():
                say(f"{self.defconfig(ctx)}: compiled build reused from the cache ({final.name})")
                return final
            tree = self.source_tree(src, log, say)
            # A fixed directory name (not a random temporary one) so that the prefix maps and
            # anything U-Boot records about its build directory are the same on every machine
            # with the same cache layout; renamed to `final` only once complete.
            work = cache_root() / f".{final.name}.building"
            self.fresh_dir(work)
            self._make(ctx, tree, work, log, say)
            util.write_json(work / "seedfw-cache.json",
                            {"tree": str(tree), "build": str(final), "key": self.key_doc(ctx)})
            if final.exists():
                import shutil
                shutil.rmtree(final)
            work.rename(final)
            return final

    def _make(self, ctx, tree: Path, work: Path, log: Path, say) -> None:
        import time
        defconfig = self.defconfig(ctx)
        # ccache: one base_dir over the source tree and the build dir, so another cache dir's
        # compile (another machine, CI) hits the same entries; U-Boot's host tools too.
        env = {"SOURCE_DATE_EPOCH": str(util.source_date_epoch()),
               **ccache.environment(ctx, tree, work)}
        cross = ctx.values["CROSS_COMPILE_A"]
        plan.run_command(["make", "-C", tree, f"O={work}", f"{defconfig}_defconfig"], env=env,
                         log=log)
        fragment = self.fragment(ctx).read_text().splitlines()
        extra = [line for line in fragment if line.startswith(("CONFIG_", "# CONFIG_"))]
        dtsi = self.dtsi_text(ctx)
        if dtsi is not None:
            util.write_text(work / "seedfw.dtsi", dtsi)
            extra.append(f'CONFIG_DEVICE_TREE_INCLUDES="{work / "seedfw.dtsi"}"')
        if self.bootcmd(ctx) is not None:
            extra.append(f'CONFIG_BOOTCOMMAND="{self.bootcmd(ctx)}"')
        with open(work / ".config", "a") as f:
            f.write("\n# seedfw fragment\n" + "\n".join(extra) + "\n")
        plan.run_command(["make", "-C", tree, f"O={work}", "olddefconfig"], env=env, log=log)
        config = (work / ".config").read_text().splitlines()
        for line in extra:
            if line.startswith(("CONFIG_DEVICE_TREE_INCLUDES", "CONFIG_BOOTCOMMAND")):
                continue
            if line not in config:
                raise SeedfwError(f"'{line}' did not stick in U-Boot's .config (a dependency is "
                                  "missing)", self.fragment(ctx))
        started = time.monotonic()
        say(f"compiling U-Boot {defconfig} (-j{ctx.make_jobs}; about 90 s on 2 cores; "
            f"log: {log})")
        # BINMAN_ALLOW_MISSING: the compile's own binman pass has no BL31 / DDR blob / DVFS table
        # (they are not inputs of this cached step); its placeholder images are deleted below and
        # seedfw.parts.uboot_rockchip runs binman again with the real inputs and checks the result.
        # Prefix maps without a trailing slash, so the directories themselves (DWARF's comp_dir)
        # are mapped too, for C (KCFLAGS) and assembler sources (KAFLAGS): no cache path in the
        # debug ELFs either.
        maps = f"-ffile-prefix-map={tree}=u-boot -ffile-prefix-map={work}=build"
        plan.run_command(["make", "-C", tree, f"O={work}", f"-j{ctx.make_jobs}",
                          f"CROSS_COMPILE={cross}", "BINMAN_ALLOW_MISSING=1",
                          f"KCFLAGS={maps}", f"KAFLAGS={maps}"], env=env, log=log)
        for pattern in ("u-boot-rockchip*.bin", "idbloader*.img", "*.itb", "simple-bin*"):
            for p in work.glob(pattern):
                p.unlink()
        say(f"compiled U-Boot {defconfig} in {time.monotonic() - started:.0f} s")


# Where qemu_arm64's boot command reads the OS FIT (seedfw.parts.os_fit unpacks it from there):
# RAM from 0x40000000; the firmware FIT's payload sits at 0x60000000, the boot package at 0x60400000.
OS_FIT_ADDR = 0x48000000

UBOOT_ITB = "u-boot.itb"            # U-Boot's FIT: U-Boot proper, BL31's segments, its DT (binman)
ROCKCHIP_OUTPUTS = ("u-boot-rockchip.bin", "u-boot-rockchip-spi.bin", "idbloader.img", UBOOT_ITB)


def dvfs_region(board):
    """board.yaml memory region "dvfs": where SPL loads the DVFS table (reserved in the DT)."""
    region = next((r for r in board.memory if r.name == "dvfs"), None)
    if region is None:
        raise SeedfwError("no memory region 'dvfs' (where SPL loads the DVFS table)",
                          board.dir / "board.yaml", "memory")
    return region
