"""The report's `images` section (reference page: the class docstring)."""

from __future__ import annotations

from html import escape

from ..format import fig, html_table, missing, num, table
from .base import Inputs, Section, computed, unavailable

_CHECK_MD = {True: "matches", False: "**MISMATCH**", None: "not listed"}
_CHECK_HTML = {True: "matches", False: "<b>MISMATCH</b>", None: "not listed"}


class Images(Section):
    """Every file in <out>/images/ with its size and sha256, checked against the manifest.

    One row per file (dot-files and the build's ccache.json excepted: ccache.json records how
    the build ran, it is the `cache` section): size (computed: the file size), the sha256 of the
    bytes on disk, the format the manifest declares (else sniffed from the first bytes: elf,
    fit, lz4blk, uimage, raw) and whether the sha256 equals the one manifest.json lists
    ("matches", "MISMATCH", "not listed"). Total: the sum of the sizes (computed).

    Reads: <out>/images/, <out>/manifest.json (`images`, `artifacts`).
    Unavailable when images/ is missing or empty.
    """

    name = "images"

    def data(self, inputs: Inputs) -> dict:
        rows, note = inputs.images
        if rows is None:
            return unavailable(note)
        items = []
        for r in rows:
            ok = None if r["manifest_sha256"] is None else r["manifest_sha256"] == r["sha256"]
            items.append(dict(file=r["file"], format=r["format"], sha256=r["sha256"],
                              size=computed(r["size"], source="file size"),
                              manifest_sha256=r["manifest_sha256"], sha256_matches_manifest=ok))
        total = sum(r["size"] for r in rows)
        return dict(available=True, items=items,
                    total=computed(total, source="sum of image sizes"))

    def markdown(self, part: dict) -> list[str]:
        lines = ["## Images", ""]
        if not part["available"]:
            return lines + missing(part)
        rows = [[i["file"], i["format"] or "–", fig(i["size"]), f"`{i['sha256']}`",
                 _CHECK_MD[i["sha256_matches_manifest"]]] for i in part["items"]]
        rows.append(["**total**", "", fig(part["total"]), "", ""])
        return lines + ["Sizes computed from the files; sha256 of the bytes on disk.", ""] + \
            table(["image", "format", "size (bytes)", "sha256", "manifest"], rows, {2})

    def html(self, part: dict) -> str:
        h = ["<h2>Images</h2>"]
        if part["available"]:
            h.append(html_table(["image", "format", "size (bytes)", "sha256", "manifest"],
                                [[escape(i["file"]), escape(i["format"] or "–"),
                                  num(i["size"]["value"]), f"<code>{i['sha256']}</code>",
                                  _CHECK_HTML[i["sha256_matches_manifest"]]]
                                 for i in part["items"]], {2}))
        else:
            h.append(f'<p class="na">{escape(part["note"])}</p>')
        return "\n".join(h)
