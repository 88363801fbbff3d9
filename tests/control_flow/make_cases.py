#!/usr/bin/env python3
"""Writes If / Loop / Scan test cases with onnxruntime's CPU results as the expected
outputs, in the layout of ONNX's backend node tests (run by build/tests/node-tests):

    OUT/<case>/model.onnx
    OUT/<case>/test_data_set_N/input_K.pb, output_K.pb   (several sets run on one session)
    OUT/<case>/tolerance.txt

usage: make_cases.py OUT_DIR

What the ONNX node tests leave out and these cover: subgraphs that read values of
enclosing graphs (also two levels up, through a body that does not mention them, and
values that only a subgraph reads, which must stay alive until the node runs), Loop
ended by its condition (scan outputs of unknown count), by its trip count alone, zero
iterations, loop-carried values that change shape every iteration or swap places, nested
loops, Scan along inner axes and backwards (inputs and outputs), Scan-8 with a batch and
sequence_lens. Several data sets per case run on one session: they reuse or re-record
the subgraph plans."""
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

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.RandomState(77)
written = []


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name + "_v"))


def model(nodes, inputs, outputs, opset=17, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # onnxruntime validates the model when it computes the expected outputs
    return m


def run_ort(m, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def save_case(out, name, m, feed_sets, tol=(1e-5, 1e-6)):
    d = os.path.join(out, "test_cf_" + name)
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    names = [i.name for i in m.graph.input]
    for k, feeds in enumerate(feed_sets):
        ds = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(ds)
        feeds = {n: np.asarray(v) for n, v in feeds.items()}
        for i, n in enumerate(names):
            onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(ds, f"input_{i}.pb"))
        for i, v in enumerate(run_ort(m, feeds)):
            onnx.save_tensor(numpy_helper.from_array(v, "y"), os.path.join(ds, f"output_{i}.pb"))
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")
    written.append(name)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def b(v):
    return np.array(v, dtype=np.bool_)


def i64(v):
    return np.array(v, dtype=np.int64)


# ---- If ---------------------------------------------------------------------------------

def if_outer(out):
    """Branches read x and t from the main graph; t = Relu(x) is read by nothing else, so
    only the If keeps it alive (an implicit input)."""
    then_b = helper.make_graph([helper.make_node("Add", ["t", "x"], ["r"]),
                                helper.make_node("Mul", ["r", "r"], ["o"])],
                               "then", [], [vi("o", F, None)])
    else_b = helper.make_graph([const("two", np.float32(2)),
                                helper.make_node("Mul", ["x", "two"], ["o2"]),
                                helper.make_node("Sub", ["o2", "t"], ["o3"]),
                                helper.make_node("Concat", ["o3", "o3"], ["o4"], axis=0)],
                               "else", [], [vi("o4", F, None)])
    nodes = [helper.make_node("Relu", ["x"], ["t"]),
             helper.make_node("Neg", ["x"], ["nx"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b),
             helper.make_node("Add", ["y", "y"], ["z"])]
    m = model(nodes, [vi("c", B, []), vi("x", F, ["n", 3])], [vi("z", F, None), vi("nx", F, None)])
    x = f32(2, 3)
    save_case(out, "if_outer", m, [{"c": b(True), "x": x}, {"c": b(False), "x": x},
                                   {"c": b(True), "x": f32(4, 3)}, {"c": b(True), "x": x}])


# ---- Loop -------------------------------------------------------------------------------

def loop_cond(out):
    """Ends when the body's condition turns false: the sum falls as 2 + 8 / 2^i, so the
    limits stop it after 1, 20 or (never) M iterations; the scan output's count is data."""
    body = helper.make_graph([
        const("half", np.float32(0.5)),
        helper.make_node("Mul", ["v_in", "half"], ["h"]),
        helper.make_node("Add", ["h", "bias"], ["v_out"]),  # bias: main graph
        helper.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "limit"], ["cond_out"]),  # limit: main graph
        helper.make_node("Identity", ["v_out"], ["scan"]),
    ], "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [4])],
        [vi("cond_out", B, []), vi("v_out", F, [4]), vi("scan", F, [4])])
    nodes = [helper.make_node("Loop", ["M", "c", "v0"], ["v", "scans"], body=body)]
    m = model(nodes, [vi("M", I64, []), vi("c", B, []), vi("v0", F, [4]), vi("bias", F, [4]),
                      vi("limit", F, [])], [vi("v", F, [4]), vi("scans", F, None)])
    bias = np.full(4, 0.25, np.float32)
    v0 = np.array([1, 2, 3, 4], np.float32)
    sets = [{"M": i64(100), "c": b(True), "v0": v0, "bias": bias, "limit": np.float32(lim)}
            for lim in (9.0, 2.00001, 1.0)]
    sets.append({"M": i64(3), "c": b(True), "v0": v0, "bias": bias, "limit": np.float32(1.0)})
    sets.append({"M": i64(100), "c": b(False), "v0": v0, "bias": bias, "limit": np.float32(9)})
    save_case(out, "loop_cond", m, sets)


