"""The one component record every SBOM writer, `invoke legal` and `invoke cve` read.

A part's `sbom()` returns these (Part.component builds one), Buildroot's `make show-info` gives
one per package (seedfw.sbom.buildroot_info), and the image artifacts of the manifest one each
(seedfw.sbom.collect). The CycloneDX and SPDX writers turn the same list into their formats, so
the two files can never disagree about what is in the firmware.

Identity per component: a purl (packageurl-python builds it, so its quoting is the spec's), a
CPE 2.3 where NVD names the product (the vendor:product pairs are NVD's, listed in CPE_PRODUCTS
or taken from Buildroot's own `cpe-id`), sha256 and SHA-512 of its source archive(s) or of the
file itself, and its licence as an SPDX expression (LicenseRef-… for the proprietary ones, named).
`scope` is "required" for what ends up in the image and "build" for what only builds it (the
cross toolchain, Buildroot's host packages, the model compiler): BSI TR-03183-2 asks for both.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from packageurl import PackageURL

# NVD's CPE vendor:product for the components seedfw itself pins (Buildroot packages carry their
# own `cpe-id`, from Buildroot's package/*.mk).
CPE_PRODUCTS = {
    "trusted-firmware-a": ("a", "arm", "trusted_firmware-a"),
    "u-boot": ("a", "denx", "u-boot"),
    "linux": ("o", "linux", "linux_kernel"),
    "busybox": ("a", "busybox", "busybox"),
    "glibc": ("a", "gnu", "glibc"),
    "gcc": ("a", "gnu", "gcc"),
}

# Contact URLs of the suppliers seedfw's own parts name (BSI TR-03183-2: a creator is named by
# an e-mail address or URL). Buildroot packages carry their upstream site (show-info's <PKG>_SITE).
SUPPLIER_URLS = {
    "Arm Limited": "https://www.trustedfirmware.org/projects/tf-a/",
    "DENX Software Engineering": "https://source.denx.de/u-boot/u-boot",
    "Debian": "https://www.debian.org/",
    "Rockchip Electronics Co., Ltd.": "https://github.com/rockchip-linux/rkbin",
    "Buildroot": "https://buildroot.org/",
}


def supplier_url(supplier: str) -> str:
    """The contact URL of a named supplier (the first known name it starts with), or the
    manufacturer's own contact ($SEEDFW_SBOM_CREATOR) for seedfw."""
    if supplier == "seedfw":
        return os.environ.get("SEEDFW_SBOM_CREATOR", "")
    return next((url for name, url in SUPPLIER_URLS.items() if supplier.startswith(name)), "")


# seedfw's own code (firmware, agent, recipe models) declares no licence yet: the manufacturer's
# terms, named so a regulator's checker sees a licence and a reader sees whose it is.
OWN_LICENCE = "LicenseRef-seedfw"


@functools.lru_cache(maxsize=1)
def licensing():
    """license-expression's SPDX licensing, built once (it indexes ~2,500 licence keys: 0.4 s)."""
    from license_expression import get_spdx_licensing
    return get_spdx_licensing()


def combined_licence(expressions) -> str:
    """The conjunction of licences (an artifact made of several components), simplified by
    license-expression; NOASSERTION parts are dropped, nothing left is NOASSERTION."""
    parts = sorted({e for e in expressions if e and e != "NOASSERTION"})
    if not parts:
        return "NOASSERTION"
    return str(_parse(" AND ".join(f"({p})" for p in parts)).simplify())


@functools.lru_cache(maxsize=512)
def _parse(expression: str):
    return licensing().parse(expression)


_OR_LATER = re.compile(r"^((?:A|L)?GPL-\d\.\d)\+$")
_ONLY = re.compile(r"^((?:A|L)?GPL-\d\.\d)$")


def licence_expression(text: str | None) -> str:
    """An SPDX expression for a Buildroot licence string: comma-separated parts become AND,
    `GPL-2.0+` GPL-2.0-or-later, a bare `GPL-2.0` GPL-2.0-only (SPDX deprecated the bare ids),
    the parenthesised notes ("(programs)") are dropped, and whatever SPDX does not know becomes a
    LicenseRef-buildroot-… naming it. "unknown"/empty is NOASSERTION."""
    spdx = licensing()
    if not text or text.strip().lower() in ("unknown", "unspecified", "none"):
        return "NOASSERTION"
    out = []
    for raw in text.split(","):
        part = re.sub(r"\([^)]*\)", "", raw).strip()
        if not part:
            continue
        if m := _OR_LATER.match(part):
            part = f"{m.group(1)}-or-later"
        elif m := _ONLY.match(part):
            part = f"{m.group(1)}-only"
        if spdx.validate(part).errors or " " in part:
            part = "LicenseRef-buildroot-" + re.sub(r"[^A-Za-z0-9.\-]+", "-", part).strip("-")
        if part not in out:
            out.append(part)
    if not out or all(p.lower().endswith(("unknown", "unspecified")) for p in out):
        return "NOASSERTION"
    return " AND ".join(out)


