#!/usr/bin/env python3
"""Writes single-node test cases for com.microsoft MatMulNBits and GatherBlockQuantized,
and for the RMS norms whose bits decide MatMulNBits' int8 roundings (with one chain of
the three), with onnxruntime's CPU results as the expected outputs, in the layout of
ONNX's backend node tests (run by build/tests/node-tests):

    OUT/<case>/model.onnx                 weights, scales, zero points, bias as initializers
    OUT/<case>/test_data_set_0/input_N.pb (A, or the indices), output_0.pb
    OUT/<case>/tolerance.txt              "rtol atol"

usage: make_cases.py OUT_DIR

The weights are initializers, as in real packages: onnxruntime takes its prepacked
(MLAS) path only for constant weights, and that path is what accuracy_level 4 means.

What onnxruntime 1.31.1 computes, measured with this script's own numpy model
(`--explain` prints the comparison for every case):
  * accuracy_level 0-3, and level 4 with float zero points: float32 arithmetic on the
    dequantized weights (q - zp) * scale.
  * accuracy_level 4 with packed or no zero points (bits 2, 4 and 8 alike, float32 or
    float16 A): each row of A is quantized per block of block_size along K, with
    amax = max |a|, scale = amax / 127, q = round-half-even(a * (127 / amax)); the block
    products sum(q * (w - zp)) are exact integers, scaled by scale_a * scale_b. Ties are
    rounded to even (a block of halves 2.5, 3.5 at amax 127 decides it) and the multiplier
    is 127/amax: at the ulp-level cases where a * (127/amax) and a / (amax/127) round
    differently, onnxruntime always agrees with the first.
  * except bits=2 with block_size 16 or 256: float32 arithmetic even at level 4.
  * block_size must be 16, 32, 64, 128 or 256.
  * bits=8 with float zero points is refused by onnxruntime ("Only 2b and 4b quantization
    is supported for unpacked compute"), so no case covers it (our kernel computes it).
Tolerances: float32 outputs 1e-4 relative plus 2e-5 of the output's largest magnitude
(summation order), float16 outputs 2e-3 relative plus 1e-3 of the largest magnitude
(float16 rounding of the output and of the inputs' conversions)."""
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
           np.int32: TensorProto.INT32, np.int64: TensorProto.INT64,
           np.uint8: TensorProto.UINT8}
rng = np.random.RandomState(4321)
written = []
EXPLAIN = "--explain" in sys.argv


def save_case(out_dir, name, model, feeds, outs, tol):
    d = os.path.join(out_dir, "test_" + name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(ds, f"input_{i}.pb"))
    for i, v in enumerate(outs):
        onnx.save_tensor(numpy_helper.from_array(v, "Y"), os.path.join(ds, f"output_{i}.pb"))
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")
    written.append(name)


