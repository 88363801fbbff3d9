#!/usr/bin/env python3
"""Writes single-node test cases for the com.microsoft contrib ops our CPU kernels claim
(Attention, EmbedLayerNormalization, SkipLayerNormalization, FastGelu), in the layout of
ONNX's backend node tests, with onnxruntime's CPU results as the expected outputs:

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_N.pb, output_N.pb
    OUT/<case>/tolerance.txt            "rtol atol"

usage: make_contrib_cases.py OUT_DIR

The cases cover the attributes, the optional inputs/outputs and the mask layouts that
the GPT-2 packages use (2-D (batch, total) mask, past/present cache with an empty or a
filled past, causal attention with left padding), in float32 and float16."""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover
    sys.exit("make_contrib_cases.py: the onnxruntime Python package is required")

MS = "com.microsoft"
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
           np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32,
           np.int64: TensorProto.INT64}
TOL = {np.float32: (1e-4, 1e-5), np.float16: (2e-3, 1e-3), np.float64: (1e-7, 1e-9)}
LOWEST = float(np.finfo(np.float32).min)

rng = np.random.RandomState(1234)
written = []


def make_model(op, in_names, feeds, out_names, attrs):
    """One node; graph inputs are the non-empty input names in order."""
    inputs = [helper.make_tensor_value_info(n, NP2ONNX[feeds[n].dtype.type], feeds[n].shape)
              for n in in_names if n]
    outputs = [onnx.ValueInfoProto(name=n) for n in out_names if n]
    node = helper.make_node(op, in_names, out_names, domain=MS, **attrs)
    graph = helper.make_graph([node], op.lower(), inputs, outputs)
    return helper.make_model(graph, ir_version=8,
                             opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid(MS, 1)])


def case(out_dir, name, op, in_names, feeds, out_names, dtype, tol=None, **attrs):
    model = make_model(op, in_names, feeds, out_names, attrs)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    present = [n for n in in_names if n]
    outs = sess.run(None, {n: feeds[n] for n in present})
    # the graph's declared outputs get the types onnxruntime produced
    del model.graph.output[:]
    for n, v in zip([n for n in out_names if n], outs):
        model.graph.output.append(
            helper.make_tensor_value_info(n, NP2ONNX[v.dtype.type], v.shape))
    name = "test_" + name
    d = os.path.join(out_dir, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, n in enumerate(present):
        onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(ds, f"input_{i}.pb"))
    for i, (n, v) in enumerate(zip([n for n in out_names if n], outs)):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(ds, f"output_{i}.pb"))
    rtol, atol = tol or TOL[dtype]
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{rtol} {atol}\n")
    written.append(name)


def rnd(shape, dtype, scale=1.0):
    return (rng.randn(*shape) * scale).astype(dtype)


def dname(dtype):
    return {np.float32: "f32", np.float16: "f16", np.float64: "f64"}[dtype]


def fast_gelu_cases(out):
    for dt in (np.float32, np.float16, np.float64):
        t = dname(dt)
        # onnxruntime's float64 kernel uses an approximate tanh (about 1e-4 relative)
        tol = (1e-3, 1e-6) if dt == np.float64 else None
        case(out, f"fastgelu_{t}_bias", "FastGelu", ["x", "b"],
             {"x": rnd((2, 3, 16), dt, 2), "b": rnd((16,), dt)}, ["y"], dt, tol=tol)
        case(out, f"fastgelu_{t}_nobias", "FastGelu", ["x"], {"x": rnd((2, 5, 7), dt, 3)},
             ["y"], dt, tol=tol)
    case(out, "fastgelu_f32_1d", "FastGelu", ["x", "b"],
         {"x": rnd((9,), np.float32, 2), "b": rnd((9,), np.float32)}, ["y"], np.float32)
    case(out, "fastgelu_f32_empty", "FastGelu", ["x", "b"],
         {"x": rnd((2, 0, 8), np.float32), "b": rnd((8,), np.float32)}, ["y"], np.float32)


