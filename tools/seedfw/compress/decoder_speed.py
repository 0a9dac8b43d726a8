"""Decompressor speed for the reports: which decoder variant the firmware links, and the cached
benchmark result for it (bench/lz4_speed.py writes one JSON per host and variant).

Why per host and variant: cycles/byte is host clock / throughput, so a figure is only
"measured" for the machine that took it, and only for the decoder variant the configuration
links (kconfig LZ4_DECODER_FAST / LZ4_DECODER_SMALL differ by ~6x). Anything else - a result
from another host, for the other variant, or an old one - is shown as an estimate that says
where it came from; with no result at all the documented constant is used.

Cache: <paths.cache_dir()>/bench/lz4_speed/<host>-<variant>.json ($SEEDFW_CACHE_DIR,
default ~/.cache/seedfw).

The report never reads that cache (a report is a function of the build output and the command
line): its cycles/byte is `board_estimate` (the documented constant), and a host result it shows
only when given one explicitly (`invoke report --decoder-bench FILE`: `host_figure`), labelled as
measured on the host, never the board. `decompress_speed` (the cache) is the tuner's.
"""

from __future__ import annotations

import re
import socket
from datetime import datetime, timezone
from pathlib import Path

from .. import paths, util
from ..errors import SeedfwError
from ..secrets import home_relative

VARIANTS = ("fast", "small")
DEFAULT_VARIANT = "fast"            # kconfig/Kconfig.compress: the choice's default
MAX_AGE_DAYS = 90                   # older results: the compiler or decoder has likely moved on
# Decompression cost when no benchmark result exists: an estimate, labelled as such. Basis:
# python-lz4 (liblz4 1.9.4) decompresses rodata at 1.5-4.5 GB/s on this class of ~3 GHz x86
# host, i.e. roughly 0.7-2 cycles/byte; boot code on a Cortex-A with cold caches is slower, so
# the pessimistic end is taken.
DEFAULT_CYCLES_PER_BYTE = 2.0
RESULT_FIELDS = ("host", "date", "variant", "cycles_per_byte")


def results_dir() -> Path:
    """In seedfw's per-user cache (paths.cache_dir: $SEEDFW_CACHE_DIR made absolute, empty =
    unset, else $XDG_CACHE_HOME/seedfw or ~/.cache/seedfw)."""
    return paths.cache_dir() / "bench" / "lz4_speed"


def host_name() -> str:
    return socket.gethostname() or "unknown-host"


def result_path(variant: str, host: str | None = None) -> Path:
    return results_dir() / f"{host or host_name()}-{variant}.json"


def linked_variant(config: dict | None) -> str:
    """The decoder variant BL31 and the payload link under this configuration (config.json
    values). A configuration from before the choice existed links the default."""
    cfg = config or {}
    if cfg.get("LZ4_DECODER") in VARIANTS:
        return cfg["LZ4_DECODER"]
    if cfg.get("LZ4_DECODER_SMALL"):
        return "small"
    return DEFAULT_VARIANT


def _load(path: Path) -> dict:
    data = util.read_json(path, "")
    _check(data, path)
    return data


def _age_days(date: str, now: datetime) -> float | None:
    try:
        taken = datetime.fromisoformat(str(date))
    except ValueError:
        return None
    if taken.tzinfo is None:
        taken = taken.replace(tzinfo=timezone.utc)
    return (now - taken).total_seconds() / 86400


def _candidates(variant: str, host: str) -> list[Path]:
    """This host's result for the variant first, then the other results in the cache: the
    same variant (another host) before the other variant, newest first."""
    own = result_path(variant, host)
    others = sorted((p for p in results_dir().glob("*.json") if p != own),
                    key=lambda p: (not p.stem.endswith(f"-{variant}"), -p.stat().st_mtime)) \
        if results_dir().is_dir() else []
    return ([own] if own.is_file() else []) + others


