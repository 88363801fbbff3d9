#!/usr/bin/env python3
"""The two backends (native, onnxruntime) through the CLI, as users meet them.

Cases:
  parity-shared  every package in ../shared/models: `onnx-genai parity` must report no
                 divergence (greedy ids identical, logits within parity's tolerances).
                 A package neither backend can generate with (both `generate --backend
                 native` and `--backend ort` fail) is listed loudly with both reasons
                 and counted apart; one that only one backend runs is a failure.
  parity-made    the same for the packages the tests make (tests/maker's, tests/parity's
                 and a package per model type from check_types.py): WORK dirs given
                 after the case name.
  auto           a graph with an op we have no kernel for (Col2Im) runs through
                 onnxruntime under --backend auto, with a warning naming the op and
                 onnxruntime's (Python) output; with onnxruntime absent (OG_ORT_LIB
                 pointing nowhere) it fails with the native error naming the op. The same
                 for a package whose decoder has ops we lack (Optional and
                 OptionalGetElement around the logits): the same tokens as the native
                 run of the package without them.
  errors         --backend ort with a missing library, a library too old for our
                 header's API version (a stub module exporting OrtGetApiBase that knows
                 only API versions up to 2), a file that is not onnxruntime, no library
                 to be found at all, an unknown and an absent execution provider: each a
                 clear error.

Usage: check_backends.py BUILD_DIR SHARED_DIR CASE [WORK_DIR ...]
Exit 77 (CTest's skip) when what a case needs is missing; the reason is printed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BUILD, SHARED, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
WORK = sys.argv[4:]
BIN = os.path.join(BUILD, "onnx-genai")
failures = []


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, env=None, timeout=900):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([BIN] + args, capture_output=True, text=True, env=e, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def skip_if_compiled_out(err):
    """A build made without onnxruntime's header has no onnxruntime backend to test."""
    if "made without onnxruntime's C API header" in err:
        skip(f"this build has no onnxruntime backend: {err.strip()}")


def have_onnxruntime():
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def packages(roots):
    found = []
    for root in roots:
        for d, _, files in sorted(os.walk(root)):
            if "genai_config.json" in files:
                found.append(d)
    return sorted(found)


def prompt_for(pkg):
    cfg = json.load(open(os.path.join(pkg, "genai_config.json")))
    bos = cfg.get("model", {}).get("bos_token_id")
    if isinstance(bos, list):
        bos = bos[0] if bos else None
    return [bos] if isinstance(bos, int) and bos >= 0 else [1, 2, 3, 4]


def parity_cases(roots):
    if not have_onnxruntime():
        skip("the onnxruntime Python package (its libonnxruntime.so) is not installed")
    pkgs = packages(roots)
    if not pkgs:
        skip(f"no packages under {' '.join(roots)}")
    neither = []
    for pkg in pkgs:
        ids = ",".join(map(str, prompt_for(pkg)))
        rc, out, err = run(["parity", pkg, "--ids", ids, "--max-length", "24", "--json"])
        if out.strip().startswith("{"):
            d = json.loads(out)
            worst = d["max_logit_diff"]
            check(rc == 0 and not d["diverged"] and len(d["steps"]) > 0,
                  f"{pkg}: {len(d['steps'])} steps, max |Δlogit| {worst:.3g} (rtol {d['rtol']:.3g}"
                  f", atol {d['atol']:.3g}); first token divergence "
                  f"{d['first_token_divergence']}, first logit divergence "
                  f"{d['first_logit_divergence']}")
            continue
        if "onnxruntime is not available" in err:
            skip(f"our binary cannot load onnxruntime: {err.strip()}")
        # parity could not run it: is that a gap between the backends, or neither runs it?
        why = {}
        for b in ("native", "ort"):
            grc, _, gerr = run(["generate", pkg, "--ids", ids, "--max-length", "8",
                                "--backend", b])
            why[b] = None if grc == 0 else " ".join(gerr.split())
        if why["native"] and why["ort"]:
            neither.append(pkg)
            print(f"NOT RUN {pkg}: neither backend generates with it\n"
                  f"        native: {why['native']}\n        onnxruntime: {why['ort']}")
        else:
            check(False, f"{pkg}: parity failed ({err.strip()}); native: "
                         f"{why['native'] or 'runs'}; onnxruntime: {why['ort'] or 'runs'}")
    print(f"{len(pkgs) - len(neither)} packages compared, {len(neither)} that neither "
          f"backend runs (listed above)")
    if len(neither) == len(pkgs):
        failures.append("no package could be compared")


