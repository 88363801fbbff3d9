#!/usr/bin/env python3
"""Write ONNX's backend node tests to a folder, one case per subfolder:

    DIR/<case>/model.onnx
    DIR/<case>/test_data_set_0/input_0.pb ... output_0.pb
    DIR/<case>/tolerance.txt            "rtol atol" as ONNX's loader states them

Newer onnx releases build the cases in memory (onnx.backend.test.loader), older ones
ship them as files; both end up in the same layout. Cases whose inputs or outputs are
sequences, optionals or maps are written with a `skip.txt` naming why (string tensors are
written as TensorProto string_data), so that the
runner can list them as skipped rather than silently dropping them.

Usage: python3 tools/onnx_node_tests.py OUT_DIR
"""
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

PINNED_ONNX = "1.23.2"


def write_value(path, value, name):
    if isinstance(value, onnx.TensorProto):
        with open(path, "wb") as f:
            f.write(value.SerializeToString())
        return
    if isinstance(value, np.ndarray) or np.isscalar(value):
        arr = np.asarray(value)
        if arr.dtype.kind in "USO":  # strings: TensorProto string_data
            if arr.dtype == object and not all(isinstance(v, (str, bytes)) for v in arr.flat):
                raise TypeError("object tensor that is not strings")
            arr = arr.astype(object)
        t = numpy_helper.from_array(arr, name)
        with open(path, "wb") as f:
            f.write(t.SerializeToString())
        return
    raise TypeError(type(value).__name__)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if onnx.__version__ != PINNED_ONNX:
        print(f"warning: onnx {onnx.__version__} installed, tests are pinned to {PINNED_ONNX}",
              file=sys.stderr)
    warnings.simplefilter("ignore")
    from onnx.backend.test.loader import load_model_tests

    cases = load_model_tests(kind="node")
    os.makedirs(out, exist_ok=True)
    written = 0
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        if os.path.exists(os.path.join(d, "skip.txt")):  # from an earlier run
            os.remove(os.path.join(d, "skip.txt"))
        if case.model is not None:
            onnx.save(case.model, os.path.join(d, "model.onnx"))
        elif case.model_dir:
            import shutil
            shutil.copytree(case.model_dir, d, dirs_exist_ok=True)
            written += 1
            continue
        with open(os.path.join(d, "tolerance.txt"), "w") as f:
            f.write(f"{case.rtol} {case.atol}\n")
        reason = None
        for i, (inputs, outputs) in enumerate(case.data_sets or []):
            sd = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(sd, exist_ok=True)
            graph = case.model.graph
            try:
                for j, v in enumerate(inputs):
                    write_value(os.path.join(sd, f"input_{j}.pb"), v, graph.input[j].name)
                for j, v in enumerate(outputs):
                    write_value(os.path.join(sd, f"output_{j}.pb"), v, graph.output[j].name)
            except (TypeError, ValueError, IndexError) as e:
                reason = f"test data is not plain tensors ({e})"
        if reason:
            with open(os.path.join(d, "skip.txt"), "w") as f:
                f.write(reason + "\n")
        written += 1
    print(f"wrote {written} node test cases to {out}")


if __name__ == "__main__":
    main()