def decompress_speed(config: dict | None, *, host: str | None = None,
                     now: datetime | None = None, max_age_days: float = MAX_AGE_DAYS) -> dict:
    """The report's figure for decompressor cycles/byte: dict(value, unit, kind, source, note,
    host, date, variant). kind "measured" only for this host's result for the linked variant,
    taken within max_age_days; any other cached result is "estimated" and its note says from
    which host, date and variant; with none, DEFAULT_CYCLES_PER_BYTE ("estimated")."""
    variant = linked_variant(config)
    host = host or host_name()
    now = now or datetime.now(timezone.utc)
    for path in _candidates(variant, host):
        data = _load(path)
        value = round(float(data["cycles_per_byte"]), 3)
        r_host, r_date, r_variant = str(data["host"]), str(data["date"]), str(data["variant"])
        age = _age_days(r_date, now)
        fig = dict(value=value, unit="cycles/byte", source=str(path), host=r_host,
                   date=r_date, variant=r_variant)
        if r_host == host and r_variant == variant and age is not None and age <= max_age_days:
            return dict(fig, kind="measured",
                        provenance={"source": "benchmark", "where": r_host,
                                    "label": f"benchmark on {r_host} {r_date[:10]}, host core, "
                                             f"{variant} decoder"},
                        note=f"measured on {r_host} {r_date} with bench/lz4_speed.py, "
                             f"host core, not the target ({variant} decoder)")
        why = []
        if r_host != host:
            why.append(f"taken on another host ({r_host}, this is {host})")
        if r_variant != variant:
            why.append(f"for the {r_variant} decoder, the configuration links {variant}")
        if age is None or age > max_age_days:
            why.append(f"dated {r_date}, older than {max_age_days:g} days" if age is not None
                       else f"undated ({r_date!r})")
        return dict(fig, kind="estimated",
                    note=f"not measured for this build: bench/lz4_speed.py result from "
                         f"{r_host} {r_date}, {r_variant} decoder; " + "; ".join(why) +
                         "; run bench/lz4_speed.py here to measure")
    return dict(value=DEFAULT_CYCLES_PER_BYTE, unit="cycles/byte", kind="estimated",
                source="constant seedfw.compress.decoder_speed.DEFAULT_CYCLES_PER_BYTE",
                note=f"no decompressor benchmark result in {home_relative(results_dir())} (run "
                     "bench/lz4_speed.py); liblz4 decompresses 1.5-4.5 GB/s on a ~3 GHz host, "
                     "the slow end is taken",
                host=None, date=None, variant=variant)


# --- what the report shows: a function of the build's configuration and the command line -----------

def board_estimate(config: dict | None) -> dict:
    """The report's cycles/byte for the linked decoder: DEFAULT_CYCLES_PER_BYTE, estimated. No
    host benchmark is read here: a figure taken on the machine that runs the report (an x86
    host, usually) is not the board's Cortex-A core, and a cache in $HOME would make two reports
    of one build differ."""
    variant = linked_variant(config)
    return dict(value=DEFAULT_CYCLES_PER_BYTE, unit="cycles/byte", kind="estimated",
                source="constant seedfw.compress.decoder_speed.DEFAULT_CYCLES_PER_BYTE",
                note=f"documented constant for the {variant} decoder, not measured on the board: "
                     "liblz4 decompresses 1.5-4.5 GB/s on a ~3 GHz host, the slow end is taken",
                host=None, date=None, variant=variant)


def _machine(data: dict) -> str:
    """The host's architecture as the result records it (`machine`, else the platform string's
    architecture), so a label can say 'x86_64' instead of letting the reader assume the board."""
    if isinstance(data.get("machine"), str) and data["machine"]:
        return data["machine"]
    found = re.search(r"(x86_64|amd64|i[3-6]86|aarch64|arm64|armv\w+|riscv64|ppc64\w*|s390x)",
                      str(data.get("platform") or ""))
    return found.group(1) if found else "architecture not recorded"


def host_figure(path: Path, config: dict | None) -> dict:
    """A bench/lz4_speed.py result given explicitly (`invoke report --decoder-bench FILE`) as a
    figure measured on the host, not the board. The result must be for the decoder variant this
    build links (another variant differs ~6x: refused). `source` names the file, never its
    directory (a home path does not belong in a report that gets passed around)."""
    from .. import reading
    data = reading.loads_json_strict(reading.read_bytes(Path(path), "json"), Path(path))
    if not isinstance(data, dict):
        raise SeedfwError("must be a JSON object (a bench/lz4_speed.py result)", path)
    _check(data, path)
    variant = linked_variant(config)
    if data["variant"] != variant:
        raise SeedfwError(f"is a result for the {data['variant']} decoder; this build links the "
                          f"{variant} decoder (run bench/lz4_speed.py --variants {variant})",
                          path, "variant")
    where = f"{_machine(data)}" + (f" {data['cpu_model']}" if data.get("cpu_model") else "")
    label = f"measured on the host ({where}), not the board"
    return dict(value=round(float(data["cycles_per_byte"]), 3), unit="cycles/byte",
                kind="measured", source=f"--decoder-bench {Path(path).name}",
                provenance=dict(source="benchmark", label=label, synthetic=False),
                note=f"{label}: bench/lz4_speed.py on {data['host']} {data['date']}, {variant} "
                     "decoder compiled for the host; the boot estimates keep the constant",
                host=str(data["host"]), date=str(data["date"]), variant=variant)


def _check(data: dict, path) -> None:
    for key in RESULT_FIELDS:
        if key not in data:
            raise SeedfwError("missing field (written by bench/lz4_speed.py?)", path, key)
    cpb = data["cycles_per_byte"]
    # NaN compares false with everything and 1e999 parses as inf: both would pass "> 0"
    if not isinstance(cpb, (int, float)) or isinstance(cpb, bool) or not 0 < cpb < 1e6:
        raise SeedfwError("must be a positive number (below 1,000,000)", path,
                          "cycles_per_byte")
