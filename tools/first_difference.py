#!/usr/bin/env python3
"""Where native and onnxruntime first part: every node output of a package's prompt run,
in graph order, native (`onnx-genai infer`) against onnxruntime (Python), bit for bit.

  first_difference.py BUILD PKG --ids 1,2,3 [--show N] [--work DIR]

`onnx-genai parity` names the step and the model output where the backends differ most;
this names the node where they start to differ. It copies the decoder graph with every
node output made a graph output, feeds the prompt with an empty cache (past KV with 0
positions, zero conv and recurrent states), and prints, for the first N nodes whose
outputs differ (default 30), how many elements differ and by how much, in float32 ulps
and absolutely. A node whose inputs were all equal and whose output differs is where a
difference is born; the lines after it show how it travels (at MatMulNBits
accuracy_level 4, a one-ulp input difference moving an int8 rounding is a jump from
~1e-7 to ~1e-3). One graph only: the decoder of genai_config.json (a split package's
embedding and vision stages are not run).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def feeds_for(sess, ids, head_size):
    T, out = len(ids), {}
    for i in sess.get_inputs():
        dims = []
        for d in i.shape:
            if d == "batch_size":
                dims.append(1)
            elif d in ("sequence_length", "total_sequence_length"):
                dims.append(T)
            elif d == "past_sequence_length":
                dims.append(0)
            elif isinstance(d, str):  # a packed or unnamed head dimension
                dims.append(head_size)
            else:
                dims.append(d)
        dt = np.int64 if "int64" in i.type else np.int32 if "int32" in i.type else np.float32
        if i.name == "input_ids":
            a = np.array([ids], dt)
        elif i.name == "attention_mask":
            a = np.ones((1, T), dt)
        elif i.name == "position_ids":
            a = np.broadcast_to(np.arange(T, dtype=dt), dims).copy()
        else:
            a = np.zeros(dims, dt)
        out[i.name] = a
    return out


def ulps(a, b):
    """Distance in float32 representable steps (sign-magnitude order)."""
    def key(x):
        i = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(key(a) - key(b))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("pkg")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--show", type=int, default=30)
    ap.add_argument("--work", default=None)
    a = ap.parse_args(argv)
    import onnxruntime as ort
    cfg = json.load(open(os.path.join(a.pkg, "genai_config.json")))["model"]["decoder"]
    ids = [int(x) for x in a.ids.split(",")]
    work = a.work or os.path.join(a.pkg, ".first_difference")
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    m = onnx.load(os.path.join(a.pkg, cfg["filename"]))
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
                have.add(o)
    path = os.path.join(work, "all.onnx")
    onnx.save(m, path, save_as_external_data=True, location="all.onnx.data")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = feeds_for(sess, ids, cfg.get("head_size", 64))
    theirs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    cmd = [os.path.join(a.build, "onnx-genai"), "infer", path, "--output-dir",
           os.path.join(work, "out")]
    for k, v in feeds.items():
        p = os.path.join(work, f"in.{k}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
        cmd += ["--input", f"{k}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print(r.stderr.strip())
        return 1
    shown = 0
    for n in m.graph.node:
        for o in (x for x in n.output if x):
            f = os.path.join(work, "out", o + ".pb")
            if not os.path.exists(f):
                f = os.path.join(work, "out", o.replace("/", "_") + ".pb")
            if not os.path.exists(f):
                continue
            t = onnx.TensorProto()
            with open(f, "rb") as fh:
                t.ParseFromString(fh.read())
            ours, ref = numpy_helper.to_array(t), theirs[o]
            if ours.shape != ref.shape:
                print(f"{n.op_type:24s} {o}: shape {ours.shape}, onnxruntime {ref.shape}")
                shown += 1
            elif ours.dtype == np.float32 and (ours != ref).any():
                d = ulps(ours, ref)
                print(f"{n.op_type:24s} {o}: {int((d > 0).sum())}/{ours.size} differ, "
                      f"max {int(d.max())} ulp, max |Δ| {np.abs(ours - ref).max():.3g}")
                shown += 1
            elif ours.dtype != np.float32 and not np.array_equal(ours, ref):
                print(f"{n.op_type:24s} {o}: {int((ours != ref).sum())}/{ours.size} differ")
                shown += 1
            if shown >= a.show:
                return 0
    if not shown:
        print("every node output is the same, bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
