"""Rockchip's binary blobs from rkbin (DDR init, maskrom USB plug, Rockchip SPL), pinned by sha256.

They are not compiled: Rockchip publishes only binaries, under the licence in rkbin's LICENSE (which
is pinned and fetched with them, so a mirror always carries it). Sites, in order: the local mirror
directory ($SEEDFW_MIRROR_DIR, the files by name, or in its `rkbin/` folder), then rkbin itself at
the pinned commit. A file that matches neither pin nor any site is an error unless the build allows
missing blobs (CONFIG_UBOOT_ALLOW_MISSING_BLOBS), and then every output says NON-FUNCTIONAL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import paths, sources, util
from ..errors import SeedfwError

COMMIT = "f43a462e7a14"          # rockchip-linux/rkbin, checked 2026-11-30
UPSTREAM = f"https://raw.githubusercontent.com/rockchip-linux/rkbin/{COMMIT}"

DDR = sources.SourceFile("rk3588_ddr_lp4_2112MHz_lp5_2400MHz_v1.18.bin", 75_320,
                         "d89d40a8183b099589bfcffc5cc2ce9d874eb5b1d19b78bdad2cfcf45b9cb68f")
USBPLUG = sources.SourceFile("rk3588_usbplug_v1.11.bin", 90_268,
                             "fa38c130f3dd9160895543f0ef83833612963cc428c11f38ec9ecd66ae64d753")
SPL = sources.SourceFile("rk3588_spl_v1.13.bin", 239_010,
                         "2134bffc64b9a9434fbeeb6bbbbc8218bd8933ee7765fc7a05be5603d8437480")
INI = sources.SourceFile("RK3588MINIALL.ini", 573,
                         "f3b56dea75d5b7e8d1ad16ad3a5c0625762a4a3f67273d4b51f427be22156fb2")
LICENSE = sources.SourceFile("LICENSE", 1_360,
                             "d2765124a2c24d71aba3cbc6cdd6975a5a297821264eb6c26378a4c16cd16e92")

# The blobs a loader recipe may name (seedfw.images.ldr_recipe refuses any other file).
BLOBS = (DDR, USBPLUG, SPL)

# What the recipe (the .ini's [OUTPUT] PATH) calls the maskrom loader seedfw.images.loader builds.
LOADER_NAME = "rk3588_spl_loader_v1.18.113.bin"

# Where each file sits in the rkbin tree (the .ini names the blobs by these paths).
TREE_PATHS = {DDR.name: f"bin/rk35/{DDR.name}", USBPLUG.name: f"bin/rk35/{USBPLUG.name}",
              SPL.name: f"bin/rk35/{SPL.name}", INI.name: f"RKBOOT/{INI.name}",
              LICENSE.name: "LICENSE"}


@dataclass(frozen=True)
class RkbinMirrorSite(sources.MirrorDirSite):
    """$SEEDFW_MIRROR_DIR/rkbin/<name>, else $SEEDFW_MIRROR_DIR/<name>."""

    def fetch(self, file, dest_dir, log):
        root = self.root()
        if root is not None and (root / "rkbin" / file.name).is_file():
            return sources.MirrorDirSite(str(root / "rkbin")).fetch(file, dest_dir, log)
        return super().fetch(file, dest_dir, log)


@dataclass(frozen=True)
class RkbinUpstreamSite(sources.Site):
    """rkbin's tree at the pinned commit (each file at its own path)."""

    label = "rkbin"

    def describe(self) -> str:
        return f"rkbin at {COMMIT}"

    def fetch(self, file, dest_dir, log):
        return sources.UrlSite(f"{UPSTREAM}/{TREE_PATHS[file.name]}").fetch(file, dest_dir, log)


SOURCE = sources.Source(name="rkbin", version=COMMIT, files=(DDR, USBPLUG, SPL, INI, LICENSE),
                        sites=(RkbinMirrorSite(), RkbinUpstreamSite()), archive=LICENSE.name)


def fetch(log: Path | None = None, progress=print) -> dict[str, Path]:
    """Every pinned rkbin file, verified, from the shared download cache; SeedfwError otherwise."""
    return sources.fetch(SOURCE, log=log, progress=progress)


def check_override(path: str, pin: sources.SourceFile, config: Path, field: str) -> Path:
    """A user-given blob (e.g. CONFIG_UBOOT_ROCKCHIP_TPL) must exist and carry the pinned bytes:
    a DDR init blob of another version trains the memory differently, and we would not know."""
    p = Path(path)
    if not p.is_file():
        raise SeedfwError(f"DDR init blob {p} does not exist (the pinned one is {pin.name}; unset "
                          "it to fetch that, or build with --allow-missing-blobs for a "
                          "NON-FUNCTIONAL placeholder)", config, field)
    actual = util.sha256_file(p)
    if actual != pin.sha256:
        raise SeedfwError(f"DDR init blob {p} has sha256 {actual}, not the pinned {pin.sha256} "
                          f"({pin.name})", config, field)
    return p


def mirror_note() -> str:
    root = paths.mirror_dir()
    return f"SEEDFW_MIRROR_DIR={root}" if root else "SEEDFW_MIRROR_DIR not set"


def sbom_components(part) -> list:
    """One SBOM component per blob (U-Boot's binman and the maskrom loader both embed them):
    binary-only, so the blob is its own "source"; proprietary, under rkbin's LICENSE."""
    from ..sbom import model
    got = fetch(progress=lambda m: None)
    return [part.component(blob.name, COMMIT, "LicenseRef-rkbin", [got[blob.name],
                                                                  got[LICENSE.name]],
                           ref=f"rkbin:{blob.name}", supplier="Rockchip Electronics Co., Ltd.",
                           purl=model.purl("github", "rkbin", COMMIT, namespace="rockchip-linux",
                                           subpath=TREE_PATHS[blob.name]),
                           note="binary-only vendor blob (proprietary: rkbin's LICENSE, "
                                "redistribution in binary form only)")
            for blob in BLOBS]
