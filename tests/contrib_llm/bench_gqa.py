#!/usr/bin/env python3
"""GroupQueryAttention decode speed, onnxruntime against ours, one node at the
Qwen2.5-0.5B shape (14 query heads, 2 kv heads, head size 64, rotary, float32), batch 1,
past lengths 512 and 2048 in a 4096-row shared cache buffer (past and present bound to the
same memory, as in the decode loop).

usage: bench_gqa.py BUILD_DIR [--iters N] [--threads N]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_cases as mc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    N, KV, D, M = 14, 2, 64, 4096
    root = tempfile.mkdtemp(prefix="bench_gqa_")
    for past in (512, 2048):
        d = os.path.join(root, f"past{past}")
        os.makedirs(d)
        # a prompt of `past` tokens fills the cache, the timed step is the next token
        mc.gqa_shared_loop(d, f"past{past}", np.float32, 1, N, KV, D, M, [past], 1,
                           rotary_half=D // 2)
        case = os.path.join(d, f"test_gqa_shared_past{past}")
        # keep only the decode step as step 0
        os.rename(os.path.join(case, "test_data_set_0"), os.path.join(case, "prompt"))
        os.rename(os.path.join(case, "test_data_set_1"), os.path.join(case, "test_data_set_0"))
        # the decode step's past is the cache after the prompt
        import onnx
        from onnx import numpy_helper
        ds = os.path.join(case, "test_data_set_0")
        model = onnx.load(os.path.join(case, "model.onnx"))
        names = [i.name for i in model.graph.input]
        feeds = {}
        for i, n in enumerate(names):
            feeds[n] = numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"input_{i}.pb")))
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if a.threads:
            so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        kbuf = ort.OrtValue.ortvalue_from_numpy(feeds["past_k"].copy())
        vbuf = ort.OrtValue.ortvalue_from_numpy(feeds["past_v"].copy())
        io = sess.io_binding()
        for n in names:
            if n == "past_k":
                io.bind_ortvalue_input(n, kbuf)
            elif n == "past_v":
                io.bind_ortvalue_input(n, vbuf)
            else:
                io.bind_cpu_input(n, feeds[n])
        io.bind_output("y")
        io.bind_ortvalue_output("present_k", kbuf)
        io.bind_ortvalue_output("present_v", vbuf)
        sess.run_with_iobinding(io)
        t0 = time.perf_counter()
        for _ in range(a.iters):
            sess.run_with_iobinding(io)
        ort_us = (time.perf_counter() - t0) / a.iters * 1e6
        cmd = [os.path.join(a.build, "tests", "contrib_llm", "gqa-shared-check"), "--bench",
               str(a.iters), "--threads", str(a.threads), d]
        res = subprocess.run(cmd, capture_output=True, text=True)
        ours = [l for l in res.stdout.splitlines() if l.startswith("BENCH")]
        status = "match" if res.returncode == 0 else "MISMATCH"
        print(f"past {past}: onnxruntime {ort_us:.1f} us/step; ours: "
              f"{ours[0].split(': ')[1] if ours else res.stdout.strip()} ({status})")


if __name__ == "__main__":
    main()
