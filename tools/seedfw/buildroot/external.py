"""seedfw's Buildroot menu → a defconfig fragment, and the generated BR2_EXTERNAL tree.

Two layers, so that what the user chose and what this machine needs stay apart:
  * `fragment(cfg)` — the Buildroot symbols the seedfw configuration means (CPU, rootfs formats,
    packages, the agent); written by `invoke config` to <out>/buildroot.fragment. No paths.
  * `defconfig(...)` — that fragment plus the machine's paths (relocated toolchain, download dir,
    primary site, override file) and the external tree's scripts: the defconfig Buildroot reads.
The BR2_EXTERNAL tree (`name: SEEDFW`) is generated under <out>/build/buildroot-external by the
`buildroot.external` step, i.e. only when its inputs change:
    external.desc  Config.in  external.mk  local.mk (BR2_PACKAGE_OVERRIDE_FILE)
    configs/seedfw_<board>_defconfig
    package/seedfw-agent/{Config.in,seedfw-agent.mk}     (builds firmware/agent)
    board/<board>/{post-build.sh,post-image.sh}
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR
from . import VERSION, mirror, toolchain, tree

NAME = "SEEDFW"
FRAGMENT = "buildroot.fragment"
_ASSIGN = re.compile(r"^(BR2_[A-Za-z0-9_]+)=(.+)$")
# Symbols our own external tree defines (not in Buildroot's Config.in files).
EXTERNAL_SYMBOLS = {"BR2_PACKAGE_SEEDFW_AGENT"}


def defconfig_name(board: str) -> str:
    return f"seedfw_{board.replace('-', '_')}_defconfig"


def _where(cfg, symbol: str):
    a = cfg.origins.get(symbol)
    return (a.file, f"line {a.line}") if a else (cfg.outdir / ".config", f"CONFIG_{symbol}")


def fragment(cfg, known: set[str] | None = None) -> list[str]:
    """The Buildroot lines the seedfw configuration means; checked against `known` symbols."""
    v = cfg.values
    version = v.get("BUILDROOT_VERSION") or VERSION
    if version != VERSION:
        raise SeedfwError(f"Buildroot version '{version}' is not pinned (pinned: {VERSION})",
                          *_where(cfg, "BUILDROOT_VERSION"))
    lines = ["BR2_aarch64=y", f"BR2_{v.get('BUILDROOT_TARGET_CPU') or 'cortex_a53'}=y",
             'BR2_TARGET_GENERIC_HOSTNAME="seedfw"',
             f'BR2_TARGET_GENERIC_ISSUE="seedfw {cfg.board.os_name}"',
             f'BR2_TARGET_GENERIC_GETTY_PORT="{v.get("BUILDROOT_CONSOLE") or "ttyAMA0"}"',
             # Same inputs, same rootfs bytes in any output dir: file times from
             # SOURCE_DATE_EPOCH, cpio --reproducible (host-cpio: an override, see mirror.py).
             "BR2_REPRODUCIBLE=y",
             "# BR2_TARGET_ROOTFS_TAR is not set"]
    if v.get("BUILDROOT_ROOTFS_CPIO"):
        lines.append("BR2_TARGET_ROOTFS_CPIO=y")
    # BUILDROOT_ROOTFS_EXT4 maps to nothing here: seedfw.parts.disk makes the ext4 from
    # rootfs.cpio with the host's mke2fs (Buildroot's ext4 needs host-e2fsprogs, not offline).
    if v.get("BUILDROOT_AGENT"):
        lines.append("BR2_PACKAGE_SEEDFW_AGENT=y")
    if v.get("UPDATE_RAUC"):           # RAUC + fw_setenv (seedfw.buildroot.rauc)
        from . import rauc as update_sources
        lines += update_sources.FRAGMENT
    checked = [(f"BR2_{v.get('BUILDROOT_TARGET_CPU') or 'cortex_a53'}", "BUILDROOT_TARGET_CPU")]
    for name in (v.get("BUILDROOT_PACKAGES") or "").split():
        sym = "BR2_PACKAGE_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
        lines.append(f"{sym}=y")
        checked.append((sym, "BUILDROOT_PACKAGES"))
    for word in _split(cfg, v.get("BUILDROOT_EXTRA_CONFIG") or ""):
        m = _ASSIGN.match(word)
        if not m:
            raise SeedfwError(f"'{word}' is not a BR2_NAME=value assignment",
                              *_where(cfg, "BUILDROOT_EXTRA_CONFIG"))
        lines.append(word)
        checked.append((m.group(1), "BUILDROOT_EXTRA_CONFIG"))
    if known is not None:
        for sym, origin in checked:
            if sym not in known and sym not in EXTERNAL_SYMBOLS:
                raise SeedfwError(f"{sym} is not a symbol of Buildroot {VERSION}",
                                  *_where(cfg, origin))
    return lines


def _split(cfg, text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise SeedfwError(f"cannot split '{text}': {exc}",
                          *_where(cfg, "BUILDROOT_EXTRA_CONFIG")) from None


def checked_fragment(cfg, progress=print) -> list[str] | None:
    """The fragment with every symbol checked against the pinned tree; None when Buildroot is off.

    Checking needs the pinned tree's symbol list, so the first configuration on a machine
    fetches and unpacks the tree (from the mirror: seconds)."""
    if not cfg.values.get("BUILDROOT"):
        return None
    fragment(cfg)                            # value errors first: they need no tree
    if cfg.values.get("UPDATE_RAUC"):        # RAUC's sources, before any tree is fetched
        from . import rauc as update_sources
        update_sources.check_available(cfg)
    return fragment(cfg, tree.symbols(tree.ensure(progress=progress)))


def write_fragment(cfg, lines: list[str] | None) -> Path | None:
    """`invoke config`: <out>/buildroot.fragment when Buildroot is enabled (removed otherwise)."""
    path = Path(cfg.outdir) / FRAGMENT
    if lines is None:
        path.unlink(missing_ok=True)
        return None
    util.write_text(path, "# Generated by seedfw from the Buildroot menu; do not edit\n"
                    + "\n".join(lines) + "\n")
    return path


def defconfig(cfg, ext: Path, toolchain_path: Path) -> str:
    # Named by the OS, not the board (board.yaml os_name): two boards with one OS configuration
    # generate the same tree, so the Buildroot step's stamp is one and its output is shared.
    board = cfg.board.os_name
    lines = ["# Generated by seedfw (seedfw.buildroot.external); do not edit",
             f"# seedfw OS {board}, Buildroot {VERSION}", *fragment(cfg),
             "", "# This machine: relocated toolchain, offline sources, overrides",
             *toolchain.defconfig_lines(toolchain_path),
             f'BR2_DL_DIR="{mirror.download_dir()}"',
             f'BR2_PRIMARY_SITE="file://{mirror.primary_dir()}"',
             "BR2_PRIMARY_SITE_ONLY=y",
             f'BR2_PACKAGE_OVERRIDE_FILE="$(BR2_EXTERNAL_{NAME}_PATH)/local.mk"',
             f'BR2_ROOTFS_POST_BUILD_SCRIPT="$(BR2_EXTERNAL_{NAME}_PATH)/board/{board}/post-build.sh"',
             f'BR2_ROOTFS_POST_IMAGE_SCRIPT="$(BR2_EXTERNAL_{NAME}_PATH)/board/{board}/post-image.sh"']
    if cfg.values.get("UPDATE_RAUC"):        # system.conf, fw_env.config, keyring (seedfw.update)
        lines.append(f'BR2_ROOTFS_OVERLAY="$(BR2_EXTERNAL_{NAME}_PATH)/board/{board}/update-overlay"')
    return "\n".join(lines) + "\n"


_AGENT_MK = """################################################################################
#
# seedfw-agent: firmware/agent of the seedfw tree (generated by seedfw; do not edit)
#
################################################################################

