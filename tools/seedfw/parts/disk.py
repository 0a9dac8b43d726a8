"""The disk image part: genimage writes a GPT image, bmaptool its block map."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError
from .base import OS_PARTITION_SIZE, Output, Part, Placement
from .layout import MIB, PARTITION_SIZE, ab_slots, guid, rootfs_cpio, rootfs_size  # noqa: F401

DOC = """Disk image: the SD/eMMC (board boot.storage sd-emmc) or QEMU virtio disk, written by
genimage as a GPT image, with bmaptool's block map.

Layout (one definition, `layout()`; tests read it back through seedfw.images.gpt):

    0           protective MBR, GPT header (LBA 1) and partition array (17 KiB in all)
    32 KiB      u-boot-rockchip.bin, outside the partition table (rk3588: the boot ROM reads the
                idblock at sector 64, SPL then u-boot.itb at 8 MiB)
    16 MiB      partition "firmware": our firmware FIT (models, DVFS table, OPP fragment) raw
    +16 MiB     partition "boot": empty (16 MiB), or 64 MiB holding the OS: qemu-aarch64 the OS FIT
                raw (seedfw.parts.os_fit); rk3588 an ext4 "boot" with kernel, DT, initramfs
                and extlinux/extlinux.conf (seedfw.parts.os_boot_files), GPT attribute bit 2
                (legacy BIOS bootable) set, so U-Boot's bootstd scans only this partition
    +16/32 MiB  partition "rootfs": ext4 (label "rootfs"): Buildroot's rootfs.cpio unpacked
                (BUILDROOT_ROOTFS_EXT4, size BUILDROOT_ROOTFS_EXT4_SIZE, also images/rootfs.ext4)
                with, for an ext4 root (OS_ROOT_EXT4), the kernel modules and the boot package
                added (what the parts placed in "rootfs": `rootfs_additions`), else an empty
                placeholder of 16 MiB

With CONFIG_UPDATE (board.yaml `update:`, seedfw.update.slots) the "rootfs" entry becomes the two
slots A and B (GPT names from update.slots, UPDATE_SLOT_SIZE each, both holding the same
rootfs.ext4: the factory state boots A and B is a good fallback until the first install), then
the persistent "data" partition (an empty ext4 of UPDATE_DATA_SIZE, mounted at /data: the
rootfs gains that directory), and U-Boot's environment goes where update.env says: raw copies
outside the table (the factory env of seedfw.update.env: BOOT_ORDER, both counters, the slots'
PARTUUIDs; CRC-32 checked by `invoke inspect`). The root on the kernel command line is then
slot A's PARTUUID.

The ext4 file systems are genimage's ext4 type with the host's mke2fs (-d: the tree is copied
in). The tree is unpacked and staged under fakeroot, and genimage runs in the same fakeroot
state, so owners, modes and device nodes are the cpio's even when not run as root.

Reproducible: the disk GUID, partition GUIDs, the ext4 UUIDs and hash seeds are derived from the
board name (uuid5), mke2fs's clock and the ext4 superblock times from SOURCE_DATE_EPOCH, and,
because mke2fs copies each inode's times from the staged tree (whose ctimes are "now"), an
exec-post debugfs script sets every inode's atime/ctime/mtime/crtime to SOURCE_DATE_EPOCH too
(mke2fs 1.47 already adds directory entries sorted by name). The .bmap lists the mapped ranges
with their sha256 (bmaptool checks them when copying); which ranges are "mapped" depends on the
holes of the file genimage wrote, so it describes this image file.

