#!/usr/bin/env python3
"""Writes the small ONNX graphs the C tests run (executor, session API, bad input).

Usage: python3 make_test_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name):
    onnx.save(model, os.path.join(out, name))


def model_of(nodes, inputs, outputs, inits=(), opset=21, extra_opsets=(), check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = 10
    if check:
        onnx.checker.check_model(m)
    return m


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    F = TensorProto.FLOAT

    # chain: y = ((x + w) * 2 - 1), with a symbolic batch dim shared by x and z.
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    two = numpy_helper.from_array(np.array(2, dtype=np.float32), "two")
    one = numpy_helper.from_array(np.array(1, dtype=np.float32), "one")
    nodes = [
        helper.make_node("Add", ["x", "w"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "two"], ["b"], name="mul"),
        helper.make_node("Sub", ["b", "one"], ["c"], name="sub"),
        helper.make_node("Add", ["c", "z"], ["y"], name="add_z"),
    ]
    save(model_of(nodes,
                  [helper.make_tensor_value_info("x", F, ["batch", 4]),
                   helper.make_tensor_value_info("z", F, ["batch", 4])],
                  [helper.make_tensor_value_info("y", F, ["batch", 4])],
                  [w, two, one]), out, "chain.onnx")

    # cycle: a = Relu(b), b = Relu(a)
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second"),
             helper.make_node("Add", ["x", "b"], ["y"], name="out")]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, [2])],
                  [helper.make_tensor_value_info("y", F, [2])], check=False), out, "cycle.onnx")

    # unknown op in the default domain, and an op from a domain we do not implement
    nodes = [helper.make_node("FrobnicateX", ["x"], ["y"], name="weird")]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, [2])],
                  [helper.make_tensor_value_info("y", F, [2])], check=False), out,
         "unknown_op.onnx")
    nodes = [helper.make_node("Foo", ["x"], ["y"], name="custom", domain="org.example")]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, [2])],
                  [helper.make_tensor_value_info("y", F, [2])],
                  extra_opsets=[helper.make_opsetid("org.example", 1)], check=False), out,
         "unknown_domain.onnx")

    # a dangling reference
    nodes = [helper.make_node("Add", ["x", "nowhere"], ["y"], name="dangling")]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, [2])],
                  [helper.make_tensor_value_info("y", F, [2])], check=False), out,
         "dangling.onnx")

    # external data beside the model, memory-mapped; nodes out of order on purpose
    big = numpy_helper.from_array(np.linspace(-1, 1, 1024, dtype=np.float32).reshape(256, 4), "big")
    nodes = [helper.make_node("MatMul", ["x", "big_t"], ["y"], name="mm"),
             helper.make_node("Transpose", ["big"], ["big_t"], name="tr")]
    m = model_of(nodes, [helper.make_tensor_value_info("x", F, [1, 4])],
                 [helper.make_tensor_value_info("y", F, [1, 256])], [big], check=False)
    onnx.save(m, os.path.join(out, "external.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="external.bin", size_threshold=0)
    # strings: a vocabulary initializer, lookups, a passthrough output, numbers as text
    S = TensorProto.STRING
    vocab = numpy_helper.from_array(np.array(["<unk>", "ĉu", ""], dtype=object), "vocab")
    nodes = [helper.make_node("Gather", ["words", "idx"], ["picked"], name="pick"),
             helper.make_node("Concat", ["picked", "vocab"], ["joined"], name="join", axis=0),
             helper.make_node("Slice", ["vocab", "zero", "one"], ["vocab_head"], name="head"),
             helper.make_node("Equal", ["picked", "vocab_head"], ["same"], name="eq"),
             helper.make_node("Cast", ["x"], ["text"], name="fmt", to=S)]
    zero = numpy_helper.from_array(np.array([0], dtype=np.int64), "zero")
    one1 = numpy_helper.from_array(np.array([1], dtype=np.int64), "one")
    save(model_of(nodes,
                  [helper.make_tensor_value_info("words", S, ["n"]),
                   helper.make_tensor_value_info("idx", TensorProto.INT64, ["m"]),
                   helper.make_tensor_value_info("x", F, [3])],
                  [helper.make_tensor_value_info("joined", S, [None]),
                   helper.make_tensor_value_info("same", TensorProto.BOOL, [None]),
                   helper.make_tensor_value_info("text", S, [3]),
                   helper.make_tensor_value_info("words", S, ["n"])],
                  [vocab, zero, one1]), out, "strings.onnx")

    # memory: a chain of elementwise and reshaping ops over one large tensor whose size
    # comes from the input `shape`; in place, the chain needs one tensor's bytes
    I64 = TensorProto.INT64
    half = numpy_helper.from_array(np.array([0.5], dtype=np.float32), "half")
    flat = numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat")
    axis0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"], value=half),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Neg", ["r"], ["n"]),
             helper.make_node("Mul", ["n", "two"], ["m"]),
             helper.make_node("Sigmoid", ["m"], ["sg"]),
             helper.make_node("Exp", ["sg"], ["e"]),
             helper.make_node("Reshape", ["e", "flat"], ["f"]),
             helper.make_node("Add", ["f", "f"], ["a"]),
             helper.make_node("Unsqueeze", ["a", "axis0"], ["u"]),
             helper.make_node("Cast", ["u"], ["k"], to=F),
             helper.make_node("ReduceSum", ["k"], ["sum"], keepdims=0)]
    save(model_of(nodes, [helper.make_tensor_value_info("shape", I64, [2])],
                  [helper.make_tensor_value_info("sum", F, [])], [two, flat, axis0]), out,
         "big_chain.onnx")

    # in place must wait for a value's last reader: a is read again after Neg and Add
    nodes = [helper.make_node("Exp", ["x"], ["a"]),
             helper.make_node("Neg", ["a"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["c"]),
             helper.make_node("Sigmoid", ["c"], ["d"]),
             helper.make_node("Mul", ["d", "a"], ["y"])]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, ["n"])],
                  [helper.make_tensor_value_info("y", F, ["n"])]), out, "inplace_guard.onnx")

    # a data-dependent shape: NonZero gives a [2, k] that Add either matches (k = 3: in
    # place, and the plan records it) or broadcasts (k = 1: in place would overlap rows)
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Cast", ["nz"], ["a"], to=F),
             helper.make_node("Add", ["a", "y"], ["o"]),
             helper.make_node("Neg", ["o"], ["z"])]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, [2, 3]),
                          helper.make_tensor_value_info("y", F, [2, 3])],
                  [helper.make_tensor_value_info("z", F, [2, 3])]), out, "inplace_nonzero.onnx")

    # Loop: M iterations (the body passes cond through), a carried [4] value that reads
    # `w` from the main graph, and a scan output
    B = TensorProto.BOOL
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Mul", ["v_in", "w"], ["p"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["p", "fi"], ["v_out"]),
         helper.make_node("Relu", ["v_out"], ["s"])],
        "body", [helper.make_tensor_value_info("i", I64, []),
                 helper.make_tensor_value_info("c_in", B, []),
                 helper.make_tensor_value_info("v_in", F, [4])],
        [helper.make_tensor_value_info("c_out", B, []),
         helper.make_tensor_value_info("v_out", F, [4]),
         helper.make_tensor_value_info("s", F, [4])])
    nodes = [helper.make_node("Loop", ["M", "", "v0"], ["v", "scan"], body=body, name="loop")]
    save(model_of(nodes, [helper.make_tensor_value_info("M", I64, []),
                          helper.make_tensor_value_info("v0", F, [4]),
                          helper.make_tensor_value_info("w", F, [4])],
                  [helper.make_tensor_value_info("v", F, [4]),
                   helper.make_tensor_value_info("scan", F, [None, 4])], opset=17), out,
         "loop.onnx")
    # a Loop with neither a trip count nor a condition would never end
    nodes = [helper.make_node("Loop", ["", "", "v0"], ["v", "scan"], body=body, name="forever")]
    save(model_of(nodes, [helper.make_tensor_value_info("v0", F, [4]),
                          helper.make_tensor_value_info("w", F, [4])],
                  [helper.make_tensor_value_info("v", F, [4]),
                   helper.make_tensor_value_info("scan", F, [None, 4])], opset=17, check=False),
         out, "loop_forever.onnx")

    # Prepared kernel state (MatMulNBits, int4, accuracy_level 4): "small" (K=80 ends
    # inside a block, N=37 is not a multiple of the 16-column panel) with zero points;
    # "big" (weights in external data, large enough for whole pages to be released);
    # "shared" reads the big weights too but from an Identity, so they stay mapped; and
    # an If whose then-branch has a MatMulNBits over the subgraph's own initializers.
    rng = np.random.default_rng(7)
    MS = "com.microsoft"

    def nbits_inits(prefix, n, k, zp):
        kb = (k + 31) // 32
        inits = [numpy_helper.from_array(rng.integers(0, 256, (n, kb, 16), dtype=np.uint8),
                                         prefix + "_B"),
                 numpy_helper.from_array((rng.random((n, kb)) * 0.1 + 0.01).astype(np.float32),
                                         prefix + "_S")]
        if zp:
            inits.append(numpy_helper.from_array(
                rng.integers(0, 256, (n, (kb + 1) // 2), dtype=np.uint8), prefix + "_Z"))
        return inits

    def nbits_node(a, prefix, n, k, zp, y):
        ins = [a, prefix + "_B", prefix + "_S"] + ([prefix + "_Z"] if zp else [])
        return helper.make_node("MatMulNBits", ins, [y], domain=MS, K=k, N=n, bits=4,
                                block_size=32, accuracy_level=4, name=prefix)

    then = helper.make_graph(
        [nbits_node("a", "sub", 24, 80, False, "t")], "then", [],
        [helper.make_tensor_value_info("t", F, ["m", 24])], initializer=nbits_inits("sub", 24, 80, False))
    other = helper.make_graph(
        [helper.make_node("Constant", [], ["e"], value=numpy_helper.from_array(
            np.zeros((1, 24), np.float32)))], "else", [],
        [helper.make_tensor_value_info("e", F, [1, 24])])
    nodes = [nbits_node("a", "small", 37, 80, True, "y_small"),
             nbits_node("a256", "big", 300, 256, False, "y_big"),
             nbits_node("a256", "shared", 40, 256, False, "y_shared"),
             helper.make_node("Identity", ["shared_B"], ["shared_copy"]),
             helper.make_node("If", ["cond"], ["y_sub"], then_branch=then, else_branch=other)]
    inits = (nbits_inits("small", 37, 80, True) + nbits_inits("big", 300, 256, False) +
             nbits_inits("shared", 40, 256, False))
    m = model_of(nodes, [helper.make_tensor_value_info("a", F, ["m", 80]),
                         helper.make_tensor_value_info("a256", F, ["m", 256]),
                         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                 [helper.make_tensor_value_info("y_small", F, ["m", 37]),
                  helper.make_tensor_value_info("y_big", F, ["m", 300]),
                  helper.make_tensor_value_info("y_shared", F, ["m", 40]),
                  helper.make_tensor_value_info("shared_copy", TensorProto.UINT8, [40, 8, 16]),
                  helper.make_tensor_value_info("y_sub", F, [None, 24])],
                 inits, extra_opsets=[helper.make_opsetid(MS, 1)])
    onnx.save(m, os.path.join(out, "nbits_prepared.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="nbits_prepared.bin", size_threshold=0)

    # One activation read by several prepacked MatMulNBits (K = 64): its quantization is
    # shared by those with equal parameters. a = x + x is an intermediate (the same arena
    # bytes every run). In file order: p1 makes it, p2 reuses it, p3 (block 16), p4
    # (accuracy_level 0: three digit rows) and p5 (zero points) each make their own, p6
    # makes p1's again and p7 (the last reader) reuses it. The Loop's body doubles v each
    # iteration and reads it with two equal products: each iteration's must be its own.
    def nbits_any(a, prefix, n, k, y, block=32, level=4, zp=False):
        kb = (k + block - 1) // block
        inits = [numpy_helper.from_array(
                     rng.integers(0, 256, (n, kb, block // 2), dtype=np.uint8), prefix + "_B"),
                 numpy_helper.from_array((rng.random((n, kb)) * 0.1 + 0.01).astype(np.float32),
                                         prefix + "_S")]
        if zp:
            inits.append(numpy_helper.from_array(
                rng.integers(0, 256, (n, (kb + 1) // 2), dtype=np.uint8), prefix + "_Z"))
        node = helper.make_node("MatMulNBits", [a] + [t.name for t in inits], [y], domain=MS,
                                K=k, N=n, bits=4, block_size=block, accuracy_level=level,
                                name=prefix)
        return node, inits

    specs = [("p1", 40, {}), ("p2", 24, {}), ("p3", 24, {"block": 16}), ("p4", 8, {"level": 0}),
             ("p5", 16, {"zp": True}), ("p6", 24, {}), ("p7", 40, {})]
    nodes, inits, outs = [helper.make_node("Add", ["x", "x"], ["a"], name="twice")], [], []
    for name, n, kw in specs:
        node, ini = nbits_any("a", name, n, 64, "y_" + name, **kw)
        nodes.append(node)
        inits += ini
        outs.append(helper.make_tensor_value_info("y_" + name, F, ["m", n]))
    body_nodes = [helper.make_node("Identity", ["cond"], ["cond_out"]),
                  helper.make_node("Add", ["v", "v"], ["v_out"])]
    body_inits = []
    for name, n in (("l1", 24), ("l2", 40)):
        node, ini = nbits_any("v_out", name, n, 64, "s_" + name)
        body_nodes.append(node)
        body_inits += ini
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", F, ["m", 64])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, ["m", 64]),
         helper.make_tensor_value_info("s_l1", F, ["m", 24]),
         helper.make_tensor_value_info("s_l2", F, ["m", 40])], initializer=body_inits)
    nodes.append(helper.make_node("Loop", ["trips", "", "x"], ["v_end", "z_l1", "z_l2"],
                                  body=body, name="loop"))
    outs += [helper.make_tensor_value_info("z_l1", F, [None, "m", 24]),
             helper.make_tensor_value_info("z_l2", F, [None, "m", 40])]
    m = model_of(nodes, [helper.make_tensor_value_info("x", F, ["m", 64]),
                         helper.make_tensor_value_info("trips", TensorProto.INT64, [])],
                 outs, inits, extra_opsets=[helper.make_opsetid(MS, 1)])
    onnx.save(m, os.path.join(out, "nbits_shared.onnx"))

    # Prepared float32 weights: MatMul with a constant [1, K, N] B over a batched A (wm,
    # which a Neg reads too, so its pages stay), Gemm with transB, alpha, beta and a bias
    # row (wg, released), and a MatMul whose B is computed (not prepared). K = 70 and
    # N = 45 leave partial panels.
    wm = numpy_helper.from_array(rng.standard_normal((1, 70, 45)).astype(np.float32), "wm")
    wg = numpy_helper.from_array(rng.standard_normal((45, 70)).astype(np.float32), "wg")
    cg = numpy_helper.from_array(rng.standard_normal((45,)).astype(np.float32), "cg")
    nodes = [helper.make_node("MatMul", ["x", "wm"], ["ym"], name="mm"),
             helper.make_node("Gemm", ["x2", "wg", "cg"], ["yg"], name="gemm", transB=1,
                              alpha=0.5, beta=2.0),
             helper.make_node("Neg", ["wm"], ["nwm"]),
             helper.make_node("MatMul", ["x2", "nwm"], ["yd"], name="dynamic")]
    m = model_of(nodes, [helper.make_tensor_value_info("x", F, [2, "m", 70]),
                         helper.make_tensor_value_info("x2", F, ["m", 70])],
                 [helper.make_tensor_value_info("ym", F, [2, "m", 45]),
                  helper.make_tensor_value_info("yg", F, ["m", 45]),
                  helper.make_tensor_value_info("yd", F, [1, "m", 45])], [wm, wg, cg])
    onnx.save(m, os.path.join(out, "gemm_prepared.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="gemm_prepared.bin", size_threshold=0)

    # rows: what a row selection (og_session_run_rows) may prune. mm1's output feeds a
    # ReduceMean over the sequence (not row-wise), so mm1 and mean run whole and add reads
    # both gathered (mean's [batch, 1, 8] by broadcast); add, norm, mm2 and bias then run
    # on the selected rows. scores multiplies by a computed matrix: never pruned.
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 6)).astype(np.float32), "w2")
    gm = numpy_helper.from_array(rng.standard_normal((8,)).astype(np.float32), "gm")
    bias = numpy_helper.from_array(rng.standard_normal((6,)).astype(np.float32), "bias")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("ReduceMean", ["h"], ["m"], name="mean", axes=[1], keepdims=1),
             helper.make_node("Add", ["h", "m"], ["y"], name="add"),
             helper.make_node("SimplifiedLayerNormalization", ["y", "gm"], ["normed"],
                              name="norm", axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["normed", "w2"], ["z"], name="mm2"),
             helper.make_node("Add", ["z", "bias"], ["logits"], name="bias"),
             helper.make_node("Transpose", ["h"], ["ht"], name="tr", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["h", "ht"], ["scores"], name="scores"),
             helper.make_node("Relu", ["h"], ["raw"], name="relu")]
    # raw declares no shape: its rows are not known before the run (computed whole)
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, ["batch", "seq", 8])],
                  [helper.make_tensor_value_info("logits", F, ["batch", "seq", 6]),
                   helper.make_tensor_value_info("normed", F, ["batch", "seq", 8]),
                   helper.make_tensor_value_info("scores", F, ["batch", "seq", "seq"]),
                   helper.make_tensor_value_info("raw", F, None)],
                  [w1, w2, gm, bias], opset=17, check=False), out, "rows.onnx")

    # silu_gate: the executor's SiLU-gate fusion (backends/native/fuse.h). y1 and y2 (both
    # operand orders, u broadcast over rows) are fused; y3 is not (its sigmoid is also a
    # graph output), nor y4 (its product is read twice), nor y5 (Sigmoid of another value
    # than the one multiplied). Declared float; tests also run the float16 copy.
    for name, dt in (("silu_gate.onnx", F), ("silu_gate_f16.onnx", TensorProto.FLOAT16)):
        nodes = [helper.make_node("Sigmoid", ["x"], ["s1"], name="sig1"),
                 helper.make_node("Mul", ["x", "s1"], ["g1"], name="act1"),
                 helper.make_node("Mul", ["g1", "u"], ["y1"], name="gate1"),
                 helper.make_node("Sigmoid", ["u"], ["s2"], name="sig2"),
                 helper.make_node("Mul", ["s2", "u"], ["g2"], name="act2"),
                 helper.make_node("Mul", ["ub", "g2"], ["y2"], name="gate2"),
                 helper.make_node("Sigmoid", ["x"], ["s3"], name="sig3"),
                 helper.make_node("Mul", ["x", "s3"], ["g3"], name="act3"),
                 helper.make_node("Mul", ["g3", "u"], ["y3"], name="gate3"),
                 helper.make_node("Sigmoid", ["u"], ["s4"], name="sig4"),
                 helper.make_node("Mul", ["u", "s4"], ["g4"], name="act4"),
                 helper.make_node("Mul", ["g4", "x"], ["y4"], name="gate4"),
                 helper.make_node("Add", ["g4", "x"], ["z4"], name="add4"),
                 helper.make_node("Sigmoid", ["u"], ["s5"], name="sig5"),
                 helper.make_node("Mul", ["x", "s5"], ["g5"], name="act5"),
                 helper.make_node("Mul", ["g5", "u"], ["y5"], name="gate5")]
        outs = ["y1", "y2", "y3", "s3", "y4", "z4", "y5"]
        save(model_of(nodes, [helper.make_tensor_value_info("x", dt, ["n", 37]),
                              helper.make_tensor_value_info("u", dt, ["n", 37]),
                              helper.make_tensor_value_info("ub", dt, [37])],
                      [helper.make_tensor_value_info(o, dt, ["n", 37]) for o in outs]),
             out, name)
    # silu_gate_if: a fusable gate beside an If whose branches read h, a value the main
    # graph computes and nothing else reads: the rewritten graph must still see that read.
    br_t = helper.make_graph([helper.make_node("Add", ["h", "h"], ["zt"], name="twice")],
                             "then", [], [helper.make_tensor_value_info("zt", F, ["n", 37])])
    br_e = helper.make_graph([helper.make_node("Sub", ["h", "u"], ["ze"], name="less")],
                             "else", [], [helper.make_tensor_value_info("ze", F, ["n", 37])])
    nodes = [helper.make_node("Add", ["x", "u"], ["h"], name="h"),
             helper.make_node("Sigmoid", ["x"], ["s1"], name="sig1"),
             helper.make_node("Mul", ["x", "s1"], ["g1"], name="act1"),
             helper.make_node("Mul", ["g1", "u"], ["y1"], name="gate1"),
             helper.make_node("If", ["c"], ["z"], name="branch", then_branch=br_t,
                              else_branch=br_e)]
    save(model_of(nodes, [helper.make_tensor_value_info("x", F, ["n", 37]),
                          helper.make_tensor_value_info("u", F, ["n", 37]),
                          helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                  [helper.make_tensor_value_info("y1", F, ["n", 37]),
                   helper.make_tensor_value_info("z", F, ["n", 37])]),
         out, "silu_gate_if.onnx")
    print(f"wrote test models to {out}")


if __name__ == "__main__":
    main()
