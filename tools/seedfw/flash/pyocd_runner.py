"""`pyocd` backend: program through pyOCD's Python API, reset, then verify every programmed byte.

Properties (from board.yaml `pyocd`): target (pyOCD target type), flash.base (where a raw .bin
goes). Probe: any pyOCD unique id (`cmsisdap:…`, `stlink:…`, `qemu:HOST:PORT`).

Why verify here: pyOCD trusts the flash algorithm's return code, so an algorithm that reports
success without programming (the tests' negative control) slips through; only what the target
holds afterwards is proof. Whole flash pages are checked by pyOCD's CRC32 analyzer run on the
target (one call instead of reading every byte back), the rest is read back; a mismatch is always
read back so the error names the first differing byte. Zephyr's pyocd runner has no verify step.
"""

from __future__ import annotations

import contextlib
import logging
import time
import zlib
from pathlib import Path

from ..errors import SeedfwError
from .base import FlashResult, FlashRunner, first_mismatch


def image_regions(image: Path, bin_base: int) -> list[tuple[int, bytes]]:
    """(address, bytes) pairs that programming `image` writes: ELF LOAD segments at their physical
    (load) address, Intel HEX records, or a raw binary at `bin_base`."""
    suffix = image.suffix.lower()
    if suffix in (".elf", ".axf", ".out"):
        # here, not at module level: `invoke` lists the runners' options on every run
        from elftools.elf.elffile import ELFFile

        regions = []
        with open(image, "rb") as f:  # door: the image to flash, checked by image_checks
            elf = ELFFile(f)
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                    regions.append((seg["p_paddr"], seg.data()[:seg["p_filesz"]]))
        return regions
    if suffix in (".hex", ".ihex"):
        from intelhex import IntelHex  # a pyOCD dependency

        ih = IntelHex(str(image))
        return [(start, ih.tobinstr(start, end - 1)) for start, end in ih.segments()]
    return [(bin_base, image.read_bytes())]  # door: the image to flash, checked by image_checks