Kconfig symbols read: UBOOT, BUILDROOT, BUILDROOT_ROOTFS_CPIO, BUILDROOT_ROOTFS_EXT4(_SIZE).
Board fields read: name, image.partitions (the layout above, each entry a list of roles: what
fills it comes from whichever enabled part provides or places those roles), boot.storage,
image.format (not fit: the firmware FIT for U-Boot, board.yaml's image.fits "firmware", is
made here).
Needs roles: every provided role of image.partitions, every placed role (the kernel, the
initramfs, the boot package), rootfs-overlay, rootfs-cpio; own FIT: payload, boot-package.
Outputs: images/<board>-disk.img, images/<board>-disk.img.bmap (+ images/rootfs.ext4, and the
<board>.itb of boards whose image format is not a FIT).
"""

VERSION = "5"            # 5: A/B slots (UPDATE); 4: the ext4 root's modules and boot package
UBOOT_OFFSET = 32 * 1024
FIRMWARE_OFFSET = 16 * MIB


@dataclass(frozen=True)
class Partition:
    name: str
    image: str | None          # file in images/ (or the placeholder rootfs.ext4), None = empty
    offset: int | None
    size: int | None
    in_table: bool = True
    bootable: bool = False     # GPT attribute bit 2: where U-Boot's bootstd looks first


def disk_name(ctx) -> str:
    return f"{ctx.board.name}-disk.img"


def firmware_image(ctx) -> str:
    return f"{ctx.board.name}.itb"


def own_fit(ctx) -> bool:
    """Boards whose image format is not a FIT (qemu-aarch64: a boot package) get one here for
    U-Boot: the roles of board.yaml's FIT "firmware" (the payload and the boot package), each
    with a sha256 (seedfw.images.fit)."""
    return ctx.board.image["format"] != "fit"


def _file(ctx, role: str) -> str | None:
    got = ctx.file(role)
    return got.name if got is not None else None


def _placed(ctx, partition: str, roles) -> list[tuple[str, str]]:
    """(role, path inside the partition) of every provided role placed in `partition`, in the
    order board.yaml's entry lists its roles."""
    out = []
    for role in roles:
        if not ctx.providers(role):
            continue
        for o in ctx.providers(role):
            p = ctx.placement(o)
            if p is not None and p.partition == partition and p.path:
                out.append((role, p.path))
                break
    return out


def layout(ctx) -> list[Partition]:
    """board.yaml image.partitions, filled by role: a raw entry holds the first provided role's
    file, an ext4 entry the files placed in it (a file system made here); one with nothing to
    hold is an empty PARTITION_SIZE placeholder. "rootfs" is always an ext4 (Buildroot's tree,
    or the placeholder)."""
    parts = []
    for e in ctx.board.partitions:
        name, roles = e["name"], e["roles"]
        in_table = e.get("in_table", True)
        if e.get("fs") == "ext4" and "rootfs" in roles:
            parts += _root_partitions(ctx, name, e.get("offset"))
            continue
        if e.get("fs") == "ext4":
            filled = bool(_placed(ctx, name, roles))
            image = BOOT_FS if filled else None
        else:       # (the firmware FIT of own_fit boards is this part's own Output)
            image = next((_file(ctx, r) for r in roles if _file(ctx, r)), None)
            filled = image is not None
        if not filled and not in_table:
            continue                               # nothing to write outside the table
        size = e.get("size") if filled else PARTITION_SIZE
        parts.append(Partition(name, image, e.get("offset"), size if in_table else None,
                               in_table, bootable=bool(e.get("bootable")) and filled))
    return _with_env(ctx, parts)


BOOT_FS, ROOT_FS = "boot.ext4", "rootfs.ext4"        # made by genimage, not read from images/
DATA_FS, DATA_MOUNT = "data.ext4", "/data"
ENV_FILES = ("uboot-env.bin", "uboot-env-redund.bin")  # written by make() into its inputs


def update_plan(ctx):
    """seedfw.update.slots' plan under CONFIG_UPDATE, else None."""
    if not ab_slots(ctx):
        return None
    from ..update import slots
    return slots.plan(ctx.board, ctx.values, Path(getattr(ctx, "outdir", ".")))


def _root_partitions(ctx, name: str, offset) -> list[Partition]:
    plan = update_plan(ctx)
    if plan is None:
        return [Partition(name, ROOT_FS, offset, None)]
    if plan.env.kind != "raw":
        raise SeedfwError(f"board {ctx.board.name}: CONFIG_UPDATE with a '{plan.env.kind}' "
                          "environment is not written by seedfw yet (genimage's vfat needs "
                          "dosfstools and mtools, which this host's setup does not install)",
                          ctx.board.dir / "board.yaml", "update.env.kind")
    out = [Partition(s.name, ROOT_FS, offset if i == 0 else None, s.size)
           for i, s in enumerate(plan.slots)]
    return out + [Partition(plan.data.name, DATA_FS, None, plan.data.size)]


