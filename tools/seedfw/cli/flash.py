"""Tasks: flash (program + verify through the board's backend), bench (list/check), counters.

Every `invoke` run imports this module to list the tasks, so pyOCD, pyelftools and the work
modules are imported inside the task bodies. Inputs (probe id, image, manifest, and the
image's signature when its build requires signing) are checked before a probe is touched or QEMU
is started.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from . import command
from ..errors import SeedfwError

__all__ = ["flash", "bench", "counters"]

ARCH_MACHINE = {"armv7m": 40, "aarch64": 183}      # board.yaml arch -> ELF e_machine


# Which artifact of a build a backend programs when --image is not given (first one present).
DEFAULT_ARTIFACTS = {"pyocd": ("mcu.elf", "mcu.hex", "mcu.bin"), "rockusb": ("idbloader.img",)}


def _read_manifest(manifest: Path) -> dict:
    try:
        data = json.loads(manifest.read_text())
    except json.JSONDecodeError as exc:
        raise SeedfwError(f"not valid JSON: {exc.msg}", manifest, f"line {exc.lineno}") from None
    except UnicodeDecodeError:
        raise SeedfwError("not valid JSON: not UTF-8 text", manifest) from None
    if not isinstance(data, dict):
        raise SeedfwError("must be a JSON object (the build manifest)", manifest)
    return data


def _artifacts(manifest: Path, data: dict) -> list[dict]:
    artifacts = data.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(a, dict) for a in artifacts):
        raise SeedfwError("must be a list of objects", manifest, "artifacts")
    return artifacts


def find_image(board, image, output) -> Path:
    """--image, or the board's flashable artifact listed in <out>/manifest.json (the build's)."""
    from ..paths import output_dir

    if image:
        return Path(image)
    out = output_dir(board.name, output)
    manifest = out / "manifest.json"
    if not manifest.is_file():
        raise SeedfwError("no --image given and no build output here (run the build first)", manifest)
    artifacts = {a.get("name"): a.get("path") for a in _artifacts(manifest, _read_manifest(manifest))}
    for name in DEFAULT_ARTIFACTS.get(board.flash_backend, ()):
        if name in artifacts:
            return out / artifacts[name]
    raise SeedfwError(f"manifest lists none of {', '.join(DEFAULT_ARTIFACTS.get(board.flash_backend, ()))}; "
                      "pass --image", manifest, "artifacts")


def _manifest_for(image: Path) -> Path | None:
    """The build manifest.json beside the image or in a parent (the image may sit in a sub-folder
    of the output directory); None for a loose image."""
    for folder in list(image.resolve().parents)[:3]:
        candidate = folder / "manifest.json"
        if candidate.is_file():
            return candidate
    return None


def check_image_board(board, image: Path) -> None:
    """Refuse an image that is empty, built for another board (the build manifest names the
    board), changed since the build (size and sha256 against the manifest entry), or an ELF that
    is truncated or for another architecture."""
    from .. import util
    from ..flash.base import ELF_SUFFIXES, EM_NAMES, check_elf_image

    size = image.stat().st_size
    if size == 0:
        raise SeedfwError("empty image (0 bytes): nothing to program", image)
    manifest = _manifest_for(image)
    if manifest is not None:
        data = _read_manifest(manifest)
        built_for = data.get("board")
        if built_for and built_for != board.name:
            raise SeedfwError(f"image was built for board '{built_for}', not '{board.name}'", manifest, "board")
        for entry in _artifacts(manifest, data):
            listed = entry.get("path")
            if not isinstance(listed, str) or (manifest.parent / listed).resolve() != image.resolve():
                continue
            if isinstance(entry.get("size"), int) and entry["size"] != size:
                raise SeedfwError(f"{size} bytes, but the build's manifest.json lists {entry['size']} "
                                  "(truncated or changed since the build)", image, "size")
            if isinstance(entry.get("sha256"), str) and util.sha256_file(image) != entry["sha256"]:
                raise SeedfwError("sha256 differs from the build's manifest.json (changed since the "
                                  "build)", image, "sha256")
    with open(image, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF" or image.suffix.lower() in ELF_SUFFIXES:
        machine = check_elf_image(image)
        want = ARCH_MACHINE.get(board.arch)
        if want and machine != want:
            raise SeedfwError(f"ELF is for {EM_NAMES.get(machine, f'e_machine {machine}')}, board "
                              f"'{board.name}' needs {EM_NAMES[want]}", image, "e_machine")


def _config_for(image: Path) -> Path | None:
    """config.json of the output directory an image came from (beside it or up to two levels
    above: images sit in <out>/images/); None for a loose image."""
    for folder in list(image.resolve().parents)[:3]:
        if (folder / "config.json").is_file():
            return folder / "config.json"
    return None


def check_image_signature(board, image: Path) -> None:
    """Refuse an unsigned image, or one whose FIT signature does not verify, when the image's
    build configuration says CONFIG_IMAGE_SIGN_REQUIRED. Runs before any probe is touched.

    The public key is the configured one (<IMAGE_SIGN_KEY_DIR>/<name>.crt, only its public half
    is read), not the `<board>-pubkey.dtb` in the output: whoever can replace the image could
    replace that file too. Without the certificate, the build's public-key DTB is used."""
    from .. import config as config_mod
    from ..images import fit_sig, inspect as inspect_mod
    from ..paths import ROOT

    cfg_path = _config_for(image)
    if cfg_path is None:
        return
    values = config_mod.load_values(cfg_path.parent)
    if not (values.get("IMAGE_SIGN") and values.get("IMAGE_SIGN_REQUIRED")):
        return
    why = f"board '{board.name}' requires signed images (IMAGE_SIGN_REQUIRED in {cfg_path})"
    with open(image, "rb") as f:
        if f.read(4) != b"\xd0\x0d\xfe\xed":
            raise SeedfwError(f"unsigned image (not a signed FIT): {why}", image, "signature")
    name = values.get("IMAGE_SIGN_KEY_NAME") or "dev"
    key_dir = Path(values.get("IMAGE_SIGN_KEY_DIR") or "keys")
    cert = (key_dir if key_dir.is_absolute() else ROOT / key_dir) / f"{name}.crt"
    pubkey_dtb = cfg_path.parent / "images" / f"{board.name}-pubkey.dtb"
    if cert.is_file():
        report = inspect_mod.inspect(image, keys=fit_sig.keys_from_cert(cert, name))
    elif pubkey_dtb.is_file():
        report = inspect_mod.inspect(image, pubkey_dtb)
    else:
        raise SeedfwError(f"no public key to check the signature with (neither {cert} nor "
                          f"{pubkey_dtb}): {why}", image, "signature")
    sigs = [r for r in report.rows if r.type == "signature"]
    if not sigs or all(r.hash_algo == "none" for r in sigs):
        raise SeedfwError(f"unsigned FIT: {why}", image, "signature")
    bad = [f"{r.name}: {r.detail if r.type == 'signature' else 'hash BAD'}"
           for r in report.rows if not r.hash_ok]
    if bad:
        raise SeedfwError(f"signature check failed ({'; '.join(bad)}): {why}", image, "signature")


