#!/usr/bin/env python3
"""Writes GroupQueryAttention cases with caches quantized by the node's own scales
(k_quant_type / v_quant_type PER_TENSOR or PER_CHANNEL, kv_cache_bit_width 8 or 4,
inputs 12/13 k_scale / v_scale: what onnxruntime-genai's builder writes for
kv_cache_quant_scheme int8_* / int4_*), with onnxruntime's CPU results as the expected
outputs, in the node-test layout (OUT/<case>/model.onnx, test_data_set_N, tolerance.txt).

Each case is a prompt and then steps over its cache: the decode steps' past is
onnxruntime's present of the step before, so the quantized bytes of every present
(int8 codes, or uint8 with two int4 codes a byte) must equal onnxruntime's exactly
(node-tests compares integers exactly) and the attention outputs within 1e-5.
Head sizes 64 and 128, grouped heads (8 query heads over 2 kv heads) and one kv head per
query head, batches of two with different lengths, with and without the rotary
embedding, scales that clip the largest values, and values at half a code (the tie
rule) and far past the range (the clamp).

The builder's fp8_* schemes (a float8e4m3fn cache): onnxruntime's CPU has no kernel for
them (checked here each time: if a later onnxruntime gains one, its cases are written and
our kernel, which refuses them, fails them), so they are skipped, loudly.

usage: make_kvquant_cases.py OUT_DIR"""
import os
import shutil
import sys

import numpy as np
try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"make_kvquant_cases.py: skipped: {e} (pip install onnx onnxruntime)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_cases import save_case  # noqa: E402

MS = "com.microsoft"
rng = np.random.RandomState(2024)
TOL = (0.0, 1e-5)


def cache_type(bits, fp8=False):
    if fp8:
        return TensorProto.FLOAT8E4M3FN
    return TensorProto.INT8 if bits == 8 else TensorProto.UINT8


def model(N, KV, D, bits, modes, ks, vs, rotary, fp8=False):
    Dc = D if bits == 8 else (D + 1) // 2
    ct = cache_type(bits, fp8)
    ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["B", "S", N * D]),
           helper.make_tensor_value_info("k", TensorProto.FLOAT, ["B", "S", KV * D]),
           helper.make_tensor_value_info("v", TensorProto.FLOAT, ["B", "S", KV * D]),
           helper.make_tensor_value_info("past_k", ct, ["B", KV, "P", Dc]),
           helper.make_tensor_value_info("past_v", ct, ["B", KV, "P", Dc]),
           helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["B"]),
           helper.make_tensor_value_info("tsl", TensorProto.INT32, [])]
    names = ["q", "k", "v", "past_k", "past_v", "seqlens_k", "tsl"]
    inits = [numpy_helper.from_array(ks, "k_scale"), numpy_helper.from_array(vs, "v_scale")]
    if rotary:
        half = D // 2
        inv = 1.0 / (10000 ** (np.arange(half) / half))
        ang = np.arange(64)[:, None] * inv[None]
        inits += [numpy_helper.from_array(np.cos(ang).astype(np.float32), "cos"),
                  numpy_helper.from_array(np.sin(ang).astype(np.float32), "sin")]
        names += ["cos", "sin", "", "", ""]
    else:
        names += ["", "", "", "", ""]
    names += ["k_scale", "v_scale"]
    node = helper.make_node("GroupQueryAttention", names, ["out", "present_k", "present_v"],
                            domain=MS, num_heads=N, kv_num_heads=KV, do_rotary=int(rotary),
                            k_quant_type=modes[0], v_quant_type=modes[1],
                            kv_cache_bit_width=bits)
    outs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("present_k", ct, None),
            helper.make_tensor_value_info("present_v", ct, None)]
    g = helper.make_graph([node], "gqa_kvquant", ins, outs, inits)
    return helper.make_model(g, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                              helper.make_opsetid(MS, 1)])


def session(m):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def scales(mode, KV, D, bits, amax):
    """Calibration-like scales: a little under amax / qmax, so that the largest values clip."""
    qmax = 127.0 if bits == 8 else 7.0
    if mode == "PER_TENSOR":
        return np.array([0.8 * amax / qmax], np.float32)
    return (amax / qmax * rng.uniform(0.5, 1.0, KV * D)).astype(np.float32)