def env_images(ctx) -> list[tuple[str, int, bytes]]:
    """(file, device offset, bytes) of the raw env copies under CONFIG_UPDATE
    (seedfw.update.env.copies), named for genimage's inputs."""
    plan = update_plan(ctx)
    if plan is None:
        return []
    from ..update import env
    return [(ENV_FILES[i], at, data) for i, (at, data) in enumerate(env.copies(plan))]


def _with_env(ctx, parts: list[Partition]) -> list[Partition]:
    """The raw env copies inserted where their offsets fall (genimage wants ascending offsets)."""
    for name, offset, data in env_images(ctx):
        raw = Partition(name.removesuffix(".bin"), name, offset, None, in_table=False)
        at = next((i for i, p in enumerate(parts) if p.offset is not None and p.offset > offset),
                  len(parts))
        parts.insert(at, raw)
    return parts


def boot_files(ctx) -> dict[str, str]:
    """{path in the boot file system: file in images/} of the ext4 entry that is not the
    rootfs (the OS's boot files, placed by role), else {}."""
    for e in ctx.board.partitions:
        if e.get("fs") == "ext4" and "rootfs" not in e["roles"]:
            return {path.lstrip("/"): ctx.file(role).name
                    for role, path in _placed(ctx, e["name"], e["roles"])}
    return {}


def boot_fs_partition(ctx) -> str | None:
    return next((e["name"] for e in ctx.board.partitions
                 if e.get("fs") == "ext4" and "rootfs" not in e["roles"]), None)


def _stamp() -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(util.source_date_epoch()))


def _ext4(name: str, label: str, size: int, uuid_: str, seed: str, mountpoint=None) -> list[str]:
    """A genimage ext4 image; exec-post sets every inode's times (see the module docstring)."""
    lines = [f"image {name} {{"]
    if mountpoint:
        lines.append(f'\tmountpoint = "{mountpoint}"')
    return lines + ["\text4 {", "\t\tuse-mke2fs = true", f'\t\tlabel = "{label}"',
                    f'\t\tfs-timestamp = "{_stamp()}"',
                    f'\t\textraargs = "-U {uuid_} -E hash_seed={seed}"', "\t}",
                    f"\tsize = {size // MIB}M",
                    f'\texec-post = "debugfs -w -f {name}.times \\"$IMAGEOUTFILE\\""', "}", ""]


def genimage_config(ctx) -> str:
    """The genimage configuration for this board (also written to build/disk/genimage.cfg)."""
    # The rootfs's UUID and seed names are those of version 2 (its placeholder had them).
    lines = _ext4(ROOT_FS, "rootfs", rootfs_size(ctx), guid(ctx, "rootfs-fs"),
                  guid(ctx, "hash-seed"))
    if boot_files(ctx):
        lines += _ext4(BOOT_FS, "boot", OS_PARTITION_SIZE, guid(ctx, "boot-fs"),
                       guid(ctx, "boot-hash-seed"), mountpoint="/boot")
    plan = update_plan(ctx)
    if plan is not None:
        lines += _ext4(DATA_FS, "data", plan.data.size, guid(ctx, "data-fs"),
                       guid(ctx, "data-hash-seed"), mountpoint=DATA_MOUNT)
    lines += [f"image {disk_name(ctx)} {{", "\thdimage {", '\t\tpartition-table-type = "gpt"',
              f'\t\tdisk-uuid = "{guid(ctx, "disk")}"', "\t}"]
    for p in layout(ctx):
        lines.append(f"\tpartition {p.name} {{")
        if not p.in_table:
            lines.append('\t\tin-partition-table = "false"')
        else:
            lines.append(f'\t\tpartition-uuid = "{guid(ctx, "part-" + p.name)}"')
        if p.bootable:
            lines.append('\t\tbootable = "true"')
        if p.image:
            lines.append(f'\t\timage = "{p.image}"')
        if p.offset is not None:
            lines.append(f"\t\toffset = {p.offset // 1024}K")
        if p.size is not None:
            lines.append(f"\t\tsize = {p.size // 1024}K")
        lines.append("\t}")
    lines += ["}", ""]
    return "\n".join(lines)


