"""The seedfw BL33 payload (firmware/payload): our own freestanding AArch64 program."""

from __future__ import annotations

import struct

from .. import __version__, plan
from ..cache import ccache
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR, ROOT
from .base import BuildContext, Output, Part

SOURCE = FIRMWARE_DIR / "payload"
# Section compression: .rodata runs at this offset into the board's bl33 region; the container
# goes at the end of the raw image, below it (firmware/payload/payload.ld.S).
RODATA_OFFSET_DIVISOR = 2          # the upper half of the bl33 region
DESC_SYMBOL = "seedfw_payload_lz4"
LAYOUT_SYMBOLS = ("__image_start", "__image_end", "__lz4_area_end", "__rodata_start",
                  "__rodata_end", "__text_end", "__stack_top", DESC_SYMBOL)


class PayloadPart(Part):
    """BL33 payload for the A-class boards that boot through TF-A's BL2 (QEMU virt).

    Kconfig symbols read: PAYLOAD (enables it), CROSS_COMPILE_A, BUILD_ID, BUILD_JOBS,
    COMPRESS_SECTIONS (+ the COMPRESS_* symbols of seedfw.compress.stage: the payload stores its
    .rodata as an LZ4 container that start.S's early hook expands before main), LZ4_DECODER
    (which decoder variant it links: make LZ4_DECODER=fast|small).
    Board fields read: memory regions `bl33` (link/load address) and `boot-package` (where the
    payload verifies the boot package, optional), `uart.base` (PL011).
    Steps: payload.build (make); with COMPRESS_SECTIONS also payload.compress (container appended
    to the raw image, descriptor `seedfw_payload_lz4` filled in).
    Outputs: <out>/images/bl33.elf (the linked ELF, .rodata uncompressed: for debugging and
    checksums), <out>/images/bl33.bin (raw image; TF-A's BL33= for the FIP; with compression it
    holds the container instead of .rodata).
    Build directory: <out>/build/payload (payload.elf, payload.bin, payload.map, objects).
    """

    name = "payload"
    symbols = ("PAYLOAD", "CROSS_COMPILE_A", "BUILD_ID", "BUILD_JOBS", "COMPRESS_SECTIONS",
               "LZ4_DECODER")
    STEP_VERSION = "2"
    COMPRESS_VERSION = "1"

    provides = ("payload", "payload-elf", "bl33", "dvfs-hints", "compression-fragment")
    when = "PAYLOAD=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("PAYLOAD"))

    def compress(self, ctx: BuildContext) -> bool:
        return bool(ctx.values.get("COMPRESS_SECTIONS"))

    def final_step(self, ctx: BuildContext) -> str:
        """The step after which images/bl33.bin is what boots."""
        return "payload.compress" if self.compress(ctx) else "payload.build"

    def outputs(self, ctx):
        # Without U-Boot the payload itself is what TF-A's FIP carries as BL33.
        last = self.final_step(ctx)
        out = [Output(ctx.images / "bl33.elf", "payload.build", ("payload-elf", "dvfs-hints")),
               Output(ctx.images / "bl33.bin", last,
                      ("payload",) + (() if ctx.values.get("UBOOT") else ("bl33",)))]
        if self.compress(ctx):
            from ..compress import stage as cstage
            out.append(Output(cstage.fragment_path(ctx.outdir, "payload"), last,
                              ("compression-fragment",), listed=False))
        return out

    def make_vars(self, ctx: BuildContext) -> dict:
        board = ctx.board
        out = {
            "CROSS_COMPILE": ctx.values["CROSS_COMPILE_A"],
            "BUILD_ID": ctx.build_id,
            "VERSION": __version__,
            "BOARD": board.name,
            "LOAD_ADDR": hex(board.region("bl33").base),
            "UART_BASE": hex((board.uart or {}).get("base", 0)),
            **self.package_vars(board),
        }
        if ctx.values.get("PAYLOAD_SHA256_ARMV8"):     # kconfig: the SHA2-instruction build
            out["SHA256"] = "armv8"
        if self.compress(ctx):
            region = board.region("bl33")
            out["RODATA_ADDR"] = hex(region.base + region.size // RODATA_OFFSET_DIVISOR)
            out["LZ4_DECODER"] = ctx.values.get("LZ4_DECODER") or "fast"   # kconfig choice
        return out

    @staticmethod
    def package_vars(board) -> dict:
        """Where the payload finds its boot package, when the board has a region for one."""
        region = next((r for r in board.memory if r.name == "boot-package"), None)
        return {"PKG_ADDR": hex(region.base), "PKG_MAX": hex(region.size)} if region else {}

    def boot_image(self, ctx: BuildContext) -> str:
        """The file in images/ a board reads at boot that ends up carrying bl33.bin: the first
        declared Output that carries role "payload" (the firmware FIT, the boot package), else
        bl33.bin itself."""
        got = ctx.carrier("payload")
        return got.name if got is not None else "bl33.bin"

    def sbom(self, ctx):
        """seedfw's own BL33 payload: its source tree (firmware/payload + the shared trees)."""
        return [self.own_firmware("seedfw-payload", [SOURCE], "BL33 payload (firmware/payload)")]

    def steps(self, ctx):
        cc = ctx.values["CROSS_COMPILE_A"] + "gcc"
        out = ctx.build_dir("payload")

        def inputs():
            return {"source": self.source_hashes(SOURCE), "make": self.make_vars(ctx),
                    "symbols": plan.symbols(ctx.values, self.symbols),
                    "toolchain": ctx.toolchain(cc),
                    **({"lz4": plan.tree_hash(FIRMWARE_DIR / "lz4")} if self.compress(ctx) else {})}

        def build(step):
            self.fresh_dir(out)
            args = [f"{k}={v}" for k, v in self.make_vars(ctx).items()]
            plan.run_command(["make", "-C", SOURCE.relative_to(ROOT), f"-j{ctx.make_jobs}",
                              f"O={out}", *args], cwd=ROOT, log=step.log,
                             env=ccache.environment(ctx, FIRMWARE_DIR, out))
            files = {"bl33.elf": out / "payload.elf"}
            if not self.compress(ctx):
                files["bl33.bin"] = out / "payload.bin"
            self.install(step, files, ctx.images)

        if not self.compress(ctx):
            return [plan.Step("payload.build", build, inputs=inputs, version=self.STEP_VERSION,
                              package=self.name, tools=self.cross_tools(cc[:-3]))]
        from ..compress import stage as cstage
        cstage.settings(ctx.values, ctx.outdir / ".config")       # bad settings fail up front
        return [
            plan.Step("payload.build", build, inputs=inputs, version=self.STEP_VERSION,
                      package=self.name, outputs=(out / "payload.bin",),
                      tools=self.cross_tools(cc[:-3])),
            plan.Step("payload.compress", lambda step: self.compress_rodata(ctx, step),
                      deps=("payload.build",), version=self.COMPRESS_VERSION, package=self.name,
                      inputs=lambda: {"settings": cstage.settings(ctx.values).stamp(),
                                      "symbols": plan.symbols(ctx.values, cstage.SYMBOLS),
                                      "boot_image": self.boot_image(ctx)}),
        ]

    def compress_rodata(self, ctx: BuildContext, step: plan.Step) -> None:
        """bl33.bin = payload.bin (.text + .data, no .rodata) + .rodata's container (+ the
        dictionary only if it pays), with the descriptor pointing at them."""
        from ..compress import stage as cstage
        from ..compress.bl31 import DESC, DESC_MAGIC, elf_symbols
        from ..compress.dictionary import Dictionary
        from ..compress.sections import compress_section, read_elf_sections
        from ..util import write_bytes

        cfg = ctx.outdir / ".config"
        s = cstage.settings(ctx.values, cfg)
        cstage.check_sections(s, (".rodata",), "the payload", cfg)
        elf = ctx.images / "bl33.elf"
        build = ctx.build_dir("payload")
        sym = elf_symbols(elf, LAYOUT_SYMBOLS)
        image = bytearray((build / "payload.bin").read_bytes())
        base = sym["__image_start"]
        if base + len(image) != sym["__image_end"]:
            raise SeedfwError(f"payload.bin is {len(image)} B but the image spans "
                              f"0x{base:x}..0x{sym['__image_end']:x}", build / "payload.bin")
        address, rodata = read_elf_sections(elf, [".rodata"])[".rodata"]
        dict_addr = 0
        if s.dict_source == "resident":
            # The tail of the payload's own .text: in memory, unchanged, when the hook runs.
            text = bytes(image[:sym["__text_end"] - base])
            dictionary = Dictionary.resident(text, min(s.dict_size, len(text)), "payload .text")
            dict_addr = sym["__text_end"] - len(dictionary.data)
        else:
            dictionary = s.dictionary()
        res = compress_section(".rodata", address, rodata, s.block_size, s.level, dictionary)
        image += bytes(-len(image) % 16)
        c_addr = base + len(image)
        image += res.container
        d_len = len(dictionary.data) if res.use_dict else 0
        if res.use_dict and dictionary.source != "resident":
            image += bytes(-len(image) % 16)
            dict_addr = base + len(image)
            image += dictionary.data
        elif not res.use_dict:
            dict_addr = 0
        end = base + len(image)
        if end > sym["__lz4_area_end"]:
            raise SeedfwError(f"container ends at 0x{end:x}, past 0x{sym['__lz4_area_end']:x} "
                              "where .rodata runs (the container must not overlap it)", elf,
                              "layout")
        bl33 = ctx.board.region("bl33")
        if sym["__stack_top"] > bl33.base + bl33.size:
            raise SeedfwError(f"stack top 0x{sym['__stack_top']:x} is outside the board's bl33 "
                              "region", elf, "layout")
        off = sym[DESC_SYMBOL] - base
        magic, _, container = struct.unpack_from("<IiQ", image, off)
        if magic != DESC_MAGIC or container != 0:
            raise SeedfwError(f"descriptor {DESC_SYMBOL}: magic 0x{magic:08x}, container "
                              f"0x{container:x}: not a fresh payload", elf, DESC_SYMBOL)
        DESC.pack_into(image, off, DESC_MAGIC, 0, c_addr, len(res.container), address,
                       len(rodata), dict_addr, d_len)
        work = build / "lz4"
        write_bytes(work / "bl33.bin", bytes(image))
        ctx.progress(f"  payload: .rodata {res.raw} -> {res.chosen} B ({res.verdict}); "
                     f"bl33.bin {len(image)} B")
        with open(step.log, "a") as f:
            f.write(f"payload.compress: .rodata {res.raw} B -> container {res.chosen} B at "
                    f"0x{c_addr:x}, expands to 0x{address:x}; {res.verdict}\n")
        frag = cstage.write_fragment(work / "payload.json", "payload", "images/bl33.elf",
                                     "images/bl33.bin", self.boot_image(ctx), s, dictionary,
                                     [res], {"bl33_bytes": len(image)})
        step.install({ctx.images / "bl33.bin": work / "bl33.bin",
                      cstage.fragment_path(ctx.outdir, "payload"): frag})
