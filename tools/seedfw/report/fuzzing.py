"""The report's inputs as one fuzz target (`invoke fuzz --target py-report`, seedfw.fuzz.pyfuzz).

An input is one selector byte and a document: the byte picks which file of an output directory
the rest becomes (KINDS), the reader of that file runs (report/inputs.py, report/documents.py)
and so do the renderers of the section that shows it (report.md and report.html text, strict
JSON). The contract is the door's: SeedfwError or success, nothing else. The output directory is
one scratch directory (in /dev/shm when there is one: the target writes a file per execution).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# selector byte % len(KINDS) -> (file written, what runs)
KINDS = ("counters/emulated-run.json", "counters/perf-boot.json", "images/models.json",
         "images/ccache.json", "images/buildroot.json", "manifest.json", "config.json",
         "compression.json", "counters.json")


def _render(section, data) -> None:
    """The section's three forms: strict JSON, every Markdown line escaped, the HTML."""
    from .safe import md
    if data is None:
        return
    json.dumps(data, allow_nan=False, default=str)
    for line in section.markdown(data):
        md(line)
    str(section.html(data))


def reader():
    """bytes -> None (or SeedfwError): the callable the campaign runs."""
    from . import inputs, provenance, traffic
    from .safe import md
    from .sections import cache, models, os_build
    from .sections.base import Inputs

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    out = Path(tempfile.mkdtemp(prefix="seedfw-pyfuzz-report-", dir=base))
    (out / "counters").mkdir()
    (out / "images").mkdir()
    last: list[str] = []

    def run(data: bytes):
        if not data:
            return None
        name = KINDS[data[0] % len(KINDS)]
        if last and last[0] != name:         # only this input present
            (out / last[0]).unlink(missing_ok=True)
        last[:] = [name]
        (out / name).write_bytes(data[1:])
        config = manifest = None
        if name == "config.json":
            config, _ = inputs.read_config(out)
        elif name == "manifest.json":
            manifest, _ = inputs.read_manifest(out)
            inputs.find_elfs(out, manifest)
        ins = Inputs(out, config, manifest, "fuzz", counters=out / "counters.json"
                     if name == "counters.json" else None)
        if name.startswith("counters/"):
            sec = traffic.section(out)
            report = {"bandwidth": {"emulated": sec}}
            json.dumps(report, allow_nan=False)
            for line in traffic.markdown(report):
                md(line)
            for part in traffic.html(report):
                str(part)
        elif name == "images/models.json":
            _render(models.Models(), models.Models().data(ins))
        elif name == "images/ccache.json":
            _render(cache.Cache(), cache.Cache().data(ins))
        elif name == "images/buildroot.json":
            _render(os_build.Os(), os_build.Os().data(ins))
        elif name == "compression.json":
            inputs.read_compression(out)
        elif name == "counters.json":
            measured, _ = inputs.read_counters(ins.counters)
            json.dumps(measured, allow_nan=False)
            for c in measured["counters"]:
                md(provenance.kind_text(c))
        return None
    return run


def seeds() -> list[bytes]:
    """One well-formed document per kind (its selector byte first)."""
    prov = {"source": "emulated", "how": "QEMU plugin", "qemu_version": "7.2", "machine": "virt"}
    phase = {"instructions": 10, "regions": {"ram": {"load_bytes": 64, "store_bytes": 8,
                                                     "loads": 8, "stores": 1}},
             "excluded": {"instructions": 0}}
    docs = {
        "counters/emulated-run.json": {
            "provenance": prov,
            "settings": {"boot": "run", "note": "n", "excluded_code": ["x"],
                         "regions": [{"name": "ram", "kind": "dram"}],
                         "phases_declared": [{"name": "bl31", "by": "sym", "ran": True}]},
            "readings": {"phases": {"bl31": phase, "other": phase},
                         "dma": {"virtio-blk": {"reads": 1, "read_bytes": 512, "writes": 0,
                                                "write_bytes": 0}}}},
        "counters/perf-boot.json": {"provenance": prov, "settings": {"absent": {"ddr": "why"}},
                                    "readings": {"windows": {"boot": {"cpu": {"ns": 5}}}}},
        "images/models.json": {"frame_rate": 30, "models": [{
            "name": "digits", "target": "rk3588", "dtype": "int8", "file_bytes": 100,
            "sha256": "ab" * 32, "metric": "top1", "fp32": 0.9, "simulated": 0.8,
            "weight_bytes": 50}]},
        "images/ccache.json": {"hits": 3, "misses": 1, "hit_rate": 0.75, "remote": None,
                               "remote_hits": 0, "remote_misses": 0, "source": "s"},
        "images/buildroot.json": {"version": "1", "rootfs": {"r": {"size": 1, "entries": 1}},
                                  "package_sizes": {"busybox": 7},
                                  "overrides": [{"package": "p", "used": "1",
                                                 "buildroot_pins": "0", "file": "f",
                                                 "origin": "o"}]},
        "manifest.json": {"board": "b", "images": [{"file": "a.bin", "size": 1}],
                          "elfs": ["images/a.elf"]},
        "config.json": {"BOARD": "b", "MODEL_FRAME_RATE": 30, "COMPRESS_HC_LEVEL": 9},
        "compression.json": {"sections": [{"name": ".rodata", "raw": 10, "chosen": 5}]},
        "counters.json": {"provenance": {"source": "live", "probe": "p"}, "settings": {},
                          "readings": {"total": {"read_bytes": 5}}},
    }
    return [bytes([KINDS.index(k)]) + json.dumps(v).encode() for k, v in docs.items()]
