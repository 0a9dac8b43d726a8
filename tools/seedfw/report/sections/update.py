"""The report's `update` section (reference page: the class docstring)."""

from __future__ import annotations

from markupsafe import Markup

from ...errors import SeedfwError
from ... import util
from ..format import html_table, missing, table
from ..safe import Md, html, join, mdf
from .base import Inputs, Section, computed, figure, unavailable


class Update(Section):
    """Field updates (RAUC): the slots this configuration declares and the newest bundle.

    Available when the build has CONFIG_UPDATE or a bundle was written for it
    (<out>/bundle/*.json, written by `invoke bundle`); otherwise `available: false` with why.
    Figures: slot size and data size (computed: the configuration, seedfw.update.slots), boot
    attempts (computed: the configuration); bundle size (computed: the .raucb on disk, from its
    record), compatible, version and signer (from the record, which `rauc info --keyring` read
    back); adaptive reuse, when <out>/bundle/adaptive.json exists (bench/update_adaptive.py):
    reused 4 KiB blocks (computed: block hashes of two images) and the bytes a streaming
    install would fetch (estimated: touched squashfs blocks compressed with zlib 9).

    Reads: <out>/config.json (UPDATE_*), <out>/bundle/*.json, <out>/bundle/adaptive.json.
    """

    name = "update"

    def data(self, inputs: Inputs) -> dict | None:
        config = inputs.config or {}
        folder = inputs.outdir / "bundle"
        records = sorted((p for p in folder.glob("*.json") if p.name != "adaptive.json"),
                         key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
        if not config.get("UPDATE") and not records:
            return unavailable("not available: CONFIG_UPDATE is off in this build and no "
                               "bundle was written for it (invoke bundle)")
        out: dict = {"available": True, "update_in_build": bool(config.get("UPDATE"))}
        if config.get("UPDATE"):
            from ...update.slots import size_value
            out["slot_size"] = computed(size_value(config.get("UPDATE_SLOT_SIZE") or "64M",
                                                   "UPDATE_SLOT_SIZE"), source="config.json")
            out["data_size"] = computed(size_value(config.get("UPDATE_DATA_SIZE") or "16M",
                                                   "UPDATE_DATA_SIZE"), source="config.json")
            out["boot_attempts"] = computed(int(config.get("UPDATE_BOOT_ATTEMPTS") or 3),
                                            "boots", "config.json")
        if records:
            rec = util.read_json(records[-1], " (a bundle record)")
            src = f"bundle/{records[-1].name}"
            try:
                out["bundle"] = {"name": str(rec["bundle"]),
                                 "size": computed(int(rec["size"]), source=src),
                                 "compatible": str(rec["compatible"]),
                                 "version": str(rec["version"]),
                                 "format": str(rec["format"]), "adaptive": str(rec["adaptive"]),
                                 "signer": str(rec.get("signer", "")),
                                 "key": str(rec.get("key", ""))}
            except (KeyError, TypeError, ValueError):
                raise SeedfwError("not a bundle record of invoke bundle", records[-1]) from None
        ad = folder / "adaptive.json"
        if ad.is_file():
            a = util.read_json(ad, " (bench/update_adaptive.py)")
            src = "bundle/adaptive.json"
            out["adaptive"] = {
                "reused_blocks": computed(a["reused_blocks"], "4 KiB blocks", src),
                "blocks": computed(a["blocks"], "4 KiB blocks", src),
                "fetched": figure(a["fetched_bytes_estimate"], "bytes", "estimated", src,
                                  "touched 128 KiB squashfs blocks, zlib 9"),
                "share": figure(round(100 * a["fetched_share_of_bundle"], 2), "%", "estimated",
                                src, "of the full bundle"),
                "change": str(a.get("change", ""))}
        return out

    @staticmethod
    def rows(u: dict) -> list[list[str]]:
        """[what, value, kind] for both renderings."""
        rows = []
        for key, label in (("slot_size", "slot size (each of rootfs.0, rootfs.1)"),
                           ("data_size", "data partition"), ("boot_attempts", "boot attempts")):
            if key in u:
                rows.append([label, f"{u[key]['value']:,} {u[key]['unit']}", u[key]["kind"]])
        b = u.get("bundle")
        if b:
            rows += [["bundle", f"{b['name']}: {b['size']['value']:,} bytes", "computed"],
                     ["compatible / version", f"{b['compatible']} / {b['version']}", "record"],
                     ["format", f"{b['format']}, adaptive {b['adaptive']}", "record"],
                     ["signature", f"{b['signer']} ({b['key']})", "record"]]
        a = u.get("adaptive")
        if a:
            rows += [["adaptive: reused 4 KiB blocks", f"{a['reused_blocks']['value']:,} of "
                      f"{a['blocks']['value']:,} ({a['change']})", "computed"],
                     ["adaptive: fetched by a streaming install", f"{a['fetched']['value']:,} "
                      f"bytes ({a['share']['value']} % of the bundle)", "estimated"]]
        return rows

    def markdown(self, u: dict) -> list[Md]:
        if not u["available"]:
            return [Md("## Update"), Md("")] + missing(u)
        lines = [Md("## Update"), Md("")] + table(["what", "value", "kind"], self.rows(u))
        if not u["update_in_build"]:
            lines += [mdf("CONFIG_UPDATE is off in this build: a device flashed from it runs "
                          "no RAUC."), Md("")]
        return lines

    def html(self, u: dict) -> Markup:
        if not u["available"]:
            return join([html("<h2>Update</h2>"), html('<p class="na">{{ n }}</p>', n=u["note"])],
                        "\n")
        return join([html("<h2>Update</h2>"),
                     html_table(["what", "value", "kind"], self.rows(u))], "\n")
