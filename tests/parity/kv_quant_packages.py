#!/usr/bin/env python3
"""The builder's quantized-KV packages (kv_cache_quant_scheme int8/int4, per tensor and
per channel) on our native kernels against onnxruntime-genai.

For each model type and weight precision: the model maker writes the float-cache package;
onnxruntime runs it on a calibration prompt and the largest magnitudes of each layer's
present keys and values (per tensor, or per kv head and channel) become a
kv_cache_scale_file, amax / qmax as a calibration tool writes it (qmax recorded, so the
maker rescales it to the scheme's code range as the builder does); then per scheme the
maker writes the package with that file (tools/model_maker/kvquant.py: the builder's
int8 / uint8-packed-int4 caches, k_scale / v_scale initializers, k_quant_type,
kv_cache_bit_width, past_present_share_buffer false) and, with prompts P and R
(8 tokens each), 64 new tokens, greedy:
  1. `onnx-genai parity --through-ties` on P and R: every step's logits within parity's
     tolerance, native against onnxruntime (the same package through onnxruntime);
  2. our tokens for P at batch 1 equal onnxruntime-genai 0.18's;
  3. our batch [P, R] equals onnxruntime-genai's batch of two;
and for the first and last schemes of each type, the serving engine (engine-check, batched over its
paged pool of codes: requests of different lengths at once, each equal to the generator's
run of it alone, which 2. and 3. hold to onnxruntime-genai's; with the prefix cache
serving a shared prompt, and with sequences preempted and recomputed) and --kv-dtype's
refusal (such a package keeps its own cache format).
At accuracy_level 4 (int4 weights) a near-tie may pick the other token (parity reports
it and goes on with onnxruntime's); tokens must then agree up to the first tie. And
onnxruntime's own rows depend on their batch there (MLAS's one-row kernel for a decode
step alone): a row of onnxruntime-genai's batch that leaves its own single run no later
than it leaves ours is counted apart when ours equals that single run (check_matrix.py's
rule); every row of our batch must equal our run of it alone.
Parity's tolerance for these packages is rtol 3/127 (cli_parity.c): an ulp upstream can
round a key or value to the neighbouring code, as an int8 activation at accuracy_level 4.
With int4 weights the two compound: a step whose largest difference lies in a quantized
cache is reported as a code flip instead of failing, and the tokens must still agree.
The fp8 schemes: onnxruntime's CPU has no GroupQueryAttention for a float8e4m3fn cache
(make_kvquant_cases.py checks that each run), so there is no oracle: skipped, loudly.
Types: llama, qwen3 (per-head q/k norms before the cache) and qwen3_5_text (a hybrid:
linear-attention layers with their states, the KV layers' scales by layer_ids). Not
lfm2: onnxruntime-genai 0.18 feeds its packed int4 caches at the unpacked width (no oracle).

usage: kv_quant_packages.py BUILD WORK [--types llama,qwen3,qwen3_5_text] [--dtypes fp32,int4]
                            [--schemes int8_per_tensor,...]
Exits 77 (a skip) when onnxruntime or onnxruntime-genai is missing."""
import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)

SCHEMES = ["int8_per_tensor", "int8_per_channel", "int4_per_tensor", "int4_per_channel"]
CALIB = [5, 77, 300, 12, 401, 9, 256, 33, 200, 17, 42, 99, 3, 150, 64, 321]


def make(out, t, dtype, extra=()):
    import make_model
    shutil.rmtree(out, ignore_errors=True)
    args = ["--type", t, "--seed", "1", "--dtype", dtype, *extra, "--out", out]
    with contextlib.redirect_stdout(io.StringIO()):
        if make_model.main(args) != 0:
            raise RuntimeError(f"make_model.py {' '.join(args)} failed")
    return out