SEEDFW_AGENT_VERSION = {version}
SEEDFW_AGENT_SITE = {firmware}
SEEDFW_AGENT_SITE_METHOD = local
# The seedfw tree declares no licence of its own yet; legal-info lists it as such.
SEEDFW_AGENT_LICENSE = unspecified (seedfw)

define SEEDFW_AGENT_BUILD_CMDS
	$(TARGET_MAKE_ENV) $(MAKE) -C $(@D)/agent CC="$(TARGET_CC)" CFLAGS="$(TARGET_CFLAGS)" \\
		LDFLAGS="$(TARGET_LDFLAGS)"
endef

define SEEDFW_AGENT_INSTALL_TARGET_CMDS
	$(INSTALL) -D -m 0755 $(@D)/agent/seedfw-agent $(TARGET_DIR)/usr/bin/seedfw-agent
	$(INSTALL) -D -m 0755 $(@D)/agent/S99seedfw-agent $(TARGET_DIR)/etc/init.d/S99seedfw-agent
endef

$(eval $(generic-package))
"""

_POST_BUILD = """#!/bin/sh
# seedfw post-build ($1 = the target dir): where the agent finds what the bootloader placed,
# from board.yaml's "boot-package" region (else the file the OS carries), and whether it powers
# the board off afterwards.
set -e
mkdir -p "$1/etc/default"
cat > "$1/etc/default/seedfw-agent" <<'EOF'
SEEDFW_OS={board}
SEEDFW_AGENT_ARGS="{args}"
SEEDFW_AGENT_MODULES="{modules}"
SEEDFW_AGENT_POWEROFF={poweroff}
EOF
"""

_POST_IMAGE = """#!/bin/sh
# seedfw post-image ($1 = the images dir): sizes and sha256 of the rootfs images, which seedfw
# cross-checks against the files it copies into <out>/images.
set -e
cd "$1"
for f in rootfs.*; do
    [ -f "$f" ] || continue
    case "$f" in *.txt) continue;; esac
    echo "$(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f") $f"
