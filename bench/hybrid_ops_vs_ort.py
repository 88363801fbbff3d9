#!/usr/bin/env python3
"""The ops of hybrid and mixture-of-experts decoders against onnxruntime's CPU kernels on
the same machine in the same run: LinearAttention and CausalConvWithState at Qwen3.5-0.8B's
linear-attention shapes, QMoE at gpt-oss-20b's expert shapes; one token (decode) and a
prompt. Prints a Markdown table for docs/PERFORMANCE.md.

usage: hybrid_ops_vs_ort.py [--check build/tests/contrib_llm/gqa-shared-check]
                            [--threads 2] [--runs 20]

Ours: gqa-shared-check --bench (the mean of ITERS session runs of the case's first
step, past and present state bound to one buffer as the generator binds them; reruns
advance the state, so that tool's own value check fails here and is ignored), the median
of five such means. Cases are
written with tests/contrib_hybrid/make_cases.py's functions. onnxruntime: the same
single-node model, intra_op_num_threads = threads, median session.run (state passed as an
input every run)."""
import argparse
import importlib.util
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def load_cases():
    path = os.path.join(HERE, "..", "tests", "contrib_hybrid", "make_cases.py")
    spec = importlib.util.spec_from_file_location("hybrid_cases", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def write_cases(m, out):
    """(label, case folder) pairs."""
    cases = []
    B, Hk, Hv, dk, dv, K = 1, 16, 16, 128, 128, 4  # Qwen3.5-0.8B's linear layers
    C = 2 * Hk * dk + Hv * dv
    rng = np.random.RandomState(7)
    for T in (1, 512):
        def la_feeds(T):
            k = rng.randn(B, T, Hk, dk)
            k /= np.linalg.norm(k, axis=-1, keepdims=True)
            return {"q": (rng.randn(B, T, Hk * dk) * 0.1).astype(np.float32),
                    "k": k.reshape(B, T, -1).astype(np.float32),
                    "v": rng.randn(B, T, Hv * dv).astype(np.float32),
                    "g": (-np.abs(rng.randn(B, T, Hv)) * 0.1).astype(np.float32),
                    "b": (1 / (1 + np.exp(-rng.randn(B, T, Hv)))).astype(np.float32)}
        m.state_loop(out, f"la_T{T}", "LinearAttention", np.float32, [T], la_feeds,
                     ["q", "k", "v", "s", "g", "b"], "s", (B, Hv, dk, dv), ["y", "present"],
                     q_num_heads=Hk, kv_num_heads=Hv, update_rule="gated_delta", scale=1.0)
        cases.append((f"LinearAttention gated_delta 16x128x128, T={T}", f"test_state_la_T{T}"))
        w, bias = (rng.randn(C, 1, K) * 0.5).astype(np.float32), rng.randn(C).astype(np.float32)

        def conv_feeds(T):
            return {"x": rng.randn(B, C, T).astype(np.float32), "w": w, "b": bias}
        m.state_loop(out, f"conv_T{T}", "CausalConvWithState", np.float32, [T], conv_feeds,
                     ["x", "w", "b", "p"], "p", (B, C, K - 1), ["y", "present"],
                     activation="silu")
        cases.append((f"CausalConvWithState C={C} k=4 silu, T={T}", f"test_state_conv_T{T}"))
    for T in (1, 64):  # gpt-oss-20b: 32 experts of 2880 x 2880, top 4, int4 block 32
        m.qmoe_case(out, f"bench_T{T}", np.float32, T, 2880, 2880, 32, 4, "swiglu", 4, 32, 1,
                    **m.GPT_OSS)
        open(os.path.join(out, f"test_qmoe_bench_T{T}", "shared.txt"), "w").close()
        cases.append((f"QMoE int4 b32 E=32 k=4 2880x2880 swiglu, T={T}", f"test_qmoe_bench_T{T}"))
    return cases


def time_ort(d, threads, runs):
    model = onnx.load(os.path.join(d, "model.onnx"))
    feeds = {}
    for i, inp in enumerate(model.graph.input):
        t = onnx.load_tensor(os.path.join(d, "test_data_set_0", f"input_{i}.pb"))
        feeds[inp.name] = numpy_helper.to_array(t)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_ours(check, d, threads, runs):
    """The median over 5 invocations of the tool's mean over runs // 5 runs (a shared
    machine's preemptions skew a single mean)."""
    means = []
    with tempfile.TemporaryDirectory() as one:
        os.symlink(d, os.path.join(one, os.path.basename(d)))
        for _ in range(5):
            r = subprocess.run([check, "--bench", str(max(1, runs // 5)), "--threads",
                                str(threads), one], capture_output=True, text=True)
            m = re.search(r"BENCH .*: ([0-9.]+) us per run", r.stdout)
            if not m:
                raise SystemExit(f"no timing from {check}: {r.stdout[-500:]}")
            means.append(float(m.group(1)) * 1e-6)
    return float(np.median(means))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", default=os.path.join(HERE, "..", "build", "tests", "contrib_llm",
                                                    "gqa-shared-check"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    m = load_cases()
    with tempfile.TemporaryDirectory() as out:
        cases = write_cases(m, out)
        print(f"onnxruntime {ort.__version__}, {args.threads} threads, median of {args.runs} runs")
        print()
        print("| op and shape | ours ms | onnxruntime ms | onnxruntime / ours |")
        print("|---|---|---|---|")
        for label, name in cases:
            d = os.path.join(out, name)
            runs = args.runs if "T=1" in label else max(3, args.runs // 4)
            ours = time_ours(args.check, d, args.threads, runs)
            theirs = time_ort(d, args.threads, runs)
            print(f"| {label} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {theirs / ours:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
