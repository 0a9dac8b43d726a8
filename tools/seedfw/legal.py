"""`invoke legal`: one licence bundle and one CycloneDX SBOM for the whole firmware, assembled from
what each enabled part declares (Part.sbom: its third-party inputs; Part.legal: bundles of its own,
e.g. Buildroot's legal-info).

Buildroot's `legal-info` covers only what Buildroot built (rootfs packages, host tools); a bundle
without TF-A, U-Boot and the vendor blobs is the known complaint. So the bundle is
    <out>/legal/buildroot/      Buildroot's legal-info as it wrote it (manifests, licences, sources)
    <out>/legal/seedfw/<name>/  seedfw's own third-party inputs: the pinned source files of TF-A and
                                U-Boot, the rkbin blobs with rkbin's LICENSE, the kernel package
    <out>/legal/sbom.cdx.json   CycloneDX 1.5: every component above, with sha256 and licence
    <out>/legal/README.txt      what is where
written into a temporary directory and renamed into place at the end (never half a bundle).
Reproducible: the SBOM's timestamp is SOURCE_DATE_EPOCH and its serial number a uuid5 of its
content.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

from . import util

NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-00000000013d")


def seedfw_components(ctx) -> list[tuple[dict, list[Path]]]:
    """(CycloneDX component, files to bundle) for each third-party input of the enabled parts,
    as each part's `sbom()` declares it (seedfw.parts.base.Part.sbom)."""
    from . import parts
    out = []
    for part in parts.enabled(ctx.values):
        for comp in part.sbom(ctx):
            comp = dict(comp)
            out.append((comp, list(comp.pop("files", []))))
    return out


def sbom(ctx, br_comps: list[dict], own: list[dict], tools=()) -> dict:
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
           "metadata": {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                   time.gmtime(util.source_date_epoch())),
                        "tools": [{"vendor": "seedfw", "name": "seedfw legal"}, *tools],
                        "component": {"type": "firmware", "name": f"seedfw-{ctx.board.name}",
                                      "version": ctx.build_id}},
           "components": own + br_comps}
    body = json.dumps(doc, sort_keys=True).encode()
    doc["serialNumber"] = f"urn:uuid:{uuid.uuid5(NAMESPACE, util.sha256_bytes(body))}"
    return doc


def bundle(ctx, say=print) -> Path:
    """Write <out>/legal/ for the enabled parts of a built output directory."""
    from . import parts
    enabled = parts.enabled(ctx.values)
    for part in enabled:
        part.check_legal(ctx)                 # e.g. nothing built yet: before any work
    log = ctx.outdir / "logs" / "legal.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    own = seedfw_components(ctx)
    dest = ctx.outdir / "legal"
    with util.atomic_dir(dest) as tmp:
        for comp, files in own:
            d = tmp / "seedfw" / comp["name"]
            d.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copyfile(f, d / f.name)
        extra, tools = [], []
        for part in enabled:
            comps, tool = part.legal(ctx, tmp, log, say)
            extra += comps
            tools += [tool] if tool else []
        doc = sbom(ctx, extra, [c for c, _ in own], tools)
        util.write_json(tmp / "sbom.cdx.json", doc)
        lines = [f"seedfw licence bundle for {ctx.board.name}, build {ctx.build_id}", "",
                 "buildroot/  Buildroot legal-info: manifest.csv (target), host-manifest.csv,",
                 "            licenses/, sources/ (what Buildroot built)",
                 "seedfw/     seedfw's own third-party inputs (pinned files, as fetched), and",
                 "            buildroot-overrides/: the sources of the host packages Buildroot",
                 "            built from override dirs (legal-info saves none for those):"]
        lines += [f"  {c['name']:<20} {c['version']:<16} "
                  f"{c['licenses'][0]['license'].get('id') or c['licenses'][0]['license']['name']}"
                  for c, _ in own]
        lines += ["sbom.cdx.json  CycloneDX 1.5 SBOM of all of the above "
                  f"({len(doc['components'])} components)", ""]
        (tmp / "README.txt").write_text("\n".join(lines))
    say(f"wrote {dest}: {len(own)} seedfw components + {len(extra)} Buildroot packages; "
        f"SBOM {dest / 'sbom.cdx.json'}")
    return dest
