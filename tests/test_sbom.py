"""The SBOM every build writes (seedfw.sbom), checked on a real rk3588 output: the kept
libraries' own validators, the BSI TR-03183-2 checker, identity coverage, the graph,
reproducibility, the manifest's listing of the documents, and Buildroot's legal-info
cross-check."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest

import builds
import sbom_output
from seedfw.errors import SeedfwError

DOCS = ("sbom/sbom.cdx.json", "sbom/sbom.spdx.json")


@pytest.fixture(scope="module")
def out():
    return sbom_output.copy()


@pytest.fixture(scope="module")
def cdx(out):
    return json.loads((out / "sbom" / "sbom.cdx.json").read_text())


def comps(cdx) -> dict:
    return {c["bom-ref"]: c for c in cdx["components"]}


def prop(c, name):
    return next((p["value"] for p in c.get("properties", []) if p["name"] == name), None)


def test_cyclonedx_16_validator_reports_no_error(out, cdx):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    text = (out / "sbom" / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert cdx["specVersion"] == "1.6" and cdx["serialNumber"].startswith("urn:uuid:")
    assert "vulnerabilities" not in cdx                  # BSI: no vulnerability data in an SBOM


def test_spdx_301_loads_back_through_the_bindings(out, cdx):
    from spdx_python_model import v3_0_1 as spdx
    from seedfw.sbom import spdx as spdx_mod
    objs = spdx_mod.load(out / "sbom" / "sbom.spdx.json")
    every = list(objs.foreach_type(spdx.software_Package))
    assert len(every) == len(cdx["components"]) + 1       # + the firmware itself
    # names need not be unique: Debian's cross gcc is a host tool and, relocated, Buildroot's
    pkgs = {p.name: p for p in every}
    uboot = pkgs["u-boot"]
    assert uboot.software_packageVersion == "2025.01"
    assert [e.identifier for e in uboot.externalIdentifier] == \
        ["cpe:2.3:a:denx:u-boot:2025.01:*:*:*:*:*:*:*"]
    assert uboot.software_packageUrl == "pkg:deb/debian/u-boot@2025.01-3%2Bdeb13u1?arch=source"
    doc = next(iter(objs.foreach_type(spdx.SpdxDocument)))
    assert doc.creationInfo.specVersion == "3.0.1"


def test_bsi_tr_03183_2_checker_finds_every_mandatory_field(out, capsys):
    proc = subprocess.run(["ntia-checker", "-s", "spdx3", "-c", "bsi",
                           str(out / "sbom" / "sbom.spdx.json")], capture_output=True, text=True)
    with capsys.disabled():
        print("\n" + proc.stdout)
    assert "Conformant: True" in proc.stdout, proc.stdout
    for row in ("Creator of the SBOM", "Timestamp", "Dependency Completeness", "Component Names",
                "Component Versions", "Component Creators", "Distribution Filenames",
                "Executable Properties", "Archive Properties", "Structured Properties",
                "Distribution Licenses", "Deployable Component Hashes"):
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(row))
        assert line.split("|")[1].strip() == "True", line
    assert "Unknown components" not in proc.stdout and "floating" not in proc.stdout


def test_every_component_has_a_purl_and_a_sha512(cdx, capsys):
    from seedfw import sbom
    cov = sbom.coverage(cdx)
    with capsys.disabled():
        print()
        for kind, r in cov.items():
            print(f"  {kind:<36} {r['count']:>3}  purl {r['purl_percent']}%  CPE "
                  f"{r['cpe_percent']}%  SHA-512 {r['sha512_percent']}%")
    assert cov["all"]["purl_percent"] == 100.0
    assert cov["all"]["sha512_percent"] == 100.0
    for c in cdx["components"]:
        assert c["licenses"][0]["expression"], c["bom-ref"]


def test_cpe_where_nvd_names_the_product(cdx):
    cpes = {c["name"]: c.get("cpe") for c in cdx["components"]}
    assert cpes["trusted-firmware-a"] == "cpe:2.3:a:arm:trusted_firmware-a:2.12.1:*:*:*:*:*:*:*"
    assert cpes["u-boot"] == "cpe:2.3:a:denx:u-boot:2025.01:*:*:*:*:*:*:*"
    assert cpes["linux"] == "cpe:2.3:o:linux:linux_kernel:6.12.117:*:*:*:*:*:*:*"
    assert cpes["busybox"] == "cpe:2.3:a:busybox:busybox:1.37.0:-:*:*:*:*:*:*"   # Buildroot's
    assert cpes["glibc"] == "cpe:2.3:a:gnu:glibc:2.36:*:*:*:*:*:*:*"
    assert cpes["host-cpio"] == "cpe:2.3:a:gnu:cpio:2.13:-:*:*:*:*:*:*"   # the override built


def test_identity_of_the_pinned_inputs(cdx):
    from seedfw.sources import rkbin
    from seedfw.parts import uboot
    c = comps(cdx)
    orig = uboot.VERSIONS["2025.01"]["files"][0]
    assert {h["alg"]: h["content"] for h in c["u-boot"]["hashes"]}["SHA-256"] == orig.sha256
    assert prop(c["u-boot"], "bsi:component:filename") == orig.name
    # Debian's patch series is U-Boot's pedigree, in order.
    patches = [p["diff"]["url"] for p in c["u-boot"]["pedigree"]["patches"]]
    assert patches and all(u.startswith("urn:seedfw:patch:Debian:") for u in patches)
    blob = c[f"rkbin:{rkbin.DDR.name}"]
    assert blob["licenses"] == [{"expression": "LicenseRef-rkbin"}]
    assert {h["alg"]: h["content"] for h in blob["hashes"]}["SHA-256"] == rkbin.DDR.sha256
    assert blob["purl"] == f"pkg:github/rockchip-linux/rkbin@{rkbin.COMMIT}#bin/rk35/" \
                           f"{rkbin.DDR.name}"
    assert c["tool:buildroot-toolchain"]["scope"] == "excluded"       # build scope
    assert prop(c["tool:buildroot-toolchain"], "seedfw:scope") == "build"
    assert prop(c["buildroot:busybox"], "buildroot:ignore_cves")      # Buildroot's own triage


def test_graph_image_to_part_to_source(out, cdx):
    deps = {d["ref"]: set(d.get("dependsOn", [])) for d in cdx["dependencies"]}
    assert "buildroot:busybox" in deps["file:images/rootfs.cpio"]
    assert {"u-boot", "file:images/bl31-lz4.elf"} <= deps["file:images/idbloader.img"]
    assert "linux" in deps["file:images/Image"]
    assert "file:images/rk3588.itb" in deps["file:images/rk3588-disk.img"]
    artifacts = {e["name"] for e in json.loads((out / "manifest.json").read_text())["artifacts"]}
    files = {r.removeprefix("file:images/").split("/")[-1] for r in deps["firmware"]
             if r.startswith("file:")}
    assert artifacts <= files
    listed = {r for comp in cdx["compositions"] for r in comp["dependencies"]}
    assert listed == set(comps(cdx)) | {"firmware"}        # completeness stated for every one


def test_written_twice_the_same_bytes(out):
    from seedfw import sbom
    sbom.write(sbom_output.context(out))
    before = {n: (out / "sbom" / n).read_bytes() for n in (sbom.CDX, sbom.SPDX)}
    sbom.write(sbom_output.context(out))
    assert {n: (out / "sbom" / n).read_bytes() for n in (sbom.CDX, sbom.SPDX)} == before


def test_a_build_that_changed_nothing_keeps_the_sbom_and_a_changed_step_rewrites_it(out):
    """The build's SBOM stage is skipped when nothing it is made from changed (it cost 2 s on
    every no-op rk3588 build); a changed step stamp, a removed document or documents written
    outside the stage (invoke sbom) are rewritten."""
    from seedfw import sbom
    ctx = sbom_output.context(out)
    cdx = out / "sbom" / sbom.CDX
    # Written outside the stage (invoke sbom, perhaps with another creator): the stage writes
    # the documents again, with the build's settings, and stamps them.
    sbom.write(ctx)
    cdx.write_bytes(cdx.read_bytes() + b" ")           # a mark a rewrite would remove
    assert sbom.after_build(ctx) is True and not cdx.read_bytes().endswith(b" ")
    cdx.write_bytes(cdx.read_bytes() + b" ")
    lines = []
    assert sbom.after_build(ctx, say=lines.append) is False
    assert lines == ["  skipped sbom                     up to date"]
    assert cdx.read_bytes().endswith(b" ")
    stamp = sorted((out / "stamps").glob("*.stamp"))[0]
    stamp.write_bytes(stamp.read_bytes() + b"\n")     # negative control: one input differs
    assert sbom.after_build(ctx) is True
    assert not cdx.read_bytes().endswith(b" ")
    (out / "sbom" / sbom.SPDX).unlink()
    assert sbom.after_build(ctx) is True and (out / "sbom" / sbom.SPDX).is_file()


def listed(out) -> dict:
    """{path: (sha256, size)} of the manifest's "sbom" entries, read as bytes."""
    return {e["path"]: (e["sha256"], e["size"])
            for e in json.loads((out / "manifest.json").read_bytes())["sbom"]}


