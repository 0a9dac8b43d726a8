"""`invoke cve`: the board's SBOM matched offline against a local vulnerability database with
Bootlin's sbom-cve-check (the matcher replacing Yocto's cve-check), the result a CycloneDX VEX.

The matcher does the matching and the version ranges (CPE product of each SPDX package, NVD's
cpeMatch ranges, its own version ordering: 2.12.1 > 2.8, 2025.01 > 2025.01-rc1); seedfw writes
none of that logic. It reads the SPDX 3.0.1 SBOM every build writes and a database directory in
one of the two layouts it knows:
    NVD 2.0 records, one per CVE:  CVE-<year>/CVE-<year>-<NN>xx/CVE-….json  (fkie-cad's
                                   nvd-json-data-feeds layout)        → cve-db-nvd-fkie
    CVE 5 records:                 cves/<year>/<N>xxx/CVE-….json  (CVEProject/cvelistV5)
                                                                      → cve-db-cvelist
It wants the database to be a git work tree (it keys its index on the commit): a clone of a
full mirror is used in place (its index file goes to <out>/build/cve/, not into the mirror); a
plain directory (the test fixtures) is copied into a one-commit repository under
<out>/build/cve/db first. It runs with --offline-mode and --disable-auto-updates: nothing
reaches the network, ever.

Results (<out>/sbom/): vex.cdx.json (CycloneDX 1.6 VEX: every match with its triage, see
seedfw.sbom.vex) and cve.json (the same for the report: counts per status, each match with its
component, version range verdict and source record). The matcher's CSV comes back through the
door (reading.read_text).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .. import util
from ..paths import ROOT
from ..errors import SeedfwError
from . import CDX, SPDX, sbom_dir, vex

RESULT = "cve.json"
VEX = "vex.cdx.json"


# The checkout's fixture databases (real records, a handful of them): what `invoke ci` matches
# against when it is given no database, so a VEX is written and checked on every run.
FIXTURES = ROOT / "tests" / "fixtures" / "cve"
FIXTURE_DB = FIXTURES / "nvd"


def fixture_note(db: Path) -> str | None:
    """"fixture database: N real records, not a full feed" for a database inside the checkout's
    fixtures, else None: a VEX from a fixture must never read like one from a full feed."""
    try:
        Path(db).resolve().relative_to(FIXTURES)
    except ValueError:
        return None
    n = sum(1 for _ in Path(db).rglob("CVE-*.json"))
    return f"fixture database: {n} real records, not a full feed"


def layout(db: Path) -> str:
    """The matcher's database type for a directory, from its layout."""
    if not db.is_dir():
        raise SeedfwError("no vulnerability database directory", db, "--db")
    if next(db.glob("CVE-*/CVE-*xx/CVE-*.json"), None) is not None:
        return "cve-db-nvd-fkie"
    if next(db.glob("cves/*/*/CVE-*.json"), None) is not None:
        return "cve-db-cvelist"
    raise SeedfwError("not a vulnerability database: expected NVD 2.0 records as "
                      "CVE-<year>/CVE-<year>-<NN>xx/CVE-*.json or CVE 5 records as "
                      "cves/<year>/<N>xxx/CVE-*.json", db, "--db")


def record_path(db: Path, kind: str, cve: str) -> Path:
    year, num = cve.split("-")[1], cve.split("-")[2]
    if kind == "cve-db-nvd-fkie":
        return db / f"CVE-{year}" / f"{cve[:-2]}xx" / f"{cve}.json"
    return db / "cves" / year / f"{num[:-3]}xxx" / f"{cve}.json"


# Who publishes the records of each layout (the VEX names it per vulnerability): NVD's 2.0 API
# records (fkie-cad's mirror keeps them unchanged) and the CVE Program's own CVE 5 records.
SOURCES = {
    "cve-db-nvd-fkie": ("NVD", "https://nvd.nist.gov/vuln/detail/{cve}"),
    "cve-db-cvelist": ("CVE Program (cvelistV5)", "https://www.cve.org/CVERecord?id={cve}"),
}


def source_of(kind: str, cve: str) -> dict:
    name, url = SOURCES[kind]
    return {"name": name, "url": url.format(cve=cve)}


def _git_tree(db: Path, work: Path) -> Path:
    """`db` itself when it is a git work tree, else a one-commit copy of it in `work`."""
    probe = subprocess.run(["git", "-C", str(db), "rev-parse", "--show-toplevel"],
                           capture_output=True, text=True)
    if probe.returncode == 0 and Path(probe.stdout.strip()).resolve() == db.resolve():
        return db
    copy = work / "db"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(db, copy, ignore=shutil.ignore_patterns(".git"))
    env = dict(os.environ, GIT_AUTHOR_NAME="seedfw", GIT_AUTHOR_EMAIL="seedfw@localhost",
               GIT_COMMITTER_NAME="seedfw", GIT_COMMITTER_EMAIL="seedfw@localhost",
               GIT_AUTHOR_DATE="@0 +0000", GIT_COMMITTER_DATE="@0 +0000")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "vulnerability db"]):
        subprocess.run(["git", "-C", str(copy), *cmd], env=env, check=True,
                       capture_output=True)
    return copy


