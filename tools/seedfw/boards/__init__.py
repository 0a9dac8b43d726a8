"""Board registry: `board/<name>/board.yaml`, validated against one schema.

A board file says what a board *is* (SoC, cores, memory map, how it boots, how it is flashed); what
is on a developer's bench lives in bench.yaml instead (labgrid's split of resources and drivers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from functools import lru_cache
from pathlib import Path

from .. import yamlfile
from ..counters import REGISTRY as COUNTER_SOURCES
from ..errors import SeedfwError
from ..flash import REGISTRY as FLASH_RUNNERS
from .lab import SCHEMA as LAB_SCHEMA
from ..paths import BOARD_DIR

# The QEMU machine of `qemu` (the board's own model) and `qemu_os` (QEMU virt for its OS image).
_MACHINE = {
    "binary": {"type": "string"},
    "machine": {"type": "string"},
    "cpu": {"type": "string"},
    "memory": {"type": "integer", "minimum": 1},
    "args": {"type": "array", "items": {"type": "string"}},
}
_REGION = {
    "type": "object",
    "required": ["name", "base", "size"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "base": {"type": "integer", "minimum": 0, "maximum": 0xFFFFFFFFFFFFFFFF},
        "size": {"type": "integer", "minimum": 1, "maximum": 0xFFFFFFFFFFFFFFFF},
        # What the region is, for the emulated traffic counter (seedfw.counters.emulated):
        # regions with a kind are the map it counts by; sub-regions (bl33 in dram) have none.
        "kind": {"enum": ["dram", "flash", "sram", "mmio"]},
    },
}

CAPABILITIES = ["maskrom", "spl-fit", "spi-nor", "extlinux", "os-fit", "fit-bootcmd", "qemu-bios",
                "pflash"]

_ROLES = {"type": "array", "minItems": 1, "uniqueItems": True,
          "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"}}

_PARTITION = {
    "type": "object", "required": ["name", "roles"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "roles": _ROLES,
        "offset": {"type": "integer", "minimum": 0},
        "size": {"type": "integer", "minimum": 1},      # when it holds something
        "in_table": {"type": "boolean"},                # false: raw, outside the GPT
        "bootable": {"type": "boolean"},                # GPT attribute bit 2 (legacy BIOS bootable)
        "fs": {"enum": ["ext4"]},                       # a file system of the placed roles
    },
}

SCHEMA = {
    "type": "object",
    "required": ["name", "vendor", "description", "soc", "arch", "cpu", "memory", "boot", "image",
                 "flash", "dvfs", "counters"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        # The name the OS image carries (/etc/issue, its Buildroot defconfig), default the
        # board's: boards whose OS configurations are the same under one name build one OS,
        # and the artifact store hands it to the second board (ROCK 5A runs rk3588's).
        "os_name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,31}$"},
        "vendor": {"type": "string"},
        "description": {"type": "string"},
        "soc": {"type": "string"},
        "arch": {"enum": ["aarch64", "armv7m"]},
        "cpu": {"type": "string"},
        "memory": {"type": "array", "minItems": 1, "items": _REGION},
        "uart": {
            "type": "object", "required": ["type", "base"], "additionalProperties": False,
            "properties": {"type": {"enum": ["pl011", "cmsdk"]}, "base": {"type": "integer"}},
        },
        "tfa": {
            "type": "object", "required": ["platform", "targets"], "additionalProperties": False,
            "properties": {
                # Both become words of TF-A's make command line (PLAT=, goals): the grammar of
                # CONFIG_TFA_PLATFORM (seedfw.config.grammar), never a make function.
                "platform": {"type": "string", "pattern": "^[a-z0-9_]+$"},
                "targets": {"type": "array", "items": {"type": "string",
                                                       "pattern": "^[a-z0-9_]+$"}, "minItems": 1},
            },
        },
        "qemu": {
            "type": "object", "required": ["binary", "machine", "cpu"], "additionalProperties": False,
            "properties": {
                **_MACHINE,
                # A guest that never powers off (an MCU idling in WFI) has succeeded once its UART
                # prints a line matching this regular expression; `qemu.run` then stops QEMU.
                "ready": {"type": "string", "minLength": 1},
                # Arguments of the firmware run only (seedfw.run.qemu mode "firmware").
                "firmware_args": {"type": "array", "items": {"type": "string"}},
                # The storage QEMU gives the guest; each drive holds one declared load kind
                # (seedfw.run.qemu.LOADS). `invoke flash` (runner qemu) programs it into
                # <out>/qemu/<name>.img, which the next run boots instead of the build's file.
                "drives": {"type": "array", "items": {
                    "type": "object", "required": ["name", "interface", "holds"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                        "interface": {"type": "string", "minLength": 1},   # pflash or a device
                        "unit": {"type": "integer", "minimum": 0},
                        "size": {"type": "integer", "minimum": 1},         # pflash: exact size
                        "holds": {"enum": ["bios", "kernel", "drive"]},
                    },
                }},
                # Added by counted runs (`--counters`, seedfw.counters.emulated) for repeatable
                # counts, e.g. QEMU virt's DT without random seeds.
                "counted_args": {"type": "array", "items": {"type": "string"}},
            },
        },
        # A board whose own OS image is proven in QEMU virt instead of the board (rk3588: no QEMU
        # model of the SoC): the machine it boots on and that machine's memory map, which the
        # emulated traffic counter counts by (seedfw.run.os_virt; `invoke boot`).
        "qemu_os": {
            "type": "object", "required": ["binary", "machine", "cpu", "memory", "regions"],
            "additionalProperties": False,
            "properties": {
                **_MACHINE,
                "regions": {"type": "array", "minItems": 1, "items": _REGION},
                # what differs from the board, said with every result of such a boot
                "differs": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "pyocd": {
            "type": "object", "required": ["target", "flash"], "additionalProperties": False,
            "properties": {
                "target": {"type": "string"},
                "flash": {
                    "type": "object", "required": ["base", "size", "sector_size"],
                    "additionalProperties": False,
                    "properties": {k: {"type": "integer", "minimum": 0}
                                   for k in ("base", "size", "sector_size")},
                },
            },
        },
        # How the board boots, as data: the parts read this instead of asking which SoC it is.
        #   rom:     what reads the first bytes (rockchip: the RK3588 boot ROM, an RKNS idblock at
        #            sector 64 and a maskrom loader over USB; qemu-bios: QEMU's -bios flash;
        #            cortex-m: the vector table at the flash base)
        #   flow:    how the OS is reached (raw: no OS; bios: firmware only; os-fit: U-Boot verifies
        #            an OS FIT in the "boot" partition; extlinux: U-Boot's bootstd reads
        #            /extlinux/extlinux.conf from an ext4 "boot" partition)
        #   storage: where the disk image goes (sd-emmc, virtio, flash)
        #   dtb / compatible: the kernel package's DT for this board and the compatible it must carry
        "boot": {
            "type": "object", "required": ["rom", "flow", "storage"], "additionalProperties": False,
            "properties": {
                "rom": {"enum": ["rockchip", "qemu-bios", "cortex-m"]},
                "flow": {"enum": ["raw", "bios", "os-fit", "extlinux"]},
                "storage": {"enum": ["sd-emmc", "virtio", "flash"]},
                "dtb": {"type": "string", "minLength": 1},
                "compatible": {"type": "string", "minLength": 1},
            },
        },
        # What the board's boot chain does, as data (seedfw.parts asks ctx.capable(...) instead
        # of the board's name or boot kind):
        #   maskrom      the boot ROM takes a loader over USB (rkdeveloptool db: the loader part)
        #   spl-fit      U-Boot SPL loads BL31 and the DVFS table from U-Boot's own FIT
        #                (binman's Rockchip images: the uboot-rockchip part)
        #   spi-nor      it boots from SPI NOR too (binman's u-boot-rockchip-spi.bin)
        #   extlinux     U-Boot's bootstd boots /extlinux/extlinux.conf (the os-boot-files part)
        #   os-fit       U-Boot verifies and boots an OS FIT (the os-fit part)
        #   fit-bootcmd  U-Boot runs seedfw's boot command: firmware FIT from partition
        #                "firmware", verified, then the OS FIT or the payload
        #   qemu-bios    QEMU's -bios flash holds TF-A's BL1 + FIP (qemu_fw.bios)
        #   pflash       QEMU's pflash drives (the secure flash `invoke flash` programs)
        "capabilities": {"type": "array", "uniqueItems": True, "items": {"enum": CAPABILITIES}},
        "image": {
            "type": "object", "required": ["format", "partition_size"], "additionalProperties": False,
            "properties": {
                "format": {"enum": ["fit", "package", "raw"]},
                "partition_size": {"type": "integer", "minimum": 1},
                # The disk, binman's /binman node as data: each entry a list of roles (what
                # seedfw.parts.base.Output provides); the first provided role fills a raw entry,
                # every placed role (seedfw.parts.base.Place) an ext4 one.
                "partitions": {"type": "array", "items": _PARTITION},
                # Each FIT and the roles it carries (the firmware FIT: what image.pack packs).
                "fits": {"type": "array", "items": {
                    "type": "object", "required": ["name", "roles"], "additionalProperties": False,
                    "properties": {"name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                                   "roles": _ROLES}}},
            },
        },
        # U-Boot as board data: the seedfw fragment merged into its defconfig and the device-tree
        # include of the control DT (paths relative to the project root).
        "uboot": {
            "type": "object", "additionalProperties": False,
            "properties": {"fragment": {"type": "string", "minLength": 1},
                           "dtsi": {"type": "string", "minLength": 1}},
        },
        "flash": {
            "type": "object", "required": ["backend"], "additionalProperties": False,
            # the runner registry is the only list of names (seedfw.flash.REGISTRY)
            "properties": {"backend": {"enum": list(FLASH_RUNNERS.names())}},
        },
        "dvfs": {"type": "string"},
        "counters": {"enum": list(COUNTER_SOURCES.names())},          # seedfw.counters.REGISTRY
        # perf PMUs the OS agent reads over its windows: PMU/EVENT,EVENT/KCONFIG (the kernel
        # option that provides the PMU, named when it is absent). firmware/agent/perf_window.c
        "perf": {"type": "array", "items": {
            "type": "string", "pattern": "^[a-z0-9_]+/[a-z0-9_-]+(,[a-z0-9_-]+)*/CONFIG_[A-Z0-9_]+$"}},
        # the board's places on a labgrid farm (seedfw.boards.lab: QEMU or real-board resources)
        "lab": LAB_SCHEMA,
        # The A/B layout of CONFIG_UPDATE (seedfw.update.slots): the partitions image.partitions'
        # "rootfs" entry becomes (A, then B: RAUC's slot names; both hold the build's rootfs),
        # the persistent partition added after them, and where U-Boot keeps its environment:
        # raw (offset, an optional redundant copy, outside the GPT) or a file in a FAT partition.
        "update": {
            "type": "object", "required": ["slots", "data", "env"], "additionalProperties": False,
            "properties": {
                "slots": {"type": "array", "minItems": 2, "maxItems": 2, "uniqueItems": True,
                          "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]{0,35}$"}},
                "data": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]{0,35}$"},
                "env": {
                    "type": "object", "required": ["kind", "size"], "additionalProperties": False,
                    "properties": {
                        "kind": {"enum": ["raw", "fat"]},
                        "size": {"type": "integer", "minimum": 64, "maximum": 1 << 20},
                        "offset": {"type": "integer", "minimum": 0},
                        "redundant_offset": {"type": "integer", "minimum": 0},
                        "partition": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                        "file": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"},
                        "mount": {"type": "string", "pattern": "^(/[a-z0-9_-]+)+$"},
                    },
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size: int
    kind: str | None = None


@dataclass(frozen=True)
class Board:
    """One validated board.yaml. `raw` keeps the whole document for stage-specific fields."""

    name: str
    dir: Path
    soc: str
    arch: str
    cpu: str
    vendor: str
    description: str
    memory: tuple[Region, ...]
    raw: dict = field(repr=False, compare=False)

    @property
    def os_name(self) -> str:
        """The OS image's name (board.yaml os_name, else the board's): see SCHEMA."""
        return self.raw.get("os_name") or self.name

    @property
    def tfa(self) -> dict | None:
        return self.raw.get("tfa")

    @property
    def qemu(self) -> dict | None:
        return self.raw.get("qemu")

    @property
    def pyocd(self) -> dict | None:
        return self.raw.get("pyocd")

    @property
    def uart(self) -> dict | None:
        return self.raw.get("uart")

    @property
    def boot(self) -> dict:
        """board.yaml's `boot:` block (rom, flow, storage, dtb, compatible)."""
        return self.raw["boot"]

    @property
    def image(self) -> dict:
        return self.raw["image"]

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(self.raw.get("capabilities") or ())

    @property
    def partitions(self) -> list[dict]:
        return list(self.raw["image"].get("partitions") or ())

    def fit_roles(self, name: str) -> tuple[str, ...]:
        """The roles board.yaml's FIT `name` carries (image.fits), () when it names none."""
        fit = next((f for f in self.raw["image"].get("fits") or () if f["name"] == name), None)
        return tuple(fit["roles"]) if fit else ()

    @property
    def update(self) -> dict | None:
        """board.yaml's `update:` block (the A/B layout of CONFIG_UPDATE), None without one."""
        return self.raw.get("update")

    @property
    def uboot(self) -> dict:
        return self.raw.get("uboot") or {}

    @property
    def flash_backend(self) -> str:
        return self.raw["flash"]["backend"]

    @property
    def dvfs_file(self) -> Path:
        return self.dir / self.raw["dvfs"]

    @property
    def counters(self) -> str:
        return self.raw["counters"]

    def region(self, name: str) -> Region:
        for r in self.memory:
            if r.name == name:
                return r
        raise SeedfwError(f"board has no memory region '{name}'", self.dir / "board.yaml", "memory")

    def summary(self) -> dict:
        return {"name": self.name, "soc": self.soc, "arch": self.arch, "cpu": self.cpu,
                "vendor": self.vendor, "description": self.description}


