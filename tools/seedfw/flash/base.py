"""Flash backends: one small base class, one subclass per backend (west-runner style).

A runner is built from a board (what the hardware is) plus a probe/device id from the bench (how
to reach it), and offers `flash(image, verify=True)`. Backends register in `flash/__init__.py`.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError


@dataclass
class FlashResult:
    """What a flash run did; `verified_bytes` counts bytes read back and compared."""

    image: Path
    backend: str
    programmed_bytes: int = 0
    verified_bytes: int = 0
    seconds: float = 0.0
    regions: list[tuple[int, int]] = field(default_factory=list)  # (address, length)

    @property
    def throughput_kib_s(self) -> float:
        return self.programmed_bytes / 1024 / self.seconds if self.seconds else 0.0


class FlashRunner:
    """Base class (Zephyr west runner style). A subclass sets:

    name:          the backend name (board.yaml `flash.backend`, or the option that selects it)
    capabilities:  what it can do, a subset of COMMANDS; `run` refuses anything else
    tool:          the host program it drives (checked on PATH before anything is touched),
                   and tool_package, the Debian package that ships it
    options:       {task option: help} — the `invoke flash` arguments it reads besides the
                   task's own (COMMON_OPTIONS); the task's options are generated from every
                   registered runner's (west's do_add_parser); `create` builds the runner from
                   the task's arguments and passes exactly these on
    selected_by:   an option of its own that, when given, picks this runner whatever the
                   board's backend (`--to` picks the card writer)
    and implements `flash(image, verify)` (and `reset`/`erase` when it claims them).
    """

    name = ""
    capabilities: frozenset[str] = frozenset()
    tool: str | None = None
    tool_package: str | None = None
    options: dict[str, str] = {}
    selected_by: str | None = None

    @classmethod
    def require(cls, *needed: str) -> None:
        """Refuse (one line) a runner that lacks a capability the command needs, before it is
        created, a probe is reached or QEMU is started."""
        missing = sorted(set(needed) - set(cls.capabilities))
        if missing:
            raise SeedfwError(f"the {cls.name} runner cannot {' or '.join(missing)} (it can: "
                              f"{', '.join(sorted(cls.capabilities))})", None, "flash.backend")

    def __init__(self, board, probe_uid: str | None = None, log=print):
        self.board = board
        self.probe_uid = probe_uid
        self.log = log

    @classmethod
    def from_board(cls, board, probe_uid: str | None = None, **kwargs) -> "FlashRunner":
        return cls(board, probe_uid, **kwargs)

    @classmethod
    def create(cls, board, args: dict, log=print) -> "FlashRunner":
        """The runner for `invoke flash` arguments `args` (probe plus this runner's options)."""
        kwargs = {k: args[k] for k in cls.options if args.get(k) is not None}
        return cls.from_board(board, args.get("probe"), log=log, **kwargs)

    @classmethod
    @contextlib.contextmanager
    def session(cls, board, args: dict, log=print):
        """Yield a ready runner for the task (a runner that must first reach a probe, or start
        QEMU, overrides this and cleans up after)."""
        yield cls.create(board, args, log)

    def check_tool(self) -> None:
        if self.tool and shutil.which(self.tool) is None:
            raise SeedfwError(f"{self.tool} is not installed (Debian package "
                              f"{self.tool_package or self.tool}; run 'invoke setup')", None,
                              "flash.backend")

    def run(self, command: str, *args, **kwargs):
        """Do `command` ("flash", "reset", "erase"; flash with verify=True needs "verify") after
        checking that this runner supports it and that its tool is installed."""
        wanted = {command} | ({"verify"} if command == "flash" and kwargs.get("verify", True)
                              else set())
        self.require(*wanted)
        self.check_tool()
        return getattr(self, command)(*args, **kwargs)

    def flash(self, image: str | Path, verify: bool = True) -> FlashResult:
        raise NotImplementedError

    @staticmethod
    def check_image(image: str | Path) -> Path:
        image = Path(image)
        if not image.is_file():
            raise SeedfwError("image file not found", image, "--image")
        return image


COMMANDS = frozenset({"flash", "verify", "reset", "erase"})
# The `invoke flash` options every runner shares (seedfw.cli.flash); a runner's own `options`
# must not reuse these names. `place`: the labgrid place held for the command (seedfw.lab).
COMMON_OPTIONS = ("board", "probe", "image", "output", "verify", "place")


# e_machine numbers and the names used in messages (the ELF spec's)
EM_NAMES = {40: "EM_ARM", 183: "EM_AARCH64", 3: "EM_386", 62: "EM_X86_64", 243: "EM_RISCV"}
ELF_SUFFIXES = (".elf", ".axf", ".out")
PT_LOAD = 1


def check_elf_image(path: str | Path) -> int:
    """e_machine of an ELF image whose loadable bytes are all in the file; SeedfwError naming
    the file and offset otherwise. A truncated ELF must not reach the probe: pyelftools hands
    back a short segment without complaint, and the readback would then "verify" the short copy."""
    from ..stats import open_elf

    path = Path(path)
    with open_elf(path) as (elf, h):
        phdr = h["lay"]["phdr"]
        if not h["phoff"] or not h["phnum"]:
            raise SeedfwError("no program headers: nothing to program", path, "e_phnum")
        if h["phentsize"] != phdr.size:
            raise SeedfwError(f"program header size {h['phentsize']} is not {phdr.size}", path,
                              "e_phentsize")
        raw = elf.read(h["phoff"], h["phnum"] * phdr.size,
                       f"program header table ({h['phnum']} entries)")
        for i, fields in enumerate(phdr.iter_unpack(raw)):
            p_type, offset, filesz = (fields[0], fields[2], fields[5]) if h["bits"] == 64 else \
                (fields[0], fields[1], fields[4])
            if p_type == PT_LOAD and filesz and offset + filesz > elf.size:
                raise SeedfwError(f"truncated: LOAD segment {i} needs bytes up to "
                                  f"{offset + filesz:#x}, the file has {elf.size}", path,
                                  f"offset {offset:#x}")
        return h["machine"]


def first_mismatch(expected: bytes, actual: bytes) -> int | None:
    """Offset of the first differing byte (a length difference counts), or None when equal."""
    if expected == actual:
        return None
    for i, (a, b) in enumerate(zip(expected, actual)):
        if a != b:
            return i
    return min(len(expected), len(actual))
