"""ccache for every C compile the build drives: its configuration, environment and figures.

The one place that knows ccache. Packages ask `environment(ctx, base_dir)` for the variables of
their `make` (a masquerade directory first on PATH, so every `gcc`, `cc` and cross `gcc` a
makefile runs — TF-A's fiptool and U-Boot's host tools included — goes through ccache without
touching the makefiles), and the build calls `begin(ctx)` before its plan runs and `finish(ctx)`
after, which write <out>/images/ccache.json from this build's own stats log.

Why a stats log and not `ccache --print-stats` deltas: the local cache is shared by every build on
the machine (other boards, other output directories, other users of a team cache), so global
counters mix their compiles in; CCACHE_STATSLOG records exactly the compiles of this output dir.

Why these settings:
  base_dir     absolute paths under it (the TF-A tree in <out>/build, U-Boot's tree in the seedfw
               cache) are hashed relative to the compiler's working directory, so two output or
               cache directories hit the same entries;
  hash_dir     off: the build directories are mapped away with -ffile-prefix-map (the objects do
               not contain them), so the working directory must not split the cache either;
  compiler_check=content: the compiler's bytes, not its mtime, so a team cache serves machines
               that installed the same Debian compiler at different times.
Objects from the cache are the objects the compiler wrote, so the images stay bit-identical with
the cache cold or warm (tests/test_ccache.py checks it through a second, empty local cache).

Credentials: a remote with a password (`redis://user:password@host`) is given in the
environment, as ccache's own CCACHE_REMOTE_STORAGE (which then wins over the Kconfig symbol, as
it does in ccache): a Kconfig value is copied into <out>/.config, config.json and autoconf.h,
so `invoke config` refuses one holding a credential. Everything this module prints or writes
about a remote goes through seedfw.secrets.redact, and the local directory through
home_relative: images/ccache.json, the state file, warnings, the report's cache section.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .. import paths, util
from ..errors import SeedfwError
from ..secrets import has_credential, home_relative, redact

SYMBOLS = ("CCACHE", "CCACHE_DIR", "CCACHE_REMOTE_STORAGE")
# ccache's remote storage back-ends (ccache 4.7: `ccache --version` lists them as "<x>-storage").
SCHEMES = ("redis", "redis+unix", "http", "file")
# Compilers the makefiles call by name: the host's and the cross prefixes of the Kconfig symbols.
HOST_COMPILERS = ("gcc", "cc", "g++", "c++")
STATS_FILE = "ccache.json"
# ccache's own variable: where a remote with a credential is given (never in a .config).
REMOTE_VARIABLE = "CCACHE_REMOTE_STORAGE"


@dataclass(frozen=True)
class Settings:
    enabled: bool
    dir: Path
    remote: tuple[str, ...]            # ccache remote storage entries ("" config = none)

    @property
    def remote_text(self) -> str:
        return " ".join(self.remote)

    @property
    def shown(self) -> str:
        """The remote entries as they may be printed or written (credentials masked)."""
        return redact(self.remote_text)


def settings(values: dict, config_file=".config", environ=None) -> Settings:
    """CCACHE, CCACHE_DIR and CCACHE_REMOTE_STORAGE, checked (a malformed remote is an error here,
    not a compiler failure deep inside a make). $CCACHE_REMOTE_STORAGE, when set, is the remote
    (the place for one with a credential; see the module docstring)."""
    text = (values.get("CCACHE_DIR") or "").strip()
    directory = Path(os.path.abspath(os.path.expanduser(text))) if text else \
        paths.cache_dir() / "ccache"
    env = (os.environ if environ is None else environ).get(REMOTE_VARIABLE, "").strip()
    if env:
        remote = tuple(env.split())
        for entry in remote:
            check_remote(entry, None, f"environment {REMOTE_VARIABLE}")
    else:
        remote = tuple((values.get("CCACHE_REMOTE_STORAGE") or "").split())
        for entry in remote:
            check_remote(entry, config_file)
    return Settings(bool(values.get("CCACHE")), directory, remote)


def check_configured(values: dict, sources) -> None:
    """At `invoke config` time, before anything is written: a malformed remote fails naming the
    fragment (and line) that set it, else the output directory's .config."""
    where = None
    for src in sources:
        try:
            lines = Path(src).read_text().splitlines()
        except (FileNotFoundError, UnicodeDecodeError, IsADirectoryError):
            continue
        for i, line in enumerate(lines, 1):
            if line.strip().startswith("CONFIG_CCACHE_REMOTE_STORAGE="):
                where = (src, i)
    for entry in (values.get("CCACHE_REMOTE_STORAGE") or "").split():
        try:
            check_remote(entry, where[0] if where else ".config")
            if has_credential(entry):
                # Refused, not masked: the build needs the value, and every copy the
                # configuration makes of it (.config, config.json, autoconf.h) would keep it.
                raise SeedfwError(
                    f"'{redact(entry)}' holds a credential, which the output directory's "
                    f".config would keep: give it in the environment instead "
                    f"({REMOTE_VARIABLE}='...'), never in a configuration file",
                    where[0] if where else ".config", "CONFIG_CCACHE_REMOTE_STORAGE")
        except SeedfwError as exc:
            if where is None:
                raise
            raise SeedfwError(f"CONFIG_CCACHE_REMOTE_STORAGE: {exc.message}", where[0],
                              f"line {where[1]}") from None


