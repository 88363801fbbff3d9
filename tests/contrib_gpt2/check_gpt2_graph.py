#!/usr/bin/env python3
"""Runs the tiny GPT-2 test packages' whole decoder graph (past.onnx, float32 and the
float16 `-fp16-cuda` one) through `onnx-genai infer` and through onnxruntime's CPU
provider on the inputs onnxruntime-genai would feed, and compares every output:
a prompt with an empty past (past_seq_len 0), then a decode step fed the prompt's
present, each with and without left padding in the batch.

usage: check_gpt2_graph.py --cli build/onnx-genai [--shared ../shared] [--work DIR]
Exit status 0 when every output matches (1e-3 for float32, 1e-2 for float16), 1 on a
mismatch or failure, 77 (CTest's skip) when the shared models are missing."""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

MODELS = [("tiny-random-gpt2-fp32", np.float32, 1e-3),
          ("tiny-random-gpt2-fp16-cuda", np.float16, 1e-2)]
LAYERS, HEADS, HEAD_SIZE, VOCAB = 5, 4, 8, 1000


def feeds_for(mask, past, dtype, rng):
    """input_ids/position_ids/attention_mask for the new tokens of a (B, total) mask."""
    B, T = mask.shape
    P = past[0].shape[3] if past else 0
    S = T - P
    pos = np.maximum(np.cumsum(mask, axis=1) - 1, 0)[:, P:]
    f = {"input_ids": rng.randint(0, VOCAB, (B, S)).astype(np.int32),
         "position_ids": pos.astype(np.int32),
         "attention_mask": mask.astype(np.int32)}
    for i in range(LAYERS):
        f[f"past_{i}"] = past[i] if past else np.zeros((2, B, HEADS, 0, HEAD_SIZE), dtype)
    return f


def run_ours(cli, model, feeds, work):
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    cmd = [cli, "infer", model]
    for n, v in feeds.items():
        p = os.path.join(work, f"in_{n}.pb")
        onnx.save_tensor(numpy_helper.from_array(v, n), p)
        cmd += ["--input", f"{n}={p}"]
    out_dir = os.path.join(work, "out")
    cmd += ["--output-dir", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return lambda name: numpy_helper.to_array(
        onnx.load_tensor(os.path.join(out_dir, name.replace("/", "_") + ".pb")))


def compare(tag, names, ref, ours, tol):
    ok = True
    for n, want in zip(names, ref):
        try:
            got = ours(n)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {tag}: output {n}: cannot read ours: {e}")
            ok = False
            continue
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"FAIL {tag}: output {n}: ours {got.dtype}{list(got.shape)}, "
                  f"onnxruntime {want.dtype}{list(want.shape)}")
            ok = False
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(g - w) - (tol + tol * np.abs(w))
        worst = float(np.max(np.abs(g - w))) if g.size else 0.0
        if g.size and (np.max(err) > 0 or not np.all(np.isfinite(g) == np.isfinite(w))):
            i = np.unravel_index(int(np.argmax(err)), err.shape)
            print(f"FAIL {tag}: output {n}{list(got.shape)}: at {list(i)} ours {g[i]:.6g}, "
                  f"onnxruntime {w[i]:.6g} (max |diff| {worst:.3g}, tol {tol})")
            ok = False
        else:
            print(f"ok   {tag}: {n}{list(got.shape)} max |diff| {worst:.3g}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--work", default="/tmp/contrib_gpt2")
    a = ap.parse_args()
    base = os.path.join(a.shared, "models/ortgenai/hf-internal-testing")
    if not all(os.path.isfile(os.path.join(base, m, "past.onnx")) for m, _, _ in MODELS):
        print(f"SKIPPED: the GPT-2 test models are missing under {base}", file=sys.stderr)
        return 77
    import onnxruntime as ort

    all_ok = True
    for model_name, dtype, tol in MODELS:
        path = os.path.join(base, model_name, "past.onnx")
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        rng = np.random.RandomState(7)
        for padded in (False, True):
            B, S = 2, 6
            mask = np.ones((B, S), np.int64)
            if padded:
                mask[1, :3] = 0
            past = None
            for step in range(3):  # the prompt, then two decode steps
                tag = f"{model_name} {'left-padded' if padded else 'full'} step {step}"
                if step:
                    mask = np.concatenate([mask, np.ones((B, 1), np.int64)], axis=1)
                feeds = feeds_for(mask, past, dtype, rng)
                ref = sess.run(None, feeds)
                try:
                    ours = run_ours(a.cli, path, feeds, os.path.join(a.work, "run"))
                except RuntimeError as e:
                    print(f"FAIL {tag}: {e}")
                    all_ok = False
                    break
                all_ok &= compare(tag, names, ref, ours, tol)
                past = ref[1:1 + LAYERS]  # both runtimes continue from the same cache
    print("check_gpt2_graph.py:", "all outputs match" if all_ok else "MISMATCHES")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
