"""The firmware's software bill of materials, its licence bundle and its vulnerability handling.

    model.py          the one Component record (purl, CPE, sha256 + SHA-512, SPDX licence,
                      scope, pedigree, dependencies with completeness)
    (seedfw.buildroot.sbom: Buildroot's packages from its own `make show-info`, called by the
    Buildroot part: the Buildroot library is the parts' alone)
    collect.py        every enabled part's sbom() + one component per image artifact, and the
                      graph image → part → source taken from the plan's steps
    cdx.py            CycloneDX 1.6 (cyclonedx-python-lib, validated offline by it)
    spdx.py           SPDX 3.0.1 (spdx-python-model, loads back through it)
    legal.py          `invoke legal`: the licence bundle, from the same component list
    vex.py / cve.py   board/<b>/vex.yaml triage, `invoke cve`: offline matching with Bootlin's
                      sbom-cve-check, the result a CycloneDX VEX document

`write(ctx)` is what every build calls after its steps and before the manifest: <out>/sbom/
sbom.cdx.json and <out>/sbom/sbom.spdx.json (reproducible: SOURCE_DATE_EPOCH, uuid5 serial,
sorted). The SBOM carries no vulnerability data (BSI TR-03183-2: that is the VEX's job,
<out>/sbom/vex.cdx.json).

The manifest lists the two documents (`listing`: path, size, sha256, format) and the SBOM does
not describe the manifest: the SBOM's file components are the manifest's `artifacts` (the
parts' listed outputs), made from the steps' outputs, never from manifest.json; the manifest is
the index of what the build left, SBOM included, so it is written last. One direction only, no
circle: a no-op build leaves both byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import util

CDX = "sbom.cdx.json"
SPDX = "sbom.spdx.json"
FORMATS = ((CDX, "CycloneDX 1.6"), (SPDX, "SPDX 3.0.1"))


def sbom_dir(outdir) -> Path:
    return Path(outdir) / "sbom"


def write(ctx, say=None) -> dict:
    """Write <out>/sbom/{sbom.cdx.json,sbom.spdx.json} for a built output directory; returns
    {"cdx": path, "spdx": path, "components": n, "notes": [...]}. A component whose input is
    absent is left out and named in notes (and in the CycloneDX metadata); any other problem
    is an error."""
    require()
    from .. import paths
    from . import cdx, collect, spdx
    # Written outside the build's stage (invoke sbom, invoke legal: other settings, maybe), the
    # documents are no longer what after_build stamped: the next build writes them again.
    _stamp(ctx.outdir).unlink(missing_ok=True)
    inv = collect.collect(ctx)
    doc = cdx.document(inv, ctx.board.name)
    if inv.notes:
        doc.setdefault("metadata", {}).setdefault("properties", []).extend(
            {"name": "seedfw:left-out", "value": n} for n in inv.notes)
        cdx.validate(doc)
    out = sbom_dir(ctx.outdir)
    out.mkdir(parents=True, exist_ok=True)
    util.write_text(out / CDX, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    spdx.write(spdx.document(inv, ctx.board.name, doc["serialNumber"]), out / SPDX)
    if say:
        say(f"  {'wrote':<7} {'sbom':<24} {len(inv.components)} components → "
            f"{paths.shown(out / CDX)}, {SPDX}" + (f" ({len(inv.notes)} left out: see metadata)"
                                       if inv.notes else ""))
    return {"cdx": out / CDX, "spdx": out / SPDX, "components": len(inv.components),
            "notes": inv.notes}


def listing(outdir, sha256=util.sha256_file) -> list[dict]:
    """The manifest's `sbom` entries: {format, name, path (relative to the output directory),
    sha256, size} of each SBOM document the output directory holds, in FORMATS order (`sha256`:
    the build's StatCache of the manifest's hashes, or a plain hash)."""
    out = []
    for name, form in FORMATS:
        path = sbom_dir(outdir) / name
        if path.is_file():
            out.append({"format": form, "name": name, "path": f"sbom/{name}",
                        "sha256": sha256(path), "size": path.stat().st_size})
    return out


def relist(outdir) -> bool:
    """Bring the manifest's "sbom" entries up to date with <out>/sbom/ after `invoke sbom` or
    `invoke legal` wrote the documents again outside a build (another SEEDFW_SBOM_CREATOR gives
    other bytes); the rest of the manifest is kept as the build (seedfw.build.write_manifest)
    wrote it. Returns whether it changed the file (False too without a manifest: not built)."""
    from ..manifest import Manifest
    m = Manifest.find(outdir)
    if m is None:
        return False
    files = listing(outdir)
    if m.doc.get("sbom") == files:
        return False
    util.write_json(m.path, {**m.doc, "sbom": files})
    return True


def _stamp(outdir) -> Path:
    return Path(outdir) / "stamps" / "sbom.stamp.json"     # not *.stamp: no input of its own


def after_build(ctx, say=None) -> bool:
    """`write(ctx)` unless the SBOM is up to date (a no-op build rewrote it in 2 s, longer than
    the plan took); returns whether it wrote. Up to date means the same digest as the last
    write over: every step stamp (each already hashes its inputs and its code; the manifest is
    made from their outputs), the configuration, seedfw's own code (the parts' `sbom()` and
    this package: a changed collector rewrites), and the two settings the documents carry
    (SOURCE_DATE_EPOCH, SEEDFW_SBOM_CREATOR)."""
    import hashlib
    import os
    from .. import paths, reading
    from ..errors import SeedfwError
    outdir = Path(ctx.outdir)
    h = hashlib.sha256(f"{util.source_date_epoch()}\0"
                       f"{os.environ.get('SEEDFW_SBOM_CREATOR', '')}\0".encode())
    inputs = [outdir / "config.json",
              *sorted(p for p in (outdir / "stamps").glob("*.stamp")
                      if p.name != "report.stamp"),       # written after this, from it
              *sorted((paths.ROOT / "tools" / "seedfw").rglob("*.py"))]
    for path in inputs:     # door: hashed, never parsed (this build's own files and seedfw's code)
        h.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-"))
    # The host tools are components too (seedfw.sbom.hosttools): a package installed or
    # upgraded on the machine (a new mkimage) changes dpkg's status file, so the SBOM is rewritten.
    dpkg = Path("/var/lib/dpkg/status")
    if dpkg.is_file():
        st = dpkg.stat()
        h.update(f"dpkg\0{st.st_size}\0{st.st_mtime_ns}".encode())
    digest = h.hexdigest()
    stamp = _stamp(outdir)
    out = sbom_dir(outdir)
    try:
        current = reading.loads_json(reading.read_bytes(stamp, "json"), stamp).get("stamp")
    except (SeedfwError, AttributeError):      # missing, deep, not JSON: not up to date
        current = None
    if current == digest and (out / CDX).is_file() and (out / SPDX).is_file():
        if say:
            say(f"  {'skipped':<7} {'sbom':<24} up to date")
        return False
    write(ctx, say=say)
    util.write_json(stamp, {"stamp": digest})
    return True


def require() -> None:
    """The kept libraries the SBOM is written with (pyproject extra 'sbom'), or one line."""
    import importlib.util
    from ..errors import SeedfwError
    missing = [m for m in ("cyclonedx", "spdx_python_model", "packageurl", "license_expression")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise SeedfwError(f"the SBOM needs Python packages {', '.join(missing)} (run 'invoke "
                          "setup': pyproject extra 'sbom')")


def coverage(doc: dict) -> dict:
    """Component counts by kind and scope, with purl / CPE / SHA-512 coverage in percent, from a
    CycloneDX document (what the report and the closing note show)."""
    rows: dict[str, dict] = {}
    for c in doc.get("components", []):
        scope = next((p["value"] for p in c.get("properties", [])
                      if p.get("name") == "seedfw:scope"), "required")
        key = f"{c.get('type')} ({scope})"
        r = rows.setdefault(key, {"count": 0, "purl": 0, "cpe": 0, "sha512": 0})
        r["count"] += 1
        r["purl"] += bool(c.get("purl"))
        r["cpe"] += bool(c.get("cpe"))
        r["sha512"] += any(h.get("alg") == "SHA-512" for h in c.get("hashes", []))
    total = {k: sum(r[k] for r in rows.values()) for k in ("count", "purl", "cpe", "sha512")}
    rows["all"] = total
    for r in rows.values():
        for k in ("purl", "cpe", "sha512"):
            r[f"{k}_percent"] = round(100.0 * r[k] / r["count"], 1) if r["count"] else None
    return rows