@contextlib.contextmanager
def reach_probe(board, probe, bench_path, uart_log=None):
    """Yield (probe uid, pyOCD target or None, QemuGdbTarget or None) for a board: --probe wins,
    else the bench entry for the board; `qemu:auto` starts QEMU on loopback for the duration."""
    from .. import bench as benchmod

    entry = None
    if not probe:
        if not (bench_path or os.environ.get("SEEDFW_BENCH")):
            raise SeedfwError(f"no --probe and no bench file for board '{board.name}'", None, "--probe")
        entries = benchmod.load(bench_path)
        entry = benchmod.entry_for_board(entries, board.name)
        if entry is None:
            raise SeedfwError(f"no bench entry for board '{board.name}'", benchmod.bench_file(bench_path), "boards")
        probe = entry.probe
    target = entry.pyocd_target() if entry else None
    if entry is not None:
        benchmod.run_power(entry, "on")  # no-op unless the bench entry has a power.on command
    if probe.lower() == "qemu:auto":
        extra = entry.qemu_args if entry else ("-icount", "shift=3")
        with benchmod.QemuGdbTarget(board, uart_log=uart_log, extra_args=extra) as q:
            yield q.uid, target, q
    else:
        yield probe, target, None


@command(help={
    "board": "board name (board/<name>/board.yaml)",
    "probe": "probe unique id (pyOCD UID such as cmsisdap:…, qemu:HOST:PORT, qemu:auto); default from the bench",
    "image": "image to program (ELF, HEX or BIN); default: the board's artifact in <output>/manifest.json",
    "bench": "bench file (default $SEEDFW_BENCH)",
    "output": "build output directory (default output/<board>)",
    "target": "pyOCD target type (default: bench entry, then board.yaml pyocd.target)",
    "verify": "read back and compare every programmed byte (default on)",
    "loader": "rockusb only: maskrom loader for `rkdeveloptool db`",
})
def flash(c, board, probe=None, image=None, bench=None, output=None, target=None, verify=True, loader=None):
    """Program an image into a board through its flash backend, then verify it."""
    from .. import boards
    from ..flash import runner_class
    from ..flash.probe_ids import check_probe_uid

    b = boards.get(board)
    if probe and b.flash_backend == "pyocd":
        check_probe_uid(probe)
    img = find_image(b, image, output)
    if img.is_dir():
        raise SeedfwError("is a directory, not an image file", img, "--image")
    if not img.is_file():
        raise SeedfwError("image file not found", img, "--image")
    check_image_board(b, img)
    check_image_signature(b, img)
    cls = runner_class(b.flash_backend, b.dir / "board.yaml")
    if b.flash_backend != "pyocd":
        result = cls.from_board(b, probe, loader=loader).flash(img, verify=verify)
        print(f"ok: {result.image} -> {b.name} ({result.programmed_bytes} bytes)")
        return
    with reach_probe(b, probe, bench) as (uid, bench_target, qemu):
        runner = cls.from_board(b, uid, target=target or bench_target)
        result = runner.flash(img, verify=verify)
        if qemu is not None:
            # QEMU started for this task stops with it: show that the image runs first.
            out = qemu.wait_uart("\n", timeout=5.0)
            print("uart:", out.strip().splitlines()[0])
    print(f"ok: {result.image} -> {b.name} ({result.programmed_bytes} bytes, "
          f"{result.verified_bytes} verified)")


