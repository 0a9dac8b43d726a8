"""Regenerate a project dictionary (firmware/lz4/dict/aarch64-rodata.dict) reproducibly.

    python -m seedfw.compress.train --elf A.elf --elf B.elf [--uboot-qemu] \
        --section .rodata --size 2048 --out firmware/lz4/dict/aarch64-rodata.dict
    (or: invoke train-dict ...)

The corpus is the named sections of *other* images than the ones the dictionary will serve
(training on the target itself would flatter every number). Next to the dictionary a sidecar
`<out>.json` records what went in: each ELF's base name, section, size and sha256 of the section
bytes, the training parameters, and the dictionary's sha256 and crc32 id. Training is
deterministic (single-threaded COVER), so the same corpus gives the same bytes; the sidecar lets
anyone check that their corpus is the same one.

--uboot-qemu adds the .rodata of every board in Debian's u-boot-qemu package (pinned sha256,
see corpus.py): a corpus anyone can fetch without building anything. Measured: on TF-A BL31
.rodata a 2 KiB dictionary trained on other TF-A platforms saves ~590 B per section, one trained
on u-boot-qemu only ~100 B; see /work/notes/readme-compress.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import SeedfwError
from ..util import sha256_bytes, write_bytes, write_json
from . import dictionary as dictmod
from .sections import read_elf_sections


def corpus_from_elfs(elfs: list[Path], sections: list[str]) -> tuple[list[bytes], list[dict]]:
    """Section bytes from each ELF (sections an ELF lacks are skipped) and their provenance."""
    corpus, provenance = [], []
    for elf in elfs:
        found = read_elf_sections(elf, sections)
        if not found:
            raise SeedfwError(f"none of the sections {' '.join(sections)} found", file=elf,
                              field="sections")
        for name in sections:
            if name in found:
                data = found[name][1]
                corpus.append(data)
                provenance.append({"elf": elf_label(elf), "section": name, "size": len(data),
                                   "sha256": sha256_bytes(data)})
    return corpus, provenance


def elf_label(elf: Path) -> str:
    """A stable, path-free name: TF-A build trees are <plat>/release/bl31/bl31.elf."""
    parts = Path(elf).resolve().parts
    if len(parts) >= 4 and parts[-3] in ("release", "debug"):
        return f"{parts[-4]}/{parts[-1]}"
    return f"{parts[-2]}/{parts[-1]}" if len(parts) >= 2 else parts[-1]


def train_project_dictionary(elfs: list[Path], sections: list[str], size: int, out: Path,
                             uboot_qemu: bool = False) -> dict:
    """Train, write `out` and `out`.json atomically; return the sidecar content."""
    elfs = [Path(e) for e in elfs]
    if uboot_qemu:
        from .corpus import UBOOT_QEMU_DEB, uboot_qemu_dir
        root = uboot_qemu_dir()
        elfs += sorted(p for p in root.glob("*/uboot.elf"))
    if not elfs:
        raise SeedfwError("no corpus: give --elf files and/or --uboot-qemu", field="corpus")
    corpus, provenance = corpus_from_elfs(elfs, sections)
    data = dictmod.train_dictionary(corpus, size)
    sidecar = {
        "dictionary": {"file": Path(out).name, "size": len(data), "sha256": sha256_bytes(data),
                       "id_crc32": f"0x{dictmod.dictionary_id(data):08x}"},
        "training": {"method": "zstandard.train_dictionary (COVER, k=d=0, steps=40, threads=1, "
                               "level=19), raw content tail, no zstd header",
                     "train_size": max(size * dictmod.TRAIN_OVERSIZE, size + 1024),
                     "sample_size": dictmod.SAMPLE_SIZE,
                     "zstandard": __import__("zstandard").__version__},
        "corpus": provenance,
        "uboot_qemu_deb_sha256": UBOOT_QEMU_DEB.sha256 if uboot_qemu else None,
    }
    write_bytes(out, data)
    write_json(Path(str(out) + ".json"), sidecar)
    return sidecar


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elf", action="append", default=[], help="corpus ELF (repeatable)")
    ap.add_argument("--uboot-qemu", action="store_true", help="add Debian u-boot-qemu's ELFs")
    ap.add_argument("--section", action="append", default=None, help="section (default .rodata)")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        side = train_project_dictionary([Path(e) for e in args.elf], args.section or [".rodata"],
                                        args.size, Path(args.out), args.uboot_qemu)
    except SeedfwError as exc:
        print(f"error: {exc.line()}", file=sys.stderr)
        return 1
    d = side["dictionary"]
    print(f"{args.out}: {d['size']} bytes, id {d['id_crc32']}, sha256 {d['sha256']}, "
          f"from {len(side['corpus'])} sections")
    return 0


if __name__ == "__main__":
    sys.exit(main())
