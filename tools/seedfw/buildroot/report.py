"""The report's OS section (seedfw.report.model adds it when the build made a rootfs).

Figures, each with where it comes from: rootfs image sizes and entries (images/buildroot.json,
computed from the files), bytes each Buildroot package installed in the target (Buildroot's
build/packages-file-list.txt, the input of its graph-size), the kernel (images/Image and its
pinned package), the OS FIT, and the source overrides the build used.
"""

from __future__ import annotations

import json
from pathlib import Path


def section(outdir: Path) -> dict | None:
    images = Path(outdir) / "images"
    try:
        info = json.loads((images / "buildroot.json").read_text())
    except (OSError, ValueError):
        return None
    try:
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


def markdown(report: dict) -> list[str]:
    os_ = report.get("os")
    if not os_:
        return []
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


def html(report: dict) -> list[str]:
    """The same section for report.html (seedfw.report.html calls this, like the markdown one)."""
    from ..report.html import _table
    from ..report.markdown import num
    from html import escape as e
    os_ = report.get("os")
    if not os_:
        return []
    h = ["<h2>OS</h2>", f"<p>Buildroot {e(str(os_['buildroot']))} ({e(os_['source'])}); all "
         "sizes computed from the built files.</p>"]
    rows = [[e(name), num(x["size"]), str(x.get("entries", ""))]
            for name, x in os_["rootfs"].items()]
    if os_.get("kernel"):
        k = os_["kernel"]
        rows.append([f"Image ({e(str(k['package']))})", num(k["image_size"]), ""])
    if os_.get("os_fit"):
        rows.append([e(os_["os_fit"]["name"]), num(os_["os_fit"]["size"]), ""])
    h.append(_table(["image", "size (bytes)", "entries"], rows, {1, 2}))
    sizes = os_["package_sizes"]
    total = sum(sizes.values()) or 1
    h.append("<h3>Bytes each package installed in the target</h3><p>computed from Buildroot's "
             "build/packages-file-list.txt (the input of its graph-size)</p>")
    h.append(_table(["package", "installed bytes", "share"],
                    [[e(pkg), num(size), f"{100 * size / total:.1f} %"] for pkg, size in
                     sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))], {1, 2}))
    h.append("<h3>Source overrides (BR2_PACKAGE_OVERRIDE_FILE)</h3>")
    h.append(_table(["package", "built", "instead of", "from", "origin"],
                    [[e(o["package"]), e(o["used"]), e(o["buildroot_pins"]),
                      f"<code>{e(o['file'])}</code>", e(o["origin"]) +
                      ("" if o.get("built", True) else " (not built in this configuration)")]
                     for o in os_["overrides"]]))
    return h