def load_file(path: str | Path) -> Board:
    """Load and validate one board.yaml (any path: tests feed broken copies)."""
    path = Path(path)
    data, lines = yamlfile.load_mapping(path, SCHEMA, "a mapping of board fields")
    if path.parent.name != data["name"] and path.parent.parent == BOARD_DIR:
        raise SeedfwError(f"field 'name': '{data['name']}' does not match its folder "
                          f"'{path.parent.name}'", path, f"line {lines[('name',)]}")
    _check_regions(data["memory"], path, lines)
    _check_image(data, path, lines)
    return Board(
        name=data["name"], dir=path.parent, soc=data["soc"], arch=data["arch"], cpu=data["cpu"],
        vendor=data["vendor"], description=data["description"],
        memory=tuple(Region(**r) for r in data["memory"]), raw=data,
    )


def _check_regions(regions: list[dict], path: Path, lines: dict) -> None:
    """Regions fit 64 bits, have distinct names and either nest (bl33 inside dram) or are
    disjoint: a partial overlap or a duplicate is a typo that would place two images on the
    same bytes."""
    for i, r in enumerate(regions):
        line = f"line {lines.get(('memory', i), lines.get(('memory',), 1))}"
        if r["base"] + r["size"] > 1 << 64:
            raise SeedfwError(f"memory region '{r['name']}' ends past 2^64", path, line)
        for j, o in enumerate(regions[:i]):
            a0, a1, b0, b1 = r["base"], r["base"] + r["size"], o["base"], o["base"] + o["size"]
            if o["name"] == r["name"]:
                raise SeedfwError(f"memory region '{r['name']}' is defined twice", path, line)
            if (a0, a1) == (b0, b1):
                raise SeedfwError(f"memory regions '{o['name']}' and '{r['name']}' are the same "
                                  f"range", path, line)
            nested = (b0 <= a0 and a1 <= b1) or (a0 <= b0 and b1 <= a1)
            if a0 < b1 and b0 < a1 and not nested:
                raise SeedfwError(f"memory regions '{o['name']}' and '{r['name']}' overlap "
                                  f"without one containing the other", path, line)


