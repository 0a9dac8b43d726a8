"""Readers of the JSON documents the run-time and OS stages leave in an output directory, for
the report sections that show them: the emulated traffic counters (counters/emulated-*.json),
the OS agent's perf windows (counters/perf-boot.json), the model cards (images/models.json), the
boot package's entries (images/images.json), the compiler-cache summary (images/ccache.json)
and a bench result given on the command line, and the OS summary (images/buildroot.json).

Like report/inputs.py (whose `load_json` door they use), each returns None when its file is
absent and raises SeedfwError naming the file and field when it is present but wrong: a string
where a count belongs, NaN, a negative byte count, a missing key. The schemas (report/fields.py
notation) say exactly what each section reads, so a renderer never meets a type it does not
expect.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError
from .fields import check
from .inputs import check_provenance, load_json

REGION = {"load_bytes?": "count", "store_bytes?": "count", "loads?": "count", "stores?": "count"}
PHASE = {"instructions": "count", "regions": {"*": REGION},
         "excluded?": {"instructions?": "count"}}
EMULATED = {
    "provenance": {"source": "str"},
    "settings": {"boot?": "str?", "note?": "str?", "excluded_code?": ["str"],
                 "regions": [{"name": "str", "kind": "str"}],
                 "phases_declared": [{"name": "str", "by?": "str", "missing?": "str?",
                                      "ran?": "bool"}]},
    "readings": {"phases": {"*": PHASE},
                 "dma": {"virtio-blk": {"reads": "count", "read_bytes": "count",
                                        "writes?": "count", "write_bytes": "count"}}},
}


def emulated(path: Path) -> dict:
    """One counters/emulated-*.json (seedfw.counters.emulated), checked."""
    doc = load_json(path, EMULATED)
    check_provenance(doc["provenance"], path)
    return doc


PERF = {"provenance": {"source": "str"},
        "settings?": {"absent?": {"*": "str"}},
        "readings": {"windows": {"*": {"*": {"*": "count"}}}}}


def perf_boot(outdir: Path) -> tuple[Path, dict] | None:
    """counters/perf-boot.json (seedfw.counters.perf_live), checked; None when absent."""
    path = Path(outdir) / "counters" / "perf-boot.json"
    if not path.exists():
        return None
    doc = load_json(path, PERF)
    check_provenance(doc["provenance"], path)
    return path, doc


CARD = {"name": "str", "target": "str", "dtype": "str", "file_bytes": "count", "sha256": "str",
        "metric": "str", "fp32": "number", "simulated": "number", "simulator?": "str?",
        "toolkit_version?": "str?", "cosine?": "number?", "weight_bytes?": "count?",
        "internal_bytes?": "count?", "compile_seconds?": "number?",
        "cached?": "bool?",      # written by builds before 2026-12 (now in the log only)
        "source?": "any"}
CARDS = {"frame_rate?": "count?", "models?": [CARD]}


def model_cards(outdir: Path) -> tuple[Path, dict] | None:
    """images/models.json (seedfw.parts.models), checked; None when absent. A card of an output
    directory built before the rename says `npu` for `simulated`: read as a synonym
    (seedfw.models.cards)."""
    from ..models import cards
    path = Path(outdir) / "images" / "models.json"
    if not path.exists():
        return None
    doc = load_json(path)
    if isinstance(doc, dict) and isinstance(doc.get("models"), list):
        doc = dict(doc, models=[cards.current(c) if isinstance(c, dict) else c
                                for c in doc["models"]])
    doc = check(doc, CARDS, path)
    if doc.get("frame_rate") is not None and not 1 <= doc["frame_rate"] <= 100000:
        raise SeedfwError("must be a frame rate from 1 to 100000 frames/s", path, "frame_rate")
    return path, doc


PACKAGE = {"entries?": [{"name": "str", "type": "str", "size": "count", "stored_size": "count",
                         "sha256?": "str?"}]}


def package_entries(outdir: Path) -> list[dict]:
    """images/images.json's entries (seedfw.images: what the boot package holds, each with its
    size and the bytes it is stored in), checked; [] when the build wrote none."""
    path = Path(outdir) / "images" / "images.json"
    if not path.exists():
        return []
    return load_json(path, PACKAGE).get("entries") or []


CCACHE = {"hits": "count", "misses": "count", "hit_rate": "number", "remote?": "str?",
          "remote_hits?": "count", "remote_misses?": "count", "remote_read_bytes?": "count?",
          "remote_errors?": "count?", "remote_unreachable?": {"*": "str"}, "source?": "str?"}


def ccache_summary(outdir: Path) -> dict | None:
    """images/ccache.json (seedfw.cache.ccache.finish), checked; None when absent."""
    from ..cache.ccache import STATS_FILE
    path = Path(outdir) / "images" / STATS_FILE
    if not path.exists():
        return None
    doc = load_json(path, CCACHE)
    if not 0 <= doc["hit_rate"] <= 1:
        raise SeedfwError("must be a fraction from 0 to 1", path, "hit_rate")
    return doc


BENCH = {"host": "str", "date": "str", "cold_s": "number", "warm_s": "number",
         "ratio": "number"}


def ccache_bench(path) -> dict | None:
    """A bench/cache_speed.py result given on the command line (`invoke report --ccache-bench
    FILE`), with `path` = the file's name only (never its directory: a home path does not belong
    in a report); None when none was given. The report never looks in the benchmark cache
    (seedfw.cache.ccache.bench_path) itself: the same build must give the same report on any
    machine. A result that is not one is an error naming the field."""
    if not path:
        return None
    return dict(load_json(Path(path), BENCH), path=f"--ccache-bench {Path(path).name}")


BUILDROOT = {"version?": "str?", "rootfs?": {"*": {"size": "count", "entries?": "count?"}},
             "package_sizes?": {"*": "count"},
             "overrides?": [{"package": "str", "used": "str", "buildroot_pins": "str",
                             "file": "str", "origin": "str", "built?": "bool"}]}


def buildroot_summary(outdir: Path) -> dict | None:
    """images/buildroot.json (seedfw.parts.buildroot), checked; None when absent."""
    path = Path(outdir) / "images" / "buildroot.json"
    if not path.exists():
        return None
    return load_json(path, BUILDROOT)