def skip_ln_cases(out):
    for dt in (np.float32, np.float16):
        t = dname(dt)
        B, S, H = 2, 3, 16
        x, s = rnd((B, S, H), dt), rnd((B, S, H), dt)
        g, b, bias = rnd((H,), dt), rnd((H,), dt), rnd((H,), dt)
        # the GPT-2 package's form: beta and bias, output and the sum only
        case(out, f"skipln_{t}_gpt2", "SkipLayerNormalization", ["x", "s", "g", "b", "bias"],
             {"x": x, "s": s, "g": g, "b": b, "bias": bias}, ["y", "", "", "sum"], dt,
             epsilon=1e-5)
        case(out, f"skipln_{t}_all_outputs", "SkipLayerNormalization",
             ["x", "s", "g", "b", "bias"], {"x": x, "s": s, "g": g, "b": b, "bias": bias},
             ["y", "mean", "inv", "sum"], dt)
        case(out, f"skipln_{t}_gamma_only", "SkipLayerNormalization", ["x", "s", "g"],
             {"x": x, "s": s, "g": g}, ["y"], dt)
        case(out, f"skipln_{t}_bias_no_beta", "SkipLayerNormalization",
             ["x", "s", "g", "", "bias"], {"x": x, "s": s, "g": g, "bias": bias}, ["y"], dt,
             epsilon=1e-3)
        case(out, f"skipln_{t}_skip_1sh", "SkipLayerNormalization", ["x", "s", "g", "b"],
             {"x": x, "s": rnd((1, S, H), dt), "g": g, "b": b}, ["y", "mean", "inv", "sum"], dt)
        case(out, f"skipln_{t}_skip_sh", "SkipLayerNormalization", ["x", "s", "g", "b"],
             {"x": x, "s": rnd((S, H), dt), "g": g, "b": b}, ["y", "", "", "sum"], dt)
        case(out, f"skipln_{t}_2d", "SkipLayerNormalization", ["x", "s", "g", "b"],
             {"x": rnd((5, H), dt), "s": rnd((5, H), dt), "g": g, "b": b},
             ["y", "mean", "inv", "sum"], dt)
    dt = np.float32
    case(out, "skipln_f32_wide", "SkipLayerNormalization", ["x", "s", "g", "b"],
         {"x": rnd((3, 7, 96), dt, 4) + 3, "s": rnd((3, 7, 96), dt), "g": rnd((96,), dt),
          "b": rnd((96,), dt)}, ["y", "mean", "inv"], dt)


def embed_ln_cases(out):
    V, P, H = 50, 24, 16
    for dt in (np.float32, np.float16):
        t = dname(dt)
        we, pe, se = rnd((V, H), dt), rnd((P, H), dt), rnd((2, H), dt)
        g, b = rnd((H,), dt), rnd((H,), dt)
        for B, S in ((2, 5), (1, 1), (2, 1)):
            ids = rng.randint(0, V, (B, S)).astype(np.int32)
            pos = (rng.randint(0, P - S) + np.arange(S))[None].repeat(B, 0).astype(np.int32)
            # the GPT-2 package's form: explicit position_ids, dummy mask_index, sum
            case(out, f"embedln_{t}_gpt2_b{B}s{S}", "EmbedLayerNormalization",
                 ["ids", "", "we", "pe", "", "g", "b", "", "pos"],
                 {"ids": ids, "we": we, "pe": pe, "g": g, "b": b, "pos": pos},
                 ["y", "mask_index", "sum"], dt, epsilon=1e-5)
        B, S = 2, 6
        ids = rng.randint(0, V, (B, S)).astype(np.int32)
        seg = rng.randint(0, 2, (B, S)).astype(np.int32)
        mask = np.array([[1, 1, 1, 1, 0, 0], [0, 1, 1, 1, 1, 1]], np.int32)
        case(out, f"embedln_{t}_segment_mask", "EmbedLayerNormalization",
             ["ids", "seg", "we", "pe", "se", "g", "b", "mask"],
             {"ids": ids, "seg": seg, "we": we, "pe": pe, "se": se, "g": g, "b": b,
              "mask": mask}, ["y", "mask_index"], dt)
        case(out, f"embedln_{t}_default_positions", "EmbedLayerNormalization",
             ["ids", "", "we", "pe", "", "g", "b"],
             {"ids": ids, "we": we, "pe": pe, "g": g, "b": b}, ["y", "", "sum"], dt)
        pos1 = np.array([[3, 2, 1, 0, 7, 9]], np.int32)
        case(out, f"embedln_{t}_shared_positions", "EmbedLayerNormalization",
             ["ids", "", "we", "pe", "", "g", "b", "", "pos"],
             {"ids": ids, "we": we, "pe": pe, "g": g, "b": b, "pos": pos1}, ["y", "mask_index"], dt)
    dt = np.float32
    case(out, "embedln_f32_empty_sequence", "EmbedLayerNormalization",
         ["ids", "", "we", "pe", "", "g", "b", "", "pos"],
         {"ids": np.zeros((2, 0), np.int32), "we": rnd((V, H), dt), "pe": rnd((P, H), dt),
          "g": rnd((H,), dt), "b": rnd((H,), dt), "pos": np.zeros((2, 0), np.int32)},
         ["y", "mask_index", "sum"], dt)


