#!/usr/bin/env python3
"""Writes single-node test cases for the second group of com.microsoft kernels
(GroupQueryAttention, MultiHeadAttention, RotaryEmbedding, SimplifiedLayerNormalization,
SkipSimplifiedLayerNormalization, QuickGelu, BiasGelu, BiasAdd) in the layout of ONNX's
backend node tests, with onnxruntime's CPU results as the expected outputs:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_N.pb, output_N.pb
    OUT/<case>/tolerance.txt            "rtol atol"

and, under OUT_SHARED, GroupQueryAttention decode loops whose past and present caches are
one buffer (onnxruntime run with I/O binding so that past_key and present_key are the
same memory): test_data_set_K is step K, shared.txt pairs input and output indices.

usage: make_cases.py OUT_DIR [OUT_SHARED]"""
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover
    sys.exit("make_cases.py: the onnxruntime Python package is required")

MS = "com.microsoft"
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
           np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32,
           np.int64: TensorProto.INT64}
# float16 outputs: the reference rounds intermediates (rotated Q/K, sums) to float16
# where we may not, so one or two float16 ulps of the largest values
TOL = {np.float32: (1e-4, 1e-5), np.float16: (4e-3, 2e-3), np.float64: (1e-7, 1e-9)}

rng = np.random.RandomState(4321)
written = []


def make_model(op, in_names, feeds, out_names, attrs, domain=MS, dynamic=False, opset=17):
    inputs = [helper.make_tensor_value_info(n, NP2ONNX[feeds[n].dtype.type],
                                            [None] * feeds[n].ndim if dynamic else feeds[n].shape)
              for n in in_names if n]
    outputs = [onnx.ValueInfoProto(name=n) for n in out_names if n]
    node = helper.make_node(op, in_names, out_names, domain=domain, **attrs)
    graph = helper.make_graph([node], op.lower(), inputs, outputs)
    return helper.make_model(graph, ir_version=8 if opset < 21 else 10,
                             opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid(MS, 1)])


def session(model):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def save_case(d, model, sets, tol):
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (ins, outs) in enumerate(sets):
        ds = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(ds)
        for i, (n, v) in enumerate(ins):
            onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(ds, f"input_{i}.pb"))
        for i, (n, v) in enumerate(outs):
            onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(ds, f"output_{i}.pb"))
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")


def case(out_dir, name, op, in_names, feeds, out_names, dtype, tol=None, domain=MS, opset=17,
         **attrs):
    model = make_model(op, in_names, feeds, out_names, attrs, domain, opset=opset)
    present = [n for n in in_names if n]
    outs = session(model).run(None, {n: feeds[n] for n in present})
    del model.graph.output[:]
    onames = [n for n in out_names if n]
    for n, v in zip(onames, outs):
        model.graph.output.append(
            helper.make_tensor_value_info(n, NP2ONNX[v.dtype.type], v.shape))
    name = "test_" + name
    save_case(os.path.join(out_dir, name), model,
              [([(n, feeds[n]) for n in present], list(zip(onames, outs)))], tol or TOL[dtype])
    written.append(name)


def case_np(out_dir, name, op, in_names, feeds, outs, dtype, tol=None, **attrs):
    """A case whose expected outputs come from numpy (ops onnxruntime's CPU lacks)."""
    model = make_model(op, in_names, feeds, [n for n, _ in outs], attrs)
    del model.graph.output[:]
    for n, v in outs:
        model.graph.output.append(helper.make_tensor_value_info(n, NP2ONNX[v.dtype.type], v.shape))
    name = "test_" + name
    save_case(os.path.join(out_dir, name), model, [([(n, feeds[n]) for n in in_names if n], outs)],
              tol or TOL[dtype])
    written.append(name)


def rnd(shape, dtype, scale=1.0):
    return (rng.randn(*shape) * scale).astype(dtype)


def dname(dtype):
    return {np.float32: "f32", np.float16: "f16", np.float64: "f64"}[dtype]


# ---------------- GroupQueryAttention ----------------

GQA_IN = ["q", "k", "v", "past_k", "past_v", "seqlens_k", "tsl", "cos", "sin", "pos", "ab",
          "sink"]


