"""What a trial is scored on. Every objective is minimised and carries the label the reports use
for a figure's kind, and a sentence saying how it was obtained:

  storage        bytes     computed   the images the board reads at boot (manifest role "boot")
  boot-main      instr.    emulated (instruction count)   to the payload's main()
  boot-verified  instr.    emulated (instruction count)   to "all images verified" (pkg check)
  boot-decode    instr.    emulated (instruction count)   the payload expanding its .rodata
  decoder-size   bytes     computed   the LZ4 decoder's functions in the ELFs that boot
  decode-cycles  cycles    estimated  bytes expanded at boot x the decoder's cycles/byte
  dram-read      bytes     emulated (QEMU plugin)   DRAM bytes the CPU read during boot
  model-bytes    bytes     computed   compiled NPU models (images/models.json, seedfw.models.rknn)
  model-weights  bytes     computed   weight bytes one inference of every model reads
  model-drop     per mille emulated (rknn-toolkit2 simulator)  worst accuracy drop vs FP32

Why instruction counts: QEMU runs under `-icount shift=0,sleep=off`, where the guest's generic
timer advances 1 ns per instruction, so the payload's timer stamps are a repeatable instruction
count (two runs of the same image print the same numbers), not seconds on hardware. The timer
ticks at the frequency the payload reports (cycle_hz), so one tick is 1e9/cycle_hz instructions
(16 on QEMU virt at 62.5 MHz): that is the figure's resolution.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..compress import decoder_speed
from .. import util
from ..models.cards import current as current_card
from ..errors import SeedfwError

EMULATED = "emulated (instruction count)"
ICOUNT_ARGS = ("-icount", "shift=0,sleep=off")
_NS_PER_INSTRUCTION = 1          # shift=0: 2**0 ns of virtual time per instruction


@dataclass(frozen=True)
class Objective:
    name: str
    unit: str
    kind: str                    # computed | estimated | emulated (instruction count)
    how: str
    boots: bool = False          # needs a QEMU boot
    counted: bool = False        # needs the boot counted by the traffic plugin

    def describe(self) -> dict:
        return {"name": self.name, "unit": self.unit, "kind": self.kind, "how": self.how,
                "direction": "minimize"}


OBJECTIVES = {o.name: o for o in (
    Objective("storage", "bytes", "computed",
              "sum of the images the boot chain reads (manifest.json role 'boot', plus the "
              "board's FIT), each once: one found inside another is not counted again, and "
              "a layout of other images and padding (u-boot-rockchip.bin) counts as its "
              "pieces; qemu_fw.bios counts as bl1.bin + fip.bin (its padding is never read)"),
    Objective("boot-main", "instructions", EMULATED,
              "payload stats line 'cycles=' (generic timer when main() starts, from reset) x "
              "1e9/cycle_hz, QEMU -icount shift=0,sleep=off (1 instruction = 1 ns)", boots=True),
    Objective("boot-verified", "instructions", EMULATED,
              "payload line 'verified: all images at tick N' (every boot-package image checked) x "
              "1e9/cycle_hz, QEMU -icount shift=0,sleep=off", boots=True),
    Objective("boot-decode", "instructions", EMULATED,
              "payload stats milestones: decompress - data (the payload expanding its compressed "
              ".rodata; 0 when nothing is compressed) x 1e9/cycle_hz, QEMU -icount shift=0,sleep=off",
              boots=True),
    Objective("decoder-size", "bytes", "computed",
              "sum of st_size of the lz4blk_* functions in bl31.elf and bl33.elf (0 when no "
              "section is compressed)"),
    Objective("decode-cycles", "cycles", "estimated",
              "bytes expanded at boot (compression.json, raw size of every compressed section) x "
              "the linked decoder's cycles/byte (seedfw.compress.decoder_speed: bench/lz4_speed.py)"),
    Objective("dram-read", "bytes", "emulated (QEMU plugin)",
              "DRAM bytes read during boot (emulated): CPU load bytes into board.yaml regions of "
              "kind dram, summed over the boot phases BL1 … payload (seedfw's QEMU TCG plugin, "
              "-icount shift=0; U-Boot's virtio poll excluded; device DMA not included)",
              boots=True, counted=True),
    Objective("model-bytes", "bytes", "computed",
              "sum of the compiled .rknn files' sizes (images/models.json model cards)"),
    Objective("model-weights", "bytes", "computed from the compiled model",
              "sum of the toolkit's weight-memory totals of every compiled model: weight bytes "
              "read per inference, each weight read once"),
    Objective("model-drop", "per mille", "emulated (rknn-toolkit2 simulator)",
              "largest (FP32 - simulated) over the compiled models, x1000: ONNX Runtime FP32 "
              "against "
              "rknn-toolkit2's simulator on the same held-out inputs (model cards)"),
)}


def model_figures(outdir: Path) -> dict:
    """model-bytes, model-weights, model-drop from <out>/images/models.json."""
    path = Path(outdir) / "images" / "models.json"
    try:
        # an output dir built before the rename says `npu` for `simulated` (models.cards)
        cards = [current_card(c) for c in util.read_json(path)["models"]]
    except (OSError, ValueError, KeyError):
        raise SeedfwError("no model cards (CONFIG_MODELS off, or no compiled models)", path) \
            from None
    return {"model-bytes": sum(c["file_bytes"] for c in cards),
            "model-weights": sum(c.get("weight_bytes") or 0 for c in cards),
            "model-drop": max((round((c["fp32"] - c["simulated"]) * 1000, 3) for c in cards),
                              default=0)}


def can_boot(board) -> bool:
    """QEMU boots the board's payload (an A-class board with TF-A and a qemu section)."""
    return bool(board.qemu) and bool(board.tfa) and board.arch == "aarch64"


