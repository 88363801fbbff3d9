#!/usr/bin/env python3
"""A LongRoPE package through the generator and the serving engine.

The builder writes Phi-3/3.5/4-mini's LongRoPE as two rotary caches, short factors for
positions up to original_max_position_embeddings and long ones (with LongRoPE's attention
factor) beyond, chosen per run by an If on the attention mask's width:

    Shape(attention_mask) -> Gather(1) -> Greater(original_max) -> If -> cos_cache, sin_cache

so a sequence switches caches when its length passes original_max. This check makes the
model maker's phi3 package (fp32, transformers' init) and rewrites it into that layout
(original_max 64, context 256: the short cache has 64 rows, the long one 256), then:
  1. `onnx-genai parity` on a prompt of 56 tokens for 24 steps (across the switch): the
     logits of every step within parity's tolerance of onnxruntime's;
  2. our greedy tokens equal onnxruntime-genai's for the same run;
  3. the serving engine (engine-check: 16 prompts of 3 to 108 tokens at once, most of
     them crossing 64) gives each request its run alone, in batched mode. The engine's
     flat steps feed one mask for all their sequences; for this graph a step runs the
     tokens on either side of the switch apart, each run with a mask on its side (a
     prompt's tokens take the side of the prompt's length, a generated token at position p
     that of p + 1, as in a run alone). Also with prompts cut into chunks, and with
     preemption recomputing sequences across the switch. (Before, every decode step took
     the short cache and stopped at position 64 with 'outside the cos/sin caches'.)
  4. speculative decoding across the switch: a verification's run takes one side for all
     its tokens (its mask as wide as its last position), a plain step the side of its own
     position, so drafts stop before the switch. The generator drafting 8 tokens a time
     from the package itself (every draft kept; the verification after the 56-token
     prompt would run positions 56..64) gives the plain greedy tokens; the engine in
     batched mode too, with the oracle's drafts (--oracle-drafts: kept and rejected) and
     with the package as its draft model. (Before, the generator's verification at the
     switch rotated positions 56..63 with the long factors, and the engine served such a
     model per sequence when asked to speculate.)

usage: check_longrope.py BUILD WORK
"""
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_types  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORIGINAL_MAX = 64


def caches(inv, factors, rows, scale):
    t = np.arange(rows, dtype=np.float32)
    f = np.outer(t, (inv / np.asarray(factors, np.float64)).astype(np.float32)).astype(np.float32)
    return ((np.cos(f) * np.float32(scale)).astype(np.float32),
            (np.sin(f) * np.float32(scale)).astype(np.float32))


