"""onnx_genai.InferenceSession against onnxruntime.InferenceSession.

Every ONNX backend node test that tools/onnx_node_tests.py wrote under the build folder
(OG_BUILD_DIR/node_test_data, the node_data fixture) and that we run: the graph is run
through the Python package and through onnxruntime with the same inputs, and the outputs
must agree at the case's tolerance (tolerance.txt: atol rtol; integers, bools and
strings exactly, NaN where NaN). Where onnxruntime cannot run a case (unsupported IR
version or op, a sequence input) or disagrees with ONNX's own expected output while we
agree with it, our output is held to the expected output instead and the case is
counted apart; the summary prints every count. Cases we do not run (an op or dtype
without a kernel: UnsupportedError) are counted as not ours, which the C node-test
runner reports in detail: the sessions are opened with backend "native", so that no case
falls back to onnxruntime (that fallback, the "auto" default, has its own test here).
"""
import glob
import os
import sys

import numpy as np
import pytest

from conftest import BUILD

NODE_DIR = os.path.join(BUILD, "node_test_data")


def load_case(case):
    import onnx
    from onnx import numpy_helper
    graph = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False).graph
    if any(v.type.WhichOneof("value") != "tensor_type" for v in [*graph.input, *graph.output]):
        return None  # a sequence, optional or map value: not a tensor
    ds = os.path.join(case, "test_data_set_0")
    inputs, outputs = [], []
    for kind, dst in (("input", inputs), ("output", outputs)):
        for p in sorted(glob.glob(os.path.join(ds, f"{kind}_*.pb")),
                        key=lambda s: int(s.rsplit("_", 1)[1].split(".")[0])):
            t = onnx.TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            dst.append(numpy_helper.to_array(t))
    return inputs, outputs


def tolerance(case):
    try:
        with open(os.path.join(case, "tolerance.txt")) as f:
            atol, rtol = (float(x) for x in f.read().split())
        return atol, rtol
    except (OSError, ValueError):
        return 1e-7, 1e-3


def as_comparable(a):
    a = np.asarray(a)
    if a.dtype.kind == "V" or a.dtype.name in ("bfloat16",) or a.dtype.name.startswith("float"):
        try:
            return a.astype(np.float64)
        except (TypeError, ValueError):
            return a
    return a


def close(got, want, atol, rtol, expanded=False):
    narrow = {"float16": 2.0**-10, "bfloat16": 2.0**-7}.get(np.asarray(want).dtype.name)
    if expanded and narrow:
        # the C runner's rule (tests/node_tests.c): ONNX's reference rounds every
        # intermediate of an expanded function body to the narrow type, our kernels once
        rtol = max(rtol, 4 * narrow)
    got, want = as_comparable(got), as_comparable(want)
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}"
    if got.dtype.kind in "OUS" or want.dtype.kind in "OUS":
        g = [x.decode() if isinstance(x, bytes) else x for x in got.reshape(-1).tolist()]
        w = [x.decode() if isinstance(x, bytes) else x for x in want.reshape(-1).tolist()]
        return None if g == w else "strings differ"
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), \
            want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
        gn, wn = np.isnan(g), np.isnan(w)
        if (gn != wn).any():
            return "NaN positions differ"
        with np.errstate(invalid="ignore", over="ignore"):
            # an infinity matches only itself: rtol * inf would accept any finite value
            ok = gn | (g == w) | (np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w)))
        if not ok.all():
            i = np.flatnonzero(~ok)[0]
            return f"{int((~ok).sum())} values differ, first at {i}: {g.reshape(-1)[i]} vs " \
                   f"{w.reshape(-1)[i]}"
        return None
    return None if np.array_equal(got, want) else "values differ"


