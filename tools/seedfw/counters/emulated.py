"""Emulated memory traffic: seedfw's QEMU TCG plugin (firmware/qemu-plugin/) as a counter source.

What it counts: the guest CPU's data loads and stores (count and bytes) and its instructions,
per memory region of board.yaml (regions with a `kind`: dram, flash, sram, mmio) and per boot
phase; device DMA (virtio-blk) apart, from QEMU's own trace events. Every run is under
`-icount shift=0,sleep=off`, so one image gives the same numbers every time. The figures are
bytes and instruction counts: emulated time is not board time, so no rate is ever derived.

Phases come from the build, never from typed addresses: each is the executable range of a built
ELF (program headers; the ELF must carry a symbol table, else the phase is reported "no
symbols" and its blocks fall into "other"), placed where the declared boot artifacts put it:
  bl1, bl2, bl31       TF-A's ELFs (role "bios": qemu_fw.bios holds BL1 and the FIP)
  u-boot               u-boot.elf (role "bl33"); U-Boot is linked at 0 and position-independent,
                       so it runs where BL2 loads BL33: board.yaml region `bl33`
  u-boot-relocated     the same code after relocate_code: the offset is learned at run time by
                       the plugin (first PC outside every range, minus `relocation_return`, where
                       crt0_64.S's adjusted return lands), never typed in
  payload              bl33.elf (our BL33 payload, U-Boot loads it from the firmware FIT)
  mcu                  mcu.elf (Cortex-M boards)
  linux, userspace     OS boot only: the Debian kernel Image has no symbols, so "linux" is every
                       PC in the kernel half of the address space (TTBR1) and "userspace" the
                       lower half after Linux started; both reported as "by address space".
Excluded (counted apart, under "excluded"): U-Boot's virtio-blk request — `virtio_blk_do_req`,
`virtqueue_get_buf` and the accessor it calls per poll, `dev_get_uclass_priv` — whose completion
poll spins until the host's I/O thread finishes, at the host's pace, so its iteration count
differs run to run (found by comparing per-block execution counts of two boots). Counting stops at BL31's
`psci_system_off` (the power-off request): the tail until QEMU exits varies too.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import provenance
from .base import CounterSource
from .plugin_build import plugin_path

KERNEL_HALF = (0xFFFF_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF)
USER_HALF = (0, 0x0001_0000_0000_0000)
ICOUNT = ("-icount", "shift=0,sleep=off")
TRACE_EVENTS = ("virtio_blk_handle_read", "virtio_blk_handle_write")
SECTOR = 512                                 # virtio-blk's request unit (the trace's nsectors)
# virtqueue_get_buf calls dev_get_uclass_priv once per poll; a two-instruction accessor, so
# excluding it everywhere costs little and keeps the count independent of the poll's length.
EXCLUDE = {"u-boot": ("virtio_blk_do_req", "virtqueue_get_buf", "dev_get_uclass_priv")}
STOP = ("bl31", "psci_system_off")
NOTE = ("emulated in QEMU with -icount: instruction and byte counts of the emulated CPU, not a "
        "chip's; emulated time is not board time, so no rate (GB/s) is derived")


@dataclass
class Phase:
    name: str
    start: int | None = None
    end: int | None = None
    by: str = "symbols"             # symbols | address space | relocated
    elf: str | None = None
    pa: bool = False                # classify by physical address (Linux, user space)
    reloc_from: str | None = None
    landing: int | None = None
    missing: str | None = None      # why the phase has no range (reported, never merged)


def _elf_info(path: Path):
    """(executable [start, end), {symbol: address} or None when the ELF has no symbol table)."""
    from elftools.elf.elffile import ELFFile

    from .. import stats

    stats.read_elf(path, top=0)          # a truncated or foreign file is one clear error
    with open(path, "rb") as f:  # door: checked by stats.read_elf first (bounded, regular file)
        elf = ELFFile(f)
        spans = [(s["p_vaddr"], s["p_vaddr"] + s["p_memsz"]) for s in elf.iter_segments()
                 if s["p_type"] == "PT_LOAD" and s["p_flags"] & 1 and s["p_memsz"]]
        syms = None
        # By index, skipping what does not parse: some ELFs' section tables make pyelftools'
        # own iteration raise (seedfw.counters.stats_block does the same).
        for i in range(elf.num_sections()):
            try:
                sec = elf.get_section(i)
                if sec["sh_type"] != "SHT_SYMTAB" or sec.num_symbols() <= 1:
                    continue
                syms = {}
                for s in sec.iter_symbols():
                    if s.name and s["st_shndx"] != "SHN_UNDEF":
                        syms.setdefault(s.name, (s["st_value"], s["st_size"]))
            except Exception:
                continue
    if not spans:
        raise SeedfwError("no executable load segment", path)
    return (min(a for a, _ in spans), max(b for _, b in spans)), syms


def _elf_phase(name: str, path: Path, base: int = 0) -> tuple[Phase, dict | None]:
    if not path.is_file():
        return Phase(name, missing=f"{path.name} not built"), None
    (start, end), syms = _elf_info(path)
    if syms is None:
        return Phase(name, elf=path.name, missing=f"{path.name} has no symbols (stripped)"), None
    return Phase(name, base + start, base + end, elf=path.name), syms


def roles(outdir: Path) -> set[str]:
    """The boot artifacts' declared roles in the build's manifest."""
    from ..manifest import Manifest
    return {r for a in Manifest.load(outdir).artifacts if a.declared for r in a.roles}


def plan(board, outdir: Path, os_boot: bool = False):
    """(phases, excludes [(phase, start, end)], stop address or None) for a built board."""
    images = Path(outdir) / "images"
    have = roles(outdir)
    phases: list[Phase] = []
    symbols: dict[str, dict] = {}
    excludes: list[tuple[str, int, int]] = []

    def add(phase, syms):
        phases.append(phase)
        if syms is not None:
            symbols[phase.name] = syms

    if "bios" in have:
        for name in ("bl1", "bl2", "bl31"):
            add(*_elf_phase(name, images / f"{name}.elf"))
    if "bl33" in have:
        base = board.region("bl33").base
        phase, syms = _elf_phase("u-boot", images / "u-boot.elf")
        if phase.start == 0 and phase.missing is None:
            # linked at 0, position-independent: runs where BL2 put BL33
            phase.start, phase.end = phase.start + base, phase.end + base
            offset = base
        else:
            offset = 0
        add(phase, syms)
        reloc = Phase("u-boot-relocated", by="relocated", elf=phase.elf, reloc_from="u-boot")
        if syms is None:
            reloc.missing = phase.missing
        elif "relocation_return" not in syms:
            reloc.missing = f"{phase.elf} has no symbol relocation_return"
        else:
            reloc.landing = syms["relocation_return"][0] + offset
        phases.append(reloc)
        for sym in EXCLUDE["u-boot"]:
            if syms and sym in syms and syms[sym][1]:
                excludes.append(("u-boot", syms[sym][0] + offset, syms[sym][0] + offset + syms[sym][1]))
    if have & {"bios", "firmware-fit"} and (images / "bl33.elf").is_file():
        add(*_elf_phase("payload", images / "bl33.elf"))
    if "mcu" in have or (images / "mcu.elf").is_file() and board.arch == "armv7m":
        add(*_elf_phase("mcu", images / "mcu.elf"))
    if os_boot:
        phases.append(Phase("linux", *KERNEL_HALF, by="address space", elf="Image", pa=True,
                            missing=None))
        phases.append(Phase("userspace", *USER_HALF, by="address space", pa=True))
    stop = symbols.get(STOP[0], {}).get(STOP[1], (None,))[0]
    return phases, excludes, stop


def regions(board) -> list:
    """The map counted by: board.yaml `memory` regions with a kind; for a board whose OS is
    proven on QEMU virt (`qemu_os`), that machine's map (`qemu_os.regions`)."""
    virt = (board.raw.get("qemu_os") or {}).get("regions") if not board.qemu else None
    if virt:
        from types import SimpleNamespace          # name, base, size, kind as board.memory's
        return [SimpleNamespace(**{"kind": None, **r}) for r in virt]
    out = [r for r in board.memory if r.kind]
    if not out:
        raise SeedfwError("no memory region has a 'kind' (dram, flash, sram, mmio): nothing to "
                          "count by", board.dir / "board.yaml", "memory")
    return out


