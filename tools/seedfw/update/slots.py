"""The slot plan of an A/B device, and the two target files RAUC and libubootenv read from it.

One plan (`plan(board, values)`), three readers: the rootfs overlay (system.conf, fw_env.config,
the by-partuuid links), the U-Boot environment image (BOOT_ORDER, BOOT_x_LEFT) and the docs.

Slots. RAUC installs into the slot that is not booted: rootfs.0 (bootname A) and rootfs.1 (B),
two ext4 partitions of UPDATE_SLOT_SIZE found by GPT PARTUUID (uuid5 of the board name and the
partition name, seedfw.parts.layout.guid: the same on every build, so a bundle built later still
finds them). "data" is the persistent partition: RAUC's data-directory (its status file) lives
there, never in a slot, so an install or a rollback cannot lose it.

Where U-Boot keeps its environment is board data: board.yaml's `update.env` (schema in
seedfw.boards), with the reason for each board's choice beside it there (rk3588: two raw
redundant copies at 14 MiB; qemu-aarch64: a file in a FAT partition, the pflash times out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SeedfwError

MIB = 1 << 20
KEYRING = "/etc/rauc/keyring.pem"
DATA_MOUNT = "/data"


@dataclass(frozen=True)
class EnvPlace:
    kind: str                          # "raw" | "fat"
    offset: int = 0                    # raw: byte offset on the whole device
    redundant_offset: int | None = None
    size: int = 0x8000                 # U-Boot's CONFIG_ENV_SIZE
    partition: str = ""                # fat: the partition holding the file
    file: str = ""                     # fat: the file
    mount: str = ""                    # fat: where Linux mounts the partition


# The device node the whole disk has on the target, per storage (for a raw env).
DISK_DEVICE = {"sd-emmc": "/dev/mmcblk0", "virtio": "/dev/vda"}


@dataclass(frozen=True)
class Slot:
    name: str                          # RAUC slot name: rootfs.0
    bootname: str                      # what BOOT_ORDER and rauc.slot= say: A
    partuuid: str
    size: int


@dataclass(frozen=True)
class Plan:
    board: str
    compatible: str
    slots: tuple[Slot, ...]
    data: Slot
    env: EnvPlace
    storage: str
    attempts: int

    @property
    def bootnames(self) -> tuple[str, ...]:
        return tuple(s.bootname for s in self.slots)


def size_value(text, symbol: str, outdir: Path | None = None) -> int:
    """A Kconfig size ("64M") in bytes: whole MiB, at least 1 MiB, or one error naming it."""
    m = re.fullmatch(r"(\d+)([KMG])", str(text or "").strip())
    size = int(m.group(1)) << {"K": 10, "M": 20, "G": 30}[m.group(2)] if m else 0
    if size < MIB or size % MIB:
        raise SeedfwError(f"'{text}' is not a size in whole MiB of at least 1M (e.g. 64M)",
                          (outdir or Path(".")) / ".config", f"CONFIG_{symbol}")
    return size


def guid(board: str, what: str) -> str:
    from ..parts.layout import NAMESPACE
    import uuid
    return str(uuid.uuid5(NAMESPACE, f"{board}/{what}"))


def plan(board, values: dict, outdir: Path | None = None) -> Plan:
    """The slot plan of `board` (a seedfw.boards.Board) under the configuration `values`."""
    storage = board.boot["storage"]
    decl = board.update
    if not decl or storage not in DISK_DEVICE:
        raise SeedfwError(f"board {board.name} declares no A/B layout for CONFIG_UPDATE "
                          "(board.yaml update: slots, data, env)", board.dir / "board.yaml",
                          "update")
    env = env_place(decl["env"], board)
    size = size_value(values.get("UPDATE_SLOT_SIZE") or "64M", "UPDATE_SLOT_SIZE", outdir)
    data = size_value(values.get("UPDATE_DATA_SIZE") or "16M", "UPDATE_DATA_SIZE", outdir)
    rootfs = values.get("BUILDROOT_ROOTFS_EXT4_SIZE")
    if rootfs and size_value(rootfs, "BUILDROOT_ROOTFS_EXT4_SIZE", outdir) > size:
        raise SeedfwError(f"the rootfs ({rootfs}) does not fit a slot of "
                          f"{values.get('UPDATE_SLOT_SIZE')}", (outdir or Path(".")) / ".config",
                          "CONFIG_UPDATE_SLOT_SIZE")
    slots = tuple(Slot(name, b, guid(board.name, f"part-{name}"), size)
                  for name, b in zip(decl["slots"], "AB"))
    return Plan(board.name, values.get("UPDATE_COMPATIBLE") or f"seedfw-{board.name}", slots,
                Slot(decl["data"], "", guid(board.name, f"part-{decl['data']}"), data), env,
                storage, int(values.get("UPDATE_BOOT_ATTEMPTS") or 3))


def partition_names() -> list[str]:
    """The slot and data partition names every board declares, in board order."""
    from .. import boards
    out: list[str] = []
    for name in boards.names():
        u = boards.get(name).update
        for n in (*u["slots"], u["data"]) if u else ():
            if n not in out:
                out.append(n)
    return out


def raw_places() -> list[EnvPlace]:
    """The raw env places every board declares (`invoke inspect` of a disk knows no board)."""
    from .. import boards
    out = []
    for name in boards.names():
        b = boards.get(name)
        if b.update and b.update["env"]["kind"] == "raw":
            place = env_place(b.update["env"], b)
            if place not in out:
                out.append(place)
    return out


def env_place(e: dict, board) -> EnvPlace:
    """board.yaml update.env as an EnvPlace; a raw place needs its offset, a FAT one its
    partition, file and mount (one line naming the field otherwise)."""
    need = ("offset",) if e["kind"] == "raw" else ("partition", "file", "mount")
    for key in need:
        if key not in e:
            raise SeedfwError(f"update.env: a {e['kind']} environment needs '{key}'",
                              board.dir / "board.yaml", f"update.env.{key}")
    if e["kind"] == "raw":
        red = e.get("redundant_offset")
        if e["offset"] % 512 or (red is not None and (red % 512 or abs(red - e["offset"])
                                                      < e["size"])):
            raise SeedfwError("update.env: raw copies must start on a 512-byte sector and "
                              "not overlap", board.dir / "board.yaml", "update.env.offset")
        return EnvPlace("raw", offset=e["offset"], redundant_offset=red, size=e["size"])
    return EnvPlace("fat", size=e["size"], partition=e["partition"], file=e["file"],
                    mount=e["mount"])


def system_conf(p: Plan) -> str:
    """/etc/rauc/system.conf (RAUC's reference: docs/reference.rst, [system] [keyring] [slot.*])."""
    lines = ["# Generated by seedfw (seedfw.update.slots); do not edit on the target",
             "[system]", f"compatible={p.compatible}", "bootloader=uboot",
             # verity bundles only: the format whose payload the kernel checks block by block
             "bundle-formats=-plain",
             f"data-directory={DATA_MOUNT}/rauc", "",
             "[keyring]", f"path={KEYRING}", ""]
    for s in p.slots:
        lines += [f"[slot.{s.name}]",
                  f"device=/dev/disk/by-partuuid/{s.partuuid}", "type=ext4",
                  f"bootname={s.bootname}", ""]
    return "\n".join(lines)


def fw_env_config(p: Plan) -> str:
    """/etc/fw_env.config for libubootenv's fw_printenv/fw_setenv (device offset size)."""
    e = p.env
    head = ["# Generated by seedfw (seedfw.update.slots): where U-Boot keeps its environment",
            "# device\t\toffset\t\tsize"]
    if e.kind == "raw":
        dev = DISK_DEVICE[p.storage]
        rows = [f"{dev}\t0x{e.offset:x}\t0x{e.size:x}"]
        if e.redundant_offset is not None:
            rows.append(f"{dev}\t0x{e.redundant_offset:x}\t0x{e.size:x}")
    else:
        rows = [f"{e.mount}/{e.file}\t0x0\t0x{e.size:x}"]
    return "\n".join(head + rows) + "\n"


def partuuid_links(p: Plan) -> str:
    """An init script that makes /dev/disk/by-partuuid/<guid> for the slots and data.

    Why: BusyBox's mdev makes no /dev/disk/by-* links (udev would), and RAUC names slots by
    device path. The kernel's uevent of a GPT partition carries PARTNAME; the GUIDs are the
    build's (the same uuid5 the disk image was written with), so a partition is linked only when
    its name is one of the plan's."""
    linked = p.slots + (p.data,)
    env_mount = ""
    if p.env.kind == "fat":
        env = Slot(p.env.partition, "", guid(p.board, f"part-{p.env.partition}"), 0)
        linked += (env,)
        env_mount = (f"\tmkdir -p {p.env.mount}\n\tmount -t vfat "
                     f"/dev/disk/by-partuuid/{env.partuuid} {p.env.mount}\n")
    table = "\n".join(f"\t\t{s.name}) uuid={s.partuuid} ;;" for s in linked)
    return f"""#!/bin/sh
# Generated by seedfw (seedfw.update.slots): /dev/disk/by-partuuid links for RAUC's slots.
case "$1" in
start|"")
	mkdir -p /dev/disk/by-partuuid
	for ev in /sys/class/block/*/uevent; do
		name=$(sed -n 's/^PARTNAME=//p' "$ev")
		dev=$(sed -n 's/^DEVNAME=//p' "$ev")
		uuid=
		case "$name" in
{table}
		esac
		[ -n "$uuid" ] && ln -sf "/dev/$dev" "/dev/disk/by-partuuid/$uuid"
	done
	mkdir -p {DATA_MOUNT}
	mount -t ext4 /dev/disk/by-partuuid/{p.data.partuuid} {DATA_MOUNT} && mkdir -p {DATA_MOUNT}/rauc
{env_mount}	;;
esac
exit 0
"""
