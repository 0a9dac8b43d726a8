"""The models part: every compiled model of the board's manifest, with its model card."""

from __future__ import annotations

import json
from pathlib import Path

from .. import models, plan, util
from ..models.rknn import venv
from .base import Output, Part

CARDS = "models.json"


class ModelsPart(Part):
    """NPU models: ONNX → .rknn with rknn-toolkit2 in its own venv, checked in its simulator.

    Kconfig symbols read: MODELS (enables it), MODEL_MANIFEST, MODELS_DTYPE_CHOICE
    (MODELS_DTYPE_INT8 / MODELS_DTYPE_FP16), MODELS_QUANT_ALGORITHM_CHOICE, MODELS_OPTIMIZATION_LEVEL,
    and per manifest entry with `kconfig: K`: MODEL_K_DTYPE_* (override) and MODEL_K_MIN_ACCURACY.
    Inputs: board/<b>/models.yaml (`target`, and per model its `compile` block: source, calibration,
    input, mean/std, metric), the pinned wheels of seedfw.models.rknn.wheels, the venv's lock.
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

    provides = ("models",)
    when = "MODELS=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("MODELS"))

    def check_config(self, cfg) -> None:
        manifest = models.resolve_manifest(cfg.board, cfg.values)
        if manifest is None:
            return
        from ..errors import SeedfwError
        from ..reading import plain, read_text
        try:
            text = read_text(manifest, "yaml")
        except SeedfwError as exc:     # a manifest that is not there: one line naming the symbol
            shown = cfg.values.get("MODEL_MANIFEST") or manifest
            raise SeedfwError(f"model manifest {plain(str(shown))}: {exc.message}",
                              Path(getattr(cfg, "outdir", ".")) / ".config",
                              "CONFIG_MODEL_MANIFEST") from None
        if "compile:" in text:
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
            # Whether this run compiled or took the cache is a fact of the run (its log says it),
            # not of the model: the cards are an artifact and must not depend on it.
            cards = [dict(m.card, file_bytes=m.size, sha256=m.sha256)
                     for m in ms if m.card]
            # The compiled blobs live in the model cache, by their inputs; a restore from the
            # artifact store on another machine must bring the very bytes these cards describe.
            step.wrote("models", [f for m in ms if m.card
                                  for f in (m.path, m.path.parent / "card.json")])
            built = ctx.build_dir("models") / CARDS
            util.write_json(built, {"models": cards,
                                    "frame_rate": ctx.values.get("MODEL_FRAME_RATE", 30)})
            self.install(step, {CARDS: built}, ctx.images)

        from ..models.rknn import compile as rknn_compile
        # version 2: the compiled blobs travel with the cards through the artifact store;
        # 3: the cards no longer say whether this run compiled (a fact of the run, not the model);
        # 4: the simulator's accuracy is `simulated`, no longer `npu` (seedfw.models.cards)
        return [plan.Step("models.compile", run, inputs=lambda: self._inputs(ctx), version="4",
                          package="models",
                          shared_roots={"models": rknn_compile.cache_root()})]

    def outputs(self, ctx):
        return [Output(ctx.images / CARDS, "models.compile", ("models",))]

    def sbom(self, ctx) -> list:
        """The toolkit (proprietary, named, build scope: never shipped) and each compiled model
        with where it came from (a pinned wheel and its licence, or seedfw's own recipe), from
        the model cards (images/models.json, read through the door)."""
        from .. import reading
        from ..sbom import model
        out = [self.component(venv.TOOLKIT, venv.TOOLKIT_VERSION, "LicenseRef-RKNN-SDK", [],
                              "application", **_toolkit_identity(), scope="build",
                              ref=f"tool:{venv.TOOLKIT}",
                              supplier="Rockchip Electronics Co., Ltd.",
                              purl=model.purl("pypi", venv.TOOLKIT, venv.TOOLKIT_VERSION),
                              note="host tool: compiles the models (Rockchip's RKNN SDK "
                                   "licence; the wheel declares none)")]
        path = ctx.images / CARDS
        if not path.is_file():
            return out
        cards = reading.loads_json_strict(reading.read_bytes(path, "json"), path)
        from ..models.rknn import compile as rknn_compile
        for card in cards.get("models", []):
            src = card.get("source") or {}
            deps = [f"tool:{venv.TOOLKIT}"]
            if src.get("kind") == "wheel":
                # The pinned wheel the ONNX model was taken from (seedfw.models.rknn.wheels).
                wref = f"wheel:{src['name']}"
                deps.append(wref)
                if wref not in {c.ref for c in out}:
                    from ..models.rknn import wheels
                    pinned = wheels.WHEELS.get(src["name"])
                    whl = pinned.source.cache_dir() / str(src.get("archive")) if pinned else None
                    out.append(self.component(
                        src["name"], str(src.get("version")), str(src.get("licence")), [],
                        "library", ref=wref, scope="build", supplier="RapidAI (RapidOCR)",
                        supplier_url="https://github.com/RapidAI/RapidOCR",
                        purl=model.purl("pypi", src["name"], str(src.get("version"))),
                        hashes=(model.file_hashes(whl) if whl and whl.is_file() else
                                {"SHA-256": str(src.get("archive_sha256"))}),
                        filename=str(src.get("archive")),
                        note="wheel the models' ONNX files come from (PaddleOCR's PP-OCR models)"))
            own = src.get("kind") == "recipe"
            c = self.component(card["name"], card["sha256"][:12],
                               model.OWN_LICENCE if own else str(src.get("licence") or
                                                                  "NOASSERTION"),
                               [], "machine-learning-model", ref=f"model:{card['name']}",
                               supplier="seedfw" if own else "RapidAI (RapidOCR)",
                               supplier_url="" if own else "https://github.com/RapidAI/RapidOCR",
                               purl=model.purl("generic", card["name"], card["sha256"][:12],
                                               namespace="seedfw-models"),
                               hashes={"SHA-256": card["sha256"]}, filename=f"{card['name']}.rknn",
                               depends=deps, note=json.dumps(src, sort_keys=True))
            blob = rknn_compile.cache_root() / "rknn" / str(card.get("cache_key")) / "model.rknn"
            if blob.is_file():
                c.hashes = model.file_hashes(blob)    # the compiled model the card describes
            c.properties["seedfw:source-kind"] = str(src.get("kind") or "")
            c.properties["seedfw:toolkit"] = f"{card.get('toolkit')} {card.get('toolkit_version')}"
            out.append(c)
        return out


def _toolkit_identity() -> dict:
    """Hashes and file name of the installed toolkit: the lock pins its wheel's sha256, but the
    wheel itself is not kept after install, so SHA-512 (and sha256) are of its installed
    RECORD (every installed file with its sha256), and the wheel's pinned sha256 a property."""
    from ..sbom import model
    wheel, sha = "", ""
    for line in venv.LOCK.read_text().splitlines():
        if line.startswith(f"{venv.TOOLKIT}=="):
            sha = line.split("--hash=sha256:", 1)[-1].split()[0]
            wheel = line.split("#", 1)[-1].strip() if "#" in line else ""
    dist = venv.TOOLKIT.replace("-", "_") + f"-{venv.TOOLKIT_VERSION}.dist-info"
    record = venv.venv_dir() / "lib" / ("python%d.%d" % venv.PYTHON_VERSION) / "site-packages" \
        / dist / "RECORD"
    props = {"seedfw:wheel-sha256": sha}
    if record.is_file():
        props["seedfw:hash-of"] = f"{dist}/RECORD of the installed wheel"
    return {"hashes": model.file_hashes(record) if record.is_file() else {},
            "filename": wheel, "properties": props}


def util_dir():
    """The model compiler's own code (seedfw.models.rknn): its hash is part of the step's inputs."""
    from pathlib import Path
    return Path(venv.__file__).resolve().parent
