"""Buildroot as plan steps: the OS userspace (rootfs) with our agent, from a pinned Buildroot.

The work is in seedfw.buildroot (tree, toolchain, host tar, mirror, external tree, make); this
module turns it into steps with stamps, so a no-op build runs no Buildroot step at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import plan, sources, util
from ..buildroot import VERSION, external, hosttar, make, mirror, toolchain, tree
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR, ROOT
from .base import BuildContext, Output, Part

AGENT_DIR = FIRMWARE_DIR / "agent"


class BuildrootPart(Part):
    """Buildroot 2025.02.16 → images/rootfs.cpio, images/buildroot.json (the ext4 rootfs is
    made from rootfs.cpio by the disk stage, seedfw.parts.disk, with the host's mke2fs).

    Kconfig symbols read: BUILDROOT (enables it), BUILDROOT_VERSION, BUILDROOT_TARGET_CPU,
    BUILDROOT_CONSOLE, BUILDROOT_ROOTFS_CPIO, BUILDROOT_PACKAGES,
    BUILDROOT_EXTRA_CONFIG, BUILDROOT_AGENT, BUILDROOT_AGENT_POWEROFF, BUILD_JOBS.
    Board fields read: name, memory region "boot-package": where the agent looks (else
    the boot package file the ext4 root carries, seedfw.os_root).
    Steps (the first four prepare things shared by every output dir, in the seedfw cache):
      buildroot.tree       pinned tarball → unpacked tree (seedfw.buildroot.tree)
      buildroot.hosttar    tar 1.35 from Debian source (Buildroot needs >= 1.35)
      buildroot.toolchain  Debian's cross gcc 12 relocated as an external custom toolchain
      buildroot.mirror     Debian origs into Buildroot's primary site; override source dirs
      buildroot.external   the BR2_EXTERNAL tree (name SEEDFW) in <out>/build/buildroot-external
      buildroot.build      defconfig + make in <out>/build/buildroot (log: logs/buildroot.log)
    """

    name = "buildroot"
    symbols = ("BUILDROOT", "BUILDROOT_VERSION", "BUILDROOT_TARGET_CPU", "BUILDROOT_CONSOLE",
               "BUILDROOT_ROOTFS_CPIO",
               "BUILDROOT_PACKAGES", "BUILDROOT_EXTRA_CONFIG", "BUILDROOT_AGENT",
               "BUILDROOT_AGENT_POWEROFF", "BUILD_JOBS")
    BUILD_VERSION = "3"          # 3: per-run package timings moved to logs/; 2: package_sizes

    def check_config(self, cfg):
        """The Buildroot menu's fragment, every symbol checked against the pinned tree (bad
        symbols fail before anything is written)."""
        from ..buildroot import external
        return external.checked_fragment(cfg)

    def write_config(self, cfg, checked):
        """<out>/buildroot.fragment (removed when Buildroot is off)."""
        from ..buildroot import external
        external.write_fragment(cfg, checked)

    def check_legal(self, ctx):
        if not (self.output(ctx) / ".config").is_file():
            raise SeedfwError("no Buildroot output yet (enable CONFIG_BUILDROOT and run 'invoke "
                              f"build --board {ctx.board.name}')", self.output(ctx))

    def legal(self, ctx, dest, log, say):
        """Buildroot's legal-info (into dest/buildroot/) and the sources of the host packages
        built from override dirs (dest/seedfw/buildroot-overrides/: legal-info saves none)."""
        root = tree.ensure()
        tree.check(root)
        say("running Buildroot's legal-info (log: logs/legal.log)")
        make.run(root, self.output(ctx), ["legal-info"], log, lambda m: None, make.environment())
        shutil.copytree(self.output(ctx) / "legal-info", dest / "buildroot", symlinks=False)
        d = dest / "seedfw" / "buildroot-overrides"
        d.mkdir(parents=True)
        for ov in mirror.OVERRIDES:
            got = sources.fetch(ov.source(), progress=lambda m: None)[ov.file.name]
            shutil.copyfile(got, d / ov.file.name)
        # seedfw.sbom.legal cross-checks these manifests against the SBOM's components.

    def sbom(self, ctx):
        """Every package of Buildroot's `make show-info` (target: in the image; host: builds it;
        seedfw.sbom.buildroot_info), Buildroot itself and the relocated Debian cross toolchain
        (build scope), and the C library/compiler runtime it copies into the rootfs."""
        from ..buildroot import sbom as buildroot_info
        from ..sbom import model
        packages = buildroot_info.show_info(ctx, self.output(ctx))
        got = sources.fetch(tree.source(), progress=lambda m: None)
        tarball = got[tree.TARBALL.name]
        comps, notes = buildroot_info.components(packages, tarball)
        vers = toolchain.versions()
        gcc = vers[f"gcc-{toolchain.GCC_MAJOR}-{toolchain.TUPLE}"]
        tdir = toolchain.toolchain_dir(vers)
        # Installed Debian packages have no archive here: the files themselves are hashed (the
        # compiler that ran, the C library Buildroot copied into the rootfs).
        gcc_bin = tdir / "bin" / f"{toolchain.TUPLE}-gcc-{toolchain.GCC_MAJOR}"
        libc_so = tdir / toolchain.TUPLE / "lib" / "libc.so.6"
        libc = vers["libc6-arm64-cross"]
        comps += [
            self.component("buildroot", VERSION, "GPL-2.0-or-later", [tarball], "application",
                           ref="tool:buildroot", scope="build", supplier="Buildroot",
                           cpe=f"cpe:2.3:a:buildroot:buildroot:{VERSION}:*:*:*:*:*:*:*",
                           properties={"buildroot:commit": tree.COMMIT},
                           note="the build system that built the rootfs"),
            self.component(f"gcc-{toolchain.GCC_MAJOR}-{toolchain.TUPLE}", gcc,
                           "GPL-3.0-or-later WITH GCC-exception-3.1", [], "application",
                           ref="tool:buildroot-toolchain", scope="build", supplier="Debian",
                           purl=model.purl("deb", f"gcc-{toolchain.GCC_MAJOR}-{toolchain.TUPLE}",
                                           gcc, namespace="debian"),
                           cpe=model.cpe23("gcc", gcc.split("-")[0]),
                           properties={f"debian:{k}": v for k, v in sorted(vers.items())},
                           hashes=model.file_hashes(gcc_bin) if gcc_bin.is_file() else {},
                           filename=gcc_bin.name,
                           note="Debian's cross toolchain, relocated for Buildroot's external "
                                "toolchain"),
            self.component("glibc", libc.split("-")[0], "LGPL-2.1-or-later", [], "library",
                           ref="buildroot:toolchain-runtime", supplier="Debian",
                           purl=model.purl("deb", "libc6-arm64-cross", libc, namespace="debian"),
                           cpe=model.cpe23("glibc", libc.split("-")[0]),
                           depends=["tool:buildroot-toolchain"],
                           hashes=model.file_hashes(libc_so) if libc_so.is_file() else {},
                           filename=libc_so.name,
                           note="C library and compiler runtime Buildroot copied into the rootfs "
                                "from the relocated Debian cross toolchain (sources: Debian's "
                                "glibc and gcc-12 source packages)")]
        for c in comps:
            if c.name == "seedfw-agent":
                c.hashes = model.tree_hashes(FIRMWARE_DIR / "agent")
                c.filename = "seedfw-agent (firmware/agent)"
        if notes:
            comps[0].properties["seedfw:sbom-note"] = "; ".join(notes)
        return comps

    provides = ("rootfs-cpio", "initrd", "buildroot-info")
    when = "BUILDROOT=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("BUILDROOT"))

    @staticmethod
    def output(ctx: BuildContext) -> Path:
        """Buildroot's O= directory."""
        return ctx.build_dir("buildroot")

    @staticmethod
    def external_dir(ctx: BuildContext) -> Path:
        return ctx.build_dir("buildroot-external")

    def rootfs_names(self, ctx) -> list[str]:
        names = []
        if ctx.values.get("BUILDROOT_ROOTFS_CPIO"):
            names.append("rootfs.cpio")
        return names

    def outputs(self, ctx):
        # The initramfs reaches the board inside the OS FIT or the boot partition (declared by
        # the stage that puts it there, which overrides this); QEMU's direct OS boot loads it.
        # It is the "initrd" unless the ext4 root's small initramfs is (OS_ROOT_EXT4).
        initrd = () if ctx.values.get("OS_ROOT_EXT4") else ("initrd",)
        return [Output(ctx.images / n, "buildroot.build", ("rootfs-cpio",) + initrd,
                       kind="initramfs", read_by="Linux (from U-Boot, or QEMU -initrd)",
                       location="inside the OS image", at_boot=False, qemu="initrd",
                       qemu_modes=("os",)) for n in self.rootfs_names(ctx)] + \
            [Output(ctx.images / "buildroot.json", "buildroot.build", ("buildroot-info",))]

    def steps(self, ctx):
        say = lambda m: ctx.progress(f"  buildroot: {m}")      # noqa: E731
        external.fragment(ctx.config)          # a bad value fails before anything runs
        ext = self.external_dir(ctx)
        ext_files = lambda: external.files(ctx.config, toolchain.toolchain_dir(), ext)  # noqa

        def build_inputs():
            # The generated files name the checkout (the agent's SITE) and the user's caches by
            # absolute path: this key says "<tree>" and "~" instead, so a second checkout or a
            # CI runner's clean clone restores Buildroot from the artifact store rather than
            # compiling it again (the trees behind those paths are hashed on their own: "agent",
            # the pinned toolchain and overrides named in the files). For the same reason the
            # external tree is only ordered before this step (`after`), not a stamp dependency:
            # its own stamp names the paths, since it must be written again when they move.
            # The job count changes how fast, never what, Buildroot builds: not an input.
            return {"external": {k: portable(v) for k, v in ext_files().items()},
                    "agent": self.source_hashes(AGENT_DIR), "rootfs": self.rootfs_names(ctx)}

        return [
            plan.Step("buildroot.tree", lambda s: tree.ensure(s.log, say), package=self.name,
                      inputs={"version": VERSION, "tarball": tree.TARBALL.sha256},
                      outputs=(tree.tree_dir() / tree.RECORD,)),
            plan.Step("buildroot.hosttar",
                      lambda s: hosttar.prepare(s.log, say, ctx.make_jobs), package=self.name,
                      inputs=hosttar.key_doc, outputs=(hosttar.bin_dir() / "tar",)),
            plan.Step("buildroot.toolchain", lambda s: toolchain.prepare(say), package=self.name,
                      inputs=lambda: {"packages": toolchain.versions(),
                                      "wrapper": toolchain.WRAPPER_VERSION},
                      outputs=(toolchain.toolchain_dir() / toolchain.MARK,)),
            plan.Step("buildroot.mirror", lambda s: self.mirror(s, say, ctx), package=self.name,
                      after=("buildroot.tree",), inputs=lambda: self.mirror_pins(ctx),
                      outputs=tuple([mirror.primary_dir() / o.br_name for o in mirror.ORIGS]
                                    + [o.srcdir() / mirror.MARK for o in mirror.OVERRIDES])),
            plan.Step("buildroot.external", lambda s: external.generate(
                          ctx.config, toolchain.toolchain_dir(), ext), package=self.name,
                      after=("buildroot.toolchain",), inputs=lambda: {"files": ext_files()},
                      # a tree (external.desc is its marker): generated, never restored
                      outputs=(ext / "external.desc",), cache=False),
            plan.Step("buildroot.build", lambda s: self.build(ctx, s, say), package=self.name,
                      after=("buildroot.tree", "buildroot.hosttar", "buildroot.mirror",
                             "buildroot.external"),
                      inputs=build_inputs, version=self.BUILD_VERSION,
                      tools=("tool:buildroot-toolchain",)),
        ]

    def mirror(self, step, say, ctx=None) -> None:
        root = tree.ensure(step.log, say)
        mirror.fill_primary(root, step.log, say)
        mirror.prepare_overrides(root, step.log, say)
        if ctx is not None and ctx.values.get("UPDATE_RAUC"):     # RAUC's sources (seedfw.update)
            from ..buildroot import rauc as update_sources
            update_sources.fill(root, step.log, say)

    @staticmethod
    def mirror_pins(ctx) -> dict:
        pins = mirror.pins()
        if ctx.values.get("UPDATE_RAUC"):
            from ..buildroot import rauc as update_sources
            pins["update"] = update_sources.pins()
        return pins

    # -- the Buildroot run -----------------------------------------------------------------------

    def build(self, ctx: BuildContext, step: plan.Step, say) -> None:
        root = tree.ensure(step.log, say)
        tree.check(root)                      # a modified shared tree is refused
        mirror.check_overrides()
        for ov in mirror.OVERRIDES:
            say(f"override: {ov.describe()}")
        out = self.output(ctx)
        ext = self.external_dir(ctx)
        env = {**make.environment(hosttar.bin_dir()), **make.ccache_environment(ctx, out)}
        defconfig = (ext / "configs" / external.defconfig_name(ctx.board.os_name)).read_text()
        incremental = self._prepare_output(out, defconfig, say)
        make.run(root, out, [f"BR2_EXTERNAL={ext}", external.defconfig_name(ctx.board.os_name)],
                 step.log, say, env)
        self._check_stuck(ctx, out)
        # What the dir is configured for, recorded now: a failed build is retried incrementally.
        util.write_text(out / ".seedfw-defconfig", defconfig)
        if incremental and ctx.values.get("BUILDROOT_AGENT"):
            # A local-site package is copied from firmware/ only when its build dir is made:
            # drop it so the agent's current sources are built (seconds).
            make.run(root, out, ["seedfw-agent-dirclean"], step.log, say, env)
        say(f"building in {out} (log: {step.log}); a cold build takes about 4 minutes, "
            "about 2.5 with a warm ccache (docs/ccache.md)")
        progress = make.run(root, out, [f"BR2_JLEVEL={ctx.make_jobs}"], step.log, say, env)
        say(progress.summary())
        files = {}
        for name in self.rootfs_names(ctx):
            built = out / "images" / name
            if not built.is_file():
                raise SeedfwError("Buildroot finished without this image", built)
            files[name] = built
        info = self.info(ctx, out, progress, files)
        # What this run's make built, with seconds, is a record of the run (an incremental make
        # lists one package, a cold one 23), not of the rootfs: a log, beside the others.
        util.write_json(ctx.outdir / "logs" / "buildroot-packages.json",
                        {"packages": info.pop("packages")})
        util.write_json(ctx.build_dir("buildroot-info") / "buildroot.json", info)
        files["buildroot.json"] = ctx.build_dir("buildroot-info") / "buildroot.json"
        for name, entry in info["rootfs"].items():
            say(f"{name}: {entry['size']:,} bytes, {entry.get('entries', '?')} entries")
        self.install(step, files, ctx.images)
        # The SBOM's package list (show-info) is a product of this step, so it travels with the
        # rootfs through the artifact store: a build that restores the rootfs has no Buildroot
        # output to ask, and its SBOM must list the same packages as one that compiled it.
        from ..buildroot import sbom as buildroot_info
        buildroot_info.show_info(ctx, out)
        kept = ctx.build_dir("buildroot-info") / buildroot_info.INFO
        shutil.copyfile(ctx.build_dir("sbom") / buildroot_info.INFO, kept)
        step.install({ctx.build_dir("sbom") / buildroot_info.INFO: kept})

    @staticmethod
    def _prepare_output(out: Path, defconfig: str, say) -> bool:
        """Keep Buildroot's output dir when only packages were added since its last build
        (Buildroot builds those incrementally); anything else — a removed line, another
        toolchain or CPU — needs a clean build. Returns whether the dir was kept."""
        previous = out / ".seedfw-defconfig"
        if not previous.is_file():
            if out.exists():
                shutil.rmtree(out)
            return False
        # Where downloads come from changes no output: not a reason for a clean build.
        where = ("BR2_DL_DIR=", "BR2_PRIMARY_SITE=")
        old = {x for x in previous.read_text().splitlines() if not x.startswith(where)}
        new = {x for x in defconfig.splitlines() if not x.startswith(where)}
        if old <= new and all(line.startswith("BR2_PACKAGE_") for line in new - old):
            return True
        say("the Buildroot configuration changed beyond added packages: clean build")
        shutil.rmtree(out)
        return False

    def _check_stuck(self, ctx, out: Path) -> None:
        """Every line of our fragment must be in Buildroot's .config after its defconfig step
        (an unmet dependency drops a symbol silently)."""
        got = set((out / ".config").read_text().splitlines())
        for line in external.fragment(ctx.config):
            if line.startswith("# ") and line.endswith(" is not set"):
                sym = line[2:-len(" is not set")]
                if any(g.startswith(sym + "=") for g in got):
                    raise SeedfwError(f"'{line}' did not stick in Buildroot's .config",
                                      out / ".config")
            elif line not in got:
                raise SeedfwError(f"'{line}' did not stick in Buildroot's .config (a dependency "
                                  "of it is not met)", out / ".config")

    @staticmethod
    def info(ctx, out: Path, progress, files: dict[str, Path]) -> dict:
        rootfs = {}
        for name, path in files.items():
            entry = {"size": path.stat().st_size, "sha256": util.sha256_file(path)}
            if name.endswith(".cpio"):
                entry["entries"] = cpio_entries(path)
            rootfs[name] = entry
        return {"version": VERSION, "commit": tree.COMMIT,
                "defconfig": external.defconfig_name(ctx.board.os_name),
                "fragment": external.fragment(ctx.config),
                "toolchain": {"packages": toolchain.versions(), "tuple": toolchain.TUPLE},
                "host_tar": hosttar.VERSION,
                "origs": [{"package": o.package, "file": o.br_name, "debian": o.file.name,
                           "sha256": o.file.sha256} for o in mirror.ORIGS],
                "overrides": [dict(o, built=(out / "build" / f"{o['package']}-custom").is_dir())
                              for o in mirror.listing()],
                "packages": [{"name": p[0], "version": p[1], "seconds": p[3]}
                             for p in progress.packages],
                "package_sizes": package_sizes(out),
                "rootfs": rootfs}