def check_remote(entry: str, config_file=".config", field="CONFIG_CCACHE_REMOTE_STORAGE") -> None:
    """One entry of ccache's remote_storage syntax: URL[|attribute=value...]. Messages show
    the entry redacted (seedfw.secrets): an error line is printed, and CI logs are kept."""
    url = entry.split("|", 1)[0]
    shown = redact(entry)
    scheme = urlsplit(url).scheme if re.match(r"^[a-z+]+:/", url) else ""
    if scheme not in SCHEMES:
        raise SeedfwError(f"'{shown}' is not a ccache remote storage URL (scheme one of "
                          f"{', '.join(s + '://' for s in SCHEMES)})", config_file, field)
    parts = urlsplit(url)
    if scheme in ("redis", "http"):
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1:
            raise SeedfwError(f"'{shown}': expected {scheme}://HOST[:PORT]", config_file, field)
    if scheme in ("redis+unix", "file") and (parts.netloc or not parts.path.startswith("/")):
        raise SeedfwError(f"'{shown}': expected {scheme}:///ABSOLUTE/PATH", config_file, field)
    for attr in entry.split("|")[1:]:
        if not re.fullmatch(r"[a-z-]+(=[^|\s]*)?", attr):
            raise SeedfwError(f"'{shown}': attribute '{redact('|' + attr)[1:]}' is not "
                              "name=value", config_file, field)


def stats_log(outdir: Path, part: str | None = None) -> Path:
    """This output dir's stats log; a `part` (e.g. "buildroot") gets a log of its own, because
    the log names each compile's input file relative to base_dir, so its lines cannot say which
    build a compile belonged to. finish() adds the parts into the totals."""
    name = "stats.log" if part is None else f"stats-{part}.log"
    return Path(outdir) / "build" / "ccache" / name


def _state_file(outdir: Path) -> Path:
    return Path(outdir) / "build" / "ccache" / "remote.json"


def masquerade_dir(prefixes) -> Path:
    """<seedfw cache>/ccache-bin: symlinks named like the compilers, pointing at ccache (ccache
    then runs the next compiler of that name on PATH). Made idempotently, link by link."""
    ccache = shutil.which("ccache")
    if ccache is None:
        raise SeedfwError("command not found: ccache (run 'invoke setup', or set CONFIG_CCACHE=n)")
    bindir = paths.cache_dir() / "ccache-bin"
    bindir.mkdir(parents=True, exist_ok=True)
    # Only prefixes found on PATH can be masqueraded: a CROSS_COMPILE given as a path (with a
    # "/") runs that file directly, uncached — and must never become a link name (it would
    # point outside this directory).
    names = list(HOST_COMPILERS) + [p + c for p in prefixes if p and "/" not in p
                                    for c in ("gcc", "g++")]
    for name in names:
        link = bindir / name
        if link.is_symlink() and os.readlink(link) == ccache:
            continue
        tmp = bindir / f".{name}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(ccache)
        tmp.replace(link)                     # atomic: a parallel build never sees it missing
    return bindir


