"""Rockchip boot images from U-Boot's cached compile (binman), read back and checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..images import idblock
from ..sources import rkbin
from .base import Output, Part, Placement
from .layout import dvfs_region

UBOOT_ITB = "u-boot.itb"            # U-Boot's FIT: U-Boot proper, BL31's segments, its DT (binman)
ROCKCHIP_OUTPUTS = ("u-boot-rockchip.bin", "u-boot-rockchip-spi.bin", "idbloader.img", UBOOT_ITB)
SPI = "u-boot-rockchip-spi.bin"     # binman writes it only for boards that boot from SPI NOR


def outputs_of(ctx) -> tuple[str, ...]:
    """ROCKCHIP_OUTPUTS this board's U-Boot makes: the SPI image with capability spi-nor."""
    return tuple(n for n in ROCKCHIP_OUTPUTS if n != SPI or ctx.capable("spi-nor"))

VERSION = "1"
SYMBOLS = ("UBOOT", "UBOOT_ROCKCHIP_TPL", "UBOOT_ALLOW_MISSING_BLOBS", "TFA_COMPRESS_RODATA")

DOC = """Rockchip boot images (board capability spl-fit): binman packs U-Boot's SPL and proper, the
rkbin DDR init blob, our BL31 and the DVFS table; then every output is read back and checked.

Why binman runs here and not inside U-Boot's make: the compile is cached between output
directories (seedfw.parts.uboot) and must not depend on BL31 or the DVFS table, which change
with every configuration; binman takes ~5 s. It runs from the cached tree into
<out>/build/u-boot-binman/, with the same arguments U-Boot's Makefile gives it, the values read
from the cached build's .config.

Why the checks: binman's exit code says nothing about the result — with a missing blob and
--ignore-missing it exits 0 and writes an image with no RKNS header; with --fake-ext-blobs even
our DVFS table could be replaced by a fake. So the step checks the bytes: the RKNS idblock (its
digests, the DDR blob inside it), u-boot.itb at 0x7f8000 (SD) / 0x60000 (SPI), every FIT hash,
the DVFS image equal to dvfs.bin at its reserved address, BL31's segments equal to the ELF's.

Kconfig symbols read: UBOOT, UBOOT_ROCKCHIP_TPL, UBOOT_ALLOW_MISSING_BLOBS, TFA_COMPRESS_RODATA.
Needs roles: u-boot-build (the cached compile), bl31, dvfs.
Outputs: images/u-boot-rockchip.bin, u-boot-rockchip-spi.bin (capability spi-nor), idbloader.img, u-boot.itb,
uboot.json (blobs used with their sha256; "non_functional": {file: why} for placeholders).
"""


def ddr_blob(ctx, log, say) -> tuple[Path | None, str | None]:
    """(the verified DDR init blob, None) or, when allowed, (None, why it is missing)."""
    cfg = ctx.outdir / ".config"
    allow = bool(ctx.values.get("UBOOT_ALLOW_MISSING_BLOBS"))
    override = ctx.values.get("UBOOT_ROCKCHIP_TPL")
    if override:
        if allow and not Path(override).exists():
            return None, f"DDR init blob {override} does not exist"
        # A file with other bytes is never used, placeholder or not.
        return rkbin.check_override(override, rkbin.DDR, cfg, "CONFIG_UBOOT_ROCKCHIP_TPL"), None
    try:
        return rkbin.fetch(log, say)[rkbin.DDR.name], None
    except SeedfwError as exc:
        if "sha256 mismatch" in exc.message or not allow:
            raise SeedfwError(f"missing external blob rockchip-tpl ({rkbin.DDR.name}): "
                              f"{exc.message} ({rkbin.mirror_note()}; --allow-missing-blobs "
                              "builds a NON-FUNCTIONAL placeholder)", exc.file, exc.field) from None
        return None, f"{rkbin.DDR.name} unavailable: {exc.message}"


def check_up_front(ctx) -> None:
    """A configured DDR blob that is absent or has other bytes fails before anything runs."""
    override = ctx.values.get("UBOOT_ROCKCHIP_TPL")
    if override and not (ctx.values.get("UBOOT_ALLOW_MISSING_BLOBS") and not Path(override).exists()):
        rkbin.check_override(override, rkbin.DDR, ctx.outdir / ".config",
                             "CONFIG_UBOOT_ROCKCHIP_TPL")


