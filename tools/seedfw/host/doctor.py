"""`invoke doctor`: is every host program and file the tasks use on this machine?

Three sources of rows:
  * `host.NEEDS` — programs on PATH and files at fixed paths (globs), each with its package;
  * QEMU's own word on the data files it loads for each board's machine arguments (`qemu_needs`):
    which ROMs a machine pulls in depends on the arguments (a default NIC loads an iPXE option ROM),
    so we ask QEMU (`info qtree` romfile properties, `info roms`, or its "failed to find romfile"
    error) instead of keeping a second list that could drift from board.yaml;
  * nothing else: a task that runs a host program not in NEEDS is a bug tests/test_host.py exists
    to catch, by checking every row against Debian's metadata (`closure`, `owner`).
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import host
from . import Need

PROBE_TIMEOUT = 20.0


@dataclass
class Check:
    need: Need
    found: str | None           # the resolved path, None when missing

    @property
    def ok(self) -> bool:
        return self.found is not None


def locate(need: Need) -> str | None:
    """Where `need` is on this machine: PATH for a tool, the first glob match for a file."""
    if need.kind == "tool":
        return shutil.which(need.what)
    hits = sorted(glob.glob(need.what))
    return hits[0] if hits else None


# QEMU data directories → the package that fills them (used to name the package of a file that is
# missing, when dpkg cannot be asked). Paths are what `qemu-system-* -L help` prints on bookworm.
QEMU_DATA_PACKAGES = (("ipxe", "ipxe-qemu"), ("seabios", "seabios"), ("qemu", "qemu-system-data"))
_ROM_PACKAGE = ((re.compile(r"^(efi|pxe)-.*\.rom$"), "ipxe-qemu"),
                (re.compile(r"^(bios.*\.bin|vgabios.*\.bin)$"), "seabios"))
_MISSING = re.compile(r"""(?:failed to find romfile|Could not find ROM image|could not find) ["']([^"']+)["']""",
                      re.I)
_ROMFILE = re.compile(r'\bromfile = "([^"]+)"')
_ROM_NAME = re.compile(r'\bname="([^"]+)"')


def qemu_data_dirs(binary: str) -> list[Path]:
    out = subprocess.run([binary, "-L", "help"], capture_output=True, text=True).stdout
    return [Path(line.strip()).resolve() for line in out.splitlines() if line.strip()]


def qemu_probe(args: list[str]) -> tuple[set[str], str | None]:
    """Start QEMU stopped (-S) with `args` (machine, cpu, memory, board args; no images) and
    return (the data files it loads, its error line if it failed to start)."""
    cmd = [a for a in args if a != "-nographic"]
    cmd += ["-S", "-display", "none", "-serial", "none", "-parallel", "none", "-monitor", "stdio"]
    try:
        proc = subprocess.run(cmd, input="info qtree\ninfo roms\nquit\n", capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return set(), f"{cmd[0]} did not answer its monitor within {PROBE_TIMEOUT:g} s"
    text = proc.stdout + proc.stderr
    files = {m.group(1) for m in _MISSING.finditer(text)}
    files |= {m.group(1) for m in _ROMFILE.finditer(text)}
    # `info roms` also lists blobs QEMU generates (dtb, ACPI tables): only a path is a file.
    files |= {Path(m.group(1)).name for m in _ROM_NAME.finditer(text) if m.group(1).startswith("/")}
    error = None
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        error = lines[-1] if lines else f"exit code {proc.returncode}"
    return files, error


def rom_package(name: str, path: str | None) -> str:
    if path:
        for part, package in QEMU_DATA_PACKAGES:
            if f"/{part}" in path:
                return package
    for pattern, package in _ROM_PACKAGE:
        if pattern.match(name):
            return package
    return "qemu-system-data"


def qemu_needs(board_args: dict[str, list[str]]) -> list[Need]:
    """Rows for the data files QEMU loads for each board's arguments ({board: args})."""
    needs: dict[str, Need] = {}
    for board, args in board_args.items():
        if shutil.which(args[0]) is None:
            continue                     # the binary's own row reports it missing
        files, error = qemu_probe(args)
        dirs = qemu_data_dirs(args[0])
        for name in sorted(files):
            found = next((str(d / name) for d in dirs if (d / name).exists()), None)
            what = found or str(dirs[0] / name if dirs else name)
            why = f"run: QEMU loads it for board {board} ({' '.join(args[1:5])})"
            needs.setdefault(what, Need(what, rom_package(name, found), why, "file"))
        if error and not files:
            needs[f"{board}:qemu"] = Need(args[0], "qemu-system-arm",
                                          f"run: QEMU refuses board {board}'s arguments: {error}")
    return list(needs.values())


