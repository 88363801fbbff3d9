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
    print(f"wrote test models to {out}")


if __name__ == "__main__":
    main()
