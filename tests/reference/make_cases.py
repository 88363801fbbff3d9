#!/usr/bin/env python3
"""Writes single-node test cases whose expected outputs come from onnx's own
ReferenceEvaluator (onnx.reference), in the layout of ONNX's backend node tests (run by
build/tests/node-tests):

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_0/input_N.pb, output_N.pb
    OUT/<case>/tolerance.txt            "rtol atol"

They pin the numerics the backend node tests leave open, each found against the
reference: float64 computed in double (no float32 round trip), integer wraparound as
numpy's (Pow, Shrink, the reductions), the index of a NaN in ArgMax/ArgMin, variadic ops
with more inputs than a fixed table would hold, float32 squares in ReduceL2 and
ReduceSumSquare, reductions over an empty axis, Elu/Selu/Celu at -0, NaN and in every
float16 value, string tensors moved by Identity, Gather, Concat, Reshape, ... and cast to
and from numbers, and NonZero/Unique/Gather/GatherElements/Flatten at their edges.

Where the reference is wrong or fails (float16 computed with double rounding, Unique's
unsorted path, GatherElements past np.choose's limit, Flatten of a zero-size leading
dimension) a case states the right answer itself (case(expect=...)), with the evidence
beside it.

Where the reference's answer is the platform's (numpy's float-to-integer conversion of
a NaN is the x86-64 instruction's), the case is written only on x86-64; elsewhere it is
written with a skip.txt saying why.

usage: make_cases.py OUT_DIR"""
import os
import platform
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.RandomState(1234)
written = []
X86 = platform.machine().lower() in ("x86_64", "amd64")


def write_tensor(path, value, name):
    if value.dtype == object or value.dtype.kind in "US":
        value = value.astype(object)
    t = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def elem_type(v):
    return TensorProto.STRING if v.dtype.kind in "OU" else helper.np_dtype_to_tensor_dtype(v.dtype)