def environment(ctx, *dirs: Path, part: str | None = None) -> dict:
    """Variables for a package's make: ccache on, in CCACHE_DIR, logging into this output
    directory's stats log, hashing paths relative to base_dir = the deepest directory holding
    all of `dirs` (the trees the compiles name by absolute path); or ccache explicitly off.
    The deepest one, because paths outside base_dir (system headers) must stay absolute:
    made relative, they would depend on how deep the build directory is."""
    s = settings(ctx.values, ctx.outdir / ".config")
    if not s.enabled:
        return {"CCACHE_DISABLE": "1"}
    prefixes = [ctx.values.get(k) for k in ("CROSS_COMPILE_A", "CROSS_COMPILE_M")]
    env = {"PATH": f"{masquerade_dir(prefixes)}{os.pathsep}{os.environ.get('PATH', '')}",
           "CCACHE_DIR": str(s.dir), "CCACHE_NOHASHDIR": "1",
           "CCACHE_BASEDIR": base_dir(dirs),
           "CCACHE_COMPILERCHECK": "content", "CCACHE_STATSLOG": str(stats_log(ctx.outdir, part)),
           # Only the entries found reachable: a dead remote costs every compile a
           # connection attempt, and the build is local-only anyway (one warning said so).
           "CCACHE_REMOTE_STORAGE": " ".join(_reachable(ctx, s))}
    return env


def base_dir(dirs) -> str:
    """The deepest directory holding all of `dirs`; never "/".

    A base_dir of "/" (a checkout in /work and an output dir in /tmp, say) would make ccache
    rewrite the system headers' paths relative too (`../../../usr/include/stdio.h`), and the
    dependency files it then restores from the cache name headers at the depth of whichever
    directory compiled first: make finds them missing and recompiles every time (and a tune
    trial "changes" the shared TF-A tree). Then the build's own directories (those outside the
    seedfw checkout) are enough: sources from the checkout stay absolute, which costs hits
    only between two checkouts, never correctness. "" (no base_dir) when nothing narrower exists."""
    dirs = [os.path.abspath(d) for d in dirs]
    common = os.path.commonpath(dirs)
    if common != os.sep:
        return common
    root = str(paths.ROOT)
    own = [d for d in dirs if os.path.commonpath([d, root]) != root] or dirs[:1]
    common = os.path.commonpath(own)
    return "" if common == os.sep else common


_PROBE_LOCK = threading.Lock()


def _reachable(ctx, s: Settings) -> list[str]:
    """The remote entries that answer, checked once per build: by the first step that compiles
    (steps of one build run in threads, hence the lock), not by begin() — a no-op build asks no
    server and, with a dead remote, neither waits for it nor warns. A dead entry is one warning
    and a local-only build, never a failed one.

    The state file is in the output directory, so it holds the entries redacted and the live
    ones as indices into s.remote: a changed password alone does not change reachability."""
    with _PROBE_LOCK:
        try:
            state = json.loads(_state_file(ctx.outdir).read_text())
            if state.get("remote") == s.shown:
                return [s.remote[i] for i in state["reachable"]]
        except (FileNotFoundError, ValueError, KeyError, IndexError, TypeError):
            pass
        reachable, dead = [], {}
        for i, entry in enumerate(s.remote):
            why = probe(entry)
            if why is None:
                reachable.append(i)
            else:
                dead[redact(entry)] = redact(why)
                ctx.progress(f"  ccache: warning: remote storage {redact(entry)} does not answer "
                             f"({redact(why)}); building with the local cache only")
        util.write_json(_state_file(ctx.outdir), {"remote": s.shown,
                                                  "reachable": reachable, "dead": dead})
        return [s.remote[i] for i in reachable]


def probe(entry: str, timeout: float = 2.0) -> str | None:
    """None when the remote storage answers, else why not (one short phrase)."""
    url = entry.split("|", 1)[0]
    parts = urlsplit(url)
    scheme = parts.scheme
    try:
        if scheme == "file":
            return None if os.access(parts.path, os.W_OK) else f"{parts.path} is not writable"
        if scheme == "redis+unix":
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(timeout)
                sock.connect(parts.path)
                return _redis_ping(sock)
        port = parts.port or (6379 if scheme == "redis" else 80)
        with socket.create_connection((parts.hostname, port), timeout=timeout) as sock:
            return _redis_ping(sock) if scheme == "redis" else None
    except OSError as exc:
        return exc.strerror or str(exc)


def _redis_ping(sock) -> str | None:
    sock.sendall(b"PING\r\n")
    reply = sock.recv(64)
    # "-NOAUTH" still means a live server: ccache sends the URL's credentials itself.
    return None if reply.startswith((b"+PONG", b"-NOAUTH", b"-ERR")) else \
        f"not a Redis server (answered {reply[:20]!r})"


def begin(ctx) -> None:
    """Before the plan runs: ccache is there, and this build starts with empty stats logs and
    no remote state (the remote is checked by the first compiling step, see _reachable)."""
    s = settings(ctx.values, ctx.outdir / ".config")
    if s.enabled and shutil.which("ccache") is None:      # before anything runs, not mid-plan
        raise SeedfwError("command not found: ccache (run 'invoke setup', or set CONFIG_CCACHE=n)")
    log = stats_log(ctx.outdir)
    log.parent.mkdir(parents=True, exist_ok=True)
    for old in log.parent.glob("stats-*.log"):         # parts of an earlier build
        old.unlink()
    log.write_bytes(b"")
    _state_file(ctx.outdir).unlink(missing_ok=True)


