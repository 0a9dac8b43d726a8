"""`invoke ci`: what CI produces for every change — images, boots, a flash check and reports.

It is a task of tasks on purpose: each part runs the same code a developer runs by hand (build,
run, flash, counters, report), so a green CI says those commands work, not a CI-only path.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

from . import command
from .flash import counters as counters_task, flash as flash_task
from .. import boards, util
from ..paths import ROOT

__all__ = ["ci"]

@command(help={"output": "where images and reports go (default output/ci/<board>/)",
               "baseline": "a previous ci output directory: size deltas per board against it",
               "jobs": "jobs in total for the builds, which run all boards at once (default: "
                       "number of cores)",
               "cve_db": "vulnerability database directory for each board's VEX (invoke cve; "
                         "default $SEEDFW_CVE_DB, else the checkout's fixture database, "
                         "labelled as such)"})
def ci(c, output=None, baseline=None, jobs=0, cve_db=None):
    """Build, boot, flash-check every board; reports; golden check.

    Build every board, boot the QEMU images, flash-check on the QEMU bench, write reports, check
    the figures the manual marks against these builds (invoke docs --golden), run the HIL suite
    on the QEMU places of a local labgrid farm and print the summary."""
    from rich.console import Console

    from ..build import multi as multibuild
    from ..run import os_virt, payload as qemu
    from ..report import build_report, markdown, write_report

    console = Console(highlight=False, soft_wrap=True)
    root = Path(output) if output else ROOT / "output" / "ci"
    summary: list[str] = []
    # Every board at once under one job limit, as `invoke build --board all` does; a board that
    # fails to build is reported and skipped below, the others still boot and get their reports.
    console.rule("[bold]build")
    outcomes = multibuild.build_all([(n, root / n) for n in boards.names()], jobs=int(jobs) or None,
                                    console=console)
    for line in multibuild.summary_lines(outcomes):
        console.print(line, markup=False)
    for outcome in outcomes:
        if outcome.status != "ok":
            continue
        name = outcome.board
        board = boards.get(name)
        out = root / name
        console.rule(f"[bold]{name}")
        if board.qemu:
            from ..counters import emulated
            # Counted, so every report has measured (emulated) traffic per boot phase.
            counted = emulated.default_file(out, "run") if emulated.available(out) else None
            extra = emulated.qemu_args(board, out, counted) if counted else []
            # counted runs are slower (-icount and the plugin: ~2.5x; an OS build's run boots Linux)
            result = qemu.run(board, out, timeout=300 if counted else 60, echo=lambda s: None,
                              log=out / "logs" / "ci-boot.log", extra_args=extra)
            console.print(f"boot: ok in {result.seconds:.1f} s ({_first_seedfw_line(result.lines)})")
            if counted:
                console.print(emulated.summary_line(emulated.collect(board, out, counted, "run")),
                              markup=False)
            _os_boot(board, out, console)
        elif os_virt.section(board) is not None:
            _os_virt_boot(board, out, console)
        counters_file = None
        if board.flash_backend == "pyocd":
            flash_task(c, board=name, output=str(out))      # the probe: board data's QEMU place
        if board.counters == "stats-block" and board.qemu:
            counters_file = _counters(c, board, out)
        _cve(c, name, out, cve_db, console)
        base = Path(baseline) / name if baseline else None
        report = build_report(out, baseline=base if base and base.is_dir() else None,
                              counters=counters_file, board=name)
        paths = write_report(report, out)
        console.print(f"report: {paths['md'].relative_to(root)}, {paths['html'].relative_to(root)}")
        summary.append(markdown.render(report))
    # The golden check: the manual's marked figures regenerated from these builds and counted
    # boots (seedfw.figures.golden); a disagreement fails CI after everything else ran.
    console.rule("[bold]golden figures (docs/)")
    from ..errors import SeedfwError
    from .docs import golden_check
    golden_err = None
    try:
        golden_check(root, say=lambda line: console.print(line, markup=False))
    except SeedfwError as exc:
        golden_err = exc
    console.rule("[bold]farm (labgrid: local coordinator + exporter, tests/hil)")
    from ..lab.farm import hil_suite
    for line in hil_suite({o.board: root / o.board for o in outcomes if o.status == "ok"},
                          root / "lab"):
        console.print(line, markup=False)
    text = "\n\n".join([_builds_table(outcomes, root)] + summary)
    util.write_text(root / "summary.md", text + "\n")
    print(text)
    err = multibuild.failure(outcomes)
    if err is not None:
        raise err
    if golden_err is not None:
        raise golden_err


def _cve(c, name: str, out: Path, cve_db, console) -> None:
    """Every build wrote its SBOM (<out>/sbom/); its VEX is written and checked on every run:
    against the database given, else the checkout's fixture database (CI has no network and
    no full feed), which cve.json, the VEX and the report then call a fixture database."""
    import time
    from ..sbom import cve as cve_mod
    from .sbom import cve as cve_task
    db = cve_db or os.environ.get("SEEDFW_CVE_DB") or str(cve_mod.FIXTURE_DB)
    started = time.monotonic()
    cve_task(c, board=name, output=str(out), db=db)
    note = cve_mod.fixture_note(Path(db))
    console.print(f"cve: VEX written in {time.monotonic() - started:.1f} s (measured on this "
                  f"host) against {cve_mod.vex._shown(Path(db))}" + (f": {note}" if note else ""),
                  markup=False)


def _builds_table(outcomes, root: Path) -> str:
    """The summary's first part: each board's build result and its compiler-cache hit rate
    (measured by ccache during that build, from <out>/images/ccache.json; "n/a" when the build
    compiled nothing, ccache was off, or seedfw.cache.ccache is absent)."""
    lines = ["# seedfw ci", "", "| board | build | ccache hit rate | hits / misses |",
             "|---|---|---|---|"]
    for o in outcomes:
        build = "ok" if o.status == "ok" else f"**{o.status.upper()}** ({o.where})"
        stats = _ccache(root / o.board)
        if stats:
            rate = f"{stats['hit_rate'] * 100:.1f} %"
            counts = f"{stats['hits']} / {stats['misses']}"
        else:
            rate, counts = "n/a", "–"
        lines.append(f"| {o.board} | {build} | {rate} | {counts} |")
    lines += ["", "Hit rates measured by ccache (its stats log) over the compiles of the last build "
              "that compiled something in each board's output directory."]
    return "\n".join(lines)


def _ccache(outdir: Path) -> dict | None:
    try:        # seedfw.cache.ccache may be absent (a tree without the compiler cache)
        from ..cache import ccache
    except ImportError:
        return None
    stats = ccache.summary(outdir)
    if not stats or stats.get("hit_rate") is None:
        return None
    return stats


def _counters(c, board, out: Path) -> Path:
    """The stats block read back after a QEMU run, saved for the report as measured figures: the
    MCU through pyOCD on the QEMU bench (flashed first), the A-class payload through the GDB stub
    of a QEMU that `invoke counters` starts for the built image."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if board.flash_backend == "pyocd":
            counters_task(c, board=board.name, elf=str(out / "images" / "mcu.elf"),
                          flash_first=True, json_=True)
        else:
            counters_task(c, board=board.name, output=str(out), json_=True)
    values = json.loads(buf.getvalue())
    return util.write_json(out / "counters.json", values)