@command(help={
    "bench": "bench file (default $SEEDFW_BENCH)",
    "check": "also check each entry (probe answers via pyOCD, serial exists; QEMU entries are started)",
    "json": "print JSON",
})
def bench(c, bench=None, check=False, json_=False):
    """List the boards on the bench and optionally check each one."""
    from .. import bench as benchmod

    entries = benchmod.load(bench)
    rows = [benchmod.check(e) if check else
            {"name": e.name, "board": e.board, "probe": e.probe, "target": e.pyocd_target()} for e in entries]
    if json_:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            state = "" if not check else ("  ok" if r["ok"] else "  FAIL") + \
                f" (probe {'yes' if r['probe_present'] else 'no'}, serial {'yes' if r['serial_present'] else 'no'})"
            print(f"{r['name']:<16} {r['board']:<12} {r['probe']:<26} {r['target'] or '-'}{state}")
    if check and not all(r["ok"] for r in rows):
        raise SeedfwError("some bench entries failed their check", benchmod.bench_file(bench))


@command(help={
    "board": "board name",
    "probe": "probe unique id (default from the bench; qemu:auto starts QEMU; A-class: qemu:HOST:PORT of a GDB stub)",
    "elf": "firmware ELF with the `seedfw_stats` symbol (stats-block boards)",
    "flash_first": "program the ELF first (always done for qemu:auto, whose fresh QEMU has no image)",
    "bench": "bench file (default $SEEDFW_BENCH)",
    "recorded": "YAML of recorded register values to decode instead of a live board (rk3588-dfi)",
    "map": "counter map (rk3588-dfi; default board/<board>/counters.yaml)",
    "json": "print JSON",
})
def counters(c, board, probe=None, elf=None, flash_first=False, bench=None, recorded=None, map_=None,
             json_=False):
    """Read the board's counters (stats block or RK3588 DFI) through the probe."""
    from .. import boards
    from ..counters import source_class
    from ..flash.probe_ids import check_probe_uid

    b = boards.get(board)
    cls = source_class(b.counters, b.dir / "board.yaml")
    if probe:
        check_probe_uid(probe)
    if map_ and b.counters != "rk3588-dfi":
        raise SeedfwError(f"board '{b.name}' has no counter map (its counter source is "
                          f"{b.counters})", None, "--map")
    if b.counters == "rk3588-dfi":
        values = _dfi_counters(b, cls, probe, recorded, map_)
    else:
        values = _stats_counters(b, cls, probe, elf, flash_first, bench)
    if json_:
        print(json.dumps(values, indent=2, sort_keys=True))
    else:
        for k, v in values.items():
            print(f"{k:<20} {v}")


