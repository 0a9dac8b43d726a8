"""The QEMU plugin part: seedfw's TCG memory-traffic counter, built as a host tool."""

from __future__ import annotations

import shutil

from .. import plan, sources
from ..counters.plugin_build import (API_VERSION, PLUGIN_NAME, PLUGIN_SOURCE, compile_plugin,
                                     header, header_api_version, plugin_path, source)
from ..errors import SeedfwError
from .base import Part


class QemuPluginPart(Part):
    """seedfw's QEMU TCG plugin (firmware/qemu-plugin/traffic.c), the emulated memory-traffic
    counter of `invoke run/boot --counters` (seedfw.counters.emulated).

    Kconfig symbols read: COUNTERS_EMULATED (enables it).
    Inputs: qemu_7.2+dfsg.orig.tar.xz (sha256-pinned, from Debian's source pool through the
    private apt state, or $SEEDFW_MIRROR_DIR), of which only include/qemu/qemu-plugin.h is
    extracted; the plugin's C files; the host gcc.
    Steps: qemu-plugin.fetch (the archive into the shared download cache) → qemu-plugin.build
    (header extracted into <out>/build/qemu-plugin/include, `gcc -shared -fPIC`).
    Outputs: <out>/host/libseedfw-traffic.so (a host tool: not in images/, not in the SBOM's
    firmware; the header's licence is QEMU's GPL-2.0-or-later, recorded by `sbom`).
    Options: none; the plugin's arguments (regions, phases) are made per run from board.yaml
    and the built ELFs (seedfw.counters.emulated.qemu_args).
    """

    name = "qemu-plugin"
    symbols = ("COUNTERS_EMULATED",)
    VERSION = "1"

    when = "COUNTERS_EMULATED=y"

    def enabled(self, ctx) -> bool:
        return bool(ctx.values.get("COUNTERS_EMULATED"))

    def check_config(self, cfg) -> None:
        board = getattr(cfg, "board", None)
        # a board QEMU has no model of still counts its own OS image on QEMU virt (qemu_os)
        if board is not None and not board.qemu and not board.raw.get("qemu_os"):
            raise SeedfwError(f"board '{board.name}' has no QEMU to count with", ".config",
                              "CONFIG_COUNTERS_EMULATED")

    def steps(self, ctx):
        src = source()
        work = ctx.build_dir("qemu-plugin")
        out = plugin_path(ctx.outdir)

        def fetch(step):
            sources.fetch_step(step, src, progress=lambda m: ctx.progress(f"  qemu-plugin: {m}"))

        def build_inputs():
            return {"pins": src.pins(), "source": plan.tree_hash(PLUGIN_SOURCE),
                    "gcc": plan.toolchain_version("gcc", ctx.stamp_dir)}

        def build(step):
            include = work / "include"
            if include.exists():
                shutil.rmtree(include)
            h = header(include, log=step.log, progress=lambda m: ctx.progress(f"  qemu-plugin: {m}"))
            if header_api_version(h) != API_VERSION:
                raise SeedfwError(f"qemu-plugin.h has API version {header_api_version(h)}, "
                                  f"the plugin is written for {API_VERSION}", h)
            built = compile_plugin(include, work / PLUGIN_NAME, log=step.log)
            step.install({out: built})

        return [plan.Step("qemu-plugin.fetch", fetch, inputs={"pins": src.pins()},
                          version=self.VERSION, package=self.name),
                plan.Step("qemu-plugin.build", build, after=("qemu-plugin.fetch",),
                          inputs=build_inputs, version=self.VERSION, package=self.name,
                          outputs=(out,))]

    # sbom(): none. qemu-plugin.h (QEMU's, GPL-2.0-or-later) goes into a host tool, never into
    # the firmware the SBOM describes.