def _check_image(data: dict, path: Path, lines: dict) -> None:
    """Partition and FIT names are unique; a partition's offsets fit; the U-Boot files the
    board names exist (one line naming the file and field)."""
    from ..paths import ROOT
    image = data["image"]
    for key in ("partitions", "fits"):
        seen = set()
        for i, item in enumerate(image.get(key) or ()):
            if item["name"] in seen:
                line = lines.get(("image", key, i), lines.get(("image", key), 1))
                raise SeedfwError(f"image.{key}: '{item['name']}' is defined twice", path,
                                  f"line {line}")
            seen.add(item["name"])
    for key, value in (data.get("uboot") or {}).items():
        if not (ROOT / value).is_file() or ".." in Path(value).parts:
            raise SeedfwError(f"uboot.{key}: {value} is not a file of the project", path,
                              f"line {lines.get(('uboot', key), lines.get(('uboot',), 1))}")


NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


def names() -> list[str]:
    return sorted(p.parent.name for p in BOARD_DIR.glob("*/board.yaml"))


@lru_cache(maxsize=None)
def get(name: str) -> Board:
    # A board name becomes a path (board/<name>/, output/<name>/): only [a-z0-9-] is a name,
    # so '../../evil' can never point outside the tree.
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SeedfwError(f"'{name}' is not a board name (lower-case letters, digits, '-'; "
                          f"known: {', '.join(names())})")
    path = BOARD_DIR / name / "board.yaml"
    if not path.is_file():
        raise SeedfwError(f"unknown board '{name}' (known: {', '.join(names())})")
    return load_file(path)


def resolve(spec: str) -> list[Board]:
    """'all' → every board; otherwise one named board."""
    if spec == "all":
        return [get(n) for n in names()]
    return [get(spec)]