def actual(out) -> dict:
    """{path: (sha256, size)} of the SBOM documents, hashed here from their bytes."""
    return {p: (hashlib.sha256(data).hexdigest(), len(data))
            for p in DOCS for data in [(out / p).read_bytes()]}


def test_the_manifest_lists_the_sbom_documents_as_their_bytes_are(out):
    """`invoke sbom`/`invoke legal` write the documents outside a build: the manifest's entries
    follow them (seedfw.sbom.relist), and an up-to-date manifest is left as it is."""
    from seedfw import sbom
    from seedfw.manifest import Manifest
    sbom.relist(out)                      # the lead's manifest may predate the listing
    assert listed(out) == actual(out)
    assert [(f.format, f.path) for f in Manifest.load(out).sbom] == \
        [("CycloneDX 1.6", DOCS[0]), ("SPDX 3.0.1", DOCS[1])]
    before = (out / "manifest.json").read_bytes()
    assert sbom.relist(out) is False and (out / "manifest.json").read_bytes() == before
    cdx = out / DOCS[0]
    original = cdx.read_bytes()
    cdx.write_bytes(original + b" ")             # negative control: the document changed
    try:
        assert listed(out)[DOCS[0]] != actual(out)[DOCS[0]]
        assert sbom.relist(out) is True and listed(out) == actual(out)
    finally:
        cdx.write_bytes(original)
        sbom.relist(out)
    assert (out / "manifest.json").read_bytes() == before


