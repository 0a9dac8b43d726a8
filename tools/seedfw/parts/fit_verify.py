"""U-Boot verifies the firmware FIT before anything boots: one script, every U-Boot board.

The generators (a leaf module: the U-Boot and fit-verify parts import it, it imports no part;
os-boot-files and os-root ask for the role and the board's region instead): the script, the default-environment file that carries it, the public-key node for
U-Boot's control DT (signing), and the DT overlay reserving the boot package's region. DOC is
the reference page of the part that builds the overlay (seedfw.parts.fit_verify_part).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SeedfwError
from ..paths import ROOT

DOC = """Firmware FIT verification in U-Boot (`seedfw_verify`), and the DT overlay that hands the
verified boot package to Linux.

The script is one U-Boot environment variable, `seedfw_verify`, in U-Boot's compiled-in default
environment (a generated .env file, CONFIG_ENV_SOURCE_FILE, which #includes the board's own
.env so nothing of U-Boot's is lost). The boot command runs it first (`run seedfw_verify`) and
goes on only when it left `seedfw_fit=verified`; another step (boot counting, A/B) composes by
running before or after it and testing the same variable. What it does, on every board:

  1. find the GPT partition named "firmware" on the board's storage (board.yaml boot.storage:
     SD/eMMC: mmc 1 (SD) then mmc 0 (eMMC), the order of bootstd's boot_targets; QEMU:
     virtio 0) — by name, no sector is written into the script;
  2. read it whole to ${kernel_addr_r} (the kernel is loaded there only afterwards);
  3. `iminfo`: every image's sha256; with IMAGE_SIGN also `fdt checksign`: the configuration's
     signature against the `required` key in U-Boot's control DT (rk3588: the key node is
     compiled into it from the signing certificate, `pubkey_dtsi`);
  4. `imxtract … package <boot-package region>`: the boot package (DVFS table, OPP fragment,
     models: one image of the FIT) to the board's "boot-package" memory region; imxtract
     checks that image's hash once more.
A failure prints `seedfw: firmware FIT rejected, not booting` after U-Boot's own error line
(e.g. `Bad hash value for 'hash-1' hash node in 'package' image node`) and the boot command
stops: Linux never starts.

Why the boot package and not the FIT's separate images: the agent (firmware/agent, `--mem`)
reads the package format, which carries its own sha256 per entry and a header crc, so Linux
checks the very bytes U-Boot verified, with no FIT parser in the OS.

Why a DT overlay (extlinux `fdtoverlays`) for the reserved region: U-Boot applies it to the
board DT at boot, so the kernel sees the region as `no-map` reserved memory (it never uses those
pages, and /dev/mem may read them under STRICT_DEVMEM) without a rebuilt board DT. The overlay
is built here from board.yaml's region (`overlay_dts`, dtc), so the address is written once.

