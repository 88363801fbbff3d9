#!/usr/bin/env python3
"""Tokenizer encode throughput: ours (tok-cli bench) against HF tokenizers, same run.

Usage: tokenizer_bench.py --cli build/tests/tokenizer/tok-cli [--shared ../shared]
                          [--mb 8] [--work /tmp/tokbench]

The text is the Python standard library's sources (code, comments, docstrings) up to
--mb megabytes plus the multilingual test corpus repeated, encoded line by line without
special tokens. Ours runs on one thread. HF runs encode_batch (offsets tracked, as
Python users get by default) and encode_batch_fast (no offsets: the closest to what we
compute) over the same lines, with RAYON_NUM_THREADS=1, and encode_batch_fast with every
core. HF's figures include building its Python Encoding objects.
Single-thread rates are bytes per second of CPU time (the machine may be shared); the
all-threads HF rate is by wall time.
Totals of ids are compared as a sanity check. Prints a Markdown table.
"""
import argparse
import os
import subprocess
import sys
import sysconfig
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tokenizer"))


def make_text(path, mb):
    libdir = sysconfig.get_paths()["stdlib"]
    parts, size = [], 0
    for root, dirs, files in os.walk(libdir):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "test", "__pycache__"))
        for name in sorted(files):
            if name.endswith(".py") and size < mb * 1e6:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    t = f.read()
                parts.append(t)
                size += len(t.encode())
    corpus = os.path.join(HERE, "..", "tests", "tokenizer", "corpus.txt")
    with open(corpus, encoding="utf-8") as f:
        parts.append(f.read() * 50)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(parts))


HF_CHILD = r"""
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
data = open(sys.argv[2], 'rb').read()
lines = [l.decode('utf-8', 'replace') for l in data.split(b'\n')]
clock = time.process_time if sys.argv[4] == 'cpu' else time.perf_counter
encode = tok.encode_batch_fast if sys.argv[5] == 'fast' else tok.encode_batch
best, n = None, 0
for _ in range(int(sys.argv[3])):
    t0 = clock()
    enc = encode(lines, add_special_tokens=False)
    dt = clock() - t0
    best = dt if best is None or dt < best else best
    n = sum(len(e.ids) for e in enc)
print(len(data) / best / 1e6, n)
"""


def hf_rate(tok_json, text, threads, reps, fast=False):
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    else:
        env.pop("RAYON_NUM_THREADS", None)
    clock = "cpu" if threads == 1 else "wall"
    out = subprocess.run([sys.executable, "-c", HF_CHILD, tok_json, text, str(reps), clock,
                          "fast" if fast else "full"], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


def ours_rate(cli, tok_json, text, reps):
    best, n = None, 0
    for _ in range(reps):
        out = subprocess.run([cli, "bench", tok_json, text, "1"], capture_output=True, text=True,
                             check=True).stdout.split()
        rate = float(out[out.index("cpuMB/s") + 1])
        n = int(out[out.index("ids") + 1])
        best = rate if best is None or rate > best else best
    return best, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default="/tmp/tokbench")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    text = os.path.join(args.work, "bench.txt")
    make_text(text, args.mb)
    import check_parity
    gpt2 = os.path.join(args.shared, "models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32/tokenizer.json")
    phi3 = os.path.join(args.shared, "models/ortgenai/phi3-v/tokenizer.json")
    sp_dir = os.path.join(args.work, "sp")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "tokenizer", "make_sp_tokenizer.py"),
                    sp_dir], check=True)
    todo = []
    if os.path.exists(gpt2):
        todo.append(("GPT-2 (byte-level)", gpt2))
        todo.append(("Qwen2-style (regex Split + byte-level)",
                     check_parity.gpt2_based(gpt2, check_parity.QWEN2_PATTERN, os.path.join(args.work, "qwen2"), False)))
    if os.path.exists(phi3):
        todo.append(("Phi-3 (SentencePiece-style)", phi3))
    todo.append(("made SP (Metaspace + byte fallback)", os.path.join(sp_dir, "tokenizer.json")))
    size = os.path.getsize(text)
    print(f"Text: {size / 1e6:.1f} MB ({args.mb:g} MB of Python stdlib sources + the test corpus x50), "
          f"encoded line by line, no special tokens; best of {args.reps}; {os.cpu_count()} CPUs.\n")
    print("| tokenizer | ours, 1 thread | HF encode_batch, 1 thread | HF encode_batch_fast, 1 thread"
          " | HF encode_batch_fast, all threads (wall) | ours / HF fast, 1 thread | ids equal |")
    print("|---|---|---|---|---|---|---|")
    for name, path in todo:
        ours, n_ours = ours_rate(args.cli, path, text, args.reps)
        hf1, n_hf = hf_rate(path, text, 1, args.reps)
        hff, _ = hf_rate(path, text, 1, args.reps, fast=True)
        hfn, _ = hf_rate(path, text, 0, args.reps, fast=True)
        print(f"| {name} | {ours:.1f} | {hf1:.1f} | {hff:.1f} | {hfn:.1f} | {ours / hff:.1f}x |"
              f" {'yes' if n_ours == n_hf else f'NO ({n_ours} vs {n_hf})'} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