def loop_count(out):
    """Trip count only ("" cond) and a body that passes its condition through: exactly M
    iterations (40 scan slices of a [2, 3] value written straight into the output); M = 0
    gives the initial values and an empty [0, 2, 3] scan output."""
    body = helper.make_graph([
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["acc_in", "w"], ["m"]),  # w: main graph
        helper.make_node("Add", ["m", "fi"], ["acc_out"]),
        helper.make_node("Identity", ["c_in"], ["cond_out"]),
        helper.make_node("Sigmoid", ["acc_out"], ["sc"]),
    ], "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [2, 3])],
        [vi("cond_out", B, []), vi("acc_out", F, [2, 3]), vi("sc", F, [2, 3])])
    nodes = [helper.make_node("Loop", ["M", "", "a0"], ["a", "sc_all"], body=body)]
    m = model(nodes, [vi("M", I64, []), vi("a0", F, [2, 3]), vi("w", F, [2, 3])],
              [vi("a", F, [2, 3]), vi("sc_all", F, [None, 2, 3])])
    a0, w = f32(2, 3), (0.9 * np.ones((2, 3))).astype(np.float32)
    save_case(out, "loop_count", m, [{"M": i64(n), "a0": a0, "w": w} for n in (40, 3, 0, 40)],
              tol=(1e-5, 1e-5))


def loop_m_body_cond(out):
    """Trip count and no cond input, but a body whose cond output turns false: the spec's
    table says it is ignored; onnxruntime (the oracle here) stops on it, as we do."""
    body = helper.make_graph([
        helper.make_node("Add", ["v_in", "one"], ["v_out"]),
        helper.make_node("Less", ["i", "stop"], ["cond_out"]),  # stop: main graph
    ], "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [2])],
        [vi("cond_out", B, []), vi("v_out", F, [2]), vi("v_in", F, [2])],
        initializer=[numpy_helper.from_array(np.float32(1), "one")])
    nodes = [helper.make_node("Loop", ["M", "", "v0"], ["v", "seen"], body=body)]
    m = model(nodes, [vi("M", I64, []), vi("v0", F, [2]), vi("stop", I64, [])],
              [vi("v", F, [2]), vi("seen", F, [None, 2])])
    v0 = np.float32([0, 10])
    save_case(out, "loop_m_body_cond", m, [{"M": i64(9), "v0": v0, "stop": i64(s)} for s in (4, 20, 0)])


def loop_grow_swap(out):
    """A carried value that grows every iteration (Concat: a new shape, so a new plan each
    time) and two that swap places (the body returns b_in as a and a_in + 1 as b)."""
    body = helper.make_graph([
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Unsqueeze", ["fi", "zero"], ["fi1"]),
        helper.make_node("Concat", ["g_in", "fi1"], ["g_out"], axis=0),
        helper.make_node("Identity", ["c_in"], ["cond_out"]),
        helper.make_node("Add", ["a_in", "one"], ["b_out"]),
    ], "body", [vi("i", I64, []), vi("c_in", B, []), vi("g_in", F, [None]), vi("a_in", F, [2]),
                vi("b_in", F, [2])],
        [vi("cond_out", B, []), vi("g_out", F, [None]), vi("b_in", F, [2]), vi("b_out", F, [2])],
        initializer=[numpy_helper.from_array(i64([0]), "zero"),
                     numpy_helper.from_array(np.float32(1), "one")])
    nodes = [helper.make_node("Loop", ["M", "c", "g0", "a0", "b0"], ["g", "a", "bb"], body=body)]
    m = model(nodes, [vi("M", I64, []), vi("c", B, []), vi("g0", F, [None]), vi("a0", F, [2]),
                      vi("b0", F, [2])], [vi("g", F, [None]), vi("a", F, [2]), vi("bb", F, [2])])
    sets = [{"M": i64(n), "c": b(True), "g0": f32(k), "a0": np.float32([1, 2]),
             "b0": np.float32([10, 20])} for n, k in ((7, 1), (20, 3), (7, 1), (1, 0))]
    save_case(out, "loop_grow_swap", m, sets)