Kconfig symbols read: UBOOT, IMAGE_SIGN (+ BUILDROOT, KERNEL, BUILDROOT_ROOTFS_CPIO: enabled
with os-boot-files, seedfw.parts.layout.extlinux_os). Board fields read: boot.storage, memory
"boot-package", capabilities (extlinux). Needs role: boot-package (it checks the package fits
the region). Step (seedfw.parts.fit_verify_part): fit-verify.overlay → images/<OVERLAY>, role
boot-package-overlay, which os-boot-files places at /<OVERLAY> of partition "boot" (kind
dtb-overlay) and names in extlinux.conf (`fdtoverlays`). The firmware FIT carries the package
when board.yaml's FIT "firmware" lists role boot-package (seedfw.images.package_image).
"""

VAR = "seedfw_verify"          # the env variable the boot command runs
FLAG = "seedfw_fit"            # what it leaves: "verified", else "rejected"
PARTITION = "firmware"         # the GPT partition it reads (seedfw.parts.disk.layout)
OVERLAY = "seedfw-boot-package.dtbo"
VERSION = "1"
REJECTED = "seedfw: firmware FIT rejected, not booting"

# How U-Boot reaches each board.yaml boot.storage: interface, devices in the order to try
# (the first with a "firmware" partition wins), and what must run first.
# sd-emmc: the order of the rk3588 environment's boot_targets ("mmc1 mmc0 …": SD card, then
# eMMC), so the FIT verified is the one on the device whose extlinux.conf bootstd boots.
STORAGE = {"sd-emmc": ("mmc", ("1", "0"), None),
           "virtio": ("virtio", ("0",), "virtio scan")}


def region(board):
    """board.yaml memory region "boot-package", or None (the board hands nothing to Linux)."""
    return next((r for r in board.memory if r.name == "boot-package"), None)


def script(board, sign: bool) -> str:
    """The value of `seedfw_verify` for this board (one line of U-Boot hush)."""
    storage = board.boot.get("storage")
    if storage not in STORAGE:
        raise SeedfwError(f"U-Boot cannot verify the firmware FIT from storage '{storage}'",
                          board.dir / "board.yaml", "boot.storage")
    iface, devices, prescan = STORAGE[storage]
    pkg = region(board)
    if pkg is None:
        raise SeedfwError("no memory region 'boot-package' (where U-Boot hands the verified boot "
                          "package to the OS)", board.dir / "board.yaml", "memory")
    fit = "${kernel_addr_r}"
    dev = "${seedfw_dev}"
    steps = [f"setenv {FLAG} rejected", "setenv seedfw_dev",
             f"echo seedfw: firmware FIT from {iface} partition {PARTITION}"]
    if prescan:
        steps.append(prescan)
    # Tried last to first, so the first device with the partition is the one that stays set.
    steps += [f"if part start {iface} {d} {PARTITION} seedfw_blk; then setenv seedfw_dev {d}; fi"
              for d in reversed(devices)]
    check = [f"part start {iface} {dev} {PARTITION} seedfw_blk",
             f"part size {iface} {dev} {PARTITION} seedfw_cnt",
             f"{iface} dev {dev}", f"{iface} read {fit} ${{seedfw_blk}} ${{seedfw_cnt}}",
             f"iminfo {fit}"]
    what = "every hash"
    if sign:
        check += [f"fdt addr {fit}", "fdt checksign"]
        what = "every hash and the signature"
    check.append(f"imxtract {fit} package 0x{pkg.base:x}")
    steps.append(f"if {' && '.join(check)}; then setenv {FLAG} verified; "
                 # no parentheses: old hush reads them as syntax
                 f"echo seedfw: firmware FIT verified, {what} checked, boot package at "
                 f"0x{pkg.base:x}; "
                 f"else echo {REJECTED}; fi")
    # The variable's exit status too, for a caller that prefers `run {VAR} && ...`.
    steps.append(f"test ${{{FLAG}}} = verified")
    return "; ".join(steps)


def env_text(board, sign: bool, board_env: Path | None) -> str:
    """The .env file (U-Boot's text environment format) compiled into the default environment:
    the board's own .env first (CONFIG_ENV_SOURCE_FILE replaces it, so it is included), then
    `seedfw_verify`. One line per variable; U-Boot runs it through the C preprocessor."""
    head = f'#include "{board_env}"\n' if board_env else ""
    return head + f"{VAR}={script(board, sign)}\n"


def env_source_file(tree: Path, build: Path, target: Path) -> tuple[str, Path | None]:
    """(CONFIG_ENV_SOURCE_FILE, the board's own .env or None) for a .env written at
    `target`.env, from the configured U-Boot build in `build` (its .config names the board).
    U-Boot looks for <tree>/board/<vendor>/<board>/<value>.env, so the value is the path from
    that directory (both live under seedfw's U-Boot cache: the same on every machine)."""
    config = {}
    for line in (build / ".config").read_text().splitlines():     # U-Boot's own output
        if line.startswith(("CONFIG_SYS_VENDOR=", "CONFIG_SYS_BOARD=")):
            key, value = line.split("=", 1)
            config[key[7:]] = value.strip('"')
    vendor = config.get("SYS_VENDOR", "")
    name = config.get("SYS_BOARD", "")
    env_dir = tree / "board" / vendor / name if vendor else tree / "board" / name
    own = env_dir / f"{name}.env"
    return os.path.relpath(target, env_dir), own if own.is_file() else None


def bootcmd_extlinux() -> str:
    """The boot command of an extlinux board: verify, then bootstd (its default command)."""
    return f"run {VAR}; if test ${{{FLAG}}} = verified; then bootflow scan -lb; fi"


def signing(values) -> bool:
    return bool(values.get("IMAGE_SIGN"))


def certificate(values) -> Path:
    key_dir = Path(values.get("IMAGE_SIGN_KEY_DIR") or "keys")
    key_dir = key_dir if key_dir.is_absolute() else ROOT / key_dir
    return key_dir / f"{values.get('IMAGE_SIGN_KEY_NAME') or 'dev'}.crt"


def pubkey_dtsi(values) -> str:
    """The /signature/key-<name> node mkimage -K would write (U-Boot's rsa-verify properties),
    computed from the certificate's public half, `required = "conf"`: a control-DT include, so
    U-Boot proper refuses a FIT configuration without a good signature by this key. (SPL's DT
    keeps only bootph-* nodes: u-boot.itb's own check is unchanged.)"""
    from ..images import fit as fit_mod
    from ..images import fit_sig
    name = values.get("IMAGE_SIGN_KEY_NAME") or "dev"
    crt = certificate(values)
    if not crt.is_file():
        raise SeedfwError(f"signing certificate '{crt.name}' not found in {crt.parent}", crt,
                          "IMAGE_SIGN_KEY_DIR")
    n, e = fit_sig.keys_from_cert(crt, name)[name]
    bits = n.bit_length()
    words = bits // 32              # RSA-2048/3072/4096: a whole number of 32-bit cells

    def cells(v: int, count: int) -> str:
        return " ".join(f"0x{(v >> (32 * (count - 1 - i))) & 0xFFFFFFFF:08x}" for i in range(count))

    n0_inverse = (-pow(n, -1, 1 << 32)) % (1 << 32)
    r_squared = pow(2, 2 * bits, n)
    return ("/ {\n\tsignature {\n"
            f"\t\tkey-{name} {{\n"
            f'\t\t\trequired = "conf";\n\t\t\talgo = "{fit_mod.SIGN_ALGO}";\n'
            f'\t\t\tkey-name-hint = "{name}";\n'
            f"\t\t\trsa,num-bits = <{bits}>;\n\t\t\trsa,n0-inverse = <0x{n0_inverse:08x}>;\n"
            f"\t\t\trsa,exponent = /bits/ 64 <{e}>;\n"
            f"\t\t\trsa,modulus = <{cells(n, words)}>;\n"
            f"\t\t\trsa,r-squared = <{cells(r_squared, words)}>;\n"
            "\t\t};\n\t};\n};\n")


def overlay_dts(board) -> str:
    """A DT overlay reserving the board's "boot-package" region (no-map), one fragment on "/"
    (target-path: no __fixups__, applies to any base DT)."""
    r = region(board)
    if r is None:
        raise SeedfwError("no memory region 'boot-package'", board.dir / "board.yaml", "memory")
    return ("/dts-v1/;\n/plugin/;\n\n&{/} {\n\treserved-memory {\n"
            "\t\t#address-cells = <2>;\n\t\t#size-cells = <2>;\n\t\tranges;\n\n"
            f"\t\tseedfw-boot-package@{r.base:x} {{\n"
            f"\t\t\treg = <0x{r.base >> 32:x} 0x{r.base & 0xFFFFFFFF:x} "
            f"0x{r.size >> 32:x} 0x{r.size & 0xFFFFFFFF:x}>;\n"
            "\t\t\tno-map;\n\t\t};\n\t};\n};\n")