@pytest.mark.slow
def test_a_build_lists_its_sbom_in_the_manifest_and_a_no_op_rebuild_keeps_both(rk3588_build):
    """The build writes the SBOM, then the manifest listing it (path, size, sha256): the entries
    are the documents' bytes, and a build that changed nothing leaves all three byte-identical."""
    out = rk3588_build.outdir
    assert listed(out) == actual(out)
    names = ("manifest.json", *DOCS)
    before = {n: (out / n).read_bytes() for n in names}
    builds.rebuild(rk3588_build)
    assert {n: (out / n).read_bytes() for n in names} == before
    assert listed(out) == actual(out)


@pytest.mark.parametrize("text, expr", [
    ("GPL-2.0, bzip2-1.0.4", "GPL-2.0-only AND LicenseRef-buildroot-bzip2-1.0.4"),
    ("GPL-2.0+ (programs), LGPL-2.1+ (libraries)", "GPL-2.0-or-later AND LGPL-2.1-or-later"),
    ("GPL-3.0+ with exceptions", "LicenseRef-buildroot-GPL-3.0-with-exceptions"),
    ("unspecified (seedfw)", "NOASSERTION"),
    ("unknown", "NOASSERTION"),
    ("", "NOASSERTION"),
])
def test_buildroot_licence_strings_become_spdx_expressions(text, expr):
    from seedfw.sbom.model import licence_expression
    assert licence_expression(text) == expr


def test_cross_check_names_a_package_legal_info_disagrees_on(out, tmp_path):
    from seedfw.sbom import collect, legal
    inv = collect.collect(sbom_output.context(out))
    header = '"PACKAGE","VERSION","LICENSE","LICENSE FILES","SOURCE ARCHIVE","SOURCE SITE"\n'
    (tmp_path / "manifest.csv").write_text(
        header + '"busybox","1.36.1","GPL-2.0, bzip2-1.0.4","","",""\n'
                 '"dropbear","2024.86","MIT","","",""\n')
    (tmp_path / "host-manifest.csv").write_text(header + '"m4","1.4.21","GPL-3.0+","","",""\n')
    assert legal.cross_check(inv.components, tmp_path) == [
        "manifest.csv: busybox: version 1.36.1 in legal-info, 1.37.0 in the SBOM",
        "manifest.csv: dropbear: not in the SBOM"]


@pytest.mark.slow
def test_every_package_of_buildroots_legal_info_is_in_the_sbom(out, tmp_path):
    """Buildroot's own legal-info (the real output's, else run on a copy: ~1 min): every
    package it lists is a component with the same version and licence."""
    from seedfw.buildroot import make, tree
    from seedfw.sbom import collect, legal
    src = sbom_output.source() / "build" / "buildroot"
    legal_dir = src / "legal-info"
    if not (legal_dir / "manifest.csv").is_file():
        work = tmp_path / "buildroot"
        shutil.copytree(src, work, symlinks=True)
        make.run(tree.ensure(), work, ["legal-info"], tmp_path / "legal.log", lambda m: None,
                 make.environment())
        legal_dir = work / "legal-info"
    inv = collect.collect(sbom_output.context(out))
    assert legal.cross_check(inv.components, legal_dir) == []
    rows = legal.legal_info_rows(legal_dir)
    assert len(rows) >= 10 and {r["PACKAGE"] for _m, _k, r in rows} >= {"busybox", "buildroot"}


