#!/usr/bin/env python3
"""Generation speed of onnx-genai against onnxruntime-genai on the same package.

Both engines run the same tests the same way (docs/PERFORMANCE.md, ../shared/docs
/benchmarking.md): random token ids, one warm-up run, R repetitions, EOS blocked
(min_length = max_length), greedy choice, the same thread count (intra_op_num_threads
for onnxruntime), each round in fresh processes, engines alternating A B A B. A
streaming-read bandwidth probe (`onnx-genai bench --probe-only`) runs before and after
every round; a round whose probe moved by more than 10 % is discarded.

    python3 bench/compare.py --model DIR [--model DIR2 ...] [--threads 2] [--rounds 3]
                             [-p 512] [-n 128] [--depths 0,2048] [--reps 5]

Prints a markdown table (one row per model and test) and the environment; --json-out
keeps every sample.
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --------------------------------------------------------------------------------------
# The onnxruntime-genai side, run as a child process (`compare.py --ort-worker ...`) so
# that each round starts fresh, as ours does.
# --------------------------------------------------------------------------------------

def ort_worker(a):
    import numpy as np
    import onnxruntime_genai as og

    out = {"engine": "onnxruntime-genai", "version": og.__version__, "threads": a.threads,
           "model": a.model, "tests": []}
    t0 = time.perf_counter()
    try:
        cfg = og.Config(a.model)
        if a.threads > 0:
            cfg.overlay(json.dumps({"model": {"decoder": {"session_options": {
                "intra_op_num_threads": a.threads, "inter_op_num_threads": 1}}}}))
        model = og.Model(cfg)
    except Exception as e:  # report, do not crash the comparison
        out["error"] = f"load: {e}"
        print(json.dumps(out))
        return 0
    out["load_s"] = time.perf_counter() - t0
    with open(os.path.join(a.model, "genai_config.json")) as f:
        vocab = json.load(f)["model"]["vocab_size"]
    rng = np.random.default_rng(a.seed)

    def generator(max_length):
        p = og.GeneratorParams(model)
        p.set_search_options(max_length=max_length, min_length=max_length, do_sample=False,
                             num_beams=1, repetition_penalty=1.0)
        return og.Generator(model, p)

    def ids(n):
        return rng.integers(0, vocab, n).astype(np.int32)

    def run_pp():
        g = generator(a.d + a.p + 1)
        if a.d:
            g.append_tokens(ids(a.d))
        prompt = ids(a.p)
        t0 = time.perf_counter()
        g.append_tokens(prompt)
        t1 = time.perf_counter()
        g.generate_next_token()  # picks from the prefill's logits, as ours does
        t2 = time.perf_counter()
        return a.p / (t1 - t0), t2 - t0, 0.0

    def run_tg():
        prompt = max(a.d, 1)
        g = generator(prompt + 1 + a.n)
        g.append_tokens(ids(prompt))
        g.generate_next_token()
        steps, t0 = [], time.perf_counter()
        prev = t0
        for _ in range(a.n):
            g.generate_next_token()
            t = time.perf_counter()
            steps.append(t - prev)
            prev = t
        return a.n / (prev - t0), max(steps), statistics.median(steps)

    try:
        for kind, fn, n in (("pp", run_pp, a.p), ("tg", run_tg, a.n)):
            if n <= 0:
                continue
            fn()  # warm-up
            samples = [fn() for _ in range(a.reps)]
            name = f"{kind}{n}" + (f"@d{a.d}" if a.d else "")
            t = {"name": name, "kind": kind, "samples_tokens_per_s": [s[0] for s in samples],
                 "tokens_per_s": {"median": statistics.median(s[0] for s in samples)}}
            key = "ttft_s" if kind == "pp" else "slowest_step_s"
            t[key] = {"median": statistics.median(s[1] for s in samples)}
            if kind == "tg":
                t["median_step_s"] = {"median": statistics.median(s[2] for s in samples)}
            out["tests"].append(t)
    except Exception as e:
        out["error"] = f"run: {e}"
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))
    return 0


# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------

def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def run_json(cmd):
    r = sh(cmd)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ["failed"]}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": [f"no JSON in output: {r.stdout[-300:]} {r.stderr[-300:]}"]}


def probe(a):
    r = run_json([a.bin, "bench", "--probe-only", "--json", "--threads", str(a.threads),
                  "--probe-mb", str(a.probe_mb)])
    return r.get("bandwidth", {}).get("best_gbps", float("nan"))


def ours_cmd(a, model, d):
    return [a.bin, "bench", "-m", model, "-p", str(a.p), "-n", str(a.n), "-d", str(d), "-r",
            str(a.reps), "--threads", str(a.threads), "--seed", str(a.seed), "--probe-mb", "0",
            "--json"] + (["--backend", a.backend] if a.backend else [])


def ort_cmd(a, model, d):
    return [sys.executable, os.path.abspath(__file__), "--ort-worker", "--model", model, "-p",
            str(a.p), "-n", str(a.n), "-d", str(d), "--reps", str(a.reps), "--threads",
            str(a.threads), "--seed", str(a.seed)]


def environment(a):
    env = {"python": platform.python_version(), "threads": a.threads,
           "ours_backend": a.backend or "auto"}
    env["bin"] = os.path.abspath(a.bin)
    # A binary built from an exported tree (git archive) names its commit in a COMMIT file
    # beside its build folder; otherwise it is this checkout's, possibly with edits.
    marker = os.path.join(os.path.dirname(os.path.dirname(env["bin"])), "COMMIT")
    if os.path.exists(marker):
        env["commit"] = open(marker).read().strip()
        env["tree_dirty"] = False
    else:
        r = sh(["git", "-C", ROOT, "rev-parse", "HEAD"])
        env["commit"] = r.stdout.strip()
        r = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
        env["tree_dirty"] = bool(r.stdout.strip())
    cache = os.path.join(os.path.dirname(os.path.abspath(a.bin)), "CMakeCache.txt")
    flags = {}
    if os.path.exists(cache):
        for line in open(cache):
            m = re.match(r"(CMAKE_BUILD_TYPE|CMAKE_C_COMPILER|CMAKE_C_FLAGS|CMAKE_C_FLAGS_RELEASE|"
                         r"OG_NATIVE|OG_SANITIZE):[A-Z]+=(.*)", line.strip())
            if m:
                flags[m.group(1)] = m.group(2)
    env["cmake"] = flags
    fm = os.path.join(os.path.dirname(os.path.abspath(a.bin)), "CMakeFiles", "onnx_genai.dir", "flags.make")
    if os.path.exists(fm):
        for line in open(fm):
            if line.startswith("C_FLAGS"):
                env["c_flags"] = line.split("=", 1)[1].strip()
    try:
        info = open("/proc/cpuinfo").read()
        env["cpu"] = re.search(r"model name\s*:\s*(.*)", info).group(1)
        fl = set(re.search(r"flags\s*:\s*(.*)", info).group(1).split())
        env["cpu_flags"] = " ".join(f for f in sorted(fl) if re.match(
            r"avx|fma|f16c|amx|sse4_2|bmi2", f))
    except (OSError, AttributeError):
        env["cpu"] = platform.processor()
    env["cores"] = os.cpu_count()
    try:
        import onnxruntime
        import onnxruntime_genai
        env["onnxruntime"] = onnxruntime.__version__
        env["onnxruntime_genai"] = onnxruntime_genai.__version__
    except ImportError as e:
        env["onnxruntime_genai"] = f"missing: {e}"
    env["loadavg_start"] = os.getloadavg()
    return env


def model_format(model):
    """A short description of the package's weights: dtype mix and quantized ops."""
    try:
        import onnx
        with open(os.path.join(model, "genai_config.json")) as f:
            dec = json.load(f)["model"]["decoder"]["filename"]
        m = onnx.load(os.path.join(model, dec), load_external_data=False)
        ops = {n.op_type for n in m.graph.node}
        names = {1: "fp32", 10: "fp16", 16: "bf16", 2: "uint8", 3: "int8", 21: "uint4", 22: "int4"}
        bytes_by = {}
        for t in m.graph.initializer:
            size = 0
            for ed in t.external_data:
                if ed.key == "length":
                    size = int(ed.value)
            size = size or len(t.raw_data) or 1
            bytes_by[t.data_type] = bytes_by.get(t.data_type, 0) + size
        main = max(bytes_by, key=bytes_by.get) if bytes_by else 1
        fmt = names.get(main, str(main))
        if "MatMulNBits" in ops:
            fmt = "int4 (MatMulNBits)"
        return fmt
    except Exception as e:  # the table still has a row
        return f"? ({type(e).__name__})"


