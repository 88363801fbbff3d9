#!/usr/bin/env python3
"""MatMulNBits (4-bit, block 32, no zero points) against onnxruntime's CPU kernel on the
same machine in the same run, at Qwen2.5-0.5B shapes, M = 1 (decode) and 512 (prefill),
accuracy levels 0 and 4, 2 threads each. Prints a Markdown table for docs/PERFORMANCE.md.

usage: matmulnbits_vs_ort.py [--bench build/bench/bench-matmulnbits] [--seconds 1.0]
                             [--threads 2] [--m 1,512]

Ours: bench-matmulnbits (median call, working memory allocated once). onnxruntime: a
single-node model with the weights as initializers (so it prepacks them, as it does for
real packages), intra_op_num_threads = threads, median of session.run calls (which
includes onnxruntime's per-call overhead, small next to these products)."""
import argparse
import os
import subprocess
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SHAPES = [("mlp up/gate", 896, 4864), ("mlp down", 4864, 896), ("qkv", 896, 1152),
          ("lm_head", 896, 151936)]
BS = 32


def ort_session(K, N, level, threads):
    kb = (K + BS - 1) // BS
    rng = np.random.RandomState(0)
    B = rng.randint(0, 256, (N, kb, BS // 2)).astype(np.uint8)
    S = (rng.rand(N, kb) * 0.02 + 0.01).astype(np.float32)
    node = helper.make_node("MatMulNBits", ["A", "B", "S"], ["Y"], domain="com.microsoft",
                            K=K, N=N, bits=4, block_size=BS, accuracy_level=level)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", K])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", N])],
                              [numpy_helper.from_array(B, "B"), numpy_helper.from_array(S, "S")])
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def time_ort(sess, M, K, seconds):
    A = (np.random.RandomState(1).rand(M, K) - 0.5).astype(np.float32)
    for _ in range(2):
        sess.run(None, {"A": A})
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        sess.run(None, {"A": A})
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=os.path.join(here, "..", "build", "bench", "bench-matmulnbits"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--m", default="1,512")
    args = ap.parse_args()
    print(f"onnxruntime {ort.__version__}, {args.threads} threads, 4-bit, block {BS}, no zero points")
    print()
    print("| shape | K | N | M | level | ours ms | ours GB/s | ours GFLOP/s | ORT ms | ORT GFLOP/s | ORT/ours time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, K, N in SHAPES:
        for level in (0, 4):
            sess = ort_session(K, N, level, args.threads)
            for M in (int(m) for m in args.m.split(",")):
                out = subprocess.run([args.bench, str(M), str(N), str(K), str(level),
                                      str(args.threads), str(args.seconds)],
                                     capture_output=True, text=True, check=True).stdout.split()
                ms, gbps, gflops = float(out[4]), float(out[5]), float(out[6])
                t = time_ort(sess, M, K, args.seconds)
                ort_gflops = 2.0 * M * N * K / t * 1e-9
                print(f"| {name} | {K} | {N} | {M} | {level} | {ms:.3f} | {gbps:.2f} | {gflops:.1f} | "
                      f"{t * 1e3:.3f} | {ort_gflops:.1f} | {t * 1e3 / ms:.2f} |", flush=True)
            del sess


if __name__ == "__main__":
    main()
