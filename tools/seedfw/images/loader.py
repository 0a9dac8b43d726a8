"""The maskrom loader (`rkdeveloptool db <loader>`), built by us from a boot_merger recipe.

Reference page (docs/loader.md). Builds: images/<the recipe's [OUTPUT] PATH> (default
rk3588_spl_loader_v1.18.113.bin) and images/loader.json (each entry, its sha256, the blob it is).
Kconfig: UBOOT, LOADER_RECIPE (the recipe: the pinned rkbin file's name, default
RK3588MINIALL.ini on rk3588, or a path to a local .ini; empty: no loader),
UBOOT_ALLOW_MISSING_BLOBS. Inputs: the recipe and the pinned rkbin blobs it names
(seedfw.packages.rkbin); SOURCE_DATE_EPOCH (the header's release time).

Why we write it ourselves: Rockchip's boot_merger is a binary-only x86 tool. The bytes are what
boot_merger 1.35 writes for the same recipe except the release time (0x0e..0x14) and so the CRC
(tests/test_loader.py compares with rkbin's own output). Format: seedfw.images.ldr_format,
recipe: seedfw.images.ldr_recipe. `inspect_report` reads any loader back for `invoke inspect`.

Stage entry for build.py (STAGES "seedfw.images.loader"): add_steps / boot_artifacts, one step
"loader.build" (package "loader").
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import paths, util
from .. import plan as plan_mod
from ..errors import SeedfwError
from . import idblock, ldr_recipe
from .ldr_format import DATA_ALIGN, Loader, LoaderEntry, decode, encode, head_coverage

VERSION = "4"
SYMBOLS = ("UBOOT", "LOADER_RECIPE", "UBOOT_ALLOW_MISSING_BLOBS")
FIELD = "CONFIG_LOADER_RECIPE"


def _rkbin():
    from ..packages import rkbin
    return rkbin


def pins() -> dict[str, str]:
    """File name -> sha256 of every blob a recipe may name."""
    return {f.name: f.sha256 for f in _rkbin().BLOBS}


def wanted(ctx) -> bool:
    return bool(ctx.values.get("UBOOT")) and bool(ctx.values.get("LOADER_RECIPE"))


def local_recipe(ctx) -> Path | None:
    """The recipe file when LOADER_RECIPE names a local .ini; None for the pinned rkbin one."""
    value = ctx.values.get("LOADER_RECIPE") or ""
    if value == _rkbin().INI.name:
        return None
    p = Path(value)
    p = p if p.is_absolute() else paths.ROOT / p
    if not p.is_file():
        raise SeedfwError(f"loader recipe {value} is neither the pinned {_rkbin().INI.name} nor "
                          "an existing file", ctx.outdir / ".config", FIELD)
    return p


def output_name(ctx=None) -> str:
    recipe = local_recipe(ctx) if ctx is not None else None
    if recipe is None:
        return _rkbin().LOADER_NAME
    return ldr_recipe.parse(_read(recipe), recipe).output


def _read(path: Path) -> str:
    if path.stat().st_size > 64 << 10:
        raise SeedfwError("larger than 64 KiB: not a loader recipe", path)
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise SeedfwError("not a text file: not a loader recipe", path) from None


def boot_artifacts(ctx):
    from ..packages import BootArtifact
    if not wanted(ctx):
        return []
    # Sent over USB in maskrom mode, never read from storage: not a boot-bytes figure.
    return [BootArtifact(output_name(ctx), "loader", "boot ROM in maskrom mode (USB)",
                         "sent over USB by `rkdeveloptool db`; never written to storage",
                         at_boot=False)]


def build_loader(recipe_path: Path, blobs: dict[str, Path], release: int) -> tuple[bytes, Loader, str]:
    """(file bytes, the loader, output name) for a recipe; read back and checked before return."""
    recipe = ldr_recipe.parse(_read(recipe_path), recipe_path)
    loader = ldr_recipe.to_loader(recipe, blobs, pins(), release)
    blob = encode(loader)
    back = decode(blob)                 # what we wrote must read back as what we meant
    heads = check_heads(back)
    plain = [e for i, e in enumerate(back.entries) if i not in heads]
    if not back.crc_ok or not all(ok for ok, _ in heads.values()) or \
            [(e.type, e.name, e.data[:len(o.data)]) for e, o in zip(plain, loader.entries)] != \
            [(o.type, o.name, o.data) for o in loader.entries]:
        raise SeedfwError("the loader does not read back as written", recipe_path)
    return blob, loader, recipe.output


def add_steps(plan, ctx) -> list[Path]:
    if not wanted(ctx):
        return []
    from ..packages import Package
    rkbin = _rkbin()
    local = local_recipe(ctx)
    name = output_name(ctx)                  # a local recipe is parsed here: errors before any step
    out = [ctx.images / name, ctx.images / "loader.json"]

    def run(step):
        work = Package.fresh_dir(ctx.build_dir("loader"))
        try:
            files = rkbin.fetch(step.log, lambda m: ctx.progress(f"  loader: {m}"))
        except SeedfwError as exc:
            if "sha256 mismatch" in exc.message:
                raise
            if not ctx.values.get("UBOOT_ALLOW_MISSING_BLOBS"):
                raise SeedfwError(f"missing rkbin blobs for the maskrom loader: {exc.message} "
                                  f"({rkbin.mirror_note()}; --allow-missing-blobs builds a "
                                  "NON-FUNCTIONAL placeholder)", exc.file, exc.field) from None
            why = f"placeholder: rkbin blobs unavailable: {exc.message} (--allow-missing-blobs)"
            (work / name).write_bytes(b"")
            util.write_json(work / "loader.json", {"non_functional": {name: why}})
            step.install({o: work / o.name for o in out})
            return
        recipe = local or files[rkbin.INI.name]
        blob, loader, got = build_loader(recipe, files, util.source_date_epoch())
        if got != name:
            raise SeedfwError(f"the recipe names its output {got}, expected {name}", recipe,
                              "[OUTPUT] PATH")
        util.write_bytes(work / name, blob)
        by_sha = {f.sha256: f.name for f in rkbin.BLOBS}
        util.write_json(work / "loader.json", {
            "recipe": recipe.name, "newidb": loader.newidb, "version": list(loader.version),
            "entries": [{"type": e.kind, "name": e.name, "size": len(e.data), "delay_ms": e.delay,
                         "sha256": util.sha256_bytes(e.data),
                         "blob": by_sha.get(util.sha256_bytes(e.data))} for e in loader.entries]})
        ctx.progress(f"  loader: {name} {len(blob):,} B from {recipe.name} "
                     f"({', '.join(e.name for e in loader.entries)})")
        step.install({o: work / o.name for o in out})

    plan.add(plan_mod.Step("loader.build", run, inputs=lambda: {
        "pins": rkbin.SOURCE.pins(), "epoch": util.source_date_epoch(),
        "recipe": util.sha256_file(local) if local else rkbin.INI.sha256,
        "config": plan_mod.symbols(ctx.values, SYMBOLS)},
        version=VERSION, package="loader", outputs=tuple(out)))
    return out


# ---- inspect -----------------------------------------------------------------------------------

def _pinned(data: bytes, blobs) -> str | None:
    """The pinned blob these (descrambled, padded) bytes are, or None."""
    for pin in blobs:
        if len(data) == -(-pin.size // DATA_ALIGN) * DATA_ALIGN and \
                util.sha256_bytes(data[:pin.size]) == pin.sha256 and not data[pin.size:].strip(b"\0"):
            return pin.name
    return None


def inspect_report(path, blob, report_cls, row_cls):
    """Header + CRC, each UsbHead/FlashHead RKNS header (its digests and whether its images are the
    entries after it), and every entry descrambled and matched against the pinned blobs."""
    loader = decode(blob, path)
    report = report_cls(path, "rockchip maskrom loader")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(loader.release))
    report.rows.append(row_cls("header + CRC32", "ldr", len(blob), len(blob), "rk-crc32",
                               loader.crc_ok, f"{blob[:4].decode()} {loader.chip} "
                               f"v{loader.version[0]}.{loader.version[1]}, released {when} UTC, "
                               f"rc4 flags {int(loader.rc4_off)}/{int(loader.rc4_471_off)}, "
                               f"{len(loader.entries)} entries"))
    heads = check_heads(loader)
    for i, e in enumerate(loader.entries):
        how = "rc4" if e.scrambled else "plain"
        if i in heads:
            ok, detail = heads[i]
            report.rows.append(row_cls(e.name, "rkns", len(e.data), len(e.data), "sha256", ok,
                                       f"{how} at 0x{e.offset:x}: {detail}"))
            continue
        match = _pinned(e.data, _rkbin().BLOBS)
        detail = f"{how} at 0x{e.offset:x}, delay {e.delay} ms, "
        detail += f"= pinned {match}" if match else "matches no pinned blob"
        report.rows.append(row_cls(e.name, e.kind, len(e.data), len(e.data), "sha256",
                                   match is not None, detail))
    return report


def check_heads(loader: Loader) -> dict[int, tuple[bool, str]]:
    """{index of each UsbHead/FlashHead: (ok, what its RKNS header says)}: the header's own
    sha256, and each image's offset, size and sha256 against the entries that follow it."""
    return {i: _check_head(loader.entries[i], covered)
            for i, covered in head_coverage(loader).items()}


def _check_head(head: LoaderEntry, covered: list[LoaderEntry]) -> tuple[bool, str]:
    virtual = head.data + b"".join(e.data for e in covered)
    try:
        block = idblock.parse(virtual, 0, None)
    except SeedfwError as exc:
        return False, exc.message
    parts, ok = [], block.header_hash_ok is not False
    at = len(head.data)
    for img, e in zip(block.images, covered):
        same = img.offset == at and img.size == len(e.data) and img.hash_ok is not False
        ok &= same
        at += len(e.data)
        parts.append(f"{e.name} {img.size // idblock.SECTOR} sectors {'ok' if same else 'BAD'}")
    if len(block.images) != len(covered):
        ok = False
        parts.append(f"{len(block.images)} images for {len(covered)} entries")
    return ok, (f"RKNS header {'ok' if block.header_hash_ok is not False else 'BAD'}; "
                + ", ".join(parts))