def with_ties(x, scale, KV, D):
    """x with a tenth of its values at code + 1/2 (times their channel's scale), where the
    rounding's tie rule decides, and a few past the code range, where the clamp does."""
    s = np.broadcast_to(scale, (KV * D,)) if scale.size == 1 else scale
    flat = x.reshape(-1, KV * D).copy()
    pick = rng.rand(*flat.shape) < 0.1
    half = (rng.randint(-6, 6, flat.shape) + 0.5).astype(np.float32) * s[None]
    flat[pick] = half[pick]
    far = rng.rand(*flat.shape) < 0.02
    flat[far] = (np.sign(rng.randn(*flat.shape)) * 200.0 * s[None])[far]
    return flat.reshape(x.shape).astype(np.float32)


def loop(out, name, N, KV, D, bits, modes, rotary, lens, steps):
    """A prompt of right-padded entries of lengths lens, then steps of (new rows per entry)
    over the growing cache; each step one test_data_set."""
    B, S0 = len(lens), max(lens)
    amax = 3.0
    ks = scales(modes[0], KV, D, bits, amax)
    vs = scales(modes[1], KV, D, bits, amax)
    m = model(N, KV, D, bits, modes, ks, vs, rotary)
    s = session(m)
    Dc = D if bits == 8 else (D + 1) // 2
    dt = np.int8 if bits == 8 else np.uint8
    pk = np.zeros((B, KV, 0, Dc), dt)
    pv = pk.copy()
    sets, total = [], list(lens)
    for step, S in enumerate([S0] + steps):
        if step == 0:
            seqlens, tsl = [t - 1 for t in total], S0
        else:
            total = [t + S for t in total]
            seqlens, tsl = [t - 1 for t in total], pk.shape[2] + S
        feeds = {"q": rng.randn(B, S, N * D).astype(np.float32),
                 "k": with_ties(rng.randn(B, S, KV * D).astype(np.float32), ks, KV, D),
                 "v": with_ties(rng.randn(B, S, KV * D).astype(np.float32), vs, KV, D),
                 "past_k": pk, "past_v": pv,
                 "seqlens_k": np.array(seqlens, np.int32), "tsl": np.array(tsl, np.int32)}
        o, pk, pv = s.run(None, feeds)
        sets.append((list(feeds.items()), [("out", o), ("present_k", pk), ("present_v", pv)]))
    save_case(os.path.join(out, "test_" + name), m, sets, TOL)  # make_cases.py's layout
    return name


def fp8_runs():
    """Whether onnxruntime's CPU runs a float8e4m3fn cache with scales (it did not in 1.31)."""
    ks = np.array([0.01], np.float32)
    try:
        session(model(2, 1, 8, 8, ("PER_TENSOR", "PER_TENSOR"), ks, ks, False, fp8=True))
        return True
    except Exception as e:  # noqa: BLE001
        print(f"make_kvquant_cases.py: SKIPPED the fp8 schemes (fp8_per_tensor, "
              f"fp8_per_channel): onnxruntime {ort.__version__}'s CPU GroupQueryAttention "
              f"does not run a float8e4m3fn cache: {str(e).splitlines()[0][:160]}")
        return False


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    written = []
    for bits in (8, 4):
        for mode in ("PER_TENSOR", "PER_CHANNEL"):
            tag = f"int{bits}_{mode.lower()}"
            for D in (64, 128):
                written.append(loop(out, f"{tag}_d{D}_grouped", 8, 2, D, bits, (mode, mode),
                                    rotary=(D == 64), lens=[7, 4], steps=[1, 1, 1]))
            written.append(loop(out, f"{tag}_d64_mha", 4, 4, 64, bits, (mode, mode), False,
                                lens=[5], steps=[3, 1]))
    # a rotary batch of equal lengths at head size 128 (keys and values must share one
    # mode: onnxruntime's CPU refuses k_quant_type != v_quant_type, and so do we)
    written.append(loop(out, "int4_per_channel_d128_rotary", 8, 2, 128, 4,
                        ("PER_CHANNEL", "PER_CHANNEL"), True, lens=[6, 6], steps=[1, 1]))
    if fp8_runs():
        print("make_kvquant_cases.py: onnxruntime now runs fp8 caches: write their cases "
              "(and implement them)")
        sys.exit(1)
    print(f"wrote {len(written)} cases to {out}")


if __name__ == "__main__":
    main()