def plugin_arg(board, phases, excludes, stop, outfile: Path, plugin: Path) -> str:
    parts = [f"file={plugin}", f"out={outfile}"]
    parts += [f"region={r.name}:{r.kind}:{r.base:#x}:{r.size:#x}" for r in regions(board)]
    for p in phases:
        if p.missing:
            continue
        if p.reloc_from:
            parts.append(f"reloc={p.name}:{p.reloc_from}:{p.landing:#x}")
        else:
            parts.append(f"phase={p.name}:{p.start:#x}:{p.end:#x}" + (":pa" if p.pa else ""))
    known = {p.name for p in phases if not p.missing}
    parts += [f"exclude={ph}:{a:#x}:{b:#x}" for ph, a, b in excludes if ph in known]
    if stop is not None:
        parts.append(f"stop={stop:#x}")
    for part in parts:
        if "," in part:
            raise SeedfwError("a path with a comma cannot be passed to a QEMU plugin", part)
    return ",".join(parts)


def files(outfile: Path) -> dict[str, Path]:
    outfile = Path(outfile)
    return {"raw": outfile.with_suffix(".plugin.json"), "trace": outfile.with_suffix(".trace.log"),
            "plan": outfile.with_suffix(".plan.json")}


def qemu_args(board, outdir: Path, outfile: Path, os_boot: bool | None = None,
              board_args=()) -> list[str]:
    """The QEMU arguments that count this run into `outfile` (a counters document, written by
    `collect` after QEMU exited): -icount (unless board.yaml sets one), the plugin with the
    board's regions and the build's phases, and the virtio-blk trace events into a log.
    `os_boot` None: declare the Linux phases when the build made the OS (U-Boot boots it)."""
    outdir = Path(outdir)
    if not board.qemu:
        raise SeedfwError(f"board '{board.name}' does not run in QEMU: nothing to count with "
                          "(--counters)", board.dir / "board.yaml", "qemu")
    if os_boot is None:
        from ..run import os_boot as osboot

        os_boot = osboot.chained(board, outdir)
    plugin = plugin_path(outdir)
    if not plugin.is_file():
        raise SeedfwError("the QEMU traffic plugin is not built (CONFIG_COUNTERS_EMULATED=y, "
                          f"then 'invoke build --board {board.name}')", plugin)
    phases, excludes, stop = plan(board, outdir, os_boot)
    f = files(outfile)
    f["raw"].parent.mkdir(parents=True, exist_ok=True)
    for path in f.values():
        path.unlink(missing_ok=True)
    f["plan"].write_text(json.dumps({"phases": [asdict(p) for p in phases], "excludes": excludes,
                                     "stop": stop}, indent=1) + "\n")
    args = [] if "-icount" in list(board_args) + list((board.qemu or {}).get("args", [])) \
        else list(ICOUNT)
    # board.yaml qemu.counted_args: what a counted run adds for determinism (QEMU virt: no
    # random kaslr-seed/rng-seed in its DT, which U-Boot hands to Linux)
    args += list((board.qemu or {}).get("counted_args", []))
    args += ["-plugin", plugin_arg(board, phases, excludes, stop, f["raw"], plugin)]
    for event in TRACE_EVENTS:
        args += ["-trace", event]
    return args + ["-D", str(f["trace"])]


