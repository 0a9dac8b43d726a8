"""CycloneDX 1.6 from the component list, through cyclonedx-python-lib, checked by its own
offline JSON-schema validator before it is written.

The library serialises everything but `compositions` (it has no model for them): the
dependency completeness BSI TR-03183-2 asks for is added to the library's JSON as one
`compositions` list (aggregate "complete" for components whose dependencies are all listed,
"incomplete" for the rest) and the result is validated as a whole, so a mistake there fails the
same validator. Reproducible: the timestamp is SOURCE_DATE_EPOCH, the serial number a uuid5 of
the document without it, components and dependencies are sorted by ref.
"""

from __future__ import annotations

import datetime
import json
import uuid

from .. import __version__, util
from ..errors import SeedfwError
from .collect import Inventory
from .model import Component

NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-00000000013d")


def _component(c: Component):
    from cyclonedx.model import ExternalReference, ExternalReferenceType, HashType, Property, XsUri
    from cyclonedx.model import HashAlgorithm
    from cyclonedx.model.component import (Component as CdxComponent, ComponentScope,
                                           ComponentType, Diff, Patch, PatchClassification,
                                           Pedigree)
    from cyclonedx.model.contact import OrganizationalEntity
    from cyclonedx.model.license import LicenseAcknowledgement, LicenseExpression
    from packageurl import PackageURL

    algs = {"SHA-256": HashAlgorithm.SHA_256, "SHA-512": HashAlgorithm.SHA_512}
    props = dict(c.properties)
    if c.filename:
        props["bsi:component:filename"] = c.filename
    props["seedfw:scope"] = c.scope
    if c.declared and c.declared != c.licence:
        props["seedfw:declared-licence"] = c.declared
    props["seedfw:dependencies"] = "complete" if c.complete else "incomplete"
    pedigree = None
    if c.patches:
        pedigree = Pedigree(patches=[Patch(type=PatchClassification.UNOFFICIAL if
                                           c.patch_origin == "seedfw" else
                                           PatchClassification.BACKPORT,
                                           diff=Diff(url=XsUri(f"urn:seedfw:patch:"
                                                               f"{c.patch_origin}:{p}")))
                                     for p in c.patches],
                            notes=f"{len(c.patches)} patches from {c.patch_origin}, in order")
    refs = []
    for src in c.sources[1:]:
        # Further pinned files (Debian's packaging, rkbin's LICENSE): named, not hashed twice.
        refs.append(ExternalReference(type=ExternalReferenceType.DISTRIBUTION,
                                      url=XsUri(f"urn:seedfw:file:{src.name}")))
    return CdxComponent(
        name=c.name, version=c.version, type=ComponentType(c.kind), bom_ref=c.ref,
        supplier=OrganizationalEntity(name=c.supplier) if c.supplier else None,
        description=c.description or None,
        scope=ComponentScope.REQUIRED if c.scope == "required" else ComponentScope.EXCLUDED,
        hashes=[HashType(alg=algs[a], content=h) for a, h in sorted(c.hashes.items())],
        licenses=([LicenseExpression(c.licence)] if not c.declared or c.declared == c.licence
                  else [LicenseExpression(c.licence,
                                          acknowledgement=LicenseAcknowledgement.CONCLUDED)]),
        purl=PackageURL.from_string(c.purl) if c.purl else None, cpe=c.cpe or None,
        pedigree=pedigree, external_references=refs,
        properties=[Property(name=k, value=v) for k, v in sorted(props.items()) if v])


def document(inv: Inventory, board: str) -> dict:
    """The CycloneDX 1.6 document (a dict), validated."""
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.contact import OrganizationalEntity
    from cyclonedx.model.lifecycle import LifecyclePhase, PredefinedLifecycle
    from cyclonedx.model.tool import Tool, ToolRepository
    from cyclonedx.output.json import JsonV1Dot6

    when = datetime.datetime.fromtimestamp(util.source_date_epoch(), datetime.timezone.utc)
    tools = ToolRepository()
    tools.tools.add(Tool(vendor="seedfw", name="seedfw sbom", version=__version__))
    root = _component(inv.root)
    meta = BomMetaData(tools=tools, component=root, timestamp=when,
                       supplier=OrganizationalEntity(name="seedfw"),
                       manufacturer=OrganizationalEntity(name="seedfw"),
                       lifecycles=[PredefinedLifecycle(LifecyclePhase.BUILD)])
    comps = {c.ref: _component(c) for c in sorted(inv.components, key=lambda c: c.ref)}
    bom = Bom(metadata=meta, components=list(comps.values()),
              serial_number=uuid.UUID(int=0))
    known = {inv.root.ref: root, **comps}
    for c in [inv.root, *inv.components]:
        deps = [known[d] for d in c.depends if d in known]
        bom.register_dependency(known[c.ref], deps)
    doc = json.loads(JsonV1Dot6(bom).output_as_string())
    doc["compositions"] = compositions(inv)
    doc.pop("serialNumber", None)
    body = json.dumps(doc, sort_keys=True).encode()
    doc["serialNumber"] = f"urn:uuid:{uuid.uuid5(NAMESPACE, util.sha256_bytes(body))}"
    validate(doc)
    return doc


def compositions(inv: Inventory) -> list[dict]:
    groups: dict[str, list[str]] = {"complete": [], "incomplete": []}
    for c in [inv.root, *inv.components]:
        groups["complete" if c.complete else "incomplete"].append(c.ref)
    return [{"aggregate": agg, "dependencies": sorted(refs)}
            for agg, refs in groups.items() if refs]


def validate(doc: dict) -> None:
    """cyclonedx-python-lib's CycloneDX 1.6 JSON validator (offline: the schemas ship with it);
    the first error is one SeedfwError line."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    err = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(doc))
    if err is not None:
        raise SeedfwError(f"CycloneDX 1.6 validation failed: {str(err)[:300]}",
                          "sbom.cdx.json", "schema")