def rope_caches(max_pos, half, dt):
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(max_pos)[:, None] * inv[None]
    return np.cos(ang).astype(dt), np.sin(ang).astype(dt)


def gqa_feeds(dt, B, S, N, KV, D, M, seqlens, tsl, packed=False, rotary_half=0, pos=None,
              ab=None, sink=False, max_pos=64):
    f = {"seqlens_k": np.array(seqlens, np.int32), "tsl": np.array(tsl, np.int32)}
    if packed:
        f["q"] = rnd((B, S, (N + 2 * KV) * D), dt)
    else:
        f["q"], f["k"], f["v"] = rnd((B, S, N * D), dt), rnd((B, S, KV * D), dt), rnd((B, S, KV * D), dt)
    if M is not None:
        f["past_k"], f["past_v"] = rnd((B, KV, M, D), dt), rnd((B, KV, M, D), dt)
    if rotary_half:
        f["cos"], f["sin"] = rope_caches(max_pos, rotary_half, dt)
    if pos is not None:
        f["pos"] = pos
    if ab is not None:
        f["ab"] = rnd(ab, dt)
    if sink:
        f["sink"] = rnd((N,), dt)
    return f


def gqa_case(out, name, dt, B, S, N, KV, D, M, seqlens, tsl, outputs=3, packed=False,
             rotary_half=0, pos=None, ab=None, sink=False, tol=None, max_pos=64, **attrs):
    f = gqa_feeds(dt, B, S, N, KV, D, M, seqlens, tsl, packed, rotary_half, pos, ab, sink,
                  max_pos)
    names = [n if n in f else "" for n in GQA_IN]
    while names[-1] == "":
        names.pop()
    if rotary_half:
        attrs["do_rotary"] = 1
    case(out, "gqa_" + name, "GroupQueryAttention", names, f,
         ["y", "present_k", "present_v"][:outputs], dt, tol=tol, num_heads=N, kv_num_heads=KV,
         **attrs)


