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

from ..cache import ccache
from .. import paths, plan, sources, util
from ..sources.debian_pool import DebianPoolSite
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR
from . import fit_verify
from .base import BuildContext, Output, Part
from .layout import OS_FIT_ADDR, dvfs_region

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
    Files read: the board's fragment (board.yaml uboot.fragment, else
    firmware/uboot/<defconfig>.config; every line must stick after `make olddefconfig`) and its
    control-DT include (uboot.dtsi, e.g. firmware/uboot/rk3588-seedfw.dtsi: the DVFS FIT
    loadable and its reserved-memory node, at board.yaml's memory region "dvfs").
    Board capabilities read: spl-fit (SPL loads U-Boot's own FIT: u-boot-spl.elf, and the
    uboot-rockchip part packs the images), fit-bootcmd (seedfw's boot command, `bootcmd`).
    Steps: uboot.fetch (orig + debian.tar.xz, each by its pinned sha256, from the Debian pool or
    $SEEDFW_MIRROR_DIR) → uboot.build (cached compile: <cache>/u-boot/src-… is the patched
    tree, <cache>/u-boot/<defconfig>-<key>/ the build; a cache hit copies only the outputs).
    Outputs (roles): u-boot.elf (u-boot-elf); build/u-boot/cache.json (u-boot-build);
    u-boot.bin (bl33, without spl-fit: TF-A's BL33) or u-boot-spl.elf (u-boot-spl-elf).
    Reproducible: SOURCE_DATE_EPOCH fixes U-Boot's version date, -ffile-prefix-map keeps the
    cache paths out, and the fragment drops the machine-dependent version suffix.
    """

    name = "uboot"
    symbols = ("UBOOT", "UBOOT_VERSION", "UBOOT_DEFCONFIG", "CROSS_COMPILE_A", "BUILD_JOBS")
    FETCH_VERSION = "1"
    BUILD_VERSION = "4"   # 4: seedfw_verify in the default environment

    def sbom(self, ctx):
        src = source(ctx.values["UBOOT_VERSION"])
        files = sources.fetch(src, progress=lambda m: None)
        from ..sbom import model
        debian = files[src.files[1].name]
        out = [self.component("u-boot", src.version, "GPL-2.0-or-later",
                              [files[f.name] for f in src.files], supplier="DENX Software "
                              "Engineering (upstream); Debian (patch series)",
                              purl=model.purl("deb", "u-boot", VERSIONS[src.version]
                                              ["debian_version"], namespace="debian",
                                              arch="source"),
                              patches=debian_patches(debian), patch_origin="Debian",
                              note="upstream orig + Debian's patch series")]
        if self.rockchip(ctx):
            from ..sources import rkbin
            out += rkbin.sbom_components(self)
        return out

    provides = ("bl33", "u-boot-elf", "u-boot-spl-elf", "u-boot-build")
    when = "UBOOT=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("UBOOT"))

    # -- what the build is -------------------------------------------------------------------------

    def defconfig(self, ctx: BuildContext) -> str:
        name = ctx.values.get("UBOOT_DEFCONFIG") or ""
        if not name:
            raise SeedfwError("no U-Boot defconfig for this board", ctx.outdir / ".config",
                              "CONFIG_UBOOT_DEFCONFIG")
        return name

    def rockchip(self, ctx: BuildContext) -> bool:
        """Boards whose SPL loads U-Boot's own FIT (capability spl-fit): binman's Rockchip
        images, the DVFS table as a u-boot.itb loadable, U-Boot's own boot command (bootstd)."""
        return ctx.capable("spl-fit")

    def fragment(self, ctx: BuildContext) -> Path:
        """The board's seedfw fragment (board.yaml uboot.fragment), else
        firmware/uboot/<defconfig>.config."""
        named = ctx.board.uboot.get("fragment")
        path = paths.ROOT / named if named else UBOOT_FIRMWARE / f"{self.defconfig(ctx)}.config"
        if not path.is_file():
            raise SeedfwError(f"no seedfw fragment for U-Boot defconfig '{self.defconfig(ctx)}'",
                              path)
        return path

    def dtsi(self, ctx: BuildContext) -> Path | None:
        """The board's device-tree include for U-Boot's control DT (board.yaml uboot.dtsi)."""
        named = ctx.board.uboot.get("dtsi")
        return paths.ROOT / named if named else None

    def dtsi_text(self, ctx: BuildContext) -> str | None:
        """The generated device-tree include: the DVFS address from board.yaml, then the
        board's dtsi. None for boards without one."""
        if self.dtsi(ctx) is None:
            return None
        region = dvfs_region(ctx.board)
        return (f"#define SEEDFW_DVFS_ADDR 0x{region.base:08x}\n"
                f"#define SEEDFW_DVFS_SIZE 0x{region.size:08x}\n"
                f"#define SEEDFW_DVFS_NODE {region.base:x}\n"
                f'#include "{self.dtsi(ctx)}"\n'
                # seedfw_verify's `fdt checksign` key (seedfw.parts.fit_verify)
                + (fit_verify.pubkey_dtsi(ctx.values) if self.verify_signature(ctx) else ""))

    def verifies(self, ctx: BuildContext) -> bool:
        """Whether U-Boot runs seedfw_verify (seedfw.parts.fit_verify): the board names the
        memory region "boot-package" U-Boot hands the verified package over in (board.yaml;
        a board without it keeps U-Boot's own boot command)."""
        return fit_verify.region(ctx.board) is not None

    def verify_signature(self, ctx: BuildContext) -> bool:
        """Whether seedfw_verify checks the firmware FIT's signature: signing is on and the
        control DT is ours to compile the key into (board.yaml uboot.dtsi; QEMU supplies
        qemu_arm64's DT, so there the hashes are checked, not the signature)."""
        return (fit_verify.signing(ctx.values) and self.dtsi(ctx) is not None
                and self.verifies(ctx))

    def bootcmd(self, ctx: BuildContext) -> str | None:
        """The boot command (CONFIG_BOOTCOMMAND). A board with a "boot-package" region starts
        with `run seedfw_verify` (seedfw.parts.fit_verify: the "firmware" partition read, every
        FIT hash checked, the boot package copied to that region) and goes on only when it
        verified. Capability extlinux: then bootstd (`bootflow scan -lb`, its default command),
        i.e. extlinux.conf; a board without the region keeps U-Boot's own command (None).
        Capability fit-bootcmd (qemu_arm64), addresses from board.yaml: copy the payload where
        TF-A's BL33 runs; then,
        when the disk has a "boot" partition (an OS FIT, seedfw.parts.os_fit), verify it and run
        its boot script, else start the payload. A FIT that fails stops here with U-Boot's own
        hash error.

        Why the OS is found on the disk at boot and not written into this command when the OS is
        built: the command is part of U-Boot's compile key, so switching Buildroot on or off would
        recompile U-Boot (~90 s) for a difference the disk image already carries."""
        if not ctx.capable("fit-bootcmd"):
            return fit_verify.bootcmd_extlinux() if self.verifies(ctx) and \
                ctx.capable("extlinux") else None
        bl33 = ctx.board.region("bl33").base
        os_fit = f"0x{OS_FIT_ADDR:x}"
        # seedfw_verify (seedfw.parts.fit_verify) has read and checked the firmware FIT at
        # ${kernel_addr_r} and copied the boot package out; the payload comes from there too.
        return (f"run {fit_verify.VAR}; if test ${{{fit_verify.FLAG}}} = verified && "
                f"imxtract ${{kernel_addr_r}} payload 0x{bl33:x}; then "
                # An OS FIT is there when the "boot" partition starts with a DT header (FDT magic
                # d00dfeed, read as a little-endian word); an empty partition means no OS.
                "if part start virtio 0 boot os_blk && part size virtio 0 boot os_cnt && "
                f"virtio read {os_fit} ${{os_blk}} 1 && itest.l *{os_fit} == 0xedfe0dd0; then "
                f"if virtio read {os_fit} ${{os_blk}} ${{os_cnt}} && iminfo {os_fit}; then "
                f"echo seedfw: OS FIT verified, running its boot script; source {os_fit}:boot; fi; "
                "echo seedfw: OS FIT rejected, not booting it; poweroff; fi; "
                f"echo seedfw: FIT verified, starting the payload; go 0x{bl33:x}; "
                "fi; "
                "setenv seedfw_os none; poweroff")

    def key_doc(self, ctx: BuildContext) -> dict:
        """Everything the compile depends on (also the uboot.build stamp's inputs)."""
        src = source(ctx.values["UBOOT_VERSION"])
        dtsi = self.dtsi_text(ctx)
        return {"version": self.BUILD_VERSION, "pins": src.pins(), "defconfig": self.defconfig(ctx),
                "fragment": util.sha256_file(self.fragment(ctx)),
                "dtsi": None if dtsi is None else {
                    "generated": dtsi.replace(str(paths.ROOT) + "/", ""),
                    "template": util.sha256_file(self.dtsi(ctx))},
                "bootcmd": self.bootcmd(ctx),
                "verify": fit_verify.script(ctx.board, self.verify_signature(ctx))
                if self.verifies(ctx) else None,
                "cross_compile": ctx.values["CROSS_COMPILE_A"],
                "toolchain": ctx.toolchain(ctx.values["CROSS_COMPILE_A"] + "gcc"),
                "source_date_epoch": util.source_date_epoch()}

    def cache_dir(self, ctx: BuildContext) -> Path:
        key = util.sha256_bytes(json.dumps(self.key_doc(ctx), sort_keys=True).encode())
        return cache_root() / f"{self.defconfig(ctx)}-{key[:16]}"

    # -- declarations --------------------------------------------------------------------------------

    def outputs(self, ctx):
        """u-boot.elf; with SPL's FIT (spl-fit) u-boot-spl.elf (binman's images are the
        uboot-rockchip part's), else u-boot.bin, TF-A's BL33 (inside the FIP of qemu_fw.bios,
        not read from storage itself); and the cached build's description (role u-boot-build:
        JSON {"tree", "build", "key"}; <build>/.config is the configuration U-Boot was built
        with), for the parts that pack or check what was compiled."""
        out = [Output(ctx.images / "u-boot.elf", "uboot.build", ("u-boot-elf",)),
               Output(ctx.build_dir("u-boot") / "cache.json", "uboot.build", ("u-boot-build",),
                      listed=False)]
        if self.rockchip(ctx):
            out.append(Output(ctx.images / "u-boot-spl.elf", "uboot.build", ("u-boot-spl-elf",)))
        else:
            out.append(Output(ctx.images / "u-boot.bin", "uboot.build", ("bl33",), kind="bl33",
                              read_by="TF-A BL2, from the FIP (BL33)", location="qemu_fw.bios",
                              at_boot=False))
        return out

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
            sources.fetch_step(step, src, progress=say)

        def build(step):
            if (self.cache_dir(ctx) / "seedfw-cache.json").is_file():     # compile() reuses it
                step.reused("this machine's compiled U-Boot tree")
            cached = self.compile(ctx, src, step.log, say)
            files = {ctx.images / "u-boot.elf": cached / "u-boot",
                     ctx.build_dir("u-boot") / "cache.json": cached / "seedfw-cache.json"}
            if self.rockchip(ctx):
                files[ctx.images / "u-boot-spl.elf"] = cached / "spl" / "u-boot-spl"
            else:
                files[ctx.images / "u-boot.bin"] = cached / "u-boot.bin"
            step.install(files)

        # The cached build's marker too: a cleaned cache makes the step run (and compile) again.
        outputs = [self.cache_dir(ctx) / "seedfw-cache.json"]
        return [
            plan.Step("uboot.fetch", fetch, inputs=fetch_inputs, version=self.FETCH_VERSION,
                      package=self.name),
            plan.Step("uboot.build", build, after=("uboot.fetch",),
                      inputs=lambda: self.key_doc(ctx), version=self.BUILD_VERSION,
                      package=self.name, outputs=tuple(outputs),
                      tools=self.cross_tools(ctx.values["CROSS_COMPILE_A"])),
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

    def _verify_env(self, ctx, tree: Path, work: Path) -> str:
        """seedfw_verify into the default environment (seedfw.parts.fit_verify): a .env beside
        the build, named by CONFIG_ENV_SOURCE_FILE (the board's own .env included in it)."""
        value, own = fit_verify.env_source_file(tree, work, work / "seedfw")
        util.write_text(work / "seedfw.env", fit_verify.env_text(
            ctx.board, self.verify_signature(ctx), own))
        return f'CONFIG_ENV_SOURCE_FILE="{value}"'

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
        if self.verifies(ctx):
            extra.append(self._verify_env(ctx, tree, work))
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


def debian_patches(debian_tar: Path) -> list[str]:
    """Debian's patch series (debian/patches/series of the pinned, sha256-verified
    debian.tar.xz), in order: the pedigree of the U-Boot component."""
    import tarfile
    with tarfile.open(debian_tar) as tar:
        member = tar.extractfile("debian/patches/series")
        text = member.read(1 << 20).decode("utf-8", "replace") if member else ""
    return [line.split()[0] for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]