def gmean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="package folder (repeatable)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-d", type=int, default=0, help="cached tokens before the tests (worker)")
    ap.add_argument("--depths", default="0", help="comma-separated -d values to run")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probe-mb", type=int, default=512)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "onnx-genai"))
    ap.add_argument("--json-out", help="write every sample and the environment here")
    ap.add_argument("--backend", help="our side's --backend (native, ort: onnxruntime through "
                    "our seam and generation loop, against onnxruntime-genai's own loop)")
    ap.add_argument("--ort-worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_worker:
        a.model = a.model[0]
        return ort_worker(a)

    env = environment(a)
    depths = [int(x) for x in a.depths.split(",") if x.strip()]
    results = []  # one entry per (model, depth)
    for model in a.model:
        fmt = model_format(model)
        for d in depths:
            entry = {"model": model, "format": fmt, "depth": d, "rounds": []}
            for r in range(a.rounds):
                before = probe(a)
                first, second = (ours_cmd(a, model, d), "ours"), (ort_cmd(a, model, d), "ort")
                if r % 2:  # A B, then B A: neither engine always runs first
                    first, second = second, first
                rnd = {"probe_before_gbps": before}
                for cmd, who in (first, second):
                    rnd[who] = run_json(cmd)
                rnd["probe_after_gbps"] = probe(a)
                moved = abs(rnd["probe_after_gbps"] - before) / before if before > 0 else float("inf")
                rnd["probe_moved"] = moved
                rnd["discarded"] = not (moved <= 0.10)
                entry["rounds"].append(rnd)
                print(f"# {os.path.basename(model.rstrip('/'))} d={d} round {r + 1}: probe "
                      f"{before:.1f} -> {rnd['probe_after_gbps']:.1f} GB/s"
                      f"{' (discarded: moved > 10%)' if rnd['discarded'] else ''}",
                      file=sys.stderr)
            results.append(entry)
    env["loadavg_end"] = os.getloadavg()

    rows, ratios = [], []
    for e in results:
        kept = [r for r in e["rounds"] if not r["discarded"]]
        note = ""
        if not kept:
            kept, note = e["rounds"], " (every round's probe moved > 10 %: all kept)"
        errs = {w: next((r[w]["error"] for r in kept if "error" in r[w]), None) for w in ("ours", "ort")}
        probes = [x for r in kept for x in (r["probe_before_gbps"], r["probe_after_gbps"])]
        bw = statistics.median(probes) if probes else float("nan")
        names = []
        for r in kept:
            for w in ("ours", "ort"):
                for t in r[w].get("tests", []):
                    if t["name"] not in names:
                        names.append(t["name"])
        for name in names:
            def samples(w):
                return [s for r in kept for t in r[w].get("tests", []) if t["name"] == name
                        for s in t["samples_tokens_per_s"]]

            def first_test(w):
                return next((t for r in kept for t in r[w].get("tests", []) if t["name"] == name), {})

            ours, ort = samples("ours"), samples("ort")
            meta = first_test("ours")
            bpt = meta.get("bytes_per_token")
            row = {"model": os.path.basename(e["model"].rstrip("/")), "format": e["format"],
                   "test": name, "bytes_per_token": bpt, "bandwidth_gbps": bw,
                   "kv_copy_bytes_per_step": meta.get("kv_copy_bytes_per_step"),
                   "ours_samples": ours, "ort_samples": ort, "note": note}
            if ours:
                row["ours"] = statistics.median(ours)
                row["ours_sd"] = statistics.stdev(ours) if len(ours) > 1 else 0.0
                row["ours_min"], row["ours_max"] = min(ours), max(ours)
            if ort:
                row["ort"] = statistics.median(ort)
            if ours and ort:
                row["ratio"] = row["ours"] / row["ort"]
                ratios.append(row["ratio"])
            if bpt and ours:
                row["gbps"] = row["ours"] * bpt / 1e9
                row["pct_probe"] = 100 * row["gbps"] / bw if bw > 0 else float("nan")
                if ort:
                    row["ort_gbps"] = row["ort"] * bpt / 1e9
            for w in ("ours", "ort"):
                vals = [t["median_step_s"]["median"] for r in kept for t in r[w].get("tests", [])
                        if t["name"] == name and "median_step_s" in t]
                if vals:
                    row[f"{w}_step_us"] = 1e6 * statistics.median(vals)
            ttft_key = "ttft_s"
            for w in ("ours", "ort"):
                vals = [t[ttft_key]["median"] for r in kept for t in r[w].get("tests", [])
                        if t["name"] == name and ttft_key in t]
                if vals:
                    row[f"{w}_ttft_ms"] = 1e3 * statistics.median(vals)
            rows.append(row)
        for w, err in errs.items():
            if err:
                rows.append({"model": os.path.basename(e["model"].rstrip("/")), "format": e["format"],
                             "test": f"({'ours' if w == 'ours' else 'onnxruntime-genai'} failed)",
                             "error": " ".join(err) if isinstance(err, list) else str(err)})

    def f(x, spec):
        return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"

    def hb(b):
        if not b:
            return "-"
        for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if b >= div:
                return f"{b / div:.2f} {unit}"
        return f"{b:.0f} B"

    print("| model | format | test | bytes/token | ours tok/s ± sd | ORT-genai tok/s | ours ÷ ORT "
          "| ours GB/s | % of probe | TTFT ours / ORT (ms) | median step ours / ORT (µs) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['format']} | {r['test']} | | {r['error']} | | | | | | |")
            continue
        tt = "-"
        if "ours_ttft_ms" in r or "ort_ttft_ms" in r:
            tt = f"{f(r.get('ours_ttft_ms'), '.2f')} / {f(r.get('ort_ttft_ms'), '.2f')}"
        st = "-"
        if "ours_step_us" in r or "ort_step_us" in r:
            st = f"{f(r.get('ours_step_us'), '.1f')} / {f(r.get('ort_step_us'), '.1f')}"
        is_tg = r["test"].startswith("tg")
        print(f"| {r['model']} | {r['format']} | {r['test']} | {hb(r['bytes_per_token']) if is_tg else '-'} "
              f"| {f(r.get('ours'), '.1f')} ± {f(r.get('ours_sd'), '.1f')} | {f(r.get('ort'), '.1f')} "
              f"| {f(r.get('ratio'), '.2f')} | {f(r.get('gbps'), '.2f') if is_tg else '-'} "
              f"| {f(r.get('pct_probe'), '.1f') if is_tg else '-'} | {tt} | {st} |")
    print(f"\ngeometric mean of ours ÷ ORT-genai over {len(ratios)} tests: {f(gmean(ratios), '.2f')}")
    step_ratios = [r["ort_step_us"] / r["ours_step_us"] for r in rows
                   if r.get("ours_step_us") and r.get("ort_step_us")]
    if step_ratios:
        print(f"geometric mean of ORT-genai ÷ ours median decode step time (>1: ours faster): "
              f"{f(gmean(step_ratios), '.2f')}")
    for e in results:
        for i, r in enumerate(e["rounds"]):
            print(f"- {os.path.basename(e['model'].rstrip('/'))} d={e['depth']} round {i + 1}: probe "
                  f"{r['probe_before_gbps']:.1f} -> {r['probe_after_gbps']:.1f} GB/s"
                  f"{' DISCARDED' if r['discarded'] else ''}")
    for r in rows:
        if r.get("kv_copy_bytes_per_step"):
            step = r.get("ours_step_us") or (1e6 / r["ours"] if r.get("ours") else float("nan"))
            print(f"- {r['model']} {r['test']}: our attention copies {hb(r['kv_copy_bytes_per_step'])} "
                  f"of past KV into present per decode step (mean over the run); median step "
                  f"{f(step, '.1f')} µs")
    print("\nenvironment: " + json.dumps(env))
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump({"environment": env, "results": results, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
