"""The kernel modules the OS needs to mount its root, taken from the pinned kernel package.

Debian's generic arm64 kernel has the rk3588 SD/eMMC hosts and ext4 as modules (=m), so a root
on the ext4 "rootfs" partition needs some of its 4,350 modules loaded first. Which ones is not a
hand-kept list of paths: it is the closure, over the kernel's own dependency data, of a small
set of module *names* (Kconfig OS_MODULES + OS_MODULES_EMULATION; docs/os.md):

- `modules.dep`, written by the host's `depmod` (kmod) over the package's whole module tree
  (the .deb ships none; Debian's postinst makes it on the target) — hard dependencies, i.e.
  the modules whose symbols a module uses;
- `modinfo -F softdep` of each module in the set — soft dependencies the kernel cannot see in
  the symbols (ext4: `pre: crypto-crc32c`, the checksum of metadata_csum), resolved through
  `modules.alias` (crypto-crc32c → crc32c_generic);
- `modules.builtin` — a requested name built into the kernel is skipped (and listed).

The result, in load order (dependencies and pre-softdeps first), goes into images/os-modules.tar
as lib/modules/<release>/… with the package's modules decompressed (`plain`: why) and the index
the host's `depmod -b` writes for exactly that set (so modprobe works on the target), and into
images/os-modules.json (each module: file, size, why it is there). OS_MODULES_ALL puts every
module into the tar; the initramfs (seedfw.linux.initramfs) always takes only the closure.

OS_MODULES_AGENT adds modules to the rootfs only (not the initramfs: the root mount does not need
them), listed apart as "agent" in os-modules.json; the agent's init script modprobes them
(rk3588: rockchip_dfi, the DDR monitor's perf PMU).

Step os-root.modules (after kernel.extract). Kconfig symbols read: OS_ROOT_EXT4, OS_MODULES,
OS_MODULES_EMULATION, OS_MODULES_AGENT, OS_MODULES_ALL, KERNEL_PACKAGE.
"""

from __future__ import annotations

import json
import lzma
import re
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import plan as plan_mod
from .. import util
from ..errors import SeedfwError

VERSION = "2"
TAR = "os-modules.tar"
INFO = "os-modules.json"
# depmod's outputs (kmod 30) besides modules.dep: all of them go into the rootfs index.
INDEX = ("modules.dep", "modules.dep.bin", "modules.alias", "modules.alias.bin",
         "modules.softdep", "modules.symbols", "modules.symbols.bin", "modules.builtin.bin",
         "modules.builtin.alias.bin", "modules.devname", "modules.weakdep")
# From the package, copied beside the modules: depmod reads them (builtin: "not missing").
SHIPPED = ("modules.builtin", "modules.builtin.modinfo", "modules.order")


def tool(name: str) -> str:
    """depmod / modinfo: on PATH, else /sbin (kmod's place; not on a user's PATH on Debian)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if not found:
        raise SeedfwError(f"{name} not found (Debian package kmod; `invoke setup` installs it)")
    return found


def norm(name: str) -> str:
    """A module name as the kernel compares them: '-' and '_' are the same."""
    return name.strip().replace("-", "_")


def module_name(path: str) -> str:
    """kernel/fs/ext4/ext4.ko.xz → ext4."""
    base = path.rsplit("/", 1)[-1]
    return norm(re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base))


def plain(path: str) -> str:
    """kernel/fs/ext4/ext4.ko.xz → kernel/fs/ext4/ext4.ko: modules go into the rootfs
    decompressed, because Buildroot's BusyBox (insmod, modprobe) has no xz support
    (CONFIG_FEATURE_SEAMLESS_XZ is off) and hands the file's bytes to init_module; the kernel
    decompresses only what finit_module is told is compressed."""
    return re.sub(r"\.ko\.(xz|zst|gz)$", ".ko", path)


def unpack(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".ko"):
        return data
    raise SeedfwError("a module compressed in a way seedfw does not unpack (only .ko, .ko.xz)",
                      path)


def parse_dep(text: str) -> dict[str, list[str]]:
    """modules.dep: {path: [paths it needs]}."""
    out = {}
    for line in text.splitlines():
        if ":" in line:
            path, _, deps = line.partition(":")
            out[path.strip()] = deps.split()
    return out


def parse_aliases(text: str) -> dict[str, str]:
    """modules.alias lines `alias NAME MODULE` for plain names (no wildcards): {NAME: module}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "alias" and not any(c in parts[1] for c in "*?["):
            out.setdefault(norm(parts[1]), norm(parts[2]))
    return out


