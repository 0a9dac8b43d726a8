"""The report's `os` section (reference page: the class docstring). Moved here from
buildroot/report.py: it reads only the files the OS build left, so the report does not import
the Buildroot library."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from ..format import html_table, num
from .base import Inputs, Section


class Os(Section):
    """The OS the build made with Buildroot: rootfs, kernel, OS FIT, package sizes, overrides.

    Present only when the build made a rootfs (<out>/images/buildroot.json exists); otherwise
    the `os` key is absent from report.json and the section from report.md / report.html.
    Shows: the Buildroot version; each rootfs image's size and entry count (computed by the OS
    step from the files); the kernel image (images/Image, its size, and config KERNEL_PACKAGE);
    the OS FIT (images/*-os.itb, its size); the bytes each Buildroot package installed in the
    target and its share (computed from Buildroot's build/packages-file-list.txt, the input of
    its graph-size); the source overrides (BR2_PACKAGE_OVERRIDE_FILE) the build used.

    Reads: <out>/images/buildroot.json, <out>/config.json, <out>/images/Image,
    <out>/images/*-os.itb.
    """

    name = "os"

    def data(self, inputs: Inputs) -> dict | None:
        outdir = inputs.outdir
        images = outdir / "images"
        try:
            info = json.loads((images / "buildroot.json").read_text())
        except (OSError, ValueError):
            return None
        try:
            # the file itself, not inputs.config: an unreadable config.json only leaves the
            # kernel package unnamed here (the header already notes it)
            config = json.loads((Path(outdir) / "config.json").read_text())
        except (OSError, ValueError):
            config = {}
        out = {"buildroot": info.get("version"), "rootfs": info.get("rootfs", {}),
               "package_sizes": info.get("package_sizes", {}),
               "overrides": info.get("overrides", []), "source": "images/buildroot.json"}
        if (images / "Image").is_file():
            out["kernel"] = {"package": config.get("KERNEL_PACKAGE"),
                             "image_size": (images / "Image").stat().st_size}
        fits = sorted(images.glob("*-os.itb"))
        if fits:
            out["os_fit"] = {"name": fits[0].name, "size": fits[0].stat().st_size}
        return out

    def markdown(self, os_: dict) -> list[str]:
        lines = ["## OS", "", f"Buildroot {os_['buildroot']} ({os_['source']}).", "",
                 "| image | size (bytes) | entries |", "|---|---:|---:|"]
        for name, e in os_["rootfs"].items():
            lines.append(f"| {name} | {e['size']:,} | {e.get('entries', '')} |")
        if os_.get("kernel"):
            k = os_["kernel"]
            lines.append(f"| Image ({k['package']}) | {k['image_size']:,} | |")
        if os_.get("os_fit"):
            lines.append(f"| {os_['os_fit']['name']} | {os_['os_fit']['size']:,} | |")
        total = sum(os_["package_sizes"].values()) or 1
        lines += ["", "| package (target) | installed bytes | share |", "|---|---:|---:|"]
        for pkg, size in sorted(os_["package_sizes"].items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {pkg} | {size:,} | {100 * size / total:.1f} % |")
        lines += ["", "Source overrides (BR2_PACKAGE_OVERRIDE_FILE):", ""]
        for o in os_["overrides"]:
            built = "" if o.get("built", True) else " (not built in this configuration)"
            lines.append(f"- {o['package']} {o['used']} instead of {o['buildroot_pins']}: "
                         f"{o['file']} ({o['origin']}){built}")
        return lines + [""]

    def html(self, os_: dict) -> str:
        e = escape
        h = ["<h2>OS</h2>", f"<p>Buildroot {e(str(os_['buildroot']))} ({e(os_['source'])}); all "
             "sizes computed from the built files.</p>"]
        rows = [[e(name), num(x["size"]), str(x.get("entries", ""))]
                for name, x in os_["rootfs"].items()]
        if os_.get("kernel"):
            k = os_["kernel"]
            rows.append([f"Image ({e(str(k['package']))})", num(k["image_size"]), ""])
        if os_.get("os_fit"):
            rows.append([e(os_["os_fit"]["name"]), num(os_["os_fit"]["size"]), ""])
        h.append(html_table(["image", "size (bytes)", "entries"], rows, {1, 2}))
        sizes = os_["package_sizes"]
        total = sum(sizes.values()) or 1
        h.append("<h3>Bytes each package installed in the target</h3><p>computed from "
                 "Buildroot's build/packages-file-list.txt (the input of its graph-size)</p>")
        h.append(html_table(["package", "installed bytes", "share"],
                            [[e(pkg), num(size), f"{100 * size / total:.1f} %"] for pkg, size in
                             sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))], {1, 2}))
        h.append("<h3>Source overrides (BR2_PACKAGE_OVERRIDE_FILE)</h3>")
        h.append(html_table(["package", "built", "instead of", "from", "origin"],
                            [[e(o["package"]), e(o["used"]), e(o["buildroot_pins"]),
                              f"<code>{e(o['file'])}</code>", e(o["origin"]) +
                              ("" if o.get("built", True) else
                               " (not built in this configuration)")]
                             for o in os_["overrides"]]))
        return "\n".join(h)
