#!/usr/bin/env python3
"""Mask times of llguidance (PyPI, the engine onnxruntime-genai uses) and ours, side by side
on the same tokenizer, schema and documents: ours from build/bench/bench-guide --examples,
llguidance's measured here the same way (the documents' tokens as llguidance's tokenizer
encodes them, every line again and again until --steps masks; the first pass reported
apart; thread CPU time per compute_bitmask call, which includes Python's call overhead of
about a microsecond).

  python3 bench/guide_vs_llguidance.py TOKENIZER.json SCHEMA.json EXAMPLES [--steps 4000]
                                       [--bench build/bench/bench-guide]
"""
import argparse
import json
import subprocess
import time

import llguidance as L


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def llguidance_times(tok_path, schema_text, lines, steps):
    tok = L.LLTokenizer(open(tok_path).read())
    grammar = L.LLMatcher.grammar_from_json_schema(schema_text)
    t0 = time.perf_counter()
    m = L.LLMatcher(tok, grammar)
    compile_us = (time.perf_counter() - t0) * 1e6
    cold, warm, first = [], [], True
    while len(cold) + len(warm) < steps:
        for line in lines:
            m.reset()
            for t in tok.tokenize_str(line) + [None]:
                c0 = time.thread_time_ns()
                m.compute_bitmask()
                (cold if first else warm).append((time.thread_time_ns() - c0) / 1e3)
                if t is None or not m.consume_token(t):
                    break
            if len(cold) + len(warm) >= steps:
                break
        first = False
    return compile_us, cold, warm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("schema")
    ap.add_argument("examples")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--bench", default="build/bench/bench-guide")
    a = ap.parse_args()
    lines = [ln for ln in open(a.examples).read().splitlines() if ln.strip()]
    schema_text = open(a.schema).read()
    ours = subprocess.run([a.bench, "--steps", str(a.steps), "--examples", a.examples,
                           a.tokenizer, "json_schema", a.schema],
                          capture_output=True, text=True, check=True).stdout
    print("ours:\n" + ours.strip())
    c_us, cold, warm = llguidance_times(a.tokenizer, schema_text, lines, a.steps)
    print(f"llguidance: compile_us={c_us:.0f}")
    print(f"cold (first pass) masks={len(cold)} p50_us={pct(cold, 50):.1f} "
          f"p99_us={pct(cold, 99):.1f} max_us={max(cold):.1f}")
    print(f"warm masks={len(warm)} p50_us={pct(warm, 50):.1f} p99_us={pct(warm, 99):.1f} "
          f"max_us={max(warm):.1f}")


if __name__ == "__main__":
    main()