def longrope(d):
    """Rewrites the package in d: its one cos/sin cache pair becomes the If of the builder's
    LongRoPE layout."""
    path = os.path.join(d, "model.onnx")
    m = onnx.load(path)
    g = m.graph
    init = {i.name: i for i in g.initializer}
    cos = numpy_helper.to_array(init["cos_cache"])
    ctx, half = cos.shape
    # the maker's frequencies, back from the cache's row 1 (cos(inv), inv in (0, 1])
    inv = np.arccos(np.clip(cos[1].astype(np.float64), -1, 1))
    short = [1.0 + 0.01 * i for i in range(half)]
    long = [1.0 + 0.2 * i for i in range(half)]
    att = math.sqrt(1 + math.log(ctx / ORIGINAL_MAX) / math.log(ORIGINAL_MAX))
    cs, ss = caches(inv, short, ORIGINAL_MAX, 1.0)
    cl, sl = caches(inv, long, ctx, att)
    for name in ("cos_cache", "sin_cache"):
        g.initializer.remove(init[name])

    def branch(name, c, s):
        return helper.make_graph(
            [helper.make_node("Constant", [], [f"cos_cache_{name}"],
                              value=numpy_helper.from_array(c, f"cos_{name}")),
             helper.make_node("Constant", [], [f"sin_cache_{name}"],
                              value=numpy_helper.from_array(s, f"sin_{name}"))],
            f"{name}_branch", [],
            [helper.make_tensor_value_info(f"cos_cache_{name}", TensorProto.FLOAT, None),
             helper.make_tensor_value_info(f"sin_cache_{name}", TensorProto.FLOAT, None)])
    b = "/model/rope_caches_subgraph"
    g.initializer.extend([numpy_helper.from_array(np.array(1, np.int64), f"{b}/one"),
                          numpy_helper.from_array(np.array(ORIGINAL_MAX, np.int64), f"{b}/max")])
    nodes = [helper.make_node("Shape", ["attention_mask"], [f"{b}/Shape/output_0"], f"{b}/Shape"),
             helper.make_node("Gather", [f"{b}/Shape/output_0", f"{b}/one"],
                              [f"{b}/Gather/output_0"], f"{b}/Gather", axis=0),
             helper.make_node("Greater", [f"{b}/Gather/output_0", f"{b}/max"],
                              [f"{b}/Greater/output_0"], f"{b}/Greater"),
             helper.make_node("If", [f"{b}/Greater/output_0"], ["cos_cache", "sin_cache"],
                              f"{b}/If", then_branch=branch("large", cl, sl),
                              else_branch=branch("small", cs, ss))]
    for n in reversed(nodes):
        g.node.insert(0, n)
    onnx.save(m, path, save_as_external_data=True, location="model.onnx.data")


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    build, work = argv[1], os.path.abspath(argv[2])
    d = os.path.join(work, "phi3-longrope")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type", "phi3",
                    "--seed", "1", "--init", "transformers", "--dtype", "fp32", "--out", d],
                   check=True, stdout=subprocess.DEVNULL)
    longrope(d)
    bad = []
    prompt = [(7 * i + 3) % 500 + 4 for i in range(56)]
    L = len(prompt) + 24
    r = subprocess.run([os.path.join(build, "onnx-genai"), "parity", d, "--ids",
                        ",".join(map(str, prompt)), "--max-length", str(L), "--min-length", str(L)],
                       capture_output=True, text=True)
    last = (r.stdout.strip().splitlines() or [r.stderr.strip()])[-1]
    print(f"parity, 56 tokens + 24 across position {ORIGINAL_MAX}: {last}")
    if r.returncode != 0:
        bad.append("parity")
    ours = check_types.ours(build, d, [prompt], L)[0]
    theirs = check_types.theirs(d, [prompt], L)[0]
    print(f"greedy tokens {'equal' if ours == theirs else 'DIFFER from'} onnxruntime-genai's")
    if ours != theirs:
        bad.append("tokens")
    spec = ["--speculative", "draft", "--draft-model", d, "--draft-fixed", "--draft-tokens", "8"]
    r = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "-m", d, "--max-length",
                        str(L), "--min-length", str(L), "--json", "--ids", ",".join(map(str, prompt)),
                        *spec], capture_output=True, text=True)
    res = json.loads(r.stdout) if r.returncode == 0 else {}
    drafted = res.get("speculative", {}).get("verifications", 0)
    same = res.get("sequences", [None])[0] == ours
    print(f"speculative (the package drafting for itself, 8 tokens): {drafted} verifications, "
          f"greedy tokens {'equal' if same else 'DIFFER from'} plain decoding's"
          + ("" if r.returncode == 0 else f": {r.stderr.strip()}"))
    if not same or drafted == 0:
        bad.append("speculative generator")
    # as served; prompts cut into chunks across the switch; preemption (recomputation
    # across it) with small blocks and a small pool; speculation across the switch
    for extra in ([], ["--step-tokens", "16"],
                  ["--step-tokens", "7", "--kv-blocks", "60", "--block-size", "4"],
                  ["--oracle-drafts", "--draft-fixed", "--want-verifications"],
                  ["--draft-model", d, "--draft-fixed", "--draft-tokens", "8",
                   "--want-verifications"]):
        e = subprocess.run([os.path.join(build, "tests", "engine-check"), d, *extra],
                           capture_output=True, text=True)
        out = (e.stdout + e.stderr).strip().splitlines()
        print(f"engine {' '.join(extra) or '(defaults)'}: " +
              " | ".join(x for x in out if x.startswith(("mode", "steps", "ok:", "FAIL",
                                                        "speculative"))))
        if e.returncode != 0:
            bad.append(f"engine {' '.join(extra)}")
        if not any(x.startswith("mode: batched") for x in out):
            bad.append("engine not in batched mode")
    print("check_longrope: " + ("FAIL: " + ", ".join(bad) if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
