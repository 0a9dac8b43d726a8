"""Model cards (images/models.json, one per compiled model): the names of their fields, and the
old names still read.

Why a rename: the accuracy a card gives is rknn-toolkit2's simulator on the PC, run on held-out
inputs against ONNX Runtime FP32; it was called `npu`, which reads like a result of the board's
NPU. It is `simulated` now (and `npu_boxes`, the detector's box count, `simulated_boxes`). A card
written before — in an output directory built before, or a driver card in the model cache — says
`npu`: `current` reads it as a synonym, so every reader (compile, the models part, the report,
the tuner, `invoke models`) sees one name. The model cache's driver cards keep the old key (the
driver's sha256 is part of every compiled model's cache key: renaming a JSON key there would
recompile every model for bytes that do not change), and are renamed here when read.
"""

from __future__ import annotations

# old name -> current name
RENAMED = {"npu": "simulated", "npu_boxes": "simulated_boxes"}


def current(card: dict) -> dict:
    """A copy of `card` with the current field names (an old name's value moves to the new
    name unless the card already has it; the old name is dropped either way)."""
    out = dict(card)
    for old, new in RENAMED.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out