STORAGE = {"sd-emmc": "SD card / eMMC (whole device)", "virtio": "QEMU virtio disk",
           "flash": "the board's flash"}


class DiskPart(Part):
    __doc__ = DOC
    name = "disk"
    symbols = ("UBOOT", "BUILDROOT", "BUILDROOT_ROOTFS_CPIO", "BUILDROOT_ROOTFS_EXT4",
               "BUILDROOT_ROOTFS_EXT4_SIZE")
    provides = ("disk", "disk-bmap", "rootfs", "firmware-fit")
    when = "UBOOT=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("UBOOT"))

    def steps(self, ctx):
        return _steps(ctx)

    def outputs(self, ctx):
        return _outputs(ctx)


def _outputs(ctx) -> list[Output]:
    where = STORAGE[ctx.board.boot["storage"]]
    storage = ctx.board.boot["storage"]
    step = "disk.image"
    held = tuple(r for e in ctx.board.partitions for r in e["roles"])
    # The disk image is what is written to storage, not itself read at boot (its parts are,
    # and are declared by whoever makes them): at_boot=False keeps it out of the boot-bytes
    # figures of the report while `invoke flash` still finds it.
    # A board QEMU runs gets it as its disk drive (board.yaml qemu.drives, `holds: drive`).
    out = [Output(ctx.images / disk_name(ctx), step, ("disk",), carries=held,
                  placement=Placement(storage=storage, offset=0), kind="disk",
                  read_by="the board's storage, as written", location=where,
                  flash=("rockusb", "sdcard"), at_boot=False,
                  qemu="drive" if ctx.board.qemu else ""),
           Output(ctx.images / f"{disk_name(ctx)}.bmap", step, ("disk-bmap",), carries=held)]
    if own_fit(ctx):
        # Read by U-Boot at boot, but it carries the boot package the report already counts
        # (images.steps declares it): at_boot=False until the report follows the U-Boot path.
        out.append(Output(ctx.images / firmware_image(ctx), step, ("firmware-fit",),
                          carries=ctx.board.fit_roles("firmware"),
                          placement=Placement(storage=storage, partition="firmware"),
                          kind="firmware-fit", read_by="U-Boot (iminfo / imxtract verify every hash)",
                          location="partition 'firmware' of the disk image", at_boot=False))
    if rootfs_cpio(ctx) is not None:
        out.append(Output(ctx.images / ROOT_FS, step, ("rootfs",),
                          placement=Placement(storage=storage, partition="rootfs")))
    return out


# What a role of the disk's own FIT is called in it and where it is loaded (board memory).
OWN_FIT = {"payload": ("payload", "bl33"), "boot-package": ("package", "boot-package")}


def qemu_fit(ctx, target: Path, log) -> Path:
    """<board>.itb for U-Boot on QEMU: the roles of board.yaml's FIT "firmware" (the payload at
    the bl33 region, conf `firmware`; the boot package, a loadable at the boot-package region)."""
    from ..images import fit
    from ..images.entries import FirmwareEntry, read
    board = ctx.board
    entries = []
    for role in board.fit_roles("firmware"):
        node, region = OWN_FIT[role]
        entries.append(FirmwareEntry(node, read(_needed(ctx, role)), arch="arm64",
                                     load=board.region(region).base))
    return fit.build(entries, target, description=f"seedfw {board.name} firmware", log=log)