def parse_softdep(text: str) -> tuple[list[str], list[str]]:
    """modinfo -F softdep output ("pre: a b post: c", one or more lines) → (pre, post)."""
    pre, post, where = [], [], None
    for tok in text.split():
        if tok in ("pre:", "post:"):
            where = pre if tok == "pre:" else post
        elif where is not None:
            where.append(tok)
    return pre, post


@dataclass
class ModuleSet:
    order: list[str] = field(default_factory=list)      # load order, dependencies first
    files: dict[str, str] = field(default_factory=dict)  # name → path under lib/modules/<rel>/
    why: dict[str, str] = field(default_factory=dict)
    builtin: list[str] = field(default_factory=list)     # asked for, built into the kernel
    agent: list[str] = field(default_factory=list)       # rootfs only (OS_MODULES_AGENT), in order


def closure(wanted: list[tuple[str, str]], dep: dict[str, list[str]], builtin: set[str],
            aliases: dict[str, str], softdeps, source=None) -> ModuleSet:
    """The modules `wanted` ([(name, why)]) need, in load order. `softdeps(path)` → (pre, post)
    names or aliases; one that resolves to nothing is skipped (soft means optional)."""
    by_name = {module_name(p): p for p in dep}
    out = ModuleSet()
    visiting: set[str] = set()

    def resolve(name: str) -> str | None:
        n = norm(name)
        return n if n in by_name or n in builtin else aliases.get(n)

    def visit(name: str, why: str) -> None:
        if name in out.files or name in visiting:
            return
        visiting.add(name)
        path = by_name[name]
        pre, post = softdeps(path)
        for d in pre:
            if (r := resolve(d)) in by_name:
                visit(r, f"softdep (pre) of {name}")
        for d in dep[path]:
            visit(module_name(d), f"needed by {name}")
        out.order.append(name)
        out.files[name] = path
        out.why[name] = why
        for d in post:
            if (r := resolve(d)) in by_name:
                visit(r, f"softdep (post) of {name}")

    for name, why in wanted:
        n = norm(name)
        if n in builtin:
            out.builtin.append(n)
        elif n in by_name:
            visit(n, why)
        else:
            raise SeedfwError(f"the kernel has no module '{name}' (not in its modules.dep nor "
                              "modules.builtin)", *(source or (None,)))
    return out


def with_agent(mods: ModuleSet, extra: ModuleSet) -> ModuleSet:
    """`mods` (the root mount's closure, whose `order` the initramfs loads) plus the modules of
    `extra` (OS_MODULES_AGENT's closure) it lacks, as `agent`, in their load order."""
    for name in extra.order:
        if name not in mods.files:
            mods.agent.append(name)
            mods.files[name], mods.why[name] = extra.files[name], extra.why[name]
    mods.builtin += [n for n in extra.builtin if n not in mods.builtin]
    return mods


def wanted_names(values) -> list[tuple[str, str]]:
    return ([(n, "OS_MODULES") for n in (values.get("OS_MODULES") or "").split()] +
            [(n, "OS_MODULES_EMULATION") for n in (values.get("OS_MODULES_EMULATION") or "").split()])


def agent_names(values) -> list[tuple[str, str]]:
    """OS_MODULES_AGENT: modules for the rootfs only (the agent's init script loads them)."""
    return [(n, "OS_MODULES_AGENT") for n in (values.get("OS_MODULES_AGENT") or "").split()]


def _modinfo_softdep(root: Path, release: str, moddir: Path):
    def get(path: str):
        got = plan_mod.run_command([tool("modinfo"), "-F", "softdep", moddir / path], log=None,
                                   check=False)
        return parse_softdep(got.stdout.decode(errors="replace")) if got.returncode == 0 \
            else ([], [])
    return get