def uboot_config(build: Path) -> dict[str, str]:
    """CONFIG_* of the cached U-Boot build (strings unquoted)."""
    out = {}
    for line in (build / ".config").read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            key, value = line.split("=", 1)
            out[key[7:]] = value[1:-1] if value.startswith('"') else value
    return out


def binman_command(tree: Path, build: Path, work: Path, indir: Path, bl31: Path,
                   tpl: Path | None) -> list:
    """The binman call U-Boot's Makefile makes (cmd_binman), for a build in `build`."""
    cfg = uboot_config(build)
    default_dt = cfg.get("DEFAULT_DEVICE_TREE", "")
    of_list = cfg.get("OF_LIST") or default_dt
    arch = "arm64" if cfg.get("ARM64") == "y" else "arm"
    board_dir = tree / "board" / cfg.get("SYS_VENDOR", "") / cfg.get("SYS_BOARD", "")
    cmd = [tree / "tools" / "binman" / "binman", "--toolpath", build / "tools", "build", "-u",
           "-d", build / "u-boot.dtb", "-O", work, "-m", "--allow-missing", "--fake-ext-blobs"]
    if tpl is None:
        cmd.append("--ignore-missing")
    # The output directory is an input too: the SPI image takes u-boot.itb, which the SD image's
    # fit entry has just written there, as a blob by name (U-Boot's make runs binman with -O . -I .).
    cmd += ["-I", work, "-I", build, "-I", tree, "-I", board_dir]
    if cfg.get("OF_UPSTREAM") == "y":
        cmd += ["-I", build / "dts" / "upstream" / "src" / arch]
    cmd += ["-a", f"of-list={of_list}", "-I", indir,
            "-a", f"atf-bl31-path={bl31}", "-a", f"default-dt={default_dt}",
            "-a", f"rockchip-tpl-path={tpl or ''}",
            "-a", f"spl-bss-pad={'' if cfg.get('SPL_SEPARATE_BSS') == 'y' else '1'}",
            "-a", "tpl-bss-pad=1", "-a", "vpl-bss-pad=1",
            "-a", f"spl-dtb={cfg.get('SPL_OF_REAL', '')}",
            "-a", f"of-spl-remove-props={cfg.get('OF_SPL_REMOVE_PROPS', '')}"]
    return cmd


def bl31_segments(path: Path) -> list[tuple[int, bytes]]:
    """(load address, file bytes) of each PT_LOAD segment with content, in file order."""
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [(s["p_paddr"], s.data()) for s in elf.iter_segments()
                if s["p_type"] == "PT_LOAD" and s["p_filesz"]]


