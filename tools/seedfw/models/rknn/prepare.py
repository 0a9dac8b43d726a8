"""Runs INSIDE the rknn venv (numpy 1.26, onnx 1.18, scikit-learn, Pillow): makes a model's inputs.

    python prepare.py request.json      # prints one JSON line: what it wrote

Recipes (request "recipe"):
  digits  trains a small CNN on scikit-learn's load_digits with numpy (fixed seed, 1257/540 split),
          exports it with onnx.helper, and writes the calibration set (training images) and the
          held-out set (test images + labels). Raw pixel values 0..16; the ONNX graph expects
          them divided by 16 (the model's mean/std do that on the NPU).
  text    renders text lines with Pillow's bundled font on white images (seeded), for a text
          detector: a calibration set and a held-out set (no labels: the metric compares against
          ONNX Runtime FP32's boxes).
  text_lines  single rendered lines, half turned by 180 degrees, labelled (for a text
          direction classifier).
Why here and not in the project's environment: the pinned numpy/onnx/scikit-learn live in the venv,
so the trained weights (and so the ONNX sha256) depend on one locked set of versions.
Standalone on purpose: it must not import seedfw (whose dependencies are not in the venv).
"""

from __future__ import annotations

import json
import sys

import numpy as np


def train_digits(req: dict) -> dict:
    from sklearn.datasets import load_digits
    x = load_digits().images.astype(np.float32)            # (1797, 8, 8), values 0..16
    y = load_digits().target.astype(np.int64)
    rng = np.random.RandomState(req.get("seed", 0))
    order = rng.permutation(len(x))
    train, test = order[:1257], order[1257:]                 # 1257 / 540
    xs = x / 16.0
    channels, epochs, lr = req.get("channels", 8), req.get("epochs", 40), req.get("lr", 0.05)
    w1 = rng.normal(0, 0.3, (channels, 9)).astype(np.float32)       # conv 3x3, 1 -> C, pad 1
    b1 = np.zeros(channels, np.float32)
    w2 = rng.normal(0, 0.05, (10, channels * 64)).astype(np.float32)  # dense C*8*8 -> 10
    b2 = np.zeros(10, np.float32)

    def im2col(batch):                                       # (N, 8, 8) -> (N, 64, 9)
        p = np.pad(batch, ((0, 0), (1, 1), (1, 1)))
        cols = [p[:, i:i + 8, j:j + 8] for i in range(3) for j in range(3)]
        return np.stack(cols, -1).reshape(len(batch), 64, 9)

    def forward(batch):
        cols = im2col(batch)
        pre = cols @ w1.T + b1                              # (N, 64, C)
        act = np.maximum(pre, 0)
        flat = act.transpose(0, 2, 1).reshape(len(batch), -1)   # NCHW flatten order
        return cols, pre, flat, flat @ w2.T + b2

    for _ in range(epochs):
        for at in range(0, len(train), 32):
            idx = train[at:at + 32]
            cols, pre, flat, logits = forward(xs[idx])
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            g = p / len(idx)                                 # d loss / d logits
            gw2, gb2 = g.T @ flat, g.sum(0)
            gflat = (g @ w2).reshape(len(idx), channels, 64).transpose(0, 2, 1)
            gpre = gflat * (pre > 0)
            gw1 = np.einsum("npc,npk->ck", gpre, cols)
            gb1 = gpre.sum((0, 1))
            w1 -= lr * gw1; b1 -= lr * gb1; w2 -= lr * gw2; b2 -= lr * gb2
        train = train[rng.permutation(len(train))]
    acc = float((forward(xs[test])[3].argmax(1) == y[test]).mean())

    from onnx import TensorProto, helper, numpy_helper, save
    conv_w = w1.reshape(channels, 1, 3, 3)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1],
                          kernel_shape=[3, 3]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Flatten", ["r"], ["f"], axis=1),
         helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], transB=1)],
        "digits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(conv_w, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, producer_name="seedfw.models.rknn.prepare",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, req["onnx"])
    calib = x[train[:req.get("calibration_count", 100)]][:, None]      # raw NCHW
    # .npy, not .npz: a zip member carries the time it was written, and these files are hashed.
    np.save(req["calib"], calib)
    np.save(req["eval"], x[test][:, None])
    np.save(req["labels"], y[test])
    return {"numpy_top1": acc, "train": len(train), "test": len(test)}


WORDS = ("seedfw", "RK3588", "NPU", "edge", "vision", "board", "firmware", "invoke", "build",
         "model", "text", "detector", "42", "2026", "OCR", "camera", "frame", "line")


def render_text(req: dict) -> dict:
    from PIL import Image, ImageDraw, ImageFont
    h, w = req["height"], req["width"]

    def images(seed, count):
        rng = np.random.RandomState(seed)
        out = []
        for _ in range(count):
            img = Image.new("RGB", (w, h), tuple(int(v) for v in rng.randint(200, 256, 3)))
            draw = ImageDraw.Draw(img)
            y = int(rng.randint(4, 20))
            while y < h - 30:
                size = int(rng.randint(16, 30))
                font = ImageFont.load_default(size=size)
                words = " ".join(WORDS[i] for i in rng.randint(0, len(WORDS), rng.randint(1, 4)))
                draw.text((int(rng.randint(2, w // 3)), y), words, font=font,
                          fill=tuple(int(v) for v in rng.randint(0, 80, 3)))
                y += size + int(rng.randint(8, 30))
            out.append(np.asarray(img, np.float32).transpose(2, 0, 1))   # raw NCHW 0..255
        return np.stack(out)

    np.save(req["calib"], images(req.get("seed", 0), req.get("calibration_count", 16)))
    np.save(req["eval"], images(req.get("seed", 0) + 1, req.get("eval_count", 24)))
    return {"rendered": req.get("calibration_count", 16) + req.get("eval_count", 24)}


def render_lines(req: dict) -> dict:
    """Single text lines (width x height), half of them turned by 180 degrees: label 0 = upright,
    1 = turned, the classes of PaddleOCR's text direction classifier."""
    from PIL import Image, ImageDraw, ImageFont
    h, w = req["height"], req["width"]

    def lines(seed, count):
        rng = np.random.RandomState(seed)
        xs, ys = [], []
        for _ in range(count):
            img = Image.new("RGB", (w, h), tuple(int(v) for v in rng.randint(200, 256, 3)))
            draw = ImageDraw.Draw(img)
            size = int(rng.randint(h // 2, h - 8))
            words = " ".join(WORDS[i] for i in rng.randint(0, len(WORDS), rng.randint(2, 5)))
            draw.text((int(rng.randint(2, 12)), int(rng.randint(0, h - size))), words,
                      font=ImageFont.load_default(size=size),
                      fill=tuple(int(v) for v in rng.randint(0, 80, 3)))
            turned = int(rng.randint(0, 2))
            if turned:
                img = img.rotate(180)
            xs.append(np.asarray(img, np.float32).transpose(2, 0, 1))
            ys.append(turned)
        return np.stack(xs), np.array(ys, np.int64)

    calib, _ = lines(req.get("seed", 0), req.get("calibration_count", 32))
    test, labels = lines(req.get("seed", 0) + 1, req.get("eval_count", 200))
    np.save(req["calib"], calib)
    np.save(req["eval"], test)
    np.save(req["labels"], labels)
    return {"rendered": len(calib) + len(test)}


RECIPES = {"digits": train_digits, "text": render_text, "text_lines": render_lines}


if __name__ == "__main__":
    request = json.loads(open(sys.argv[1]).read())
    print(json.dumps(RECIPES[request["recipe"]](request)))