def case(out, name, op, feeds, attrs=None, opset=19, tol=(0.0, 0.0), out_types=None,
         n_out=1, skip=None, inits=None, expect=None):
    """One single-node case: inputs `feeds` (name -> array, None for an omitted optional
    input), node inputs `inits` (name -> array) stored as initializers, expected outputs
    from the reference, cast to `out_types` where the reference returns a wider numpy type
    than the ONNX output type (np.sum of int32 is int64). `expect` (a list of arrays)
    replaces the reference's outputs where the reference fails or is wrong: the caller
    says why, with the evidence, beside it."""
    inits = inits or {}
    in_names = list(inits) + list(feeds)
    inputs = [helper.make_tensor_value_info(n, elem_type(v), v.shape)
              for n, v in feeds.items() if v is not None]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, [n if n in inits or feeds[n] is not None else ""
                                 for n in in_names], outs, **(attrs or {}))
    graph = helper.make_graph([node], name, inputs, [onnx.ValueInfoProto(name=o) for o in outs],
                              initializer=[numpy_helper.from_array(
                                  v.astype(object) if v.dtype.kind == "U" else v, n)
                                  for n, v in inits.items()])
    model = helper.make_model(graph, ir_version=10,
                              opset_imports=[helper.make_opsetid("", opset)])
    d = os.path.join(out, "test_" + name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    onnx.save(model, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")
    written.append(name)
    if skip:
        with open(os.path.join(d, "skip.txt"), "w") as f:
            f.write(skip + "\n")
        return
    given = {n: v for n, v in feeds.items() if v is not None}
    if expect is not None:
        got = expect
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ReferenceEvaluator(model).run(None, given)
    for i, (n, v) in enumerate(given.items()):
        write_tensor(os.path.join(ds, f"input_{i}.pb"), v, n)
    for i, v in enumerate(got):
        v = np.asarray(v)
        if out_types and out_types[i] is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = v.astype(out_types[i])
        write_tensor(os.path.join(ds, f"output_{i}.pb"), v, outs[i])


F64 = (1e-12, 1e-300)  # float64 computed in double: far below float32's 6e-8


def dtype_size(t):
    return np.dtype(t).itemsize


def bf16_types():
    try:
        import ml_dtypes
        return [ml_dtypes.bfloat16]
    except ImportError:  # pragma: no cover
        return []


def softmax_cases(out):
    for op in ("Softmax", "LogSoftmax"):
        # The reference applies opset 13's per-axis semantics at every opset; before 13
        # the spec flattens [axis:] into one row, so opset 11 is tested on 2-D input,
        # where the two agree.
        for opset in (11, 13):
            x = rng.uniform(-5, 5, (3, 4, 5) if opset >= 13 else (4, 5)).astype(np.float64)
            case(out, f"{op.lower()}_f64_random_op{opset}", op, {"x": x}, {"axis": 1},
                 opset=opset, tol=F64)
        # magnitudes beyond float32's range, equal per row so that nothing underflows
        big = np.array([[1e300] * 4, [-3e300] * 4, [5e38] * 4, [1e-310] * 4])
        case(out, f"{op.lower()}_f64_beyond_float32", op, {"x": big}, {"axis": -1},
             opset=13, tol=F64)
    x = np.array([[1e300, 1e299, -1e300, 0.0], [4e38, 3.9e38, 1.0, -1.0]])
    case(out, "softmax_f64_huge_spread", "Softmax", {"x": x}, {"axis": 1}, opset=13, tol=F64)
    # rows with a NaN, +inf, or only -inf are all NaN in the reference
    x = np.array([[np.nan, 1, 2], [np.inf, 1, 2], [-np.inf, -np.inf, -np.inf],
                  [-np.inf, 0, 1]], dtype=np.float32)
    for op in ("Softmax", "LogSoftmax"):
        case(out, f"{op.lower()}_nonfinite_rows", op, {"x": x}, {"axis": 1}, opset=13,
             tol=(1e-6, 1e-7))
        case(out, f"{op.lower()}_nonfinite_rows_f64", op, {"x": x.astype(np.float64)},
             {"axis": 1}, opset=13, tol=F64)


def float64_cases(out):
    """Ops that take float64 and must not pass it through float32 (the audit that found
    Softmax's round trip also found LayerNormalization's and Conv's)."""
    x = rng.randn(2, 3, 8) * 1e3 + 1e-3
    w, b = rng.randn(8), rng.randn(8)
    case(out, "layernorm_f64", "LayerNormalization", {"x": x, "w": w, "b": b},
         {"axis": -1}, opset=17, tol=F64)
    case(out, "rmsnorm_f64", "RMSNormalization", {"x": x, "w": w}, {"axis": 1}, opset=23,
         tol=F64)
    xc, wc, bc = rng.randn(1, 2, 6, 6), rng.randn(3, 2, 3, 3), rng.randn(3)
    case(out, "conv_f64", "Conv", {"x": xc, "w": wc, "b": bc}, {"pads": [1, 1, 1, 1]},
         opset=11, tol=F64)
    case(out, "conv_f64_grouped_gemm_shape", "Conv",
         {"x": rng.randn(2, 4, 5, 5), "w": rng.randn(8, 2, 3, 3), "b": None},
         {"group": 2, "strides": [2, 1]}, opset=11, tol=F64)
    a, m = rng.randn(3, 4, 5), rng.randn(5, 6)
    case(out, "matmul_f64", "MatMul", {"a": a, "b": m}, opset=13, tol=F64)
    case(out, "gemm_f64", "Gemm", {"a": rng.randn(4, 5), "b": rng.randn(6, 5), "c": rng.randn(6)},
         {"transB": 1, "alpha": 0.5, "beta": 2.0}, opset=13, tol=F64)
    case(out, "einsum_f64", "Einsum", {"a": rng.randn(2, 3, 4), "b": rng.randn(2, 4, 5)},
         {"equation": "bij,bjk->bik"}, opset=12, tol=F64)


def pow_cases(out):
    i32 = np.array([3, -3, 7, 2, 0, 1, -1, 12345], dtype=np.int32)
    e32 = np.array([40, 41, 23, 31, 5, 100, 33, 3], dtype=np.int32)
    case(out, "pow_int32_wraps", "Pow", {"x": i32, "y": e32}, opset=15)
    i64 = i32.astype(np.int64) * 1000003
    e64 = np.array([50, 41, 23, 63, 5, 100, 33, 7], dtype=np.int64)
    case(out, "pow_int64_wraps", "Pow", {"x": i64, "y": e64}, opset=15)
    for et in (np.int64, np.int8, np.uint8, np.int16, np.uint32):
        case(out, f"pow_int32_exponent_{np.dtype(et).name}", "Pow",
             {"x": i32, "y": e32.astype(et)}, opset=15)
        case(out, f"pow_int64_exponent_{np.dtype(et).name}", "Pow",
             {"x": i64, "y": e32.astype(et)}, opset=15)
    # numpy promotes int64 ** uint64 to float64: results in int64's range stay exact
    case(out, "pow_int64_exponent_uint64", "Pow",
         {"x": np.array([3, -2, 5, 7], dtype=np.int64),
          "y": np.array([30, 61, 20, 1], dtype=np.uint64)}, opset=15)
    # an integer base with a float exponent: power in double, truncated
    xf = np.array([2, 3, 10, 7, 1000], dtype=np.int32)
    case(out, "pow_int32_exponent_float", "Pow",
         {"x": xf, "y": np.array([0.5, 2.5, 3.0, -1.0, 3.0], dtype=np.float32)}, opset=15)
    case(out, "pow_int64_exponent_double", "Pow",
         {"x": xf.astype(np.int64), "y": np.array([0.5, 2.5, 9.0, -1.0, 6.0])}, opset=15)
    if X86:  # out of int32's range: numpy's astype gives the x86 instruction's INT32_MIN
        case(out, "pow_int32_exponent_float_out_of_range", "Pow",
             {"x": np.array([10, -10, 2], dtype=np.int32),
              "y": np.array([12.0, 11.0, 40.0], dtype=np.float32)}, opset=15)
    # numpy raises an 8- or 16-bit integer base with a float32 exponent in float32
    # (7 ** 11.0 is 1977326720, whose int8 is -128; in double it is 1977326743, -105),
    # with a float16 or bfloat16 exponent an 8-bit base in that type; the int8 of a
    # value beyond int32 is 0 (through int32's 0x80000000), the uint64 of 2^64 is 0 and
    # of 2^63 + 2^62 its own value. x86-64 only: elsewhere numpy's conversion saturates.
    skip = None if X86 else "numpy's out-of-range float-to-integer conversion is x86-64's"
    small = np.array([7, 3, 2, 5, 0, 1, 10, 2], dtype=np.int64)
    e = np.array([11, 5, 40, 9, 0, 3, 20, 7], dtype=np.float64)
    for bt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        for et in [np.float32, np.float64, np.float16] + bf16_types():
            if dtype_size(bt) == 1 and et not in (np.float32, np.float64, np.float16):
                continue  # ml_dtypes' own bfloat16-to-int8 conversion: out of range is 0
            name = f"pow_{np.dtype(bt).name}_exponent_{np.dtype(et).name}_converted"
            case(out, name, "Pow", {"x": small.astype(bt), "y": e.astype(et)}, opset=15,
                 skip=skip)
    for bt in (np.int8, np.uint8):  # a bfloat16 power: 5 ** 2.5 is 55.9, 56 in bfloat16
        for et in bf16_types():
            case(out, f"pow_{np.dtype(bt).name}_exponent_bfloat16", "Pow",
                 {"x": np.array([3, 2, 5, 10, 7], dtype=bt),
                  "y": np.array([4, 6, 2.5, 1.5, 2], dtype=et)}, opset=15)
    case(out, "pow_uint64_exponent_double_beyond_2p63", "Pow",
         {"x": np.array([2, 2, 3, 2], dtype=np.uint64), "y": np.array([64.0, 63.5, 40.0, 63])},
         opset=15, skip=skip)
    case(out, "pow_float_exponent_int64", "Pow",
         {"x": np.array([1.5, -2.0, 0.5, 10.0], dtype=np.float32),
          "y": np.array([3, 5, -2, 30], dtype=np.int64)}, opset=15, tol=(1e-6, 0))
    case(out, "pow_double_exponent_int32", "Pow",
         {"x": np.array([1.5, -2.0, 0.5, 10.0]), "y": np.array([3, 5, -2, 300], dtype=np.int32)},
         opset=15, tol=F64)
    case(out, "pow_float16_exponent_int8", "Pow",
         {"x": np.array([1.5, -2.0, 0.5, 3.0], dtype=np.float16),
          "y": np.array([3, 5, -2, 7], dtype=np.int8)}, opset=15, tol=(1e-3, 0))


def argm_cases(out):
    x = np.array([[1.0, np.nan, 3.0, np.nan, -1.0],
                  [5.0, 4.0, 5.0, 2.0, 5.0],
                  [np.nan, 0.0, 1.0, 2.0, np.nan],
                  [-np.inf, -np.inf, 0.0, np.inf, np.inf]])
    for op in ("ArgMax", "ArgMin"):
        for dt in (np.float32, np.float64, np.float16):
            for last in (0, 1):
                for axis in (0, 1):
                    case(out, f"{op.lower()}_nan_{np.dtype(dt).name}_axis{axis}_last{last}", op,
                         {"x": x.astype(dt)}, {"axis": axis, "select_last_index": last,
                                               "keepdims": 1 - axis}, opset=13)
        big = np.array([[2**62 + 1, 2**62, 2**62 + 1], [-(2**62) - 1, -(2**62), 3]],
                       dtype=np.int64)
        case(out, f"{op.lower()}_int64_beyond_2p53", op, {"x": big}, {"axis": 1}, opset=13)
        u = np.array([[2**63 + 5, 2**63 + 7, 1]], dtype=np.uint64)
        case(out, f"{op.lower()}_uint64_high", op, {"x": u}, {"axis": 1}, opset=13)


def reduce_cases(out):
    ops = ["ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceProd",
           "ReduceMean", "ReduceMax", "ReduceMin"]
    data = {
        np.int8: np.array([[100, 100, -128, 127], [-100, 90, 80, 70]], dtype=np.int8),
        np.uint8: np.array([[200, 200, 255, 3], [17, 18, 19, 250]], dtype=np.uint8),
        np.int32: np.array([[50000, 60000, -2**31, 2**31 - 1], [46341, 46341, 3, -7]],
                           dtype=np.int32),
        np.int64: np.array([[2**40, 3 * 2**40, -(2**63), 2**63 - 1], [3037000500, 7, -5, 1]],
                           dtype=np.int64),
        np.uint64: np.array([[2**63 + 1, 2**63 + 3, 2**64 - 1, 2], [2**32 + 1, 5, 6, 7]],
                            dtype=np.uint64),
    }
    for dt, x in data.items():
        name = np.dtype(dt).name
        for op in ops:
            # signed squares that wrap negative can make a negative sum, whose sqrt is
            # NaN; numpy's astype of NaN is the x86 conversion's "integer indefinite"
            skip = None
            if op == "ReduceL2" and name.startswith("int") and not X86:
                skip = "numpy's float-to-integer conversion of NaN is platform-specific"
            case(out, f"{op.lower()}_{name}_wraps", op, {"x": x, "axes": np.array([1])},
                 {"keepdims": 1}, opset=18, out_types=[dt], skip=skip)
    neg = np.array([[46341, 46341, 46341], [3, 4, 0]], dtype=np.int32)
    skip = None if X86 else "numpy's float-to-integer conversion of NaN is platform-specific"
    case(out, "reducel2_int32_negative_wrapped_sum", "ReduceL2",
         {"x": neg, "axes": np.array([1])}, {"keepdims": 0}, opset=18, out_types=[np.int32],
         skip=skip)


def reduce_float_cases(out):
    """Float reductions at the edges of float32: SumSquare and L2 square in float32 (a
    square beyond 3.4e38 is inf, one below 1e-45 is 0, as in numpy and onnxruntime), NaN
    and ±inf rows, and reductions over an empty axis (Sum 0, Prod 1, Max -inf and the
    type's least value, Min +inf and its greatest, Mean NaN: on an integer type
    numpy's conversion of NaN, INT_MIN on x86-64) with keepdims both ways."""
    big = np.array([[3e38, 3e38, 1.0], [1e20, 1e20, 1e-20], [1e19, 1e19, 1e19]],
                   dtype=np.float32)
    sub = np.array([[1e-40, 1e-39, 1e-38], [1e-20, 1e-23, 3e-22], [1.5e-19, 1e-19, 1e-45]],
                   dtype=np.float32)
    for op in ("ReduceL2", "ReduceSumSquare"):
        for name, x in (("huge", big), ("tiny", sub)):
            case(out, f"{op.lower()}_float32_{name}", op, {"x": x, "axes": np.array([1])},
                 {"keepdims": 0}, opset=18)
    # float16: the reference squares and sums in float16 (1e-4 squared is 0 there) and
    # gives 0.0030002594 for [1e-4, 3e-3, 6e-8]; the float64 norm of those float16 values
    # is 0.00300193, whose nearest float16 is 0.0030021667 (onnxruntime's answer too)
    h = np.array([[1e-4, 3e-3, 6e-8], [300.0, 400.0, 0.0]], dtype=np.float16)
    want = np.sqrt(np.sum(np.square(h.astype(np.float64)), axis=1)).astype(np.float16)
    case(out, "reducel2_float16_small_squares", "ReduceL2", {"x": h, "axes": np.array([1])},
         {"keepdims": 0}, opset=18, expect=[want])
    odd = np.array([[np.nan, 0.0, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, 2.0],
                    [np.inf, -np.inf, 1.0]], dtype=np.float32)
    ops = ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceL1",
           "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]
    for op in ops:
        case(out, f"{op.lower()}_nonfinite_rows", op, {"x": odd, "axes": np.array([1])},
             {"keepdims": 1}, opset=18)
    for op in ops + ["ReduceLogSum"]:
        for dt in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32,
                   np.int64, np.uint64):
            is_int = np.dtype(dt).kind in "iu"
            if is_int and op in ("ReduceLogSum", "ReduceLogSumExp"):
                continue  # the reference fails on integer LogSum and LogSumExp (np.log
                # into an integer array)
            skip = None
            if is_int and op == "ReduceMean" and not X86:
                skip = "numpy's float-to-integer conversion of NaN is platform-specific"
            for kd in (0, 1):
                case(out, f"{op.lower()}_empty_axis_{np.dtype(dt).name}_keepdims{kd}", op,
                     {"x": np.zeros((2, 0, 3), dtype=dt), "axes": np.array([1])},
                     {"keepdims": kd}, opset=18, out_types=[dt], skip=skip)


def variadic_cases(out):
    parts = [rng.randint(-9, 9, (2, k % 3 + 1)).astype(np.float32) for k in range(100)]
    case(out, "concat_100_inputs", "Concat", {f"x{k}": p for k, p in enumerate(parts)},
         {"axis": 1}, opset=13)
    same = {f"x{k}": rng.uniform(-1, 1, (3, 4)).astype(np.float32) for k in range(70)}
    for op in ("Sum", "Max", "Min", "Mean"):
        case(out, f"{op.lower()}_70_inputs", op, same, opset=13, tol=(1e-5, 1e-6))
    case(out, "split_20_outputs", "Split", {"x": np.arange(40, dtype=np.int64).reshape(2, 20)},
         {"axis": 1, "num_outputs": 20}, opset=18, n_out=20)


def new_op_cases(out):
    """The ops added with these cases, in the dtypes the backend node tests leave out."""
    try:
        import ml_dtypes
        bf16 = [ml_dtypes.bfloat16]
    except ImportError:  # pragma: no cover
        bf16 = []
    floats = [np.float64, np.float16] + bf16
    skip = None if X86 else "numpy's out-of-range float-to-integer conversion is x86-64's"
    tol = {np.float64: F64, np.float16: (2e-3, 1e-3)}
    x = rng.uniform(-0.95, 0.95, (3, 5))
    for op, attrs, data in [
            ("Tan", {}, x), ("Acos", {}, x), ("Asin", {}, x), ("Atan", {}, x * 4),
            ("Cosh", {}, x * 4), ("Sinh", {}, x * 4), ("Acosh", {}, 1 + np.abs(x) * 3),
            ("Asinh", {}, x * 4), ("Atanh", {}, x), ("Elu", {"alpha": 0.7}, x * 4),
            ("Selu", {}, x * 4), ("Celu", {"alpha": 1.5}, x * 4), ("Softsign", {}, x * 4),
            ("ThresholdedRelu", {"alpha": 0.25}, x * 2), ("Mish", {}, x * 6),
            ("Shrink", {"lambd": 0.3, "bias": 0.1}, x * 2)]:
        for dt in floats:
            name = f"{op.lower()}_{np.dtype(dt).name}"
            case(out, name, op, {"x": data.astype(dt)}, attrs, opset=22 if op != "Shrink" else 9,
                 tol=tol.get(dt, (1.6e-2, 1e-2)))
    for dt in (np.int8, np.int32, np.uint8, np.int64):
        xi = np.array([-5, -1, 0, 1, 2, 3, 100, 7], dtype=dt if dt != np.uint8 else np.int16)
        case(out, f"shrink_{np.dtype(dt).name}", "Shrink", {"x": np.abs(xi).astype(dt)
                                                            if dt == np.uint8 else xi},
             {"lambd": 1.5, "bias": 0.5}, opset=9)
    # integers at their limits: x + bias in double, converted back as numpy's astype
    # (int64 2^63 - 2 minus 0.7 is 2^63, whose int64 is INT64_MIN, not a saturated
    # INT64_MAX; uint64 2^64 - 2 minus 0.7 is 2^64, whose uint64 is 0)
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        info = np.iinfo(dt)
        lim = [info.min, info.min + 1, info.min + 2, 0, 1, 5, info.max - 2, info.max - 1,
               info.max]
        xi = np.array(lim, dtype=dt)
        for lambd, bias in ((2.5, 0.7), (0.0, -3.0), (1.5, 1.5)):
            if dt == np.uint32 and bias < 0:
                # 2^32 + 1 to uint32: numpy's scalar loop gives 1 (through int64), its
                # vector loop 0, chosen by the array's length: nothing to pin
                continue
            case(out, f"shrink_{np.dtype(dt).name}_limits_bias{bias:g}".replace(".", "p")
                 .replace("-", "m"), "Shrink", {"x": xi}, {"lambd": lambd, "bias": bias},
                 opset=9, skip=skip)
    hx = np.array([[1, 3, 3, 0], [np.nan, 1, np.nan, 2], [-1, -1, -2, -1]], dtype=np.float32)
    case(out, "hardmax_nan_and_ties", "Hardmax", {"x": hx}, {"axis": 1}, opset=13)
    case(out, "hardmax_f64_axis0", "Hardmax", {"x": hx.astype(np.float64)}, {"axis": 0}, opset=13)
    case(out, "hardmax_op11_2d", "Hardmax", {"x": hx[:2]}, {"axis": 1}, opset=11)
    for dt in (np.float64, np.float32):
        case(out, f"det_batched_{np.dtype(dt).name}", "Det",
             {"x": rng.randn(2, 3, 4, 4).astype(dt)}, opset=22,
             tol=F64 if dt == np.float64 else (1e-4, 1e-5))
    case(out, "det_singular", "Det", {"x": np.array([[1.0, 2.0], [2.0, 4.0]])}, opset=22,
         tol=(0.0, 1e-12))
    ints = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    for dt in ints:
        info = np.iinfo(dt)
        a = rng.randint(info.min, info.max, (3, 4), dtype=dt)
        b = rng.randint(info.min, info.max, (4,), dtype=dt)
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            case(out, f"{op.lower()}_{np.dtype(dt).name}", op, {"a": a, "b": b}, opset=18)
        case(out, f"bitwisenot_{np.dtype(dt).name}", "BitwiseNot", {"a": a}, opset=18)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        v = np.array([1, 5, 255, 77], dtype=dt)
        for d in ("LEFT", "RIGHT"):
            case(out, f"bitshift_op11_{d.lower()}_{np.dtype(dt).name}", "BitShift",
                 {"x": v, "y": np.array([1, 2, 3, 0], dtype=dt)}, {"direction": d}, opset=11)
    xs = rng.randint(0, 5, (2, 3, 4)).astype(np.float32)
    for axis in (None, 0, 1, -1):
        cond = np.array([True, False, True, True][: (xs.shape[axis] if axis is not None else 4)])
        attrs = {} if axis is None else {"axis": axis}
        for dt in (np.int64, np.float64, np.uint8, np.bool_):
            case(out, f"compress_axis{axis}_{np.dtype(dt).name}".replace("-", "m"), "Compress",
                 {"x": xs.astype(dt), "c": cond}, attrs, opset=11)
    for mode in ("DCR", "CRD"):
        for dt in (np.int64, np.float16, np.bool_):
            d = rng.randint(0, 9, (2, 8, 2, 3)).astype(dt)
            case(out, f"depthtospace_{mode.lower()}_{np.dtype(dt).name}", "DepthToSpace",
                 {"x": d}, {"blocksize": 2, "mode": mode}, opset=13)
            case(out, f"spacetodepth_{mode.lower()}_{np.dtype(dt).name}", "SpaceToDepth",
                 {"x": d.reshape(2, 2, 4, 6)}, {"blocksize": 2, "mode": mode}, opset=28)
    u = np.array([[2, 1, 2, 0], [2, 1, 2, 0], [1, 1, 1, 1], [2, 1, 2, 0]], dtype=np.int32)
    for dt in (np.int32, np.uint64, np.float64):
        for srt in (0, 1):
            case(out, f"unique_axis0_sorted{srt}_{np.dtype(dt).name}", "Unique",
                 {"x": u.astype(dt)}, {"axis": 0, "sorted": srt}, opset=11, n_out=4)
            # flattened, 1-D: the reference's unsorted path fails on an N-D input (numpy
            # 2 returns inverse indices in the input's shape)
            case(out, f"unique_flat_sorted{srt}_{np.dtype(dt).name}", "Unique",
                 {"x": u.reshape(-1).astype(dt)}, {"sorted": srt}, opset=11, n_out=4)
    case(out, "unique_axis1_sorted", "Unique", {"x": u}, {"axis": 1, "sorted": 1}, opset=11,
         n_out=4)
    case(out, "unique_nan_and_signed_zero", "Unique",
         {"x": np.array([np.nan, 1.0, -0.0, np.nan, 0.0, -1.0], dtype=np.float32)}, {},
         opset=11, n_out=4)


def exp_unit_cases(out):
    """Elu, Selu and Celu at the edges: -0, NaN, ±inf, subnormals, inputs whose expm1 is -1
    in float32. Celu(NaN) is NaN and Celu(-0) is -0 (max(0, x) + min(0, ...) as numpy
    evaluates it); the comparison does not see the sign of a zero, the NaN it does."""
    edge = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, -1e-45, -1e-40, -1e-30, -1e-8, -20,
                     -88, -104, -200, -1e30, 1e-40, 3.0, 1e30], dtype=np.float32)
    for dt in (np.float32, np.float64, np.float16):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = edge.astype(dt)
        n = np.dtype(dt).name
        t = {np.float32: (3e-7, 0), np.float64: F64, np.float16: (1e-3, 0)}[dt]
        case(out, f"elu_edges_{n}", "Elu", {"x": x}, {"alpha": 0.7}, opset=22, tol=t)
        case(out, f"selu_edges_{n}", "Selu", {"x": x}, {}, opset=22, tol=t)
        for alpha in (1.0, 1.5):
            case(out, f"celu_edges_{n}_alpha{alpha:g}".replace(".", "p"), "Celu", {"x": x},
                 {"alpha": alpha}, opset=12, tol=t)
    # Every float16 value. The reference computes float16 in float16: expm1 rounded to
    # float16, then alpha (rounded to float16) times it rounded again. That double
    # rounding is off by one unit in the subnormals: Elu(alpha=0.001) of x = -1500 * 2^-24
    # is -8.94030e-8 in float64, 1.49993 units of 2^-24, so -2^-24; the reference gives
    # -2 * 2^-24 (its alpha is 0.0010004, its product -8.944e-8, 1.5006 units). Expected
    # here: the float64 value rounded once to float16. Of the 65536 values the reference
    # misses it in 2126 (Elu 0.001), 4174 (Elu 0.7), 4905 (Selu), 0 (Celu); a float32
    # computation rounded to float16 (ours) in 0, 4, 776, 0, by one unit where float32's
    # rounding lands on a float16 tie: those two cases allow one unit.
    one_unit = (2.0 ** -10, 2.0 ** -24)
    allh = np.arange(65536, dtype=np.uint16).view(np.float16)
    xd = allh.astype(np.float64)
    for op, attrs, tol, f in [
            ("Elu", {"alpha": 0.001}, (0, 0), lambda a: np.where(xd > 0, xd, a * np.expm1(xd))),
            ("Elu", {"alpha": 0.7}, one_unit, lambda a: np.where(xd > 0, xd, a * np.expm1(xd))),
            ("Selu", {"alpha": 0.7, "gamma": 1.3}, one_unit,
             lambda a: np.where(xd > 0, xd, a * np.expm1(xd)) * np.float64(np.float32(1.3))),
            ("Celu", {"alpha": 0.25}, (0, 0),
             lambda a: np.where(xd > 0, xd, a * np.expm1(xd / a)))]:
        alpha = np.float64(np.float32(attrs["alpha"]))  # attributes are float32
        with np.errstate(all="ignore"):
            want = f(alpha).astype(np.float16)
        name = f"{op.lower()}_float16_all_alpha{attrs['alpha']:g}".replace(".", "p")
        case(out, name, op, {"x": allh}, attrs, opset=22 if op != "Celu" else 12, tol=tol,
             expect=[want])


