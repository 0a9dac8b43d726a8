"""Report section: the NPU models a build embeds, from <out>/images/models.json (the model cards
the models part, seedfw.parts.models, writes).

    json(outdir)      -> dict (available, rows, frame_rate, assumption, note)
    markdown(doc)     -> list of lines
    html(doc)         -> str (an HTML fragment)

Each figure says where it came from: accuracy is `emulated (rknn-toolkit2 <ver> simulator)` —
the toolkit's simulator on the PC, not the board's NPU; weight bytes per inference and per second
are `computed from the compiled model` (the toolkit's own weight-memory total for that .rknn)
under the stated assumption; sizes are the compiled file's bytes.
"""

from __future__ import annotations

from markupsafe import Markup

from .. import documents, safe
from ..format import html_table, table
from ..safe import Md, mdf

CARDS = "models.json"
ASSUMPTION = ("every weight byte is read from DDR once per inference (no weight reuse across "
              "frames in on-chip SRAM); activations not included")
COMPUTED = "computed from the compiled model"
# The accuracy column: rknn-toolkit2's simulator on the PC, never the board's NPU (the card's
# field is `simulated`; it was `npu`, read as a synonym: seedfw.models.cards).
SIMULATED = "simulated (rknn-toolkit2 simulator)"


def json(outdir) -> dict:
    found = documents.model_cards(outdir)      # through the door, every field type-checked
    if found is None:
        return {"available": False, "note": f"no {CARDS} (CONFIG_MODELS off, or no compiled "
                                            "models in the manifest)"}
    _, doc = found
    rate = doc.get("frame_rate") or 30
    rows = []
    for c in doc.get("models", []):
        weights = c.get("weight_bytes")
        rows.append({
            "name": c["name"], "target": c["target"], "dtype": c["dtype"],
            "file_bytes": c["file_bytes"], "sha256": c["sha256"],
            "metric": c["metric"], "fp32": c["fp32"], "simulated": c["simulated"],
            "drop": round(c["fp32"] - c["simulated"], 6),
            "accuracy_kind": c.get("simulator") or
            f"emulated (rknn-toolkit2 {c.get('toolkit_version')} simulator)",
            "cosine": c.get("cosine"),
            "weight_bytes_per_inference": weights,
            "weight_bytes_per_second": weights * rate if weights is not None else None,
            "internal_bytes": c.get("internal_bytes"),
            "bandwidth_kind": COMPUTED,
            "compile_seconds": c.get("compile_seconds"),
            "toolkit_version": c.get("toolkit_version"), "source": c.get("source"),
        })
    return {"available": bool(rows), "rows": rows, "frame_rate": rate, "assumption": ASSUMPTION,
            "note": None if rows else "no compiled models"}


def _fmt(v, digits=4):
    return "—" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else f"{v:,}")


def _table(doc) -> tuple[list[str], list[list[str]]]:
    head = ["model", "target", "dtype", "bytes", "metric", "FP32", SIMULATED, "drop",
            "weight B/inference", f"weight B/s at {doc['frame_rate']} fps"]
    body = [[r["name"], r["target"], r["dtype"], _fmt(r["file_bytes"]), r["metric"],
             _fmt(r["fp32"]), _fmt(r["simulated"]), _fmt(r["drop"]),
             _fmt(r["weight_bytes_per_inference"]), _fmt(r["weight_bytes_per_second"])]
            for r in doc["rows"]]
    return head, body


def markdown(doc) -> list[Md]:
    lines = [Md("## NPU models"), Md("")]
    if not doc.get("available"):
        return lines + [mdf("Not available: {}", doc.get("note")), Md("")]
    head, body = _table(doc)
    lines += table(head, body)[:-1]
    kinds = sorted({r["accuracy_kind"] for r in doc["rows"]})
    lines += [Md(""), mdf("- FP32 / simulated / drop: {}; FP32 is ONNX Runtime on the same "
                          "held-out inputs; not measured on the board's NPU.", ", ".join(kinds)),
              mdf("- weight bytes: {} (the toolkit's weight-memory total), assuming {}, at "
                  "MODEL_FRAME_RATE = {} frames/s.", COMPUTED, ASSUMPTION, doc["frame_rate"]),
              Md("")]
    return lines


def html(doc) -> Markup:
    if not doc.get("available"):
        return safe.html("<h2>NPU models</h2><p>Not available: {{ n }}</p>", n=doc.get("note"))
    head, body = _table(doc)
    kinds = ", ".join(sorted({r["accuracy_kind"] for r in doc["rows"]}))
    return safe.html("<h2>NPU models</h2>{{ t }}<p>FP32 / simulated / drop: {{ kinds }}, not "
                     "measured on the board's NPU. Weight "
                     "bytes: {{ computed }}, assuming {{ assumption }}, at {{ rate }} "
                     "frames/s.</p>", t=html_table(head, body), kinds=kinds, computed=COMPUTED,
                     assumption=ASSUMPTION, rate=doc["frame_rate"])


from .base import Inputs, Section  # noqa: E402  (the section class wraps the functions above)


class Models(Section):
    """The NPU models the build embeds (images/models.json, the model cards the models part
    writes): per model the target, dtype, compiled file bytes, accuracy against ONNX Runtime FP32
    on the same held-out inputs — `emulated (rknn-toolkit2 <ver> simulator)`, the toolkit's
    simulator on the PC, not the board's NPU — and the weight bytes read per inference and per
    second at MODEL_FRAME_RATE (`computed from the compiled model`, each weight read once per
    inference). Absent from the report when the build compiled no model.
    """

    name = "models"

    def data(self, inputs: Inputs) -> dict | None:
        doc = json(inputs.outdir)
        return doc if doc["available"] else None

    def markdown(self, doc: dict) -> list[str]:
        return markdown(doc)

    def html(self, doc: dict) -> str:
        return html(doc)
