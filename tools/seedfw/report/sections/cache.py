"""The report's `cache` section (reference page: the class docstring). Moved here from
report/cache.py."""

from __future__ import annotations

from markupsafe import Markup

from ... import cache as artifact_cache
from ...secrets import redact
from .. import documents
from ..format import html_table, table
from ..safe import Md, html, join, mdf
from .base import Inputs, Section


def _measured(value, unit: str, label: str, source: str, note: str | None = None) -> dict:
    fig = dict(value=value, unit=unit, kind="measured", source=source,
               provenance=dict(source="recorded", label=label, synthetic=False))
    if note:
        fig["note"] = note
    return fig


class Cache(Section):
    """This build's compiler-cache (ccache) figures, and the time a warm remote cache saves.

    Present only when the build compiled something (<out>/images/ccache.json, written by
    seedfw.cache.ccache.finish from ccache's stats log of the build's own compiles); otherwise the
    `cache` key is absent. Figures, all measured (recorded: the stats log of this build): hits,
    misses, hit rate, and with a remote cache its hits, misses and bytes read (unknown with
    ccache 4.7, which counts results, not bytes); warnings when the remote did not answer.
    time_saved: cold − warm seconds of the U-Boot + TF-A compile steps as bench/cache_speed.py
    measured them, from the result file given with `invoke report --ccache-bench FILE` (never
    looked up in the benchmark cache), labelled as the bench's on its host, not this build's;
    absent without one.
    store: what the artifact store (seedfw.cache) did in this build, from logs/steps.jsonl
    (measured, recorded: the build's own step records): steps restored, run and up to date, the
    hit rate (restored / (restored + run)), bytes restored and stored, and where restored steps
    came from (local, oci). Present whenever the build left step records.
    """

    name = "cache"

    def data(self, inputs: Inputs) -> dict | None:
        store = _store(artifact_cache.summary(inputs.outdir))   # bounded, typed (seedfw.cache)
        doc = documents.ccache_summary(inputs.outdir)     # type-checked (report/documents.py)
        if doc is None:
            return dict(available=True, store=store) if store else None
        label = "ccache stats log of this build"
        src = "images/ccache.json"
        # Redacted again here: a ccache.json written before seedfw.secrets, or by hand, may
        # still hold a credential, and the report is the file that gets passed around.
        remote = redact(doc["remote"]) if doc.get("remote") else None
        out = dict(available=True, remote=remote, source=doc.get("source"),
                   hits=_measured(doc["hits"], "compiles", label, src),
                   misses=_measured(doc["misses"], "compiles", label, src),
                   hit_rate=_measured(round(100 * doc["hit_rate"], 1), "%", label, src),
                   remote_hits=_measured(doc.get("remote_hits", 0), "compiles", label, src),
                   remote_misses=_measured(doc.get("remote_misses", 0), "compiles", label, src),
                   remote_read=None if doc.get("remote_read_bytes") is None else
                   _measured(doc["remote_read_bytes"], "bytes", label, src),
                   remote_read_note=None if doc.get("remote_read_bytes") is not None else
                   "bytes read from the remote: unknown (ccache 4.7 counts results, not bytes)",
                   warnings=[f"remote {redact(k)} did not answer at build start ({redact(v)}): "
                             "local cache only"
                             for k, v in (doc.get("remote_unreachable") or {}).items()] +
                   ([f"{doc['remote_errors']} compile(s) could not reach the remote during the "
                     "build"] if doc.get("remote_errors") else []), store=store)
        bench = documents.ccache_bench(inputs.ccache_bench)   # only as given
        if bench:
            saved = round(bench["cold_s"] - bench["warm_s"], 1)
            out["time_saved"] = dict(
                value=saved, unit="s", kind="measured", source=bench["path"],
                provenance=dict(source="benchmark", synthetic=False,
                                label=f"bench/cache_speed.py on the host {bench['host']}, "
                                      f"{bench['date']}, not this build"),
                note=f"U-Boot + TF-A compile steps: cold {bench['cold_s']} s, warm remote "
                     f"{bench['warm_s']} s ({bench['ratio']}x); measured by the bench, not by "
                     "this build")
        return out

    def markdown(self, c: dict) -> list[Md]:
        lines = []
        if c.get("store"):
            lines += [Md("## Artifact store"), Md("")]
            lines += table(["figure", "value", "unit", "kind"], _store_rows(c["store"]), {1})[:-1]
            lines += [Md("")]
        if "hits" in c:
            lines += [Md("## Compiler cache (ccache)"), Md("")]
            lines += table(["figure", "value", "unit", "kind"], _rows(c), {1})[:-1]
            lines += [Md("")] + [mdf("- {}", t) for t in _lines(c)] + [Md("")]
        return lines

    def html(self, c: dict) -> Markup:
        parts = []
        if c.get("store"):
            parts += [html("<h2>Artifact store</h2>"),
                      html_table(["figure", "value", "unit", "kind"], _store_rows(c["store"]))]
        if "hits" in c:
            parts += [html("<h2>Compiler cache (ccache)</h2>"),
                      html_table(["figure", "value", "unit", "kind"], _rows(c))] + \
                     [html("<p>{{ t }}</p>", t=t) for t in _lines(c)]
        return join(parts, "\n")


