#!/usr/bin/env python3
"""`--profile FILE` and `bench --per-op` (src/backends/profile.c), on the tiny GPT-2
package: the trace must be valid JSON in Chrome's trace-event format, with one complete
("X") slice per graph run and inside each run exactly one node slice per node of the
graph (counted with the onnx package from the model file), each naming its op, its input
and output shapes, and the thread; `bench --per-op` must list the graph's ops with calls
that add up to the graph's nodes per decode step. No timing is asserted.

    profile_check.py ONNX_GENAI_BINARY SHARED_DIR      (exit 77: package or onnx missing)
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def graph_ops(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return collections.Counter(
        (n.domain + "." if n.domain and n.domain != "ai.onnx" else "") + n.op_type
        for n in m.graph.node)


def check_trace(path, ops, runs_expected, first_ids_shape):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"]
    runs = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "run"]
    nodes = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "node"]
    names = [e for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"]
    if len(runs) != runs_expected:
        fail(f"{path}: {len(runs)} run slices, expected {runs_expected}")
    if not names:
        fail(f"{path}: no thread_name metadata")
    per_run = sum(ops.values())
    if len(nodes) != per_run * runs_expected:
        fail(f"{path}: {len(nodes)} node slices, expected {per_run} x {runs_expected}")
    if d["otherData"]["node_slices"] != len(nodes) or d["otherData"]["dropped_node_slices"]:
        fail(f"{path}: otherData {d['otherData']}")
    for e in ev:
        if e.get("ph") == "X":
            for key in ("pid", "tid", "ts", "dur", "name"):
                if key not in e:
                    fail(f"{path}: slice without {key}: {e}")
            if e["dur"] < 0:
                fail(f"{path}: negative duration: {e}")
    # every node slice lies inside one run slice of its thread, and each run holds the
    # graph's nodes exactly once
    for r in runs:
        lo, hi = r["ts"], r["ts"] + r["dur"]
        inside = [e for e in nodes if e["tid"] == r["tid"] and lo - 0.002 <= e["ts"]
                  and e["ts"] + e["dur"] <= hi + 0.002]
        got = collections.Counter(e["args"]["op"] for e in inside)
        if got != ops:
            fail(f"{path}: a run's node ops {dict(got)} differ from the graph's {dict(ops)}")
    for e in nodes:
        a = e["args"]
        if a["graph"] != "past.onnx" or not isinstance(a["threads"], int) or a["threads"] < 1:
            fail(f"{path}: node args {a}")
        for t in a["inputs"] + a["outputs"]:
            if t is not None and (not isinstance(t["dtype"], str) or
                                  not all(isinstance(x, int) and x >= 0 for x in t["shape"])):
                fail(f"{path}: bad tensor description {t}")
        if a["op"] == "MatMul":
            x, w = a["inputs"][0]["shape"], a["inputs"][1]["shape"]
            y = a["outputs"][0]["shape"]
            if x[-1] != w[0] or y[-1] != w[1] or y[:-1] != x[:-1]:
                fail(f"{path}: MatMul shapes {x} x {w} -> {y}")
    first = min(nodes, key=lambda e: e["ts"])
    ids = [t for t in first["args"]["inputs"] if t is not None][0]["shape"]
    if ids != first_ids_shape:
        fail(f"{path}: the first node's first input is {ids}, expected {first_ids_shape}")
    return d


def main():
    binary, shared = sys.argv[1], sys.argv[2]
    pkg = os.path.join(shared, "models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32")
    if not os.path.isfile(os.path.join(pkg, "genai_config.json")):
        print(f"SKIP: {pkg} is missing")
        return 77
    try:
        ops = graph_ops(os.path.join(pkg, "past.onnx"))
    except ImportError:
        print("SKIP: the onnx Python package is missing (tools/requirements.txt)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        # generate: a 3-token prompt and 5 new tokens: the prompt run picks the first, 4
        # decode steps the others -> 5 runs of the graph
        trace = os.path.join(tmp, "gen.json")
        subprocess.run([binary, "generate", "-m", pkg, "--ids", "5,6,7", "--max-length", "8",
                        "--min-length", "8", "--threads", "2", "--profile", trace],
                       check=True, stdout=subprocess.DEVNULL)
        check_trace(trace, ops, 5, [1, 3])
        # bench: a pp4 and a tg3 test, one warm-up and 2 repetitions each; a tg run is a
        # one-token prompt and 3 steps (its first token is picked from the prompt's run)
        trace = os.path.join(tmp, "bench.json")
        out = subprocess.run([binary, "bench", "-m", pkg, "-p", "4", "-n", "3", "-r", "2",
                              "--threads", "1", "--probe-mb", "0", "--per-op", "--profile",
                              trace], check=True, capture_output=True, text=True).stdout
        check_trace(trace, ops, 3 * 1 + 3 * 4, [1, 4])
        # the per-op tables: one for pp4, one for tg3; calls per step add up to the graph
        tables = re.split(r"\nops by total time, ", out)[1:]
        if len(tables) != 2 or not tables[0].startswith("pp4") or not tables[1].startswith("tg3"):
            fail(f"per-op tables missing:\n{out}")
        for tab in tables:
            rows = [l for l in tab.splitlines() if l.startswith("| ") and not l.startswith("| op ")]
            got = {r.split("|")[1].strip(): float(r.split("|")[2]) for r in rows}
            if got != {k: float(v) for k, v in ops.items()}:
                fail(f"per-op calls per run {got} differ from the graph's {dict(ops)}")
        # bench --json with --per-op keeps stdout one JSON object
        out = subprocess.run([binary, "bench", "-m", pkg, "-p", "2", "-n", "2", "-r", "1",
                              "--probe-mb", "0", "--per-op", "--json"], check=True,
                             capture_output=True, text=True)
        json.loads(out.stdout)
        if "ops by total time" not in out.stderr:
            fail("bench --json --per-op: no per-op table on stderr")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
