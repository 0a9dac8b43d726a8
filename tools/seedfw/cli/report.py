"""Report tasks: stats (ELF sections, segments, symbols, diffs) and report (JSON, Markdown, HTML).

Every `invoke` run imports this module to list the tasks, so the work modules (stats, the report
renderers) are imported inside the task bodies, not here.
"""

from __future__ import annotations

import glob
import json as jsonlib
import os
import sys
from pathlib import Path

from . import command
from ..paths import shown as shown_path
from ..errors import SeedfwError

__all__ = ["stats", "report"]

_BOARD_HELP = "board name (see 'invoke boards'); default $SEEDFW_BOARD"
_OUTPUT_HELP = "output directory (default output/<board>/), like Buildroot's O="


def _board(board):
    return board or os.environ.get("SEEDFW_BOARD")


def _expand(spec: str) -> list[Path]:
    """ELF arguments: one path, a comma-separated list, or quoted glob patterns (Invoke has no
    variadic positional arguments, so several files travel in one argument)."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if any(ch in part for ch in "*?["):
            matches = sorted(glob.glob(part, recursive=True))
            if not matches:
                raise SeedfwError(f"no file matches the pattern '{part}'")
            out += [Path(m) for m in matches]
        else:
            out.append(Path(part))
    return out


def _baseline_files(spec: str, top: int) -> list[dict]:
    from .. import stats as elfstats
    from ..report import inputs
    path = Path(spec)
    if path.is_dir():
        manifest, _ = inputs.read_manifest(path)
        elfs = inputs.find_elfs(path, manifest)
        if not elfs:
            raise SeedfwError("no target ELF files found in the baseline directory", path)
        return [elfstats.read_elf(p, top) for p in elfs]
    return elfstats.load_stats(path, top)


def _targets(target: str, output):
    """TARGET → (ELF files, output dir or None). A board name or an output directory means the
    build's target ELFs (the ones its manifest declares); anything else is ELF file(s)."""
    from .. import boards, paths
    from ..report import inputs
    outdir = None
    if target in boards.names():
        outdir = paths.output_dir(target, output)
    elif Path(target).is_dir():
        outdir = Path(target)
    if outdir is None:
        return _expand(target), (Path(output) if output else None)
    manifest, _ = inputs.read_manifest(outdir)
    files = inputs.find_elfs(outdir, manifest)
    if not files:
        raise SeedfwError("no target ELF files found (run 'invoke build' first)", outdir)
    return files, outdir


@command(positional=["target"], help={
    "target": "ELF file(s) (one path, a comma-separated list or a quoted glob), a board name "
              "(its output directory's ELFs) or an output directory",
    "output": "with a board name: its output directory (default output/<board>/); with ELF "
              "files: a directory to write stats.json into",
    "top": "symbols shown per section, largest first (default 10; 1..100000)",
    "json": "print JSON (schema seedfw-stats/1, or seedfw-stats-diff/1 with --diff)",
    "diff": "baseline to compare with: an ELF, a stats JSON, or an output directory",
})
def stats(c, target, output=None, top="10", json=False, diff=None):
    """Print ELF section, segment and symbol sizes.

    ELF section/segment/symbol sizes (ROM/RAM classes as Zephyr's size_report); --diff for growth."""
    from .. import jsonout, stats as elfstats, util
    from ..stats import diff as stats_diff
    from ..reading import plain
    if not str(top).isdigit() or not 1 <= int(top) <= 100000:
        raise SeedfwError(f"'{top}' is not a whole number of symbols from 1 to 100000",
                          field="--top")
    top = int(top)
    files, outdir = _targets(target, output)
    results = [elfstats.read_elf(f, top) for f in files]
    # Every input is read and checked before anything is written: a bad --diff baseline must
    # leave the output directory as it was.
    pairs = unmatched = None
    if diff:
        pairs, unmatched = stats_diff.pair_files(_baseline_files(diff, top), results, diff)
    if outdir is not None:      # a saved stats.json is a --diff baseline for the next build
        util.write_json(outdir / "stats.json", elfstats.stats_document(results))
    if diff:
        for name in unmatched:
            print(f"note: {plain(name)} has no counterpart in the baseline; not compared",
                  file=sys.stderr)
        diffs = [stats_diff.diff_stats(b, n, top=None if json else top) for b, n in pairs]
        if json:
            jsonout.dump({"schema": stats_diff.DIFF_SCHEMA, "diffs": diffs}, sys.stdout)
            sys.stdout.write("\n")
        else:
            print("\n\n".join(stats_diff.format_diff(d, top) for d in diffs))
        return
    if json:
        # = print(json.dumps(doc, indent=2)), written in pieces (seedfw.jsonout)
        jsonout.dump(elfstats.stats_document(results), sys.stdout)
        sys.stdout.write("\n")
    else:
        print("\n\n".join(elfstats.format_stats(r, top) for r in results))


@command(help={
    "board": _BOARD_HELP, "output": _OUTPUT_HELP,
    "baseline": "another output directory: size deltas against its images and ELFs",
    "counters": "counters JSON from 'invoke counters --json': shown as measured figures",
    "decoder_bench": "a bench/lz4_speed.py result file: shown as measured on the host, not the "
                     "board (never read unless given)",
    "ccache_bench": "a bench/cache_speed.py result file: the time a warm remote cache saved "
                    "(never read unless given)",
})
def report(c, board=None, output=None, baseline=None, counters=None, decoder_bench=None,
           ccache_bench=None):
    """Write <out>/report/: report.json, report.md, report.html.

    Write <output>/report/: report.json (schema seedfw-report/1), report.md, report.html. The
    report depends on the output directory and these options only: a benchmark result is shown
    when given (--decoder-bench, --ccache-bench), never picked up from the benchmark cache."""
    from .. import boards, paths
    from ..report import build_report, write_report
    board = _board(board)
    if not board and not output:
        raise SeedfwError("no board given (use --board NAME, --output DIR or set SEEDFW_BOARD)")
    if board:
        boards.get(board)       # an unknown name is its own error, not "output/<name> not found"
    outdir = paths.output_dir(board, output) if board else Path(output).resolve()
    data = build_report(outdir, baseline=baseline, counters=counters, board=board,
                        decoder_bench=decoder_bench, ccache_bench=ccache_bench)
    written = write_report(data, outdir)
    for path in written.values():
        print(f"wrote {shown_path(path)}")
    from ..report.safe import term
    for note in data["notes"]:          # notes quote outside text: shown plain, never as escapes
        print(f"note: {term(note)}")
