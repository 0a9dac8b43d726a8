"""A board's vulnerability triage (board/<b>/vex.yaml) and the CycloneDX VEX document that
combines it with the matcher's findings.

vex.yaml is a board file like dvfs.yaml: loaded with line numbers, validated by a JSON schema,
the first problem one error line naming file:line and field (seedfw.yamlfile).

    triage:
      - cve: CVE-2024-58251
        component: busybox            # optional: the SBOM component name; default every match
        status: not_affected          # not_affected | affected | fixed | under_investigation
        justification: code_not_reachable   # required for not_affected (CycloneDX's list)
        detail: why, in a sentence
        who: who decided (name or e-mail)
        when: 2026-12-02              # the date of the decision

Statuses are OpenVEX/CSAF's words; the CycloneDX analysis states they become are
STATE (not_affected, exploitable, resolved, in_triage). Where a board says nothing, Buildroot's own
triage applies: a package's <PKG>_IGNORE_CVES (show-info `ignore_cves`, carried by the
component as the property buildroot:ignore_cves) lists the CVEs its patches fix, so such a
match is "fixed" by "Buildroot". A match neither triages is `untriaged`: in the VEX it is
in_triage, and the report calls it out.

The VEX is a separate CycloneDX 1.6 document (BSI TR-03183-2: no vulnerability data inside the
SBOM); it names the SBOM's components by BOM-Link (urn:cdx:<serial>/<version>#<bom-ref>).
Written through cyclonedx-python-lib and checked by its validator, like the SBOM.
"""

from __future__ import annotations

import datetime
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from .. import util
from ..errors import SeedfwError

STATUSES = ("not_affected", "affected", "fixed", "under_investigation")
STATE = {"not_affected": "not_affected", "affected": "exploitable", "fixed": "resolved",
         "under_investigation": "in_triage", "untriaged": "in_triage"}
JUSTIFICATIONS = ("code_not_present", "code_not_reachable", "requires_configuration",
                  "requires_dependency", "requires_environment", "protected_by_compiler",
                  "protected_at_runtime", "protected_at_perimeter",
                  "protected_by_mitigating_control")

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["triage"],
    "properties": {"triage": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["cve", "status", "who", "when"],
        "properties": {
            "cve": {"type": "string", "pattern": "^CVE-[0-9]{4}-[0-9]{4,}$"},
            "component": {"type": "string", "minLength": 1},
            "status": {"enum": list(STATUSES)},
            "justification": {"enum": list(JUSTIFICATIONS)},
            "detail": {"type": "string", "minLength": 1},
            "who": {"type": "string", "minLength": 1},
            "when": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        },
        "if": {"properties": {"status": {"const": "not_affected"}}},
        "then": {"required": ["justification"]},
    }}},
}


@dataclass(frozen=True)
class Triage:
    cve: str
    component: str | None
    status: str
    justification: str | None
    detail: str
    who: str
    when: str
    source: str                 # "board/<b>/vex.yaml:<line>" or "Buildroot <PKG>_IGNORE_CVES"


def path_for(board) -> Path:
    return Path(board.dir) / "vex.yaml"


def load(path: Path) -> list[Triage]:
    """The triage of one board file ([] when the board has none)."""
    from .. import yamlfile
    if not path.exists():
        return []
    data, lines = yamlfile.load(path)
    if not isinstance(data, dict):
        raise SeedfwError("expected a mapping with a 'triage' list", path, "line 1")
    # YAML reads an unquoted 2026-12-02 as a date: the schema checks the ISO text of it.
    entries = data.get("triage") if isinstance(data.get("triage"), list) else []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("when"), datetime.date):
            entry["when"] = entry["when"].isoformat()
    yamlfile.validate(data, SCHEMA, path, lines)
    out, seen = [], {}
    rel = _shown(path)
    for i, e in enumerate(data["triage"]):
        key = (e["cve"], e.get("component"))
        line = lines.get(("triage", i))
        if key in seen:
            raise SeedfwError(f"{e['cve']}" + (f" ({e['component']})" if e.get("component")
                                               else "") + f" is triaged twice (first at line "
                              f"{seen[key]})", path, f"line {line}")
        seen[key] = line
        out.append(Triage(e["cve"], e.get("component"), e["status"], e.get("justification"),
                          e.get("detail", ""), e["who"], e["when"], f"{rel}:{line}"))
    return out


