#!/usr/bin/env python3
"""Decode speed with and without guidance, ours beside onnxruntime-genai's (llguidance),
in one run on one package: the cost per token of constrained decoding end to end (mask,
consume, and whatever the runtime does around them).

  python3 bench/guidance_e2e.py PACKAGE [--new 128] [--reps 3] [--threads 2]
                                [--runtimes onnx_genai,onnxruntime_genai]

For each runtime, rounds alternate unguided and guided runs of the same prompt (16 fixed
ids), greedy, up to --new tokens; tg is (generated - 1) / (time from the first generated
token to the last), the median over --reps rounds. The guidance is a JSON Schema whose
output a random-weight model keeps writing for --new tokens (an array of objects with free
strings, compact separators), so the masks are those of real structured output: string
bodies, keys, numbers, punctuation. Prints one table; numbers are not asserted anywhere.
"""
import argparse
import importlib
import json
import statistics
import time

import numpy as np

SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "qty": {"type": "integer"},
                       "note": {"type": "string"}},
        "required": ["name", "qty", "note"], "additionalProperties": False}}},
    "required": ["items"], "additionalProperties": False,
    "x-guidance": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"},
}


def one_run(og, model, prompt, new, guided):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + new, do_sample=False)
    if guided:
        params.set_guidance("json_schema", json.dumps(SCHEMA))
    gen = og.Generator(model, params)
    gen.append_tokens(np.array(prompt, dtype=np.int32))
    gen.generate_next_token()
    t0 = time.perf_counter()
    n = 1
    while not gen.is_done():
        gen.generate_next_token()
        n += 1
    dt = time.perf_counter() - t0
    return (n - 1) / dt if n > 1 else float("nan"), n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("package")
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runtimes", default="onnx_genai,onnxruntime_genai")
    a = ap.parse_args()
    prompt = [(37 * i + 11) % 5000 + 100 for i in range(16)]
    rows = []
    for name in a.runtimes.split(","):
        og = importlib.import_module(name)
        config = og.Config(a.package)
        config.clear_providers()
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {
            "intra_op_num_threads": a.threads}}}}))
        model = og.Model(config)
        one_run(og, model, prompt, 8, False)  # warm-up
        one_run(og, model, prompt, 8, True)
        plain, guided, n_plain, n_guided = [], [], 0, 0
        for _ in range(a.reps):
            tg, n_plain = one_run(og, model, prompt, a.new, False)
            plain.append(tg)
            tg, n_guided = one_run(og, model, prompt, a.new, True)
            guided.append(tg)
        p, g = statistics.median(plain), statistics.median(guided)
        rows.append((name, p, g, n_plain, n_guided))
    print(f"| runtime | tg unguided (tok/s) | tg JSON Schema (tok/s) | guided / unguided | "
          f"tokens (unguided, guided) |")
    print("|---|---:|---:|---:|---|")
    for name, p, g, n_p, n_g in rows:
        print(f"| {name} | {p:.1f} | {g:.1f} | {g / p:.3f} | {n_p}, {n_g} |")
    if len(rows) == 2:
        print(f"guided, ours / onnxruntime-genai: {rows[0][2] / rows[1][2]:.2f}x")


if __name__ == "__main__":
    main()