def test_a_part_whose_input_is_absent_is_left_out_and_named(out, monkeypatch):
    from seedfw.parts import kernel
    from seedfw.sbom import collect

    def absent(self, ctx):
        raise SeedfwError("pinned kernel package not in the cache", "linux.deb")
    monkeypatch.setattr(kernel.KernelPart, "sbom", absent)
    inv = collect.collect(sbom_output.context(out))
    assert "linux" not in {c.ref for c in inv.components}
    assert inv.notes == ["kernel: components left out: linux.deb: pinned kernel package not in "
                         "the cache"]


def test_host_tools_are_build_components_with_their_debian_identity(out, cdx):
    """The cross compiler and binutils, mkimage, dtc, genimage, mke2fs and bmaptool the steps
    ran are build-scope components: version, architecture and source as dpkg says here (asked
    again by the test), a deb purl with arch and distro, the SHA-512 of the very file that ran
    (hashed here); each firmware file depends on the compiler that built it. Negative controls:
    QEMU (runs images, builds none) and the host rauc (invoke update bundle, not the build) are
    absent, and a compiler's licence is not its output's."""
    import os
    from packageurl import PackageURL
    c = comps(cdx)
    deps = {d["ref"]: set(d.get("dependsOn", [])) for d in cdx["dependencies"]}
    host = {r: v for r, v in c.items() if r.startswith("host:")}
    assert set(host) == {"host:gcc-12-aarch64-linux-gnu", "host:binutils-aarch64-linux-gnu",
                         "host:u-boot-tools", "host:device-tree-compiler", "host:genimage",
                         "host:e2fsprogs", "host:bmap-tools"}
    codename = next(ln.split("=", 1)[1].strip('"') for ln in
                    open("/etc/os-release").read().splitlines()
                    if ln.startswith("VERSION_CODENAME="))
    for cmd, ref in (("aarch64-linux-gnu-gcc", "host:gcc-12-aarch64-linux-gnu"),
                     ("aarch64-linux-gnu-ld", "host:binutils-aarch64-linux-gnu"),
                     ("mkimage", "host:u-boot-tools"), ("dtc", "host:device-tree-compiler")):
        comp = host[ref]
        pkg = ref.removeprefix("host:")
        version, arch = subprocess.run(["dpkg-query", "-W", "-f", "${Version} ${Architecture}",
                                        pkg], capture_output=True, text=True,
                                       check=True).stdout.split()
        assert (comp["name"], comp["version"], comp["scope"]) == (pkg, version, "excluded")
        assert prop(comp, "seedfw:scope") == "build"
        p = PackageURL.from_string(comp["purl"])
        assert (p.type, p.namespace, p.name, p.version, p.qualifiers) == \
            ("deb", "debian", pkg, version, {"arch": arch, "distro": codename})
        ran = os.path.realpath(shutil.which(cmd))
        assert {h["alg"]: h["content"] for h in comp["hashes"]}["SHA-512"] == \
            hashlib.sha512(open(ran, "rb").read()).hexdigest()
    assert host["host:gcc-12-aarch64-linux-gnu"]["cpe"] == \
        "cpe:2.3:a:gnu:gcc:12.2.0:*:*:*:*:*:*:*"
    assert {"host:gcc-12-aarch64-linux-gnu", "host:binutils-aarch64-linux-gnu"} <= \
        deps["file:images/bl31.elf"]
    assert {"host:gcc-12-aarch64-linux-gnu"} <= deps["file:images/u-boot-spl.elf"]
    assert {"host:u-boot-tools", "host:device-tree-compiler"} <= deps["file:images/rk3588.itb"]
    assert {"host:genimage", "host:e2fsprogs"} <= deps["file:images/rk3588-disk.img"]
    assert "tool:buildroot-toolchain" in deps["file:images/rootfs.cpio"]
    # negative controls: made by seedfw's Python (the loader) — no host tool; QEMU and rauc out
    assert not {d for d in deps["file:images/rk3588_spl_loader_v1.18.113.bin"]
                if d.startswith("host:")}
    assert not [r for r in c if "qemu" in r or "rauc" in c[r]["name"] and r.startswith("host:")]
    assert "GPL-3.0" not in c["file:images/bl31.elf"]["licenses"][0]["expression"]


def test_the_spdx_links_each_file_to_its_compiler_in_build_scope(out):
    from spdx_python_model import v3_0_1 as spdx
    from seedfw.sbom import spdx as spdx_mod
    objs = spdx_mod.load(out / "sbom" / "sbom.spdx.json")
    build = {(r.from_.name, t.name) for r in objs.foreach_type(spdx.LifecycleScopedRelationship)
             if r.scope == spdx.LifecycleScopeType.build for t in r.to}
    assert {("bl31.elf", "gcc-12-aarch64-linux-gnu"), ("rk3588.itb", "u-boot-tools"),
            ("rk3588-disk.img", "genimage")} <= build
    assert ("rk3588_spl_loader_v1.18.113.bin", "gcc-12-aarch64-linux-gnu") not in build
