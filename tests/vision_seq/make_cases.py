#!/usr/bin/env python3
"""Writes single-node cases for the pooling, Resize/Upsample, GridSample, recurrent
(RNN/GRU/LSTM) and integer convolution/matmul kernels: the dtypes, opsets and attributes
ONNX's backend node tests leave out, and shapes large enough to split over the thread
pool. Layout as ONNX's node tests (run by build/tests/node-tests --threads 4 --strict):

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_N.pb, output_N.pb
    OUT/<case>/tolerance.txt            "rtol atol"

usage: make_cases.py OUT_DIR

Oracles. Each case names its own:
  ort   onnxruntime's CPU kernels (pinned in tools/requirements.txt), with graph
        optimizations off. Used wherever onnxruntime implements the op for the dtype.
  ref   onnx's ReferenceEvaluator, where onnxruntime lacks the dtype (bfloat16, some
        float16) or the opset.
  ort32 onnxruntime on the float32 version of the case (inputs rounded to the case's
        dtype first), the result converted to the case's dtype: for float16/float64
        cases of ops onnxruntime implements in float32 only. The tolerance then covers
        float32 arithmetic, which is looser than what our double arithmetic achieves.
Where onnxruntime and the reference disagree, the docstring of the case's function says
which one we follow and why."""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover
    sys.exit("make_cases.py: the onnxruntime Python package is required")

try:
    import ml_dtypes
    BF16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - onnx depends on ml_dtypes
    BF16 = None

rng = np.random.RandomState(2024)
written = []
OUT = None

NP2ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
           np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int8): TensorProto.INT8,
           np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32,
           np.dtype(np.int64): TensorProto.INT64}
if BF16 is not None:
    NP2ONNX[np.dtype(BF16)] = TensorProto.BFLOAT16


def tensor_type(v):
    return NP2ONNX[np.asarray(v).dtype]


def make_model(op, inputs, n_out, opset, out_types=None, domain="", **attrs):
    """A one-node model; `inputs` is a list of (name, array or None); None is an omitted
    optional input (empty name)."""
    names = [n if v is not None else "" for n, v in inputs]
    outs = [f"Y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=domain or None, **attrs)
    g_in = [helper.make_tensor_value_info(n, tensor_type(v), list(np.shape(v)))
            for n, v in inputs if v is not None]
    out_types = out_types or [tensor_type(inputs[0][1])] * n_out
    g_out = [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)]
    graph = helper.make_graph([node], "g", g_in, g_out)
    imports = [helper.make_opsetid("", opset)]
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 8 if opset < 21 else 10
    return m


def run_ort(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def run_ref(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)


def to32(v):
    v = np.asarray(v)
    return v.astype(np.float32) if v.dtype.kind == "f" or v.dtype == BF16 else v


def case(name, op, inputs, n_out=1, opset=22, oracle="ort", tol=(1e-5, 1e-6), out_types=None,
         oracle_attrs=None, oracle_inputs=None, oracle_run=None, **attrs):
    """Writes one case. oracle_attrs / oracle_inputs: attributes or inputs the oracle runs
    with instead (an equivalent spelling of the same computation that the oracle
    accepts, see same_pads); oracle_run: a function of the feeds that returns the
    expected outputs (see rnn_layout1_oracle)."""
    model = make_model(op, inputs, n_out, opset, out_types, **attrs)
    feeds = {n: v for n, v in inputs if v is not None}
    if oracle_run is not None:
        outs = oracle_run(feeds)
    elif oracle_attrs is not None or oracle_inputs is not None:
        o_in = oracle_inputs or inputs
        o_model = make_model(op, o_in, n_out, opset, out_types, **(oracle_attrs or attrs))
        o_feeds = {n: v for n, v in o_in if v is not None}
        outs = (run_ort if oracle == "ort" else run_ref)(o_model, o_feeds)
    elif oracle == "ort":
        outs = run_ort(model, feeds)
    elif oracle == "ref":
        outs = run_ref(model, feeds)
    elif oracle == "ort32":
        types32 = [TensorProto.FLOAT if t in (TensorProto.FLOAT16, TensorProto.DOUBLE,
                                              TensorProto.BFLOAT16) else t
                   for t in (out_types or [tensor_type(inputs[0][1])] * n_out)]
        ins32 = [(n, None if v is None else to32(v)) for n, v in inputs]
        outs = run_ort(make_model(op, ins32, n_out, opset, types32, **attrs),
                       {n: v for n, v in ins32 if v is not None})
        want = out_types or [tensor_type(inputs[0][1])] * n_out
        outs = [o.astype(helper.tensor_dtype_to_np_dtype(t)) for o, t in zip(outs, want)]
    else:
        raise ValueError(oracle)
    d = os.path.join(OUT, "test_" + name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, v) in enumerate(x for x in inputs if x[1] is not None):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(v), n), os.path.join(ds, f"input_{i}.pb"))
    for i, v in enumerate(outs):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(v), f"Y{i}"),
                         os.path.join(ds, f"output_{i}.pb"))
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")
    written.append(name)


def rand(shape, dt=np.float32, lo=-2.0, hi=2.0):
    v = rng.uniform(lo, hi, shape)
    return v.astype(dt)