def _stats_counters(b, cls, probe, elf, flash_first, bench_path):
    source = cls(b, elf=elf)            # checks the ELF before any probe is reached
    if b.arch != "armv7m":
        return _stats_counters_gdb(b, source, probe)

    from pyocd.core.helpers import ConnectHelper

    from ..counters.base import PyocdReader
    from ..flash import runner_class

    with reach_probe(b, probe, bench_path) as (uid, target, qemu):
        target = target or (b.pyocd or {}).get("target")
        if flash_first or qemu is not None:
            runner_class("pyocd").from_board(b, uid, target=target, log=lambda *_: None).flash(elf)
        if qemu is not None:
            qemu.wait_uart("stats:", timeout=5.0)
        session = ConnectHelper.session_with_chosen_probe(unique_id=uid, target_override=target,
                                                          blocking=False, options={"connect_mode": "attach"})
        if session is None:
            raise SeedfwError(f"debug probe '{uid}' not found", None, "--probe")
        with session:
            return source.sample(PyocdReader(session.target))


def _stats_counters_gdb(b, source, probe):
    """A-class guests: pyOCD drives Cortex-M only, so read the block straight through the GDB stub
    of a running QEMU (the guest is paused for the read and continues afterwards)."""
    from ..counters.base import RspReader
    from ..flash.probe_ids import parse_qemu_uid as parse_uid
    from ..flash.qemu_probe.rsp import RspClient

    try:
        host, port = parse_uid(probe or "")
    except ValueError:
        raise SeedfwError(f"board '{b.name}' is read through a running QEMU's GDB stub: "
                          "pass --probe qemu:HOST:PORT", None, "--probe") from None
    rsp = RspClient(host, port)
    try:
        values = source.sample(RspReader(rsp))
        if rsp.was_running_at_connect:
            rsp.cont()
    finally:
        rsp.close()
    return values


def _dfi_counters(b, cls, probe, recorded, map_file):
    from ..counters.rk3588_dfi import load_recording

    if not recorded:
        raise SeedfwError("no RK3588 board reachable here: pass --recorded FILE with register values "
                          "(a live board needs a MEM-AP probe path, not available in this tree yet)",
                          None, "--probe" if probe else "--recorded")
    source = cls(b, config_path=map_file, sleep=lambda s: None)    # the map is checked first
    return source.sample(load_recording(recorded))