def check_outputs(out: Path, tpl: bytes, dvfs: bytes, dvfs_addr: int,
                  segments: list[tuple[int, bytes]], spi_image: bool = True) -> list[str]:
    """Every property of a functional set of images; returns the checks done (for the log),
    raises SeedfwError naming the file and offset of the first that fails. `spi_image`: the
    board boots from SPI NOR too (capability spi-nor), so u-boot-rockchip-spi.bin must be there."""
    done = []
    sd = (out / "u-boot-rockchip.bin").read_bytes()
    itb = (out / "u-boot.itb").read_bytes()
    idb = (out / "idbloader.img").read_bytes()
    images = [("u-boot-rockchip.bin", sd, 0, idblock.SD_FIT_OFFSET)]
    if spi_image:
        if not (out / SPI).is_file():
            raise SeedfwError("binman wrote no SPI image (board capability spi-nor; is "
                              "CONFIG_ROCKCHIP_SPI_IMAGE set?)", out / SPI)
        images.append((SPI, (out / SPI).read_bytes(), idblock.SPI_IDBLOCK_OFFSET,
                       idblock.SPI_FIT_OFFSET))
    for name, blob, base, fit_at in images:
        block = idblock.parse(blob, base, out / name)
        if not block.ok:
            raise SeedfwError("RKNS digests do not match", out / name, f"offset 0x{base:x}")
        if block.image_bytes(blob, 0, base)[:len(tpl)] != tpl:
            raise SeedfwError("idblock image 0 is not the DDR init blob", out / name,
                              f"offset 0x{base + block.images[0].offset:x}")
        if blob[fit_at:fit_at + len(itb)] != itb:
            raise SeedfwError("u-boot.itb is not at its offset", out / name, f"offset 0x{fit_at:x}")
        done.append(f"{name}: RKNS at 0x{base:x} ({block.hash_algo} ok), DDR blob inside, "
                    f"u-boot.itb at 0x{fit_at:x}")
    if sd[:len(idb)] != idb:
        raise SeedfwError("idbloader.img differs from u-boot-rockchip.bin's idblock", out / "idbloader.img")
    root, images = idblock.fit_images(itb, out / "u-boot.itb")
    nodes = root.children["images"].children
    for name, data in images.items():
        if idblock.fit_hash_ok(nodes[name], data) is not True:
            raise SeedfwError(f"FIT image '{name}' has no matching hash", out / "u-boot.itb")
    if images.get("dvfs") != dvfs or nodes["dvfs"].u32("load") != dvfs_addr:
        raise SeedfwError(f"FIT image 'dvfs' is not dvfs.bin at 0x{dvfs_addr:x}", out / "u-boot.itb")
    atf = [(nodes[n].u32("load"), images[n]) for n in sorted(images, key=_seq) if n.startswith("atf-")]
    if atf != [(addr & 0xFFFFFFFF, data) for addr, data in segments]:
        raise SeedfwError("the atf-N images are not BL31's load segments", out / "u-boot.itb")
    done.append(f"u-boot.itb: {len(images)} images, every sha256 ok; dvfs = dvfs.bin at "
                f"0x{dvfs_addr:x}; atf-1..{len(atf)} = BL31's segments")
    return done