def board_qemu_args() -> dict[str, list[str]]:
    from .. import boards
    from ..run import qemu
    return {b.name: qemu.machine_args(b) for b in map(boards.get, boards.names()) if b.qemu}


def all_needs() -> list[Need]:
    return list(host.NEEDS) + qemu_needs(board_qemu_args())


def run_checks(needs: list[Need] | None = None) -> list[Check]:
    needs = all_needs() if needs is None else needs
    checks = []
    for need in needs:
        found = locate(need)
        # A probe row (QEMU refused the arguments) is never ok: the tool exists but cannot run.
        if need.why.startswith("run: QEMU refuses"):
            found = None
        checks.append(Check(need, found))
    return checks


def table(checks: list[Check], cols: int | None = None) -> str:
    """Aligned columns when they fit the terminal, else one record per check (what, then its
    package and what it is needed for), so nothing wraps mid-cell at 80 columns or in a pipe."""
    from .. import textout
    rows = [("ok" if c.ok else "MISSING", c.found or c.need.what, c.need.package, c.need.why)
            for c in checks]
    return textout.table(rows, ("", "what", "package", "needed for"), first=2,
                         labels=("package",), cols=cols)


def missing_packages(checks: list[Check]) -> list[str]:
    return list(dict.fromkeys(c.need.package for c in checks if not c.ok))


# --- Debian's metadata: what the apt list really brings (tests/test_host.py) -----------------------

def closure(pkgs: list[str]) -> set[str]:
    """Every package `apt-get install --no-install-recommends pkgs` can bring: the Depends and
    Pre-Depends closure (all alternatives and providers of virtual packages included), from
    `apt-cache depends --recurse`. Recommends and Suggests are exactly what a fresh machine lacks."""
    cmd = ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
           "--no-breaks", "--no-replaces", "--no-enhances", *pkgs]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        if line and not line[0].isspace():
            names.add(line.strip().strip("<>").split(":")[0])
        elif line.strip().startswith(("Depends:", "|Depends:", "PreDepends:", "|PreDepends:")):
            names.add(line.split(":", 1)[1].strip().strip("<>").split(":")[0])
    return names


def _candidates(path: str) -> list[str]:
    paths = [path, str(Path(path).resolve())]
    # merged /usr: dpkg knows /bin/tar, the machine finds /usr/bin/tar
    paths += [p[4:] for p in paths if p.startswith(("/usr/bin/", "/usr/sbin/", "/usr/lib/"))]
    return list(dict.fromkeys(paths))


