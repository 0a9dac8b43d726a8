"""Compression tasks: compress (ELF sections into lz4blk containers, with the dictionary's verdict)
and train-dict (regenerate a project dictionary from other images)."""

from __future__ import annotations

from pathlib import Path

from . import command
from ..errors import SeedfwError
from ..util import write_bytes

__all__ = ["compress", "train_dict"]


def _dictionary(elf: str, dict_path, dict_size: int, train_from, resident):
    from ..compress.dictionary import Dictionary

    chosen = [n for n, v in (("--dict", dict_path), ("--train-from", train_from),
                             ("--resident", resident)) if v]
    if len(chosen) > 1:
        raise SeedfwError(f"choose one dictionary source, not {' and '.join(chosen)}",
                          field="dictionary")
    if dict_size < 0:
        raise SeedfwError(f"dictionary size {dict_size} is negative", field="dict-size")
    if dict_size == 0 or not chosen or dict_path == "none":
        return Dictionary.none()
    if dict_path:
        return Dictionary.from_file(dict_path, dict_size)
    if resident:
        from ..compress.sections import read_elf_sections
        found = read_elf_sections(elf, [resident])
        if resident not in found:
            raise SeedfwError(f"section {resident} not found", file=elf, field="resident")
        return Dictionary.resident(found[resident][1], dict_size, f"{resident} of {Path(elf).name}")
    return None  # trained: needs the section list, done by the caller


@command(iterable=["section", "train_from"], help={
    "elf": "the ELF whose sections to compress",
    "section": "section to compress (repeatable; default .rodata)",
    "block_size": "block size in bytes: 4096, 16384 or 65536 (default 65536)",
    "level": "LZ4 HC level 1-12, 0 = fast mode (default 12)",
    "dict": "dictionary file (e.g. firmware/lz4/dict/aarch64-rodata.dict), or 'none'",
    "dict_size": "dictionary bytes to use (tail of the file / trained size; 0 = none; default 2048)",
    "train_from": "train the dictionary from the same sections of this OTHER ELF (repeatable)",
    "resident": "use this section of the same ELF as a resident dictionary (stored free)",
    "output": "write <DIR>/compression.json and <DIR>/<section>.lz4blk",
})
def compress(c, elf, section=None, block_size=65536, level=12, dict=None, dict_size=2048,
             train_from=None, resident=None, output=None):
    """Compress ELF sections into LZ4 block containers.

    Compress ELF sections into LZ4 block containers; print raw/no-dict/dict sizes and net gain."""
    from ..compress.dictionary import Dictionary
    from ..compress.sections import compress_elf_sections, format_table, write_report
    from ..compress.train import corpus_from_elfs

    sections = section or [".rodata"]
    block_size, level, dict_size = int(block_size), int(level), int(dict_size)
    dictionary = _dictionary(elf, dict, dict_size, train_from, resident)
    if dictionary is None:
        corpus, _ = corpus_from_elfs([Path(p) for p in train_from], sections)
        dictionary = Dictionary.trained(corpus, dict_size, f"{len(train_from)} ELF(s)")
    results = compress_elf_sections(elf, sections, block_size, level, dictionary)
    print(f"{elf}: blocks of {block_size} B, HC level {level}, dictionary: "
          f"{dictionary.source} {len(dictionary.data)} B")
    print(format_table(results, dictionary))
    if output:
        out = Path(output)
        for r in results:
            write_bytes(out / f"{r.name.lstrip('.')}.lz4blk", r.container)
        print(f"wrote {write_report(out, results, elf, block_size, level, dictionary)}")


@command(iterable=["elf", "section"], help={
    "elf": "corpus ELF: OTHER images than the ones the dictionary will serve (repeatable)",
    "uboot_qemu": "add every board ELF of Debian's u-boot-qemu package (sha256-pinned download)",
    "section": "section(s) to train on (repeatable; default .rodata)",
    "size": "dictionary size in bytes (default 2048)",
    "out": "dictionary file to write (a <out>.json sidecar records the corpus)",
})
def train_dict(c, out, elf=None, uboot_qemu=False, section=None, size=2048):
    """Train an LZ4 dictionary from other images' sections.

    Train an LZ4 dictionary from other images' sections; write it and a provenance sidecar."""
    from ..compress.train import train_project_dictionary

    side = train_project_dictionary([Path(e) for e in elf or []], section or [".rodata"],
                                    int(size), Path(out), uboot_qemu)
    d = side["dictionary"]
    print(f"{out}: {d['size']} bytes, id {d['id_crc32']}, sha256 {d['sha256']}, "
          f"from {len(side['corpus'])} sections")
