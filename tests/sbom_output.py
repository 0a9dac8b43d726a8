"""A real rk3588 build output for the SBOM and CVE tests, copied once per test session.

The SBOM of a real build is what these tests are about (Buildroot's own show-info, the real
artifacts, the pinned sources), so they read the lead's rk3588 output: $SEEDFW_RK3588_OUTPUT,
else <repo>/output/rk3588. It is never written to: the copy has the small files copied, images/
hard-linked (read only here) and, of Buildroot's output, what `make show-info` reads (.config,
the external tree's .br2-external files, the Makefile). No real output: the tests skip.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_COPY: dict[str, Path] = {}
SMALL = ("config.json", "manifest.json", "buildroot.fragment", ".config", ".seedfw-output",
         "compression.json")


def source() -> Path:
    return Path(os.environ.get("SEEDFW_RK3588_OUTPUT") or ROOT / "output" / "rk3588")


def copy() -> Path:
    """<tmp>/rk3588: the copy (made on first use), with its SBOM written once."""
    if "out" in _COPY:
        return _COPY["out"]
    src = source()
    if not (src / "images" / "rootfs.cpio").is_file() or \
            not (src / "build" / "buildroot" / ".config").is_file():
        pytest.skip(f"no real rk3588 build output at {src} (set SEEDFW_RK3588_OUTPUT)")
    top = Path(tempfile.mkdtemp(prefix="seedfw-sbom-"))
    atexit.register(shutil.rmtree, top, True)
    out = top / "rk3588"
    out.mkdir()
    for name in SMALL:
        if (src / name).exists():
            shutil.copy2(src / name, out / name)
    for name in ("stamps", "include"):
        if (src / name).is_dir():
            shutil.copytree(src / name, out / name, symlinks=True)
    shutil.copytree(src / "images", out / "images", copy_function=os.link)
    br = out / "build" / "buildroot"
    br.mkdir(parents=True)
    for f in (src / "build" / "buildroot").iterdir():
        if f.is_file() and (f.name in (".config", "Makefile") or f.name.startswith(".br2-ext")):
            shutil.copy2(f, br / f.name)
    cached = src / "build" / "sbom" / "show-info.json"       # a build with the SBOM hook
    if cached.is_file():
        (out / "build" / "sbom").mkdir(parents=True)
        shutil.copy2(cached, out / "build" / "sbom" / cached.name)
    # SEEDFW_SBOM_CREATOR: set for the whole session by conftest.py, before any build
    from seedfw import sbom
    sbom.write(context(out))
    _COPY["out"] = out
    return out


def context(out: Path):
    from seedfw import config as kcfg
    from seedfw.parts import BuildContext
    cfg = kcfg.resolve("rk3588", out)
    cfg.values = kcfg.load_values(cfg.outdir)
    return BuildContext(cfg)
