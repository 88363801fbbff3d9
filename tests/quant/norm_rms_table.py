#!/usr/bin/env python3
"""Prints the expected outputs of tests/unit/test_norm_rms_f32.c: onnxruntime's
SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization (CPU, float32) on the rows
that test makes with its small generator (reproduced here exactly), as the bits of each
output value. Also says how many of them the earlier arithmetic (a double sum of
squares, y = x * (float)(1 / sqrt(mean + eps)) * scale) got wrong, so that a row that
no longer tells the two apart can be replaced.

usage: norm_rms_table.py   (needs numpy, onnx and onnxruntime)"""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


class Lcg:
    def __init__(self, seed):
        self.s = seed & 0xffffffff

    def next(self):
        self.s = (self.s * 1664525 + 1013904223) & 0xffffffff
        return self.s


def vals(seed, n):
    """(k / 512) / 3 in float32, k in [-2048, 2048)"""
    g = Lcg(seed)
    f = np.float32
    return np.array([f(f((g.next() >> 20) - 2048) / f(512)) / f(3) for _ in range(n)], f)


def int4_row(seed, n, bs=32):
    """(q - 8) * s, s = k / 4096 per block of bs: a row of a symmetric int4 table"""
    g = Lcg(seed)
    out, s = np.zeros(n, np.float32), np.float32(0)
    for i in range(n):
        if i % bs == 0:
            s = np.float32(((g.next() >> 24) + 40) / 4096.0)
        out[i] = np.float32((g.next() >> 28) - 8) * s
    return out


def run(op, x, g, skip=None, eps=1e-5):
    ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, x.size])]
    names, feeds = ["X"], {"X": x[None]}
    if skip is not None:
        ins.append(helper.make_tensor_value_info("S", TensorProto.FLOAT, [1, x.size]))
        names.append("S")
        feeds["S"] = skip[None]
    node = helper.make_node(op, names + ["g"], ["Y"], domain=MS if skip is not None else "",
                            epsilon=eps)
    m = helper.make_model(helper.make_graph(
        [node], "g", ins, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(g, "g")]), ir_version=8,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0].reshape(-1)


def main():
    cases = [("int4row_h128", "SimplifiedLayerNormalization", int4_row(18, 128),
              np.ones(128, np.float32), None)]
    for n, seed in ((21, 3), (23, 5), (19, 6), (16, 8), (7, 5)):
        cases.append((f"h{n}", "SimplifiedLayerNormalization", vals(seed, n),
                      (1 + vals(seed + 100, n) / 8).astype(np.float32), None))
    cases.append(("skip_h21", "SkipSimplifiedLayerNormalization", vals(21, 21),
                  (1 + vals(23, 21) / 8).astype(np.float32), vals(22, 21)))
    for name, op, x, g, sk in cases:
        y = run(op, x, g, sk)
        xx = x + sk if sk is not None else x
        inv = np.float32(1.0 / np.sqrt(float(np.sum(xx.astype(np.float64) ** 2)) / xx.size
                                       + float(np.float32(1e-5))))
        earlier = ((xx * inv).astype(np.float32) * g).astype(np.float32)
        print(f"/* {name}: {op}, {x.size} values; the earlier arithmetic differs in "
              f"{int(np.sum(earlier != y))} */")
        words = [f"0x{v:08x}u" for v in y.view(np.uint32)]
        print(f"static const uint32_t want_{name}[] = {{")
        for i in range(0, len(words), 6):
            print("    " + ", ".join(words[i:i + 6]) + ",")
        print("};")


if __name__ == "__main__":
    main()
