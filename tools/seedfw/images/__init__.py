"""Images stage: DVFS outputs + model blobs + firmware → boot package (always) and FIT (boards
whose board.yaml says `image.format: fit`), plus images.json describing what went in.

The build orchestrator calls `build_images(...)`; everything else here is reusable on its own
(package.encode/decode, fit.build, inspect.inspect).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..paths import ROOT
from ..util import write_json
from . import fit, package
from .entries import DvfsEntry, Entry, FdtEntry, FirmwareEntry, ModelEntry, read

ARCH = {"aarch64": "arm64", "armv7m": "arm"}
# Which board memory region a firmware name loads into, and its FIT os.
FIRMWARE_KINDS = {"bl31": ("bl31", "arm-trusted-firmware"), "payload": ("bl33", None),
                  "bl33": ("bl33", None), "mcu": ("flash", None)}
PACKAGE_REGION = "boot-package"


def firmware_entries(board, name: str, path) -> list[FirmwareEntry]:
    """A raw binary → one entry at its board region; an ELF → one entry per load segment."""
    region, os_name = FIRMWARE_KINDS.get(name, (None, None))
    if str(path).endswith(".elf"):
        return FirmwareEntry.from_elf(name, path, ARCH[board.arch], os_name)
    load = None
    if region and any(r.name == region for r in board.memory):
        load = board.region(region).base
    return [FirmwareEntry(name, read(path), arch=ARCH[board.arch], os=os_name, load=load)]


def collect_entries(config_values: dict, board, images_dir: str | Path,
                    firmware_paths: Mapping[str, str | Path], elf_paths=(),
                    log: str | Path | None = None) -> list[Entry]:
    """firmware (in the given order), DVFS table, OPP fragment, models (manifest order)."""
    # Imported here, not at the top: they pull in YAML and pyelftools (~50 ms), which the
    # readers and writers of this package (fit_stream, inspect, fdt) do not need.
    from .. import models
    from ..dvfs import hints as dvfs_hints
    outs = dvfs_hints.build_outputs(board, config_values, images_dir, elf_paths, log=log)
    entries: list[Entry] = [e for n, p in firmware_paths.items() for e in firmware_entries(board, n, p)]
    entries.append(DvfsEntry("dvfs", outs["bin"].read_bytes()))  # door: written above
    entries.append(FdtEntry("opp", outs["dtb"].read_bytes()))  # door: written above
    entries += [ModelEntry.from_model(m) for m in models.for_build(board, config_values)]
    return entries


def package_address(board) -> int | None:
    """Where the boot package is loaded (board.yaml memory region 'boot-package'), if defined."""
    return next((r.base for r in board.memory if r.name == PACKAGE_REGION), None)


def build_images(config_values: dict, board, images_dir: str | Path,
                 firmware_paths: Mapping[str, str | Path], elf_paths=(),
                 log: str | Path | None = None) -> list[Path]:
    """Build every image for the board; returns the written paths.

    config_values: Config.values (POWER_PROFILE, MODELS, MODEL_MANIFEST, MODELS_COMPRESS,
                   IMAGE_SIGN, IMAGE_SIGN_KEY_DIR, IMAGE_SIGN_KEY_NAME, IMAGE_SIGN_REQUIRED)
    firmware_paths: {"bl31" | "payload" | "mcu" | other: path}; a raw binary loads at the board
                    region of its kind, an .elf is split into its load segments
    elf_paths: ELFs whose .dvfs_hint records are harvested into the DVFS table
    log: where dtc/mkimage command lines and output are appended (the build's log)
    """
    images_dir = Path(images_dir)
    entries = collect_entries(config_values, board, images_dir, firmware_paths, elf_paths, log)
    limit = board.image["partition_size"]
    written = []
    pkg_path = images_dir / f"{board.name}-boot.pkg"
    package.write(entries, pkg_path, partition_size=limit)
    written.append(pkg_path)
    fit_path = None
    if board.image["format"] == "fit":
        sign = {}
        if config_values.get("IMAGE_SIGN"):
            key_dir = Path(config_values.get("IMAGE_SIGN_KEY_DIR") or "keys")
            sign = {"key_dir": key_dir if key_dir.is_absolute() else ROOT / key_dir,
                    "key_name": config_values.get("IMAGE_SIGN_KEY_NAME") or "dev",
                    "pubkey_dtb": images_dir / f"{board.name}-pubkey.dtb",
                    "required": bool(config_values.get("IMAGE_SIGN_REQUIRED", True))}
        fit_path = images_dir / f"{board.name}.itb"
        fit.build(entries + package_image(board, pkg_path), fit_path,
                  description=f"seedfw {board.name}", partition_size=limit, log=log, **sign)
        written.append(fit_path)
        if sign:
            written.append(sign["pubkey_dtb"])
    blob = pkg_path.read_bytes()  # door: the package this function just wrote
    manifest = images_dir / "images.json"
    write_json(manifest, {
        "board": board.name,
        "package": {"file": pkg_path.name, "load_address": package_address(board),
                    "size": len(blob), "expected_boot_lines": package.expected_boot_lines(blob)},
        "fit": fit_path.name if fit_path else None,
        "entries": [{"name": e.name, "type": e.kind, "size": e.uncompressed_size,
                     "stored_size": len(e.data), "sha256": e.sha256} for e in entries],
    })
    written.append(manifest)
    return written


def package_image(board, pkg_path: Path) -> list[Entry]:
    """The boot package as one more FIT image ("package", loaded at the board's boot-package
    region), for boards whose FIT "firmware" carries role boot-package (board.yaml image.fits)
    and that have the region: U-Boot verifies the FIT and copies this image there
    (seedfw.parts.fit_verify), so the OS agent checks the bytes U-Boot verified."""
    address = package_address(board)
    if address is None or "boot-package" not in board.fit_roles("firmware"):
        return []
    return [FirmwareEntry("package", pkg_path.read_bytes(), arch=ARCH[board.arch],  # door: written above
                          load=address)]
