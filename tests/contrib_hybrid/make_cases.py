#!/usr/bin/env python3
"""Writes single-node test cases for the ops of hybrid and mixture-of-experts decoders
(Qwen3.5, LFM2, gpt-oss, Gemma 2/3): CausalConvWithState, LinearAttention,
LinearAttentionGate, GatedRMSNorm, GatedAdd, MRotaryEmbedding, GroupQueryAttention with
window-sized KV buffers, MoE and QMoE, in the node-test layout of
tests/contrib_llm/make_cases.py (whose helpers this reuses), with onnxruntime's CPU
results as the expected outputs.

Where onnxruntime's CPU kernel lacks a dtype (CausalConvWithState and LinearAttention
have float32 only), the float16 case's expected outputs are onnxruntime's float32 results
on the same (float16-representable) inputs, rounded to float16. Where onnxruntime refuses
a form outright, the case says which oracle it uses instead.

usage: make_cases.py OUT_DIR [OUT_SHARED]"""
import importlib.util
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

# tests/contrib_llm/make_cases.py: case(), case_np(), make_model(), session(), save_case()
_spec = importlib.util.spec_from_file_location(
    "contrib_llm_cases", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                      "contrib_llm", "make_cases.py"))
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)
# tests/quant/make_cases.py: mlas_int8_class(), the CPU class onnxruntime's kernels take
_qspec = importlib.util.spec_from_file_location(
    "quant_cases", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "quant",
                                "make_cases.py"))
quant_cases = importlib.util.module_from_spec(_qspec)
_qspec.loader.exec_module(quant_cases)

MS = base.MS
TOL = base.TOL
base.NP2ONNX.setdefault(np.uint8, onnx.TensorProto.UINT8)  # QMoE's packed weights
rng = np.random.RandomState(2468)
written = base.written


def rnd(shape, dtype, scale=1.0):
    return (rng.randn(*shape) * scale).astype(dtype)


def dname(dt):
    return base.dname(dt)


def case_np(out_dir, name, op, in_names, feeds, outs, dtype, tol=None, domain=MS, opset=17,
            **attrs):
    """A case whose expected outputs are given (computed by the caller)."""
    model = base.make_model(op, in_names, feeds, [n for n, _ in outs], attrs, domain, opset=opset)
    del model.graph.output[:]
    for n, v in outs:
        model.graph.output.append(helper.make_tensor_value_info(n, base.NP2ONNX[v.dtype.type],
                                                                v.shape))
    base.save_case(os.path.join(out_dir, "test_" + name), model,
                   [([(n, feeds[n]) for n in in_names if n], outs)], tol or TOL[dtype])
    written.append("test_" + name)


def case_f32_oracle(out_dir, name, op, in_names, feeds, out_names, dtype, tol=None, domain=MS,
                    **attrs):
    """A case in `dtype` whose expected outputs are onnxruntime's float32 results on the
    same inputs (for ops whose CPU kernel is float32 only), rounded to `dtype`."""
    if dtype == np.float32:
        return base.case(out_dir, name, op, in_names, feeds, out_names, dtype, tol, domain, **attrs)
    f32 = {n: (v.astype(np.float32) if v.dtype == dtype else v) for n, v in feeds.items()}
    model32 = base.make_model(op, in_names, f32, out_names, attrs, domain)
    present = [n for n in in_names if n]
    outs = base.session(model32).run(None, {n: f32[n] for n in present})
    onames = [n for n in out_names if n]
    outs = [o.astype(dtype) if o.dtype == np.float32 else o for o in outs]
    case_np(out_dir, name, op, in_names, feeds, list(zip(onames, outs)), dtype, tol, domain, **attrs)


# ---------------- CausalConvWithState ----------------

def conv_case(out, name, dt, B, C, L, K, past=True, bias=True, act="silu", dil=1, last=False,
              tol=None):
    S = (K - 1) * dil
    f = {"x": rnd((B, L, C) if last else (B, C, L), dt), "w": rnd((C, 1, K), dt, 0.5)}
    if bias:
        f["b"] = rnd((C,), dt)
    if past:
        f["p"] = rnd((B, S, C) if last else (B, C, S), dt)
    names = ["x", "w", "b" if bias else "", "p" if past else ""]
    while names[-1] == "":
        names.pop()
    attrs = {"activation": act}
    if dil != 1:
        attrs["dilation"] = dil
    if last:
        attrs["channels_last"] = 1
    case_f32_oracle(out, "conv_" + name, "CausalConvWithState", names, f, ["y", "present"], dt,
                    tol, **attrs)


def conv_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        conv_case(out, f"{t}_prefill_past", dt, 2, 6, 7, 4)
        conv_case(out, f"{t}_prefill_nopast", dt, 2, 6, 7, 4, past=False)
        conv_case(out, f"{t}_decode", dt, 2, 6, 1, 4)
        # shorter than the state: part of the past stays in the present state
        conv_case(out, f"{t}_short_past", dt, 1, 5, 2, 4)
        conv_case(out, f"{t}_short_nopast", dt, 1, 5, 2, 4, past=False)
        conv_case(out, f"{t}_none_nobias", dt, 2, 3, 5, 3, bias=False, act="none")
    dt = np.float32
    conv_case(out, "f32_swish", dt, 1, 4, 3, 4, act="swish")
    conv_case(out, "f32_k1", dt, 2, 4, 3, 1)
    conv_case(out, "f32_k2_decode", dt, 2, 4, 1, 2, act="none")
    conv_case(out, "f32_dilation2", dt, 2, 4, 6, 3, dil=2)
    conv_case(out, "f32_dilation3_short", dt, 1, 4, 2, 3, dil=3)
    conv_case(out, "f32_dilation2_nopast", dt, 1, 3, 4, 4, dil=2, past=False)
    conv_case(out, "f32_channels_last", dt, 2, 5, 4, 4, last=True)
    conv_case(out, "f32_channels_last_decode", dt, 2, 5, 1, 4, last=True, dil=2)
    # many channels (split over the pool) and a long prompt
    conv_case(out, "f32_decode_wide", dt, 1, 700, 1, 4)
    conv_case(out, "f32_prefill_long", dt, 2, 40, 90, 4)
    conv_case(out, "f16_prefill_long", np.float16, 1, 64, 70, 4)
    # float32 bit for bit: the convolution's output is the input of MatMulNBits' int8
    # quantization at accuracy_level 4 (Qwen3.5, LFM2), where one ulp can move a product
    # by a quantization step; onnxruntime adds the rounded products of the taps to the
    # bias in order and applies x / (1 + exp(-x))
    conv_case(out, "f32_exact_prefill", dt, 2, 96, 9, 4, tol=(0.0, 0.0))
    conv_case(out, "f32_exact_decode", dt, 2, 96, 1, 4, tol=(0.0, 0.0))
    conv_case(out, "f32_exact_none", dt, 1, 64, 5, 3, act="none", tol=(0.0, 0.0))


