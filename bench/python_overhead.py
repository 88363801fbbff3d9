#!/usr/bin/env python3
"""Python-side cost of the generate loop: onnx_genai (ctypes over libonnx_genai.so) vs
onnxruntime_genai (pybind11), per step of

    while not generator.is_done():
        generator.generate_next_token()
        token = generator.get_next_tokens()[0]

on the tiny gpt2 package (../shared/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32),
one intra-op thread in both (set through Config.overlay, as a script would).

Per runtime, medians over --runs generations of --steps steps, the runtimes alternating
run by run (so that load from other processes falls on both alike):
  step   wall time of one loop iteration, the model run included (the tiny model's
         compute is small, so the binding's share shows);
  calls  is_done() + get_next_tokens()[0] on a finished generator (no model run): what
         the binding adds per step besides generate_next_token's own call.

  python3 bench/python_overhead.py [--steps 200] [--runs 20]
(onnx_genai from an installed package, or PYTHONPATH=python with ONNX_GENAI_LIBRARY set.)
"""
import argparse
import json
import os
import statistics
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "..", "..", "shared", "models", "ortgenai", "hf-internal-testing",
                    "tiny-random-gpt2-fp32")
PROMPT = np.array([0, 0, 195, 731], dtype=np.int32)


def open_model(og):
    config = og.Config(GPT2)
    config.clear_providers()
    config.overlay(json.dumps({"model": {"decoder": {"session_options": {
        "intra_op_num_threads": 1}}}}))
    return og.Model(config)


def one_run(og, model, steps):
    """(µs per loop step, µs per is_done + get_next_tokens on the finished generator)."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(PROMPT) + steps, min_length=len(PROMPT) + steps)
    gen = og.Generator(model, params)
    gen.append_tokens(PROMPT)
    n = 0
    t0 = time.perf_counter()
    while not gen.is_done():
        gen.generate_next_token()
        gen.get_next_tokens()[0]
        n += 1
    step = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(steps):
        gen.is_done()
        gen.get_next_tokens()[0]
    return step, (time.perf_counter() - t0) / steps * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    import onnx_genai
    import onnxruntime_genai
    runtimes = {"onnx_genai": onnx_genai, "onnxruntime_genai": onnxruntime_genai}
    models = {name: open_model(og) for name, og in runtimes.items()}
    results = {name: [] for name in runtimes}
    for name, og in runtimes.items():
        one_run(og, models[name], 20)  # warm up
    for r in range(args.runs):
        order = list(runtimes) if r % 2 == 0 else list(reversed(runtimes))
        for name in order:
            results[name].append(one_run(runtimes[name], models[name], args.steps))
    for name, res in results.items():
        step = statistics.median(s for s, _ in res)
        calls = statistics.median(c for _, c in res)
        print(f"{name:18s} step {step:7.1f} us   is_done+get_next_tokens {calls:5.2f} us")


if __name__ == "__main__":
    main()