def virt_args(board, outdir: Path, outfile: Path) -> list[str]:
    """The counter's QEMU arguments for a board's own OS on QEMU virt (seedfw.run.os_virt):
    QEMU starts the kernel itself (no TF-A, no U-Boot), so the phases are Linux and user space
    by address space, classified by physical address into `qemu_os.regions`; no stop address
    (PSCI SYSTEM_OFF is QEMU's own HVC handler: the run ends there)."""
    outdir = Path(outdir)
    plugin = plugin_path(outdir)
    if not plugin.is_file():
        raise SeedfwError("the QEMU traffic plugin is not built (CONFIG_COUNTERS_EMULATED=y, "
                          f"then 'invoke build --board {board.name}')", plugin)
    phases = [Phase("linux", *KERNEL_HALF, by="address space", elf="Image", pa=True),
              Phase("userspace", *USER_HALF, by="address space", pa=True)]
    f = files(outfile)
    f["raw"].parent.mkdir(parents=True, exist_ok=True)
    for path in f.values():
        path.unlink(missing_ok=True)
    f["plan"].write_text(json.dumps({"phases": [asdict(p) for p in phases], "excludes": [],
                                     "stop": None}, indent=1) + "\n")
    args = list(ICOUNT) + ["-plugin", plugin_arg(board, phases, [], None, f["raw"], plugin)]
    for event in TRACE_EVENTS:
        args += ["-trace", event]
    return args + ["-D", str(f["trace"])]