def gqa_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        # prompt: right-padded batch, no past / a max-length past buffer (present keeps
        # max_length rows, zero after the new ones)
        gqa_case(out, f"{t}_prompt_nopast", dt, 2, 5, 4, 2, 8, None, [4, 2], 5)
        gqa_case(out, f"{t}_prompt_maxbuf", dt, 2, 5, 4, 2, 8, 12, [4, 2], 5)
        # decode with different lengths per entry, past buffer of max length
        gqa_case(out, f"{t}_decode", dt, 3, 1, 4, 2, 8, 10, [5, 9, 0], 10)
        gqa_case(out, f"{t}_decode_grown_past", dt, 2, 1, 4, 2, 8, 6, [6, 3], 7)
        # rotary: half split and interleaved, partial rotary dims, packed QKV
        gqa_case(out, f"{t}_prompt_rotary", dt, 2, 4, 4, 2, 16, 8, [3, 1], 4, rotary_half=8)
        gqa_case(out, f"{t}_decode_rotary", dt, 2, 1, 4, 2, 16, 8, [5, 7], 8, rotary_half=8)
        gqa_case(out, f"{t}_decode_rotary_interleaved", dt, 2, 1, 4, 2, 16, 8, [5, 7], 8,
                 rotary_half=8, rotary_interleaved=1)
        gqa_case(out, f"{t}_prompt_rotary_interleaved_partial", dt, 1, 5, 4, 1, 32, None, [4], 5,
                 rotary_half=8, rotary_interleaved=1)
        gqa_case(out, f"{t}_decode_rotary_partial", dt, 2, 1, 4, 4, 32, 8, [5, 2], 6,
                 rotary_half=8)
        gqa_case(out, f"{t}_packed_prompt_rotary", dt, 2, 4, 6, 2, 16, 9, [3, 2], 4, packed=True,
                 rotary_half=8)
        gqa_case(out, f"{t}_packed_decode_rotary", dt, 2, 1, 6, 2, 16, 9, [3, 8], 9, packed=True,
                 rotary_half=8)
        # a later chunk of the prompt (batch 1, past and several new tokens)
        gqa_case(out, f"{t}_subsequent_prompt_rotary", dt, 1, 3, 4, 2, 16, 12, [7], 8,
                 rotary_half=8)
        gqa_case(out, f"{t}_softcap", dt, 2, 1, 4, 2, 8, 10, [5, 7], 8, softcap=2.0)
        gqa_case(out, f"{t}_head_sink", dt, 2, 1, 4, 2, 8, 10, [5, 7], 8, sink=True)
        gqa_case(out, f"{t}_window_prompt", dt, 1, 7, 4, 2, 8, None, [6], 7, local_window_size=3)
    dt = np.float32
    gqa_case(out, "f32_scale", dt, 2, 1, 4, 2, 8, 10, [5, 7], 8, scale=0.7)
    gqa_case(out, "f32_window_decode", dt, 2, 1, 4, 2, 8, 10, [5, 8], 9, local_window_size=3)
    gqa_case(out, "f32_window_subsequent", dt, 1, 3, 4, 2, 8, 10, [8], 9, local_window_size=4)
    gqa_case(out, "f32_smooth_softmax_prompt", dt, 1, 4, 4, 2, 8, None, [3], 4, smooth_softmax=1)
    gqa_case(out, "f32_smooth_softmax_decode", dt, 2, 1, 4, 2, 8, 10, [5, 7], 8, smooth_softmax=1)
    gqa_case(out, "f32_head_sink_prompt", dt, 1, 4, 4, 2, 8, None, [3], 4, sink=True)
    gqa_case(out, "f32_softcap_bias_decode", dt, 2, 1, 4, 2, 8, 10, [7, 4], 8, softcap=1.5,
             ab=(2, 4, 1, 8))
    gqa_case(out, "f32_bias_prompt_bcast", dt, 2, 4, 4, 2, 8, None, [3, 3], 4, ab=(1, 1, 4, 4))
    gqa_case(out, "f32_bias_decode_heads", dt, 2, 1, 4, 2, 8, 10, [7, 5], 8, ab=(1, 4, 1, 8))
    gqa_case(out, "f32_position_ids_decode", dt, 2, 1, 4, 2, 16, 10, [5, 7], 8, rotary_half=8,
             pos=np.array([[11], [3]], np.int64))
    gqa_case(out, "f32_position_ids_prompt", dt, 2, 4, 4, 2, 16, None, [3, 3], 4, rotary_half=8,
             pos=np.array([[5, 6, 7, 8], [9, 1, 2, 3]], np.int64))
    gqa_case(out, "f32_position_ids_subsequent", dt, 1, 3, 4, 2, 16, 12, [7], 8, rotary_half=8,
             pos=np.array([[20, 2, 9]], np.int64))
    gqa_case(out, "f32_noncausal_prompt", dt, 1, 4, 4, 2, 8, None, [3], 4, causal=0)
    gqa_case(out, "f32_noncausal_decode", dt, 2, 1, 4, 2, 8, 10, [5, 7], 8, causal=0)
    gqa_case(out, "f32_mha_ratio", dt, 2, 1, 3, 3, 8, 10, [5, 7], 8)
    gqa_case(out, "f32_ratio7", dt, 1, 1, 14, 2, 8, 10, [6], 7)
    gqa_case(out, "f32_first_token_no_past", dt, 2, 1, 4, 2, 8, None, [0, 0], 1)
    # (no case without present outputs: the reference then reads only the new keys, past
    # the end of its buffer when there is a past)
    # large enough for the gemm path and several 64-row query blocks
    gqa_case(out, "f32_long_prompt_rotary", dt, 1, 150, 4, 2, 64, None, [149], 150,
             rotary_half=32, max_pos=160, tol=(2e-4, 2e-5))
    gqa_case(out, "f32_long_prompt_padded_window", dt, 2, 90, 4, 2, 64, 128, [89, 40], 90,
             local_window_size=33, tol=(2e-4, 2e-5))
    gqa_case(out, "f16_long_prompt_rotary", np.float16, 1, 70, 2, 1, 64, None, [69], 70,
             rotary_half=32, max_pos=80)
    gqa_case(out, "f32_long_decode", dt, 2, 1, 14, 2, 64, 300, [299, 150], 300, rotary_half=32,
             max_pos=300, tol=(2e-4, 2e-5))
    # short heads (8, and 24: a multiple of 8 but not of 16) take the vectorized rows
    # instead of the gemm however long the prompt; decode over keys past the 8/16 blocks
    gqa_case(out, "f32_long_prompt_head8", dt, 2, 70, 4, 2, 8, None, [69, 33], 70)
    gqa_case(out, "f32_long_prompt_head24_window", dt, 1, 75, 4, 2, 24, None, [74], 75,
             local_window_size=20)
    gqa_case(out, "f32_decode_head24", dt, 2, 1, 6, 3, 24, 40, [37, 12], 38)
    gqa_case(out, "f32_decode_head40", dt, 1, 1, 4, 2, 40, 30, [21], 22)
    # head sizes that are multiples of 16 but not powers of two (Phi-3's 96, Phi-2's 80),
    # several query heads per kv head, keys across the 256-key tiles
    gqa_case(out, "f32_long_prompt_head96", dt, 1, 270, 6, 2, 96, None, [269], 270,
             tol=(2e-4, 2e-5))
    gqa_case(out, "f32_decode_head96", dt, 2, 1, 6, 2, 96, 300, [299, 150], 300, tol=(2e-4, 2e-5))
    gqa_case(out, "f32_decode_head80", dt, 2, 1, 8, 2, 80, 300, [280, 57], 281, tol=(2e-4, 2e-5))
    gqa_case(out, "f32_decode_head112", dt, 1, 1, 4, 2, 112, 40, [33], 34)
    gqa_case(out, "f16_decode_head48", np.float16, 2, 1, 8, 2, 48, 40, [37, 12], 38)


