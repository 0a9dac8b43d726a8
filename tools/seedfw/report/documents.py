"""Readers of the JSON documents the run-time and OS stages leave in an output directory, for
the report sections that show them: the emulated traffic counters (counters/emulated-*.json),
the OS agent's perf windows (counters/perf-boot.json), the model cards (images/models.json), the
compiler-cache summary (images/ccache.json) and its bench result, and the OS summary
(images/buildroot.json).

Like report/inputs.py (whose `load_json` door they use), each returns None when its file is
absent and raises SeedfwError naming the file and field when it is present but wrong: a string
where a count belongs, NaN, a negative byte count, a missing key. The schemas (report/fields.py
notation) say exactly what each section reads, so a renderer never meets a type it does not
expect.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError
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
        "metric": "str", "fp32": "number", "npu": "number", "simulator?": "str?",
        "toolkit_version?": "str?", "cosine?": "number?", "weight_bytes?": "count?",
        "internal_bytes?": "count?", "compile_seconds?": "number?", "cached?": "bool?",
        "source?": "any"}
CARDS = {"frame_rate?": "count?", "models?": [CARD]}


def model_cards(outdir: Path) -> tuple[Path, dict] | None:
    """images/models.json (seedfw.parts.models), checked; None when absent."""
    path = Path(outdir) / "images" / "models.json"
    if not path.exists():
        return None
    doc = load_json(path, CARDS)
    if doc.get("frame_rate") is not None and not 1 <= doc["frame_rate"] <= 100000:
        raise SeedfwError("must be a frame rate from 1 to 100000 frames/s", path, "frame_rate")
    return path, doc


CCACHE = {"hits": "count", "misses": "count", "hit_rate": "number", "remote?": "str?",
          "remote_hits?": "count", "remote_misses?": "count", "remote_read_bytes?": "count?",
          "remote_errors?": "count?", "remote_unreachable?": {"*": "str"}, "source?": "str?"}


def ccache_summary(outdir: Path) -> dict | None:
    """images/ccache.json (seedfw.ccache.finish), checked; None when absent."""
    from ..ccache import STATS_FILE
    path = Path(outdir) / "images" / STATS_FILE
    if not path.exists():
        return None
    doc = load_json(path, CCACHE)
    if not 0 <= doc["hit_rate"] <= 1:
        raise SeedfwError("must be a fraction from 0 to 1", path, "hit_rate")
    return doc


BENCH = {"host": "str", "date": "str", "cold_s": "number", "warm_s": "number",
         "ratio": "number"}


def ccache_bench() -> dict | None:
    """bench/cache_speed.py's result on this host (seedfw.ccache.bench_path), with its path;
    None when there is none. A result that is not one is an error naming the field."""
    from ..ccache import bench_path
    path = bench_path()
    if not path.exists():
        return None
    return dict(load_json(path, BENCH), path=str(path))


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
