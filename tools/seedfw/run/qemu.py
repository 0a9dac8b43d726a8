"""Every QEMU command line, built in one function from board.yaml and the build's declarations.

`command(board, outdir, mode, ...)`:
  * machine: board.yaml `qemu` (binary, machine, cpu, memory, args), plus `-nic none` unless the
    board configures a network (see `machine_args`), plus `-nographic` (the UART on stdout);
  * what QEMU loads: the boot artifacts the build declared in <out>/manifest.json, each with how
    QEMU loads it (`declared.qemu.load`: bios, kernel, initrd, loader at `addr`, drive) and the
    modes it is loaded in (`declared.qemu.modes`). No file name is known here; the part that
    makes a file declares it (seedfw.parts.base.Output), seedfw.manifest reads it;
  * board.yaml `qemu.drives`: the storage QEMU gives the guest, each holding one load kind. A
    drive that `invoke flash` programmed (<out>/qemu/<drive>.img, seedfw.flash.qemu_drive) is
    booted instead of the build's file: the bios comes from the secure flash as on a board;
  * mode options: `gdb` (stub on a loopback port), `halted` (-S), `icount`, `extra` (a plugin...).

Modes: "firmware" (`invoke run`, counters, tune trials: the chain as the board boots it; plus
board.yaml `qemu.firmware_args`), "os" (QEMU starts Linux itself: no secure firmware, so the
machine loses `secure=on`; seedfw.run.os_boot), "bare" (nothing loaded: the GDB-probe target,
whose flash starts erased and is programmed through the probe; a DT dump).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import SeedfwError

LOADS = ("bios", "kernel", "initrd", "loader", "drive", "dtb-overlay")
MODES = ("firmware", "os", "bare")
NETWORK_OPTIONS = ("-nic", "-net", "-netdev")
# QEMU's own options for each load kind (a drive's depend on the board's drive, a DT overlay is
# applied by the caller before QEMU starts: seedfw.run.os_boot).
OPTION = {"bios": "-bios", "kernel": "-kernel", "initrd": "-initrd"}


@dataclass(frozen=True)
class Load:
    """One declared boot artifact that QEMU loads itself."""

    name: str
    path: Path
    load: str
    modes: tuple[str, ...]
    addr: int | None
    role: str


def board_file(board) -> Path:
    return board.dir / "board.yaml"


def qemu_section(board) -> dict:
    q = board.qemu
    if not q:
        raise SeedfwError(f"board '{board.name}' cannot run in QEMU (no 'qemu' section)",
                          board_file(board), "qemu")
    return q


def machine_args(board, secure: bool = True, machine_extra: str = "") -> list[str]:
    """QEMU, the machine, cpu, memory and board.yaml's args: everything but the images.

    `-nic none` unless board.yaml configures a network: without it QEMU creates the machine's
    default NIC (virtio-net-pci on `virt`), which makes it load `efi-virtio.rom` from the
    ipxe-qemu package — a mere Recommends of qemu-system-arm, absent on a fresh machine — and no
    board here boots over the network. `invoke doctor` asks QEMU which data files these arguments
    still load. `secure=False` drops `secure=on` from the machine: Linux started by QEMU itself
    runs at EL1/EL2 with PSCI through HVC (with secure=on QEMU expects firmware at EL3).
    """
    q = qemu_section(board)
    machine = q["machine"]
    if not secure:
        machine = ",".join(p for p in machine.split(",") if p != "secure=on")
    if machine_extra:
        machine += "," + machine_extra
    cmd = [q["binary"], "-machine", machine, "-cpu", q["cpu"]]
    if q.get("memory"):
        cmd += ["-m", str(q["memory"])]
    cmd += list(q.get("args", []))
    if not any(a in NETWORK_OPTIONS for a in cmd):
        cmd += ["-nic", "none"]
    return cmd


# -- what the build declared ---------------------------------------------------------------------
def manifest_path(outdir: Path) -> Path:
    return Path(outdir) / "manifest.json"


def declared(board, outdir: Path, images: Path | None = None) -> list[Load]:
    """The artifacts <out>/manifest.json declares QEMU loads, in manifest order; `images` (a
    test's tampered copy of images/) is where their files are taken from instead."""
    from ..manifest import Manifest
    manifest = Manifest.load(outdir, f"not built yet (run 'invoke build --board {board.name}')")
    out = []
    for a in manifest.qemu_loads():
        path = manifest.file(a)
        if images is not None and Path(a.path).parts[:1] == ("images",):
            path = Path(images).joinpath(*Path(a.path).parts[1:])
        out.append(Load(a.name, path, a.qemu.load, a.qemu.modes, a.qemu.addr, a.role))
    return out


def declares_role(outdir: Path, role: str) -> bool:
    """Whether the manifest declares a present artifact of `role` (e.g. "os-fit")."""
    from ..manifest import Manifest
    manifest = Manifest.find(outdir)
    return manifest is not None and bool(manifest.by_role(role, present=True))


# -- drives ----------------------------------------------------------------------------------------
def drives(board) -> list[dict]:
    return list((board.qemu or {}).get("drives", []))


def drive_holding(board, load: str) -> dict | None:
    return next((d for d in drives(board) if d["holds"] == load), None)


def drive_file(board, outdir: Path, drive: dict) -> Path:
    """Where `invoke flash` (runner qemu) keeps a drive's contents: <out>/qemu/<name>.img."""
    return Path(outdir) / "qemu" / f"{drive['name']}.img"


def drive_args(drive: dict, file: Path) -> list[str]:
    """A pflash unit, or a block device of the interface board.yaml names (virtio-blk-device)."""
    if drive["interface"] == "pflash":
        return ["-drive", f"if=pflash,format=raw,unit={drive.get('unit', 0)},file={file}"]
    ident = f"seedfw-{drive['name']}"
    return ["-drive", f"if=none,format=raw,file={file},id={ident}",
            "-device", f"{drive['interface']},drive={ident}"]


def flashed(board, outdir: Path) -> dict[str, Path]:
    """{drive name: file} of the drives `invoke flash` programmed in this output directory."""
    return {d["name"]: drive_file(board, outdir, d) for d in drives(board)
            if drive_file(board, outdir, d).is_file()}


def load_args(board, outdir: Path, load: Load, use_flashed: bool = True) -> list[str]:
    if load.load == "dtb-overlay":
        return []                               # applied to the DT before QEMU starts
    drive = drive_holding(board, load.load)
    if drive is not None and use_flashed and drive_file(board, outdir, drive).is_file():
        return drive_args(drive, drive_file(board, outdir, drive))
    if not load.path.is_file():
        raise SeedfwError(f"not built yet (run 'invoke build --board {board.name}')", load.path)
    if load.load in OPTION:
        return [OPTION[load.load], str(load.path)]
    if load.load == "loader":
        if load.addr is None:
            raise SeedfwError("a loader declaration needs an address", manifest_path(outdir),
                              f"{load.name}: declared.qemu.addr")
        return ["-device", f"loader,file={load.path},addr={load.addr:#x},force-raw=on"]
    if load.load == "drive":
        if drive is None:
            raise SeedfwError(f"the build declares {load.name} as a drive, the board has no "
                              "drive that holds one", board_file(board), "qemu.drives")
        return drive_args(drive, load.path)
    raise SeedfwError(f"unknown load kind '{load.load}'", manifest_path(outdir), load.name)


# -- the command line ------------------------------------------------------------------------------
def command(board, outdir: Path | None = None, mode: str = "firmware", *,
            images: Path | None = None, overrides: dict[str, Path] | None = None,
            gdb: int | None = None, halted: bool = False, icount: str | None = None,
            dtb: Path | None = None, append: str | None = None, machine_extra: str = "",
            use_flashed: bool = True, extra: Iterable[str] = ()) -> list[str]:
    """The full QEMU command line for `board` in `mode` (see the module doc).

    `overrides` {load kind: file} replaces a declared file (a test's truncated initramfs);
    `dtb`/`append` are the DT and kernel command line of the "os" mode; `use_flashed=False`
    boots the build's files even where a flashed drive exists."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    cmd = machine_args(board, secure=mode != "os", machine_extra=machine_extra)
    if "-nographic" not in cmd:
        cmd.append("-nographic")
    if mode != "bare":
        loads = [ld for ld in declared(board, outdir, images) if mode in ld.modes]
        if not any(ld.load in ("bios", "kernel") for ld in loads):
            raise SeedfwError(f"the build declares nothing QEMU can start in mode '{mode}' "
                              f"(run 'invoke build --board {board.name}')",
                              manifest_path(outdir), "artifacts")
        for ld in loads:
            if overrides and ld.load in overrides:
                ld = Load(ld.name, Path(overrides[ld.load]), ld.load, ld.modes, ld.addr, ld.role)
            cmd += load_args(board, outdir, ld, use_flashed and mode == "firmware")
        if mode == "firmware":
            cmd += list(qemu_section(board).get("firmware_args", []))
    if dtb is not None:
        cmd += ["-dtb", str(dtb)]
    if append is not None:
        cmd += ["-append", append]
    if halted:
        cmd.append("-S")
    if gdb is not None:
        cmd += ["-gdb", f"tcp:127.0.0.1:{gdb}"]
    if icount:
        cmd += ["-icount", icount]
    return cmd + list(extra)


def start(cmd: list[str], board=None) -> subprocess.Popen:
    """Start QEMU with the UART (and QEMU's own messages) on one pipe; the caller owns it (and
    stops it with `stop`). stdin is not the terminal: with -nographic QEMU would otherwise put
    the tty in raw mode."""
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except FileNotFoundError:
        raise SeedfwError(f"command not found: {cmd[0]} (run 'invoke setup')",
                          board_file(board) if board else None,
                          "qemu.binary" if board else None) from None


def stop(proc: subprocess.Popen, grace: float = 2.0) -> int:
    """Terminate a QEMU started by `start` (and only that process); return its exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
