"""Provenance of report figures: where a measured figure came from, and whether a figure was made
from synthetic data. The kind (computed / estimated / measured) says *how* a number was obtained;
this says *from what*, and every renderer prints the two together (`kind_text`):

    measured (recorded, synthetic)           register values made up for tests, decoded by seedfw
    measured (emulated in QEMU 7.2.22, virt) read back from a guest in an emulator
    measured (live, probe cmsisdap:0001)     read back from a board through a debug probe
    measured (provenance unknown)            the input does not say: never shown as plain measured
    estimated (for synthetic filler model blobs)

Figure fields (schema report-v1.json `$defs/provenance`, `$defs/figure`):
    provenance: {source, label, synthetic}   required on every measured figure
    synthetic:  what synthetic input the figure is made from (absent for real inputs)
"""

from __future__ import annotations

from ..counters import provenance as counter_provenance

# live / recorded / emulated: counters (seedfw.counters.provenance); benchmark: a benchmark run
# (e.g. the decompressor's cycles/byte); unknown: the input does not say.
SOURCES = counter_provenance.SOURCES + ("benchmark", "unknown")


def for_figure(prov) -> dict:
    """The compact provenance a figure carries, from a counters document's provenance or a
    benchmark result's {source: benchmark, where?, label?}; anything else is 'unknown'."""
    if isinstance(prov, dict) and prov.get("source") in counter_provenance.SOURCES:
        return dict(source=prov["source"], label=counter_provenance.label(prov),
                    synthetic=counter_provenance.is_synthetic(prov))
    if isinstance(prov, dict) and prov.get("source") == "benchmark":
        where = f" on {prov['where']}" if isinstance(prov.get("where"), str) else ""
        text = prov.get("label") if isinstance(prov.get("label"), str) else f"benchmark{where}"
        return dict(source="benchmark", label=text, synthetic=bool(prov.get("synthetic")))
    return dict(source="unknown", label="provenance unknown", synthetic=False)


def ensure(fig: dict, default: dict | None = None) -> dict:
    """A measured figure always leaves with a provenance (the schema requires one: a measured
    figure must never read as plain 'measured'): its own, else `default` (what the caller
    knows about the input, e.g. 'a benchmark run'), else 'provenance unknown'."""
    if fig.get("kind") != "measured":
        return fig
    return dict(fig, provenance=for_figure(fig.get("provenance") or default))


def kind_text(fig: dict) -> str:
    """'measured (recorded, synthetic)', 'estimated (for synthetic filler model blobs)',
    'computed' — the kind with everything a reader must know next to it."""
    quals = []
    prov = fig.get("provenance")
    if isinstance(prov, dict) and prov.get("label"):
        quals.append(prov["label"])
    elif fig["kind"] == "measured":
        quals.append("provenance unknown")
    if fig.get("synthetic") and not (isinstance(prov, dict) and prov.get("synthetic")):
        quals.append(f"for synthetic {fig['synthetic']}")
    return f"{fig['kind']} ({', '.join(quals)})" if quals else fig["kind"]


def describe(prov: dict) -> str:
    """One sentence for a part's provenance (the compact one plus its `detail`): the label, how,
    where and when; for a recording also the recording's own how / by / when."""
    detail = prov.get("detail") if isinstance(prov.get("detail"), dict) else {}
    text = prov["label"]
    if detail.get("how"):
        text += f": {detail['how']}"
    for key, word in (("probe", "probe"), ("target", "at"), ("host", "host"), ("when", "on")):
        if detail.get(key) and not (key == "probe" and "probe" in prov["label"]):
            text += f"; {word} {detail[key]}"
    rec = detail.get("recording")
    if detail.get("source") == "recorded":
        text += f"; recording {detail.get('file', '?')}"
        if isinstance(rec, dict):
            text += ": " + ", ".join(f"{k} {rec[k]}" if k != "how" else str(rec[k])
                                     for k in ("how", "by", "where", "when") if rec.get(k))
        else:
            text += " (says nothing about who made it, where or when)"
    return text


def flagged(fig: dict) -> bool:
    """Shown emphasised: anything not exactly computed from real artifacts."""
    return fig["kind"] != "computed" or bool(fig.get("synthetic"))
