"""`invoke legal`: one licence bundle for the whole firmware, from the same component list as the
SBOM every build writes (seedfw.sbom.collect), plus what a part bundles of its own (Part.legal:
Buildroot's legal-info).

Buildroot's `legal-info` covers only what Buildroot built (rootfs packages, host tools); a bundle
without TF-A, U-Boot and the vendor blobs is the known complaint. So the bundle is
    <out>/legal/buildroot/      Buildroot's legal-info as it wrote it (manifests, licences, sources)
    <out>/legal/seedfw/<name>/  the pinned files of every other component with sources: TF-A and
                                U-Boot (orig + Debian's packaging), each rkbin blob with rkbin's
                                LICENSE, the kernel package, the Buildroot tree itself
    <out>/legal/sbom.cdx.json   the SBOM (CycloneDX 1.6) and sbom.spdx.json (SPDX 3.0.1), the
                                very files of <out>/sbom/
    <out>/legal/README.txt      what is where
written into a temporary directory and renamed into place at the end (never half a bundle).

Cross-check: every package Buildroot's legal-info manifests list (manifest.csv: target,
host-manifest.csv: host) must be a component of the SBOM with the same version and licence
(`cross_check`); a difference fails `invoke legal` naming the manifest and package, so the SBOM
can never silently drift from what Buildroot itself reports.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from .model import licence_expression

MANIFESTS = (("manifest.csv", "target"), ("host-manifest.csv", "host"))


def legal_info_rows(legal_dir: Path) -> list[tuple[str, str, dict]]:
    """(manifest, kind, row) for every package of Buildroot's legal-info manifests."""
    from .. import reading
    rows = []
    for name, kind in MANIFESTS:
        path = legal_dir / name
        if not path.is_file():
            raise SeedfwError("Buildroot's legal-info wrote no manifest", path)
        text = reading.read_text(path, "json")     # a CSV: the text cap of documents
        rows += [(name, kind, row) for row in csv.DictReader(text.splitlines())]
    return rows


def cross_check(components, legal_dir: Path) -> list[str]:
    """Problems (one line each) between legal-info's manifests and the SBOM's components."""
    by_name = {}
    for c in components:
        if c.ref.startswith("buildroot:"):
            by_name[c.name] = c
        elif c.ref == "tool:buildroot":
            by_name["host-buildroot"] = c
    problems = []
    for manifest, kind, row in legal_info_rows(legal_dir):
        pkg = row["PACKAGE"] if kind == "target" else f"host-{row['PACKAGE']}"
        c = by_name.get(pkg)
        if c is None:
            problems.append(f"{manifest}: {row['PACKAGE']}: not in the SBOM")
            continue
        version = c.properties.get("buildroot:version", c.version)
        licence = c.properties.get("buildroot:license")
        if version != row["VERSION"]:
            problems.append(f"{manifest}: {row['PACKAGE']}: version {row['VERSION']} in "
                            f"legal-info, {version} in the SBOM")
        if licence is not None and licence != row["LICENSE"]:
            problems.append(f"{manifest}: {row['PACKAGE']}: licence {row['LICENSE']!r} in "
                            f"legal-info, {licence!r} in the SBOM")
        if licence_expression(row["LICENSE"]) not in (c.declared or c.licence, c.licence):
            problems.append(f"{manifest}: {row['PACKAGE']}: licence "
                            f"{licence_expression(row['LICENSE'])} from legal-info, "
                            f"{c.declared or c.licence} in the SBOM")
    return problems


def bundle(ctx, say=print) -> Path:
    """Write <out>/legal/ for the enabled parts of a built output directory."""
    from .. import parts, sbom
    from . import collect
    enabled = parts.enabled(ctx)
    for part in enabled:
        part.check_legal(ctx)                 # e.g. nothing built yet: before any work
    log = ctx.outdir / "logs" / "legal.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    written = sbom.write(ctx)
    sbom.relist(ctx.outdir)                   # the manifest lists the documents just written
    inv = collect.collect(ctx)
    own = [c for c in inv.components if c.sources and not c.ref.startswith("buildroot:")]
    dest = ctx.outdir / "legal"
    with util.atomic_dir(dest) as tmp:
        for c in own:
            d = tmp / "seedfw" / c.name
            d.mkdir(parents=True, exist_ok=True)
            for f in c.sources:
                shutil.copyfile(f, d / f.name)
        for part in enabled:
            part.legal(ctx, tmp, log, say)
        if (tmp / "buildroot").is_dir():
            problems = cross_check(inv.components, tmp / "buildroot")
            if problems:
                raise SeedfwError(f"the SBOM disagrees with Buildroot's legal-info: "
                                  f"{problems[0]}" + (f" (and {len(problems) - 1} more)"
                                                      if len(problems) > 1 else ""),
                                  tmp / "buildroot", problems[0].split(":", 1)[0])
        for f in (written["cdx"], written["spdx"]):
            shutil.copyfile(f, tmp / f.name)
        lines = [f"seedfw licence bundle for {ctx.board.name}, build {ctx.build_id}", "",
                 "buildroot/  Buildroot legal-info: manifest.csv (target), host-manifest.csv,",
                 "            licenses/, sources/ (what Buildroot built)",
                 "seedfw/     the pinned files of every other component, as fetched, and",
                 "            buildroot-overrides/: the sources of the host packages Buildroot",
                 "            built from override dirs (legal-info saves none for those):"]
        lines += [f"  {c.name:<44} {c.version:<16} {c.licence}" for c in own]
        lines += [f"{sbom.CDX}  CycloneDX 1.6 SBOM of the firmware ({written['components']} "
                  f"components; {sbom.SPDX} the same in SPDX 3.0.1)", ""]
        (tmp / "README.txt").write_text("\n".join(lines))
    say(f"wrote {dest}: {len(own)} bundled components + Buildroot's legal-info (cross-checked "
        f"against the SBOM); SBOM {dest / sbom.CDX}")
    return dest

