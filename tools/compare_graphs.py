#!/usr/bin/env python3
"""Compare two ONNX graphs node by node (by node name), as the model maker is checked
against packages written by onnxruntime-genai's model builder.

  compare_graphs.py A.onnx B.onnx [--quiet]

For every node both graphs have: op type and domain, attributes, and each input, described
by what it is rather than by its name: a graph input (name), an initializer (dtype and
shape), a Constant (dtype and values) or another node's output (that node's name and the
output's index). Also the graph inputs and outputs (names, dtypes, symbolic and fixed
dims). Weights' values are not compared. Exits 0 when nothing differs, 1 otherwise.
Needs onnx only (external data is not loaded).
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def _attr(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float):
        return float(np.float32(v))
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else (float(np.float32(x)) if isinstance(x, float) else x)
                for x in v]
    if isinstance(v, onnx.TensorProto):
        return ("tensor", v.data_type, tuple(v.dims), numpy_helper.to_array(v).tolist())
    if isinstance(v, onnx.GraphProto):
        return ("graph", len(v.node))
    return v


def describe(path):
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    inits = {i.name: (onnx.TensorProto.DataType.Name(i.data_type), tuple(i.dims)) for i in g.initializer}
    inputs = {i.name for i in g.input}
    consts, producer = {}, {}
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            t = next(a for a in n.attribute if a.name == "value").t
            consts[n.output[0]] = (onnx.TensorProto.DataType.Name(t.data_type),
                                   numpy_helper.to_array(t).tolist())
            continue
        for k, o in enumerate(n.output):
            producer[o] = (n.name, k)

    def what(name):
        if name == "":
            return "-"
        if name in inputs:
            return f"input {name}"
        if name in inits:
            return f"init {inits[name][0]}{list(inits[name][1])}"
        if name in consts:
            return f"const {consts[name][0]} {consts[name][1]}"
        if name in producer:
            return f"{producer[name][0]}:{producer[name][1]}"
        return f"?{name}"

    nodes = {}
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            continue
        attrs = {a.name: _attr(a) for a in n.attribute}
        outs = [o if o in {x.name for x in g.output} else ("-" if o == "" else "") for o in n.output]
        nodes[n.name] = dict(op=f"{n.domain or 'ai.onnx'}.{n.op_type}", attrs=attrs,
                             inputs=[what(i) for i in n.input], outputs=outs)

    def io(vals):
        out = {}
        for v in vals:
            t = v.type.tensor_type
            dims = [d.dim_param or d.dim_value for d in t.shape.dim]
            out[v.name] = (onnx.TensorProto.DataType.Name(t.elem_type), dims)
        return out

    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    return dict(nodes=nodes, inputs=io(g.input), outputs=io(g.output), opsets=opsets,
                order=[n.name for n in g.node if n.op_type != "Constant"])


def compare(a, b):
    """List of difference lines (empty when the graphs agree)."""
    A, B = describe(a), describe(b)
    diff = []
    if A["opsets"] != B["opsets"]:
        diff.append(f"opsets: {A['opsets']} vs {B['opsets']}")
    for kind in ("inputs", "outputs"):
        for name in sorted(set(A[kind]) | set(B[kind])):
            x, y = A[kind].get(name), B[kind].get(name)
            if x != y:
                diff.append(f"graph {kind[:-1]} {name}: {x} vs {y}")
    na, nb = A["nodes"], B["nodes"]
    for name in A["order"]:
        if name not in nb:
            diff.append(f"only in A: {name} ({na[name]['op']})")
    for name in B["order"]:
        if name not in na:
            diff.append(f"only in B: {name} ({nb[name]['op']})")
    for name in A["order"]:
        if name not in nb:
            continue
        x, y = na[name], nb[name]
        for key in ("op", "attrs", "inputs", "outputs"):
            if x[key] != y[key]:
                diff.append(f"{name} {key}: {x[key]} vs {y[key]}")
    return diff


def main(argv):
    quiet = "--quiet" in argv
    args = [a for a in argv if a != "--quiet"]
    if len(args) != 2:
        print(__doc__)
        return 2
    d = compare(args[0], args[1])
    if not quiet:
        for line in d:
            print(line)
    print(f"{len(d)} difference(s)")
    return 1 if d else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