class PyocdRunner(FlashRunner):
    """Flash through pyOCD; capabilities: flash, verify, reset, erase."""

    name = "pyocd"
    capabilities = frozenset({"flash", "verify", "reset", "erase"})
    options = {"target": "pyOCD target type (default: bench entry, then board.yaml pyocd.target)",
               "bench": "bench file (default $SEEDFW_BENCH)"}

    @classmethod
    @contextlib.contextmanager
    def session(cls, board, args: dict, log=print):
        """Reach the probe first: --probe, else the board's bench entry; `qemu:auto` starts
        QEMU for the task, and once flashed the first UART line shows that the image runs."""
        from .probe_ids import check_probe_uid
        from .reach import reach_probe

        if args.get("probe"):
            check_probe_uid(args["probe"])
        with reach_probe(board, args.get("probe"), args.get("bench")) as (uid, bench_target, qemu):
            yield cls(board, uid, log=log, target=args.get("target") or bench_target)
            if qemu is not None:
                log("uart: " + qemu.wait_line(r"\S").strip())

    def __init__(self, board, probe_uid=None, log=print, target: str | None = None, options=None):
        super().__init__(board, probe_uid, log)
        cfg = board.pyocd or {}
        self.target = target or cfg.get("target")
        self.flash_base = cfg.get("flash", {}).get("base", 0)
        self.options = dict(options or {})
        if not self.target:
            raise SeedfwError("board has no pyOCD target", board.dir / "board.yaml", "pyocd.target")
        if not probe_uid:
            raise SeedfwError("no probe given and none on the bench for this board", None, "--probe")

    def _session(self):
        from pyocd.core.helpers import ConnectHelper

        # pyOCD logs its own progress at INFO; the runner prints a summary instead.
        logging.getLogger("pyocd").setLevel(logging.WARNING)
        session = ConnectHelper.session_with_chosen_probe(
            unique_id=self.probe_uid, target_override=self.target, blocking=False,
            options={"frequency": 4000000, **self.options})
        if session is None:
            raise SeedfwError(f"debug probe '{self.probe_uid}' not found", None, "--probe")
        return session

    def flash(self, image, verify=True) -> FlashResult:
        from pyocd.core.exceptions import Error as PyocdError
        from pyocd.flash.file_programmer import FileProgrammer

        image = self.check_image(image)
        regions = image_regions(image, self.flash_base)
        total = sum(len(data) for _, data in regions)
        result = FlashResult(image=image, backend=self.name, programmed_bytes=total,
                             regions=[(addr, len(data)) for addr, data in regions])
        last = [0.0]  # previous progress fraction
        phases: list[str] = []

        def progress(fraction):
            # pyOCD reports each phase (erase, then program) from 0 to 1, sometimes repeating 1.0;
            # log each phase once, when it completes.
            if fraction >= 1.0 and last[0] < 1.0:
                phases.append("erase" if not phases else "program")
                self.log(f"  {phases[-1]}: done")
            last[0] = fraction

        try:
            session = self._session()
            with session:
                start = time.monotonic()
                kwargs = {} if image.suffix.lower() in (".elf", ".axf", ".out", ".hex", ".ihex") \
                    else {"base_address": self.flash_base}
                FileProgrammer(session, progress=progress).program(str(image), **kwargs)
                result.seconds = time.monotonic() - start
                self.log(f"programmed {total} bytes in {result.seconds:.2f} s "
                         f"({result.throughput_kib_s:.1f} KiB/s) via {self.probe_uid}")
                # Reset and hold at the reset vector, read back, and only then let the core run:
                # an image that did not land (erased vector table) would lock the core up, and
                # QEMU exits on lockup, before the readback could say what went wrong.
                session.target.reset_and_halt()
                if verify:
                    result.verified_bytes = self._verify(session.target, image, regions)
                session.target.resume()
        except PyocdError as exc:
            raise SeedfwError(f"pyOCD: {exc}", image, "--probe") from None
        return result

    def _verify(self, target, image: Path, regions) -> int:
        start = time.monotonic()
        checked = by_crc = 0
        for addr, data in regions:
            crc_bytes = crc_verified(target, addr, data)
            if crc_bytes:
                by_crc += crc_bytes
                checked += len(data)
                continue
            # No analyzer for this region, or a CRC differed: read every byte back, which also says
            # exactly where the image and the target part.
            readback = bytes(target.read_memory_block8(addr, len(data)))
            off = first_mismatch(data, readback)
            if off is not None:
                ndiff = sum(1 for a, b in zip(data, readback) if a != b)
                raise SeedfwError(
                    f"readback differs from the image: first mismatch at offset {checked + off:#x} (address {addr + off:#010x}): "
                    f"expected {data[off]:#04x}, read {readback[off]:#04x} ({ndiff} of {len(data)} bytes differ)",
                    image, "verify")
            checked += len(data)
        secs = time.monotonic() - start
        how = (f"{by_crc} by CRC32 on the target, {checked - by_crc} read back" if by_crc else "read back")
        self.log(f"verified {checked} bytes in {secs:.2f} s ({how}): the target holds the image")
        return checked


def crc_verified(target, addr: int, data: bytes) -> int:
    """Check `data` at `addr` with pyOCD's CRC32 analyzer run on the target (Flash.compute_crcs) over
    the whole flash pages it covers, and by reading back the partial pages at either end. Returns how
    many bytes the CRCs covered when everything matched, 0 when the caller must read back instead
    (no analyzer for the region, no whole page, or any mismatch).

    Why: reading 128 KiB back costs 65 stub round trips plus pyOCD's per-byte breakpoint filter
    (most of the verify time, docs/measurements/2026-12-03-flash.md); one analyzer call returns a
    CRC per page. A CRC32 differs for any change of up to 32 consecutive bits, so one flipped byte
    is always caught (tests/test_flash_pyocd.py flips one)."""
    region = target.memory_map.get_region_for_address(addr)
    if region is None or not region.is_flash or not region.contains_range(addr, length=len(data)):
        return 0
    flash = region.flash
    size = region.page_size
    if flash is None or not flash.use_analyzer or size & (size - 1):
        return 0
    first = -(-addr // size) * size
    last = (addr + len(data)) // size * size
    # the analyzer packs each page as (address / size) << 16: the page index must fit 16 bits
    if last <= first or last // size >= 1 << 16:
        return 0
    pages = [(a, size) for a in range(first, last, size)]
    flash.init(flash.Operation.VERIFY)
    try:
        crcs = flash.compute_crcs(pages)
    finally:
        flash.cleanup()
    expected = [zlib.crc32(data[a - addr:a - addr + size]) for a, _ in pages]
    if list(crcs) != expected:
        return 0
    for start, end in ((addr, first), (last, addr + len(data))):
        if end > start and \
                bytes(target.read_memory_block8(start, end - start)) != data[start - addr:end - addr]:
            return 0
    return last - first
