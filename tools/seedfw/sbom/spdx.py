"""SPDX 3.0.1 from the component list, through the SPDX project's Python bindings
(spdx-python-model), in the shape BSI TR-03183-2 and the matcher read:

    SpdxDocument ─rootElement→ software_Sbom (sbomType build) ─rootElement→ the firmware
    software_Package per component: version, purl, CPE 2.3 (externalIdentifier cpe23),
        primaryPurpose install (what sbom-cve-check matches), additionalPurpose its kind,
        originatedBy / suppliedBy an Organization with its contact URL (BSI "creator")
    software_File per component: the file it is delivered as (source archive, blob, artifact),
        sha256 + SHA-512, additionalPurpose container (structured) or firmware (unstructured)
        ─ linked by hasDistributionArtifact
    simplelicensing_LicenseExpression ─ hasConcludedLicense / hasDeclaredLicense
    dependsOn per component with completeness complete|incomplete (a leaf has none: see
        below); build-scope components are reached by a LifecycleScopedRelationship with
        scope build.

Reproducible: created = SOURCE_DATE_EPOCH, ids derive from the CycloneDX serial (itself a uuid5
of the content), the serialiser writes the graph sorted by id.
"""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

from .. import __version__, util
from .collect import Inventory
from .model import Component

STRUCTURED = (".tar", ".tar.gz", ".tar.xz", ".tar.bz2", ".tgz", ".deb", ".whl", ".zip", ".itb",
              ".img", ".pkg", ".cpio", ".ext4", ".json", ".its", ".conf", ".ini")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def document(inv: Inventory, board: str, serial: str) -> "object":
    """The SHACLObjectSet of the SPDX 3.0.1 document."""
    from spdx_python_model import v3_0_1 as spdx

    base = f"https://spdx.org/spdxdocs/seedfw-{_slug(board)}-{serial.rsplit(':', 1)[-1]}"
    when = datetime.datetime.fromtimestamp(util.source_date_epoch(), datetime.timezone.utc)
    objs = spdx.SHACLObjectSet()
    ci = spdx.CreationInfo(specVersion="3.0.1", created=when)
    ci._id = "_:creationinfo"
    orgs: dict[str, object] = {}

    def org(name: str, url: str):
        if name not in orgs:
            ids = []
            if url.startswith(("https://", "http://")):
                ids.append(spdx.ExternalIdentifier(
                    externalIdentifierType=spdx.ExternalIdentifierType.urlScheme, identifier=url))
            elif "@" in url:
                ids.append(spdx.ExternalIdentifier(
                    externalIdentifierType=spdx.ExternalIdentifierType.email, identifier=url))
            orgs[name] = spdx.Organization(spdxId=f"{base}/agent/{_slug(name)}", name=name,
                                           creationInfo=ci, externalIdentifier=ids)
        return orgs[name]

    seedfw = org("seedfw", os.environ.get("SEEDFW_SBOM_CREATOR", ""))
    tool = spdx.Tool(spdxId=f"{base}/tool/seedfw", name=f"seedfw {__version__}", creationInfo=ci)
    ci.createdBy = [seedfw]
    ci.createdUsing = [tool]
    hashes = {"SHA-256": spdx.HashAlgorithm.sha256, "SHA-512": spdx.HashAlgorithm.sha512}
    purposes = {"application": "application", "firmware": "firmware", "library": "library",
                "operating-system": "operatingSystem", "file": "file",
                "machine-learning-model": "model", "data": "data", "container": "container",
                "device": "device"}
    elements, pkgs = [seedfw, tool], {}
    for c in [inv.root, *sorted(inv.components, key=lambda c: c.ref)]:
        pid = f"{base}/package/{_slug(c.ref)}"
        ext = [spdx.ExternalIdentifier(externalIdentifierType=spdx.ExternalIdentifierType.cpe23,
                                       identifier=c.cpe)] if c.cpe else []
        who = org(c.supplier, c.supplier_url) if c.supplier else None
        p = spdx.software_Package(
            spdxId=pid, name=c.name, creationInfo=ci, software_packageVersion=c.version,
            software_packageUrl=c.purl or None, externalIdentifier=ext,
            software_primaryPurpose=(spdx.software_SoftwarePurpose.firmware if c is inv.root
                                     else spdx.software_SoftwarePurpose.install),
            software_additionalPurpose=[getattr(spdx.software_SoftwarePurpose,
                                                purposes[c.kind])],
            description=c.description or None, comment=_comment(c),
            originatedBy=[who] if who else [], **({"suppliedBy": who} if who else {}),
            verifiedUsing=[spdx.Hash(algorithm=hashes[a], hashValue=h)
                           for a, h in sorted(c.hashes.items())])
        pkgs[c.ref] = p
        elements.append(p)
        if c.filename or c.hashes:
            name = c.filename or c.name
            f = spdx.software_File(
                spdxId=f"{pid}/file", name=name, creationInfo=ci,
                software_primaryPurpose=(spdx.software_SoftwarePurpose.source if c.sources and
                                         c.kind != "file" and "rkbin" not in c.ref else
                                         getattr(spdx.software_SoftwarePurpose,
                                                 purposes[c.kind])),
                software_additionalPurpose=[spdx.software_SoftwarePurpose.container
                                            if name.endswith(STRUCTURED) else
                                            spdx.software_SoftwarePurpose.firmware],
                verifiedUsing=[spdx.Hash(algorithm=hashes[a], hashValue=h)
                               for a, h in sorted(c.hashes.items())])
            elements += [f, _rel(spdx, base, ci, p, "hasDistributionArtifact", [f])]
        lic = spdx.simplelicensing_LicenseExpression(
            spdxId=f"{pid}/licence", creationInfo=ci, simplelicensing_licenseExpression=c.licence)
        declared = lic
        if c.declared and c.declared != c.licence:
            declared = spdx.simplelicensing_LicenseExpression(
                spdxId=f"{pid}/declared-licence", creationInfo=ci,
                simplelicensing_licenseExpression=c.declared)
            elements.append(declared)
        elements += [lic, _rel(spdx, base, ci, p, "hasConcludedLicense", [lic]),
                     _rel(spdx, base, ci, p, "hasDeclaredLicense", [declared])]
    files = {e.spdxId: e for e in elements if isinstance(e, spdx.software_File)}
    for c in [inv.root, *inv.components]:
        shipped = [files[f"{base}/package/{_slug(r)}/file"] for r in c.delivered_as
                   if f"{base}/package/{_slug(r)}/file" in files]
        if shipped:
            elements.append(_rel(spdx, base, ci, pkgs[c.ref], "hasDistributionArtifact",
                                 shipped, tag="delivered"))
    scope = {c.ref: c.scope for c in inv.components}
    for c in [inv.root, *inv.components]:
        run = [pkgs[d] for d in c.depends if d in pkgs and scope.get(d) != "build"]
        build = [pkgs[d] for d in c.depends if d in pkgs and scope.get(d) == "build"]
        done = (spdx.RelationshipCompleteness.complete if c.complete
                else spdx.RelationshipCompleteness.incomplete)
        if run:
            # A leaf has no dependsOn: SPDX's NoneElement would say "none" but the BSI checker
            # reads it as a dangling pointer; CycloneDX's compositions state the leaves complete.
            elements.append(_rel(spdx, base, ci, pkgs[c.ref], "dependsOn", run, done,
                                 tag="runtime" if build else ""))
        if build:
            elements.append(_rel(spdx, base, ci, pkgs[c.ref], "dependsOn", build, done,
                                 scope=spdx.LifecycleScopeType.build, tag="build"))
    sbom = spdx.software_Sbom(spdxId=f"{base}/sbom", name=f"seedfw-{board} SBOM",
                              creationInfo=ci, rootElement=[pkgs[inv.root.ref]],
                              element=list(elements),
                              software_sbomType=[spdx.software_SbomType.build])
    doc = spdx.SpdxDocument(spdxId=f"{base}/document", name=f"seedfw-{board}", creationInfo=ci,
                            rootElement=[sbom], element=[sbom, *elements],
                            profileConformance=[spdx.ProfileIdentifierType.core,
                                                spdx.ProfileIdentifierType.software,
                                                spdx.ProfileIdentifierType.simpleLicensing])
    for o in [ci, doc, sbom, *elements]:
        objs.add(o)
    return objs


