"""Rockchip boot images from U-Boot's cached compile (binman), read back and checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from ..images import idblock
from . import rkbin
from .base import Part
from .firmware_image import bl31_image
from .uboot import ROCKCHIP_OUTPUTS, UbootPart, dvfs_region

VERSION = "1"
SYMBOLS = ("UBOOT", "UBOOT_ROCKCHIP_TPL", "UBOOT_ALLOW_MISSING_BLOBS", "TFA_COMPRESS_RODATA")

DOC = """Rockchip boot images (board boot.rom: rockchip): binman packs U-Boot's SPL and proper, the
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
Outputs: images/u-boot-rockchip.bin, u-boot-rockchip-spi.bin, idbloader.img, u-boot.itb,
uboot.json (blobs used with their sha256; "non_functional": {file: why} for placeholders).
"""


def wanted(ctx) -> bool:
    return bool(ctx.values.get("UBOOT")) and UbootPart().rockchip(ctx)


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
                  segments: list[tuple[int, bytes]]) -> list[str]:
    """Every property of a functional set of images; returns the checks done (for the log),
    raises SeedfwError naming the file and offset of the first that fails."""
    done = []
    sd = (out / "u-boot-rockchip.bin").read_bytes()
    itb = (out / "u-boot.itb").read_bytes()
    spi = (out / "u-boot-rockchip-spi.bin").read_bytes()
    idb = (out / "idbloader.img").read_bytes()
    for name, blob, base, fit_at in (("u-boot-rockchip.bin", sd, 0, idblock.SD_FIT_OFFSET),
                                     ("u-boot-rockchip-spi.bin", spi, idblock.SPI_IDBLOCK_OFFSET,
                                      idblock.SPI_FIT_OFFSET)):
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

    def enabled(self, values):
        return bool(values.get("UBOOT"))

    def steps(self, ctx):
        return _steps(ctx) if wanted(ctx) else []


def _steps(ctx) -> list:
    check_up_front(ctx)
    dvfs_region(ctx.board)                     # fails up front when board.yaml lacks it
    say = lambda m: ctx.progress(f"  uboot: {m}")       # noqa: E731
    cache_file = ctx.build_dir("u-boot") / "cache.json"

    def inputs():
        override = ctx.values.get("UBOOT_ROCKCHIP_TPL")
        bl31 = bl31_image(ctx)
        dvfs = ctx.images / "dvfs" / "dvfs.bin"
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
        dvfs = ctx.images / "dvfs" / "dvfs.bin"
        work = UbootPart.fresh_dir(ctx.build_dir("u-boot-binman"))
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
                                      bl31_segments(bl31)):
                with open(step.log, "a") as f:
                    f.write(f"checked: {line}\n")
            sd = (out / "u-boot-rockchip.bin").stat().st_size
            say(f"u-boot-rockchip.bin {sd:,} B: RKNS + DDR blob + SPL, u-boot.itb at 0x7f8000 "
                f"with DVFS at 0x{region.base:x}; every hash checked")
        else:
            why = f"placeholder: {missing} (built with --allow-missing-blobs)"
            # the disk image carries u-boot-rockchip.bin: a placeholder too
            disk = f"{ctx.board.name}-disk.img"
            doc["non_functional"] = {n: why for n in (*ROCKCHIP_OUTPUTS, disk, f"{disk}.bmap")}
            say(f"NON-FUNCTIONAL placeholder images: {missing}")
            for name in ROCKCHIP_OUTPUTS:            # binman may leave some out: still declared
                if not (out / name).is_file():
                    (out / name).write_bytes(b"")
        util.write_json(out / "uboot.json", doc)
        step.install({ctx.images / n: out / n for n in (*ROCKCHIP_OUTPUTS, "uboot.json")})

    needs = (cache_file, bl31_image(ctx), ctx.images / "dvfs" / "dvfs.bin")
    return [plan_mod.Step("uboot.binman", run, needs=needs, inputs=inputs, version=VERSION,
                          package="uboot",
                          outputs=tuple(ctx.images / n for n in (*ROCKCHIP_OUTPUTS, "uboot.json")))]
