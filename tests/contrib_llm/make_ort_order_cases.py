#!/usr/bin/env python3
"""Writes GroupQueryAttention cases (float32 caches) whose expected outputs are
onnxruntime's CPU results, to be matched bit for bit (tolerance 0): the native kernel
computes such a node in onnxruntime's own order (attention_ort.c). The cases cover both
of onnxruntime's ways: one-token runs (decode steps: past lengths up to 800, head sizes 8
to 256 and one that is not a multiple of 8, grouped heads, local windows, rotary) and
several-token runs (prompts and prompts after a past: single and several key blocks of
its flash attention, the K stride's pieces over keys and over a head of 256, windows,
right-padded batches); and the ops whose tanh is MLAS's (Tanh, the tanh GELU, FastGelu).

usage: make_ort_order_cases.py OUT_DIR"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_cases as mc  # noqa: E402

EXACT = (0.0, 0.0)
F = np.float32


def decode(name, N, KV, D, past, B=1, lens=None, **kw):
    lens = lens or [past + 1] * B
    mc.gqa_case(OUT, "ort_decode_" + name, F, B, 1, N, KV, D, max(lens) - 1,
                [n - 1 for n in lens], max(lens), tol=EXACT, **kw)


def prompt(name, N, KV, D, S, past=None, B=1, lens=None, **kw):
    if past is None:  # a first prompt: right padding to S
        lens = lens or [S] * B
        mc.gqa_case(OUT, "ort_prompt_" + name, F, B, S, N, KV, D, None,
                    [n - 1 for n in lens], S, tol=EXACT, **kw)
    else:
        mc.gqa_case(OUT, "ort_prompt_" + name, F, B, S, N, KV, D, past,
                    [past + S - 1] * B, past + S, tol=EXACT, **kw)


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT = sys.argv[1]
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    mc.rng = np.random.RandomState(20)
    # one-token runs
    decode("d64_p10", 4, 2, 64, 10)
    decode("d64_p600", 2, 1, 64, 600)
    decode("d128_p300", 2, 1, 128, 300)
    decode("d256_p300", 2, 1, 256, 300)
    decode("d80_g3", 3, 1, 80, 50)
    decode("d8", 2, 1, 8, 40)
    decode("window16", 2, 1, 64, 100, local_window_size=16)
    decode("window8_p37", 16, 4, 64, 37, local_window_size=8)  # the sum's lanes from row 0
    decode("window8_batch", 16, 2, 32, 0, B=2, lens=[62, 45], local_window_size=8)
    decode("rotary", 4, 2, 64, 30, rotary_half=32, max_pos=64)
    decode("batch2", 4, 2, 64, 0, B=2, lens=[25, 9])
    decode("scale", 2, 1, 64, 40, scale=0.1)
    # groups of 7 and 6 heads (Qwen2.5-0.5B's and 1.5B's): key blocks read by every head in
    # turn, heads summed in pairs and one alone
    decode("g7_p200", 14, 2, 64, 200)
    decode("d128_g5_p100", 5, 1, 128, 100)
    # several-token runs
    prompt("d64_s20", 4, 2, 64, 20)
    prompt("d64_s300", 2, 1, 64, 300)
    prompt("d128_s300", 2, 1, 128, 300)
    prompt("d256_s200", 2, 1, 256, 200)
    prompt("d32_s40", 2, 1, 32, 40)
    prompt("window8", 2, 1, 64, 30, local_window_size=8)
    prompt("d256_window100", 1, 1, 256, 150, local_window_size=100)
    prompt("rotary", 4, 2, 64, 24, rotary_half=32, max_pos=64)
    prompt("padded", 4, 2, 64, 20, B=2, lens=[20, 13])
    prompt("past20", 4, 2, 64, 5, past=20)
    prompt("d128_past300", 2, 1, 128, 40, past=300)
    prompt("window64_past500", 1, 1, 64, 40, past=500, local_window_size=64)
    prompt("d64_past600", 1, 1, 64, 5, past=600)
    prompt("d64_past800", 2, 1, 64, 8, past=800)
    # a row's heads scored four at a time: groups of 7, 5 and 4 heads
    prompt("g7_s45", 14, 2, 64, 45)
    prompt("d128_g5_s37", 5, 1, 128, 37)
    prompt("g4_past30", 4, 1, 64, 19, past=30)
    # a softcap: onnxruntime's plain path (scores by GEMM, libm's tanhf, p . V by its one-row
    # kernel for a decode step and by GEMM for a prompt)
    decode("softcap", 2, 1, 64, 40, softcap=5.0)
    decode("softcap_d256_p300", 2, 1, 256, 300, softcap=30.0)
    decode("softcap_window", 4, 2, 64, 100, softcap=2.0, local_window_size=16)
    prompt("softcap", 2, 1, 64, 40, softcap=5.0)
    prompt("softcap_past", 2, 1, 64, 7, past=20, softcap=5.0)
    prompt("softcap_window", 1, 1, 64, 30, softcap=5.0, local_window_size=8)
    prompt("softcap_d256", 1, 1, 256, 20, softcap=50.0)
    # the tanh family (MLAS's tanh under Tanh, the tanh GELU and FastGelu)
    x = (mc.rng.randn(3, 700) * 3).astype(F)
    x[0, :6] = [0.0, -0.0, 9.5, -12.0, 1e-20, 88.0]
    mc.case(OUT, "ort_tanh", "Tanh", ["x"], {"x": x}, ["y"], F, tol=EXACT, domain="", opset=17)
    mc.case(OUT, "ort_gelu_tanh", "Gelu", ["x"], {"x": x}, ["y"], F, tol=EXACT, domain="",
            opset=20, approximate="tanh")
    mc.case(OUT, "ort_fast_gelu", "FastGelu", ["x"], {"x": x}, ["y"], F, tol=EXACT)
    b = (mc.rng.randn(700) * 0.5).astype(F)
    mc.case(OUT, "ort_fast_gelu_bias", "FastGelu", ["x", "b"], {"x": x, "b": b}, ["y"], F,
            tol=EXACT)
    print(f"make_ort_order_cases.py: wrote {len(mc.written)} cases")


if __name__ == "__main__":
    main()
