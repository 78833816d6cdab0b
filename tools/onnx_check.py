#!/usr/bin/env python3
"""Runs Ember's exported ONNX models in onnxruntime and compares them with Ember's own outputs.

    .venv-test/bin/python tools/onnx_check.py MANIFEST.json

MANIFEST.json (written by tests/test_onnx.cpp): {"models": [{"name": ..., "onnx": path, "batches":
[{"input": x.npy, "expected": y.npy}, ...]}, ...]}. Prints one JSON object on stdout, per model:
{"batches": n, "examples": N, "max_rel_error": e, "shapes_ok": bool, "error": null or the runtime's message},
where e is the largest |ort - ember| / max(1, |ember|) over every output element of every batch (NaN counts as
infinite error). The C++ test asserts the bound; this script only measures.
"""
import json
import sys

import numpy as np
import onnxruntime as ort


def check(model):
    out = {"batches": 0, "examples": 0, "max_rel_error": 0.0, "shapes_ok": True, "error": None}
    try:
        session = ort.InferenceSession(model["onnx"], providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        for batch in model["batches"]:
            x = np.load(batch["input"])
            want = np.load(batch["expected"])
            got = session.run(None, {name: x})[0]
            out["batches"] += 1
            out["examples"] += int(x.shape[0])
            if got.shape != want.shape:
                out["shapes_ok"] = False
                out["error"] = f"output shape {list(got.shape)} != Ember's {list(want.shape)} for input {list(x.shape)}"
                continue
            err = np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want.astype(np.float64)))
            worst = float(np.max(np.where(np.isnan(err), np.inf, err))) if err.size else 0.0
            out["max_rel_error"] = max(out["max_rel_error"], worst)
    except Exception as e:  # the runtime's refusal is the finding: report it per model
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def main():
    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    result = {m["name"]: check(m) for m in manifest["models"]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