def package_sizes(out: Path) -> dict[str, int]:
    """Bytes each package installed in the target, largest first: what Buildroot's graph-size
    computes, from the same build/packages-file-list.txt (graph-size itself needs matplotlib)."""
    sizes: dict[str, int] = {}
    seen: set[str] = set()
    try:
        lines = (out / "build" / "packages-file-list.txt").read_text().splitlines()
    except OSError:
        return {}
    for line in reversed(lines):            # a file installed twice counts for the last owner
        pkg, _, rel = line.partition(",")
        if rel in seen:
            continue
        seen.add(rel)
        path = out / "target" / rel
        if path.is_file() and not path.is_symlink():
            sizes[pkg] = sizes.get(pkg, 0) + path.stat().st_size
    return dict(sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])))


def cpio_entries(path: Path) -> int:
    """Entries of a newc cpio archive (without the trailer), counted from its headers."""
    data = path.read_bytes()
    count, off = 0, 0
    while off + 110 <= len(data) and data[off:off + 6] in (b"070701", b"070702"):
        namesize = int(data[off + 94:off + 102], 16)
        filesize = int(data[off + 54:off + 62], 16)
        name = data[off + 110:off + 110 + namesize - 1]
        if name == b"TRAILER!!!":
            break
        count += 1
        off = (off + 110 + namesize + 3) & ~3
        off = (off + filesize + 3) & ~3
    return count


def describe_info(images: Path) -> dict | None:
    try:
        return json.loads((images / "buildroot.json").read_text())
    except (OSError, ValueError):
        return None


def portable(text: str) -> str:
    """`text` with the checkout's and the home directory's absolute paths as "<tree>" and "~"
    (a stamp input that must not differ between two checkouts of the same tree)."""
    return text.replace(str(ROOT), "<tree>").replace(str(Path.home()), "~")