def make(ctx, work: Path, log, say=lambda m: None) -> dict[Path, Path]:
    """Write the disk image (and, for boards without one, the firmware FIT) under `work`;
    returns {final path in images/: built file}. Usable outside a build (tests rebuild a
    tampered twin with it)."""
    work = Path(work).absolute()          # genimage and fakeroot run with cwd=work
    Part.fresh_dir(work)
    inputs = work / "in"
    for d in ("root", "tmp", "out", "in"):
        (work / d).mkdir()
    products = {}
    if own_fit(ctx):
        fit_path = qemu_fit(ctx, inputs / firmware_image(ctx), log)
        products[ctx.images / firmware_image(ctx)] = fit_path
    for name, _offset, data in env_images(ctx):
        (inputs / name).write_bytes(data)
    for p in layout(ctx):
        if p.image and p.image not in (BOOT_FS, ROOT_FS, DATA_FS) and not (inputs / p.image).exists():
            (inputs / p.image).symlink_to(_needed_file(ctx, p.image))
    util.write_text(work / "genimage.cfg", genimage_config(ctx))
    epoch = str(util.source_date_epoch())
    state = work / "fakeroot.state"
    stage_tree(ctx, work / "root", state, log)
    data = update_plan(ctx) is not None
    for name, tree in ((ROOT_FS, work / "root"), (BOOT_FS, work / "root" / "boot"),
                       *(((DATA_FS, work / "root" / DATA_MOUNT.lstrip("/")),) if data else ())):
        skip = {work / "root" / "boot"} if name == ROOT_FS and boot_files(ctx) else set()
        if name == ROOT_FS and data:
            skip.add(work / "root" / DATA_MOUNT.lstrip("/"))
        util.write_text(work / f"{name}.times", times_script(tree, skip))
    plan_mod.run_command(["fakeroot", "-i", state, "--", "genimage",
                          "--config", work / "genimage.cfg", "--rootpath", work / "root",
                          "--tmppath", work / "tmp", "--inputpath", inputs,
                          "--outputpath", work / "out"], cwd=work, log=log,
                         env={"SOURCE_DATE_EPOCH": epoch, "E2FSPROGS_FAKE_TIME": epoch})
    if rootfs_cpio(ctx) is not None:
        rootfs = work / "out" / ROOT_FS
        products[ctx.images / ROOT_FS] = rootfs
        say(f"{ROOT_FS} {rootfs.stat().st_size // MIB} MiB from rootfs.cpio")
    img = work / "out" / disk_name(ctx)
    bmap = work / "out" / f"{img.name}.bmap"
    plan_mod.run_command(["bmaptool", "create", img, "-o", bmap], log=log)
    say(f"{img.name} {img.stat().st_size // MIB} MiB (GPT: "
        f"{', '.join(p.name for p in layout(ctx) if p.in_table)}) + .bmap")
    products[ctx.images / img.name] = img
    products[ctx.images / bmap.name] = bmap
    return products


def _needed(ctx, role: str) -> Path:
    got = ctx.file(role)
    if got is None or not got.is_file():
        raise SeedfwError(f"the disk image needs role '{role}', which was not built",
                          got or ctx.images)
    return got


def _needed_file(ctx, name: str) -> Path:
    """A file a partition holds, by the name layout() found for it (a provider's)."""
    got = next((Path(o.path) for o in ctx.outputs if o.name == name), ctx.images / name)
    if not got.is_file():
        raise SeedfwError(f"the disk image needs {name}, which was not built", got)
    return got


# Run under `fakeroot -s STATE`: what it creates is owned by whoever the cpio says (root),
# device nodes included, as genimage (run with `fakeroot -i STATE`) and mke2fs then see it.
_STAGE = """set -e
umask 022
cd "$1"
if [ -n "$2" ]; then cpio -idm --quiet --no-absolute-filenames < "$2"; fi
if [ -n "$3" ]; then tar -x --keep-directory-symlink --no-same-permissions -f "$3"; fi
if [ -n "$4" ]; then mkdir -p "$4"; fi
shift 4
while [ $# -gt 0 ]; do install -D -m 0644 "$1" "$2"; shift 2; done
"""


def rootfs_additions(ctx) -> tuple[Path | None, list[tuple[Path, str]]]:
    """What the parts placed in the "rootfs" partition besides Buildroot's tree: (a tar of
    role rootfs-overlay to extract at "/", [(file, path in the rootfs)])."""
    tar, files = None, []
    for o in ctx.outputs:
        p = ctx.placement(o)
        if p is None or p.partition != "rootfs" or not p.path:
            continue
        if "rootfs-overlay" in o.roles:
            tar = Path(o.path)
    for place in ctx.places():
        if place.placement.partition == "rootfs" and place.placement.path:
            got = ctx.file(place.role)
            if got is not None:
                files.append((got, place.placement.path.lstrip("/")))
    return tar, files