# ---- auto -------------------------------------------------------------------------------

def col2im_graph(d):
    import onnx
    from onnx import numpy_helper
    from unsupported_graph import col2im_model
    m, x = col2im_model()
    path = os.path.join(d, "col2im.onnx")
    onnx.save(m, path)
    with open(os.path.join(d, "x.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    return path, x


def auto_case():
    if not have_onnxruntime():
        skip("the onnxruntime Python package (its libonnxruntime.so) is not installed")
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper
    d = tempfile.mkdtemp(prefix="og-backends-")
    try:
        path, x = col2im_graph(d)
        want = onnxruntime.InferenceSession(path).run(None, {"x": x})[0]
        out = os.path.join(d, "out")
        rc, _, err = run(["infer", path, "--input", "x=" + os.path.join(d, "x.pb"), "-o", out])
        skip_if_compiled_out(err)
        check(rc == 0 and "no native kernel for op Col2Im" in err and "onnxruntime" in err,
              f"auto runs a graph with Col2Im on onnxruntime and warns: rc {rc}, {err.strip()!r}")
        if rc == 0:
            got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "y.pb")))
            check(got.shape == want.shape and np.array_equal(got, want),
                  f"auto's Col2Im output equals onnxruntime's: {got.ravel()[:4]} vs {want.ravel()[:4]}")
        for env, what in (({"OG_ORT_LIB": os.path.join(d, "nowhere", "libonnxruntime.so")},
                           "OG_ORT_LIB pointing nowhere"),):
            rc, _, err = run(["infer", path, "--input", "x=" + os.path.join(d, "x.pb"), "-o", out],
                             env=env)
            check(rc == 1 and "node #0 (Col2Im): op Col2Im is not implemented" in err and
                  "onnxruntime is not available" in err,
                  f"auto with {what}: the native error naming the op: {err.strip()!r}")
        rc, _, err = run(["infer", path, "--input", "x=" + os.path.join(d, "x.pb"), "-o", out,
                          "--backend", "native"])
        check(rc == 1 and "op Col2Im is not implemented" in err and "onnxruntime" not in err,
              f"--backend native: the native error alone: {err.strip()!r}")

        # a package whose decoder has ops we lack
        src = next((w for w in WORK if os.path.isfile(os.path.join(w, "genai_config.json"))), None)
        if not src:
            print(f"SKIP (package part): no package among {WORK}")
            return
        pkg = os.path.join(d, "pkg")
        shutil.copytree(src, pkg)
        cfg = json.load(open(os.path.join(pkg, "genai_config.json")))
        fname = os.path.join(pkg, cfg["model"]["decoder"]["filename"])
        logits = cfg["model"]["decoder"].get("outputs", {}).get("logits", "logits")
        m = onnx.load(fname, load_external_data=False)
        for n in m.graph.node:
            n.output[:] = [o + "_raw" if o == logits else o for o in n.output]
        m.graph.node.extend([helper.make_node("Optional", [logits + "_raw"], [logits + "_opt"]),
                             helper.make_node("OptionalGetElement", [logits + "_opt"], [logits])])
        onnx.save(m, fname)
        args = ["--ids", "1", "--max-length", "16", "--json"]
        rc0, out0, err0 = run(["generate", src, "--backend", "native"] + args)
        rc, out, err = run(["generate", pkg] + args)
        ok = rc == 0 and rc0 == 0
        check(ok and json.loads(out)["backend"] == "onnxruntime" and
              "no native kernel for ops Optional, OptionalGetElement" in err,
              f"auto on a package with Optional/OptionalGetElement: onnxruntime, warned: {err.strip()!r}")
        if ok:
            a, b = json.loads(out0)["sequences"], json.loads(out)["sequences"]
            check(a == b, f"its tokens equal the native run of the package without them: {b} vs {a}")
        rc, _, err = run(["generate", pkg] + args,
                         env={"OG_ORT_LIB": os.path.join(d, "nowhere.so")})
        check(rc == 1 and "op Optional is not implemented" in err,
              f"the package with onnxruntime absent: the native error: {err.strip()!r}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- errors -----------------------------------------------------------------------------

def errors_case():
    stub = os.path.join(BUILD, "tests", "libort-stub-old.so")
    if not os.path.isfile(stub):
        skip(f"{stub} was not built")
    d = tempfile.mkdtemp(prefix="og-backends-")
    try:
        import onnx
        from onnx import TensorProto, helper
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 8
        path = os.path.join(d, "relu.onnx")
        onnx.save(m, path)
        x = os.path.join(d, "x.pb")
        with open(x, "wb") as f:
            f.write(helper.make_tensor("x", TensorProto.FLOAT, [2], [-1.0, 2.0]).SerializeToString())
        base = ["infer", path, "--input", "x=" + x, "-o", os.path.join(d, "out"), "--backend", "ort"]
        missing = os.path.join(d, "no", "libonnxruntime.so")
        cases = [
            (["--ort-lib", missing], {}, ["onnxruntime is not available", f"cannot load '{missing}'",
                                          "--ort-lib"], "a missing library (--ort-lib)"),
            ([], {"OG_ORT_LIB": missing}, ["onnxruntime is not available", "(from OG_ORT_LIB)"],
             "a missing library (OG_ORT_LIB)"),
            (["--ort-lib", stub], {}, ["is version 1.2.0, too old", "C API version",
                                       "or newer is needed"], "a library too old for our header"),
            (["--ort-lib", "libm.so.6"], {}, ["is not an onnxruntime library",
                                              "no OrtGetApiBase"], "a library that is not onnxruntime"),
            ([], {"OG_ORT_LIB": "", "PATH": d}, ["onnxruntime is not available: no library given",
                                                 "python3"], "no library to be found at all"),
        ]
        if have_onnxruntime():
            cases += [
                (["--ep", "tpu"], {}, ["unknown execution provider 'tpu'", "CPUExecutionProvider"],
                 "an unknown execution provider"),
            ]
            import onnxruntime
            if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
                cases.append((["--ep", "cuda"], {}, ["execution provider 'cuda'",
                                                     "is not in the onnxruntime loaded from",
                                                     "CPUExecutionProvider"],
                              "an execution provider the library lacks"))
        else:
            print("SKIP (provider cases): the onnxruntime Python package is not installed")
        for extra, env, words, what in cases:
            rc, _, err = run(base + extra, env=env)
            skip_if_compiled_out(err)
            lines = err.strip().splitlines()
            check(rc == 1 and len(lines) == 1 and lines[0].startswith("onnx-genai: relu.onnx: ") and
                  all(w in err for w in words), f"--backend ort with {what}: {err.strip()!r}")
        rc, _, err = run(["generate", "x", "--backend", "tpu"])
        check(rc == 1 and "--backend: 'tpu' is not one of native, ort, auto" in err,
              f"an unknown --backend: {err.strip()!r}")
        rc, _, err = run(["generate", "x", "--backend", "native", "--ep", "cuda"])
        check(rc == 1 and "native backend runs on the CPU only" in err,
              f"--ep cuda with --backend native: {err.strip()!r}")
        if have_onnxruntime():
            rc, out, err = run(base)
            check(rc == 0 and "y: float32 [2]" in out, f"--backend ort runs the graph: {out.strip()!r} {err.strip()!r}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if CASE == "parity-shared":
    parity_cases([os.path.join(SHARED, "models")])
elif CASE == "parity-made":
    roots = [w for w in WORK if os.path.isdir(w)]
    for w in WORK:
        if not os.path.isdir(w):
            print(f"SKIP (part): {w} does not exist (its fixture did not run)")
    if not roots:
        skip("none of the made package folders exists")
    parity_cases(roots)
elif CASE == "auto":
    auto_case()
elif CASE == "errors":
    errors_case()
else:
    sys.exit(f"unknown case {CASE}")
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
