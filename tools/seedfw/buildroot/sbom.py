"""Buildroot's packages as SBOM components, from Buildroot's own `make show-info` (never guessed);
a module of the Buildroot library (only the Buildroot part calls it: seedfw.parts.buildroot).

show-info prints, per package of the configuration, its type (target/host/rootfs), version,
licences, source archive, patches, dependencies and `cpe-id` (what Buildroot's
utils/generate-cyclonedx reads too). It is run with the same tree, O= and environment as the
build (seedfw.buildroot.make), and its JSON is kept in <out>/build/sbom/show-info.json keyed by
the sha256 of Buildroot's .config and the tree's version: the ~20 s make is paid once per
configuration, not per build. Its output comes back through the door (reading.loads_json_strict).

Kept out: `virtual` packages (toolchain, skeleton: they only select a provider, which is listed)
and `rootfs` entries (filesystem steps; their host tools are listed). A dependency on a virtual
package is followed to what provides it.

A package's source archive is hashed where Buildroot downloaded it (BR2_DL_DIR/<dl_dir>/<file>),
or, for a host package built from one of seedfw's override dirs, the override's pinned file.
Packages without an archive of their own (skeleton-init-*, initscripts, host-fakedate...) are
files of the Buildroot tree: their version is Buildroot's and their hashes the pinned Buildroot
tarball's. seedfw.sbom.model.licence_expression turns Buildroot's licence strings ("GPL-2.0+
(programs), LGPL-2.1+ (libraries)") into SPDX expressions; the original string stays in a
property, and the legal-info cross-check (seedfw.sbom.legal) compares both.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import util
from ..errors import SeedfwError
from ..sbom.model import Component, licence_expression, purl

INFO = "show-info.json"


def show_info(ctx, brout: Path) -> dict:
    """Buildroot's show-info for the Buildroot output `brout` (O=) of this build, cached per
    .config."""
    from .. import reading
    from . import VERSION, make, tree

    config = brout / ".config"
    cache = ctx.build_dir("sbom") / INFO
    if not config.is_file():
        # A rootfs restored from the artifact store: buildroot.build installed its show-info
        # beside it (the same step, so the same configuration), and there is no output to ask.
        if cache.is_file():
            doc = reading.loads_json_strict(reading.read_bytes(cache, "json"), cache)
            if isinstance(doc, dict) and isinstance(doc.get("packages"), dict):
                return doc["packages"]
        raise SeedfwError("no Buildroot output yet: its SBOM components need 'invoke build'",
                          brout)
    key = util.sha256_bytes(config.read_bytes() + VERSION.encode() + b"sites")
    if cache.is_file():
        doc = reading.loads_json_strict(reading.read_bytes(cache, "json"), cache)
        if isinstance(doc, dict) and doc.get("key") == key:
            return doc["packages"]
    root = tree.ensure(progress=lambda m: None)
    text = _make_show_info(root, brout, make.environment())
    # make -s still lets a sub-make announce its directory on stdout: the JSON is the {...}.
    sites = dict(m.groups() for m in re.finditer(r"^([A-Z0-9_]+)_SITE=(\S*)$", text, re.M))
    text = re.sub(r"^[A-Z0-9_]+=.*$", "", text, flags=re.M)
    start, end = text.find("{"), text.rfind("}")
    if start < 0:
        raise SeedfwError("Buildroot's show-info printed no JSON", brout, "show-info")
    packages = reading.loads_json_strict(text[start:end + 1], brout, "show-info")
    if not isinstance(packages, dict):
        raise SeedfwError("Buildroot's show-info is not a JSON object", brout, "show-info")
    for name, pkg in packages.items():
        site = sites.get(name.upper().replace("-", "_").replace(".", "_"))
        if isinstance(pkg, dict) and site:
            pkg["seedfw_site"] = site
    cache.parent.mkdir(parents=True, exist_ok=True)
    util.write_json(cache, {"key": key, "packages": packages})
    return packages


def _make_show_info(root: Path, brout: Path, env: dict) -> str:
    import os
    import subprocess
    # printvars in the same make: each package's upstream <PKG>_SITE (show-info has only the
    # download URIs, which are seedfw's offline mirror), one parse of the .mk files for both.
    proc = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(root), f"O={brout}",
                           "show-info", "printvars", "VARS=%_SITE"], env=dict(os.environ, **env),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SeedfwError(f"Buildroot's make show-info failed: {tail}", brout, "show-info")
    return proc.stdout


def _archive(pkg: dict, overrides: dict) -> Path | None:
    from . import mirror
    ov = overrides.get(pkg["name"].removeprefix("host-")) if pkg["type"] == "host" else None
    if ov is not None:
        from .. import sources
        return sources.fetch(ov.source(), progress=lambda m: None)[ov.file.name]
    for dl in pkg.get("downloads") or []:
        path = mirror.download_dir() / (pkg.get("dl_dir") or "") / dl.get("source", "")
        if path.is_file():
            return path
    return None


def components(packages: dict, tarball: Path | None = None) -> tuple[list[Component], list[str]]:
    """(components, notes): one Component per real package of show-info; `tarball` is the
    pinned Buildroot tree's archive (the source of the packages without one of their own).
    notes names every package whose archive is absent (its component then has no hashes)."""
    from . import VERSION, mirror
    overrides = {ov.package: ov for ov in mirror.OVERRIDES}
    real = {n: p for n, p in packages.items()
            if isinstance(p, dict) and not p.get("virtual") and p.get("type") in ("target", "host")}

    def resolve(dep, seen=()):
        if dep in real:
            return [dep]
        p = packages.get(dep)
        if not isinstance(p, dict) or dep in seen:
            return []
        return [d for x in p.get("dependencies") or [] for d in resolve(x, seen + (dep,))]

    comps, notes = [], []
    for name in sorted(real):
        p = real[name]
        ov = overrides.get(name.removeprefix("host-")) if p["type"] == "host" else None
        version = ov.version if ov else (p.get("version") or "")
        own = bool(p.get("downloads"))
        src = _archive(p, overrides) if own else tarball
        local = p.get("version") == "local"       # a package of seedfw's own (the agent)
        if local:
            from .. import __version__
            version = __version__
            src = None
        version = version or VERSION
        c = Component(
            ref=f"buildroot:{name}", name=name, version=version,
            kind="application" if p["type"] == "target" else "library",
            licence=licence_expression(p.get("licenses")),
            supplier="Buildroot" if not own else f"{name.removeprefix('host-')} upstream",
            supplier_url="https://buildroot.org/" if not own else _site_url(p),
            purl=purl("generic", name, version, namespace="buildroot"),
            cpe=_cpe(p.get("cpe-id"), ov),
            scope="required" if p["type"] == "target" else "build",
            description=f"Buildroot {p['type']} package"
                        + ("" if own else " (files of the Buildroot tree)"),
            sources=[src] if src else [],
            patches=[Path(x).name for x in p.get("patches") or []],
            patch_origin="Buildroot" if p.get("patches") else "",
            depends=sorted({f"buildroot:{d}" for x in p.get("dependencies") or []
                            for d in resolve(x) if d != name}),
            properties={"buildroot:license": p.get("licenses") or "",
                        "buildroot:version": p.get("version") or "",
                        "buildroot:type": p["type"]})
        if c.licence == "NOASSERTION":
            # Buildroot's legal-info says "unknown" for the files of its own tree (skeleton,
            # init scripts): concluded under Buildroot's COPYING; declared stays NOASSERTION.
            from ..sbom.model import OWN_LICENCE
            c.declared = "NOASSERTION"
            c.licence = OWN_LICENCE if local else "GPL-2.0-or-later"
        if local:
            c.supplier, c.supplier_url = "seedfw", ""
            c.description = "seedfw's own Buildroot package (firmware/" + name.removeprefix(
                "seedfw-") + ", built from its local site)"
            c.purl = purl("generic", name, version, namespace="seedfw")
        if ov is not None:
            c.properties["seedfw:override"] = (f"{ov.file.name} ({ov.origin}); Buildroot pins "
                                               f"{ov.pinned}")
        if p.get("ignore_cves"):
            # Buildroot's own triage: CVEs its patches fix (package/*.mk <PKG>_IGNORE_CVES);
            # seedfw.sbom.vex reads it back as "fixed" for a match.
            c.properties["buildroot:ignore_cves"] = " ".join(p["ignore_cves"])
        if own and src is None and not local:
            notes.append(f"{name}: source archive "
                         f"{(p['downloads'][0] or {}).get('source')} not in the download dir")
        comps.append(c)
    return comps, notes


def _cpe(cpe_id: str | None, ov) -> str | None:
    """Buildroot's cpe-id, with the version actually built for an overridden package."""
    if not cpe_id:
        return None
    if ov is None:
        return cpe_id
    fields = cpe_id.split(":")
    if len(fields) > 5:
        fields[5] = ov.version
    return ":".join(fields)


def _site_url(pkg: dict) -> str:
    """The package's upstream site as a URL: `$(BR2_GNU_MIRROR)/m4` with the mirror unset reads
    "/m4" (a GNU package: its home page), anything not http(s) is no contact."""
    site = pkg.get("seedfw_site") or ""
    if site.startswith(("https://", "http://")):
        return site
    if site.startswith("/") and site.strip("/") and "/" not in site.strip("/"):
        return f"https://www.gnu.org/software/{site.strip('/')}/"
    return ""