# ---------------- LinearAttention, LinearAttentionGate ----------------

def la_case(out, name, dt, B, T, Hq, Hkv, dk, dv, rule="gated_delta", Nk=None, past=True,
            decay_vec=False, beta_one=False, tol=None, decay_scale=0.5, **attrs):
    Nk = Nk or min(Hq, Hkv)
    k = rng.randn(B, T, Nk, dk)
    if rule in ("delta", "gated_delta"):  # keys are L2-normalized for the delta rules
        k /= np.linalg.norm(k, axis=-1, keepdims=True)
    f = {"q": rnd((B, T, Hq * dk), dt, 0.5), "k": k.reshape(B, T, Nk * dk).astype(dt),
         "v": rnd((B, T, Hkv * dv), dt)}
    if past:
        f["s"] = rnd((B, Hkv, dk, dv), dt, 0.3)
    if rule in ("gated", "gated_delta"):
        f["g"] = (-np.abs(rng.randn(B, T, Hkv * dk if decay_vec else Hkv)) * decay_scale).astype(dt)
    if rule in ("delta", "gated_delta"):
        f["b"] = (1 / (1 + np.exp(-rng.randn(B, T, 1 if beta_one else Hkv)))).astype(dt)
    names = [n if n in f else "" for n in ("q", "k", "v", "s", "g", "b")]
    while names[-1] == "":
        names.pop()
    case_f32_oracle(out, "la_" + name, "LinearAttention", names, f, ["y", "present"], dt, tol,
                    q_num_heads=Hq, kv_num_heads=Hkv, update_rule=rule, **attrs)


def la_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        for rule in ("linear", "gated", "delta", "gated_delta"):
            la_case(out, f"{t}_{rule}_gqa_prefill", dt, 2, 5, 4, 2, 8, 8, rule)
        # Qwen3.5's form: fewer query/key heads than value heads, scale 1 (q pre-scaled)
        la_case(out, f"{t}_gated_delta_inverse_gqa", dt, 2, 4, 2, 4, 8, 8, scale=1.0)
        la_case(out, f"{t}_gated_delta_decode", dt, 2, 1, 2, 4, 16, 16, scale=1.0)
        la_case(out, f"{t}_gated_delta_decode_nopast", dt, 1, 1, 4, 2, 8, 8, past=False)
    dt = np.float32
    for rule in ("gated", "gated_delta"):
        la_case(out, f"f32_{rule}_decay_per_key_dim", dt, 2, 4, 4, 2, 8, 8, rule, decay_vec=True)
        la_case(out, f"f32_{rule}_decay_per_key_dim_inverse", dt, 1, 3, 2, 4, 8, 8, rule,
                decay_vec=True)
    for rule in ("delta", "gated_delta"):
        la_case(out, f"f32_{rule}_beta_one", dt, 2, 3, 4, 4, 8, 8, rule, beta_one=True)
    la_case(out, "f32_linear_nopast_scale0", dt, 2, 3, 2, 2, 8, 8, "linear", past=False)
    la_case(out, "f32_gated_explicit_scale", dt, 1, 3, 2, 2, 8, 8, "gated", scale=0.3)
    la_case(out, "f32_mqa", dt, 2, 3, 4, 1, 8, 8)
    la_case(out, "f32_key_heads_below_kv", dt, 1, 3, 2, 4, 8, 8, Nk=1)
    la_case(out, "f32_inverse_ratio4", dt, 1, 3, 1, 4, 8, 8)
    la_case(out, "f32_dk_ne_dv_tails", dt, 2, 3, 4, 2, 6, 13)
    la_case(out, "f32_delta_inverse_nopast", dt, 1, 4, 2, 4, 8, 8, "delta", past=False)
    # decays strong enough that the kernel folds them back mid-chunk (sums below -30)
    la_case(out, "f32_strong_decay", dt, 2, 40, 2, 4, 16, 32, decay_scale=12.0)
    la_case(out, "f32_strong_decay_per_key_dim", dt, 1, 37, 2, 2, 16, 32, decay_vec=True,
            decay_scale=15.0)
    la_case(out, "f32_gated_strong_decay", dt, 1, 9, 2, 2, 8, 32, "gated", decay_scale=40.0)
    # chunks of 64 tokens: a prompt ending in a chunk of 3
    la_case(out, "f32_two_chunks", dt, 1, 67, 4, 2, 8, 40)
    # Qwen3.5-like head sizes, a long prompt and a decode step
    la_case(out, "f32_qwen_prefill", dt, 1, 40, 2, 4, 64, 64, scale=1.0, tol=(2e-4, 2e-5))
    la_case(out, "f32_qwen_decode", dt, 2, 1, 4, 8, 64, 64, scale=1.0)
    la_case(out, "f16_qwen_prefill", np.float16, 1, 24, 2, 4, 32, 32, scale=1.0)
    # float32 bit for bit where onnxruntime runs its scalar loops (d_k d_v < 4096) on CPUs
    # without AVX-512 F/BW/DQ/VL, and, on CPUs with them, for the delta rules at value head
    # sizes a multiple of 32 (any key head size, Qwen3.5's 64 and 128 too), where
    # onnxruntime 1.31 runs another order (la_head_ort512 in linear_attention.c): the output
    # feeds GatedRMSNorm and MatMulNBits' int8 quantization at accuracy_level 4. What neither
    # covers (the rules without delta and value heads of other sizes on AVX-512 CPUs, large
    # heads through MLAS's SGEMM on the others) is held to a few ulps, and says so.
    avx512 = quant_cases.mlas_int8_class() == "avx512"
    near = (1e-5, 1e-6)
    if avx512:
        print("make_cases.py: on this AVX-512 CPU the LinearAttention f32_exact cases of the "
              "linear and gated rules are held to 1e-5, not bit for bit (onnxruntime's order "
              "there is not reproduced, see linear_attention.c)")
    for rule in ("linear", "gated", "delta", "gated_delta"):
        exact = not avx512 or rule in ("delta", "gated_delta")
        la_case(out, f"f32_exact_{rule}", dt, 2, 9, 2, 4, 16, 32, rule, scale=1.0,
                tol=(0.0, 0.0) if exact else near)
    la_case(out, "f32_exact_decode_per_key_dim", dt, 2, 1, 4, 2, 32, 32, decay_vec=True,
            tol=(0.0, 0.0))
    if avx512:  # heads onnxruntime runs through MLAS elsewhere: exact on this class
        la_case(out, "f32_exact512_qwen_prefill", dt, 1, 40, 2, 4, 64, 64, scale=1.0,
                tol=(0.0, 0.0))
        la_case(out, "f32_exact512_qwen_decode", dt, 2, 1, 4, 8, 64, 64, scale=1.0,
                tol=(0.0, 0.0))
        la_case(out, "f32_exact512_head128", dt, 1, 3, 2, 2, 128, 128, tol=(0.0, 0.0))
        la_case(out, "f32_exact512_inverse_gqa", dt, 1, 5, 2, 4, 32, 64, tol=(0.0, 0.0))
        la_case(out, "f32_exact512_delta_dk16", dt, 2, 7, 2, 2, 16, 64, "delta",
                tol=(0.0, 0.0))
        la_case(out, "f32_exact512_long", dt, 1, 130, 2, 2, 32, 64, tol=(0.0, 0.0))