_TRACE = re.compile(r"^(?:\d+@[\d.]+:)?(virtio_blk_handle_(read|write)) .*?nsectors (\d+)")


def dma(trace: Path) -> dict:
    """Bytes virtio-blk moved between the disk and guest RAM (its requests, from the trace)."""
    out = {"reads": 0, "read_bytes": 0, "writes": 0, "write_bytes": 0}
    if not trace.is_file():
        return out
    with open(trace, errors="replace") as f:  # door: QEMU's trace file, written by this run
        for line in f:
            m = _TRACE.match(line)
            if m:
                kind = "read" if m.group(2) == "read" else "write"
                out[f"{kind}s"] += 1
                out[f"{kind}_bytes"] += int(m.group(3)) * SECTOR
    return out


def _nonzero(regions_doc: dict) -> dict:
    return {name: v for name, v in regions_doc.items() if any(v.values())}


def readings(raw: dict, plan_doc: dict, trace: Path) -> dict:
    planned = {p["name"]: p for p in plan_doc["phases"]}
    phases = {}
    for p in raw["phases"]:
        # "instructions", not the plugin's "insns": report units are guessed from names
        phases[p["name"]] = {"instructions": p["insns"], "regions": _nonzero(p["regions"]),
                             "excluded": {"instructions": p["excluded"]["insns"],
                                          "regions": _nonzero(p["excluded"]["regions"])}}
    for name, p in planned.items():
        if name not in phases:
            phases[name] = {"instructions": 0, "regions": {}}
    for key in ("other", "after_stop"):
        phases[key] = {"instructions": raw[key]["insns"], "regions": _nonzero(raw[key]["regions"])}
    return {"phases": phases, "dma": {"virtio-blk": dma(trace)}}


def phase_settings(raw: dict, plan_doc: dict) -> list[dict]:
    """What each phase is and whether it ran: identifiers, not measurements."""
    ran = {p["name"]: p for p in raw["phases"]}
    out = []
    for p in plan_doc["phases"]:
        r = ran.get(p["name"], {})
        row = {"name": p["name"], "by": p["by"], "elf": p["elf"],
               "classified_by": "physical address" if p["pa"] else "virtual address (identity map)",
               "ran": bool(r.get("entered"))}
        if p["missing"]:
            row["missing"] = p["missing"]
        if r.get("start") is not None:
            row["range"] = f"{r['start']:#x}-{r['end']:#x}"
        if r.get("relocated_from"):
            row["relocation_offset"] = None if r.get("offset") is None else f"{r['offset']:#x}"
        out.append(row)
    return out


def method(version: str | None, board_args=()) -> str:
    shift = "0"
    args = list(board_args)
    if "-icount" in args and args.index("-icount") + 1 < len(args):
        shift = args[args.index("-icount") + 1].split(",")[0].replace("shift=", "")
    return (f"QEMU {version or '(version unknown)'} TCG plugin, -icount shift={shift}: CPU "
            "loads/stores by region and phase; device DMA from trace events")


def collect(board, outdir: Path, outfile: Path, what: str) -> dict:
    """After QEMU exited: the counters document, written to `outfile` (and returned)."""
    from .. import util

    f = files(outfile)
    if not f["raw"].is_file():
        raise SeedfwError("the QEMU plugin wrote no counts (QEMU did not exit normally?)", f["raw"])
    try:
        raw = util.read_json(f["raw"])
        plan_doc = util.read_json(f["plan"])
    except ValueError as exc:
        raise SeedfwError(f"not JSON: {exc}", f["raw"]) from None
    src = EmulatedTrafficCounters(board, outdir, outfile, what)
    doc = src.document({**src.settings_from(raw, plan_doc), **readings(raw, plan_doc, f["trace"])},
                       src.provenance())
    util.write_json(outfile, doc)
    return doc


