"""The report's `vulnerabilities` section (reference page: the class docstring)."""

from __future__ import annotations

from markupsafe import Markup

from .. import inputs as report_inputs
from ..format import html_table, table
from ..safe import Md, html, join, mdf
from .base import Inputs, Section

STATUSES = ("affected", "under_investigation", "untriaged", "fixed", "not_affected")


class Vulnerabilities(Section):
    """The build's SBOM and what offline vulnerability matching found in it.

    Reads <out>/sbom/ (seedfw.sbom): the SBOM files every build writes (sbom.cdx.json,
    sbom.spdx.json; each file's bytes and sha256), the component counts by type and scope with
    purl / CPE / SHA-512 coverage in percent (computed from sbom.cdx.json), and — when
    `invoke cve` ran — cve.json: the database and matcher, counts per status (affected,
    under_investigation, untriaged, fixed, not_affected), and each match with its component,
    version, the database record it came from and its triage (board/<b>/vex.yaml line, or
    Buildroot's ignore list). A match without triage is called out in the notes, as is a
    triage entry that matches nothing. The VEX itself is sbom/vex.cdx.json (listed with the
    files). Absent when the build wrote no SBOM.
    """

    name = "vulnerabilities"

    def data(self, inputs: Inputs) -> dict | None:
        summary, _note = report_inputs.read_sbom(inputs.outdir)
        if summary is None:
            return None
        cve = summary["cve"]
        out = {"available": True, "files": summary["files"], "coverage": summary["coverage"],
               "matched": cve is not None}
        if cve is None:
            out["note"] = "no vulnerability matching yet (invoke cve --board B --db DIR)"
            return out
        # a fixture database says so wherever its name is shown (seedfw.sbom.cve.fixture_note)
        db = cve["database"] + (f" ({cve['database_note']})" if cve.get("database_note") else "")
        out.update(database=db, matcher=cve["matcher"], counts=cve["counts"],
                   matches=[{"cve": m["cve"], "component": m["component"],
                             "version": m["version"], "status": m["decision"]["status"],
                             "record": m["record"], "triage": m["decision"].get("triage"),
                             "detail": m["decision"].get("detail")}
                            for m in cve["matches"]],
                   stale_triage=cve.get("stale_triage") or [])
        return out

    def notes(self, data: dict) -> list[str]:
        out = [f"vulnerabilities: UNTRIAGED {m['cve']} in {m['component']} {m['version']} "
               f"({m['record']}): no triage in the board's vex.yaml"
               for m in data.get("matches", []) if m["status"] == "untriaged"]
        return out + [f"vulnerabilities: stale triage: {s}" for s in data.get("stale_triage", [])]

    @staticmethod
    def _tables(data):
        cov = [[k, str(r["count"]), f"{r['purl_percent']}", f"{r['cpe_percent']}",
                f"{r['sha512_percent']}"] for k, r in data["coverage"].items()]
        files = [[f["path"], f"{f['bytes']:,}", f["sha256"][:16]] for f in data["files"]]
        matches = [[m["cve"], m["component"], m["version"], m["status"], m["record"],
                    m["triage"] or "—"] for m in data.get("matches", [])]
        return (["components", "count", "purl %", "CPE %", "SHA-512 %"], cov), \
               (["file", "bytes", "sha256"], files), \
               (["CVE", "component", "version", "status", "record", "triage"], matches)

    def markdown(self, data: dict) -> list[str]:
        cov, files, matches = self._tables(data)
        lines = [Md("## SBOM and vulnerabilities"), Md("")]
        lines += table(*files) + table(*cov)
        if not data["matched"]:
            return lines + [mdf("{}", data["note"]), Md("")]
        counts = ", ".join(f"{data['counts'].get(s, 0)} {s}" for s in STATUSES)
        lines += [mdf("Matched offline by {} against {}: {}.", data["matcher"],
                      data["database"], counts), Md("")]
        if matches[1]:
            lines += table(*matches)
        return lines

    def html(self, data: dict) -> Markup:
        cov, files, matches = self._tables(data)
        parts = [html("<h2>SBOM and vulnerabilities</h2>"), html_table(*files), html_table(*cov)]
        if not data["matched"]:
            parts.append(html("<p>{{ n }}</p>", n=data["note"]))
            return join(parts)
        counts = ", ".join(f"{data['counts'].get(s, 0)} {s}" for s in STATUSES)
        parts.append(html("<p>Matched offline by {{ m }} against {{ d }}: {{ c }}.</p>",
                          m=data["matcher"], d=data["database"], c=counts))
        if matches[1]:
            parts.append(html_table(*matches))
        return join(parts)