def gate_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        H = 6
        f = {"a": rnd((2, 3, H), dt, 2), "dtb": rnd((H,), np.float32),
             "sc": -np.exp(rnd((H,), np.float32)), "b": rnd((2, 3, H), dt, 2)}
        base.case(out, f"lagate_{t}", "LinearAttentionGate", ["a", "dtb", "sc", "b"], f,
                  ["decay", "beta"], dt)
        base.case(out, f"lagate_{t}_decay_only", "LinearAttentionGate", ["a", "dtb", "sc"], f,
                  ["decay"], dt)
    # float32 bit for bit: onnxruntime's softplus and MLAS's logistic (base/ort_math.h,
    # base/vmath.c), and the logistic as the Sigmoid op (a decoder's SiLU gate)
    H = 32
    f = {"a": rnd((4, 9, H), np.float32, 4), "dtb": rnd((H,), np.float32),
         "sc": -np.exp(rnd((H,), np.float32)), "b": rnd((4, 9, H), np.float32, 8)}
    base.case(out, "lagate_f32_exact", "LinearAttentionGate", ["a", "dtb", "sc", "b"], f,
              ["decay", "beta"], np.float32, (0.0, 0.0))
    base.case(out, "sigmoid_f32_exact", "Sigmoid", ["x"], {"x": rnd((30, 100), np.float32, 9)},
              ["y"], np.float32, (0.0, 0.0), domain="")
    f = {"a": rnd((1, 1, 300), np.float32, 20), "dtb": rnd((300,), np.float32),
         "sc": -np.exp(rnd((300,), np.float32)), "b": rnd((1, 1, 300), np.float32, 20)}
    base.case(out, "lagate_f32_wide_extremes", "LinearAttentionGate", ["a", "dtb", "sc", "b"], f,
              ["decay", "beta"], np.float32)


# ---------------- GatedRMSNorm, GatedAdd, LpNormalization, Softplus ----------------

def norm_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        x, z = rnd((2, 3, 4 * 16), dt, 2), rnd((2, 3, 4 * 16), dt, 2)
        sc = (1 + rnd((16,), dt, 0.3)).astype(dt)
        for act in ("silu", "swish", "sigmoid"):
            base.case(out, f"grms_{t}_{act}_per_head", "GatedRMSNorm", ["x", "s", "g"],
                      {"x": x, "s": sc, "g": z}, ["y"], dt, activation=act, epsilon=1e-6)
        base.case(out, f"grms_{t}_whole_row", "GatedRMSNorm", ["x", "s", "g"],
                  {"x": rnd((5, 40), dt), "s": rnd((40,), dt), "g": rnd((5, 40), dt)}, ["y"], dt)
        x, y = rnd((2, 5, 48), dt), rnd((2, 5, 48), dt, 3)
        base.case(out, f"gatedadd_{t}", "GatedAdd", ["x", "y", "g"],
                  {"x": x, "y": y, "g": rnd((2, 5, 1), dt)}, ["o"], dt)
        base.case(out, f"gatedadd_{t}_2d", "GatedAdd", ["x", "y", "g"],
                  {"x": rnd((7, 300), dt), "y": rnd((7, 300), dt), "g": rnd((7, 1), dt)}, ["o"],
                  dt)
    dt = np.float32
    for act in ("silu", "sigmoid"):  # float32 bit for bit (it feeds MatMulNBits at level 4)
        base.case(out, f"grms_f32_exact_{act}", "GatedRMSNorm", ["x", "s", "g"],
                  {"x": rnd((3, 5, 4 * 64), dt), "s": rnd((64,), dt), "g": rnd((3, 5, 4 * 64), dt, 3)},
                  ["y"], dt, (0.0, 0.0), activation=act, epsilon=1e-6)
    base.case(out, "grms_f32_wide", "GatedRMSNorm", ["x", "s", "g"],
              {"x": rnd((3, 9, 8 * 128), dt), "s": rnd((128,), dt), "g": rnd((3, 9, 8 * 128), dt)},
              ["y"], dt)
    # LpNormalization: onnxruntime has float32 and float64; float16 through its float32
    x = rnd((3, 4, 5), np.float32)
    x[1, :, 2] = 0  # a zero vector along axis 1: 0, not NaN
    for p in (1, 2):
        for axis in (0, 1, -1):
            base.case(out, f"lpnorm_f32_p{p}_axis{axis % 3}", "LpNormalization", ["x"], {"x": x},
                      ["y"], dt, domain="", axis=axis, p=p)
        base.case(out, f"lpnorm_f64_p{p}", "LpNormalization", ["x"], {"x": x.astype(np.float64)},
                  ["y"], np.float64, domain="", p=p)
        case_f32_oracle(out, f"lpnorm_f16_p{p}", "LpNormalization", ["x"],
                        {"x": x.astype(np.float16)}, ["y"], np.float16, domain="", axis=1, p=p)
    # float32 bit for bit (Qwen3.5's q/k l2norm feeds MatMulNBits' int8 quantization at
    # accuracy_level 4): onnxruntime sums the squares in float32 in axis order
    base.case(out, "lpnorm_f32_exact_heads", "LpNormalization", ["x"],
              {"x": rnd((2, 6, 4, 128), np.float32, 3)}, ["y"], dt, (0.0, 0.0), domain="",
              axis=-1, p=2)
    base.case(out, "lpnorm_f32_exact_axis1_p1", "LpNormalization", ["x"],
              {"x": rnd((3, 40, 7), np.float32, 3)}, ["y"], dt, (0.0, 0.0), domain="", axis=1,
              p=1)
    # Softplus in float16 and float64 (onnxruntime's CPU has float32 only)
    sx = rnd((4, 50), np.float32, 8)
    case_f32_oracle(out, "softplus_f16", "Softplus", ["x"], {"x": sx.astype(np.float16)}, ["y"],
                    np.float16, domain="")
    sx64 = sx.astype(np.float64)
    case_np(out, "softplus_f64", "Softplus", ["x"], {"x": sx64},
                 [("y", np.logaddexp(0, sx64))], np.float64, domain="")