def prepare(deb: Path, release: str, wanted: list[tuple[str, str]], all_modules: bool,
            work: Path, log, source=None, agent=()) -> tuple[ModuleSet, Path]:
    """Unpack the package's modules, depmod them, take the closure, write the rootfs tree
    (work/rootfs/lib/modules/<release>) indexed by depmod. Returns (set, tree root). `agent`
    (OS_MODULES_AGENT): more names for the rootfs only; their closure minus the root set is
    the returned set's `agent` list, and its `order` stays the root mount's (the initramfs's)."""
    full, root = work / "full", work / "rootfs"
    for d in (full, root):
        d.mkdir(parents=True)
    inside = f"./usr/lib/modules/{release}"
    plan_mod.run_command(["sh", "-c", 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" "$3"',
                          "sh", deb, full, inside], log=log)
    moddir = full / inside
    if not (moddir / "modules.builtin").is_file():
        raise SeedfwError(f"{deb.name} has no {inside}/modules.builtin", deb)
    (full / "lib").mkdir()
    (full / "usr/lib/modules").rename(full / "lib/modules")
    moddir = full / "lib/modules" / release
    plan_mod.run_command([tool("depmod"), "-b", full, release], log=log)
    dep = parse_dep((moddir / "modules.dep").read_text())
    builtin = {module_name(x) for x in (moddir / "modules.builtin").read_text().split()}
    aliases = parse_aliases((moddir / "modules.alias").read_text())
    softdep = _modinfo_softdep(full, release, moddir)
    mods = closure(wanted, dep, builtin, aliases, softdep, source)
    if agent:
        with_agent(mods, closure(agent, dep, builtin, aliases, softdep,
                                 (source[0], "CONFIG_OS_MODULES_AGENT") if source else None))
    target = root / "lib/modules" / release
    target.mkdir(parents=True)
    for name in SHIPPED:
        shutil.copyfile(moddir / name, target / name)
    for path in (dep if all_modules else mods.files.values()):
        (target / plain(path)).parent.mkdir(parents=True, exist_ok=True)
        (target / plain(path)).write_bytes(unpack(moddir / path))
    plan_mod.run_command([tool("depmod"), "-b", root, release], log=log)
    # The small index must say what the full one says for every module of the set: a
    # dependency missing from the set would show as a shorter line here.
    small = parse_dep((target / "modules.dep").read_text())
    for path in mods.files.values():
        if sorted(small.get(plain(path), ["?"])) != sorted(plain(d) for d in dep[path]):
            raise SeedfwError(f"depmod over the module set gives {plain(path)} the dependencies "
                              f"{small.get(plain(path))}, the full tree {dep[path]}",
                              target / "modules.dep")
    mods.files = {n: plain(p) for n, p in mods.files.items()}
    shutil.rmtree(full)              # 88 MB; the step's stamp keeps what was made from it
    return mods, root


def write_tar(root: Path, dest: Path) -> Path:
    """A reproducible tar of `root` (sorted, uid/gid 0, mtime SOURCE_DATE_EPOCH, 0644/0755),
    without directory entries for the top levels, so extracting it over a rootfs whose /lib is
    a symlink (merged /usr) writes through the link instead of replacing it."""
    epoch = util.source_date_epoch()
    files = sorted(p for p in root.rglob("*"))
    with tarfile.open(dest, "w", format=tarfile.GNU_FORMAT) as tar:
        for p in files:
            rel = p.relative_to(root).as_posix()
            if p.is_dir() and rel.count("/") < 2:            # lib, lib/modules
                continue
            info = tar.gettarinfo(str(p), rel)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = epoch
            info.mode = 0o755 if p.is_dir() else 0o644
            if p.is_file():
                with open(p, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return dest


def describe(mods: ModuleSet, release: str, root: Path, all_modules: bool) -> dict:
    base = root / "lib/modules" / release
    return {"release": release, "source": "computed: closure over depmod's modules.dep and "
            "modinfo softdeps of the pinned kernel package", "all_modules": all_modules,
            "order": mods.order, "builtin": mods.builtin, "agent": mods.agent,
            "modules": {n: {"file": mods.files[n], "size": (base / mods.files[n]).stat().st_size,
                            "why": mods.why[n]} for n in mods.order + mods.agent},
            "index": sorted(p.name for p in base.iterdir() if p.is_file())}


def load_info(images: Path) -> dict:
    return json.loads((images / INFO).read_text())