def same_pads(mode, in_shape, kernel, strides, dilations):
    """The explicit pads that auto_pad SAME_UPPER/SAME_LOWER stands for, by the spec's
    formula: output ceil(in / stride), total padding (out - 1) * stride + dilated extent
    - in, the odd one at the end (UPPER) or the start (LOWER). onnxruntime and ONNX's
    reference both pad for the undilated kernel instead (onnxruntime's Conv refuses
    dilation with SAME), so cases with dilation run the oracle with these pads."""
    begin, end = [], []
    for n, k, s, d in zip(in_shape, kernel, strides, dilations):
        out = -(-n // s)
        tot = max(0, (out - 1) * s + d * (k - 1) + 1 - n)
        b = tot // 2 if mode == "SAME_UPPER" else tot - tot // 2
        begin.append(b)
        end.append(tot - b)
    return begin + end


F16_TOL = (2e-3, 1e-3)
BF16_TOL = (1.6e-2, 1e-2)


# ---- pooling ---------------------------------------------------------------------------

def pool_cases():
    """Pools in float16/float64/bfloat16/int8/uint8, dilations with ceil_mode, Indices with
    storage_order, auto_pad with dilation, the Global forms at rank 5; shapes big enough
    for several planes per thread."""
    x = rand((2, 6, 17, 19))
    kw = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 2], ceil_mode=1)
    case("maxpool_f32_ceil_pads_indices", "MaxPool", [("X", x)], 2, oracle="ort",
         out_types=[TensorProto.FLOAT, TensorProto.INT64], **kw)
    case("maxpool_f64_dilated_indices_colmajor", "MaxPool", [("X", x.astype(np.float64))], 2,
         oracle="ort", out_types=[TensorProto.DOUBLE, TensorProto.INT64], kernel_shape=[2, 3],
         dilations=[2, 2], storage_order=1, ceil_mode=1, strides=[1, 2])
    x3 = rand((1, 3, 7, 8, 9))
    case("maxpool_3d_f32_indices_colmajor", "MaxPool", [("X", x3)], 2, oracle="ort",
         out_types=[TensorProto.FLOAT, TensorProto.INT64], kernel_shape=[2, 3, 2],
         strides=[2, 1, 2], dilations=[1, 2, 1], storage_order=1, pads=[0, 1, 1, 1, 0, 0])
    case("maxpool_f16_pads", "MaxPool", [("X", x.astype(np.float16))], oracle="ort",
         tol=(0, 0), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    case("maxpool_int8_strides", "MaxPool", [("X", rng.randint(-128, 128, (2, 3, 9, 10)).astype(np.int8))],
         oracle="ort", kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0])
    case("maxpool_uint8_same_upper", "MaxPool", [("X", rng.randint(0, 256, (1, 4, 11, 6)).astype(np.uint8))],
         oracle="ort", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    case("maxpool_bf16_ref", "MaxPool", [("X", x.astype(BF16))], oracle="ref", tol=(0, 0),
         kernel_shape=[2, 2], strides=[2, 2])
    case("maxpool_1d_f64_ceil", "MaxPool", [("X", rand((3, 2, 20), np.float64))], oracle="ort",
         kernel_shape=[4], strides=[3], ceil_mode=1)
    # auto_pad with dilation: the output is ceil(in / stride), pads from the dilated extent
    # (onnxruntime and the spec's formula; ONNX's reference uses the undilated kernel)
    for op, mode, k, d, st in (("MaxPool", "SAME_LOWER", [4, 3], [2, 2], [1, 1]),
                               ("AveragePool", "SAME_UPPER", [3, 3], [2, 2], [2, 1])):
        case(f"{op.lower()}_{mode.lower()}_dilated", op, [("X", x)], kernel_shape=k,
             dilations=d, strides=st, auto_pad=mode,
             oracle_attrs=dict(kernel_shape=k, dilations=d, strides=st,
                               pads=same_pads(mode, x.shape[2:], k, st, d)))
    for cip in (0, 1):
        case(f"averagepool_f64_ceil_pads_cip{cip}", "AveragePool", [("X", x.astype(np.float64))],
             oracle="ort32", tol=(1e-5, 1e-6), count_include_pad=cip, **kw)
        case(f"averagepool_3d_dilated_ceil_cip{cip}", "AveragePool", [("X", x3)], oracle="ort",
             kernel_shape=[2, 3, 3], strides=[2, 2, 3], dilations=[2, 1, 2], pads=[1, 1, 0, 0, 1, 2],
             ceil_mode=1, count_include_pad=cip)
    case("averagepool_f16_pads", "AveragePool", [("X", x.astype(np.float16))], oracle="ort32",
         tol=F16_TOL, kernel_shape=[3, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    case("averagepool_bf16_ref", "AveragePool", [("X", x.astype(BF16))], oracle="ref",
         tol=BF16_TOL, kernel_shape=[2, 2], strides=[2, 2])
    case("averagepool_opset7_cip", "AveragePool", [("X", x)], opset=7, oracle="ort",
         kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    case("lppool_f32_p3_pads_dilated", "LpPool", [("X", np.abs(x) + 0.1)], oracle="ort",
         tol=(1e-5, 1e-6), kernel_shape=[3, 2], p=3, pads=[1, 0, 1, 1], dilations=[1, 2],
         strides=[2, 2])
    case("lppool_f64_p1", "LpPool", [("X", x.astype(np.float64))], oracle="ort32",
         tol=(1e-5, 1e-6), kernel_shape=[2, 2], p=1)
    case("lppool_opset2_p2", "LpPool", [("X", x)], opset=2, oracle="ort", kernel_shape=[2, 3],
         strides=[1, 2])
    x5 = rand((2, 3, 4, 5, 6))
    case("globalaveragepool_3d_f64", "GlobalAveragePool", [("X", x5.astype(np.float64))],
         oracle="ref", tol=(1e-12, 1e-13))
    case("globalaveragepool_f16", "GlobalAveragePool", [("X", x.astype(np.float16))],
         oracle="ort32", tol=F16_TOL)
    case("globalmaxpool_1d_f64", "GlobalMaxPool", [("X", rand((2, 5, 13), np.float64))],
         oracle="ort32")
    case("globallppool_p3", "GlobalLpPool", [("X", x5)], opset=2, oracle="ort", tol=(1e-5, 1e-6), p=3)
    case("globallppool_default_p", "GlobalLpPool", [("X", x)], opset=2, oracle="ort", tol=(1e-5, 1e-6))


def conv_cases():
    """Conv with auto_pad and dilation: the output extent is ceil(in / stride) and the
    pads come from the dilated kernel extent, as the spec's formula and onnxruntime say.
    ONNX's reference evaluator pads for the undilated kernel, which yields a smaller
    output than SAME promises (7 instead of 9 here) and onnxruntime refuses dilation with
    SAME, so the oracle is onnxruntime with the explicit pads SAME stands for."""
    x = rand((1, 3, 9, 10))
    w = rand((4, 3, 3, 3))
    for mode, d, st in (("SAME_UPPER", [2, 2], [1, 1]), ("SAME_LOWER", [2, 3], [2, 3])):
        case(f"conv_{mode.lower()}_dilated", "Conv", [("X", x), ("W", w)], tol=(1e-5, 1e-5),
             auto_pad=mode, dilations=d, strides=st,
             oracle_attrs=dict(dilations=d, strides=st,
                               pads=same_pads(mode, x.shape[2:], [3, 3], st, d)))


# ---- integer convolution and matmul ----------------------------------------------------

def q8(shape, dt):
    lo, hi = (-128, 128) if dt == np.int8 else (0, 256)
    return rng.randint(lo, hi, shape).astype(dt)


def integer_cases():
    """MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv beyond the node tests'
    uint8 examples: int8, batches broadcast against a 2-D B, per-row/per-column/per-
    channel zero points and scales, groups, strides, dilations, 1-D and 3-D convolutions,
    sizes that split over the pool. Results are exact integers (tolerance 0)."""
    i8, u8 = np.int8, np.uint8
    a, b = q8((3, 37, 300), u8), q8((300, 129), i8)
    # uint8 x int8 runs on onnx's reference: onnxruntime's AVX2 kernel (machines without
    # VNNI) sums byte pairs in saturating 16-bit lanes (vpmaddubsw), so it is no oracle
    # there (255*127*2 > 32767: off by thousands)
    case("matmulinteger_u8i8_batched", "MatMulInteger",
         [("A", a), ("B", b), ("az", np.array(7, u8)), ("bz", np.array(-3, i8))],
         opset=10, oracle="ref", tol=(0, 0), out_types=[TensorProto.INT32])
    case("matmulinteger_i8_row_col_zp", "MatMulInteger",
         [("A", q8((2, 1, 5, 40), i8)), ("B", q8((3, 40, 6), i8)), ("az", q8((5, 1), i8)),
          ("bz", q8((6,), i8))], opset=10, oracle="ref", tol=(0, 0), out_types=[TensorProto.INT32])
    # a 1-D zero point of A is per row (the spec's "M element vector"): the reference runs
    # it as the [M, 1] column it stands for
    a6, b3, az, bz = q8((6, 20), u8), q8((20, 3), u8), q8((6,), u8), q8((3,), u8)
    case("matmulinteger_per_row_vector_zp", "MatMulInteger",
         [("A", a6), ("B", b3), ("az", az), ("bz", bz)], opset=10, oracle="ref", tol=(0, 0),
         out_types=[TensorProto.INT32],
         oracle_inputs=[("A", a6), ("B", b3), ("az", az.reshape(6, 1)), ("bz", bz)])
    case("matmulinteger_1d_a", "MatMulInteger", [("A", q8((17,), u8)), ("B", q8((17, 4), u8))],
         opset=10, oracle="ort", tol=(0, 0), out_types=[TensorProto.INT32])
    x = q8((2, 6, 15, 14), u8)
    case("convinteger_u8_group_stride_pads", "ConvInteger",
         [("x", x), ("w", q8((4, 3, 3, 2), u8)), ("xz", np.array(128, u8)), ("wz", np.array(3, u8))],
         opset=10, oracle="ort", tol=(0, 0), out_types=[TensorProto.INT32], group=2,
         strides=[2, 1], pads=[1, 0, 1, 1], dilations=[1, 2])
    case("convinteger_i8_per_channel_zp", "ConvInteger",
         [("x", q8((1, 4, 9, 8), i8)), ("w", q8((5, 4, 2, 3), i8)), ("xz", np.array(-5, i8)),
          ("wz", q8((5,), i8))], opset=10, oracle="ref", tol=(0, 0),
         out_types=[TensorProto.INT32], pads=[1, 1, 0, 1])
    case("convinteger_large_gemm", "ConvInteger",
         [("x", q8((1, 16, 20, 20), u8)), ("w", q8((32, 16, 3, 3), u8))], opset=10, oracle="ort",
         tol=(0, 0), out_types=[TensorProto.INT32], pads=[1, 1, 1, 1])
    for dt, name in ((u8, "u8"), (i8, "i8")):
        xs, ys = np.array(0.05, np.float32), np.array(0.2, np.float32)
        w = q8((8, 3, 3, 3), i8)
        case(f"qlinearconv_{name}_per_channel_bias", "QLinearConv",
             [("x", q8((2, 6, 11, 10), dt)), ("xs", xs), ("xz", np.array(3, dt)), ("w", w),
              ("ws", rng.uniform(0.01, 0.05, 8).astype(np.float32)), ("wz", np.zeros(8, i8)),
              ("ys", ys), ("yz", np.array(5, dt)), ("B", rng.randint(-500, 500, 8).astype(np.int32))],
             opset=10, oracle="ref" if dt == u8 else "ort", tol=(0, 0), group=2,
             strides=[2, 2], pads=[1, 1, 1, 1])  # u8 x i8: the reference (see above)
        case(f"qlinearconv_1d_{name}", "QLinearConv",
             [("x", q8((1, 3, 30), dt)), ("xs", xs), ("xz", np.array(1, dt)),
              ("w", q8((4, 3, 5), i8)), ("ws", np.array(0.02, np.float32)), ("wz", np.array(0, i8)),
              ("ys", ys), ("yz", np.array(-2 if dt == i8 else 7, dt))],
             opset=10, oracle="ref" if dt == u8 else "ort", tol=(0, 0), dilations=[2],
             auto_pad="SAME_UPPER",
             oracle_attrs=dict(dilations=[2], pads=same_pads("SAME_UPPER", [30], [5], [1], [2])))
    case("qlinearconv_3d_u8", "QLinearConv",
         [("x", q8((1, 2, 5, 6, 7), u8)), ("xs", np.array(0.03, np.float32)), ("xz", np.array(100, u8)),
          ("w", q8((3, 2, 2, 3, 2), u8)), ("ws", np.array(0.04, np.float32)), ("wz", np.array(120, u8)),
          ("ys", np.array(0.5, np.float32)), ("yz", np.array(128, u8))],
         opset=10, oracle="ort", tol=(0, 0), strides=[1, 2, 2])
    # QLinearMatMul requantizes in double (quant_integer.c): onnxruntime multiplies in
    # float32 and lands on the other side of a .5 tie in one element of the int8 case
    # (tests/unit/test_vision_seq_kernels.c pins it), so the reference is the oracle.
    for dt, name in ((u8, "u8"), (i8, "i8")):
        case(f"qlinearmatmul_{name}_batched", "QLinearMatMul",
             [("a", q8((2, 33, 70), dt)), ("as", np.array(0.02, np.float32)), ("az", np.array(2, dt)),
              ("b", q8((70, 40), dt)), ("bs", np.array(0.03, np.float32)), ("bz", np.array(1, dt)),
              ("ys", np.array(0.7, np.float32)), ("yz", np.array(3, dt))],
             opset=10, oracle="ref", tol=(0, 0))
    case("qlinearmatmul_per_row_col", "QLinearMatMul",
         [("a", q8((4, 9), u8)), ("as", rng.uniform(0.01, 0.03, (4, 1)).astype(np.float32)),
          ("az", q8((4, 1), u8)), ("b", q8((9, 5), u8)),
          ("bs", rng.uniform(0.01, 0.03, (1, 5)).astype(np.float32)), ("bz", q8((1, 5), u8)),
          ("ys", np.array(0.01, np.float32)), ("yz", np.array(128, u8))],
         opset=21, oracle="ref", tol=(0, 0))


# ---- Resize and Upsample -------------------------------------------------------------

def f32(*v):
    return np.array(v, np.float32)


def i64(*v):
    return np.array(v, np.int64)


EMPTY = np.zeros((0,), np.float32)


def resize_cases():
    """Resize at opsets 10, 11, 13, 18 and 19 and Upsample 7 and 9 (the node tests cover
    19 and Upsample 9 nearest only), every mode and coordinate transform against
    onnxruntime, dtypes float16/float64/int8/uint8/int32/int64/bool, N-D linear, and
    sizes that split over the pool.

    onnxruntime computes in float32 (tolerance 1e-5 absolute on values of magnitude 2)
    and differs from the spec in two places, where the reference is the oracle:
    align_corners with scales (onnxruntime divides by the integer output length minus 1,
    the spec by scale * length - 1, and ONNX's expected outputs agree with the spec), and
    output sizes, which onnxruntime rounds in float32 (1.9f * 40 = 76) where the spec's
    floor(length * scale) of the float32 scale 1.89999998 is 75."""
    x = rand((1, 2, 5, 7))
    rt = (1e-5, 1e-5)
    up, down = f32(1, 1, 2.5, 1.7), f32(1, 1, 0.6, 0.45)
    # opset 10 and Upsample: asymmetric coordinates; nearest downsampling takes ceil
    for mode in ("nearest", "linear"):
        for nm, sc in (("up", up), ("down", down)):
            case(f"resize10_{mode}_{nm}", "Resize", [("X", x), ("scales", sc)], opset=10,
                 mode=mode)
    case("upsample7_nearest_attr", "Upsample", [("X", x)], opset=7, mode="nearest",
         scales=[1.0, 1.0, 2.0, 3.0])
    case("upsample7_linear_attr", "Upsample", [("X", x)], opset=7, mode="linear",
         scales=[1.0, 1.0, 1.5, 2.5])
    case("upsample9_linear_f64", "Upsample", [("X", x.astype(np.float64)), ("scales", up)],
         opset=9, mode="linear", oracle="ort32", tol=(1e-5, 1e-6))
    # opset 11: roi and scales inputs always present (empty when unused)
    for ct in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn"):
        for mode in ("nearest", "linear", "cubic"):
            if ct == "tf_half_pixel_for_nn" and mode != "nearest":
                continue
            for nm, sc in (("up", up), ("down", down)):
                case(f"resize11_{mode}_{ct}_{nm}", "Resize",
                     [("X", x), ("roi", EMPTY), ("scales", sc)], opset=11, mode=mode,
                     coordinate_transformation_mode=ct, tol=rt,
                     oracle="ref" if ct == "align_corners" else "ort")
            if ct == "align_corners":
                case(f"resize11_{mode}_{ct}_sizes", "Resize",
                     [("X", x), ("roi", EMPTY), ("scales", EMPTY), ("sizes", i64(1, 2, 9, 4))],
                     opset=11, mode=mode, coordinate_transformation_mode=ct, tol=rt)
    for nmode in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        case(f"resize11_nearest_{nmode}_sizes", "Resize",
             [("X", x), ("roi", EMPTY), ("scales", EMPTY), ("sizes", i64(1, 2, 8, 3))],
             opset=11, mode="nearest", nearest_mode=nmode)
    case("resize11_cubic_a05_exclude_outside_down", "Resize",
         [("X", x), ("roi", EMPTY), ("scales", down)], opset=11, mode="cubic",
         cubic_coeff_a=-0.5, exclude_outside=1, tol=rt)
    case("resize11_tf_crop_and_resize_linear", "Resize",
         [("X", x), ("roi", f32(0, 0, 0.1, -0.2, 1, 1, 0.8, 1.3)), ("scales", EMPTY),
          ("sizes", i64(1, 2, 6, 9))], opset=11, mode="linear", tol=rt,
         coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)
    case("resize11_tf_crop_and_resize_nearest_int32", "Resize",
         [("X", rng.randint(-1000, 1000, (1, 2, 5, 7)).astype(np.int32)),
          ("roi", f32(0, 0, -0.2, 0.1, 1, 1, 0.9, 1.2)), ("scales", EMPTY),
          ("sizes", i64(1, 2, 7, 6))], opset=11, mode="nearest", tol=(0, 0),
         coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0)
    # pytorch_half_pixel with an output length of 1 maps to 0 (spec, onnxruntime); the
    # reference maps it to -0.5, which moves cubic's taps
    case("resize13_cubic_pytorch_half_pixel_len1", "Resize",
         [("X", x), ("", None), ("", None), ("sizes", i64(1, 2, 1, 4))], opset=13, mode="cubic",
         coordinate_transformation_mode="pytorch_half_pixel", tol=rt)
    case("resize13_linear_f16", "Resize",
         [("X", x.astype(np.float16)), ("", None), ("scales", up)], opset=13, mode="linear",
         oracle="ort32", tol=F16_TOL)
    case("resize13_nearest_f16_exact", "Resize",
         [("X", x.astype(np.float16)), ("", None), ("scales", down)], opset=13, tol=(0, 0))
    case("resize13_linear_f64", "Resize",
         [("X", x.astype(np.float64)), ("", None), ("scales", down)], opset=13, mode="linear",
         oracle="ref", tol=(1e-12, 1e-12))
    # integer outputs round half to even: with half_pixel, scales 3 and 0.6 put every
    # sampling point on a third of a pixel, so the weights are ninths and no output lies
    # near a .5 tie, where ulp-level differences in the arithmetic (FMA contraction,
    # summation order) would decide the rounding
    for dt in (np.uint8, np.int8):
        xi = q8((1, 3, 6, 5), dt)
        case(f"resize13_linear_{np.dtype(dt).name}", "Resize",
             [("X", xi), ("", None), ("scales", f32(1, 1, 3, 0.6))], opset=13, mode="linear",
             oracle="ref", tol=(0, 0))
        case(f"resize13_nearest_{np.dtype(dt).name}", "Resize",
             [("X", xi), ("", None), ("scales", f32(1, 1, 1.5, 0.7))], opset=13, tol=(0, 0))
    case("resize13_nearest_int64_bool_rank2", "Resize",
         [("X", rng.randint(-2**40, 2**40, (3, 4)).astype(np.int64)), ("", None),
          ("scales", f32(2.0, 0.75))], opset=13, oracle="ref", tol=(0, 0))
    case("resize13_nearest_all_axes", "Resize",
         [("X", x), ("", None), ("scales", f32(2, 0.5, 1.4, 1))], opset=13, oracle="ref")
    x5 = rand((1, 2, 3, 4, 5))
    case("resize13_trilinear_5d", "Resize",
         [("X", x5), ("", None), ("scales", f32(1, 1, 1.7, 0.8, 2.2))], opset=13, mode="linear",
         tol=rt)
    xb = rand((2, 3, 40, 33))
    case("resize13_cubic_big_exclude_outside", "Resize",
         [("X", xb), ("", None), ("", None), ("sizes", i64(2, 3, 57, 29))], opset=13,
         mode="cubic", exclude_outside=1, tol=rt)
    case("resize13_linear_big_align_corners", "Resize",
         [("X", xb), ("", None), ("", None), ("sizes", i64(2, 3, 75, 77))], opset=13,
         mode="linear", coordinate_transformation_mode="align_corners", tol=rt)
    case("resize13_nearest_scale_1p9_floors_to_75_ref", "Resize",
         [("X", xb), ("", None), ("scales", f32(1, 1, 1.9, 1))], opset=13, oracle="ref",
         tol=(0, 0))
    # opset 18: antialias, axes, keep_aspect_ratio_policy
    for mode in ("linear", "cubic"):
        case(f"resize18_{mode}_antialias_axes", "Resize",
             [("X", xb), ("", None), ("scales", f32(0.375, 0.625))], opset=18, mode=mode,
             antialias=1, axes=[2, 3], tol=rt)
        # the reference forms the antialiased cubic weights in float32 (its cubic_coeff_a
        # is a numpy float32), so float64 agrees to about 1e-6
        case(f"resize18_{mode}_antialias_f64_ref", "Resize",
             [("X", xb.astype(np.float64)), ("", None), ("scales", f32(1, 1, 0.3, 0.7))],
             opset=18, mode=mode, antialias=1, oracle="ref", tol=(1e-5, 1e-5))
    case("resize18_linear_antialias_exclude_outside_ref", "Resize",
         [("X", x), ("", None), ("scales", f32(1, 1, 0.4, 0.6))], opset=18, mode="linear",
         antialias=1, exclude_outside=1, oracle="ref", tol=(1e-5, 1e-6))
    for pol in ("not_larger", "not_smaller"):
        case(f"resize18_linear_{pol}_axes_3_2", "Resize",
             [("X", x), ("", None), ("", None), ("sizes", i64(9, 4))], opset=18, mode="linear",
             axes=[3, 2], keep_aspect_ratio_policy=pol, oracle="ref", tol=(1e-5, 1e-6))
    case("resize18_tf_crop_and_resize_axes_negative", "Resize",
         [("X", x), ("roi", f32(0.2, -0.1, 0.9, 1.1)), ("", None), ("sizes", i64(4, 8))],
         opset=18, mode="linear", axes=[-2, -1], coordinate_transformation_mode="tf_crop_and_resize",
         oracle="ref", tol=(1e-5, 1e-6),
         oracle_attrs=dict(mode="linear", axes=[2, 3],  # the reference wants them positive
                           coordinate_transformation_mode="tf_crop_and_resize"))
    case("resize19_half_pixel_symmetric_cubic", "Resize",
         [("X", x), ("", None), ("scales", f32(1, 1, 1.3, 0.7))], opset=19, mode="cubic",
         coordinate_transformation_mode="half_pixel_symmetric", oracle="ref", tol=(1e-5, 1e-6))


# ---- GridSample ------------------------------------------------------------------------

def grid_sample_cases():
    """GridSample at opset 16 (bilinear/bicubic names, 4-D) and 20 (1-D to 3-D), every
    mode, padding and align_corners, with grid coordinates reaching outside [-1, 1] so
    that the padding rules act; float64, float16, int32; shapes that split over the pool.
    onnxruntime is the oracle: with cubic and border padding ONNX's reference clamps the
    sampling coordinate before forming the taps, where PyTorch's grid_sample (which the
    spec cites) and onnxruntime clamp only the taps (grid_sample.c)."""
    x = rand((2, 3, 6, 7))
    grid = rand((2, 5, 4, 2), lo=-1.6, hi=1.6)
    for opset, modes in ((16, ("bilinear", "nearest", "bicubic")), (20, ("linear", "nearest", "cubic"))):
        for mode in modes:
            for pad in ("zeros", "border", "reflection"):
                for ac in (0, 1):
                    case(f"gridsample{opset}_{mode}_{pad}_ac{ac}", "GridSample",
                         [("X", x), ("grid", grid)], opset=opset, mode=mode, padding_mode=pad,
                         align_corners=ac, tol=(1e-5, 1e-5))
    case("gridsample20_linear_f64", "GridSample", [("X", x.astype(np.float64)),
         ("grid", grid.astype(np.float64))], opset=20, mode="linear", padding_mode="reflection",
         tol=(1e-12, 1e-12))
    case("gridsample20_cubic_f16", "GridSample", [("X", x.astype(np.float16)),
         ("grid", grid.astype(np.float16))], opset=20, mode="cubic", oracle="ort32", tol=F16_TOL)
    case("gridsample20_nearest_int32_ref", "GridSample",
         [("X", rng.randint(-100, 100, (1, 2, 5, 4)).astype(np.int32)), ("grid", grid[:1])],
         opset=20, mode="nearest", padding_mode="border", oracle="ref", tol=(0, 0))
    x3, g3 = rand((1, 2, 4, 5, 6)), rand((1, 3, 4, 2, 3), lo=-1.3, hi=1.3)
    for mode in ("linear", "nearest", "cubic"):
        for pad in ("zeros", "border", "reflection"):
            if mode == "cubic" and pad == "border":
                continue  # onnxruntime has no 3-D cubic and the reference clamps (above)
            case(f"gridsample20_3d_{mode}_{pad}", "GridSample", [("X", x3), ("grid", g3)],
                 opset=20, mode=mode, padding_mode=pad, align_corners=1, tol=(1e-5, 1e-5),
                 oracle="ref" if mode == "cubic" else "ort")
    x1, g1 = rand((2, 3, 9)), rand((2, 11, 1), lo=-1.4, hi=1.4)
    for mode in ("linear", "cubic"):
        case(f"gridsample20_1d_{mode}_ref", "GridSample", [("X", x1), ("grid", g1)], opset=20,
             mode=mode, padding_mode="reflection", oracle="ref", tol=(1e-5, 1e-5))
    xb, gb = rand((2, 8, 30, 40)), rand((2, 33, 27, 2), lo=-1.1, hi=1.1)
    case("gridsample20_big_bilinear", "GridSample", [("X", xb), ("grid", gb)], opset=20,
         mode="linear", tol=(1e-5, 1e-5))


# ---- RNN, GRU, LSTM ----------------------------------------------------------------------

def rnn_inputs(kind, T, B, I, H, dirs, dt=np.float32, layout=0, bias=True, seq=None,
               init=True, peep=False):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    X = rand((B, T, I) if layout else (T, B, I), dt, -1, 1)
    s = 1 / np.sqrt(H)
    ins = [("X", X), ("W", rand((dirs, G * H, I), dt, -s, s)), ("R", rand((dirs, G * H, H), dt, -s, s)),
           ("B", rand((dirs, 2 * G * H), dt, -s, s) if bias else None),
           ("sequence_lens", None if seq is None else np.array(seq, np.int32))]
    hshape = (B, dirs, H) if layout else (dirs, B, H)
    ins.append(("initial_h", rand(hshape, dt, -1, 1) if init else None))
    if kind == "LSTM":
        ins.append(("initial_c", rand(hshape, dt, -1, 1) if init else None))
        ins.append(("P", rand((dirs, 3 * H), dt, -s, s) if peep else None))
    while ins[-1][1] is None:
        ins.pop()
    return ins


def rnn_layout1_oracle(kind, ins, n_out, opset, **attrs):
    """onnxruntime refuses layout 1 (batch first), so the oracle runs the layout-0 model
    on the transposed inputs and transposes its outputs back: Y [T, dirs, B, H] becomes
    [B, T, dirs, H] and the states [dirs, B, H] become [B, dirs, H]."""
    def run(feeds):
        t_in = []
        for n, v in ins:
            if v is not None and n == "X":
                v = np.swapaxes(v, 0, 1)
            elif v is not None and n in ("initial_h", "initial_c"):
                v = np.swapaxes(v, 0, 1)
            t_in.append((n, v))
        outs = run_ort(make_model(kind, t_in, n_out, opset, **attrs),
                       {n: v for n, v in t_in if v is not None})
        return [np.transpose(outs[0], (2, 0, 1, 3))] + [np.swapaxes(o, 0, 1) for o in outs[1:]]
    return run


def rnn_cases():
    """RNN, GRU and LSTM beyond the node tests: bidirectional with sequence_lens (each
    direction runs only the entry's own steps), initial states, layout 1, clip, the
    activation list with alpha/beta, LSTM peepholes and input_forget, GRU's
    linear_before_reset both ways, float64 and float16, and hidden sizes that split the
    products over the pool. onnxruntime is the oracle throughout (the reference ignores
    sequence_lens, clip and the activations); it computes in float32."""
    for kind in ("RNN", "GRU", "LSTM"):
        nout = 3 if kind == "LSTM" else 2
        H = 5
        for dirn, dirs in (("forward", 1), ("reverse", 1), ("bidirectional", 2)):
            ins = rnn_inputs(kind, 6, 4, 3, H, dirs, seq=[6, 3, 1, 5], peep=True)
            extra = dict(linear_before_reset=1) if kind == "GRU" else {}
            case(f"{kind.lower()}_{dirn}_seq_lens_init", kind, ins, nout, opset=14,
                 hidden_size=H, direction=dirn, tol=(1e-5, 1e-6), **extra)
            ins = rnn_inputs(kind, 5, 3, 4, H, dirs, layout=1, seq=[2, 5, 4], peep=True)
            case(f"{kind.lower()}_{dirn}_layout1", kind, ins, nout, opset=14, hidden_size=H,
                 direction=dirn, layout=1, tol=(1e-5, 1e-6), **extra,
                 oracle_run=rnn_layout1_oracle(kind, ins, nout, 14, hidden_size=H,
                                               direction=dirn, **extra))
        ins = rnn_inputs(kind, 7, 5, 48, 64, 2, init=False)
        case(f"{kind.lower()}_bidirectional_big", kind, ins, nout, opset=14, hidden_size=64,
             direction="bidirectional", tol=(1e-4, 1e-5))
        ins = rnn_inputs(kind, 6, 3, 4, H, 1)
        case(f"{kind.lower()}_clip", kind, ins, nout, opset=14, hidden_size=H, clip=0.3,
             tol=(1e-5, 1e-6))
        ins = rnn_inputs(kind, 5, 2, 3, H, 2, dt=np.float64, seq=[5, 2])
        case(f"{kind.lower()}_f64", kind, ins, nout, opset=14, hidden_size=H,
             direction="bidirectional", oracle="ort32", tol=(1e-5, 1e-6))
        ins = rnn_inputs(kind, 5, 2, 3, H, 1, dt=np.float16)
        case(f"{kind.lower()}_f16", kind, ins, nout, opset=14, hidden_size=H, oracle="ort32",
             tol=F16_TOL)
    acts = {"RNN": (["LeakyRelu", "ScaledTanh"], [0.2, 0.7], [1.3]),
            "GRU": (["HardSigmoid", "Softsign", "Sigmoid", "Affine"], [0.3, 0.6], [0.4, 0.1]),
            "LSTM": (["HardSigmoid", "Elu", "Softplus", "Sigmoid", "ThresholdedRelu", "Tanh"],
                     [0.25, 0.8, 0.1], [0.55])}
    for kind, (names, al, be) in acts.items():
        nout = 3 if kind == "LSTM" else 2
        ins = rnn_inputs(kind, 5, 3, 4, 6, 2)
        case(f"{kind.lower()}_activations_alpha_beta", kind, ins, nout, opset=14, hidden_size=6,
             direction="bidirectional", activations=names, activation_alpha=al,
             activation_beta=be, tol=(1e-5, 1e-6))
    ins = rnn_inputs("GRU", 6, 3, 4, 5, 2, seq=[6, 2, 4])
    case("gru_linear_before_reset0_bidirectional", "GRU", ins, 2, opset=14, hidden_size=5,
         direction="bidirectional", linear_before_reset=0, tol=(1e-5, 1e-6))
    ins = rnn_inputs("LSTM", 6, 3, 4, 5, 1, peep=True)
    case("lstm_input_forget_peepholes", "LSTM", ins, 3, opset=14, hidden_size=5,
         input_forget=1, tol=(1e-5, 1e-6))
    ins = rnn_inputs("LSTM", 4, 2, 3, 5, 1)
    case("lstm_opset7", "LSTM", ins, 3, opset=7, hidden_size=5, tol=(1e-5, 1e-6))
    # GRU 3 computes what 7 does (7 dropped output_sequence); onnxruntime starts at 7
    ins = rnn_inputs("GRU", 4, 2, 3, 5, 1)
    case("gru_opset3", "GRU", ins, 2, opset=3, hidden_size=5, tol=(1e-5, 1e-6),
         oracle_run=lambda f: run_ort(make_model("GRU", ins, 2, 7, hidden_size=5), f))


# ---- ConvTranspose, MaxUnpool, AffineGrid -------------------------------------------------

def conv_transpose_cases():
    """ConvTranspose with groups, strides, dilations, pads, output_padding, output_shape
    and auto_pad in 1-D to 3-D, float64/float16, and sizes that split over the pool;
    MaxUnpool of MaxPool's indices with and without output_shape; AffineGrid 2-D and 3-D.
    onnxruntime is the oracle."""
    x, w = rand((2, 4, 5, 6)), rand((4, 3, 3, 2))
    ct = [("X", x), ("W", w), ("B", rand((6,)))]
    case("convtranspose_group_stride_dil_pads_outpad", "ConvTranspose", ct, tol=(1e-5, 1e-5),
         group=2, strides=[2, 3], dilations=[2, 1], pads=[1, 0, 2, 1], output_padding=[1, 2])
    case("convtranspose_output_shape_pads_derived", "ConvTranspose", ct[:2], tol=(1e-5, 1e-5),
         strides=[2, 2], output_shape=[12, 13])
    # auto_pad SAME: the output is in * stride (the spec's words), here 10 x 18; where the
    # kernel's full extent is shorter (17 along W) the missing position is zero.
    # onnxruntime clamps the padding at 0 and returns 10 x 17, so the reference is the
    # oracle (ConvTranspose's SAME is pinned in tests/unit/test_vision_seq_kernels.c).
    for ap in ("SAME_UPPER", "SAME_LOWER"):
        case(f"convtranspose_{ap.lower()}_stride", "ConvTranspose", ct[:2], tol=(1e-5, 1e-5),
             strides=[2, 3], auto_pad=ap, oracle="ref")
    case("convtranspose_1d", "ConvTranspose", [("X", rand((1, 3, 7))), ("W", rand((3, 2, 4)))],
         tol=(1e-5, 1e-5), strides=[3], pads=[1, 2])
    case("convtranspose_3d", "ConvTranspose", [("X", rand((1, 2, 3, 4, 3))), ("W", rand((2, 2, 2, 3, 2)))],
         tol=(1e-5, 1e-5), strides=[2, 1, 2], dilations=[1, 2, 1])
    case("convtranspose_f64", "ConvTranspose", [(n, v.astype(np.float64)) for n, v in ct],
         oracle="ort32", tol=(1e-5, 1e-5), group=2, strides=[2, 2], pads=[0, 1, 1, 0])
    case("convtranspose_f16", "ConvTranspose", [(n, v.astype(np.float16)) for n, v in ct],
         oracle="ort32", tol=(4e-3, 4e-3), group=2, strides=[2, 2])
    case("convtranspose_big", "ConvTranspose", [("X", rand((2, 16, 15, 17))), ("W", rand((16, 24, 4, 4)))],
         tol=(1e-4, 1e-4), strides=[2, 2], pads=[1, 1, 1, 1])
    xp = rand((2, 3, 8, 8))
    ort_out = run_ort(make_model("MaxPool", [("X", xp)], 2, 12,
                                 [TensorProto.FLOAT, TensorProto.INT64], kernel_shape=[2, 2],
                                 strides=[2, 2]), {"X": xp})
    case("maxunpool_from_maxpool", "MaxUnpool", [("X", ort_out[0]), ("I", ort_out[1])], opset=11,
         tol=(0, 0), kernel_shape=[2, 2], strides=[2, 2])
    case("maxunpool_output_shape", "MaxUnpool",
         [("X", ort_out[0]), ("I", ort_out[1]), ("shape", i64(2, 3, 9, 10))], opset=11,
         oracle="ref", tol=(0, 0), kernel_shape=[2, 2], strides=[2, 2])
    for ac in (0, 1):
        case(f"affinegrid_2d_ac{ac}", "AffineGrid", [("theta", rand((2, 2, 3))), ("size", i64(2, 3, 5, 7))],
             opset=20, align_corners=ac, tol=(1e-6, 1e-6))
        case(f"affinegrid_3d_f64_ac{ac}", "AffineGrid",
             [("theta", rand((1, 3, 4), np.float64)), ("size", i64(1, 2, 3, 4, 5))], opset=20,
             align_corners=ac, oracle="ort32", tol=(1e-6, 1e-6))


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT = sys.argv[1]
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    warnings.simplefilter("ignore")
    pool_cases()
    conv_cases()
    integer_cases()
    resize_cases()
    grid_sample_cases()
    rnn_cases()
    conv_transpose_cases()
    print(f"make_cases.py: wrote {len(written)} cases into {OUT}")


if __name__ == "__main__":
    main()