def loop_nested(out):
    """A Loop inside a Loop inside which an If reads `scale` from the main graph, which
    neither loop body mentions, and `i` from the outer body."""
    then_b = helper.make_graph([helper.make_node("Mul", ["x_in", "scale"], ["t"])], "then", [],
                               [vi("t", F, None)])
    else_b = helper.make_graph([helper.make_node("Cast", ["i"], ["fi"], to=F),
                                helper.make_node("Add", ["x_in", "fi"], ["e"])], "else", [],
                               [vi("e", F, None)])
    inner = helper.make_graph([
        helper.make_node("Identity", ["c2"], ["c2o"]),
        helper.make_node("Mod", ["j", "two"], ["jm"]),
        helper.make_node("Equal", ["jm", "zero"], ["even"]),
        helper.make_node("If", ["even"], ["x_out"], then_branch=then_b, else_branch=else_b),
    ], "inner", [vi("j", I64, []), vi("c2", B, []), vi("x_in", F, [3])],
        [vi("c2o", B, []), vi("x_out", F, [3])])
    outer = helper.make_graph([
        helper.make_node("Identity", ["c1"], ["c1o"]),
        helper.make_node("Loop", ["K", "", "y_in"], ["y_out"], body=inner),
        helper.make_node("ReduceMax", ["y_out"], ["mx"], keepdims=0),
    ], "outer", [vi("i", I64, []), vi("c1", B, []), vi("y_in", F, [3])],
        [vi("c1o", B, []), vi("y_out", F, [3]), vi("mx", F, [])],
        initializer=[numpy_helper.from_array(i64(2), "two"), numpy_helper.from_array(i64(0), "zero")])
    nodes = [helper.make_node("Loop", ["M", "", "y0"], ["y", "mxs"], body=outer)]
    m = model(nodes, [vi("M", I64, []), vi("K", I64, []), vi("y0", F, [3]), vi("scale", F, [])],
              [vi("y", F, [3]), vi("mxs", F, [None])])
    y0 = np.float32([0.5, -1, 2])
    sets = [{"M": i64(m_), "K": i64(k), "y0": y0, "scale": np.float32(s)}
            for m_, k, s in ((3, 4, 0.5), (5, 2, -1.5), (2, 0, 2.0))]
    save_case(out, "loop_nested", m, sets)


# ---- Scan -------------------------------------------------------------------------------

def scan_axes(out):
    """Two scan inputs along axis 1 (one backwards), outputs stacked along axis 1 and
    along the last axis backwards; the body reads w from the main graph."""
    body = helper.make_graph([
        helper.make_node("Mul", ["a_t", "w"], ["aw"]),
        helper.make_node("Add", ["s_in", "aw"], ["s1"]),
        helper.make_node("Sub", ["s1", "b_t"], ["s_out"]),
        helper.make_node("Tanh", ["s_out"], ["o1"]),
        helper.make_node("Mul", ["a_t", "b_t"], ["o2"]),
    ], "body", [vi("s_in", F, [2, 3]), vi("a_t", F, [2, 3]), vi("b_t", F, [2, 3])],
        [vi("s_out", F, [2, 3]), vi("o1", F, [2, 3]), vi("o2", F, [2, 3])])
    nodes = [helper.make_node("Scan", ["s0", "a", "bb"], ["s", "y1", "y2"], body=body,
                              num_scan_inputs=2, scan_input_axes=[1, 1],
                              scan_input_directions=[0, 1], scan_output_axes=[1, -1],
                              scan_output_directions=[0, 1])]
    m = model(nodes, [vi("s0", F, [2, 3]), vi("a", F, [2, "T", 3]), vi("bb", F, [2, "T", 3]),
                      vi("w", F, [3])], [vi("s", F, None), vi("y1", F, None), vi("y2", F, None)],
              opset=16)
    sets = [{"s0": f32(2, 3), "a": f32(2, t, 3), "bb": f32(2, t, 3), "w": f32(3)} for t in (5, 1, 5)]
    save_case(out, "scan_axes", m, sets, tol=(1e-5, 1e-5))


def scan8_batch(out):
    """Scan-8: batch axis first, sequence_lens per row (rows past it stay zero), an input
    scanned backwards."""
    body = helper.make_graph([
        helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
        helper.make_node("Mul", ["s_out", "x_t"], ["y_t"]),
    ], "body", [vi("s_in", F, [2]), vi("x_t", F, [2])], [vi("s_out", F, [2]), vi("y_t", F, [2])])
    n = helper.make_node("Scan", ["lens", "s0", "x"], ["s", "y"], num_scan_inputs=1, body=body,
                         directions=[1])
    m = model([n], [vi("lens", I64, [3]), vi("s0", F, [3, 2]), vi("x", F, [3, 4, 2])],
              [vi("s", F, [3, 2]), vi("y", F, [3, 4, 2])], opset=8)
    x = f32(3, 4, 2)
    sets = [{"lens": i64(l), "s0": f32(3, 2), "x": x} for l in ([4, 1, 3], [1, 4, 2], [4, 4, 4])]
    save_case(out, "scan8_batch", m, sets)
    n2 = helper.make_node("Scan", ["", "s0", "x"], ["s", "y"], num_scan_inputs=1, body=body)
    m2 = model([n2], [vi("s0", F, [3, 2]), vi("x", F, [3, 4, 2])],
               [vi("s", F, [3, 2]), vi("y", F, [3, 4, 2])], opset=8)
    save_case(out, "scan8_nolens", m2, [{"s0": f32(3, 2), "x": x}])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for make in (if_outer, loop_cond, loop_count, loop_m_body_cond, loop_grow_swap, loop_nested, scan_axes,
                 scan8_batch):
        make(out)
    print(f"wrote {len(written)} control-flow cases to {out}")


if __name__ == "__main__":
    main()