def run_ort(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def tolerance(y):
    big = float(np.abs(y.astype(np.float32)).max()) if y.size else 0.0
    if y.dtype == np.float16:
        return (2e-3, 1e-3 * big + 1e-3)
    return (1e-4, 2e-5 * big + 1e-6)


# ---- MatMulNBits ---------------------------------------------------------------------

def unpack(packed, bits, count):
    """[rows, bytes] -> [rows, count] values, low bits first."""
    packed = packed.reshape(packed.shape[0], -1)
    per = 8 // bits
    v = np.stack([(packed >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], -1)
    return v.reshape(packed.shape[0], -1)[:, :count].astype(np.int64)


def mnb_model_numpy(A, B, S, Z, bias, K, N, bits, bs, int8):
    """Our understanding of onnxruntime's arithmetic (see the module docstring)."""
    kb = (K + bs - 1) // bs
    q = unpack(B, bits, kb * bs)[:, :K]
    s = S.astype(np.float32).reshape(N, kb).astype(np.float64)
    if Z is None:
        z = np.full((N, kb), 2.0 ** (bits - 1))
    elif Z.dtype == np.uint8:
        z = unpack(Z, bits, kb).astype(np.float64)
    else:
        z = Z.astype(np.float32).reshape(N, kb).astype(np.float64)
    a = A.astype(np.float32).reshape(-1, K)
    y = np.zeros((a.shape[0], N))
    for b in range(kb):
        ab, qb, zb = a[:, b * bs:(b + 1) * bs], q[:, b * bs:(b + 1) * bs], z[:, b]
        if int8:
            amax = np.abs(ab).max(1)
            with np.errstate(divide="ignore"):
                mul = np.where(amax != 0, np.float32(127) / amax, 0).astype(np.float32)
            aq = np.rint((ab * mul[:, None]).astype(np.float32))
            sa = (amax / np.float32(127)).astype(np.float32).astype(np.float64)
            y += (aq @ (qb - zb[:, None]).T) * sa[:, None] * s[:, b][None]
        else:
            y += ab.astype(np.float64) @ ((qb - zb[:, None]) * s[:, b][:, None]).T
    if bias is not None:
        y += bias.astype(np.float64)
    return y.reshape(A.shape[:-1] + (N,))


def mnb_case(out, name, lead, K, N, bits, bs, acc, zp=None, bias=False, dt=np.float32,
             exact=False):
    kb = (K + bs - 1) // bs
    blob = bs * bits // 8
    B = rng.randint(0, 256, (N, kb, blob)).astype(np.uint8)
    S = (rng.rand(N, kb) * 0.08 + 0.01).astype(dt)
    Z = None
    if zp == "packed":
        Z = rng.randint(0, 256, (N, (kb * bits + 7) // 8)).astype(np.uint8)
    elif zp == "float":  # not necessarily integral
        Z = (rng.rand(N, kb) * (2 ** bits - 1)).astype(dt)
    bv = rng.randn(N).astype(dt) if bias else None
    A = rng.randn(*lead, K).astype(dt)
    names = ["A", "B", "scales", "zp" if Z is not None else "", "", "bias" if bias else ""]
    while names[-1] == "":
        names.pop()
    inits = [numpy_helper.from_array(B, "B"), numpy_helper.from_array(S, "scales")]
    if Z is not None:
        inits.append(numpy_helper.from_array(Z, "zp"))
    if bias:
        inits.append(numpy_helper.from_array(bv, "bias"))
    node = helper.make_node("MatMulNBits", names, ["Y"], domain=MS, K=K, N=N, bits=bits,
                            block_size=bs, accuracy_level=acc)
    graph = helper.make_graph([node], "mnb", [helper.make_tensor_value_info("A", NP2ONNX[dt], A.shape)],
                              [helper.make_tensor_value_info("Y", NP2ONNX[dt], lead + (N,))], inits)
    model = helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    y = run_ort(model, {"A": A})[0]
    if EXPLAIN and y.size:
        int8 = acc == 4 and (Z is None or Z.dtype == np.uint8)
        big = np.abs(y.astype(np.float64)).max()
        for label, mode in (("float", False), ("int8", True)):
            r = mnb_model_numpy(A, B, S, Z, bv, K, N, bits, bs, mode)
            err = np.abs(y.astype(np.float64) - r).max() / big
            print(f"{name:48s} {label:5s} rel.err {err:.2e}{'  <- expected' if mode == int8 else ''}")
    save_case(out, name, model, {"A": A}, [y], (0.0, 0.0) if exact else tolerance(y))


def mlas_int8_class():
    """Which of MLAS's int8 kernel families onnxruntime runs on this CPU: "avx512" with
    AVX-512 F, BW, DQ and VL, "avx2" with AVX2, else None. Our kernels reproduce both
    at block size 32 (matmul_nbits_pack.h), whatever level OG_ISA picks."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return "avx512"
    return "avx2" if "avx2" in flags else None


def mnb_exact_cases(out):
    """accuracy_level 4 at block size 32, bit for bit with the MLAS kernels of this CPU's
    class: one row and several (in the AVX2 class MLAS's one-row kernel puts the zero
    point inside the dot, its kernel for several rows adds the zero points' product
    after; the AVX-512 class has one form), blocks in pairs or fours and the ones left
    (K of 2, 3, 5, 7, 28 and 153 blocks), the last N % 4 columns' other lane sum, with
    and without zero points and bias."""
    cls = mlas_int8_class()
    if cls is None:
        print("make_cases.py: SKIPPED the bit-exact MatMulNBits cases: onnxruntime runs no "
              "x86 int8 kernels of a class we reproduce on this CPU (see matmul_nbits_pack.h)")
        return
    i = 0
    for M in (1, 2, 3, 8, 17, 64):
        for K, N in ((64, 33), (96, 64), (160, 20), (224, 45), (896, 40), (4896, 36)):
            for zp in (None, "packed"):
                i += 1
                mnb_case(out, f"mnb_exact_{cls}_m{M}_k{K}_n{N}_{zp or 'nozp'}", (M,), K, N, 4, 32,
                         4, zp, bias=i % 3 == 0, exact=True)


def mnb_cases(out):
    ms = [(1,), (7,), (64,)]
    zps = [None, "packed", "float"]
    i = 0
    for bits in (4, 8, 2):
        for bs in (16, 32, 64, 128, 256):
            for acc in (0, 4):
                for zp in zps:
                    if bits == 8 and zp == "float":
                        continue  # onnxruntime refuses it
                    lead = ms[i % 3]
                    K = 2 * bs + (0 if i % 2 else bs // 2 + 8)  # some K with a partial block
                    i += 1
                    nm = f"mnb_b{bits}_bs{bs}_acc{acc}_{zp or 'nozp'}_m{lead[0]}_k{K}"
                    mnb_case(out, nm, lead, K, 24 + i % 5, bits, bs, acc, zp)
    for acc in (0, 3, 4):  # 3 (bf16 allowed): onnxruntime computes in float32 on x86
        for dt, t in ((np.float32, "f32"), (np.float16, "f16")):
            for m in (1, 7, 64):
                mnb_case(out, f"mnb_{t}_bias_acc{acc}_m{m}", (m,), 96, 40, 4, 32, acc,
                         bias=True, dt=dt)
            mnb_case(out, f"mnb_{t}_packedzp_acc{acc}_3d", (2, 3), 200, 33, 4, 64, acc, "packed",
                     dt=dt)
            mnb_case(out, f"mnb_{t}_floatzp_acc{acc}", (5,), 128, 20, 4, 32, acc, "float", dt=dt)
            mnb_case(out, f"mnb_{t}_b8_acc{acc}", (3,), 160, 20, 8, 32, acc, "packed", dt=dt)
        # Qwen2.5-0.5B-like projection widths, decode and prefill
        mnb_case(out, f"mnb_qwen_k896_acc{acc}_m1", (1, 1), 896, 136, 4, 32, acc)
        mnb_case(out, f"mnb_qwen_k896_acc{acc}_m20", (1, 20), 896, 72, 4, 128, acc, "packed",
                 bias=True)
        mnb_case(out, f"mnb_qwen_k4864_acc{acc}_m3", (3,), 4864, 40, 4, 32, acc)
    mnb_case(out, "mnb_f32_empty_m", (0,), 64, 8, 4, 32, 0)


# ---- GatherBlockQuantized ------------------------------------------------------------

def gbq_case(out, name, data, data_type, scales, zp, indices, **attrs):
    names = ["data", "indices", "scales"] + (["zp"] if zp is not None else [])

    def init(nm, v):
        if data_type in (TensorProto.UINT8,):
            return numpy_helper.from_array(v.astype(np.uint8), nm)
        if data_type in (TensorProto.INT4, TensorProto.UINT4):
            return helper.make_tensor(nm, data_type, v.shape, v.flatten().tolist())
        # float8 / float4: raw codes
        return helper.make_tensor(nm, data_type, v.shape, v.astype(np.uint8).tobytes()
                                  if data_type != TensorProto.FLOAT4E2M1 else
                                  (v.flatten()[0::2] | (np.append(v.flatten(), 0)[1::2][:(v.size + 1) // 2] << 4)).astype(np.uint8).tobytes(),
                                  raw=True)
    inits = [init("data", data), numpy_helper.from_array(scales, "scales")]
    if zp is not None:
        inits.append(init("zp", zp))
    st = NP2ONNX[scales.dtype.type]
    node = helper.make_node("GatherBlockQuantized", names, ["Y"], domain=MS, **attrs)
    graph = helper.make_graph([node], "gbq", [helper.make_tensor_value_info(
        "indices", NP2ONNX[indices.dtype.type], indices.shape)],
        [helper.make_tensor_value_info("Y", st, None)], inits)
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    y = run_ort(model, {"indices": indices})[0]
    save_case(out, name, model, {"indices": indices}, [y], tolerance(y))


def gbq_cases(out):
    V, H = 20, 96
    U8 = TensorProto.UINT8
    for sdt, t in ((np.float32, "f32"), (np.float16, "f16")):
        for bs in (16, 32):
            sc = (rng.rand(V, H // bs) * 0.1).astype(sdt)
            idx = np.array([[3, 0, 19], [-1, 7, 25]], np.int64)  # 25: out of range -> zeros
            d4 = rng.randint(0, 256, (V, H // 2))
            gbq_case(out, f"gbq_u8_b4_bs{bs}_{t}", d4, U8, sc, None, idx, bits=4, block_size=bs,
                     gather_axis=0, quantize_axis=1)
            z4 = rng.randint(0, 256, (V, (H // bs + 1) // 2))
            gbq_case(out, f"gbq_u8_b4_bs{bs}_{t}_zp", d4, U8, sc, z4, idx.astype(np.int32), bits=4,
                     block_size=bs, gather_axis=0, quantize_axis=1)
            d8 = rng.randint(0, 256, (V, H))
            gbq_case(out, f"gbq_u8_b8_bs{bs}_{t}", d8, U8, sc, None, idx, bits=8, block_size=bs,
                     gather_axis=0, quantize_axis=1)
            gbq_case(out, f"gbq_u8_b8_bs{bs}_{t}_zp", d8, U8, sc, rng.randint(0, 256, (V, H // bs)),
                     idx, bits=8, block_size=bs, gather_axis=0, quantize_axis=1)
        d2 = rng.randint(0, 256, (V, H // 4))
        gbq_case(out, f"gbq_u8_b2_{t}", d2, U8, (rng.rand(V, H // 32) * 0.1).astype(sdt),
                 rng.randint(0, 256, (V, 1)), np.array([1, 2, 19], np.int64), bits=2,
                 block_size=32, gather_axis=0, quantize_axis=1)
        # int4/uint4 along other axes, 3-D
        d = rng.randint(-8, 8, (64, 5, 3))
        sc = (rng.rand(2, 5, 3) * 0.1).astype(sdt)
        gbq_case(out, f"gbq_int4_g1_q0_{t}", d, TensorProto.INT4, sc, None,
                 np.array([4, 0, -2], np.int64), block_size=32, gather_axis=1, quantize_axis=0)
        gbq_case(out, f"gbq_int4_g1_q0_{t}_zp", d, TensorProto.INT4, sc,
                 rng.randint(-8, 8, (2, 5, 3)), np.array([[4], [1]], np.int64), block_size=32,
                 gather_axis=1, quantize_axis=0)
        du = rng.randint(0, 16, (6, 48, 2))
        gbq_case(out, f"gbq_uint4_g0_q1_{t}", du, TensorProto.UINT4,
                 (rng.rand(6, 3, 2) * 0.1).astype(sdt), rng.randint(0, 16, (6, 3, 2)),
                 np.array([5, 5, 0], np.int32), block_size=16, gather_axis=0, quantize_axis=1)
        gbq_case(out, f"gbq_uint4_g2_q1_{t}", du, TensorProto.UINT4,
                 (rng.rand(6, 3, 2) * 0.1).astype(sdt), None, np.array([[1, 0], [0, 1]], np.int64),
                 block_size=16, gather_axis=2, quantize_axis=1)
        gbq_case(out, f"gbq_int4_same_axis_{t}", rng.randint(-8, 8, (40, 6)), TensorProto.INT4,
                 (rng.rand(3, 6) * 0.1).astype(sdt), None, np.array([39, 16, 0], np.int64),
                 block_size=16, gather_axis=0, quantize_axis=0)
    # float8: scales broadcast over rows, one block per row
    try:
        codes = rng.randint(0, 0x7f, (8, 32)) | (rng.randint(0, 2, (8, 32)) << 7)
        codes[codes & 0x7f == 0x7f] = 0x10
        gbq_case(out, "gbq_e4m3fn_block0", codes, TensorProto.FLOAT8E4M3FN,
                 (rng.rand(8, 1) * 0.1).astype(np.float32), None, np.array([2, 7], np.int64),
                 block_size=0, gather_axis=0, quantize_axis=1)
        gbq_case(out, "gbq_e4m3fn_bcast", codes, TensorProto.FLOAT8E4M3FN,
                 (rng.rand(1, 2) * 0.1).astype(np.float32), None, np.array([[0, 5]], np.int64),
                 block_size=16, gather_axis=0, quantize_axis=1)
    except Exception as e:  # pragma: no cover - older onnxruntime without float8 support
        print(f"make_cases.py: float8 GatherBlockQuantized skipped: {str(e)[:120]}")


# ---- the RMS norms that feed MatMulNBits --------------------------------------------
# At accuracy_level 4 MatMulNBits rounds x * (127 / amax) to an integer, so an ulp of its
# input can move a product by a whole quantization step where a value lies on a half.
# A normalized row of an int4 embedding (GatherBlockQuantized: the tied embedding of
# onnxruntime-genai's builder, LFM2 and Qwen2.5/Qwen3.5's small checkpoints) holds exact
# ratios of small integers, and many of its values do: the norms must give onnxruntime's
# bits there (tolerance 0), and the chain embedding -> norm -> MatMulNBits its products.
# What onnxruntime 1.31.1 computes (src/backends/native/kernels/norm/norm_rms_f32.c): for
# SimplifiedLayerNormalization rows of 16 or more, a sum of squares in 8 fused lanes
# (AVX2+FMA, on AVX-512 CPUs too), the tail in order (its first four squares rounded, the
# rest fused), y = (x * (1 / sqrtf(mean + eps))) * scale; shorter rows and
# SkipSimplifiedLayerNormalization, an ordered float sum of rounded squares and
# y = (x / sqrtf(mean + eps)) * scale.

nrng = np.random.RandomState(2718)  # its own, so that the cases above keep their draws


def norm_model(op, inputs, outputs, inits, **attrs):
    dom = MS if op.startswith("Skip") else ""
    node = helper.make_node(op, [i[0] for i in inputs], outputs, domain=dom, **attrs)
    graph = helper.make_graph(
        [node], "norm", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape))
                         for n, v in inputs if n not in inits],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
        [numpy_helper.from_array(v, n) for n, v in inputs if n in inits])
    return helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])


def int4_rows(rows, h, bs=32):
    """Rows of a symmetric int4 table: (q - 8) * scale per block of bs."""
    q = nrng.randint(0, 16, (rows, h)).astype(np.float32) - 8
    sc = (nrng.rand(rows, (h + bs - 1) // bs) * 0.05 + 0.01).astype(np.float32)
    return (q * np.repeat(sc, bs, axis=1)[:, :h]).astype(np.float32)


def norm_cases(out):
    for h in (4, 15, 16, 17, 19, 21, 22, 23, 64, 128, 896, 1000):
        # 19 rows: groups of 8 and a rest (the kernel forms 8 rows' sums at once)
        x = (nrng.randn(19, h) * nrng.uniform(0.1, 10, (19, 1))).astype(np.float32)
        g = nrng.uniform(0.5, 1.5, h).astype(np.float32)
        m = norm_model("SimplifiedLayerNormalization", [("X", x), ("scale", g)], ["Y"],
                       {"scale"}, axis=-1, epsilon=1e-5)
        save_case(out, f"norm_simplified_f32_h{h}", m, {"X": x}, run_ort(m, {"X": x}), (0, 0))
        sk = nrng.randn(19, h).astype(np.float32)
        m = norm_model("SkipSimplifiedLayerNormalization", [("X", x), ("skip", sk), ("gamma", g)],
                       ["Y", "", "", "sum"], {"gamma"}, epsilon=1e-6)
        save_case(out, f"norm_skip_simplified_f32_h{h}", m, {"X": x, "skip": sk},
                  run_ort(m, {"X": x, "skip": sk}), (0, 0))
    for h in (64, 128, 200):  # rows of an int4 embedding, scale 1 (a fresh checkpoint's norm)
        x = int4_rows(16, h)
        m = norm_model("SimplifiedLayerNormalization", [("X", x), ("scale", np.ones(h, np.float32))],
                       ["Y"], {"scale"}, axis=-1, epsilon=1e-5)
        save_case(out, f"norm_simplified_f32_int4rows_h{h}", m, {"X": x}, run_ort(m, {"X": x}), (0, 0))


def embed_norm_mnb_case(out, name, V, H, N, tokens, bs=32):
    """GatherBlockQuantized (int4, block bs) -> SimplifiedLayerNormalization ->
    MatMulNBits (accuracy_level 4, block bs): the first layer of a builder package with
    tied embeddings. The products are MatMulNBits' own tolerance from onnxruntime's, which
    one int8 rounding decided differently exceeds."""
    table = nrng.randint(0, 256, (V, H // 2)).astype(np.uint8)
    tscale = (nrng.rand(V, H // bs) * 0.05 + 0.01).astype(np.float32)
    kb = H // bs
    W = nrng.randint(0, 256, (N, kb, bs // 2)).astype(np.uint8)
    ws = (nrng.rand(N, kb) * 0.08 + 0.01).astype(np.float32)
    nodes = [
        helper.make_node("GatherBlockQuantized", ["table", "ids", "tscale"], ["e"], domain=MS,
                         bits=4, block_size=bs, gather_axis=0, quantize_axis=1),
        helper.make_node("SimplifiedLayerNormalization", ["e", "g"], ["h"], axis=-1,
                         epsilon=1e-5),
        helper.make_node("MatMulNBits", ["h", "W", "ws"], ["Y"], domain=MS, K=H, N=N, bits=4,
                         block_size=bs, accuracy_level=4)]
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(tscale, "tscale"),
             numpy_helper.from_array(np.ones(H, np.float32), "g"),
             numpy_helper.from_array(W, "W"), numpy_helper.from_array(ws, "ws")]
    graph = helper.make_graph(nodes, "embed_norm_mnb", [helper.make_tensor_value_info(
        "ids", TensorProto.INT64, [1, tokens])], [helper.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [1, tokens, N])], inits)
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    ids = nrng.randint(0, V, (1, tokens)).astype(np.int64)
    y = run_ort(model, {"ids": ids})[0]
    save_case(out, name, model, {"ids": ids}, [y], tolerance(y))


def main():
    args = [a for a in sys.argv[1:] if a != "--explain"]
    if len(args) != 1:
        sys.exit(__doc__)
    out = args[0]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    mnb_cases(out)
    mnb_exact_cases(out)
    gbq_cases(out)
    norm_cases(out)
    embed_norm_mnb_case(out, "embed_norm_mnb_acc4_h128", 64, 128, 96, 32)
    embed_norm_mnb_case(out, "embed_norm_mnb_acc4_h896", 64, 896, 64, 8)
    print(f"make_cases.py: wrote {len(written)} cases into {out}")


if __name__ == "__main__":
    main()