def _seq(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class UbootRockchipPart(Part):
    __doc__ = DOC
    name = "uboot-rockchip"
    symbols = SYMBOLS
    provides = ("u-boot-rockchip", "u-boot-rockchip-spi", "idbloader", "u-boot-itb")
    when = "UBOOT=y on a board with capability spl-fit"

    def enabled(self, ctx):
        return bool(ctx.values.get("UBOOT")) and ctx.capable("spl-fit")

    def outputs(self, ctx):
        # The combined images are idbloader.img + u-boot.itb at their offsets (SD/eMMC or SPI
        # layout): written as a whole, but what the boot chain reads are the two parts declared
        # after them, so they are not counted as read at boot (no double count).
        storage = ctx.board.boot["storage"]
        step = "uboot-rockchip.binman"
        rom = f"{ctx.board.soc.upper()} boot ROM"
        # where board.yaml's disk puts the SD image (the boot ROM reads sector 64)
        base = next((p.get("offset") for p in ctx.board.partitions
                     if "u-boot-rockchip" in p["roles"]), None)
        base = 64 * idblock.SECTOR if base is None else base
        return [
            Output(ctx.images / "u-boot-rockchip.bin", step, ("u-boot-rockchip",),
                   carries=("idbloader", "u-boot-itb"),
                   placement=Placement(storage=storage, offset=base),
                   kind="boot", read_by=f"{rom} (idblock), then SPL",
                   location="eMMC/SD sector 64 (32 KiB); its u-boot.itb lands at 8 MiB",
                   at_boot=False),
            *([Output(ctx.images / SPI, step, ("u-boot-rockchip-spi",),
                      placement=Placement(storage="spi-nor", offset=0),
                      kind="boot", read_by=f"{rom} (idblock), then SPL",
                      location="SPI NOR offset 0 (idblock at 0x8000, u-boot.itb at 0x60000)",
                      at_boot=False)] if ctx.capable("spi-nor") else []),
            Output(ctx.images / "idbloader.img", step, ("idbloader",),
                   placement=Placement(storage=storage, offset=base),
                   kind="idbloader", read_by=rom,
                   location="eMMC/SD sector 64 (alone, with u-boot.itb at sector 16384)"),
            Output(ctx.images / UBOOT_ITB, step, ("u-boot-itb",),
                   carries=ctx.board.fit_roles("u-boot-itb") or ("u-boot", "bl31", "dvfs"),
                   placement=Placement(storage=storage, offset=base + idblock.SD_FIT_OFFSET),
                   kind="fit", read_by="U-Boot SPL (verifies every image's sha256)",
                   location="eMMC/SD sector 16384 (8 MiB)"),
            Output(ctx.images / "uboot.json", step, ("u-boot-blobs",)),
        ]

    def steps(self, ctx):
        return _steps(ctx)


def _steps(ctx) -> list:
    check_up_front(ctx)
    dvfs_region(ctx.board)                     # fails up front when board.yaml lacks it
    say = lambda m: ctx.progress(f"  uboot: {m}")       # noqa: E731
    cache_file = ctx.file("u-boot-build")
    bl31_image = lambda ctx: ctx.file("bl31")           # noqa: E731

    def inputs():
        override = ctx.values.get("UBOOT_ROCKCHIP_TPL")
        bl31 = bl31_image(ctx)
        dvfs = ctx.file("dvfs")
        return {"symbols": plan_mod.symbols(ctx.values, SYMBOLS),
                "compile": json.loads(cache_file.read_text())["key"] if cache_file.is_file() else None,
                "bl31": util.sha256_file(bl31) if bl31.is_file() else None,
                "dvfs": util.sha256_file(dvfs) if dvfs.is_file() else None,
                "tpl": rkbin.DDR.sha256 if not override or Path(override).is_file() else "missing",
                "dvfs_region": [dvfs_region(ctx.board).base, dvfs_region(ctx.board).size],
                "source_date_epoch": util.source_date_epoch()}

    def run(step):
        cache = json.loads(cache_file.read_text())
        tree, build = Path(cache["tree"]), Path(cache["build"])
        tpl, missing = ddr_blob(ctx, step.log, say)
        bl31 = bl31_image(ctx)
        dvfs = ctx.file("dvfs")
        work = Part.fresh_dir(ctx.build_dir("u-boot-binman"))
        indir = work / "in"            # binman finds dvfs.bin here, and nothing else of ours
        indir.mkdir()
        shutil.copyfile(dvfs, indir / "dvfs.bin")
        out = work / "out"
        out.mkdir()
        env = {"PYTHONPATH": build / "scripts" / "dtc" / "pylibfdt",
               "SOURCE_DATE_EPOCH": str(util.source_date_epoch())}
        plan_mod.run_command(binman_command(tree, build, out, indir, bl31, tpl), cwd=work,
                             env=env, log=step.log)
        region = dvfs_region(ctx.board)
        doc = {"functional": missing is None, "bl31": bl31.name,
               "dvfs": {"load": region.base, "sha256": util.sha256_file(dvfs)},
               "blobs": {"rockchip-tpl": None if tpl is None else
                         {"name": rkbin.DDR.name, "sha256": util.sha256_file(tpl)}}}
        if missing is None:
            for line in check_outputs(out, tpl.read_bytes(), dvfs.read_bytes(), region.base,
                                      bl31_segments(bl31), ctx.capable("spi-nor")):
                with open(step.log, "a") as f:
                    f.write(f"checked: {line}\n")
            sd = (out / "u-boot-rockchip.bin").stat().st_size
            say(f"u-boot-rockchip.bin {sd:,} B: RKNS + DDR blob + SPL, u-boot.itb at 0x7f8000 "
                f"with DVFS at 0x{region.base:x}; every hash checked")
        else:
            why = f"placeholder: {missing} (built with --allow-missing-blobs)"
            # what carries u-boot-rockchip.bin (the disk image and its map): placeholders too
            disk = [o.name for o in ctx.outputs if "u-boot-rockchip" in o.carries]
            doc["non_functional"] = {n: why for n in (*outputs_of(ctx), *disk)}
            say(f"NON-FUNCTIONAL placeholder images: {missing}")
            for name in outputs_of(ctx):            # binman may leave some out: still declared
                if not (out / name).is_file():
                    (out / name).write_bytes(b"")
        util.write_json(out / "uboot.json", doc)
        step.install({ctx.images / n: out / n for n in (*outputs_of(ctx), "uboot.json")})

    return [plan_mod.Step("uboot-rockchip.binman", run, needs=("u-boot-build", "bl31", "dvfs"),
                          inputs=inputs, version=VERSION, package="uboot-rockchip")]
