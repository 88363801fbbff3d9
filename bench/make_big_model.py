#!/usr/bin/env python3
"""Writes a large ONNX model (default 8 x 64 MiB float32 weights = 512 MiB) three ways,
for the load benchmark (`onnx-genai bench-load`):

  OUT/big_save.onnx      onnx.save with raw_data: wherever protobuf puts the bytes
  OUT/big_aligned.onnx   raw_data again, but each payload starts at a 64-byte file offset
                         (a padding field placed before raw_data; protobuf allows fields
                         in any order)
  OUT/big_ext.onnx       external data in OUT/big_ext.bin, offsets aligned to 4096

The graph is a chain y = x @ W0 @ W1 ... so that it also runs.
Usage: python3 make_big_model.py OUT_DIR [--layers 8] [--dim 4096]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def aligned_tensor(name, arr, offset_of_tensor_payload, align=64):
    """TensorProto bytes whose raw_data payload lands at a multiple of `align` in the file,
    given where this TensorProto's own payload starts."""
    head = b"".join(field(1, 0, varint(d)) for d in arr.shape)
    head += field(2, 0, varint(TensorProto.FLOAT)) + field(8, 2, name.encode())
    raw = arr.tobytes()
    raw_key = varint((9 << 3) | 2) + varint(len(raw))
    for pad in range(0, 4 * align):
        doc = field(12, 2, b" " * pad) if pad else b""
        if pad == 1:
            continue  # a doc_string field is at least 2 bytes
        start = offset_of_tensor_payload + len(head) + len(doc) + len(raw_key)
        if start % align == 0:
            return head + doc + raw_key + raw
    raise RuntimeError("no padding found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=4096)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    d = a.dim
    weights = [(rng.standard_normal((d, d), dtype=np.float32) / np.sqrt(d)).astype(np.float32)
               for _ in range(a.layers)]
    names = [f"w{i}" for i in range(a.layers)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", names[i]],
                              ["y" if i == a.layers - 1 else f"h{i + 1}"], name=f"mm{i}")
             for i in range(a.layers)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, d])

    def model_with(inits):
        g = helper.make_graph(nodes, "big", [x], [y], initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
        m.ir_version = 10
        return m

    # 1. plain onnx.save
    m = model_with([numpy_helper.from_array(w, n) for w, n in zip(weights, names)])
    onnx.save(m, os.path.join(a.out, "big_save.onnx"))

    # 2. external data
    onnx.save(m, os.path.join(a.out, "big_ext.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="big_ext.bin", size_threshold=0)

    # 3. raw_data aligned by hand: serialize the graph without initializers, then append
    #    the initializers (graph field 5) at aligned positions.
    empty = model_with([])
    graph_wo = empty.graph.SerializeToString()
    empty.ClearField("graph")
    model_head = empty.SerializeToString()
    prefix_guess = len(model_head) + 1 + 5
    for _ in range(4):
        body = bytearray(graph_wo)
        for w, n in zip(weights, names):
            # offset of this TensorProto's payload: prefix + body so far + key + length
            tlen_guess = w.nbytes + 200
            pos = prefix_guess + len(body) + 1 + len(varint(tlen_guess))
            t = aligned_tensor(n, w, pos)
            if len(varint(len(t))) != len(varint(tlen_guess)):
                raise RuntimeError("length varint size changed")
            body += field(5, 2, t)
        prefix = len(model_head) + 1 + len(varint(len(body)))
        if prefix == prefix_guess:
            break
        prefix_guess = prefix
    data = model_head + field(7, 2, bytes(body))
    with open(os.path.join(a.out, "big_aligned.onnx"), "wb") as f:
        f.write(data)
    check = onnx.load(os.path.join(a.out, "big_aligned.onnx"), load_external_data=False)
    assert len(check.graph.initializer) == a.layers
    print(f"wrote {a.out}/big_save.onnx, big_aligned.onnx, big_ext.onnx "
          f"({sum(w.nbytes for w in weights) / 1e6:.0f} MB of weights each)")


if __name__ == "__main__":
    main()
