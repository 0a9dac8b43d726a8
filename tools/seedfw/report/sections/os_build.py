"""The report's `os` section (reference page: the class docstring). Moved here from
buildroot/report.py: it reads only the files the OS build left, so the report does not import
the Buildroot library."""

from __future__ import annotations

from markupsafe import Markup

from .. import documents
from ..format import html_table, num, table
from ..safe import Md, html, join, mdf
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
        info = documents.buildroot_summary(outdir)       # type-checked (report/documents.py)
        if info is None:
            return None
        config = inputs.config or {}          # read and type-checked with the report's header
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

    def markdown(self, os_: dict) -> list[Md]:
        lines = [Md("## OS"), Md(""), mdf("Buildroot {} ({}).", os_["buildroot"], os_["source"]),
                 Md("")]
        rows = [[name, f"{e['size']:,}", e.get("entries", "")] for name, e in os_["rootfs"].items()]
        if os_.get("kernel"):
            k = os_["kernel"]
            rows.append([f"Image ({k['package']})", f"{k['image_size']:,}", ""])
        if os_.get("os_fit"):
            rows.append([os_["os_fit"]["name"], f"{os_['os_fit']['size']:,}", ""])
        lines += table(["image", "size (bytes)", "entries"], rows, {1, 2})
        total = sum(os_["package_sizes"].values()) or 1
        lines += table(["package (target)", "installed bytes", "share"],
                       [[pkg, f"{size:,}", f"{100 * size / total:.1f} %"] for pkg, size in
                        sorted(os_["package_sizes"].items(), key=lambda kv: (-kv[1], kv[0]))],
                       {1, 2})
        lines += [Md("Source overrides (BR2_PACKAGE_OVERRIDE_FILE):"), Md("")]
        for o in os_["overrides"]:
            built = "" if o.get("built", True) else " (not built in this configuration)"
            lines.append(mdf("- {} {} instead of {}: {} ({}){}", o["package"], o["used"],
                             o["buildroot_pins"], o["file"], o["origin"], built))
        return lines + [Md("")]

    def html(self, os_: dict) -> Markup:
        h = [html("<h2>OS</h2>"),
             html("<p>Buildroot {{ v }} ({{ s }}); all sizes computed from the built files.</p>",
                  v=os_["buildroot"], s=os_["source"])]
        rows = [[name, num(x["size"]), str(x.get("entries", ""))]
                for name, x in os_["rootfs"].items()]
        if os_.get("kernel"):
            k = os_["kernel"]
            rows.append([f"Image ({k['package']})", num(k["image_size"]), ""])
        if os_.get("os_fit"):
            rows.append([os_["os_fit"]["name"], num(os_["os_fit"]["size"]), ""])
        h.append(html_table(["image", "size (bytes)", "entries"], rows, {1, 2}))
        sizes = os_["package_sizes"]
        total = sum(sizes.values()) or 1
        h.append(html("<h3>Bytes each package installed in the target</h3><p>computed from "
                      "Buildroot's build/packages-file-list.txt (the input of its graph-size)</p>"))
        h.append(html_table(["package", "installed bytes", "share"],
                            [[pkg, num(size), f"{100 * size / total:.1f} %"] for pkg, size in
                             sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))], {1, 2}))
        h.append(html("<h3>Source overrides (BR2_PACKAGE_OVERRIDE_FILE)</h3>"))
        h.append(html_table(["package", "built", "instead of", "from", "origin"],
                            [[o["package"], o["used"], o["buildroot_pins"],
                              html("<code>{{ f }}</code>", f=o["file"]), o["origin"] +
                              ("" if o.get("built", True) else
                               " (not built in this configuration)")]
                             for o in os_["overrides"]]))
        return join(h, "\n")