def gqa_shared_loop(out_shared, name, dt, B, N, KV, D, M, prompt, steps, rotary_half=0,
                    packed=False, **attrs):
    """A prompt of `prompt` tokens (right-padded per entry to the longest) then `steps`
    decode tokens, with past and present bound to the same max-length buffers."""
    S0 = max(prompt)
    f = gqa_feeds(dt, B, S0, N, KV, D, M, [p - 1 for p in prompt], S0, packed, rotary_half,
                  max_pos=M)
    names = [n if n in f else "" for n in GQA_IN][:9 if rotary_half else 7]
    if rotary_half:
        attrs["do_rotary"] = 1
    model = make_model("GroupQueryAttention", names, f, ["y", "present_k", "present_v"],
                       dict(num_heads=N, kv_num_heads=KV, **attrs), dynamic=True)
    sess = session(model)
    kbuf = ort.OrtValue.ortvalue_from_numpy(f["past_k"].copy())
    vbuf = ort.OrtValue.ortvalue_from_numpy(f["past_v"].copy())
    sets, lens = [], list(prompt)
    for step in range(steps + 1):
        if step:
            g = gqa_feeds(dt, B, 1, N, KV, D, None, [], 0, packed)
            f = dict(f, **{k: v for k, v in g.items() if k in ("q", "k", "v")})
            lens = [n + 1 for n in lens]
            f["seqlens_k"] = np.array([n - 1 for n in lens], np.int32)
            f["tsl"] = np.array(max(lens), np.int32)
        # the step's past as the buffer holds it before the run
        f["past_k"], f["past_v"] = kbuf.numpy().copy(), vbuf.numpy().copy()
        io = sess.io_binding()
        for n in names:
            if n in ("past_k", "past_v"):
                io.bind_ortvalue_input(n, kbuf if n == "past_k" else vbuf)
            elif n:
                io.bind_cpu_input(n, f[n])
        io.bind_output("y")
        io.bind_ortvalue_output("present_k", kbuf)
        io.bind_ortvalue_output("present_v", vbuf)
        sess.run_with_iobinding(io)
        y = io.copy_outputs_to_cpu()[0]
        sets.append(([(n, f[n]) for n in names if n],
                     [("y", y), ("present_k", kbuf.numpy().copy()),
                      ("present_v", vbuf.numpy().copy())]))
    del model.graph.output[:]
    for n, v in sets[0][1]:
        model.graph.output.append(helper.make_tensor_value_info(n, NP2ONNX[v.dtype.type], None))
    d = os.path.join(out_shared, "test_gqa_shared_" + name)
    save_case(d, model, sets, TOL[dt])
    with open(os.path.join(d, "shared.txt"), "w") as fh:
        gi = [n for n in names if n]
        fh.write(f"{gi.index('past_k')} 1\n{gi.index('past_v')} 2\n")
    written.append("shared_" + name)


