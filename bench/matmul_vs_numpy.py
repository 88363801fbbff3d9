#!/usr/bin/env python3
"""fp32 MatMul: our gemm core (bench-matmul) against numpy's BLAS, measured in one run.

For every shape and thread count the two are run alternately, `--rounds` times each, in
separate processes (so each gets the same treatment from a busy machine); a round's
figure is the median call time over about `--seconds`; the table shows the median of
the rounds. numpy runs with OPENBLAS_NUM_THREADS set, and without OPENBLAS_CORETYPE /
OPENBLAS_L2_SIZE (set on some machines for old OpenBLAS builds; they slow a current one).

  python3 bench/matmul_vs_numpy.py [--bench build/bench/bench-matmul] [--threads 1,2]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys

SHAPES = [(1, 896, 896), (1, 4864, 896), (512, 896, 896), (512, 4864, 896)]

NUMPY_PROBE = r"""
import sys, time
import numpy as np
M, N, K, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rng = np.random.default_rng(0)
a = rng.standard_normal((M, K), dtype=np.float32)
b = rng.standard_normal((K, N), dtype=np.float32)
if M == 1:
    a = a[0]  # a vector: numpy's best case (sgemv)
a @ b; a @ b
times = []
start = time.perf_counter()
while len(times) < 5 or time.perf_counter() - start < seconds:
    t = time.perf_counter(); a @ b; times.append(time.perf_counter() - t)
times.sort()
t = times[len(times) // 2]
print("gflops %.3f" % (2.0 * M * N * K / t * 1e-9))
"""


def numpy_env(threads):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def gflops(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return float(out.split()[1])


def blas_info():
    code = ("import numpy, threadpoolctl; i = threadpoolctl.threadpool_info()[0]; "
            "print(i['internal_api'], i['version'], i.get('architecture'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=numpy_env(1))
    return r.stdout.strip() if r.returncode == 0 else "(threadpoolctl not installed)"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().splitlines()
        model = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("model name"))
        flags = next(l.split(":", 1)[1].split() for l in lines if l.startswith("flags"))
        simd = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
                            "avx512_fp16", "amx_tile") if f in flags]
        return model, " ".join(simd)
    except (OSError, StopIteration):
        return platform.processor(), "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/bench/bench-matmul")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.3)
    args = ap.parse_args()
    model, simd = cpu_model()
    print(f"CPU: {model} ({os.cpu_count()} cores), SIMD: {simd}")
    print(f"numpy BLAS: {blas_info()}")
    print("| shape (M x K x N) | threads | ours GFLOP/s | numpy GFLOP/s | ours/numpy |")
    print("| --- | --- | --- | --- | --- |")
    for threads in [int(t) for t in args.threads.split(",")]:
        for M, N, K in SHAPES:
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(gflops([args.bench, str(M), str(N), str(K), str(threads),
                                    str(args.seconds)]))
                theirs.append(gflops([sys.executable, "-c", NUMPY_PROBE, str(M), str(N), str(K),
                                      str(args.seconds)], numpy_env(threads)))
            o, t = statistics.median(ours), statistics.median(theirs)
            print(f"| {M} x {K} x {N} | {threads} | {o:.1f} | {t:.1f} | {o / t:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
