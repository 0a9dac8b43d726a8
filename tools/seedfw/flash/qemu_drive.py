"""`qemu` runner: program a QEMU board's storage — a drive of board.yaml `qemu.drives`, kept as a
file under <out>/qemu/ — then read it back and compare; the next `invoke run` boots from it.

Which drive: the image's declaration in <out>/manifest.json says how QEMU loads it
(`declared.qemu.load`, e.g. "bios" for TF-A's flash image) and the board's drive that `holds`
that kind receives it (qemu-aarch64: the 64 MiB secure flash, pflash unit 0 — what -bios fills —
or the virtio disk for the disk image). A pflash drive is exactly its `size`, the bytes after the
image erased (0xff, as NOR flash reads after an erase); a block drive is the image itself.
Options: the task's --output (where <out>/qemu/ is). Capabilities: flash, verify, erase.
A drive file in use (it backs a loop device, it is mounted or swap; seedfw.flash.in_use) is
refused. The write goes to a temporary file renamed over the drive (never a half-written drive); verify
reads the drive file back and compares its sha256 with the image's (padding included), naming the
first differing byte on a mismatch. <out>/qemu/<drive>.json records what was programmed.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from . import in_use
from .base import FlashResult, FlashRunner, first_mismatch

ERASED = 0xFF


def _manifest_load(board, outdir: Path, image: Path) -> tuple[str, str]:
    """(declared name, QEMU load kind) of `image` per the build's manifest."""
    from ..manifest import Manifest
    manifest = Manifest.load(outdir, "no build output here: the manifest says which drive an "
                                     "image goes to (run the build first)")
    # an --image outside <out>: the same file name
    match = manifest.by_path(image) or manifest.by_name(image.name)
    if match is None or match.qemu is None:
        raise SeedfwError(f"the build declares no QEMU load for {image.name}, so no drive of "
                          f"board '{board.name}' holds it", image, "--image")
    return match.name, match.qemu.load


class QemuDriveRunner(FlashRunner):
    """Program a QEMU board's drive file (<out>/qemu/<drive>.img); capabilities: flash, verify,
    erase. The drive is the board.yaml `qemu.drives` entry that holds the image's QEMU load kind."""

    name = "qemu"
    capabilities = frozenset({"flash", "verify", "erase"})
    options: dict[str, str] = {}           # reads the task's common --output

    def __init__(self, board, probe_uid=None, log=print, output=None):
        super().__init__(board, probe_uid, log)
        from ..paths import output_dir
        if not (board.qemu or {}).get("drives"):
            raise SeedfwError(f"board '{board.name}' has no QEMU drive to program",
                              board.dir / "board.yaml", "qemu.drives")
        self.outdir = Path(output_dir(board.name, output))

    @classmethod
    def create(cls, board, args: dict, log=print) -> "QemuDriveRunner":
        return cls(board, args.get("probe"), log=log, output=args.get("output"))

    def drive_for(self, image: Path) -> tuple[dict, str]:
        from ..run import qemu
        name, load = _manifest_load(self.board, self.outdir, image)
        drive = qemu.drive_holding(self.board, load)
        if drive is None:
            raise SeedfwError(f"no drive of board '{self.board.name}' holds a '{load}' "
                              f"(the load {name} is declared with)", self.board.dir / "board.yaml",
                              "qemu.drives")
        return drive, name

    def contents(self, drive: dict, data: bytes, image: Path) -> bytes:
        size = drive.get("size")
        if size is None:
            return data
        if len(data) > size:
            raise SeedfwError(f"is {len(data):,} bytes, drive '{drive['name']}' holds {size:,}",
                              image, "--image")
        return data + bytes([ERASED]) * (size - len(data))

    def flash(self, image, verify=True) -> FlashResult:
        from ..run import qemu
        image = self.check_image(image)
        drive, name = self.drive_for(image)
        target = qemu.drive_file(self.board, self.outdir, drive)
        if target.exists():
            # a drive file someone attached to a loop device (to look inside) or swaps to: the
            # rename below would leave them on the old bytes, the report on the new ones
            in_use.refuse_in_use(target)
        started = time.monotonic()
        data = image.read_bytes()  # door: the image to flash, checked by image_checks
        want = self.contents(drive, data, image)
        util.write_bytes(target, want)
        result = FlashResult(image=image, backend=self.name, programmed_bytes=len(data),
                             regions=[(0, len(data))])
        self.log(f"programmed {len(data):,} bytes of {name} into drive '{drive['name']}' "
                 f"({target}, {len(want):,} bytes)")
        if verify:
            got = target.read_bytes()  # door: read-back of the drive this runner wrote
            digest = hashlib.sha256(got).hexdigest()
            if digest != hashlib.sha256(want).hexdigest():
                bad = first_mismatch(want, got)
                raise SeedfwError(f"verify failed: byte 0x{bad:x} of the drive differs from "
                                  f"what was written", target, "verify")
            result.verified_bytes = len(got)
            self.log(f"verified {len(got):,} bytes: sha256 {digest[:16]}… matches")
        util.write_json(target.with_suffix(".json"), {
            "drive": drive["name"], "image": name, "image_sha256": util.sha256_file(image),
            "image_size": len(data), "drive_sha256": hashlib.sha256(want).hexdigest()})
        result.seconds = time.monotonic() - started
        return result

    def erase(self) -> None:
        """Every drive of the board back to erased (pflash: 0xff; a block drive: removed)."""
        from ..run import qemu
        for drive in qemu.drives(self.board):
            target = qemu.drive_file(self.board, self.outdir, drive)
            if drive.get("size"):
                util.write_bytes(target, bytes([ERASED]) * drive["size"])
            else:
                target.unlink(missing_ok=True)
            target.with_suffix(".json").unlink(missing_ok=True)


def describe(board, outdir: Path, drive_name: str) -> str:
    """What `invoke run` says before booting a flashed drive: which file, what was programmed,
    and whether the build's file has changed since (then the flash holds the older one)."""
    from ..run import qemu
    drive = next(d for d in qemu.drives(board) if d["name"] == drive_name)
    target = qemu.drive_file(board, outdir, drive)
    note = f"run: booting drive '{drive_name}' from {target} (flashed"
    try:
        rec = util.read_json(target.with_suffix(".json"), "")
    except (OSError, SeedfwError):
        return note + "; no record of what)"
    note += f" with {rec.get('image')}"
    built = next((ld.path for ld in qemu.declared(board, outdir)
                  if ld.name == rec.get("image")), None)
    if built is not None and built.is_file() and util.sha256_file(built) != rec.get("image_sha256"):
        note += f"; the build's {rec.get('image')} changed since: 'invoke flash' to update it"
    return note + ")"