def attention_case(out, name, dt, B, S, P, N, D, mask=None, past=True, present=True,
                   abias=None, hin=None, qkv=None, **attrs):
    hin = hin or N * D
    sizes = qkv or [N * D] * 3
    feeds = {"x": rnd((B, S, hin), dt), "w": rnd((hin, sum(sizes)), dt, 0.3),
             "bias": rnd((sum(sizes),), dt, 0.5)}
    names = ["x", "w", "bias"]
    if mask is not None:
        feeds["mask"] = mask
    names.append("mask" if mask is not None else "")
    if past:
        feeds["past"] = rnd((2, B, N, P, sizes[0] // N), dt)
    names.append("past" if past else "")
    if abias is not None:
        feeds["abias"] = abias.astype(dt)
        names.append("abias")
    while names[-1] == "":
        names.pop()
    if qkv is not None:
        attrs["qkv_hidden_sizes"] = qkv
    case(out, name, "Attention", names, feeds, ["y", "present"] if present else ["y"], dt,
         num_heads=N, **attrs)


def attention_cases(out):
    gpt2 = dict(unidirectional=1, mask_filter_value=LOWEST)
    for dt in (np.float32, np.float16):
        t = dname(dt)
        B, N, D = 2, 4, 8
        # prompt with an empty past, then decode steps, all-ones and left-padded masks
        for S, P in ((5, 0), (1, 5), (1, 9), (3, 4)):
            T = P + S
            ones = np.ones((B, T), np.int32)
            attention_case(out, f"attn_{t}_gpt2_s{S}_p{P}", dt, B, S, P, N, D, ones, **gpt2)
            left = ones.copy()
            left[0, :min(2, T - 1)] = 0
            left[1, :min(3, T)] = 0  # fully masked rows when S > 1
            attention_case(out, f"attn_{t}_gpt2_leftpad_s{S}_p{P}", dt, B, S, P, N, D,
                           left, **gpt2)
        attention_case(out, f"attn_{t}_batch1_s4_p0", dt, 1, 4, 0, N, D,
                       np.ones((1, 4), np.int32), **gpt2)
        attention_case(out, f"attn_{t}_default_filter_leftpad", dt, B, 4, 2, N, D,
                       np.array([[0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 1, 1]], np.int32),
                       unidirectional=1)
    dt = np.float32
    B, N, D = 2, 4, 8
    attention_case(out, "attn_f32_nomask_bidirectional", dt, B, 3, 2, N, D)
    attention_case(out, "attn_f32_nopast_causal", dt, B, 4, 0, N, D, past=False,
                   present=False, unidirectional=1)
    attention_case(out, "attn_f32_nopast_present", dt, B, 4, 0, N, D, past=False,
                   unidirectional=1)
    attention_case(out, "attn_f32_mask_end", dt, B, 4, 2, N, D, np.array([4, 6], np.int32),
                   unidirectional=1)
    attention_case(out, "attn_f32_mask_end_start", dt, B, 4, 2, N, D,
                   np.array([6, 5, 3, 0], np.int32), unidirectional=1)
    attention_case(out, "attn_f32_mask_3d", dt, B, 3, 2, N, D,
                   rng.randint(0, 2, (B, 3, 5)).astype(np.int32), unidirectional=1)
    attention_case(out, "attn_f32_mask_2d_values", dt, B, 3, 2, N, D,
                   np.array([[1, -1, 2, 1, 0], [1, 1, 1, 0, 1]], np.int32))
    attention_case(out, "attn_f32_attention_bias", dt, B, 3, 0, 2, 8, past=False,
                   present=False, abias=rnd((B, 2, 3, 3), dt))
    attention_case(out, "attn_f32_attention_bias_bcast", dt, B, 3, 0, 2, 8, past=False,
                   present=False, abias=rnd((1, 1, 3, 3), dt), unidirectional=1)
    attention_case(out, "attn_f32_scale", dt, B, 3, 2, N, D, scale=0.3, unidirectional=1)
    attention_case(out, "attn_f32_qkv_sizes", dt, B, 3, 0, 2, 8, past=False, present=False,
                   hin=12, qkv=[16, 16, 8])
    attention_case(out, "attn_f32_empty_sequence_with_past", dt, B, 0, 3, N, D,
                   np.ones((B, 3), np.int32), **gpt2)
    # head sizes the vector rows take in 8-float vectors (24) or not at all (12), over
    # more keys than one 8/16-key block, with left padding under the lowest-float filter
    for D, S, P in ((24, 1, 21), (24, 6, 11), (12, 1, 19), (12, 5, 0)):
        T = P + S
        left = np.ones((B, T), np.int32)
        left[1, :min(3, T)] = 0
        attention_case(out, f"attn_f32_head{D}_s{S}_p{P}", dt, B, S, P, 3, D, left,
                       past=P > 0, **gpt2)
    # large enough for the blocked sgemm path
    attention_case(out, "attn_f32_large_prompt", dt, 2, 40, 0, 4, 32,
                   np.ones((2, 40), np.int32), **gpt2)
    attention_case(out, "attn_f32_large_with_past", dt, 2, 24, 40, 4, 32,
                   np.ones((2, 64), np.int32), **gpt2)
    attention_case(out, "attn_f16_large_with_past", np.float16, 2, 24, 40, 4, 32,
                   np.ones((2, 64), np.int32), **gpt2)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    fast_gelu_cases(out)
    skip_ln_cases(out)
    embed_ln_cases(out)
    attention_cases(out)
    print(f"make_contrib_cases.py: wrote {len(written)} cases into {out}")


if __name__ == "__main__":
    main()
