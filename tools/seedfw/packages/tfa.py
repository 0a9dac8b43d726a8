"""Trusted Firmware-A, built from Debian's hash-pinned source archive plus our patch series."""

from __future__ import annotations

import re
import shlex

from .. import plan, sources, util
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR
from . import BuildContext, Package

PATCH_DIR = FIRMWARE_DIR / "tf-a" / "patches"

# Why Debian and not an upstream URL: the builders cannot reach upstream, and Debian's orig tarball
# is a "+dfsg" repack (a few non-free files removed), so it is a different file from any upstream
# tarball; there is no upstream URL with these bytes. Sites: Debian's source archive (through the
# machine's own apt sources), then a local mirror directory ($SEEDFW_MIRROR_DIR) for offline use.
# Pins checked 2026-11-30 against `apt-get source --download-only arm-trusted-firmware=2.12.1+dfsg-1`.
VERSIONS = {
    "2.12.1": dict(
        debian_version="2.12.1+dfsg-1",
        files=(
            sources.SourceFile("arm-trusted-firmware_2.12.1+dfsg.orig.tar.xz", 8_078_248,
                               "332c08d71867b7f0dce0bce4cb2abd80f19cb3e0a2de6fe07245c111189d6fb7"),
            # Debian's packaging; pinned so the whole source package is accounted for. Its patches
            # are NOT applied: we build upstream code plus our own series only.
            sources.SourceFile("arm-trusted-firmware_2.12.1+dfsg-1.debian.tar.xz", 14_012,
                               "b553d2ae6149784736979ee1bb6e391a579edc1551ec57618a486b6a1783cbe9"),
        ),
    ),
}

_MAKE_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=.*$")


def source(version: str) -> sources.Source:
    """The pinned TF-A source for a version named by CONFIG_TFA_VERSION."""
    if version not in VERSIONS:
        raise SeedfwError(f"TF-A version '{version}' has no pinned source (pinned: "
                          f"{', '.join(VERSIONS)})", ".config", "CONFIG_TFA_VERSION")
    v = VERSIONS[version]
    return sources.Source(
        name="arm-trusted-firmware", version=version, files=v["files"],
        sites=(sources.DebianSourceSite("arm-trusted-firmware", v["debian_version"]),
               sources.MirrorDirSite()),
        archive=v["files"][0].name,
        patches=tuple(sorted(PATCH_DIR.glob("*.patch"))),
    )