def defaults(board) -> list[str]:
    if can_boot(board):
        return ["storage", "boot-main", "boot-verified", "boot-decode", "decoder-size"]
    return ["storage", "decode-cycles", "decoder-size"]


def parse(text: str | None, board) -> list[Objective]:
    """--objectives a,b,c (or None for the board's defaults) → Objectives, checked."""
    names = [n.strip() for n in text.split(",")] if text else defaults(board)
    out = []
    for name in names:
        if name not in OBJECTIVES:
            raise SeedfwError(f"unknown objective '{name}' (known: {', '.join(OBJECTIVES)})",
                              None, "--objectives")
        obj = OBJECTIVES[name]
        if obj.boots and not can_boot(board):
            raise SeedfwError(f"objective '{name}' needs a QEMU boot, which board '{board.name}' "
                              "cannot do here (use storage, decoder-size, decode-cycles)",
                              None, "--objectives")
        if obj not in out:
            out.append(obj)
    if not out:
        raise SeedfwError("no objective given", None, "--objectives")
    return out


# ---- computing them ------------------------------------------------------------------------

def storage_bytes(outdir: Path, board_name: str | None = None) -> int:
    """Bytes of the images the boot chain reads: the manifest's boot artifacts, plus the board's
    FIT (<board>.itb, which U-Boot may load from the disk image even where the manifest does not
    declare it), each counted once: an image found byte for byte inside another (U-Boot inside
    the FIP, the boot package inside the FIT) is not counted again, and qemu_fw.bios counts as
    bl1.bin + fip.bin because the padding between them is never read."""
    from ..manifest import Manifest
    manifest = Manifest.load(outdir)
    images = outdir / "images"
    files = [manifest.file(a) for a in manifest.boot_chain()]
    fit = images / f"{board_name or manifest.board}.itb"
    if fit.is_file() and fit not in files:
        files.append(fit)
    blobs = {}
    for f in files:
        if f.name == "qemu_fw.bios" and (images / "bl1.bin").is_file() \
                and (images / "fip.bin").is_file():
            blobs[f.name] = (images / "bl1.bin").read_bytes() + (images / "fip.bin").read_bytes()  # door: the trial's own build output
        else:
            blobs[f.name] = f.read_bytes()  # door: the trial's own build output
    inside: dict[str, list[str]] = {n: [m for m, b in blobs.items() if m != n and len(b) < len(d)
                                        and b in d] for n, d in blobs.items()}
    containers = {n for n, parts in inside.items() if parts and _only_padding(blobs[n], [
        blobs[m] for m in parts])}
    skipped = set(containers)
    for n, parts in inside.items():
        if n not in containers:
            skipped.update(parts)
    return sum(len(d) for n, d in blobs.items() if n not in skipped)


def _only_padding(whole: bytes, parts: list[bytes]) -> bool:
    """True when every byte of `whole` outside the `parts` it holds is 0x00 or 0xff: a layout
    of other images (u-boot-rockchip.bin = idbloader.img … u-boot.itb), whose padding the
    boot ROM and SPL never read, so its pieces are counted instead of it."""
    covered = bytearray(len(whole))
    for part in parts:
        at = whole.find(part)
        covered[at:at + len(part)] = b"\x01" * len(part)
    start = 0
    while start < len(whole):            # each gap between the parts: padding only?
        end = covered.find(b"\x01", start)
        end = len(whole) if end < 0 else end
        if whole[start:end].translate(None, b"\x00\xff"):
            return False
        nxt = covered.find(b"\x00", end)
        start = len(whole) if nxt < 0 else nxt
    return True