def parse_stats_log(text: str) -> dict[str, int]:
    """ccache's stats log: a `# <file>` line per compile, then one counter name per line."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            counts[line] = counts.get(line, 0) + 1
    return counts


def ccache_version() -> str:
    try:
        out = subprocess.run(["ccache", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "ccache"
    return out.splitlines()[0] if out else "ccache"


def finish(ctx) -> dict | None:
    """After the plan: this build's figures into <out>/images/ccache.json (left as it was when
    nothing was compiled, e.g. a no-op rebuild: it describes the build that made the images)."""
    s = settings(ctx.values, ctx.outdir / ".config")
    if not s.enabled:
        return None
    try:
        counts = parse_stats_log(stats_log(ctx.outdir).read_text())
        state = json.loads(_state_file(ctx.outdir).read_text())
    except (FileNotFoundError, ValueError):
        return None
    parts = {}
    for log in sorted(stats_log(ctx.outdir).parent.glob("stats-*.log")):
        part = parse_stats_log(log.read_text())
        for key, n in part.items():
            counts[key] = counts.get(key, 0) + n
        parts[log.stem[len("stats-"):]] = {
            "hits": part.get("direct_cache_hit", 0) + part.get("preprocessed_cache_hit", 0),
            "misses": part.get("cache_miss", 0),
            "remote_hits": part.get("remote_storage_hit", 0)}
    hits = counts.get("direct_cache_hit", 0) + counts.get("preprocessed_cache_hit", 0)
    misses = counts.get("cache_miss", 0)
    if hits + misses == 0:
        return None
    errors = counts.get("remote_storage_error", 0) + counts.get("remote_storage_timeout", 0)
    if errors and state["reachable"]:
        # It answered when the first step compiled: it went away (or failed) during the
        # build. Once, here.
        live = " ".join(redact(s.remote[i]) for i in state["reachable"] if i < len(s.remote))
        ctx.progress(f"  ccache: warning: remote storage {live} failed "
                     f"during the build ({errors} compile(s) could not reach it); those used "
                     "the local cache only, the images are unaffected")
    doc = {
        "hits": hits, "misses": misses, "hit_rate": round(hits / (hits + misses), 4),
        "remote_hits": counts.get("remote_storage_hit", 0),
        "remote_misses": counts.get("remote_storage_miss", 0),
        # ccache 4.7's counters count results, not bytes; nothing else reports this build's share
        # of a shared server's traffic, so it is unknown rather than guessed.
        "remote_read_bytes": None,
        "remote": s.shown or None,
        "remote_errors": errors,
        "remote_unreachable": state.get("dead") or {},
        "local_dir": home_relative(s.dir),           # no user name in an artifact
        # Included in the totals above; one entry per build that logs apart (seedfw.buildroot).
        "parts": parts,
        "source": f"measured: {ccache_version()} stats log (CCACHE_STATSLOG) of this build's "
                  "compiles",
    }
    util.write_json(ctx.images / STATS_FILE, doc)
    return doc


def summary(outdir) -> dict | None:
    """<out>/images/ccache.json as written by the last build that compiled something, or None."""
    try:
        return json.loads((Path(outdir) / "images" / STATS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


def has_remote_feature(version_text: str, entry: str) -> bool:
    """Does `ccache --version`'s "Features:" line list the back-end `entry` needs?"""
    scheme = urlsplit(entry.split("|", 1)[0]).scheme
    for line in version_text.splitlines():
        if line.startswith("Features:"):
            return f"{scheme}-storage" in line.split()
    return False


# --- bench/cache_speed.py's result, per host, in the seedfw cache (never in the tree) --------------

BENCH_FIELDS = ("host", "date", "cold_s", "warm_s", "ratio")


def bench_path(host: str | None = None) -> Path:
    return paths.cache_dir() / "bench" / "cache_speed" / f"{host or socket.gethostname()}.json"


def bench_result(host: str | None = None) -> dict | None:
    """The bench's last result on this host (with "path"), or None when there is none or it is
    not one (a result without its fields is not quoted as a measurement)."""
    path = bench_path(host)
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(doc, dict) or any(k not in doc for k in BENCH_FIELDS):
        return None
    return dict(doc, path=home_relative(path))