def calibrate(pkg, scheme, path):
    """A scale file from onnxruntime's present caches of the float package over CALIB."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from model_maker import kvquant
    m = onnx.load(os.path.join(pkg, "model.onnx"), load_external_data=False)
    cfg = json.load(open(os.path.join(pkg, "genai_config.json")))["model"]["decoder"]
    hs = cfg["head_size"]
    S = len(CALIB)
    feeds = {}
    for v in m.graph.input:
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
        n = v.name
        if n == "input_ids":
            feeds[n] = np.array([CALIB], np.int64)
        elif n == "attention_mask":
            feeds[n] = np.ones((1, S), np.int64)
        elif n == "position_ids":
            pos = np.arange(S, dtype=np.int64)[None]
            feeds[n] = pos if len(dims) == 2 else np.broadcast_to(pos, (3, 1, S)).copy()
        elif n.startswith("past_key_values."):
            feeds[n] = np.zeros((1, dims[1], 0, hs), np.float32)
        else:  # a recurrent / conv state: fixed dims after the batch
            feeds[n] = np.zeros([1] + dims[1:], np.float32)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.path.join(pkg, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(None, feeds)))
    layers = sorted(int(n.split(".")[1]) for n in names if n.startswith("present.") and
                    n.endswith(".key"))
    presents = {i: (outs[f"present.{i}.key"], outs[f"present.{i}.value"]) for i in layers}
    return kvquant.calibrate(presents, scheme, layers, cfg["num_key_value_heads"], hs, path)


def check(build, d, near_ties):
    import check_matrix as cm
    import check_types
    L = len(cm.P) + cm.NEW
    bad = []
    ok_p, ties_p, jp = cm.parity(build, d, cm.P)
    ok_r, ties_r, jr = cm.parity(build, d, cm.R)
    flips = []
    for name, ok, j in (("P", ok_p, jp), ("R", ok_r, jr)):
        if ok:
            continue
        first = j.get('first_logit_divergence') or j.get('first_token_divergence')
        # With int4 weights (int8 activations) an activation an int8 step away can move a
        # cached key or value to the neighbouring code of the cache's own scale, and every
        # later step reads it: where the largest difference of the first step out of
        # tolerance is in a quantized cache, that is a code flip, reported; the tokens
        # below must still agree with onnxruntime-genai's (up to near-ties).
        if near_ties and first and str(first.get("output", "")).startswith("present."):
            flips.append(f"{name}: code flip in {first['output']} at step {first['step']}")
            continue
        bad.append(f"parity on {name}: {json.dumps(first)}")
    ties = {"P": ties_p, "R": ties_r}
    if (ties_p or ties_r) and not near_ties:
        bad.append(f"near-ties at steps {ties_p} / {ties_r} with float32 weights")
    ours1 = check_types.ours(build, d, [cm.P], L)[0]
    theirs1 = check_types.theirs(d, [cm.P], L)[0]
    ours2 = check_types.ours(build, d, [cm.P, cm.R], L)
    theirs2 = check_types.theirs(d, [cm.P, cm.R], L)
    single = {"P": ours1, "R": check_types.ours(build, d, [cm.R], L)[0]}
    alone = {"P": theirs1, "R": check_types.theirs(d, [cm.R], L)[0]}
    ort_batch = 0
    for what, a, b, key in (("batch 1", ours1, theirs1, "P"), ("batch 2 row 0", ours2[0], theirs2[0], "P"),
                            ("batch 2 row 1", ours2[1], theirs2[1], "R")):
        if a != single[key]:
            bad.append(f"{what}: differs from our own run of the row alone at "
                       f"{cm.first_diff(a, single[key])}")
        at = cm.first_diff(a, b)
        if at is None or (ties[key] and at - len(cm.P) >= ties[key][0]):
            continue
        # onnxruntime's rows at accuracy_level 4 depend on their batch (MLAS's one-row
        # kernel; check_matrix.py): a row of its batch that leaves its own single run no
        # later than it leaves ours, where ours equals that single run, is counted apart
        own = cm.first_diff(b, alone[key])
        if what != "batch 1" and own is not None and own <= at and \
                cm.first_diff(single[key], alone[key]) is None:
            ort_batch += 1
            continue
        bad.append(f"{what}: tokens differ from onnxruntime-genai's at step {at - len(cm.P)}")
    for f in flips:
        print(f"    {f} (logits then {max(jp['max_logit_diff'], jr['max_logit_diff']):.3g} apart)")
    return bad, max(jp["max_logit_diff"], jr["max_logit_diff"]), ties_p + ties_r, ort_batch


ENGINE_CASES = [["--want-batched"],
                ["--want-batched", "--shared", "70", "--rounds", "2", "--want-cache-hits"],
                ["--want-batched", "--kv-blocks", "40", "--block-size", "8", "--shared", "20",
                 "--want-preemption"]]


def serving(build, d):
    """The serving engine on the package (engine-check: requests of different lengths at
    once, each equal to the generator's run of it alone; batched, the paged kernel storing
    and reading the pool's codes with the node's scales), with the prefix cache and with
    preemption; and --kv-dtype refused, naming the node."""
    import subprocess
    bad = []
    for args in ENGINE_CASES:
        e = subprocess.run([os.path.join(build, "tests", "engine-check"), d, *args],
                           capture_output=True, text=True)
        if e.returncode != 0:
            bad.append(f"engine-check {' '.join(args)}: "
                       f"{(e.stdout + e.stderr).strip().splitlines()[-1:]}")
    r = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "-m", d, "--ids", "1,2,3",
                        "--max-length", "6", "--kv-dtype", "int8"], capture_output=True, text=True)
    if r.returncode == 0 or "quantized cache of its own" not in r.stderr:
        bad.append(f"--kv-dtype int8 was not refused: {r.stderr.strip()[-200:]}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--types", default="llama,qwen3,qwen3_5_text")
    ap.add_argument("--dtypes", default="fp32,int4")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    a = ap.parse_args()
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxruntime_genai  # noqa: F401
    except ImportError as e:
        print(f"kv_quant_packages.py: skipped: {e} (pip install -r tools/requirements.txt)")
        sys.exit(77)
    print("kv_quant_packages.py: SKIPPED fp8_per_tensor, fp8_per_channel: onnxruntime's CPU "
          "GroupQueryAttention does not run a float8e4m3fn cache (no oracle)")
    build, work = os.path.abspath(a.build), os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    failures = 0
    for t in a.types.split(","):
        for dtype in a.dtypes.split(","):
            base = make(os.path.join(work, f"{t}-{dtype}"), t, dtype)
            for scheme in a.schemes.split(","):
                t0 = time.time()
                scales = calibrate(base, scheme, os.path.join(work, f"{t}-{dtype}-{scheme}.json"))
                d = make(os.path.join(work, f"{t}-{dtype}-{scheme}"), t, dtype,
                         ["--kv-cache-quant-scheme", scheme, "--kv-cache-scale-file", scales])
                bad, diff, ties, ort_batch = check(build, d, near_ties=dtype != "fp32")
                state = "FAIL" if bad else "ok"
                print(f"{t:8} {dtype:5} {scheme:17} {state}  max logit diff {diff:.2e}"
                      f"{f', near-ties at {ties}' if ties else ''}"
                      f"{f', {ort_batch} row(s) of onnxruntime-genai batch-dependent' if ort_batch else ''}"
                      f"  ({time.time() - t0:.1f} s)",
                      flush=True)
                schemes = a.schemes.split(",")
                if dtype == a.dtypes.split(",")[0] and scheme in (schemes[0], schemes[-1]):
                    bad += serving(build, d)
                for b in bad:
                    print("    " + b)
                failures += bool(bad)
    if failures:
        sys.exit(f"kv_quant_packages.py: {failures} package(s) failed")


if __name__ == "__main__":
    main()