def _store(doc: dict | None) -> dict | None:
    """The artifact store's figures of this build (seedfw.cache.summary), as report figures."""
    if not doc:
        return None
    label = "this build's step records"
    src = "logs/steps.jsonl"
    rate = doc["hit_rate"]
    return dict(
        steps=_measured(doc["steps"], "steps", label, src),
        restored=_measured(doc["restored"], "steps", label, src),
        ran=_measured(doc["ran"], "steps", label, src),
        up_to_date=_measured(doc["skipped"], "steps", label, src),
        hit_rate=None if rate is None else _measured(round(100 * rate, 1), "%", label, src,
                                                     "restored / (restored + ran)"),
        restored_bytes=_measured(doc["restored_bytes"], "bytes", label, src),
        stored_bytes=_measured(doc["stored_bytes"], "bytes", label, src),
        sources={k: int(v) for k, v in sorted(doc["sources"].items())})


def _store_rows(st: dict) -> list[list[str]]:
    rows = [_row("steps restored", st["restored"]), _row("steps run", st["ran"]),
            _row("steps up to date", st["up_to_date"]), _row("hit rate", st["hit_rate"]),
            _row("bytes restored", st["restored_bytes"]),
            _row("bytes newly stored", st["stored_bytes"])]
    rows += [[f"restored from {name}", f"{n:,}", "steps", "measured (this build's step records)"]
             for name, n in st["sources"].items()]
    return rows


def _row(name: str, f: dict | None) -> list[str]:
    if f is None:
        return [name, "unknown", "", ""]
    kind = f"{f['kind']} ({f['provenance']['label']})"
    return [name, f"{f['value']:,}" if isinstance(f["value"], int) else str(f["value"]),
            f["unit"], kind]


def _rows(c: dict) -> list[list[str]]:
    rows = [_row("hits", c["hits"]), _row("misses", c["misses"]),
            _row("hit rate", c["hit_rate"])]
    if c.get("remote"):
        rows += [_row("remote hits", c["remote_hits"]), _row("remote misses", c["remote_misses"]),
                 _row("bytes read from the remote", c["remote_read"])]
    if c.get("time_saved"):
        rows.append(_row("time saved per warm-remote build", c["time_saved"]))
    return rows


def _lines(c: dict) -> list[str]:
    out = [f"Remote: {c['remote'] or 'none (local cache only)'}. Source: {c['source']}."]
    if c.get("remote") and c.get("remote_read_note"):
        out.append(c["remote_read_note"] + ".")
    if c.get("time_saved"):
        out.append(f"Time saved: {c['time_saved']['note']}.")
    else:
        out.append("Time saved: no bench/cache_speed.py result given (--ccache-bench).")
    return out + [f"Warning: {w}." for w in c["warnings"]]