def _shown(path: Path) -> str:
    from ..paths import ROOT
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def decide(match: dict, triage: list[Triage], ignored: dict[str, set]) -> dict:
    """The status of one match {cve, component, ...}: the board's triage for this CVE and
    component (or for the CVE alone), else Buildroot's ignore list, else untriaged."""
    for t in triage:
        if t.cve == match["cve"] and t.component in (None, match["component"]):
            return {"status": t.status, "justification": t.justification, "detail": t.detail,
                    "who": t.who, "when": t.when, "triage": t.source}
    if match["cve"] in ignored.get(match["component"], ()):
        return {"status": "fixed", "justification": None,
                "detail": f"listed in Buildroot's {match['component'].upper()}_IGNORE_CVES "
                          "(a patch Buildroot applies fixes it)",
                "who": "Buildroot", "when": None, "triage": "Buildroot ignore_cves"}
    return {"status": "untriaged", "justification": None,
            "detail": "no triage in the board's vex.yaml", "who": None, "when": None,
            "triage": None}


def document(matches: list[dict], sbom_doc: dict, database: str = "",
             note: str | None = None) -> dict:
    """The CycloneDX 1.6 VEX of the matches (each with its decision), validated; `database`
    and its `note` (a fixture database says so) are metadata properties."""
    from cyclonedx.model import XsUri
    from cyclonedx.model import Property
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.impact_analysis import (ImpactAnalysisJustification,
                                                 ImpactAnalysisState)
    from cyclonedx.model.tool import Tool, ToolRepository
    from cyclonedx.model.vulnerability import (BomTarget, Vulnerability, VulnerabilityAnalysis,
                                               VulnerabilitySource)
    from cyclonedx.output.json import JsonV1Dot6
    from .. import __version__
    from . import cdx

    serial = sbom_doc["serialNumber"]
    when = datetime.datetime.fromtimestamp(util.source_date_epoch(), datetime.timezone.utc)
    tools = ToolRepository()
    tools.tools.add(Tool(vendor="seedfw", name="seedfw cve", version=__version__))
    tools.tools.add(Tool(vendor="Bootlin", name="sbom-cve-check", version=_matcher_version()))
    vulns = []
    for m in sorted(matches, key=lambda m: (m["cve"], m["ref"])):
        d = m["decision"]
        analysis = VulnerabilityAnalysis(
            state=ImpactAnalysisState(STATE[d["status"]]),
            justification=ImpactAnalysisJustification(d["justification"])
            if d["justification"] else None,
            detail="; ".join(x for x in (d["detail"], f"by {d['who']}" if d["who"] else "",
                                         f"on {d['when']}" if d["when"] else "",
                                         f"triage: {d['triage']}" if d["triage"] else "") if x))
        vulns.append(Vulnerability(
            bom_ref=f"{m['cve']}@{m['ref']}", id=m["cve"],
            # the record's own publisher (seedfw.sbom.cve.SOURCES), NVD or the CVE Program
            source=VulnerabilitySource(name=m["source"]["name"], url=XsUri(m["source"]["url"])),
            description=m.get("description") or None,
            analysis=analysis,
            affects=[BomTarget(ref=f"{serial.replace('urn:uuid:', 'urn:cdx:')}/1#{m['ref']}")]))
    props = [Property(name=k, value=v) for k, v in (("seedfw:database", database),
                                                      ("seedfw:database-note", note)) if v]
    bom = Bom(metadata=BomMetaData(tools=tools, timestamp=when, properties=props),
              vulnerabilities=vulns,
              serial_number=uuid.UUID(int=0))
    doc = json.loads(JsonV1Dot6(bom).output_as_string())
    doc.pop("serialNumber", None)
    body = json.dumps(doc, sort_keys=True).encode()
    doc["serialNumber"] = f"urn:uuid:{uuid.uuid5(cdx.NAMESPACE, util.sha256_bytes(body))}"
    cdx.validate(doc)
    return doc


def _matcher_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("sbom-cve-check")
    except PackageNotFoundError:
        return "unknown"