# ---------------- MRotaryEmbedding, RotaryEmbedding ----------------

def rotary_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        B, S, N, D = 2, 3, 2, 16
        for layout in (0, 1):
            for inter in (0, 1):
                cos, sin = base.rope_caches(32, D // 2, dt)
                pos = rng.randint(0, 32, (3, B, S)).astype(np.int64)
                base.case(out, f"mrope_{t}_layout{layout}_i{inter}", "MRotaryEmbedding",
                          ["x", "pos", "cos", "sin"],
                          {"x": rnd((B, S, N * D), dt), "pos": pos, "cos": cos, "sin": sin},
                          ["y"], dt, num_heads=N, mrope_section=[4, 2, 2], mrope_layout=layout,
                          interleaved=inter)
        # Qwen3.5's form: partial rotary (a quarter of the head), interleaved sections,
        # text positions (T = H = W)
        D, R = 64, 16
        cos, sin = base.rope_caches(40, R // 2, dt)
        tp = np.tile((np.arange(S) + 5)[None, None], (3, B, 1)).astype(np.int64)
        base.case(out, f"mrope_{t}_partial_text", "MRotaryEmbedding", ["x", "pos", "cos", "sin"],
                  {"x": rnd((B, S, 4 * D), dt), "pos": tp, "cos": cos, "sin": sin}, ["y"], dt,
                  num_heads=4, rotary_embedding_dim=R, mrope_section=[3, 3, 2], mrope_layout=1)
        cos, sin = base.rope_caches(32, 4, dt)
        base.case(out, f"rotary_{t}_3d_num_heads_partial_interleaved", "RotaryEmbedding",
                  ["x", "pos", "cos", "sin"],
                  {"x": rnd((2, 3, 3 * 16), dt), "pos": rng.randint(0, 32, (2, 3)).astype(np.int64),
                   "cos": cos, "sin": sin}, ["y"], dt, num_heads=3, rotary_embedding_dim=8,
                  interleaved=1)
        # the default domain's RotaryEmbedding (opset 23): cos/sin before position_ids, or
        # per-token caches without them
        cos, sin = base.rope_caches(32, 4, dt)
        x = rnd((2, 3, 2 * 16), dt)
        base.case(out, f"rotary23_{t}_partial", "RotaryEmbedding", ["x", "cos", "sin", "pos"],
                  {"x": x, "cos": cos, "sin": sin,
                   "pos": rng.randint(0, 32, (2, 3)).astype(np.int64)}, ["y"], dt, domain="",
                  opset=23, num_heads=2, rotary_embedding_dim=8)
        ct, st = base.rope_caches(6, 8, dt)
        base.case(out, f"rotary23_{t}_no_position_ids_4d", "RotaryEmbedding", ["x", "cos", "sin"],
                  {"x": rnd((2, 2, 3, 16), dt), "cos": ct.reshape(2, 3, 8),
                   "sin": st.reshape(2, 3, 8)}, ["y"], dt, domain="", opset=23, interleaved=1)
    dt = np.float32
    cos, sin = base.rope_caches(32, 8, dt)
    base.case(out, "mrope_f32_4d_scale", "MRotaryEmbedding", ["x", "pos", "cos", "sin"],
              {"x": rnd((2, 2, 3, 16), dt), "pos": rng.randint(0, 32, (3, 2, 3)).astype(np.int64),
               "cos": cos, "sin": sin}, ["y"], dt, mrope_section=[2, 3, 3], mrope_layout=1,
              scale=0.5)
    cos, sin = base.rope_caches(32, 4, dt)
    base.case(out, "mrope_f32_partial_scale_sectioned", "MRotaryEmbedding",
              ["x", "pos", "cos", "sin"],
              {"x": rnd((1, 4, 2 * 16), dt), "pos": rng.randint(0, 32, (3, 1, 4)).astype(np.int64),
               "cos": cos, "sin": sin}, ["y"], dt, num_heads=2, rotary_embedding_dim=8,
              mrope_section=[1, 2, 1], scale=2.0)
    # float32 bit for bit (q and k feed the attention whose output MatMulNBits quantizes at
    # accuracy_level 4): onnxruntime's rope is a c - b s and a s + b c, each one fused
    # multiply-add onto the other product rounded
    for inter in (0, 1):
        cos, sin = base.rope_caches(64, 32, dt)
        base.case(out, f"rotary_f32_exact_i{inter}", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
                  {"x": rnd((2, 5, 4 * 64), dt, 3), "pos": rng.randint(0, 64, (2, 5)).astype(np.int64),
                   "cos": cos, "sin": sin}, ["y"], dt, (0.0, 0.0), num_heads=4, interleaved=inter)
    cos, sin = base.rope_caches(40, 8, dt)
    tp = np.tile((np.arange(5) + 3)[None, None], (3, 2, 1)).astype(np.int64)
    base.case(out, "mrope_f32_exact_partial_text", "MRotaryEmbedding", ["x", "pos", "cos", "sin"],
              {"x": rnd((2, 5, 4 * 64), dt, 3), "pos": tp, "cos": cos, "sin": sin}, ["y"], dt,
              (0.0, 0.0), num_heads=4, rotary_embedding_dim=16, mrope_section=[3, 3, 2],
              mrope_layout=1)
    cos, sin = base.rope_caches(300, 32, dt)
    base.case(out, "mrope_f32_long", "MRotaryEmbedding", ["x", "pos", "cos", "sin"],
              {"x": rnd((1, 200, 8 * 64), dt),
               "pos": rng.randint(0, 300, (3, 1, 200)).astype(np.int64), "cos": cos, "sin": sin},
              ["y"], dt, num_heads=8, mrope_section=[12, 10, 10], mrope_layout=1)


# ---------------- GroupQueryAttention with window-sized KV caches ----------------

GQA_IN = base.GQA_IN  # q k v past_k past_v seqlens_k tsl cos sin pos ab sink


def swc_resident(T, C, W):
    """Rows a window-sized cache of capacity C holds after T positions (onnxruntime's
    contract for sliding_window_cache=1)."""
    if T <= C:
        return T
    G = C - W + 1
    return T - G * -(-(T - C) // G)


def gqa_graph(dt, feeds, names, attrs, masks=None, ymask=None, dynamic=False):
    """GroupQueryAttention; with `masks` (B, 1, C, 1 bool) the present outputs go through
    Where(mask, present, 0) so that rows the contract leaves unspecified are not compared;
    `ymask` (B, S, 1) does the same for the output rows of padding tokens."""
    node = helper.make_node("GroupQueryAttention", names, ["y", "pk", "pv"], domain=MS, **attrs)
    ins = [helper.make_tensor_value_info(n, base.NP2ONNX[feeds[n].dtype.type],
                                         [None] * feeds[n].ndim if dynamic else feeds[n].shape)
           for n in names if n]
    nodes, outs, inits = [node], ["y", "pk", "pv"], []
    if masks is not None:
        zero = numpy_helper.from_array(np.zeros((), dt), "zero")
        inits = [zero, numpy_helper.from_array(masks, "mask")]
        nodes += [helper.make_node("Where", ["mask", "pk", "zero"], ["pk_resident"]),
                  helper.make_node("Where", ["mask", "pv", "zero"], ["pv_resident"])]
        outs = ["y", "pk_resident", "pv_resident"]
    if ymask is not None:
        inits.append(numpy_helper.from_array(ymask, "ymask"))
        nodes.append(helper.make_node("Where", ["ymask", "y", "zero"], ["y_valid"]))
        outs[0] = "y_valid"
    graph = helper.make_graph(nodes, "gqa", ins, [onnx.ValueInfoProto(name=n) for n in outs],
                              initializer=inits)
    return helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])


def swc_case(out, name, dt, B, S, N, KV, D, C, W, seqlens, rotary_half=0, sink=False, ab=False,
             full_oracle=False, **attrs):
    """One step with window-sized caches: the past holds L(T - S) rows (random; the prompt
    ignores them). full_oracle: onnxruntime refuses the form (a right-padded first
    prompt), so the expected values come from its full-length cache on the same tokens."""
    tsl = max(seqlens) + 1
    f = base.gqa_feeds(dt, B, S, N, KV, D, C, seqlens, tsl, rotary_half=rotary_half, sink=sink,
                       ab=(B, N, S, tsl) if ab else None, max_pos=64)
    names = [n if n in f else "" for n in GQA_IN]
    while names[-1] == "":
        names.pop()
    attrs = dict(num_heads=N, kv_num_heads=KV, local_window_size=W, **attrs)
    if rotary_half:
        attrs["do_rotary"] = 1
    L = [swc_resident(t + 1, C, W) for t in seqlens]
    masks = np.zeros((B, 1, C, 1), bool)
    for b in range(B):
        masks[b, 0, :L[b]] = True
    # the output rows of padding tokens are not compared (onnxruntime's float16 and float32
    # kernels differ there)
    ymask = np.array([[[i <= t] for i in range(S)] for t in seqlens]) if full_oracle else None
    model = gqa_graph(dt, f, names, dict(attrs, sliding_window_cache=1), masks, ymask)
    present = [n for n in names if n]
    if full_oracle:
        full = dict(f, past_k=np.zeros((B, KV, tsl, D), dt), past_v=np.zeros((B, KV, tsl, D), dt))
        y, pk, pv = base.session(gqa_graph(dt, full, names, attrs)).run(
            None, {n: full[n] for n in present})
        y = np.where(ymask, y, np.zeros((), dt))
        rk, rv = np.zeros((B, KV, C, D), dt), np.zeros((B, KV, C, D), dt)
        for b in range(B):
            T = seqlens[b] + 1
            rk[b, :, :L[b]], rv[b, :, :L[b]] = pk[b, :, T - L[b]:T], pv[b, :, T - L[b]:T]
        outs = [y, rk, rv]
    else:
        outs = base.session(model).run(None, {n: f[n] for n in present})
    onames = [o.name for o in model.graph.output]
    del model.graph.output[:]
    for n, v in zip(onames, outs):
        model.graph.output.append(helper.make_tensor_value_info(n, base.NP2ONNX[v.dtype.type],
                                                                v.shape))
    base.save_case(os.path.join(out, "test_gqa_swc_" + name), model,
                   [([(n, f[n]) for n in present], list(zip(onames, outs)))], TOL[dt])
    written.append("gqa_swc_" + name)


def swc_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        # decode before, at and after evictions; capacity equal to and above the window
        swc_case(out, f"{t}_decode_filling", dt, 1, 1, 4, 2, 8, 6, 4, [3])
        swc_case(out, f"{t}_decode_evict", dt, 2, 1, 4, 2, 8, 6, 4, [6, 9])
        swc_case(out, f"{t}_decode_c_eq_w", dt, 2, 1, 4, 2, 8, 4, 4, [4, 11])
        # a prompt longer than the capacity
        swc_case(out, f"{t}_prompt_long", dt, 1, 9, 4, 2, 8, 5, 3, [8])
        # later chunks (speculative / chunked prefill), shorter and longer than C
        swc_case(out, f"{t}_chunk", dt, 1, 3, 4, 2, 8, 6, 4, [10])
        swc_case(out, f"{t}_chunk_longer_than_c", dt, 1, 7, 4, 2, 8, 5, 4, [13])
        # the builders' forms: Gemma 2/3 (rotary, softcap), gpt-oss (attention sinks)
        swc_case(out, f"{t}_rotary_softcap", dt, 2, 1, 4, 2, 16, 6, 4, [7, 12], rotary_half=8,
                 softcap=3.0)
        swc_case(out, f"{t}_sinks", dt, 1, 1, 4, 2, 8, 5, 5, [9], sink=True)
        swc_case(out, f"{t}_prompt_rotary_sinks", dt, 1, 6, 4, 2, 16, 4, 3, [5], rotary_half=8,
                 sink=True)
    dt = np.float32
    swc_case(out, "f32_attention_bias", dt, 2, 1, 4, 2, 8, 6, 4, [9, 4], ab=True)
    swc_case(out, "f32_attention_bias_prompt", dt, 1, 5, 4, 2, 8, 4, 3, [4], ab=True)
    swc_case(out, "f32_ratio4_long_window", dt, 1, 1, 8, 2, 64, 80, 64, [150])
    # a right-padded first prompt (onnxruntime refuses it): full-cache oracle
    swc_case(out, "f32_prompt_ragged", dt, 2, 6, 4, 2, 8, 4, 3, [5, 2], full_oracle=True)
    swc_case(out, "f16_prompt_ragged_rotary", np.float16, 2, 5, 4, 2, 16, 6, 4, [4, 1],
             rotary_half=8, full_oracle=True)


# ---------------- MoE, QMoE ----------------

def quantize(w, bits, block, zero_points=False):
    """w (E, N, K) quantized per row (block None) or per block along K: packed rows
    (E, N, K * bits / 8), scales, packed zero points or None, and the dequantized w."""
    E, N, K = w.shape
    nb, bs = (K // block, block) if block else (1, K)
    wb = w.reshape(E, N, nb, bs).astype(np.float64)
    top = 2 ** bits - 1
    if zero_points:
        lo, hi = np.minimum(wb.min(-1), 0), np.maximum(wb.max(-1), 0)
        sc = np.where(hi > lo, (hi - lo) / top, 1.0)
        zp = np.clip(np.round(-lo / sc), 0, top)
    else:
        sc = np.abs(wb).max(-1) / (2 ** (bits - 1) - 1)
        sc[sc == 0] = 1
        zp = np.full(sc.shape, 2 ** (bits - 1))
    sc = sc.astype(np.float32)
    q = np.clip(np.round(wb / sc[..., None]) + zp[..., None], 0, top).astype(np.uint8)
    deq = ((q.astype(np.float64) - zp[..., None]) * sc[..., None]).reshape(E, N, K)
    per = 8 // bits

    def pack(v):  # along the last axis, low bits first
        v = v.reshape(*v.shape[:-1], -1)
        pad = (-v.shape[-1]) % per
        v = np.concatenate([v, np.zeros(v.shape[:-1] + (pad,), np.uint8)], -1) if pad else v
        v = v.reshape(*v.shape[:-1], -1, per).astype(np.uint8)
        out = np.zeros(v.shape[:-1], np.uint8)
        for i in range(per):
            out |= (v[..., i] << (bits * i)).astype(np.uint8)
        return out
    packed = pack(q.reshape(E, N, K))
    zpp = None
    if zero_points:
        zi = zp.astype(np.uint8)
        zpp = pack(zi) if block else pack(zi[..., 0])  # (E, N, ceil(nb*bits/8)) or (E, ceil(N*bits/8))
    return packed, (sc if block else sc[..., 0]), zpp, deq


def moe_np(x, router, w1, b1, w2, b2, k, act, fusion=0, alpha=1.0, beta=0.0, limit=None,
           normalize=False, w3=None, b3=None, rw=None):
    """The numpy model of moe.c's semantics (for the forms onnxruntime's CPU refuses)."""
    xs = x.reshape(-1, x.shape[-1]).astype(np.float64)
    r = router.astype(np.float64)
    p = np.exp(r - r.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    out = np.zeros_like(xs)
    for t in range(xs.shape[0]):
        idx = sorted(range(r.shape[1]), key=lambda e: (-p[t, e], -e))[:k]
        wt = (rw[t, idx].astype(np.float64) if rw is not None else p[t, idx])
        if normalize:
            wt = wt / wt.sum()
        for e, wg in zip(idx, wt):
            h = w1[e] @ xs[t] + (b1[e] if b1 is not None else 0)
            h3 = (w3[e] @ xs[t] + (b3[e] if b3 is not None else 0)) if w3 is not None else None
            if act == "swiglu":
                I = w2.shape[2]
                g, l = ((h[0::2], h[1::2]) if fusion == 1 else (h[:I], h[I:]) if fusion == 2
                        else (h, h3))
                if limit is not None:
                    g, l = np.minimum(g, limit), np.clip(l, -limit, limit)
                a = g / (1 + np.exp(-alpha * g)) * (l + beta)
            else:
                a = {"relu": np.maximum(h, 0), "silu": h / (1 + np.exp(-h)), "identity": h,
                     "gelu": 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))}[act]
                if h3 is not None:
                    a = a * h3
            out[t] += wg * (w2[e] @ a + (b2[e] if b2 is not None else 0))
    return out.reshape(x.shape)


MOE_IN = ["x", "r", "w1", "b1", "w2", "b2", "w3", "b3"]
QMOE_IN = ["x", "r", "w1", "s1", "b1", "w2", "s2", "b2", "w3", "s3", "b3", "z1", "z2", "z3", "rw"]


def moe_feeds(dt, T, H, I, E, F, bias, fc3, shape3d=False):
    f = {"x": rnd((1, T, H) if shape3d else (T, H), dt), "r": rnd((T, E), dt, 2),
         "w1": rnd((E, F * I, H), np.float32, 0.15), "w2": rnd((E, H, I), np.float32, 0.15)}
    if bias:
        f["b1"], f["b2"] = rnd((E, F * I), dt, 0.1), rnd((E, H), dt, 0.1)
    if fc3:
        f["w3"] = rnd((E, I, H), np.float32, 0.15)
        if bias:
            f["b3"] = rnd((E, I), dt, 0.1)
    return f


def moe_case(out, name, dt, T, H, I, E, k, act, fusion=0, bias=True, fc3=False, numpy_ref=False,
             shape3d=False, tol=None, **attrs):
    F = 2 if act == "swiglu" and fusion else 1
    f = moe_feeds(dt, T, H, I, E, F, bias, fc3, shape3d)
    for w in ("w1", "w2", "w3"):
        if w in f:
            f[w] = f[w].astype(dt)
    names = [n if n in f else "" for n in MOE_IN]
    while names[-1] == "":
        names.pop()
    attrs = dict(k=k, activation_type=act, **attrs)
    if act == "swiglu":
        attrs["swiglu_fusion"] = fusion
    if numpy_ref:
        # onnxruntime's CPU MoE refuses this form: numpy model of the operator description
        y = moe_np(f["x"], f["r"], f["w1"], f.get("b1"), f["w2"], f.get("b2"), k, act, fusion,
                   attrs.get("activation_alpha", 1.0), attrs.get("activation_beta", 0.0),
                   attrs.get("swiglu_limit"), attrs.get("normalize_routing_weights", 0),
                   f.get("w3"), f.get("b3"))
        case_np(out, "moe_" + name, "MoE", names, f, [("y", y.astype(dt))], dt, tol, **attrs)
    else:
        case_f32_oracle(out, "moe_" + name, "MoE", names, f, ["y"], dt, tol, **attrs)


def qmoe_case(out, name, dt, T, H, I, E, k, act, bits, block, fusion=0, bias=True, zp=False,
              fc3=False, rw=False, numpy_ref=False, tol=None, **attrs):
    F = 2 if act == "swiglu" and fusion else 1
    f = moe_feeds(dt, T, H, I, E, F, bias, fc3)
    deq = {}
    for i, w in ((1, "w1"), (2, "w2"), (3, "w3")):
        if w in f:
            f[w], s, z, deq[w] = quantize(f[w], bits, block, zp)
            f[f"s{i}"] = s.astype(dt)
            if zp:
                f[f"z{i}"] = z
    if rw:
        f["rw"] = rng.rand(T, E).astype(dt)
    names = [n if n in f else "" for n in QMOE_IN]
    while names[-1] == "":
        names.pop()
    attrs = dict(k=k, activation_type=act, expert_weight_bits=bits, **attrs)
    if block:
        attrs["block_size"] = block
    if act == "swiglu":
        attrs["swiglu_fusion"] = fusion
    if numpy_ref:
        # onnxruntime's CPU QMoE refuses this form: numpy model of the operator description
        # on the dequantized weights (float32 cases only: their scales are stored exactly)
        assert dt == np.float32
        y = moe_np(f["x"], f["r"], deq["w1"], f.get("b1"), deq["w2"], f.get("b2"), k, act,
                   fusion, attrs.get("activation_alpha", 1.0), attrs.get("activation_beta", 0.0),
                   attrs.get("swiglu_limit"), True, deq.get("w3"), f.get("b3"))
        case_np(out, "qmoe_" + name, "QMoE", names, f, [("y", y.astype(dt))], dt, tol, **attrs)
    else:
        base.case(out, "qmoe_" + name, "QMoE", names, f, ["y"], dt, tol, **attrs)


GPT_OSS = dict(activation_alpha=1.702, activation_beta=1.0, swiglu_limit=7.0,
               normalize_routing_weights=1)


def moe_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        moe_case(out, f"{t}_swiglu_gpt_oss", dt, 5, 32, 24, 8, 4, "swiglu", 1, **GPT_OSS)
        moe_case(out, f"{t}_silu_k2", dt, 6, 32, 16, 4, 2, "silu")
        for bits in (4, 8):
            qmoe_case(out, f"{t}_int{bits}_b32_swiglu_gpt_oss", dt, 5, 64, 32, 8, 4, "swiglu",
                      bits, 32, 1, **GPT_OSS)
            qmoe_case(out, f"{t}_int{bits}_b32_zp_relu", dt, 4, 64, 32, 4, 2, "relu", bits, 32,
                      zp=True)
        qmoe_case(out, f"{t}_int4_colwise_swiglu", dt, 3, 64, 32, 4, 2, "swiglu", 4, None, 1)
    dt = np.float32
    for act in ("relu", "gelu", "identity"):
        for norm in (0, 1):
            moe_case(out, f"f32_{act}_norm{norm}", dt, 6, 32, 16, 4, 2, act,
                     normalize_routing_weights=norm)
    moe_case(out, "f32_k1_nobias", dt, 7, 32, 16, 4, 1, "silu", bias=False)
    moe_case(out, "f32_3d_input", dt, 4, 32, 16, 4, 2, "swiglu", 1, shape3d=True)
    moe_case(out, "f32_prefill_gemm", dt, 48, 64, 32, 2, 1, "swiglu", 1, **GPT_OSS)
    # forms onnxruntime's CPU refuses (numpy model of the description)
    moe_case(out, "f32_swiglu_fusion2", dt, 5, 32, 16, 4, 2, "swiglu", 2, numpy_ref=True,
             **GPT_OSS)
    moe_case(out, "f32_swiglu_fc3", dt, 5, 32, 16, 4, 2, "swiglu", 0, fc3=True, numpy_ref=True)
    moe_case(out, "f32_silu_fc3_mixtral", dt, 5, 32, 16, 4, 2, "silu", fc3=True, numpy_ref=True,
             normalize_routing_weights=1)
    for bits in (4, 8):
        qmoe_case(out, f"f32_int{bits}_b64", dt, 4, 128, 64, 4, 2, "swiglu", bits, 64, 1)
        qmoe_case(out, f"f32_int{bits}_colwise_zp", dt, 4, 64, 32, 4, 2, "silu", bits, None,
                  zp=True)
        qmoe_case(out, f"f32_int{bits}_b128_prefill", dt, 40, 128, 128, 2, 1, "swiglu", bits,
                  128, 1, **GPT_OSS)
    qmoe_case(out, "f32_int4_b16_zp_swiglu", dt, 5, 64, 32, 4, 2, "swiglu", 4, 16, 1, zp=True,
              bias=False)
    # QMoE divides by the chosen weights' sum even without normalize_routing_weights
    qmoe_case(out, "f32_int4_unnormalized", dt, 5, 64, 32, 4, 2, "gelu", 4, 32)
    for norm in (0, 1):
        qmoe_case(out, f"f32_int8_router_weights_norm{norm}", dt, 5, 64, 32, 4, 2, "relu", 8, 32,
                  rw=True, normalize_routing_weights=norm)
    qmoe_case(out, "f32_int4_swiglu_fusion2", dt, 5, 64, 32, 4, 2, "swiglu", 4, 32, 2,
              numpy_ref=True, **GPT_OSS)
    qmoe_case(out, "f32_int8_silu_fc3", dt, 5, 64, 32, 4, 2, "silu", 8, 32, fc3=True,
              numpy_ref=True)


# ---------------- state loops: past and present as one buffer ----------------

def state_loop(out_shared, name, op, dt, lengths, feeds_for, names, state_in, state_shape,
               out_names, **attrs):
    """Runs of `op` with token counts `lengths` (a prompt, then decode steps), each step's
    past state being the previous step's present. Run by gqa-shared-check with the past
    and present bound to one buffer (shared.txt); the expected values are onnxruntime's
    float32 results (the state rounded to dt between steps, as a dt buffer keeps it)."""
    state = rnd(state_shape, dt, 0.3)
    sets = []
    for T in lengths:
        f = feeds_for(T)
        f[state_in] = state
        f32 = {n: (v.astype(np.float32) if v.dtype == dt else v) for n, v in f.items()}
        model32 = base.make_model(op, names, f32, out_names, attrs, dynamic=True)
        outs = [o.astype(dt) for o in base.session(model32).run(None, f32)]
        sets.append(([(n, f[n]) for n in names if n], list(zip(out_names, outs))))
        state = outs[1]
    model = base.make_model(op, names, dict(sets[0][0]), out_names, attrs,
                            dynamic=True)
    del model.graph.output[:]
    for n, v in sets[0][1]:
        model.graph.output.append(helper.make_tensor_value_info(n, base.NP2ONNX[v.dtype.type], None))
    d = os.path.join(out_shared, "test_state_" + name)
    base.save_case(d, model, sets, TOL[dt])
    with open(os.path.join(d, "shared.txt"), "w") as fh:
        fh.write(f"{names.index(state_in)} 1\n")
    written.append("state_" + name)


def swc_loop(out_shared, name, dt, B, N, KV, D, C, W, prompt, steps, rotary_half=0, sink=False,
             **attrs):
    """A prompt of `prompt` tokens per entry (right-padded to the longest), then `steps`
    decode tokens, with window-sized past and present bound to one buffer. Expected values
    from onnxruntime's full-length cache on the same tokens (the outputs are the same; a
    padded batch it refuses with window-sized caches): the output rows of padding tokens
    and the cache rows past the resident L(T) are NaN, not compared."""
    S0 = max(prompt)
    attrs = dict(num_heads=N, kv_num_heads=KV, local_window_size=W, **attrs)
    if rotary_half:
        attrs["do_rotary"] = 1
    f = base.gqa_feeds(dt, B, S0, N, KV, D, C, [p - 1 for p in prompt], S0,
                       rotary_half=rotary_half, sink=sink, max_pos=64)
    names = [n if n in f else "" for n in GQA_IN]
    while names[-1] == "":
        names.pop()
    total = S0 + steps
    fk, fv = np.zeros((B, KV, total, D), dt), np.zeros((B, KV, total, D), dt)
    full_sess = base.session(gqa_graph(dt, dict(f, past_k=fk, past_v=fv), names, attrs,
                                       dynamic=True))
    sets, lens = [], list(prompt)
    past_k, past_v = np.zeros((B, KV, C, D), dt), np.zeros((B, KV, C, D), dt)
    for step in range(steps + 1):
        if step:
            g = base.gqa_feeds(dt, B, 1, N, KV, D, None, [], 0)
            f = dict(f, q=g["q"], k=g["k"], v=g["v"])
            lens = [n + 1 for n in lens]
            f["seqlens_k"] = np.array([n - 1 for n in lens], np.int32)
            f["tsl"] = np.array(max(lens), np.int32)
        run = dict(f, past_k=fk, past_v=fv)
        y, fk, fv = full_sess.run(None, {n: run[n] for n in names if n})
        y = y.copy()
        if not step:
            for b, n in enumerate(prompt):
                y[b, n:] = np.nan
        pk, pv = np.full((B, KV, C, D), np.nan, dt), np.full((B, KV, C, D), np.nan, dt)
        for b, T in enumerate(lens):
            L = swc_resident(T, C, W)
            pk[b, :, :L], pv[b, :, :L] = fk[b, :, T - L:T], fv[b, :, T - L:T]
        f["past_k"], f["past_v"] = past_k, past_v  # the buffer before the run (step 0 seeds it)
        sets.append(([(n, f[n]) for n in names if n], [("y", y), ("present_k", pk),
                                                        ("present_v", pv)]))
        past_k, past_v = pk, pv
    model = gqa_graph(dt, f, names, dict(attrs, sliding_window_cache=1), dynamic=True)
    del model.graph.output[:]
    for n in ("y", "present_k", "present_v"):
        model.graph.output.append(helper.make_tensor_value_info(n, base.NP2ONNX[dt], None))
    model.graph.node[0].output[:] = ["y", "present_k", "present_v"]
    d = os.path.join(out_shared, "test_gqa_swc_loop_" + name)
    base.save_case(d, model, sets, TOL[dt])
    gi = [n for n in names if n]
    with open(os.path.join(d, "shared.txt"), "w") as fh:
        fh.write(f"{gi.index('past_k')} 1\n{gi.index('past_v')} 2\n")
    open(os.path.join(d, "nan_matches_any"), "w").close()
    written.append("gqa_swc_loop_" + name)


def state_cases(out_shared):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        swc_loop(out_shared, f"{t}_rotary", dt, 1, 4, 2, 16, 5, 3, [4], 9, rotary_half=8)
        swc_loop(out_shared, f"{t}_ragged_sinks", dt, 2, 4, 2, 8, 6, 4, [5, 2], 8, sink=True)
    swc_loop(out_shared, "f32_c_eq_w_softcap", np.float32, 2, 4, 1, 8, 4, 4, [3, 3], 7,
             softcap=2.0)
    for dt in (np.float32, np.float16):
        t = dname(dt)
        B, C, K = 2, 24, 4

        def conv_feeds(T, dt=dt):
            return {"x": rnd((B, C, T), dt), "w": W, "b": bias}
        W, bias = rnd((C, 1, K), dt, 0.5), rnd((C,), dt)
        state_loop(out_shared, f"conv_{t}", "CausalConvWithState", dt, [5, 1, 1, 2, 1],
                   conv_feeds, ["x", "w", "b", "p"], "p", (B, C, K - 1), ["y", "present"],
                   activation="silu")
        Hq, Hkv, dk, dv = 2, 4, 16, 16

        def la_feeds(T, dt=dt):
            k = rng.randn(B, T, Hq * dk).reshape(B, T, Hq, dk)
            k /= np.linalg.norm(k, axis=-1, keepdims=True)
            return {"q": rnd((B, T, Hq * dk), dt, 0.3), "k": k.reshape(B, T, -1).astype(dt),
                    "v": rnd((B, T, Hkv * dv), dt),
                    "g": (-np.abs(rng.randn(B, T, Hkv)) * 0.5).astype(dt),
                    "b": (1 / (1 + np.exp(-rng.randn(B, T, Hkv)))).astype(dt)}
        state_loop(out_shared, f"la_{t}", "LinearAttention", dt, [6, 1, 1, 3, 1], la_feeds,
                   ["q", "k", "v", "s", "g", "b"], "s", (B, Hkv, dk, dv), ["y", "present"],
                   q_num_heads=Hq, kv_num_heads=Hkv, update_rule="gated_delta", scale=1.0)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    out = sys.argv[1]
    conv_cases(out)
    la_cases(out)
    gate_cases(out)
    norm_cases(out)
    rotary_cases(out)
    swc_cases(out)
    moe_cases(out)
    if len(sys.argv) == 3:
        state_cases(sys.argv[2])
    print(f"make_cases.py: wrote {len(written)} cases")


if __name__ == "__main__":
    main()
