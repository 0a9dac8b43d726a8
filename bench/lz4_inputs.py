"""Inputs shared by the LZ4 benchmarks: which ELF sections to measure, and the project dictionary."""

from __future__ import annotations

from pathlib import Path

from seedfw.paths import ROOT

PROJECT_DICT = ROOT / "firmware" / "lz4" / "dict" / "aarch64-rodata.dict"


def default_inputs(with_payload: bool = False) -> list[tuple[Path, list[str]]]:
    """U-Boot's qemu_arm64 ELF (pinned Debian package) plus any TF-A (and payload) ELFs in output/."""
    from seedfw.compress.corpus import uboot_qemu_elf
    inputs = [(uboot_qemu_elf(), [".rodata", ".data"])]
    inputs += [(p, [".rodata", ".text"]) for p in sorted(ROOT.glob("output/*/**/bl31.elf"))]
    if with_payload:
        inputs += [(p, [".rodata", ".text", ".data"])
                   for p in sorted(ROOT.glob("output/*/**/payload*.elf"))]
    return inputs


def parse_input(arg: str) -> tuple[Path, list[str]]:
    """ELF[:SECTION,...] as given on the command line."""
    path, _, secs = arg.partition(":")
    return Path(path), (secs.split(",") if secs else [".rodata"])
