"""The models part: every compiled model of the board's manifest, with its model card."""

from __future__ import annotations

import json

from .. import models, plan, util
from ..rknn import venv
from .base import Part

CARDS = "models.json"


class ModelsPart(Part):
    """NPU models: ONNX → .rknn with rknn-toolkit2 in its own venv, checked in its simulator.

    Kconfig symbols read: MODELS (enables it), MODEL_MANIFEST, MODELS_DTYPE_CHOICE
    (MODELS_DTYPE_INT8 / MODELS_DTYPE_FP16), MODELS_QUANT_ALGORITHM_CHOICE, MODELS_OPTIMIZATION_LEVEL,
    and per manifest entry with `kconfig: K`: MODEL_K_DTYPE_* (override) and MODEL_K_MIN_ACCURACY.
    Inputs: board/<b>/models.yaml (`target`, and per model its `compile` block: source, calibration,
    input, mean/std, metric), the pinned wheels of seedfw.rknn.wheels, the venv's lock.
    Steps: models.compile — each model from the content-addressed cache (<cache>/models/rknn/<key>),
    compiled there on a miss; a model whose simulator accuracy is below its floor stops the build
    naming the model and both numbers.
    Outputs: images/models.json (one model card per compiled model: toolkit version, target,
    dtype, file and weight bytes, compile time, FP32 and simulator accuracy, cache key, source).
    The .rknn files themselves go into the image through the image stage (seedfw.parts.firmware_image),
    which reads the same cache entries.
    """

    name = "models"
    symbols = ("MODELS", "MODEL_MANIFEST", "MODELS_DTYPE_INT8", "MODELS_DTYPE_FP16",
               "MODELS_QUANT_NORMAL", "MODELS_QUANT_MMSE", "MODELS_QUANT_KL",
               "MODELS_OPTIMIZATION_LEVEL")

    def enabled(self, values):
        return bool(values.get("MODELS"))

    def check_config(self, cfg) -> None:
        manifest = models.resolve_manifest(cfg.board, cfg.values)
        if manifest is not None and "compile:" in manifest.read_text():
            venv.require()

    def _inputs(self, ctx) -> dict:
        manifest = models.resolve_manifest(ctx.board, ctx.values)
        doc = {"symbols": {k: v for k, v in sorted(ctx.values.items())
                           if k.startswith(("MODEL_", "MODELS"))},
               "venv": venv.pin_hash(),
               "code": plan.tree_hash(util_dir(), exclude=("__pycache__",))}
        if manifest is not None and manifest.is_file():
            doc["manifest"] = plan.tree_hash(manifest.parent)
        return doc

    def steps(self, ctx):
        def run(step):
            ms = models.for_build(ctx.board, ctx.values, progress=ctx.progress, log=step.log)
            cards = [dict(m.card, file_bytes=m.size, sha256=m.sha256, cached=m.cached)
                     for m in ms if m.card]
            # The compiled blobs live in the model cache, by their inputs; a restore from the
            # artifact store on another machine must bring the very bytes these cards describe.
            step.wrote("models", [f for m in ms if m.card
                                  for f in (m.path, m.path.parent / "card.json")])
            built = ctx.build_dir("models") / CARDS
            util.write_json(built, {"models": cards,
                                    "frame_rate": ctx.values.get("MODEL_FRAME_RATE", 30)})
            self.install(step, {CARDS: built}, ctx.images)

        from ..rknn import compile as rknn_compile
        # version 2: the compiled blobs travel with the cards through the artifact store
        return [plan.Step("models.compile", run, inputs=lambda: self._inputs(ctx), version="2",
                          package="models", outputs=(ctx.images / CARDS,),
                          shared_roots={"models": rknn_compile.cache_root()})]

    def artifacts(self, ctx):
        return [ctx.images / CARDS]

    def sbom(self, ctx) -> list[dict]:
        """The toolkit (proprietary, named, never shipped) and each compiled model's source (a
        pinned wheel's licence, or seedfw's own recipe), from the model cards."""
        out = [{"type": "application", "name": venv.TOOLKIT, "version": venv.TOOLKIT_VERSION,
                "licenses": [{"license": {"name": "LicenseRef-RKNN-SDK (Rockchip's RKNN SDK "
                                                  "licence; the wheel declares none)"}}],
                "properties": [{"name": "seedfw:note", "value": "host tool: compiles the models"}],
                "files": []}]
        path = ctx.images / CARDS
        if path.is_file():
            for card in json.loads(path.read_text())["models"]:
                src = card.get("source", {})
                out.append({"type": "machine-learning-model", "name": card["name"],
                            "version": card["sha256"][:12],
                            "licenses": [{"license": {"name": src.get("licence", "unknown")}}],
                            "hashes": [{"alg": "SHA-256", "content": card["sha256"]}],
                            "properties": [{"name": "seedfw:note",
                                            "value": json.dumps(src, sort_keys=True)}],
                            "files": []})
        return out


def util_dir():
    """The model compiler's own code (seedfw.rknn): its hash is part of the step's inputs."""
    from pathlib import Path
    return Path(venv.__file__).resolve().parent