def decoder_bytes(outdir: Path) -> int:
    """Code the LZ4 decoder adds to the images that boot (its functions' st_size)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection
    try:
        comp = util.read_json(outdir / "compression.json")
    except FileNotFoundError:
        return 0                          # nothing compressed: no decoder linked
    total = 0
    for elf_rel in sorted({i["elf"] for i in comp.get("images", [])}):
        data = (outdir / elf_rel).read_bytes()  # door: the trial's own build output
        key = util.sha256_bytes(data)
        if key not in _DECODER_BYTES:     # most trials leave the ELFs as they were: parse once
            elf = ELFFile(io.BytesIO(data))
            _DECODER_BYTES[key] = sum(
                s["st_size"] for sec in elf.iter_sections() if isinstance(sec, SymbolTableSection)
                for s in sec.iter_symbols()
                if s.name.startswith("lz4blk_") and s["st_info"]["type"] == "STT_FUNC")
        total += _DECODER_BYTES[key]
    return total


_DECODER_BYTES: dict[str, int] = {}


def expanded_bytes(outdir: Path) -> int:
    try:
        comp = util.read_json(outdir / "compression.json")
    except FileNotFoundError:
        return 0
    return sum(int(s["raw"]) for s in comp.get("sections", []))


_STATS = re.compile(r"^stats: .*\bcycles=(\d+) cycle_hz=(\d+)(?: milestones=([\d,]*))?")
_MS_DATA, _MS_DECOMPRESS = 1, 4          # firmware/include/seedfw/stats.h SEEDFW_MS_*
_VERIFIED = re.compile(r"^verified: all images at tick (\d+)")


def boot_figures(lines: list[str]) -> dict:
    """{boot-main, boot-verified} in instructions from the payload's UART lines."""
    ticks = hz = verified = None
    ms: list[int] = []
    for line in lines:
        if (m := _STATS.match(line)):
            ticks, hz = int(m.group(1)), int(m.group(2))
            ms = [int(v) for v in (m.group(3) or "").split(",") if v]
        elif (m := _VERIFIED.match(line)):
            verified = int(m.group(1))
    if ticks is None or not hz:
        raise SeedfwError("the payload printed no 'stats: … cycles=… cycle_hz=…' line", None, "uart")
    per_tick = 1e9 / hz / _NS_PER_INSTRUCTION
    out = {"boot-main": round(ticks * per_tick)}
    decode = 0
    if len(ms) > _MS_DECOMPRESS and ms[_MS_DECOMPRESS] and ms[_MS_DATA]:
        decode = ms[_MS_DECOMPRESS] - ms[_MS_DATA]
    out["boot-decode"] = round(decode * per_tick)
    if verified is not None:
        out["boot-verified"] = round(verified * per_tick)
    out["_ticks"] = {"main": ticks, "verified": verified, "decode": decode, "cycle_hz": hz}
    return out


def _counted_file(outdir: Path) -> Path:
    from ..counters import emulated

    return emulated.default_file(outdir, "tune")


def boot_args(objectives: list[Objective], board, outdir: Path) -> list[str]:
    """QEMU arguments of a trial's boot: -icount, plus the traffic plugin when an objective
    needs it (its arguments include the same -icount)."""
    if not any(o.counted for o in objectives):
        return list(ICOUNT_ARGS)
    from ..counters import emulated

    return emulated.qemu_args(board, outdir, _counted_file(outdir))


def after_boot(objectives: list[Objective], board, outdir: Path) -> None:
    if any(o.counted for o in objectives):
        from ..counters import emulated

        emulated.collect(board, outdir, _counted_file(outdir), "tune")


def dram_read_bytes(doc: dict) -> int:
    """Sum of CPU load bytes into regions of kind dram over the boot phases (not "other", not
    the tail after the power-off request)."""
    kinds = {r["name"]: r["kind"] for r in doc["settings"]["regions"]}
    return sum(v["load_bytes"] for name, p in doc["readings"]["phases"].items()
               if name not in ("other", "after_stop")
               for region, v in p["regions"].items() if kinds.get(region) == "dram")


def compute(objectives: list[Objective], outdir: Path, values: dict, uart: list[str] | None) -> dict:
    """{objective name: value} plus '_notes' (how each was obtained for this trial)."""
    out: dict = {}
    notes: dict = {}
    boot = boot_figures(uart) if uart is not None else {}
    # compression.json is only rewritten by a build that compresses: a trial that turns
    # compression off still holds the base's copy, which must not count.
    compressed = bool(values.get("COMPRESS_SECTIONS"))
    for o in objectives:
        if o.name == "storage":
            out[o.name] = storage_bytes(outdir)
        elif o.name == "decoder-size":
            out[o.name] = decoder_bytes(outdir) if compressed else 0
        elif o.name == "decode-cycles":
            speed = decoder_speed.decompress_speed(values)
            out[o.name] = round(expanded_bytes(outdir) * speed["value"]) if compressed else 0
            notes[o.name] = f"{speed['value']} cycles/byte ({speed['kind']}: {speed['note']})"
        elif o.counted:
            out[o.name] = dram_read_bytes(util.read_json(_counted_file(outdir)))
            notes[o.name] = "emulated: seedfw's QEMU plugin, -icount shift=0 (not board time)"
        elif o.name.startswith("model-"):
            out[o.name] = model_figures(outdir)[o.name]
        elif o.boots:
            if o.name not in boot:
                raise SeedfwError(f"the boot gave no figure for '{o.name}' (payload too old?)",
                                  None, "uart")
            out[o.name] = boot[o.name]
    if "_ticks" in boot:
        notes["ticks"] = boot["_ticks"]
    out["_notes"] = notes
    return out