def available(outdir: Path) -> bool:
    """Whether this build made the plugin (CONFIG_COUNTERS_EMULATED)."""
    return plugin_path(outdir).is_file()


def default_file(outdir: Path, what: str) -> Path:
    """<out>/counters/emulated-<run|boot>.json: where `--counters` leaves the document (the
    report picks every such file up)."""
    return Path(outdir) / "counters" / f"emulated-{what}.json"


def summary_line(doc: dict) -> str:
    """One terminal line: DRAM/flash bytes read over the counted phases, and the DMA."""
    kinds = {r["name"]: r["kind"] for r in doc["settings"]["regions"]}
    total = {"dram": 0, "flash": 0, "sram": 0}
    insns = 0
    for name, p in doc["readings"]["phases"].items():
        if name in ("other", "after_stop"):
            continue
        insns += p["instructions"]
        for region, v in p["regions"].items():
            if kinds.get(region) in total:
                total[kinds[region]] += v["load_bytes"]
    d = doc["readings"]["dma"]["virtio-blk"]
    return (f"counters ({provenance.label(doc['provenance'])}): {insns:,} instructions; CPU loads "
            f"DRAM {total['dram']:,} B, flash {total['flash']:,} B, SRAM {total['sram']:,} B; "
            f"virtio-blk DMA {d['read_bytes']:,} B read (emulated counts, not board time)")


class EmulatedTrafficCounters(CounterSource):
    """Counters from seedfw's QEMU plugin for one run (`invoke run/boot --counters`)."""

    name = "emulated-traffic"
    SETTINGS = frozenset({"boot", "phases_declared", "regions", "excluded_code", "stop_at",
                          "note", "dma_source"})

    def __init__(self, board, outdir=None, outfile=None, what: str = "run"):
        super().__init__(board)
        self.outdir, self.outfile, self.what = outdir, outfile, what

    @classmethod
    def read(cls, board, args: dict) -> dict:
        """The document of the last counted run (`invoke run --board B --counters`): counting
        means booting under the plugin, which `invoke run/boot --counters` do."""
        from ..paths import output_dir
        from ..util import read_json
        path = default_file(output_dir(board.name, args.get("output")), "run")
        if not path.is_file():
            raise SeedfwError(f"no counted run yet: run 'invoke run --board {board.name} "
                              "--counters' first", path)
        return read_json(path)

    def provenance(self) -> dict:
        q = self.board.qemu or self.board.raw.get("qemu_os") or {}
        version = provenance.qemu_version(q.get("binary"))
        prov = provenance.emulated(self.board, method(version, q.get("args", [])))
        prov["note"] = NOTE
        return prov

    def settings_from(self, raw: dict, plan_doc: dict) -> dict:
        return {"boot": self.what, "phases_declared": phase_settings(raw, plan_doc),
                "regions": [{"name": r["name"], "kind": r["kind"], "base": f"{r['base']:#x}",
                             "size": f"{r['size']:#x}"} for r in raw["regions"]],
                "excluded_code": [f"{ph}: {a:#x}-{b:#x}" for ph, a, b in plan_doc["excludes"]]
                + (["U-Boot's virtio-blk request (virtio_blk_do_req, virtqueue_get_buf, "
                    "dev_get_uclass_priv): its completion poll runs at the host's pace"]
                   if plan_doc["excludes"] else []),
                "stop_at": None if plan_doc["stop"] is None else
                f"{plan_doc['stop']:#x} (BL31 psci_system_off: the tail to QEMU's exit varies)",
                "dma_source": "QEMU trace events " + ", ".join(TRACE_EVENTS)
                + f" (nsectors x {SECTOR} B): device DMA, not CPU loads/stores",
                "note": NOTE}

    def sample(self, reader=None) -> dict:
        doc = util.read_json(Path(self.outfile))
        return {**doc["settings"], **doc["readings"]}