def owners(paths: list[str]) -> dict[str, str | None]:
    """{path: the package dpkg says ships it (or the file it links to), None when none does}.
    One dpkg-query for all of them: one per file made the closure check ~100 processes."""
    wanted = {p: _candidates(p) for p in paths}
    every = list(dict.fromkeys(c for cands in wanted.values() for c in cands))
    shipped: dict[str, str] = {}
    if every:
        # exit 1 when some path is nobody's: the others are still listed
        proc = subprocess.run(["dpkg-query", "-S", *every], capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("diversion by"):
                continue
            pkgs, sep, where = line.partition(": ")
            if sep:
                shipped.setdefault(where.strip(), pkgs.split(",")[0].split(":")[0].strip())
    return {p: next((shipped[c] for c in cands if c in shipped), None)
            for p, cands in wanted.items()}


def owner(path: str) -> str | None:
    """The package dpkg says ships `path` (or the file it links to), None when none does."""
    return owners([path])[path]


def outside_closure(needs: list[Need], pkgs: list[str]) -> list[str]:
    """One line per row whose file is absent or shipped by a package outside closure(pkgs)."""
    allowed = closure(pkgs)
    problems = []
    found = {need: locate(need) for need in needs}
    shipped = owners([f for f in found.values() if f is not None])
    for need in needs:
        if found[need] is None:
            problems.append(f"{need.what}: not on this machine (package {need.package})")
            continue
        pkg = shipped[found[need]]
        if pkg not in allowed:
            problems.append(f"{found[need]}: shipped by {pkg or 'no package'}, outside the closure")
    return problems


# --- ccache's remote storage (CONFIG_CCACHE_REMOTE_STORAGE) --------------------------------------

def configured_remotes(configs) -> dict[str, str]:
    """{remote entry: the .config that sets it} from CONFIG_CCACHE_REMOTE_STORAGE lines, and
    first the environment's $CCACHE_REMOTE_STORAGE (which the build uses instead, when set)."""
    import os

    from ..cache import ccache
    found = {}
    variable = ccache.REMOTE_VARIABLE
    for entry in os.environ.get(variable, "").split():
        ccache.check_remote(entry, None, f"environment {variable}")
        found.setdefault(entry, f"environment {variable}")
    for cfg in configs:
        try:
            lines = Path(cfg).read_text().splitlines()
        except (FileNotFoundError, UnicodeDecodeError):
            continue
        for line in lines:
            if line.startswith("CONFIG_CCACHE_REMOTE_STORAGE="):
                text = line.split("=", 1)[1].strip().strip('"')
                for entry in text.split():
                    ccache.check_remote(entry, cfg)
                    found.setdefault(entry, str(cfg))
    return found


def ccache_remote_checks(remotes: dict[str, str]) -> tuple[list[str], list[str]]:
    """(errors, warnings) for each configured remote: ccache must list the back-end among its
    `ccache --version` features (an error: every compile would fail); a remote that does not
    answer now is only a warning, as in the build (local-only, never a failed build). Every
    entry is shown redacted (seedfw.secrets): a doctor's output is pasted into bug reports."""
    from ..cache import ccache
    from ..secrets import redact
    if not remotes:
        return [], []
    try:
        version = subprocess.run(["ccache", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return [f"ccache is not installed but {', '.join(map(redact, remotes))} is "
                "configured"], []
    errors, warnings = [], []
    features = next((line for line in version.splitlines() if line.startswith("Features:")),
                    "Features: (none listed)")
    for entry, cfg in remotes.items():
        shown = redact(entry)
        if not ccache.has_remote_feature(version, entry):
            errors.append(f"{cfg}: CONFIG_CCACHE_REMOTE_STORAGE: {shown} needs ccache's "
                          f"{entry.split(':')[0]}-storage back-end; this ccache has "
                          f"{features.split(':', 1)[1].strip()}")
            continue
        why = ccache.probe(entry)
        if why is None:
            warnings.append(f"ok: ccache remote {shown} ({cfg}): back-end compiled in, answers")
        else:
            warnings.append(f"warning: ccache remote {shown} ({cfg}) does not answer ({why}): "
                            "builds will use the local cache only")
    return errors, warnings


# --- the artifact store (seedfw.cache) -----------------------------------------------------------

def artifact_store_lines() -> list[str]:
    """The local store (where, how full of its cap) and the remote's answer. A remote that does
    not answer is a warning, as in the build (the local store only, never a failed build); a
    setting that cannot be used is an error line."""
    from .. import cache
    from ..cache.local import util_home
    from ..errors import SeedfwError
    try:
        store = cache.from_environment()
    except SeedfwError as exc:
        return [f"error: artifact store: {exc.line()}"]
    if store is None:
        return ["ok: artifact store: off (SEEDFW_ARTIFACT_CACHE=off)"]
    records, blobs, size = store.local.usage()
    lines = [f"ok: artifact store {util_home(store.local.root)}: {records} record(s), "
             f"{blobs} blob(s), {size / 2**20:.1f} MiB of {store.local.cap / 2**20:.0f} MiB"]
    if store.remote is not None:
        mode = "read-write" if store.remote_writes else "read-only"
        answer = store.remote.ping()
        if answer.startswith("answers"):
            lines.append(f"ok: artifact store remote {store.remote!r} ({mode}): {answer}")
        else:
            lines.append(f"warning: artifact store remote {store.remote!r} ({mode}): {answer}; "
                         "builds use the local store only")
    return lines
