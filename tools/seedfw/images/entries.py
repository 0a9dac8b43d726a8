"""What goes into an image, independent of the container (FIT or boot package).

binman-like: one small class per entry type, its properties listed in the docstring. Both
fit.py and package.py take a list of these, so the two formats always carry the same things
("built from the same manifest").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError
from ..util import sha256_bytes

# Values of pkg.h; tests/test_images.py checks them against the header.
T_FIRMWARE, T_DVFS, T_FDT, T_MODEL = 1, 2, 3, 4
M_RAW, M_RKNN, M_ONNX = 0, 1, 2
F_LZ4, F_ENCRYPTED = 1 << 0, 1 << 1
TYPE_NAMES = {T_FIRMWARE: "firmware", T_DVFS: "dvfs", T_FDT: "fdt", T_MODEL: "model"}
MODEL_SUBTYPES = {"raw": M_RAW, "rknn": M_RKNN, "onnx": M_ONNX}


@dataclass
class Entry:
    """Base entry.

    name:   up to 16 bytes, unique in the image (package entry name, FIT image node suffix)
    data:   the stored bytes
    uncompressed_size: size before compression (== len(data) unless compressed)
    alignment: minimum alignment of the data in a package
    flags:  pkg.h SEEDFW_PKG_F_*
    """

    name: str
    data: bytes
    uncompressed_size: int = -1
    alignment: int = 64
    flags: int = 0
    type_id: int = field(default=0, init=False)
    subtype: int = field(default=0, init=False)
    description: str = field(default="", init=False)

    def __post_init__(self):
        if len(self.name.encode()) > 16:
            raise SeedfwError(f"entry name '{self.name}' is longer than 16 bytes")
        if self.uncompressed_size < 0:
            self.uncompressed_size = len(self.data)

    @property
    def kind(self) -> str:
        return TYPE_NAMES[self.type_id]

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.data)

    def fit_props(self) -> dict:
        """Extra properties of this entry's FIT image node (type, arch, load, ...)."""
        return {"type": "firmware"}


@dataclass
class FirmwareEntry(Entry):
    """A boot-stage binary (BL31, the BL33 payload, the MCU image).

    arch:  FIT arch ("arm64" | "arm")
    os:    FIT os ("arm-trusted-firmware" for BL31; omitted otherwise)
    load:  load/entry address, or None
    """

    arch: str = "arm64"
    os: str | None = None
    load: int | None = None
    entry: int | None = None   # defaults to load

    def __post_init__(self):
        super().__post_init__()
        self.type_id = T_FIRMWARE
        self.description = f"{self.name} firmware"

    def fit_props(self) -> dict:
        props = {"type": "firmware", "arch": self.arch}
        if self.os:
            props["os"] = self.os
        if self.load is not None:
            props["load"] = self.load
            props["entry"] = self.entry if self.entry is not None else self.load
        return props

    @classmethod
    def from_elf(cls, name: str, path, arch: str, os: str | None = None) -> list["FirmwareEntry"]:
        """One entry per loadable segment, at its physical address (binman's split-elf idea).

        Why split: RK3588's BL31 has two load segments (DRAM at 0x40000 and PMU SRAM at
        0xff100000); a flat binary would have to span the 4 GiB between them. Names are
        <name>-1, <name>-2 ... in segment order; the one holding e_entry carries the entry point.
        """
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        out = []
        try:
            with open(path, "rb") as f:  # door: an ELF this build compiled
                elf = ELFFile(f)
                entry = elf["e_entry"]
                for seg in elf.iter_segments():
                    if seg["p_type"] != "PT_LOAD" or seg["p_filesz"] == 0:
                        continue
                    data = seg.data()
                    base = seg["p_paddr"]
                    holds = base <= entry < base + seg["p_memsz"]
                    out.append(cls(f"{name}-{len(out) + 1}", data, arch=arch,
                                   os=os if holds else None, load=base,
                                   entry=entry if holds else base))
        except (OSError, ELFError) as exc:
            raise SeedfwError(f"cannot read ELF segments: {exc}", path) from None
        if not out:
            raise SeedfwError("ELF has no loadable segment with file contents", path)
        # The segment holding the entry point first: FIT's conf `firmware` is the first firmware.
        out.sort(key=lambda e: e.os is None)
        return out


@dataclass
class DvfsEntry(Entry):
    """The binary DVFS table (firmware/include/seedfw/dvfs.h), hints included."""

    def __post_init__(self):
        super().__post_init__()
        self.type_id = T_DVFS
        self.description = "DVFS table (seedfw dvfs.h v1)"


@dataclass
class FdtEntry(Entry):
    """The compiled operating-points-v2 DT fragment."""

    def __post_init__(self):
        super().__post_init__()
        self.type_id = T_FDT
        self.description = "OPP tables (DT fragment)"

    def fit_props(self) -> dict:
        return {"type": "flat_dt", "arch": "arm64"}


@dataclass
class ModelEntry(Entry):
    """An NPU model blob from the manifest.

    model_type: "rknn" | "onnx" | "raw" (package subtype)
    compression: "none" | "lz4" (seedfw LZ4 block container; FIT marks it in a seedfw, property
                 because FIT's own "lz4" means the LZ4 frame format)
    encrypted:  RKNN "CYPTRKNN"
    npu_target: the NPU the manifest compiled it for (FIT "seedfw,npu-target"; inspect checks the
                RKNN's own target_platform against it)
    """

    model_type: str = "raw"
    compression: str = "none"
    encrypted: bool = False
    npu_target: str | None = None

    def __post_init__(self):
        super().__post_init__()
        self.type_id = T_MODEL
        self.subtype = MODEL_SUBTYPES[self.model_type]
        self.flags |= (F_LZ4 if self.compression == "lz4" else 0) | (F_ENCRYPTED if self.encrypted else 0)
        self.description = f"{self.model_type} model {self.name}" + (" (encrypted)" if self.encrypted else "")

    def fit_props(self) -> dict:
        props = {"type": "firmware", "seedfw,model-type": self.model_type}
        if self.compression == "lz4":
            props["seedfw,compression"] = "lz4blk"
            props["seedfw,uncompressed-size"] = self.uncompressed_size
        if self.encrypted:
            props["seedfw,encrypted"] = True
        if self.npu_target and self.model_type == "rknn":
            props["seedfw,npu-target"] = self.npu_target
        return props

    @classmethod
    def from_model(cls, m) -> "ModelEntry":
        return cls(m.name, m.stored, m.size, max(m.alignment, 64), model_type=m.type,
                   compression=m.compression, encrypted=m.encrypted,
                   npu_target=getattr(m, "target", None))


def read(path: str | Path) -> bytes:
    """An input file's bytes: regular files only, size-capped (seedfw.reading)."""
    from ..reading import read_bytes
    return read_bytes(path, "image")