done > seedfw-images.txt
"""


# Where an ext4 root carries the build's boot package for the agent (--file).
PACKAGE_PATH = "/usr/share/seedfw/boot.pkg"


def agent_args(cfg) -> str:
    region = next((r for r in cfg.board.memory if r.name == "boot-package"), None)
    # Both boards' OS images carry the OPP overlay (qemu-aarch64: U-Boot applies it from the OS
    # FIT, seedfw.parts.os_fit; rk3588: applied to the board DT at build time,
    # seedfw.parts.os_boot_files): the agent checks the live DT against the DVFS table.
    perf = "".join(f"--perf {spec} " for spec in cfg.board.raw.get("perf", []))
    if region is not None:
        # U-Boot's seedfw_verify copied the boot package there out of the firmware FIT it had
        # verified (seedfw.parts.fit_verify), and the DT reserves it (no-map): qemu-aarch64's
        # OS FIT boot script, rk3588's extlinux fdtoverlays.
        return f"{perf}--mem 0x{region.base:x}:0x{region.size:x} --dt-opp /proc/device-tree"
    # No bootloader of ours places it in RAM (a board without the region): the OS carries the
    # build's boot package in its ext4 root instead (seedfw.parts.os_root puts it there).
    return f"{perf}--file {PACKAGE_PATH} --dt-opp /proc/device-tree"


def agent_modules(cfg) -> str:
    """The modules the agent's init script loads (OS_MODULES_AGENT; they are in the rootfs only
    with the ext4 root, seedfw.linux.modules), checked against the module-list grammar by
    Kconfig already: space-separated names, safe inside the double quotes."""
    if not cfg.values.get("OS_ROOT_EXT4"):
        return ""
    return " ".join((cfg.values.get("OS_MODULES_AGENT") or "").split())


def files(cfg, toolchain_path: Path, ext: Path) -> dict[str, str]:
    """{relative path: text} of the whole external tree (named by the OS: see defconfig)."""
    board = cfg.board.os_name
    if cfg.values.get("UPDATE_RAUC"):
        from ..update import overlay
        extra = {f"board/{board}/update-overlay/{rel}": text
                 for rel, text in overlay.files(cfg).items()}
    else:
        extra = {}
    return extra | {
        # No desc: line: `make list-defconfigs` then heads the list with the name, "SEEDFW".
        "external.desc": f"name: {NAME}\n",
        "Config.in": f'source "$BR2_EXTERNAL_{NAME}_PATH/package/seedfw-agent/Config.in"\n',
        "external.mk": f"include $(sort $(wildcard $(BR2_EXTERNAL_{NAME}_PATH)/package/*/*.mk))\n",
        "local.mk": mirror.override_file_text(),
        f"configs/{defconfig_name(board)}": defconfig(cfg, ext, toolchain_path),
        "package/seedfw-agent/Config.in": (
            "config BR2_PACKAGE_SEEDFW_AGENT\n\tbool \"seedfw-agent\"\n\thelp\n"
            "\t  seedfw's boot agent (firmware/agent): verifies the DVFS table and models\n"
            "\t  the bootloader placed, applies the power profile, reports, powers off.\n"),
        "package/seedfw-agent/seedfw-agent.mk": _AGENT_MK.format(
            version="local", firmware=FIRMWARE_DIR),
        f"board/{board}/post-build.sh": _POST_BUILD.format(
            board=board, args=agent_args(cfg), modules=agent_modules(cfg),
            poweroff="y" if cfg.values.get("BUILDROOT_AGENT_POWEROFF") else "n"),
        f"board/{board}/post-image.sh": _POST_IMAGE,
    }


def generate(cfg, toolchain_path: Path, dest: Path) -> Path:
    """Write the tree atomically (a half-written external tree is never left under `dest`)."""
    with util.atomic_dir(dest) as tmp:
        for rel, text in files(cfg, toolchain_path, dest).items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if rel.endswith(".sh") or "/init.d/" in rel:
                path.chmod(0o755)
    return dest
