"""The report's `images` section (reference page: the class docstring)."""

from __future__ import annotations

from ..format import fig, html_table, missing, num, table
from ..safe import Md, html, mdcode
from .base import Inputs, Section, computed, unavailable

_CHECK_MD = {True: "matches", False: Md("**MISMATCH**"), None: "not listed"}
_CHECK_HTML = {True: "matches", False: html("<b>MISMATCH</b>"), None: "not listed"}


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
        lines = [Md("## Images"), Md("")]
        if not part["available"]:
            return lines + missing(part)
        # a code span when the digest is plain hex (it always is when seedfw computed it)
        rows = [[i["file"], i["format"] or "–", fig(i["size"]), mdcode(i["sha256"]),
                 _CHECK_MD[i["sha256_matches_manifest"]]] for i in part["items"]]
        rows.append([Md("**total**"), "", fig(part["total"]), "", ""])
        return lines + [Md("Sizes computed from the files; sha256 of the bytes on disk."),
                        Md("")] + \
            table(["image", "format", "size (bytes)", "sha256", "manifest"], rows, {2})

    def html(self, part: dict) -> str:
        if not part["available"]:
            return html('<h2>Images</h2>\n<p class="na">{{ note }}</p>', note=part["note"])
        return html("<h2>Images</h2>\n{{ table }}", table=html_table(
            ["image", "format", "size (bytes)", "sha256", "manifest"],
            [[i["file"], i["format"] or "–", num(i["size"]["value"]),
              html("<code>{{ s }}</code>", s=i["sha256"]),
              _CHECK_HTML[i["sha256_matches_manifest"]]] for i in part["items"]], {2}))
