"""`invoke legal`: one licence bundle and one CycloneDX SBOM for the whole firmware.

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

import csv
import json
import shutil
import time
import uuid
from pathlib import Path

from .. import sources, util
from ..errors import SeedfwError
from . import VERSION, make, tree

NAMESPACE = uuid.UUID("5eedf000-0000-4000-8000-00000000013d")


def seedfw_components(ctx) -> list[tuple[dict, list[Path]]]:
    """(CycloneDX component, files to bundle) for each of seedfw's own third-party inputs."""
    from ..packages import kernel, rkbin, tfa, uboot

    out = []
    v = ctx.values

    def files_of(src: sources.Source) -> list[Path]:
        got = sources.fetch(src, progress=lambda m: None)
        return [got[f.name] for f in src.files]

    def comp(name, version, licence, src_files, kind="firmware", note=""):
        c = {"type": kind, "name": name, "version": version,
             "licenses": [{"license": licence}],
             "hashes": [{"alg": "SHA-256", "content": util.sha256_file(f)} for f in src_files[:1]],
             "properties": [{"name": "seedfw:files", "value": ", ".join(f.name for f in src_files)}]}
        if note:
            c["properties"].append({"name": "seedfw:note", "value": note})
        return c

    if v.get("TFA"):
        src = tfa.source(v.get("TFA_VERSION") or "2.12.1")
        fs = files_of(src)
        out.append((comp("trusted-firmware-a", src.version, {"id": "BSD-3-Clause"}, fs,
                         note="Debian +dfsg orig; seedfw patches in firmware/tf-a/patches"), fs))
    if v.get("UBOOT"):
        src = uboot.source(v.get("UBOOT_VERSION") or "2025.01")
        fs = files_of(src)
        out.append((comp("u-boot", src.version, {"id": "GPL-2.0-or-later"}, fs,
                         note="upstream orig + Debian's patch series"), fs))
        if ctx.board.soc == "rk3588":
            fs = [rkbin.fetch(progress=lambda m: None)[f.name] for f in rkbin.SOURCE.files]
            out.append((comp("rkbin", rkbin.COMMIT, {"name": "LicenseRef-rkbin (see LICENSE)"},
                             fs, note="binary-only vendor blobs"), fs))
    if v.get("BUILDROOT"):
        from . import toolchain
        vers = toolchain.versions()
        c = {"type": "library", "name": "debian-cross-toolchain-runtime",
             "version": vers["libc6-arm64-cross"],
             "licenses": [{"license": {"name": "LGPL-2.1-or-later (glibc), GPL-3.0-or-later WITH "
                                               "GCC-exception-3.1 (libgcc, libstdc++)"}}],
             "properties": [{"name": "seedfw:note", "value": "C library and compiler runtime "
                             "Buildroot copied into the rootfs from the relocated Debian cross "
                             "toolchain; sources: Debian's glibc and gcc-12 source packages"}]
             + [{"name": f"debian:{k}", "value": val} for k, val in sorted(vers.items())]}
        out.append((c, []))
    if v.get("MODELS"):
        # the NPU models' sources and the compiler (seedfw.rknn.part.ModelsPart.sbom)
        from ..rknn.part import ModelsPart
        for rec in ModelsPart().sbom(ctx):
            c = {"type": "machine-learning-model" if rec["kind"] == "model" else "application",
                 "name": rec["name"], "version": rec.get("version") or rec.get("sha256", "")[:12],
                 "licenses": [{"license": {"name": rec["licence"]}}],
                 "properties": [{"name": "seedfw:note", "value": json.dumps(rec.get("source"))
                                 if rec.get("source") else rec["kind"]}]}
            if rec.get("sha256"):
                c["hashes"] = [{"alg": "SHA-256", "content": rec["sha256"]}]
            out.append((c, []))
    if v.get("KERNEL"):
        k = kernel.KERNELS[v.get("KERNEL_PACKAGE")]
        deb = kernel.fetch(k, progress=lambda m: None)
        out.append((comp("linux", k.version, {"id": "GPL-2.0-only"}, [deb], "operating-system",
                         note=f"Debian binary package {k.package}; its source is Debian's "
                              f"linux source package {k.version}"), [deb]))
    return out