def stage_tree(ctx, root: Path, state: Path, log) -> None:
    """The tree genimage copies into the ext4 images: Buildroot's rootfs.cpio unpacked (or
    nothing: the placeholder) with what the parts placed in the rootfs (kernel modules, the
    boot package: `rootfs_additions`), the OS's boot files under boot/ (the "boot" mountpoint)."""
    os.chmod(root, 0o755)
    cpio = rootfs_cpio(ctx)
    tar, extra = rootfs_additions(ctx)
    pairs = []
    for dest, name in boot_files(ctx).items():
        pairs += [_needed_file(ctx, name), f"boot/{dest}"]
    for path, dest in extra:
        pairs += [_needed_file(ctx, path.name), dest]
    data = DATA_MOUNT.lstrip("/") if update_plan(ctx) is not None else ""   # its mountpoint
    plan_mod.run_command(["fakeroot", "-s", state, "--", "sh", "-c", _STAGE, "stage",
                          root.absolute(), _needed_file(ctx, cpio.name).absolute() if cpio else "",
                          _needed_file(ctx, tar.name).absolute() if tar else "", data,
                          *(Path(x).absolute() if i % 2 == 0 else x for i, x in enumerate(pairs))],
                         log=log)


def times_script(tree: Path, skip=frozenset()) -> str:
    """debugfs commands setting every inode's times under `tree` (paths relative to it) to
    SOURCE_DATE_EPOCH; `skip`: directories whose contents belong to another image."""
    stamp = _stamp()
    paths = ["/"]
    for top, dirs, files in os.walk(tree):
        dirs.sort()
        rel = "/" + os.path.relpath(top, tree) if Path(top) != tree else ""
        for name in sorted(dirs + files):
            paths.append(f"{rel}/{name}")
        if Path(top) in skip:
            dirs.clear()
    for p in paths:
        if '"' in p or "\n" in p:
            raise SeedfwError("a file name with a quote or newline cannot go into the ext4 "
                              "image", tree / p.lstrip("/"))
    return "".join(f'sif "{p}" {f} {stamp}\n' for p in paths
                   for f in ("atime", "ctime", "mtime", "crtime"))


def _steps(ctx) -> list:
    rootfs_size(ctx)                 # a bad size or layout fails before any step runs
    layout(ctx)
    fit_roles = ctx.board.fit_roles("firmware") if own_fit(ctx) else ()
    held = [r for e in ctx.board.partitions for r in e["roles"]
            if ctx.providers(r) and not (own_fit(ctx) and r == "firmware-fit")
            and r != "rootfs"]
    places = [p.role for p in ctx.places() if p.placement.partition and ctx.providers(p.role)]
    overlay = ["rootfs-overlay"] if ctx.providers("rootfs-overlay") else []
    cpio = ["rootfs-cpio"] if rootfs_cpio(ctx) is not None else []
    needs = tuple(dict.fromkeys([*fit_roles, *held, *places, *overlay, *cpio]))

    def inputs():
        files = sorted({f for r in needs for f in ctx.files(r)})
        return {"config": genimage_config(ctx), "own_fit": own_fit(ctx),
                "epoch": util.source_date_epoch(),
                "env": [(n, o, util.sha256_bytes(d)) for n, o, d in env_images(ctx)],
                "images": {f.name: util.sha256_file(f) if f.is_file() else None for f in files}}

    def run(step):
        step.install(make(ctx, ctx.build_dir("disk"), step.log,
                          lambda m: ctx.progress(f"  disk: {m}")))

    return [plan_mod.Step("disk.image", run, needs=needs, inputs=inputs, version=VERSION,
                          package="disk", tools=("genimage", "mke2fs", "debugfs", "bmaptool",
                                                 *(("mkimage",) if own_fit(ctx) else ())))]