def gqa_shared_cases(out_shared):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        gqa_shared_loop(out_shared, f"{t}_rotary", dt, 2, 4, 2, 16, 12, [5, 3], 4, rotary_half=8)
    gqa_shared_loop(out_shared, "f32_packed_window", np.float32, 2, 6, 2, 8, 10, [4, 4], 3,
                    packed=True, local_window_size=3)


# ---------------- norms, rotary, activations ----------------

def norm_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        x = rnd((2, 3, 16), dt)
        g = rnd((16,), dt)
        case(out, f"sln_{t}", "SimplifiedLayerNormalization", ["x", "g"], {"x": x, "g": g},
             ["y"], dt, domain="", epsilon=1e-6)
        case(out, f"sln_{t}_inv_std", "SimplifiedLayerNormalization", ["x", "g"],
             {"x": x, "g": g}, ["y", "inv"], dt, domain="")
        s, b = rnd((2, 3, 16), dt), rnd((16,), dt)
        case(out, f"sskipln_{t}_all", "SkipSimplifiedLayerNormalization", ["x", "s", "g", "b"],
             {"x": x, "s": s, "g": g, "b": b}, ["y", "mean", "inv", "sum"], dt, epsilon=1e-6)
        case(out, f"sskipln_{t}_sum_only", "SkipSimplifiedLayerNormalization", ["x", "s", "g"],
             {"x": x, "s": s, "g": g}, ["y", "", "", "sum"], dt)
        case(out, f"sskipln_{t}_2d", "SkipSimplifiedLayerNormalization", ["x", "s", "g", "b"],
             {"x": rnd((5, 16), dt), "s": rnd((5, 16), dt), "g": g, "b": b}, ["y"], dt)
        case(out, f"sskipln_{t}_skip_bcast", "SkipSimplifiedLayerNormalization", ["x", "s", "g"],
             {"x": x, "s": rnd((1, 3, 16), dt), "g": g}, ["y", "", "inv", "sum"], dt)
    dt = np.float32
    x4 = rnd((2, 3, 4, 5), dt, 3)
    case(out, "sln_f32_axis2", "SimplifiedLayerNormalization", ["x", "g"],
         {"x": x4, "g": rnd((4, 5), dt)}, ["y", "inv"], dt, domain="", axis=2)
    case(out, "sln_f32_axis2_bcast_scale", "SimplifiedLayerNormalization", ["x", "g"],
         {"x": x4, "g": rnd((5,), dt)}, ["y"], dt, domain="", axis=-2)
    case(out, "sln_f32_f16_scale", "SimplifiedLayerNormalization", ["x", "g"],
         {"x": rnd((3, 24), dt), "g": rnd((24,), np.float16)}, ["y"], np.float16, domain="")
    case(out, "sln_f16_f32_scale", "SimplifiedLayerNormalization", ["x", "g"],
         {"x": rnd((3, 24), np.float16), "g": rnd((24,), dt)}, ["y"], np.float16, domain="")
    case(out, "sln_f32_wide", "SimplifiedLayerNormalization", ["x", "g"],
         {"x": rnd((37, 896), dt, 2) + 1, "g": rnd((896,), dt)}, ["y", "inv"], dt, domain="")
    case(out, "sskipln_f32_wide_rows", "SkipSimplifiedLayerNormalization", ["x", "s", "g", "b"],
         {"x": rnd((3, 50, 200), dt), "s": rnd((50, 200), dt), "g": rnd((200,), dt),
          "b": rnd((200,), dt)}, ["y", "", "inv", "sum"], dt)


