"""Dictionary sources for LZ4 block compression.

An LZ4 dictionary is just bytes that logically precede every block: matches may copy from it.
Three sources, one small class each, all giving a `Dictionary`:

  trained   from a corpus of sections of *other* images, with zstandard's COVER trainer. A
            zstd dictionary is a header (magic, id, entropy tables: ~100-200 bytes useless to
            LZ4) followed by raw content, with the most useful content at the end. We keep only
            the raw tail: the last `size` bytes of a dictionary trained somewhat larger.
  file      a dictionary kept in the tree (firmware/lz4/dict/*.dict): stored in the image.
  resident  bytes already in memory when the decoder runs (e.g. an earlier stage's rodata or
            the image's own .text): stored size 0, so it never costs anything, but it only
            helps if its content resembles the data.

The dictionary's *stored* size is charged against its gain in every report (sections.py).
dictionary_id() is crc32 of the bytes: the firmware decoder checks it with the CRC code it
already has, rather than carrying a SHA-256.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError
from .blocks import MAX_DICT_REACH
from .container import dictionary_crc

# zstd's trainer needs many samples; splitting sections into pieces of this size gives it
# enough and matches what an LZ4 block at the start sees.
SAMPLE_SIZE = 1024
# Train this many times the wanted size, then keep the tail, so the kept bytes are pure content
# (no zstd header); measured within 0.3 % of training at exactly the wanted size.
TRAIN_OVERSIZE = 4


def dictionary_id(data: bytes) -> int:
    """The id stored in a container header: crc32 of the dictionary, 0 for none."""
    return dictionary_crc(data)


@dataclass(frozen=True)
class Dictionary:
    """A dictionary and what it costs.

    data:        the bytes (at most 64 KiB are usable by LZ4)
    source:      "trained", "file", "resident" or "none"
    stored_size: bytes the image must carry for it (0 when resident)
    origin:      human-readable where-from (file path, corpus description)
    """
    data: bytes
    source: str
    stored_size: int
    origin: str = ""

    @property
    def id(self) -> int:
        return dictionary_id(self.data)

    @classmethod
    def none(cls) -> "Dictionary":
        return cls(b"", "none", 0, "")

    @classmethod
    def from_file(cls, path: str | Path, size: int | None = None) -> "Dictionary":
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SeedfwError(f"cannot read dictionary: {exc.strerror}", file=path) from None
        if not data:
            raise SeedfwError("dictionary file is empty", file=path)
        if size is not None and size < len(data):
            data = data[-size:]  # the tail is what the decoder sees nearest to the block
        _check_size(data, path)
        return cls(data, "file", len(data), str(path))

    @classmethod
    def resident(cls, data: bytes, size: int, origin: str = "resident") -> "Dictionary":
        """The last `size` bytes of memory-resident data; stored size 0."""
        data = bytes(data[-size:]) if size else b""
        _check_size(data, origin)
        return cls(data, "resident", 0, origin)

    @classmethod
    def trained(cls, corpus: list[bytes], size: int, origin: str = "trained") -> "Dictionary":
        return cls(train_dictionary(corpus, size), "trained", size, origin)


def _check_size(data: bytes, where) -> None:
    if len(data) > MAX_DICT_REACH + 1:
        raise SeedfwError(f"dictionary of {len(data)} bytes: LZ4 offsets reach only 64 KiB",
                          file=str(where))


def split_samples(corpus: list[bytes], sample_size: int | None = None) -> list[bytes]:
    sample_size = sample_size or SAMPLE_SIZE
    samples = []
    for chunk in corpus:
        samples += [chunk[i:i + sample_size] for i in range(0, len(chunk), sample_size)]
    return [s for s in samples if len(s) >= 16]


def train_dictionary(corpus: list[bytes], size: int, oversize: int = TRAIN_OVERSIZE) -> bytes:
    """Train a `size`-byte raw LZ4 dictionary from sections of other images.

    Deterministic for a given corpus (single-threaded COVER with fixed parameters).
    """
    import zstandard

    if size <= 0:
        return b""
    samples = split_samples(corpus)
    total = sum(len(s) for s in samples)
    if len(samples) < 8 or total < 4 * size:
        raise SeedfwError(f"dictionary corpus too small: {len(samples)} samples, {total} bytes "
                          f"for a {size}-byte dictionary", field="corpus")
    # The trained dictionary's tail is raw content; its header (~100-200 bytes) is at the front.
    # Training larger than `size` + header keeps the tail pure content.
    train_size = max(size * oversize, size + 1024)
    try:
        # k=d=0: let COVER search its segment/dmer sizes (40 steps). Measured leave-one-out on
        # 10 TF-A platforms' .rodata: saves ~590 B per 4 KiB section vs ~455 B with fixed
        # k=64/d=8 and ~480 B for the zstd-formatted dictionary with its header. threads=1
        # keeps the result deterministic.
        zd = zstandard.train_dictionary(train_size, samples, k=0, d=0, steps=40, threads=1,
                                        level=19)
    except zstandard.ZstdError as exc:
        raise SeedfwError(f"dictionary training failed: {exc}", field="corpus") from None
    data = zd.as_bytes()
    if len(data) < size + 256:
        raise SeedfwError(f"trainer produced only {len(data)} bytes for a {size}-byte dictionary",
                          field="corpus")
    return data[-size:]