def index_edge_cases(out):
    """NonZero, Unique, Gather, GatherElements and Flatten on strings, NaN, negative
    indices and zero-size shapes. Where the reference fails or is wrong the expected
    outputs are written here, each with the reason."""
    words = np.array([["a", "", "b"], ["", "", "c"]], dtype=object)
    case(out, "nonzero_string", "NonZero", {"x": words}, opset=13)  # "" is false
    case(out, "nonzero_string_all_empty", "NonZero",
         {"x": np.array(["", ""], dtype=object)}, opset=13)
    case(out, "nonzero_float_nan_signed_zero", "NonZero",
         {"x": np.array([[np.nan, -0.0], [0.0, 1e-45]], dtype=np.float32)}, opset=13)
    case(out, "nonzero_zero_size", "NonZero", {"x": np.zeros((0, 3), dtype=np.float32)},
         opset=13)
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    nanf = np.array([np.nan, 2, np.nan, 1, 2], dtype=np.float32)
    case(out, "unique_nan_sorted", "Unique", {"x": nanf}, {"sorted": 1}, opset=11, n_out=4)
    case(out, "unique_nan_unsorted", "Unique", {"x": nanf}, {"sorted": 0}, opset=11, n_out=4)
    case(out, "unique_axis_negative", "Unique",
         {"x": np.array([[1, 2, 1], [3, 4, 3]], dtype=np.int64)}, {"axis": -1, "sorted": 1},
         opset=11, n_out=4)
    case(out, "unique_zero_size", "Unique", {"x": np.zeros((0,), dtype=np.float32)},
         {"sorted": 1}, opset=11, n_out=4)
    # Rows equal with NaN in the same place are one row here, as NaNs are one value in
    # the flattened case (np.unique's equal_nan=True, which the reference follows there);
    # numpy's axis path compares rows with ==, where NaN != NaN, so the reference keeps
    # [nan, 1] twice: [[0, 2], [nan, 1], [nan, 1]]. (onnxruntime 1.31 answers
    # [[nan, 1]] with counts [3], dropping the row [0, 2].)
    xn = np.array([[np.nan, 1], [np.nan, 1], [0, 2]], dtype=np.float32)
    case(out, "unique_axis0_nan_rows", "Unique", {"x": xn}, {"axis": 0, "sorted": 1},
         opset=11, n_out=4, expect=[np.array([[0, 2], [np.nan, 1]], dtype=np.float32),
                                    i64(2, 0), i64(1, 1, 0), i64(1, 2)])
    # sorted = 0 along axis 1: the reference's unsorted path takes np.take(x, indices,
    # axis=0), rows instead of columns, and answers [[2, 1, 2], [3, 4, 3]]; the distinct
    # columns in order of first occurrence are [2, 3] and [1, 4] (onnxruntime agrees)
    xc = np.array([[2, 1, 2], [3, 4, 3]], dtype=np.int64)
    case(out, "unique_axis1_unsorted", "Unique", {"x": xc}, {"axis": 1, "sorted": 0},
         opset=11, n_out=4, expect=[np.array([[2, 1], [3, 4]], dtype=np.int64), i64(0, 1),
                                    i64(0, 1, 0), i64(2, 1)])
    # one output with sorted = 0: the reference returns np.unique's sorted values before
    # it reorders ([1, 3]); in order of first occurrence they are [3, 1]
    case(out, "unique_unsorted_one_output", "Unique",
         {"x": np.array([3, 1, 3], dtype=np.int32)}, {"sorted": 0}, opset=11,
         expect=[np.array([3, 1], dtype=np.int32)])
    # string slices along an axis: numpy's unique with axis refuses object arrays
    # (onnxruntime 1.31 gives these outputs)
    xs = np.array([["b", "a"], ["", "c"], ["b", "a"]], dtype=object)
    case(out, "unique_string_axis0", "Unique", {"x": xs}, {"axis": 0, "sorted": 1}, opset=11,
         n_out=4, expect=[np.array([["", "c"], ["b", "a"]], dtype=object), i64(1, 0),
                          i64(1, 0, 1), i64(1, 2)])
    w3 = np.array([["a", "bb", ""], ["d", "", "f"]], dtype=object)
    case(out, "gather_string_negative", "Gather", {"x": w3, "i": i64(-1, 0, -3)},
         {"axis": 1}, opset=13)
    case(out, "gather_string_negative_axis0", "Gather", {"x": w3, "i": i64(-1, -2)[:, None]},
         {"axis": 0}, opset=13)
    case(out, "gather_string_scalar_index", "Gather", {"x": w3, "i": np.array(-1)},
         {"axis": -1}, opset=13)
    case(out, "gather_string_no_index", "Gather", {"x": w3, "i": np.zeros((0,), np.int64)},
         {"axis": 1}, opset=13)
    case(out, "gather_int32_negative", "Gather",
         {"x": np.arange(6, dtype=np.float32).reshape(2, 3),
          "i": np.array([-1, -2], np.int32)}, {"axis": 1}, opset=13)
    case(out, "gather_elements_string_negative", "GatherElements",
         {"x": w3, "i": np.array([[-1, 0, 1], [1, -3, 2]])}, {"axis": 1}, opset=13)
    case(out, "gather_elements_string_negative_axis0", "GatherElements",
         {"x": w3, "i": np.array([[-1, 0, 1], [0, -2, -1]])}, {"axis": 0}, opset=13)
    x3 = np.arange(24).reshape(2, 3, 4)
    i3 = np.array([[[-1, 0, 1, 2]], [[0, 0, -2, 1]]])
    for dt in (np.int64, object):
        xv = x3.astype(str).astype(object) if dt is object else x3
        case(out, f"gather_elements_3d_{'string' if dt is object else 'int64'}",
             "GatherElements", {"x": xv, "i": i3}, {"axis": 1}, opset=13)
    # indices smaller than the data off the axis (the spec's output is indices' shape;
    # onnxruntime allows it and gives these values): the reference insists on equal
    # shapes and raises
    xf = np.arange(12, dtype=np.float32).reshape(3, 4)
    case(out, "gather_elements_smaller_indices", "GatherElements",
         {"x": xf, "i": np.array([[-1, 0], [1, 2]])}, {"axis": 1}, opset=13,
         expect=[np.array([[3, 0], [5, 6]], dtype=np.float32)])
    case(out, "gather_elements_smaller_indices_axis0", "GatherElements",
         {"x": xf, "i": np.array([[2, -1, 0]])}, {"axis": 0}, opset=13,
         expect=[np.array([[8, 9, 2]], dtype=np.float32)])
    # an axis longer than np.choose's 64 choices: the reference falls back to a 2-D path
    # that reads only the first index of each row and fails to reshape (onnxruntime
    # gives these values)
    xl = np.arange(200, dtype=np.float32).reshape(2, 100)
    il = np.array([[99, -1, 50], [0, 70, -100]])
    case(out, "gather_elements_long_axis", "GatherElements", {"x": xl, "i": il}, {"axis": 1},
         opset=13, expect=[np.take_along_axis(xl, il % 100, axis=1)])
    # zero-size dimensions: the reference reshapes to (prod(shape[:axis]), -1), which
    # numpy cannot resolve when prod(shape[:axis]) is 0 ([0, 3] at axis 1, [2, 0, 3] at
    # axis 2 or 3); the spec's shape, written for all of them, is (prod(shape[:axis]),
    # prod(shape[axis:])), onnxruntime's too
    for shape, axis in (((0, 3), 1), ((2, 0, 3), 2), ((2, 0, 3), 1), ((2, 0, 3), 0),
                        ((0, 3), 0), ((2, 0, 3), 3), ((2, 3, 0), -1)):
        a = axis + len(shape) if axis < 0 else axis
        want_shape = (int(np.prod(shape[:a])), int(np.prod(shape[a:])))
        tag = "x".join(map(str, shape)) + f"_axis{axis}".replace("-", "m")
        for dt, dn in ((np.float32, "float32"), (object, "string")):
            case(out, f"flatten_zero_size_{dn}_{tag}", "Flatten", {"x": np.zeros(shape, dt)},
                 {"axis": axis}, opset=13, expect=[np.zeros(want_shape, dt)])


