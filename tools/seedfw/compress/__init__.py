"""Section compression: LZ4 blocks against a small dictionary, in the lz4blk container.

Modules (one job each):
  blocks.py      compress one buffer into independent LZ4 blocks (python-lz4, HC or fast)
  container.py   the lz4blk container (firmware/include/seedfw/lz4blk.h): writer + validating reader
  dictionary.py  dictionary sources: trained from other images, a file in the tree, resident bytes
  sections.py    pick sections from an ELF, compress each with and without the dictionary, report
  train.py       regenerate the project dictionary firmware/lz4/dict/aarch64-rodata.dict
"""

from .container import read_container, write_container, parse_container, ContainerInfo
from .dictionary import Dictionary, train_dictionary, dictionary_id
from .sections import SectionResult, compress_elf_sections, write_report

__all__ = ["read_container", "write_container", "parse_container", "ContainerInfo", "Dictionary",
           "train_dictionary", "dictionary_id", "SectionResult", "compress_elf_sections",
           "write_report"]
