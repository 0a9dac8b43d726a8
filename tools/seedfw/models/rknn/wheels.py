"""Pretrained ONNX models that ship inside package-registry wheels, pinned twice: the wheel by size
and sha256 (seedfw.sources, into the shared download cache) and each model file inside it by
sha256, so a wheel re-published with other bytes, or a member changed inside it, stops the build.

Sites, in order: $SEEDFW_MIRROR_DIR (the wheel by name), then `pip download --no-deps` of the
exact version with the project's pip (its configured index; no host name is written here).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ... import paths, sources, util
from ...errors import SeedfwError

MAX_MEMBER = 64 << 20        # a model file bigger than this inside a wheel is refused (hostile input)


@dataclass(frozen=True)
class PipDownloadSite(sources.Site):
    """`pip download --no-deps <requirement>` into the fetch's temporary directory."""

    requirement: str
    label = "pip"

    def describe(self) -> str:
        return f"pip download --no-deps {self.requirement}"

    def fetch(self, file, dest_dir, log):
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input", "-q",
               "--dest", str(dest_dir), self.requirement]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if log is not None:
            with open(log, "a") as f:
                f.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        got = dest_dir / file.name
        if proc.returncode != 0 or not got.is_file():
            lines = [l for l in proc.stderr.splitlines()
                     if l.strip() and not l.startswith("WARNING: Location")]
            raise SeedfwError(f"pip download {self.requirement} failed: "
                              f"{lines[-1] if lines else 'no ' + file.name}")
        return got


@dataclass(frozen=True)
class Wheel:
    source: sources.Source
    licence: str                                  # the wheel's METADATA License
    members: dict = field(default_factory=dict)   # path inside the wheel -> sha256


def _wheel(name: str, version: str, filename: str, size: int, sha256: str, licence: str,
           members: dict) -> Wheel:
    pin = sources.SourceFile(filename, size, sha256)
    src = sources.Source(name=name, version=version, files=(pin,), archive=filename,
                         sites=(sources.MirrorDirSite(), PipDownloadSite(f"{name}=={version}")))
    return Wheel(src, licence, members)


# Checked 2026-12-01 (FACTS.md "Rockchip's NPU compiler"): PaddleOCR's PP-OCRv4 models in
# RapidOCR's onnxruntime wheel, Apache-2.0.
WHEELS = {
    "rapidocr-onnxruntime": _wheel(
        "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
        14_915_192, "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
        "Apache-2.0", {
            "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx":
                "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
            "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx":
                "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
            "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx":
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
        }),
}


def member(wheel_name: str, path: str, where, field_name: str, progress=print,
           log: Path | None = None) -> Path:
    """The model file `path` of a pinned wheel, verified, as <cache>/models/onnx/<sha256>.onnx."""
    wheel = WHEELS.get(wheel_name)
    if wheel is None:
        raise SeedfwError(f"unknown wheel '{wheel_name}' (known: {', '.join(sorted(WHEELS))})",
                          where, field_name)
    sha = wheel.members.get(path)
    if sha is None:
        raise SeedfwError(f"'{path}' is not a pinned model file of {wheel_name} "
                          f"(pinned: {', '.join(sorted(wheel.members))})", where, field_name)
    out = paths.cache_dir() / "models" / "onnx" / f"{sha}.onnx"
    if out.is_file() and util.sha256_file(out) == sha:
        return out
    whl = sources.fetch(wheel.source, log=log, progress=progress)[wheel.source.archive]
    try:
        with zipfile.ZipFile(whl) as z:
            info = z.getinfo(path)
            if info.file_size > MAX_MEMBER:
                raise SeedfwError(f"{path}: {info.file_size} bytes, over the {MAX_MEMBER} limit",
                                  whl, path)
            data = z.read(info)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise SeedfwError(f"cannot read {path}: {exc}", whl, path) from None
    got = util.sha256_bytes(data)
    if got != sha:
        raise SeedfwError(f"sha256 mismatch: expected {sha}, got {got}", whl, path)
    return util.write_bytes(out, data)


def sbom(wheel_name: str, path: str) -> dict:
    wheel = WHEELS[wheel_name]
    return {"name": wheel_name, "version": wheel.source.version, "licence": wheel.licence,
            "file": path, "sha256": wheel.members[path],
            "archive": wheel.source.archive, "archive_sha256": wheel.source.files[0].sha256}