def run_matcher(spdx: Path, db: Path, work: Path) -> list[dict]:
    """sbom-cve-check over the SBOM and `db`: one row per (package, CVE) it looked at, with its
    verdict ("affected": version in range; "fixed": not in range; ...)."""
    kind = layout(db)
    work.mkdir(parents=True, exist_ok=True)
    tree = _git_tree(db, work)
    out = work / "matches.csv"
    cmd = [sys.executable, "-c", "from sbom_cve_check.cli import main; main()",
           "--ignore-default-config", "--offline-mode", "--disable-auto-updates",
           "--no-builtin-products-db", "--databases-dir", str(work / "databases"),
           "--sbom-type", "spdx3", "--sbom-path", str(spdx),
           "--add-db", kind, str(tree), f"cache_index_path={work / 'index.json'}",
           "--export-type", "csv", "--export-path", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        tail = ([ln for ln in proc.stderr.splitlines() if ln.strip()] or ["no output"])[-1]
        raise SeedfwError(f"sbom-cve-check failed: {tail[:200]}", db, "--db")
    from .. import reading
    text = reading.read_text(out, "json")          # a CSV: the door's text cap for documents
    rows = []
    for row in csv.DictReader(text.splitlines()):
        rows.append({"cve": row["vuln-id"], "component": row["package names"],
                     "version": row["version"], "product": row["vendor-product"],
                     "verdict": row["status"], "statement": row["statement"],
                     "notes": row["notes"], "source": source_of(kind, row["vuln-id"]),
                     "record": os.path.relpath(record_path(db, kind, row["vuln-id"]), db)})
    return rows


def match(ctx, db: Path, say=print, triage_file: Path | None = None) -> dict:
    """Match <out>/sbom/ against `db`, apply the board's triage (or `triage_file`), write the
    VEX and cve.json; returns the cve.json document."""
    out = sbom_dir(ctx.outdir)
    spdx, cdx_path = out / SPDX, out / CDX
    for f in (spdx, cdx_path):
        if not f.is_file():
            raise SeedfwError(f"no SBOM yet (run 'invoke build --board {ctx.board.name}')", f)
    from .. import reading
    sbom_doc = reading.loads_json_strict(reading.read_bytes(cdx_path, "json"), cdx_path)
    comps = {}
    for c in sbom_doc.get("components", []):
        comps.setdefault(c.get("name"), c)
    ignored = {name: set(next((p["value"] for p in c.get("properties", [])
                               if p.get("name") == "buildroot:ignore_cves"), "").split())
               for name, c in comps.items()}
    triage_file = Path(triage_file) if triage_file else vex.path_for(ctx.board)
    if not triage_file.is_file() and triage_file != vex.path_for(ctx.board):
        raise SeedfwError("no such triage file", triage_file, "--vex")
    triage = vex.load(triage_file)
    rows = run_matcher(spdx, Path(db), ctx.build_dir("cve"))
    matches, negatives = [], []
    for r in rows:
        c = comps.get(r["component"])
        r["ref"] = c["bom-ref"] if c else r["component"]
        if r["verdict"] in ("affected", "unknown", "under_investigation"):
            r["decision"] = vex.decide(r, triage, ignored)
            matches.append(r)
        else:
            negatives.append(r)
    used = {(m["decision"]["triage"]) for m in matches}
    stale = [f"{t.source}: {t.cve} matches nothing in this SBOM" for t in triage
             if t.source not in used]
    counts = {s: 0 for s in (*vex.STATUSES, "untriaged")}
    for m in matches:
        counts[m["decision"]["status"]] += 1
    # The database by its path in the checkout, else by its directory name: cve.json is an
    # output, and an output names no absolute path of this machine.
    shown = vex._shown(Path(db))
    note = fixture_note(Path(db))
    doc = {"database": shown if not Path(shown).is_absolute() else Path(db).name,
           **({"database_note": note} if note else {}),
           "matcher": f"sbom-cve-check {vex._matcher_version()}",
           "sbom": sbom_doc["serialNumber"], "counts": counts,
           "matches": sorted(matches, key=lambda m: (m["cve"], m["ref"])),
           "not_matched": sorted(negatives, key=lambda m: (m["cve"], m["ref"])),
           "stale_triage": stale}
    util.write_text(out / VEX, json.dumps(vex.document(matches, sbom_doc, doc["database"], note),
                                          indent=1, sort_keys=True) + "\n")
    util.write_json(out / RESULT, doc)
    say(f"{len(matches)} match(es) in {len(rows)} CVE record(s) checked against "
        f"{len(sbom_doc.get('components', []))} components: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        + f"; VEX {out / VEX}" + (f" ({note})" if note else ""))
    for m in doc["matches"]:
        if m["decision"]["status"] == "untriaged":
            say(f"  UNTRIAGED {m['cve']} {m['component']} {m['version']} ({m['record']}): add "
                f"it to {vex._shown(triage_file)}")
    for line in stale:
        say(f"  stale triage: {line}")
    return doc
