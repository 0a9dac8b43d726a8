"""Runs INSIDE the rknn venv: one toolkit session compiles a model and checks it in the simulator.

    python driver.py request.json       # writes request["out"] (.rknn) and request["card"] (JSON)

Why one session: the toolkit's simulator runs only a model built in the same session (a model
loaded with load_rknn is refused), so compile, export and the accuracy check are one process.
The working directory is a scratch directory the caller made (verbose builds write check*.onnx
into the current directory). Standalone on purpose: it must not import seedfw.

Request: onnx, out, card, target, dtype ("int8" | "fp16"), algorithm, mean, std (per channel,
as the toolkit's mean_values/std_values), input (name), shape (NCHW), calib (.npy, raw NCHW),
eval (.npy, raw NCHW), labels (.npy or null), metric ("top1" | "text_boxes"), box_threshold.
The card's numbers: ONNX Runtime FP32 on the held-out inputs normalised as (x - mean) / std, and
the simulator on the raw inputs (the compiled model normalises them itself).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

import numpy as np


def fp32_outputs(req, inputs):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1          # a shared machine; and a fixed reduction order
    sess = ort.InferenceSession(req["onnx"], opts, providers=["CPUExecutionProvider"])
    mean = np.asarray(req["mean"], np.float32).reshape(1, -1, 1, 1)
    std = np.asarray(req["std"], np.float32).reshape(1, -1, 1, 1)
    return [sess.run(None, {req["input"]: ((x[None] - mean) / std).astype(np.float32)})[0]
            for x in inputs]


def boxes(prob_map, threshold):
    """Connected regions of the probability map above `threshold`, as (x0, y0, x1, y1)."""
    import cv2
    mask = (prob_map.reshape(prob_map.shape[-2:]) > threshold).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return [(int(s[0]), int(s[1]), int(s[0] + s[2]), int(s[1] + s[3]))
            for s in stats[1:count] if s[4] >= 8]


def iou(a, b):
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def box_f1(ref_maps, maps, threshold):
    """F1 of the compiled model's boxes against FP32's boxes (greedy match at IoU >= 0.5)."""
    tp = n_ref = n_got = 0
    for ref, got in zip(ref_maps, maps):
        rb, gb = boxes(ref, threshold), boxes(got, threshold)
        n_ref, n_got = n_ref + len(rb), n_got + len(gb)
        free = list(gb)
        for r in rb:
            best = max(free, key=lambda g: iou(r, g), default=None)
            if best is not None and iou(r, best) >= 0.5:
                tp += 1
                free.remove(best)
    p = tp / n_got if n_got else 0.0
    r = tp / n_ref if n_ref else 0.0
    return (2 * p * r / (p + r) if p + r else 0.0), n_ref, n_got


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d else 0.0


def memory(log_text):
    """Weight and internal (activation) memory the toolkit reports for the compiled model."""
    found = {}
    for key, name in (("weight_bytes", "Weight"), ("internal_bytes", "Internal")):
        m = re.search(rf"Total {name} Memory Size:\s*([\d.]+)\s*(KB|MB|B)", log_text)
        if m:
            found[key] = int(float(m.group(1)) * {"B": 1, "KB": 1024, "MB": 1 << 20}[m.group(2)])
    return found


def main(req):
    from rknn.api import RKNN
    import importlib.metadata as md
    inputs = np.load(req["eval"])
    calib = np.load(req["calib"])
    with open("dataset.txt", "w") as f:
        for i, x in enumerate(calib):
            np.save(f"calib{i:04d}.npy", x[None].astype(np.float32))
            f.write(f"calib{i:04d}.npy\n")
    # The compiler (librknnc) writes its tables to file descriptors 1 and 2 directly: send both
    # into a file at the descriptor level and read it back (the memory statistics are in it).
    real_stdout = os.dup(1)
    session = os.open("session.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(session, 1); os.dup2(session, 2)
    started = time.monotonic()
    step = "start"
    try:
        step = "RKNN()"
        rk = RKNN(verbose=True)
        step = "config"
        rk.config(target_platform=req["target"], mean_values=[req["mean"]],
                  std_values=[req["std"]], quantized_dtype="w8a8",
                  quantized_algorithm=req.get("algorithm", "normal"),
                  optimization_level=req.get("optimization_level", 3))
        step = "load_onnx"
        if rk.load_onnx(model=req["onnx"], inputs=[req["input"]],
                        input_size_list=[req["shape"]]) != 0:
            fail("load_onnx failed: the ONNX file does not load")
        step = "build"
        if rk.build(do_quantization=req["dtype"] == "int8", dataset="dataset.txt") != 0:
            fail("build failed")
        if rk.export_rknn(req["out"]) != 0:
            fail("export_rknn failed")
        compile_seconds = time.monotonic() - started
        step = "init_runtime"
        if rk.init_runtime() != 0:
            fail("init_runtime (simulator) failed")
        outs = [rk.inference(inputs=[x[None].astype(np.float32)], data_format="nchw")[0]
                for x in inputs]
        rk.release()
    except DriverError as exc:
        failed = str(exc)
    except (Exception, SystemExit) as exc:   # the toolkit raises or exits on input it refuses
        # the toolkit wraps its own traceback into the message: its last line is the reason
        lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
        failed = f"{step} failed ({lines[-1][:200] if lines else type(exc).__name__})"
    else:
        failed = None
    finally:
        # librknnc logs through C stdio: its buffer must reach session.log before fd 1 returns
        import ctypes
        ctypes.CDLL(None).fflush(None)
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(real_stdout, 1)
        os.dup2(real_stdout, 2)
    text = open("session.log", errors="replace").read()
    if failed:
        # the toolkit's own reason: its last error line ("E load_onnx: ..."), colour codes removed
        errors = [re.sub(r"\x1b\[[0-9;]*m", "", l).strip() for l in text.splitlines()
                  if re.match(r"^(\x1b\[[0-9;]*m)?E ", l) and "Unkown op target" not in l]
        print(json.dumps({"error": failed, "toolkit": errors[-1] if errors else None}))
        raise SystemExit(3)
    ref = fp32_outputs(req, inputs)
    card = {"toolkit": "rknn-toolkit2", "toolkit_version": md.version("rknn-toolkit2"),
            "target": req["target"], "dtype": req["dtype"], "algorithm": req.get("algorithm"),
            "compile_seconds": round(compile_seconds, 3), "eval_count": int(len(inputs)),
            **memory(text)}
    if req["metric"] == "top1":
        labels = np.load(req["labels"])
        fp32 = np.array([o.argmax() for o in ref])
        npu = np.array([o.argmax() for o in outs])
        card["metric"] = "top1"
        card["fp32"] = float((fp32 == labels).mean())
        card["npu"] = float((npu == labels).mean())
        card["agreement"] = float((fp32 == npu).mean())
    else:
        f1, n_ref, n_got = box_f1(ref, outs, req.get("box_threshold", 0.3))
        card["metric"] = "box_f1_vs_fp32"
        card["fp32"] = 1.0                      # FP32's boxes are the reference
        card["npu"] = round(f1, 4)
        card["fp32_boxes"], card["npu_boxes"] = n_ref, n_got
        card["cosine"] = round(float(np.mean([cosine(a, b) for a, b in zip(ref, outs)])), 5)
    with open(req["card"], "w") as f:
        json.dump(card, f, indent=1, sort_keys=True)
    print(json.dumps(card))


class DriverError(Exception):
    pass


def fail(message):
    """A toolkit call refused the model (its log says why; main() reports both)."""
    raise DriverError(message)


if __name__ == "__main__":
    main(json.loads(open(sys.argv[1]).read()))