def _os_boot(board, out: Path, console) -> None:
    """When the build made the OS (TF-A → U-Boot → Linux → agent), boot it counted as well."""
    from ..run import os_boot as osboot
    from ..counters import emulated

    if not (osboot.chained(board, out) and emulated.available(out)):
        return
    counted = emulated.default_file(out, "boot")
    result = osboot.boot(board, out, timeout=180, echo=lambda s: None,
                         extra_args=emulated.qemu_args(board, out, counted, os_boot=True))
    console.print(f"OS boot: ok in {result.seconds:.1f} s", markup=False)
    console.print(emulated.summary_line(emulated.collect(board, out, counted, "boot")),
                  markup=False)
    from ..counters import perf_live
    perf_live.write(board, out, result.lines, emulated=True)


def _os_virt_boot(board, out: Path, console) -> None:
    """A board QEMU has no model of (rk3588): its image's own OS on QEMU virt, counted, so its
    report has the emulated per-phase table and the agent's perf windows too; what differs from
    the board is printed and kept in both documents (seedfw.run.os_virt)."""
    from ..run import os_virt
    from ..counters import emulated, perf_live

    if not emulated.available(out):
        console.print("OS boot on QEMU virt: skipped (CONFIG_COUNTERS_EMULATED is off)",
                      markup=False)
        return
    counted = emulated.default_file(out, "boot")
    result = os_virt.boot(board, out, timeout=900, echo=lambda s: None,
                          extra_args=emulated.virt_args(board, out, counted))
    console.print(f"OS boot on QEMU virt: ok in {result.seconds:.1f} s (emulated, not the board: "
                  f"{os_virt.differs_line(board)})", markup=False)
    console.print(emulated.summary_line(emulated.collect(board, out, counted, "boot")),
                  markup=False)
    perf_live.write(board, out, result.lines, emulated=True)
    for line in result.agent_lines():
        if line.startswith(("agent: perf ", "agent: module ")):
            console.print(line, markup=False)


def _first_seedfw_line(lines: list[str]) -> str:
    return next((l for l in lines if l.startswith("seedfw ")), "no banner")