# CycloneDX component types the writers accept (what a part may declare).
KINDS = ("application", "firmware", "library", "operating-system", "file", "container",
         "machine-learning-model", "data", "device")
SCOPES = ("required", "build")


def cpe23(name: str, version: str, product: str | None = None) -> str | None:
    """cpe:2.3 of a known product at `version`; None when NVD names no such product."""
    got = CPE_PRODUCTS.get(product or name)
    if got is None or not version:
        return None
    part, vendor, prod = got
    return f"cpe:2.3:{part}:{vendor}:{prod}:{_cpe_escape(version)}:*:*:*:*:*:*:*"


def _cpe_escape(value: str) -> str:
    # CPE 2.3 formatted string: characters other than alphanumerics, '_', '-', '.' are quoted.
    return re.sub(r"([^A-Za-z0-9_.\-])", r"\\\1", value)


def purl(kind: str, name: str, version: str | None, namespace: str | None = None,
         subpath: str | None = None, **qualifiers) -> str:
    """A purl through packageurl-python (the spec's percent-encoding and order)."""
    return PackageURL(type=kind, namespace=namespace, name=name, version=version or None,
                      qualifiers={k: v for k, v in qualifiers.items() if v} or None,
                      subpath=subpath).to_string()


@dataclass
class Component:
    """One thing in (or building) the firmware. `ref` is unique in one SBOM ("part:name")."""

    ref: str
    name: str
    version: str
    kind: str = "application"
    licence: str = "NOASSERTION"          # an SPDX expression: the concluded licence
    declared: str = ""                    # what the source itself declares, when it differs
    supplier: str = ""
    supplier_url: str = ""                # the supplier's contact (BSI: creator, email or URL)
    purl: str = ""
    cpe: str | None = None
    scope: str = "required"
    description: str = ""
    sources: list[Path] = field(default_factory=list)     # source archives / the files bundled
    hashes: dict[str, str] = field(default_factory=dict)  # {"SHA-256": hex, "SHA-512": hex}
    filename: str = ""                    # BSI: the file name the component is delivered as
    patches: list[str] = field(default_factory=list)      # pedigree: patch names, in order
    patch_origin: str = ""                # who the patches come from (Debian, Buildroot, seedfw)
    depends: list[str] = field(default_factory=list)      # refs of what this one is made from
    complete: bool = True                 # dependencies listed completely ("complete"/"unknown")
    delivered_as: list[str] = field(default_factory=list)  # refs of the files it ships as
    properties: dict[str, str] = field(default_factory=dict)

    def hash_sources(self, hasher=None) -> None:
        """sha256 and SHA-512 of the first source file (the archive), unless already known."""
        if self.sources and not self.hashes.get("SHA-512"):
            self.hashes.update((hasher or file_hashes)(self.sources[0]))
            self.filename = self.filename or self.sources[0].name

    def check(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.ref}: component type {self.kind!r} is not one of {KINDS}")
        if self.scope not in SCOPES:
            raise ValueError(f"{self.ref}: scope {self.scope!r} is not one of {SCOPES}")


def file_hashes(path: Path) -> dict[str, str]:
    """sha256 and SHA-512 of one file, read once."""
    h256, h512 = hashlib.sha256(), hashlib.sha512()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h256.update(chunk)
            h512.update(chunk)
    return {"SHA-256": h256.hexdigest(), "SHA-512": h512.hexdigest()}


def tree_hashes(tree: Path) -> dict[str, str]:
    """sha256/SHA-512 of a source tree of ours (no archive exists): over the sorted relative
    paths and contents, each length-prefixed, so a rename or an edit changes both digests."""
    h256, h512 = hashlib.sha256(), hashlib.sha512()
    for path in sorted(p for p in Path(tree).rglob("*") if p.is_file()
                       and "__pycache__" not in p.parts):
        rel = path.relative_to(tree).as_posix().encode()
        data = path.read_bytes()
        for h in (h256, h512):
            h.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return {"SHA-256": h256.hexdigest(), "SHA-512": h512.hexdigest()}