def _comment(c: Component) -> str | None:
    bits = [f"scope: {c.scope}"]
    if c.patches:
        bits.append(f"patched ({c.patch_origin}): " + ", ".join(c.patches))
    bits += [f"{k}: {v}" for k, v in sorted(c.properties.items()) if v]
    return "; ".join(bits)


def _rel(spdx, base, ci, frm, kind: str, to: list, completeness=None, scope=None, tag=""):
    rid = f"{frm.spdxId}/{kind}" + (f"-{tag}" if tag else "")
    fields = dict(spdxId=rid, creationInfo=ci, from_=frm, to=to,
                  relationshipType=getattr(spdx.RelationshipType, kind))
    if completeness is not None:
        fields["completeness"] = completeness
    if scope is not None:
        return spdx.LifecycleScopedRelationship(scope=scope, **fields)
    return spdx.Relationship(**fields)


def write(objs, path: Path) -> Path:
    from spdx_python_model import v3_0_1 as spdx
    with util.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            spdx.JSONLDSerializer().write(objs, f, indent=1)
    return path


def load(path: Path):
    """The document back through the bindings (a SHACLObjectSet): what the tests and `invoke
    cve` check it with."""
    from spdx_python_model import v3_0_1 as spdx
    from .. import reading
    objs = spdx.SHACLObjectSet()
    data = reading.read_bytes(path, "json")
    import io
    spdx.JSONLDDeserializer().read(io.BytesIO(data), objs)
    return objs
