"""The report's sections, in the order report.json is built and report.md / report.html show
them. Each is one module here with one `Section` class (base.py) whose docstring is its
reference page; adding a section is one module and one line below.
"""

from __future__ import annotations

from ...registry import Registry

SECTIONS = Registry("report section", {
    "images": "seedfw.report.sections.images:Images",
    "elfs": "seedfw.report.sections.elfs:Elfs",
    "compression": "seedfw.report.sections.compression:Compression",
    "deltas": "seedfw.report.sections.deltas:Deltas",
    "bandwidth": "seedfw.report.sections.bandwidth:Bandwidth",
    "models": "seedfw.report.sections.models:Models",
    "os": "seedfw.report.sections.os_build:Os",
    "cache": "seedfw.report.sections.cache:Cache",
    "vulnerabilities": "seedfw.report.sections.vulnerabilities:Vulnerabilities",
    "update": "seedfw.report.sections.update:Update",
})


def sections() -> list:
    """One instance of every registered section, in registry order."""
    return [SECTIONS.get(name)() for name in SECTIONS.names()]