def buildroot_components(legal_dir: Path) -> list[dict]:
    """Buildroot's manifests as components. legal-info reports the version Buildroot pins even
    for a package built from an override dir, so those rows get the version actually built and
    the override's file (seedfw.buildroot.mirror)."""
    from . import mirror
    overridden = {ov.package: ov for ov in mirror.OVERRIDES}
    comps = []
    for manifest, scope in (("manifest.csv", "required"), ("host-manifest.csv", "excluded")):
        path = legal_dir / manifest
        if not path.is_file():
            raise SeedfwError("Buildroot's legal-info wrote no manifest", path)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                c = {"type": "application" if scope == "required" else "library",
                     "name": row["PACKAGE"], "version": row["VERSION"], "scope": scope,
                     "licenses": [{"license": {"name": row["LICENSE"] or "unknown"}}],
                     "properties": [{"name": "buildroot:source", "value": row["SOURCE ARCHIVE"]},
                                    {"name": "buildroot:site", "value": row["SOURCE SITE"]}]}
                ov = overridden.get(row["PACKAGE"]) if scope == "excluded" else None
                if ov is not None:
                    c["version"] = ov.version
                    c["hashes"] = [{"alg": "SHA-256", "content": ov.file.sha256}]
                    c["properties"].append({"name": "seedfw:override",
                                            "value": f"{ov.file.name} ({ov.origin}); Buildroot "
                                                     f"pins {ov.pinned}"})
                comps.append(c)
    return comps


def sbom(ctx, br_comps: list[dict], own: list[dict]) -> dict:
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1,
           "metadata": {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                   time.gmtime(util.source_date_epoch())),
                        "tools": [{"vendor": "seedfw", "name": "seedfw legal"},
                                  {"vendor": "Buildroot", "name": "legal-info",
                                   "version": VERSION}],
                        "component": {"type": "firmware", "name": f"seedfw-{ctx.board.name}",
                                      "version": ctx.build_id}},
           "components": own + br_comps}
    body = json.dumps(doc, sort_keys=True).encode()
    doc["serialNumber"] = f"urn:uuid:{uuid.uuid5(NAMESPACE, util.sha256_bytes(body))}"
    return doc


def bundle(ctx, brout: Path, say=print) -> Path:
    """Run legal-info in Buildroot's output dir and write <out>/legal/."""
    if not (brout / ".config").is_file():
        raise SeedfwError("no Buildroot output yet (enable CONFIG_BUILDROOT and run 'invoke "
                          f"build --board {ctx.board.name}')", brout)
    root = tree.ensure()
    tree.check(root)
    log = ctx.outdir / "logs" / "legal.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    say("running Buildroot's legal-info (log: logs/legal.log)")
    make.run(root, brout, ["legal-info"], log, lambda m: None, make.environment())
    own = seedfw_components(ctx)
    dest = ctx.outdir / "legal"
    with util.atomic_dir(dest) as tmp:
        shutil.copytree(brout / "legal-info", tmp / "buildroot", symlinks=False)
        for comp, files in own:
            d = tmp / "seedfw" / comp["name"]
            d.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copyfile(f, d / f.name)
        # legal-info saves no source for a package built from an override dir: ours go here.
        from . import mirror
        d = tmp / "seedfw" / "buildroot-overrides"
        d.mkdir(parents=True)
        for ov in mirror.OVERRIDES:
            got = sources.fetch(ov.source(), progress=lambda m: None)[ov.file.name]
            shutil.copyfile(got, d / ov.file.name)
        br = buildroot_components(tmp / "buildroot")
        doc = sbom(ctx, br, [c for c, _ in own])
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
    say(f"wrote {dest}: {len(own)} seedfw components + {len(br)} Buildroot packages; "
        f"SBOM {dest / 'sbom.cdx.json'}")
    return dest
