#!/usr/bin/env python3
"""Rope scaling past the original context: one small package per scaling type the model
builder (onnxruntime-genai 0.18) writes, against onnxruntime-genai.

The builder bakes each type into the rotary caches (tools/model_maker/rope.py has what each
does, for which model types); only LongRoPE changes the graph, with its If between short
and long caches on the mask's width. Each package has original_max_position_embeddings 64
and 256 rotary rows, made by the model maker with the builder's computation:

  llama3    llama, factor 4, low/high_freq_factor 1/4
  linear    qwen2, factor 4
  yarn      mistral, factor 4, beta_fast 4, beta_slow 1 (the builder's ramp needs
            0 < low < high < head_size/2 - 1, which beta_fast 32 breaks at original 64)
  longrope  phi3, short factors 1 + 0.01 i, long 1 + 0.2 i (the If, both caches times the
            attention factor sqrt(1 + ln 4 / ln 64))
  dynamic   hunyuandensev1 (RotaryEmbedding nodes on position_ids), NTK-alpha 1000

and for each:
  1. greedy ids to position 160 equal onnxruntime-genai's: a prompt of 40 tokens alone
     (decode crosses 64), a batch of two 40-token prompts, and a batch of 70 and 20
     tokens (the long row's prompt is past 64 already) against onnxruntime-genai's own
     right-padded batch. That batch's width (70) picks LongRoPE's long caches for both
     rows, so our short row, whose prompt runs alone, is fed a mask as wide as the batch's
     (generator_run.c); checked on both backends;
  2. `onnx-genai parity`: the logits of every step of the 40-token prompt to 120
     within parity's tolerance of onnxruntime's;
and on the llama3 package the serving engine (engine-check: batched mode, every request
equal to its run alone).

  pieces    llama3 at original 512 with 2048 rows: a prompt of 1300 tokens, which the
            generator runs in pieces of 512 (generator_run.c), to 1320: ids equal
            onnxruntime-genai's, batch 1 and a batch of two 1300-token prompts, and parity.

usage: check_rope_scaling.py BUILD WORK [TYPE ...]
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_types  # noqa: E402

ORIGINAL, CONTEXT, L = 64, 256, 160

CASES = {
    "llama3": ("llama", dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=ORIGINAL)),
    "linear": ("qwen2", dict(rope_type="linear", factor=4.0)),
    "yarn": ("mistral", dict(rope_type="yarn", factor=4.0, beta_fast=4.0, beta_slow=1.0,
                             original_max_position_embeddings=ORIGINAL)),
    "longrope": ("phi3", dict(rope_type="longrope", type="longrope", original_max_position_embeddings=ORIGINAL,
                              short_factor=[1.0 + 0.01 * i for i in range(16)],
                              long_factor=[1.0 + 0.2 * i for i in range(16)])),
    "dynamic": ("hunyuandensev1", dict(rope_type="dynamic", alpha=1000.0)),
    "pieces": ("llama", dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=512)),
}
ROWS = {"pieces": 2048}


def make(work, kind):
    import make_model
    model_type, scaling = CASES[kind]
    d = os.path.join(work, kind)
    shutil.rmtree(d, ignore_errors=True)
    args = ["--type", model_type, "--dtype", "fp32", "--seed", "3", "--context", str(ROWS.get(kind, CONTEXT)),
            "--rope-scaling", json.dumps(scaling), "--out", d]
    with contextlib.redirect_stdout(io.StringIO()):
        if make_model.main(args) != 0:
            raise RuntimeError(f"make_model.py {' '.join(args)} failed")
    return d


def prompt(n, k):
    return [(k * i + 11) % 480 + 4 for i in range(n)]


def same_ids(build, d, p, q, n, bad):
    """Greedy ids of p alone and of [p, q] equal onnxruntime-genai's (appends to bad)."""
    if check_types.ours(build, d, [p], n)[0] != check_types.theirs(d, [p], n)[0]:
        bad.append("batch 1")
    if check_types.ours(build, d, [p, q], n) != check_types.theirs(d, [p, q], n):
        bad.append(f"batch [{len(p)}, {len(q)}]")


def parity(build, d, p, n, bad):
    """`onnx-genai parity` of prompt p to length n: its summary line (appends to bad)."""
    r = subprocess.run([os.path.join(build, "onnx-genai"), "parity", d, "--ids", ",".join(map(str, p)),
                        "--max-length", str(n), "--min-length", str(n)], capture_output=True, text=True)
    last = (r.stdout.strip().splitlines() or [r.stderr.strip()])[-1]
    if r.returncode != 0:
        bad.append(f"parity ({last})")
    return last


def check_pieces(build, d):
    p, q = prompt(1300, 7), prompt(1300, 13)
    n = 1320
    bad = []
    same_ids(build, d, p, q, n, bad)
    last = parity(build, d, p, 1310, bad)
    print(f"{'ok  ' if not bad else 'FAIL'} pieces (llama3, original 512): a 1300-token prompt in pieces of 512, "
          f"ids to {n} = onnxruntime-genai's (batch 1, [1300, 1300]); parity 10 steps: {last}" +
          (f"; differs: {', '.join(bad)}" if bad else ""))
    return not bad


def check(build, work, kind):
    d = make(work, kind)
    if kind == "pieces":
        return check_pieces(build, d)
    bad = []
    p, q = prompt(40, 7), prompt(40, 13)
    long, short = prompt(70, 5), prompt(20, 17)
    same_ids(build, d, p, q, L, bad)
    # different lengths: onnxruntime-genai pads the short row on the right, so its row holds
    # the pads and then the tokens it generated; ours are compared past the pads
    mine = check_types.ours(build, d, [long, short], L)
    padded = check_types.theirs(d, [long, short], L)
    n = L - len(long)
    if mine[0] != padded[0] or mine[1][len(short):len(short) + n] != padded[1][len(long):]:
        bad.append("batch [70, 20] vs onnxruntime-genai's right-padded batch")
    if kind == "longrope":  # the short row's prompt takes the long side through onnxruntime too
        mine = check_types.ours(build, d, [long, short], L, extra=("--backend", "ort"))
        if mine[0] != padded[0] or mine[1][len(short):len(short) + n] != padded[1][len(long):]:
            bad.append("batch [70, 20] on --backend ort")
    last = parity(build, d, p, 120, bad)
    print(f"{'ok  ' if not bad else 'FAIL'} {kind} ({CASES[kind][0]}): ids to {L} = onnxruntime-genai's "
          f"(batch 1, [40, 40], [70, 20]); parity 40 + 80 steps: {last}" +
          (f"; differs: {', '.join(bad)}" if bad else ""))
    if kind == "llama3":
        e = subprocess.run([os.path.join(build, "tests", "engine-check"), d], capture_output=True, text=True)
        out = (e.stdout + e.stderr).strip().splitlines()
        print("     engine: " + " | ".join(x for x in out if x.startswith(("mode", "steps", "ok:", "FAIL"))))
        if e.returncode != 0 or not any(x.startswith("mode: batched") for x in out):
            bad.append("engine")
    return not bad


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    build, work = argv[1], os.path.abspath(argv[2])
    try:
        import onnxruntime_genai  # noqa: F401  the oracle
    except ImportError as e:
        print(f"check_rope_scaling: SKIP: onnxruntime-genai is not installed ({e})")
        return 77
    kinds = argv[3:] or list(CASES)
    os.makedirs(work, exist_ok=True)
    ok = all([check(build, work, k) for k in kinds])
    print("check_rope_scaling: " + ("ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