def rotary_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        B, S, N, D = 2, 3, 2, 16
        cos, sin = rope_caches(32, D // 2, dt)
        pos = np.array([[0, 1, 2], [7, 9, 30]], np.int64)
        for inter in (0, 1):
            case(out, f"rotary_{t}_3d_i{inter}", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
                 {"x": rnd((B, S, N * D), dt), "pos": pos, "cos": cos, "sin": sin}, ["y"], dt,
                 interleaved=inter)
            case(out, f"rotary_{t}_4d_i{inter}", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
                 {"x": rnd((B, N, S, D), dt), "pos": pos, "cos": cos, "sin": sin}, ["y"], dt,
                 interleaved=inter)
        c4, s4 = rope_caches(32, 4, dt)
        case(out, f"rotary_{t}_partial_3d", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
             {"x": rnd((B, S, N * D), dt), "pos": pos, "cos": c4, "sin": s4}, ["y"], dt,
             rotary_embedding_dim=8, num_heads=N)
    dt = np.float32
    cos, sin = rope_caches(32, 8, dt)
    case(out, "rotary_f32_scalar_position", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
         {"x": rnd((2, 4, 32), dt), "pos": np.array([5], np.int64), "cos": cos, "sin": sin},
         ["y"], dt)
    case(out, "rotary_f32_num_heads_3d", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
         {"x": rnd((1, 2, 48), dt), "pos": np.array([[3, 4]], np.int64), "cos": cos,
          "sin": sin}, ["y"], dt, num_heads=3, interleaved=1)
    c4, s4 = rope_caches(32, 4, dt)
    case(out, "rotary_f32_partial_4d_interleaved", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
         {"x": rnd((2, 2, 3, 16), dt), "pos": np.array([[1, 2, 3], [4, 5, 6]], np.int64),
          "cos": c4, "sin": s4}, ["y"], dt, rotary_embedding_dim=8, num_heads=2, interleaved=1)


def activation_cases(out):
    for dt in (np.float32, np.float16, np.float64):
        t = dname(dt)
        case(out, f"quickgelu_{t}", "QuickGelu", ["x"], {"x": rnd((3, 700), dt, 3)}, ["y"], dt)
        case(out, f"quickgelu_{t}_alpha", "QuickGelu", ["x"], {"x": rnd((2, 5, 7), dt, 3)}, ["y"],
             dt, alpha=1.0)
    case(out, "biasgelu_f32", "BiasGelu", ["a", "b"],
         {"a": rnd((2, 300, 7), np.float32, 2), "b": rnd((7,), np.float32)}, ["y"], np.float32)
    # onnxruntime's CPU has BiasGelu in float32 only and no BiasAdd: numpy is the oracle
    erf = np.vectorize(math.erf)
    for dt in (np.float16, np.float64):
        a, b = rnd((2, 30, 7), dt, 2), rnd((7,), dt)
        v = a.astype(np.float64) + b.astype(np.float64)
        case_np(out, f"biasgelu_{dname(dt)}", "BiasGelu", ["a", "b"], {"a": a, "b": b},
                [("y", (0.5 * v * (1 + erf(v / math.sqrt(2)))).astype(dt))], dt)
    for dt in (np.float32, np.float16):
        x, b, sk = rnd((2, 9, 640), dt), rnd((640,), dt), rnd((2, 9, 640), dt)
        y = (x.astype(np.float32) + b.astype(np.float32) + sk.astype(np.float32)).astype(dt)
        case_np(out, f"biasadd_{dname(dt)}", "BiasAdd", ["x", "b", "s"], {"x": x, "b": b, "s": sk},
                [("y", y)], dt)
    case(out, "quickgelu_f32_empty", "QuickGelu", ["x"], {"x": rnd((2, 0), np.float32)}, ["y"],
         np.float32)


# ---------------- MultiHeadAttention ----------------

MHA_IN = ["q", "k", "v", "bias", "mask", "ab", "past_k", "past_v"]


def mha_case(out, name, dt, B, S, L, N, D, P=None, Dv=None, bias=False, mask=None, ab=None,
             form="sep", outputs=3, **attrs):
    Dv = Dv or D
    f = {}
    if form == "packed_qkv":
        f["q"] = rnd((B, S, N, 3, D), dt)
    else:
        f["q"] = rnd((B, S, N * D), dt)
        if form == "packed_kv":
            f["k"] = rnd((B, L, N, 2, D), dt)
        elif form == "bnsh":
            f["k"], f["v"] = rnd((B, N, L, D), dt), rnd((B, N, L, Dv), dt)
        else:
            f["k"], f["v"] = rnd((B, L, N * D), dt), rnd((B, L, N * Dv), dt)
    if bias:
        f["bias"] = rnd((N * (2 * D + Dv),), dt)
    if mask is not None:
        f["mask"] = mask
    if ab is not None:
        f["ab"] = rnd(ab, dt)
    if P is not None:
        f["past_k"], f["past_v"] = rnd((B, N, P, D), dt), rnd((B, N, P, Dv), dt)
    names = [n if n in f else "" for n in MHA_IN]
    while names[-1] == "":
        names.pop()
    case(out, "mha_" + name, "MultiHeadAttention", names, f,
         ["y", "present_k", "present_v"][:outputs], dt, num_heads=N, **attrs)


def mha_cases(out):
    lowest = float(np.finfo(np.float32).min)
    for dt in (np.float32, np.float16):
        t = dname(dt)
        mha_case(out, f"{t}_self", dt, 2, 4, 4, 2, 8, outputs=1)
        mha_case(out, f"{t}_bias_past_causal", dt, 2, 3, 3, 2, 8, P=4, bias=True,
                 unidirectional=1)
        mha_case(out, f"{t}_decode_mask2d", dt, 2, 1, 1, 2, 8, P=5,
                 mask=np.array([[0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1]], np.int32),
                 mask_filter_value=lowest)
        # the builder's form: additive attention_bias carrying the mask, past/present
        mha_case(out, f"{t}_attention_bias_past", dt, 2, 2, 2, 2, 8, P=3, ab=(2, 1, 2, 5))
    dt = np.float32
    mha_case(out, "f32_cross_lengths", dt, 2, 3, 5, 2, 8, Dv=4, mask=np.array([5, 2], np.int32),
             outputs=1)
    mha_case(out, "f32_mask_2d_nopast", dt, 2, 2, 3, 2, 8,
             mask=np.array([[1, 0, 1], [0, 1, 1]], np.int32), outputs=1)
    mha_case(out, "f32_mask_3d", dt, 2, 3, 3, 2, 8, P=1,
             mask=rng.randint(0, 2, (2, 3, 4)).astype(np.int32), scale=0.5)
    mha_case(out, "f32_fully_masked_rows", dt, 2, 3, 3, 2, 8, P=2,
             mask=np.array([[0, 0, 0, 0, 0], [1, 1, 0, 0, 0]], np.int32), unidirectional=1)
    mha_case(out, "f32_attention_bias_heads", dt, 1, 3, 3, 4, 8, ab=(1, 4, 3, 3), outputs=1)
    mha_case(out, "f32_packed_qkv", dt, 2, 3, 3, 2, 8, outputs=1, unidirectional=1)
    mha_case(out, "f32_packed_kv", dt, 2, 3, 4, 2, 8, outputs=1)
    mha_case(out, "f32_cross_bnsh", dt, 2, 3, 5, 2, 8, outputs=1)
    mha_case(out, "f32_empty_past", dt, 2, 3, 3, 2, 8, P=0, bias=True, unidirectional=1)
    mha_case(out, "f32_long", dt, 1, 40, 40, 4, 32, P=30, unidirectional=1, tol=(2e-4, 2e-5))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    out = sys.argv[1]
    gqa_cases(out)
    norm_cases(out)
    rotary_cases(out)
    activation_cases(out)
    mha_cases(out)
    if len(sys.argv) == 3:
        gqa_shared_cases(sys.argv[2])
    print(f"make_cases.py: wrote {len(written)} cases")


if __name__ == "__main__":
    main()