def string_cases(out):
    """String tensors moved by the layout ops, compared by Equal, cast to and from numbers,
    read from initializers and Constant nodes."""
    words = np.array([["alpha", "", "gamma", "δέλτα"], ["ε", "zeta", "", "theta 8"],
                      ["alpha", "iota", "kappa", "λ"]], dtype=object)
    idx = np.array([[2, 0], [1, 1]], dtype=np.int64)
    case(out, "string_identity", "Identity", {"x": words}, opset=19)
    case(out, "string_reshape", "Reshape", {"x": words, "s": np.array([4, 3])}, opset=19)
    case(out, "string_flatten", "Flatten", {"x": words}, {"axis": 1}, opset=13)
    case(out, "string_squeeze", "Squeeze", {"x": words[None], "a": np.array([0])}, opset=13)
    case(out, "string_unsqueeze", "Unsqueeze", {"x": words, "a": np.array([1])}, opset=13)
    case(out, "string_transpose", "Transpose", {"x": words}, {"perm": [1, 0]}, opset=13)
    case(out, "string_slice", "Slice", {"x": words, "s": np.array([0, 3]), "e": np.array([3, 0]),
                                        "a": np.array([0, 1]), "t": np.array([2, -1])}, opset=13)
    case(out, "string_gather", "Gather", {"x": words, "i": idx}, {"axis": 0}, opset=13)
    case(out, "string_gather_axis1", "Gather", {"x": words, "i": np.array([3, -4])}, {"axis": 1},
         opset=13)
    case(out, "string_gather_elements", "GatherElements",
         {"x": words, "i": np.array([[0, 3], [2, 1], [1, 1]])}, {"axis": 1}, opset=13)
    case(out, "string_gather_nd", "GatherND", {"x": words, "i": np.array([[2, 3], [0, 0]])},
         opset=13)
    case(out, "string_concat", "Concat", {"a": words, "b": words[:1], "c": words[1:]},
         {"axis": 0}, opset=13)
    case(out, "string_split", "Split", {"x": words, "s": np.array([1, 3])}, {"axis": 1},
         opset=13, n_out=2)
    case(out, "string_expand", "Expand", {"x": words[:1], "s": np.array([2, 4])}, opset=13)
    case(out, "string_tile", "Tile", {"x": words, "r": np.array([1, 2])}, opset=13)
    case(out, "string_where", "Where", {"c": np.array([True, False, True, False]),
                                        "x": words, "y": words[::-1]}, opset=16)
    case(out, "string_compress", "Compress", {"x": words, "c": np.array([True, False, True])},
         {"axis": 0}, opset=11)
    case(out, "string_unique", "Unique", {"x": words.reshape(-1)}, {"sorted": 1}, opset=11,
         n_out=4)
    case(out, "string_unique_unsorted", "Unique", {"x": words.reshape(-1)}, {"sorted": 0},
         opset=11, n_out=4)
    case(out, "string_shape", "Shape", {"x": words}, opset=15)
    case(out, "string_equal", "Equal", {"a": words, "b": words[2:3]}, opset=19)
    # a vocabulary in an initializer, looked up by index
    vocab = np.array(["<unk>", "the", "ĉu", "日本語", ""], dtype=object)
    case(out, "string_initializer_gather", "Gather", {"i": np.array([[1, 3], [4, 0]])},
         {"axis": 0}, opset=13, inits={"vocab": vocab})
    case(out, "string_constant", "Constant", {}, {"value": numpy_helper.from_array(vocab, "v")},
         opset=13)
    case(out, "string_constant_value_strings", "Constant", {},
         {"value_strings": ["a", "", "ĉu"]}, opset=13)
    case(out, "string_constant_value_string", "Constant", {}, {"value_string": "日本"},
         opset=13)
    # numbers to strings: numpy's str of each type
    special = [0.0, -0.0, 1.0, 0.1, 1e-4, 9.99e-5, 1e-5, 123456789.0, 999999.0, 1e6, 1e15,
               1e16, 1.5e16, 3.4028235e38, 1e-45, 65504.0, 1234.5, 2.5e-7, 100.0, 1e3,
               np.nan, np.inf, -np.inf, -7.25, 16777217.0, 0.3]
    for dt in (np.float32, np.float64, np.float16):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = np.concatenate([np.array(special, dtype=dt),
                                (rng.randn(40) * 10.0 ** rng.randint(-8, 9, 40)).astype(dt)])
        case(out, f"cast_{np.dtype(dt).name}_to_string", "Cast", {"x": x},
             {"to": TensorProto.STRING}, opset=19)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        x = np.array([info.min, info.max, 0, 7, info.max // 3], dtype=dt)
        case(out, f"cast_{np.dtype(dt).name}_to_string", "Cast", {"x": x},
             {"to": TensorProto.STRING}, opset=19)
    case(out, "cast_bool_to_string", "Cast", {"x": np.array([True, False])},
         {"to": TensorProto.STRING}, opset=19)
    # strings to numbers: Python's float() and int()
    texts = np.array([" 1.5 ", "1_000", "1e400", "-1e-400", ".5", "5.", "+1.5", "NaN", "-nan",
                      "INF", "Infinity", "-iNf", "  inf\n", "0.1", "3.4028235e38", "1e-45",
                      "123456789", "-0", "2.5e-07", "65519"], dtype=object)
    for dt in (np.float32, np.float64, np.float16):
        case(out, f"cast_string_to_{np.dtype(dt).name}", "Cast", {"x": texts},
             {"to": helper.np_dtype_to_tensor_dtype(np.dtype(dt))}, opset=19)
    ints = np.array(["100", " 7 ", "-3", "+4", "1_0", "127", "-128", "0", "-0"], dtype=object)
    for dt in (np.int8, np.int16, np.int32, np.int64):
        case(out, f"cast_string_to_{np.dtype(dt).name}", "Cast", {"x": ints},
             {"to": helper.np_dtype_to_tensor_dtype(np.dtype(dt))}, opset=19)
    uints = np.array(["255", " 7 ", "+4", "1_0", "0", "-0"], dtype=object)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        case(out, f"cast_string_to_{np.dtype(dt).name}", "Cast", {"x": uints},
             {"to": helper.np_dtype_to_tensor_dtype(np.dtype(dt))}, opset=19)
    case(out, "cast_string_to_uint64_max", "Cast",
         {"x": np.array(["18446744073709551615", "9223372036854775808"], dtype=object)},
         {"to": TensorProto.UINT64}, opset=19)
    case(out, "cast_string_to_int64_limits", "Cast",
         {"x": np.array(["-9223372036854775808", "9223372036854775807"], dtype=object)},
         {"to": TensorProto.INT64}, opset=19)
    case(out, "cast_string_to_bool", "Cast",
         {"x": np.array(["True", "False", "", "0", "abc"], dtype=object)},
         {"to": TensorProto.BOOL}, opset=19)
    case(out, "string_concat_broadcast", "StringConcat",
         {"a": words, "b": np.array(["!", "", "ß", "\u2603"], dtype=object)}, opset=20)
    # round trip: float -> string -> float is the identity
    case(out, "castlike_string_to_float", "CastLike",
         {"x": np.array(["0.25", "-3e3"], dtype=object), "like": np.array([1.0], np.float32)},
         opset=19)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    softmax_cases(out)
    float64_cases(out)
    pow_cases(out)
    argm_cases(out)
    reduce_cases(out)
    reduce_float_cases(out)
    variadic_cases(out)
    new_op_cases(out)
    exp_unit_cases(out)
    index_edge_cases(out)
    string_cases(out)
    print(f"wrote {len(written)} reference cases to {out}")


if __name__ == "__main__":
    main()
