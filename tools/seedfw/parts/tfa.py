"""Trusted Firmware-A, built from Debian's hash-pinned source archive plus our patch series."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..cache import ccache
from .. import plan, sources, util
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR
from .base import BuildContext, Output, Part, Placement

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


class TfaPart(Part):
    """TF-A BL1/BL2/BL31 (and FIP) for the board's TF-A platform (board.yaml `tfa`).

    Kconfig symbols read: TFA (enables it), TFA_VERSION, TFA_PLATFORM, TFA_DEBUG, TFA_LOG_LEVEL,
    TFA_SEPARATE_CODE_AND_RODATA, TFA_EXTRA_MAKE_VARS, CROSS_COMPILE_A, BUILD_ID, BUILD_JOBS,
    PAYLOAD, UBOOT (on boards whose targets include `fip`, U-Boot — or without it the payload —
    is packed as BL33).
    Board fields read: tfa.platform (fallback for TFA_PLATFORM), tfa.targets.
    Steps: tfa.fetch (pinned archive into the shared cache) → tfa.extract (unpack + our patches into
    <out>/build/tf-a-src) → tfa.build (make with BUILD_BASE=<out>/build/tf-a).
    With TFA_COMPRESS_RODATA (+ the COMPRESS_* symbols of seedfw.compress.stage) BL31's .rodata is
    stored as an LZ4 container that BL31 expands at its first instruction (our patch 0001):
    tfa.build makes only `bl31` (SEPARATE_CODE_AND_RODATA=1 SEEDFW_LZ4_RODATA=1, and
    SEEDFW_LZ4_DECODER=fast|small from LZ4_DECODER: which decoder variant BL31 links) → tfa.compress
    (seedfw.compress.bl31: flat bl31-lz4.bin on boards with a FIP, load-segment bl31-lz4.elf
    otherwise) → on FIP boards tfa.fip (`make all fip BL31=images/bl31-lz4.bin BL33=…`).
    Outputs in <out>/images/: bl31.elf always (the unmodified ELF, for debugging); for PLAT=qemu
    also bl1.bin, bl2.bin, bl31.bin, fip.bin, qemu_fw.bios (and bl1.elf, bl2.elf); compressed:
    bl31-lz4.bin (FIP boards) or bl31-lz4.elf (what rk3588's FIT carries).
    Reproducible: BUILD_STRING is pinned, SOURCE_DATE_EPOCH fixes BUILD_MESSAGE_TIMESTAMP (gcc's
    __DATE__/__TIME__), and -ffile-prefix-map keeps build paths out of debug info and __FILE__.
    """

    name = "tfa"
    symbols = ("TFA", "TFA_VERSION", "TFA_PLATFORM", "TFA_DEBUG", "TFA_LOG_LEVEL",
               "TFA_SEPARATE_CODE_AND_RODATA", "TFA_EXTRA_MAKE_VARS", "CROSS_COMPILE_A",
               "BUILD_ID", "BUILD_JOBS", "PAYLOAD", "TFA_COMPRESS_RODATA", "COMPRESS_SECTIONS",
               "LZ4_DECODER")
    FETCH_VERSION = "1"
    EXTRACT_VERSION = "1"
    BUILD_VERSION = "2"
    COMPRESS_VERSION = "1"
    ELFS = ("bl1", "bl2", "bl31")
    BINARIES = ("bl1.bin", "bl2.bin", "bl31.bin", "fip.bin", "qemu_fw.bios")

    def sbom(self, ctx):
        src = source(ctx.values["TFA_VERSION"])
        files = sources.fetch(src, progress=lambda m: None)
        return [self.component("trusted-firmware-a", src.version, "BSD-3-Clause",
                               [files[f.name] for f in src.files], supplier="Arm Limited",
                               purl=_sbom_purl(src.version),
                               patches=[p.name for p in src.patches], patch_origin="seedfw",
                               note="Debian +dfsg orig; seedfw patches in firmware/tf-a/patches")]

    provides = ("bl31", "bl31-elf", "bl31-bin", "bl31-packed", "bl1", "bl2", "bl1-elf", "bl2-elf",
                "fip", "bios", "dvfs-hints", "compression-fragment")
    when = "TFA=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("TFA"))

    def platform(self, ctx: BuildContext) -> str:
        return ctx.values.get("TFA_PLATFORM") or (ctx.board.tfa or {}).get("platform") or ""

    def targets(self, ctx: BuildContext) -> list[str]:
        return list((ctx.board.tfa or {}).get("targets", ["bl31"]))

    def with_bl33(self, ctx: BuildContext) -> bool:
        return "fip" in self.targets(ctx) and bool(ctx.values.get("PAYLOAD") or
                                                   ctx.values.get("UBOOT"))

    @staticmethod
    def bl33(ctx: BuildContext) -> Path:
        """What the FIP carries as BL33: the file providing role "bl33" (U-Boot when it is
        built, which then loads the payload from the disk image, else the payload itself)."""
        return ctx.file("bl33")

    def compress(self, ctx: BuildContext) -> bool:
        return bool(ctx.values.get("TFA_COMPRESS_RODATA"))

    def has_fip(self, ctx: BuildContext) -> bool:
        return "fip" in self.targets(ctx)

    def compressed_name(self, ctx: BuildContext) -> str:
        """The compressed BL31 in images/: flat for a FIP (BL2 loads bl31.bin as is), an ELF of
        load segments otherwise (a FIT's split-elf loadables)."""
        return "bl31-lz4.bin" if self.has_fip(ctx) else "bl31-lz4.elf"

    def outputs(self, ctx):
        """bl31.elf always; the BL31 a FIT carries (role "bl31": the ELF, or its compressed
        load segments); on FIP boards BL1, BL2, the FIP and, where QEMU's -bios takes it
        (capability qemu-bios), qemu_fw.bios."""
        fip, packed = self.has_fip(ctx), self.compress(ctx)
        build = "tfa.build"
        last = "tfa.fip" if packed else build          # what makes BL1/BL2/FIP
        elf_roles = ("bl31-elf", "dvfs-hints") + (() if fip or packed else ("bl31",))
        out = [Output(ctx.images / "bl31.elf", build, elf_roles)]
        if fip:
            out += [Output(ctx.images / "bl1.elf", last, ("bl1-elf",)),
                    Output(ctx.images / "bl2.elf", last, ("bl2-elf",)),
                    Output(ctx.images / "bl1.bin", last, ("bl1",)),
                    Output(ctx.images / "bl2.bin", last, ("bl2",)),
                    Output(ctx.images / "bl31.bin", build, ("bl31-bin",))]
            bios = ctx.capable("qemu-bios")
            if bios:
                # `invoke flash` (runner qemu) programs it into the board's secure-flash drive
                out.append(Output(ctx.images / "qemu_fw.bios", last, ("bios",),
                                  carries=("bl1", "bl2", "bl31", "bl33"),
                                  placement=Placement(storage="pflash", offset=0),
                                  kind="bios", read_by="QEMU virt (-bios), BL1 then BL2 from the FIP",
                                  location="secure flash at 0x0 (BL1; FIP at 0x40000)",
                                  flash=("qemu",), qemu="bios"))
            out.append(Output(ctx.images / "fip.bin", last, ("fip",), carries=("bl31", "bl33")))
            if not bios:
                out.append(Output(ctx.images / "qemu_fw.bios", last, ()))
        if packed:
            out.append(Output(ctx.images / self.compressed_name(ctx), "tfa.compress",
                              ("bl31-packed",) if fip else ("bl31",)))
            from ..compress import stage as cstage
            out.append(Output(cstage.fragment_path(ctx.outdir, "tfa"), "tfa.compress",
                              ("compression-fragment",), listed=False))
        return out

    def boot_image(self, ctx: BuildContext) -> str:
        """The file in images/ a board reads at boot that carries BL31: the first declared
        Output carrying role "bl31" (qemu_fw.bios, fip.bin, U-Boot's u-boot.itb, the firmware
        FIT), else the compressed BL31 itself."""
        got = ctx.carrier("bl31")
        return got.name if got is not None else self.compressed_name(ctx)

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
        if v.get("TFA_SEPARATE_CODE_AND_RODATA") or v.get("TFA_COMPRESS_RODATA"):
            out.append("SEPARATE_CODE_AND_RODATA=1")
        if v.get("TFA_COMPRESS_RODATA"):
            out.append("SEEDFW_LZ4_RODATA=1")     # SEEDFW_LZ4_DIR (a path) is added at run time
            out.append(f"SEEDFW_LZ4_DECODER={v.get('LZ4_DECODER') or 'fast'}")  # kconfig choice
        return out + self.extra_vars(ctx)

    def steps(self, ctx):
        src = source(ctx.values["TFA_VERSION"])
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
            sources.fetch_step(step, src, progress=lambda m: ctx.progress(f"  tfa: {m}"))

        def extract_inputs():
            return {"pins": src.pins(), "patches": plan.file_hashes(src.patches)}

        def extract(step):
            sources.extract(src, tree, log=step.log, progress=lambda m: ctx.progress(f"  tfa: {m}"))

        def build_inputs():
            doc = {"make": self.make_vars(ctx), "targets": self.make_targets(ctx),
                   "symbols": plan.symbols(ctx.values, self.symbols),
                   "toolchain": ctx.toolchain(cc), "source_date_epoch": util.source_date_epoch()}
            if self.compress(ctx):      # the decoder BL31 links comes from our tree
                doc["lz4"] = {d: plan.tree_hash(FIRMWARE_DIR / d) for d in LZ4_TREES}
            return doc

        def build(step):
            self.build(ctx, tree, build_base, step)

        # The FIP carries BL33 (U-Boot, or the payload): the step that makes it comes first.
        bl33 = ("bl33",) if self.with_bl33(ctx) else ()
        tools = self.cross_tools(ctx.values["CROSS_COMPILE_A"])
        steps = [
            plan.Step("tfa.fetch", fetch, inputs=fetch_inputs, version=self.FETCH_VERSION,
                      package=self.name),
            # Order-only after the fetch: the extract's inputs already are the pins, so a re-fetch
            # of identical (verified) bytes, or another cache directory, does not re-extract.
            # cache=False: the step's product is the whole source tree, of which the declared
            # output (Makefile) is only the marker; a restore from the artifact store would
            # bring back the marker alone and tfa.build would run make in an empty tree.
            plan.Step("tfa.extract", extract, after=("tfa.fetch",), inputs=extract_inputs,
                      version=self.EXTRACT_VERSION, package=self.name,
                      outputs=(tree / "Makefile",), cache=False),
        ]
        if not self.compress(ctx):
            return steps + [plan.Step("tfa.build", build, deps=("tfa.extract",), needs=bl33,
                                      inputs=build_inputs, version=self.BUILD_VERSION,
                                      package=self.name, tools=tools)]
        from ..compress import stage as cstage
        cstage.settings(ctx.values, ctx.outdir / ".config")       # bad settings fail up front
        packed = ctx.images / self.compressed_name(ctx)
        steps += [
            plan.Step("tfa.build", build, deps=("tfa.extract",), inputs=build_inputs,
                      version=self.BUILD_VERSION, package=self.name, tools=tools),
            plan.Step("tfa.compress", lambda step: self.compress_bl31(ctx, step),
                      deps=("tfa.build",), package=self.name, version=self.COMPRESS_VERSION,
                      inputs=lambda: {"settings": cstage.settings(ctx.values).stamp(),
                                      "symbols": plan.symbols(ctx.values, cstage.SYMBOLS),
                                      "boot_image": self.boot_image(ctx)}),
        ]
        if self.has_fip(ctx):
            steps.append(plan.Step(
                "tfa.fip", lambda step: self.build_fip(ctx, tree, build_base, packed, step),
                deps=("tfa.compress",), needs=bl33, inputs=lambda: {"make": self.make_vars(ctx),
                                                              "targets": self.targets(ctx)},
                version=self.BUILD_VERSION, package=self.name, tools=tools))
        return steps

    def make_targets(self, ctx: BuildContext) -> list[str]:
        """What tfa.build makes: everything, or only BL31 when it is post-processed first."""
        return ["bl31"] if self.compress(ctx) else self.targets(ctx)

    def _make(self, ctx, tree, build_base, extra: list, step) -> Path:
        prefix_map = (f"-ffile-prefix-map={tree}=tf-a -ffile-prefix-map={build_base}=build "
                      f"-ffile-prefix-map={FIRMWARE_DIR}=seedfw")
        args = ["make", f"-j{ctx.make_jobs}", f"BUILD_BASE={build_base}", *self.make_vars(ctx),
                f"CFLAGS={prefix_map}"]
        if self.compress(ctx):
            args.append(f"SEEDFW_LZ4_DIR={FIRMWARE_DIR / 'lz4'}")
        # ASFLAGS through the environment: TF-A appends to it (+=), whereas a command-line value
        # would replace TF-A's own assembler flags.
        env = {"SOURCE_DATE_EPOCH": str(util.source_date_epoch()), "ASFLAGS": prefix_map,
               "LC_ALL": "C",
               **ccache.environment(ctx, tree, build_base, *([FIRMWARE_DIR] if self.compress(ctx)
                                                             else []))}
        plan.run_command(args + extra, cwd=tree, env=env, log=step.log)
        kind = "debug" if ctx.values.get("TFA_DEBUG") else "release"
        return build_base / self.platform(ctx) / kind

    def build(self, ctx: BuildContext, tree, build_base, step: plan.Step) -> None:
        # TF-A's makefiles do not track command-line variables, so a changed option needs a clean
        # build directory (the stamp only gets us here when something changed).
        self.fresh_dir(build_base)
        extra = []
        if self.with_bl33(ctx) and not self.compress(ctx):
            extra.append(f"BL33={self.bl33(ctx)}")
        plat_dir = self._make(ctx, tree, build_base, extra + self.make_targets(ctx), step)
        files = {"bl31.elf": plat_dir / "bl31" / "bl31.elf"}
        if self.has_fip(ctx) and self.compress(ctx):
            files["bl31.bin"] = plat_dir / "bl31.bin"
        elif self.has_fip(ctx):
            files.update({f"{e}.elf": plat_dir / e / f"{e}.elf" for e in ("bl1", "bl2")})
            files.update({n: plat_dir / n for n in self.BINARIES})
        self.install(step, files, ctx.images)

    def build_fip(self, ctx, tree, build_base, packed: Path, step) -> None:
        """BL1, BL2 and the FIP around the post-processed BL31 (BL31= makes TF-A take that image
        instead of building its own). Same BUILD_BASE as tfa.build: BL31's objects stay there."""
        extra = [f"BL31={packed}"]
        if self.with_bl33(ctx):
            extra.append(f"BL33={self.bl33(ctx)}")
        plat_dir = self._make(ctx, tree, build_base, extra + self.targets(ctx), step)
        files = {f"{e}.elf": plat_dir / e / f"{e}.elf" for e in ("bl1", "bl2")}
        files.update({n: plat_dir / n for n in self.BINARIES if n != "bl31.bin"})
        self.install(step, files, ctx.images)

    def compress_bl31(self, ctx: BuildContext, step: plan.Step) -> None:
        """BL31 with its .rodata as an LZ4 container (seedfw.compress.bl31); the dictionary is
        stored only when it pays for its bytes (the verdict goes to the log and the report)."""
        from ..compress import bl31 as bl31_mod
        from ..compress import stage as cstage
        cfg = ctx.outdir / ".config"
        s = cstage.settings(ctx.values, cfg)
        cstage.check_sections(s, (".rodata",), "TF-A BL31", cfg)
        if s.dict_source == "resident":
            # A safety net: Kconfig hides the member (COMPRESS_DICT_RESIDENT depends on
            # !TFA_COMPRESS_RODATA), so only a hand-edited .config gets here.
            raise SeedfwError("BL31 has no resident dictionary (its decoder runs before anything "
                              "else is in memory): choose none, trained or file", cfg,
                              "CONFIG_COMPRESS_DICT_RESIDENT")
        dictionary = s.dictionary()
        work = self.fresh_dir(ctx.build_dir("tf-a-lz4"))
        name = self.compressed_name(ctx)
        if self.has_fip(ctx):
            res = bl31_mod.embed_rodata(ctx.images / "bl31.elf", ctx.images / "bl31.bin",
                                        work / name, s.block_size, s.level, dictionary)
        else:
            res = bl31_mod.embed_rodata_elf(ctx.images / "bl31.elf", work / name, s.block_size,
                                            s.level, dictionary)
        with open(step.log, "a") as f:
            f.write(f"tfa.compress: .rodata {res.rodata_size} B -> container {res.container_size}"
                    f" B at 0x{res.container:x}; {res.section.verdict}; loaded bytes "
                    f"{res.image_size_before} -> {res.image_size_after}\n")
        ctx.progress(f"  tfa: BL31 .rodata {res.rodata_size} -> {res.container_size} B "
                     f"({res.section.verdict}); BL31 {res.image_size_before} -> "
                     f"{res.image_size_after} B"
                     f"{growth_note(res.image_size_before, res.image_size_after, self.has_fip(ctx))}")
        frag = cstage.write_fragment(
            work / "tfa.json", "tfa", "images/bl31.elf", f"images/{name}", self.boot_image(ctx),
            s, dictionary, [res.section],
            {"bl31_bytes": {"before": res.image_size_before, "after": res.image_size_after}})
        step.install({ctx.images / name: work / name,
                      cstage.fragment_path(ctx.outdir, "tfa"): frag})


def growth_note(before: int, after: int, flat: bool) -> str:
    """Why a compressed BL31 that grew is kept, for the build's line. A flat BL31 (a FIP's
    bl31.bin) keeps its zeroed .rodata and gains the container, so it grows; it stays because it
    is the boot-path proof of the decoder (BL31's banner comes out of it). The saving is on
    ELF-loaded BL31s (rk3588), where .rodata leaves the image."""
    if after <= before:
        return ""
    if flat:
        return "; larger: a flat image keeps the zeroed .rodata; kept as the decoder's boot-path proof"
    return "; larger"


# firmware/ trees BL31 compiles in with SEEDFW_LZ4_RODATA=1 (decoder + the container header)
LZ4_TREES = ("lz4", "include")


def patch_series() -> list[str]:
    """Names of our TF-A patches, in the order they are applied (for reports)."""
    return [p.name for p in sorted(PATCH_DIR.glob("*.patch"))]


def _sbom_purl(version: str) -> str:
    # The Debian source package the orig comes from (its +dfsg repack is what was built).
    from ..sbom import model
    return model.purl("deb", "arm-trusted-firmware", VERSIONS[version]["debian_version"],
                      namespace="debian", arch="source")