def test_inference_session_matches_onnxruntime(og):
    if not os.path.isdir(NODE_DIR):
        pytest.skip(f"{NODE_DIR} is missing: tools/onnx_node_tests.py writes it (ctest's "
                    "node_tests_data fixture)")
    import onnxruntime as ort
    ort_opts = ort.SessionOptions()
    ort_opts.log_severity_level = 4
    counts = {"equal to onnxruntime": 0, "onnxruntime cannot run; equal to ONNX's expected": 0,
              "onnxruntime differs from ONNX's expected; ours equals it": 0,
              "not run by onnx-genai (op or dtype)": 0, "sequence/optional data": 0}
    failures = []
    native = og.SessionOptions()
    native.backend = "native"
    cases = sorted(glob.glob(os.path.join(NODE_DIR, "test_*")))
    for case in cases:
        name = os.path.basename(case)
        model = os.path.join(case, "model.onnx")
        data = load_case(case)
        if data is None:
            counts["sequence/optional data"] += 1
            continue
        inputs, expected = data
        try:
            ours_s = og.InferenceSession(model, native)
            feed = {i.name: v for i, v in zip(ours_s.get_inputs(), inputs)}
            names = [o.name for o in ours_s.get_outputs()]
            ours = ours_s.run(names, feed)
        except og.UnsupportedError:
            counts["not run by onnx-genai (op or dtype)"] += 1
            continue
        except Exception as e:  # anything else is a failure of the binding or the runtime
            failures.append(f"{name}: onnx_genai raised {type(e).__name__}: {e}")
            continue
        atol, rtol = tolerance(case)
        exp = name.endswith("_expanded")
        try:
            ort_s = ort.InferenceSession(model, ort_opts, providers=["CPUExecutionProvider"])
            theirs = ort_s.run(names, {k: v for k, v in feed.items()})
        except Exception:
            theirs = None
        if theirs is None:
            bad = [f"output {n}: {m}" for n, g, w in zip(names, ours, expected)
                   if (m := close(g, w, atol, rtol, exp))]
            if bad:
                failures.append(f"{name} (onnxruntime cannot run it): vs expected: {bad}")
            else:
                counts["onnxruntime cannot run; equal to ONNX's expected"] += 1
            continue
        bad = [f"output {n}: {m}" for n, g, w in zip(names, ours, theirs)
               if (m := close(g, w, atol, rtol))]
        if not bad:
            counts["equal to onnxruntime"] += 1
            continue
        ours_ok = all(close(g, w, atol, rtol, exp) is None for g, w in zip(ours, expected))
        theirs_ok = all(close(g, w, atol, rtol, exp) is None for g, w in zip(theirs, expected))
        if ours_ok and not theirs_ok:
            counts["onnxruntime differs from ONNX's expected; ours equals it"] += 1
        else:
            failures.append(f"{name}: vs onnxruntime: {bad}")
    print(f"\n{len(cases)} node-test cases:")
    for k, v in counts.items():
        print(f"  {v:5d} {k}")
    assert counts["equal to onnxruntime"] > 500, "too few cases compared: is the data there?"
    assert not failures, f"{len(failures)} cases failed:\n" + "\n".join(failures[:40])


def test_backend_choice(og):
    """SessionOptions.backend: "native" refuses the op it lacks, naming it; "auto" (the
    default) runs the graph on onnxruntime with a RuntimeWarning naming the op, and gives
    onnxruntime's (Python) output."""
    ort = pytest.importorskip("onnxruntime", reason="the onnxruntime Python package (the "
                              "fallback's library and the oracle) is not installed")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "backends"))
    from unsupported_graph import col2im_model
    m, x = col2im_model()
    model = m.SerializeToString()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    native = og.SessionOptions()
    native.backend = "native"
    with pytest.raises(og.UnsupportedError, match="Col2Im"):
        og.InferenceSession(model, native)
    with pytest.warns(RuntimeWarning, match="no native kernel for op Col2Im"):
        s = og.InferenceSession(model)
    assert s.backend == "onnxruntime"
    got = s.run(None, {"x": x})[0]
    assert got.shape == want.shape and np.array_equal(got, want)
    bad = og.SessionOptions()
    bad.backend = "gpu"
    with pytest.raises(ValueError, match="'gpu' is not one of auto, native, ort"):
        og.InferenceSession(model, bad)
