#!/usr/bin/env python3
"""The parity matrix: every text model type the builder exports, in the precisions a CPU
package comes in, against onnxruntime-genai (issue 20).

Packages are the model maker's (tools/make_model.py --type: the builder's graph layouts,
held to digests of the builder's own packages by maker_builder_layouts), random weights,
int4 blocks byte-identical to onnxruntime's MatMulNBits quantizer (the builder's
quantizer; tests/maker checks the bytes). Weights are drawn twice: as transformers
initialises a model for the type's config (normal, std 0.02; norm scales 1, biases 0),
and the maker's uniform ones (larger, norm scales off 1), which make activations and
their int8 steps larger. Per type and weights, four packages:

  fp32        float32 weights
  int4-l1     int4 MatMulNBits, accuracy_level 1 (float32 arithmetic)
  int4-l4     int4 at accuracy_level 4 (activations quantized to int8): the builder's CPU
              default, what downloaded CPU packages use
  int4-l4-tied  the same with the embedding read from the int4 lm_head
              (GatherBlockQuantized), as the builder writes a config with
              tie_word_embeddings (where the type is tied already, int4-l4 is that one)

For each package, with prompts P (8 tokens), R (8) and Q (3), 64 new tokens, greedy:
  1. `onnx-genai parity --through-ties` on P and on R: the logits of every step within
     its tolerance, native against onnxruntime, and the tokens the same but at near-ties
     (see below);
  2. our tokens for P at batch 1 equal onnxruntime-genai's;
  3. our equal-length batch [P, R] equals onnxruntime-genai's batch;
  4. in our batch [P, Q, R[:5]] of different lengths every row equals its single run;
  5. the serving engine (tests/serve engine-check: prompts of different lengths at once,
     greedy) gives each request exactly the generator's tokens.

Drift at accuracy_level 4. An activation one ulp away from onnxruntime's is enough to
move a product by a whole int8 step. Our MatMulNBits (at 32-value blocks, in the order
of the MLAS kernels onnxruntime runs on this CPU: its AVX2 or its AVX-512 class) and the
ops between its roundings on a hybrid's linear-attention layer give onnxruntime's bits
(docs/ARCHITECTURE.md, "onnxruntime's arithmetic, and row forms"), and so do, on CPUs
with AVX-512, GroupQueryAttention in float32 (decode and prompt, softcap, window-sized
caches) and LinearAttention's delta rules at head sizes that are multiples of 32. What
still differs in the last bit (the other attention forms, the MoE ops, LinearAttention's
other rules and sizes, the AVX2 and AMX classes of those ops) can, on random weights,
grow past the tolerance, most on the hybrids (linear attention, conv state, MoE). Such a
failure is "drift" when it is against onnxruntime (parity, or onnxruntime-genai's
tokens) at accuracy_level 4 and the same package at accuracy_level 1 (float32
arithmetic, same weights and graph) passes everything: the matrix reports it as drift,
named in the table, and it does not fail the test; issue 20 stays open for it.
Everything else fails: any precision's disagreement with our own other paths (batch
rows, the engine), fp32 and level-1 disagreement with onnxruntime, errors, and a level-4
disagreement whose level-1 twin fails too.

onnxruntime's own batches. At accuracy_level 4 onnxruntime's rows depend on their batch
(MLAS takes another kernel for a product of one row: a decode step alone computes
otherwise than the same step in a batch of two); ours compute each token as its run
alone does. A row of onnxruntime-genai's batch of 2 that leaves onnxruntime-genai's own
single run no later than it leaves ours is counted apart ('b' in the table) when ours
equals its single run and that equals onnxruntime-genai's.

Near-ties. At accuracy_level 4 an activation one ulp away from onnxruntime's (our
transcendental functions and sums round differently in the last bit) can fall on the
other side of an int8 rounding boundary and move a product by a quantization step;
on random weights two candidate tokens are sometimes closer than that. Where the two
backends pick different tokens at a step whose logits are within the tolerance, that is
a tie: parity reports onnxruntime's margin between the two picks and goes on with
onnxruntime's token. Checks 2 and 3 then hold up to the ties: the tokens must be equal
until the first one, and parity must pass through all of them. A step out of tolerance,
or tokens that differ without a tie, fail.

The summary prints the matrix (type x precision: "=" the same tokens, "=~N" the same up
to N near-ties, "drift" and "FAIL" as above) and writes it as markdown to WORK/matrix.md (README.md's table
is that file from a run, with its machine).

usage: check_matrix.py BUILD WORK --part K/N      (types K, K+N, ... ; writes WORK/results)
       check_matrix.py BUILD WORK --types A,B     (those types only)
       check_matrix.py BUILD WORK --summary [--types A,B]  (the matrix of the results of
                                                  those types, all by default)
       check_matrix.py BUILD WORK --readme README.md   (the last summary into the README)
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
from model_maker import catalog  # noqa: E402
import check_types  # noqa: E402

P = [5, 77, 300, 12, 401, 9, 256, 33]
Q = [200, 17, 42]
R = [33, 256, 9, 401, 12, 300, 77, 5]
NEW = 64
PRECISIONS = ["fp32", "int4-l1", "int4-l4", "int4-l4-tied"]
# Weights: as transformers initialises a model for its config (normal std 0.02, norms 1),
# and the maker's uniform ones (std 0.08, norm scales 1 +- 0.17): larger than a fresh
# model's, they make activations and their int8 steps larger, harder on the hybrids.
INITS = ["transformers", "uniform"]


def label(init, prec):
    return prec if init == "transformers" else prec + " (U)"


def types():
    return sorted(catalog.TINY) + sorted(catalog.SPLIT)


def tied_already(t):
    return catalog.tiny(catalog.SPLIT.get(t, t)).tied


def variants(t):
    return [(i, p) for i in INITS for p in PRECISIONS
            if not (p == "int4-l4-tied" and tied_already(t))]


def make(work, t, init, prec):
    d = os.path.join(work, "packages", f"{t}-{init}-{prec}")
    shutil.rmtree(d, ignore_errors=True)  # never a package an older maker wrote
    args = ["--type", t, "--seed", "1", "--init", init]
    if prec == "fp32":
        args += ["--dtype", "fp32"]
    else:
        args += ["--dtype", "int4", "--accuracy-level", prec.split("-")[1][1:]]
        if prec.endswith("tied"):
            args += ["--shared-embeddings"]
    import make_model
    with contextlib.redirect_stdout(io.StringIO()):
        if make_model.main([*args, "--out", d]) != 0:
            raise RuntimeError(f"make_model.py {' '.join(args)} failed")
    return d


def parity(build, d, prompt):
    r = subprocess.run([os.path.join(build, "onnx-genai"), "parity", d, "--ids",
                        ",".join(map(str, prompt)), "--max-length", str(len(prompt) + NEW),
                        "--min-length", str(len(prompt) + NEW),
                        "--through-ties", "--json"], capture_output=True, text=True)
    if r.returncode not in (0, 1) or not r.stdout.strip():
        raise RuntimeError(f"parity {d}: {r.stderr.strip()}")
    j = json.loads(r.stdout)
    ties = [s["step"] for s in j["steps"] if "tie" in s]
    return r.returncode == 0, ties, j


def first_diff(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                None if len(a) == len(b) else min(len(a), len(b)))


def check_package(build, work, t, init, prec):
    d = make(work, t, init, prec)
    res = {"type": t, "init": init, "precision": prec, "failures": [], "ties": 0,
           "against_ort": []}
    return compare_package(build, d, res)


def compare_package(build, d, res):
    """The comparisons above on the package in d; failures go into res (its "failures",
    and "against_ort" for those against onnxruntime), which it returns."""
    def fail(msg, against_ort=False):
        res["failures"].append(msg)
        if against_ort:  # a disagreement with onnxruntime, not among our own paths
            res["against_ort"].append(msg)
    L = len(P) + NEW
    prec = res["precision"]
    ok_p, ties_p, jp = parity(build, d, P)
    ok_r, ties_r, jr = parity(build, d, R)
    res["ties"] = len(ties_p) + len(ties_r)
    res["max_logit_diff"] = max(jp["max_logit_diff"], jr["max_logit_diff"])
    for name, ok, j in (("P", ok_p, jp), ("R", ok_r, jr)):
        if not ok:
            fld = j.get("first_logit_divergence") or j.get("first_token_divergence")
            fail(f"parity on prompt {name}: {json.dumps(fld)}", True)
    single = {k: check_types.ours(build, d, [p], L)[0] for k, p in (("P", P), ("R", R), ("Q", Q),
                                                                    ("R5", R[:5]))}
    theirs_p = check_types.theirs(d, [P], L)[0]
    at = first_diff(single["P"], theirs_p)
    if at is not None and not (ties_p and at - len(P) >= ties_p[0]):
        fail(f"batch 1: tokens differ from onnxruntime-genai's at step {at - len(P)} "
             f"(parity ties at {ties_p})", True)
    ours2, theirs2 = check_types.ours(build, d, [P, R], L), check_types.theirs(d, [P, R], L)
    theirs1 = {"P": theirs_p}
    for i, (ties, key) in enumerate(((ties_p, "P"), (ties_r, "R"))):
        at = first_diff(ours2[i], theirs2[i])
        if ours2[i] != single[key]:
            fail(f"batch [P, R]: row {i} differs from its single run")
        if at is None or (ties and at - len(P) >= ties[0]):
            continue
        # At accuracy_level 4 onnxruntime's own rows depend on their batch (MLAS takes
        # another kernel for a product of one row: a decode step alone, against one of
        # a batch); ours compute each token as its run alone does, so they equal
        # onnxruntime-genai's single runs. A row of its batch that leaves its own single
        # run no later than it leaves ours is its batch dependence, not a difference of
        # ours: counted apart, not a failure (ours equals its single run, checked above
        # and against onnxruntime-genai's batch 1 and parity).
        if key not in theirs1:
            theirs1[key] = check_types.theirs(d, [R], L)[0]
        own = first_diff(theirs2[i], theirs1[key])
        if (prec.startswith("int4-l4") and own is not None and own <= at and
                first_diff(single[key], theirs1[key]) is None):
            res["ort_batch"] = res.get("ort_batch", 0) + 1
            continue
        fail(f"batch [P, R]: row {i} differs from onnxruntime-genai's at step {at - len(P)}",
             True)
    return own_paths(build, d, res, single)


def own_paths(build, d, res, single=None):
    """The checks among our own paths, with no oracle: the rows of a batch of different
    lengths (P, Q, R[:5]) against their single runs (`single`, by key, run where not
    given), and the serving engine against the generator (engine-check). Failures go into
    res["failures"]; returns res."""
    L = len(P) + NEW
    rows = {"P": P, "Q": Q, "R5": R[:5]}
    single = dict(single or {})
    for key, p in rows.items():
        if key not in single:
            single[key] = check_types.ours(build, d, [p], L)[0]
    batch = check_types.ours(build, d, list(rows.values()), L)
    for i, key in enumerate(rows):
        if batch[i] != single[key]:
            res["failures"].append(f"batch of lengths 8/3/5: row {i} differs from its single "
                                   f"run at {first_diff(batch[i], single[key])}")
    e = subprocess.run([os.path.join(build, "tests", "engine-check"), d], capture_output=True,
                       text=True)
    if e.returncode != 0:
        res["failures"].append(f"engine-check: {(e.stdout + e.stderr).strip().splitlines()[-1:]}")
    return res


def drift(res, level1):
    """A level-4 package's failures are drift when every one is against onnxruntime and
    its level-1 twin passed (see the top of this file)."""
    return (res["precision"].startswith("int4-l4") and res["failures"] and level1 is not None
            and not level1["failures"] and len(res["against_ort"]) == len(res["failures"]))


def run(build, work, names):
    os.makedirs(os.path.join(work, "results"), exist_ok=True)
    bad = 0
    for t in names:
        level1 = None
        for init, prec in variants(t):
            t0 = time.time()
            try:
                res = check_package(build, work, t, init, prec)
            except Exception as ex:  # a crash or a refusal is a failure of this package
                res = {"type": t, "init": init, "precision": prec,
                       "failures": [f"error: {ex}"], "ties": 0, "against_ort": []}
            if prec == "int4-l1":
                level1 = res
            if drift(res, level1):
                res["drift"], res["failures"] = res["failures"], []
            res["seconds"] = round(time.time() - t0, 1)
            with open(os.path.join(work, "results", f"{t}-{init}-{prec}.json"), "w") as f:
                json.dump(res, f)
            verdict = "FAIL" if res["failures"] else "DRIFT" if res.get("drift") else "ok  "
            note = f", {res['ties']} near-tie(s)" if res["ties"] else ""
            print(f"{verdict} {t} {label(init, prec)}{note} ({res['seconds']} s)", flush=True)
            for x in res["failures"] + res.get("drift", []):
                print(f"     {x}")
            bad += bool(res["failures"])
    return bad


def cell(res):
    if res is None:
        return "not run"
    if res["failures"]:
        return "FAIL"
    if res.get("drift"):
        return "drift"
    mark = f"=~{res['ties']}" if res["ties"] else "="
    return mark + "b" if res.get("ort_batch") else mark


def tally(res, counts):
    """The table cell of a result, counted into counts["missing"], ["failed"], ["drifted"]."""
    counts["missing"] += res is None
    counts["failed"] += bool(res and res["failures"])
    counts["drifted"] += bool(res and not res["failures"] and res.get("drift"))
    return cell(res)


def summary(work, names):
    """The table of the results under WORK for the types NAMES; a package of theirs with no
    result is 'not run' and fails the summary."""
    results = {}
    rdir = os.path.join(work, "results")
    for f in sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []:
        with open(os.path.join(rdir, f)) as fh:
            r = json.load(fh)
        if r["type"] in names:
            results[(r["type"], r.get("init", "uniform"), r["precision"])] = r
    columns = [(i, p) for i in INITS for p in PRECISIONS]
    lines = ["| model type | " + " | ".join(label(i, p) for i, p in columns) + " |",
             "|---|" + "---|" * len(columns)]
    n = {"missing": 0, "failed": 0, "drifted": 0}
    for t in names:
        cells = []
        for i, p in columns:
            if (i, p) not in variants(t):
                cells.append("(tied)")
                continue
            cells.append(tally(results.get((t, i, p)), n))
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    legend = (f"'=': 64 greedy tokens equal onnxruntime-genai's (batch 1 and an equal-length "
              f"batch of 2), logits within parity's tolerance at every step, rows of a batch "
              f"of different lengths equal their single runs, the engine equals the "
              f"generator; '=~N': the same but at N near-ties (the two backends' logits "
              f"within tolerance, the top two tokens closer than their difference); 'b' after "
              f"either: a row of onnxruntime-genai's batch of 2 leaves its own single run "
              f"(at accuracy_level 4 its arithmetic depends on the batch), and ours equals "
              f"the single runs; 'drift': "
              f"at accuracy_level 4 only, against onnxruntime only, with the level-1 package "
              f"passing (see below); '(tied)': the type's int4-l4 package is tied already. "
              f"Weights as transformers initialises the config (normal, std 0.02, norms 1), "
              f"or '(U)' the maker's uniform ones (std 0.08, norm scales 1 +- 0.17). "
              f"{len(results)} packages: {n['failed']} failed, {n['drifted']} drifted, "
              f"{n['missing']} not run.")
    notes = [f"- {t} {label(i, p)}: " + "; ".join(r.get("drift", []) + r["failures"])
             for (t, i, p), r in sorted(results.items()) if r["failures"] or r.get("drift")]
    text = "\n".join([machine(), "", "\n".join(lines), "", legend, *([""] + notes if notes else [])])
    with open(os.path.join(work, "matrix.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if n["failed"] or n["missing"] else 0


def machine():
    """Where and on what the run happened: the CPU, the commit, the oracles' versions."""
    cpu, flags = "unknown CPU", []
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        info = f.read().splitlines()
        cpu = next((ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), cpu)
        have = next((ln.split(":", 1)[1].split() for ln in info if ln.startswith("flags")), [])
        flags = [x for x in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile") if x in have]
    cpu += f" [{' '.join(flags) or 'no AVX2'}]"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown commit"
    import onnxruntime
    import onnxruntime_genai
    return (f"Run of {time.strftime('%Y-%m-%d')} at commit {commit} on {cpu} "
            f"({os.cpu_count()} CPUs), onnxruntime {onnxruntime.__version__}, "
            f"onnxruntime-genai {onnxruntime_genai.__version__}.")


BEGIN, END = "<!-- parity matrix: begin -->", "<!-- parity matrix: end -->"


def readme(work, path):
    """Puts WORK/matrix.md between the README's markers."""
    with open(os.path.join(work, "matrix.md")) as f:
        table = f.read()
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"{path} has no '{BEGIN}' ... '{END}' markers")
        return 1
    head, rest = text.split(BEGIN, 1)
    text = head + BEGIN + "\n" + table + END + rest.split(END, 1)[1]
    with open(path, "w") as f:
        f.write(text)
    return 0


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    build, work, mode = argv[1], argv[2], argv[3]
    if mode == "--summary":
        names = argv[5].split(",") if argv[4:5] == ["--types"] else types()
        return summary(work, names)
    if mode == "--readme":
        return readme(work, argv[4])
    if mode == "--part":
        k, n = map(int, argv[4].split("/"))
        names = types()[k - 1::n]
    elif mode == "--types":
        names = argv[4].split(",")
    else:
        print(__doc__)
        return 2
    return 1 if run(build, work, names) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