class TfaPackage(Package):
    """TF-A BL1/BL2/BL31 (and FIP) for the board's TF-A platform (board.yaml `tfa`).

    Kconfig symbols read: TFA (enables it), TFA_VERSION, TFA_PLATFORM, TFA_DEBUG, TFA_LOG_LEVEL,
    TFA_SEPARATE_CODE_AND_RODATA, TFA_EXTRA_MAKE_VARS, CROSS_COMPILE_A, BUILD_ID, BUILD_JOBS,
    PAYLOAD (on boards whose targets include `fip`, the payload is packed as BL33).
    Board fields read: tfa.platform (fallback for TFA_PLATFORM), tfa.targets.
    Steps: tfa.fetch (pinned archive into the shared cache) → tfa.extract (unpack + our patches into
    <out>/build/tf-a-src) → tfa.build (make with BUILD_BASE=<out>/build/tf-a).
    Outputs in <out>/images/: bl31.elf always; for PLAT=qemu also bl1.bin, bl2.bin, bl31.bin,
    fip.bin, qemu_fw.bios (and bl1.elf, bl2.elf).
    Reproducible: BUILD_STRING is pinned, SOURCE_DATE_EPOCH fixes BUILD_MESSAGE_TIMESTAMP (gcc's
    __DATE__/__TIME__), and -ffile-prefix-map keeps build paths out of debug info and __FILE__.
    """

    name = "tfa"
    symbols = ("TFA", "TFA_VERSION", "TFA_PLATFORM", "TFA_DEBUG", "TFA_LOG_LEVEL",
               "TFA_SEPARATE_CODE_AND_RODATA", "TFA_EXTRA_MAKE_VARS", "CROSS_COMPILE_A",
               "BUILD_ID", "BUILD_JOBS", "PAYLOAD")
    FETCH_VERSION = "1"
    EXTRACT_VERSION = "1"
    BUILD_VERSION = "1"
    ELFS = ("bl1", "bl2", "bl31")
    BINARIES = ("bl1.bin", "bl2.bin", "bl31.bin", "fip.bin", "qemu_fw.bios")

    def enabled(self, values):
        return bool(values.get("TFA"))

    def platform(self, ctx: BuildContext) -> str:
        return ctx.values.get("TFA_PLATFORM") or (ctx.board.tfa or {}).get("platform") or ""

    def targets(self, ctx: BuildContext) -> list[str]:
        return list((ctx.board.tfa or {}).get("targets", ["bl31"]))

    def with_bl33(self, ctx: BuildContext) -> bool:
        return "fip" in self.targets(ctx) and bool(ctx.values.get("PAYLOAD"))

    def artifacts(self, ctx):
        names = ["bl31.elf"]
        if "fip" in self.targets(ctx):
            names += ["bl1.elf", "bl2.elf", *self.BINARIES]
        return [ctx.images / n for n in names]

    def extra_vars(self, ctx: BuildContext) -> list[str]:
        text = ctx.values.get("TFA_EXTRA_MAKE_VARS") or ""
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise SeedfwError(f"cannot split '{text}': {exc}", ctx.outdir / ".config",
                              "CONFIG_TFA_EXTRA_MAKE_VARS") from None
        for w in words:
            if not _MAKE_VAR.match(w):
                raise SeedfwError(f"'{w}' is not a VAR=value pair", ctx.outdir / ".config",
                                  "CONFIG_TFA_EXTRA_MAKE_VARS")
        return words

    def make_vars(self, ctx: BuildContext) -> list[str]:
        """The make variables (without paths: those are added at run time and kept out of stamps)."""
        v = ctx.values
        if not self.platform(ctx):
            raise SeedfwError("no TF-A platform: set CONFIG_TFA_PLATFORM or board.yaml tfa.platform",
                              ctx.outdir / ".config", "CONFIG_TFA_PLATFORM")
        out = [f"CROSS_COMPILE={v['CROSS_COMPILE_A']}", f"PLAT={self.platform(ctx)}",
               f"DEBUG={1 if v.get('TFA_DEBUG') else 0}", f"LOG_LEVEL={v.get('TFA_LOG_LEVEL', 20)}",
               f"BUILD_STRING=seedfw-{ctx.build_id}"]
        if v.get("TFA_SEPARATE_CODE_AND_RODATA"):
            out.append("SEPARATE_CODE_AND_RODATA=1")
        return out + self.extra_vars(ctx)

    def steps(self, ctx):
        src = source(ctx.values.get("TFA_VERSION") or "2.12.1")
        tree = ctx.build_dir("tf-a-src")
        build_base = ctx.build_dir("tf-a")
        cc = ctx.values["CROSS_COMPILE_A"] + "gcc"
        self.make_vars(ctx)                      # bad TFA_EXTRA_MAKE_VARS fails before anything runs

        def fetch_inputs():
            # The cached files' size and mtime: rewriting (corrupting) one re-runs the fetch, which
            # re-verifies it. Hashing 8 MB on every no-op build would cost more than the rest.
            cache = src.cache_dir()
            state = {}
            for f in src.files:
                try:
                    st = (cache / f.name).stat()
                    state[f.name] = [st.st_size, st.st_mtime_ns]
                except FileNotFoundError:
                    state[f.name] = None
            return {"pins": src.pins(), "cache": state}

        def fetch(step):
            sources.fetch(src, log=step.log, progress=lambda m: ctx.progress(f"  tfa: {m}"))

        def extract_inputs():
            return {"pins": src.pins(), "patches": plan.file_hashes(src.patches)}

        def extract(step):
            sources.extract(src, tree, log=step.log, progress=lambda m: ctx.progress(f"  tfa: {m}"))

        def build_inputs():
            return {"make": self.make_vars(ctx), "targets": self.targets(ctx),
                    "symbols": plan.symbols(ctx.values, self.symbols),
                    "toolchain": ctx.toolchain(cc), "source_date_epoch": util.source_date_epoch()}

        def build(step):
            self.build(ctx, tree, build_base, step)

        deps = ("tfa.extract",) + (("payload.build",) if self.with_bl33(ctx) else ())
        return [
            plan.Step("tfa.fetch", fetch, inputs=fetch_inputs, version=self.FETCH_VERSION,
                      package=self.name),
            # Order-only after the fetch: the extract's inputs already are the pins, so a re-fetch
            # of identical (verified) bytes, or another cache directory, does not re-extract.
            plan.Step("tfa.extract", extract, after=("tfa.fetch",), inputs=extract_inputs,
                      version=self.EXTRACT_VERSION, package=self.name,
                      outputs=(tree / "Makefile",)),
            plan.Step("tfa.build", build, deps=deps, inputs=build_inputs, version=self.BUILD_VERSION,
                      package=self.name, outputs=tuple(self.artifacts(ctx))),
        ]

    def build(self, ctx: BuildContext, tree, build_base, step: plan.Step) -> None:
        # TF-A's makefiles do not track command-line variables, so a changed option needs a clean
        # build directory (the stamp only gets us here when something changed).
        self.fresh_dir(build_base)
        prefix_map = f"-ffile-prefix-map={tree}=tf-a -ffile-prefix-map={build_base}=build"
        args = ["make", f"-j{ctx.make_jobs}", f"BUILD_BASE={build_base}", *self.make_vars(ctx),
                f"CFLAGS={prefix_map}"]
        if self.with_bl33(ctx):
            args.append(f"BL33={ctx.images / 'bl33.bin'}")
        args += self.targets(ctx)
        # ASFLAGS through the environment: TF-A appends to it (+=), whereas a command-line value
        # would replace TF-A's own assembler flags.
        env = {"SOURCE_DATE_EPOCH": str(util.source_date_epoch()), "ASFLAGS": prefix_map,
               "LC_ALL": "C"}
        plan.run_command(args, cwd=tree, env=env, log=step.log)
        kind = "debug" if ctx.values.get("TFA_DEBUG") else "release"
        plat_dir = build_base / self.platform(ctx) / kind
        files = {"bl31.elf": plat_dir / "bl31" / "bl31.elf"}
        if "fip" in self.targets(ctx):
            files.update({f"{e}.elf": plat_dir / e / f"{e}.elf" for e in ("bl1", "bl2")})
            files.update({n: plat_dir / n for n in self.BINARIES})
        self.install(step, files, ctx.images)


def patch_series() -> list[str]:
    """Names of our TF-A patches, in the order they are applied (for reports)."""
    return [p.name for p in sorted(PATCH_DIR.glob("*.patch"))]

