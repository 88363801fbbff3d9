#!/usr/bin/env python3
"""onnx-genai against its peers on the same weights, in one run, one table.

    python3 bench/peers.py --package DIR [--package DIR2] [--stories DIR] [--small DIR]
        [--small-threads 1,2] [--threads 2] [--rounds 3] [--reps 3] [-p 512] [-n 128]
        [--depths 0,2048] [--batches 1,4,8,16] [--kv-dtype auto,int8] [--llama-bench PATH]
        [--llama2c DIR] [--json-out FILE]

Peers (docs/PERFORMANCE.md, ../shared/docs/benchmarking.md):
  - onnxruntime-genai on the very same package folder (bench/compare.py's worker, same
    threads through intra_op_num_threads);
  - llama.cpp's llama-bench on the same int4 weights written as GGUF Q4_0 by
    tools/make_gguf.py (made on first use next to --gguf-dir), same threads;
  - llama2.c's run.c (-Ofast -march=native) on stories260K against our package made from
    the same checkpoint (--stories; run.c reads stories260K.bin and tok512.bin from the
    --llama2c folder). run.c stops at a generated BOS, so it is fed a prompt longer than
    its steps: every step is then one forward pass, as each of our decode steps is.

--kv-dtype LIST runs each --package once per KV cache type (ours: `bench --kv-dtype`;
the rows are labelled "PACKAGE kv TYPE"): llama.cpp gets the matching cache type (int8:
`-ctk q8_0 -ctv q8_0 -fa 1`, f16/bf16 as they are; f32 and auto its default f16, fp8 none),
onnxruntime-genai runs only with auto and f32 (its cache is the package's). A third table
gives each type's decode speed against the first one's (e.g. int8 ÷ f32). The issue's
long-context line (tg128@d8192, int8 against float32 and llama.cpp q8_0):

    python3 bench/peers.py --package PKG --depths 8192 -p 0 --batches 1 --kv-dtype f32,int8 \
        --no-ort

Small packages (--small, e.g. the gpt2 test package, and --stories) run pp and tg
(--small-p/--small-n) against onnxruntime-genai at each of --small-threads.

Each round starts every engine in a fresh process, in an order that rotates from round
to round, with a streaming-read bandwidth probe (`onnx-genai bench --probe-only`) before
and after; a round whose probe moved by more than 10 % is discarded (unless all were).
Decode at batch B (-b) is ours alone: the aggregate tokens/s of B sequences, against
our batch 1 in the same round. The table gives medians over the kept rounds' samples,
their spread, ratios, achieved GB/s and the share of the probe (decode); a second table
gives per run of ours the open time, bytes prepared and released, and resident memory
(after open, peak, while decoding with the cache full) against weights + KV; the CPU
model and flags, threads, commit and probes are printed with it. Ctrl-C ends a long run
early with the table of the rounds completed so far.
"""
import argparse
import datetime
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the onnxruntime-genai worker, probe, environment)

LLAMA_DEFAULT = "/work/peers/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-bench"
LLAMA2C_DEFAULT = "/work/peers/llama2c"


def run(cmd, env=None, timeout=3600):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if r.returncode != 0:
        return None, (r.stderr.strip() or r.stdout.strip())[-400:]
    return r, None


# ---- one engine, one round: {test name: [tokens/s samples]} and extras ---------------

# what `bench --json` says about opening and memory, kept per model for the summary lines
MEMORY_KEYS = ("load_s", "prepare_s", "prepared_bytes", "released_bytes", "rss_after_open_bytes",
               "peak_rss_bytes", "rss_decoding_bytes", "weight_bytes", "kv_bytes_per_position", "isa", "kernels", "pack_cache")


def ours(a, pkg, d, p, n, b=1, threads=None, kv="auto"):
    cmd = [a.bin, "bench", "-m", pkg, "-p", str(p), "-n", str(n), "-d", str(d), "-b", str(b),
           "-r", str(a.reps), "--threads", str(threads or a.threads), "--seed", str(a.seed),
           "--probe-mb", "0", "--json"]
    if kv != "auto":
        cmd += ["--kv-dtype", kv]
    r, err = run(cmd)
    if err:
        return {"error": err}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    mem = {k: j.get(k) for k in MEMORY_KEYS}
    # the most cache positions held at once: the depth plus the prompt, or plus the decode
    mem["positions"] = b * (d + max(p, n + 1))
    mem["run"] = f"-p {p} -n {n} -d {d} -b {b} --threads {threads or a.threads}" + \
        (f" --kv-dtype {kv}" if kv != "auto" else "")
    return {"tests": {t["name"]: t["samples_tokens_per_s"] for t in j["tests"]},
            "bytes_per_token": {t["name"]: t.get("bytes_per_token") for t in j["tests"]},
            "memory": mem}


def ort(a, pkg, d, p, n, threads=None):
    c = argparse.Namespace(p=p, n=n, reps=a.reps, threads=threads or a.threads, seed=a.seed)
    r, err = run(compare.ort_cmd(c, pkg, d))
    if err:
        return {"error": err}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    if "error" in j:
        return {"error": j["error"]}
    return {"tests": {t["name"]: t["samples_tokens_per_s"] for t in j["tests"]},
            "peak_rss": j.get("peak_rss_bytes")}


# llama-bench's cache types for ours (fp8: none); quantized V needs flash attention
# (f32: llama.cpp's default f16 cache; its llama-bench refuses -ctk f32)
LLAMA_KV = {"auto": [], "f32": [], "f16": ["-ctk", "f16", "-ctv", "f16"],
            "bf16": ["-ctk", "bf16", "-ctv", "bf16"], "int8": ["-ctk", "q8_0", "-ctv", "q8_0", "-fa", "1"]}


def llama(a, gguf, d, p, n, kv="auto"):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.dirname(a.llama_bench) + ":" + env.get("LD_LIBRARY_PATH", "")
    tests = {}
    for kind, pp, tg in (("pp", p, 0), ("tg", 0, n)):
        if (pp or tg) == 0:
            continue
        cmd = [a.llama_bench, "-m", gguf, "-p", str(pp), "-n", str(tg), "-d", str(d), "-r",
               str(a.reps), "-t", str(a.threads), "-o", "jsonl"] + LLAMA_KV[kv]
        r, err = run(cmd, env=env)
        if err:
            return {"error": err}
        for line in r.stdout.splitlines():
            if not line.startswith("{"):
                continue
            t = json.loads(line)
            name = f"pp{t['n_prompt']}" if t["n_prompt"] else f"tg{t['n_gen']}"
            if t.get("n_depth"):
                name += f"@d{t['n_depth']}"
            tests[name] = t["samples_ts"]
            tests["_build"] = t.get("build_commit")
    return {"tests": tests}


def llama2c(a, steps):
    """run.c on stories260K: one sample per process (it prints one tok/s)."""
    ckpt = os.path.join(a.llama2c_models, "stories260K.bin")
    tok = os.path.join(a.llama2c_models, "tok512.bin")
    prompt = " ".join(["Once upon a time, there was a little girl named Lily who loved to play."] * 60)
    samples = []
    for _ in range(a.reps):
        r, err = run([os.path.join(a.llama2c, "run"), ckpt, "-z", tok, "-t", "0", "-n",
                      str(steps), "-i", prompt])
        if err:
            return {"error": err}
        m = re.search(r"achieved tok/s: ([0-9.]+)", r.stderr + r.stdout)
        if not m:
            return {"error": "run.c printed no tok/s"}
        samples.append(float(m.group(1)))
    return {"tests": {f"tg{steps - 2}": samples}}


# ---- the driver ------------------------------------------------------------------------

def make_gguf(a, pkg):
    name = os.path.basename(os.path.abspath(pkg)) + ".Q4_0.gguf"
    path = os.path.join(a.gguf_dir, name)
    if not os.path.exists(path):
        os.makedirs(a.gguf_dir, exist_ok=True)
        r, err = run([sys.executable, os.path.join(ROOT, "tools", "make_gguf.py"), "--package", pkg,
                      "--out", path])
        if err:
            print(f"# no GGUF for {pkg}: {err}", file=sys.stderr)
            return None
    return path


def lscpu():
    info = {}
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Model name", "CPU(s)", "L2 cache", "L3 cache", "CPU MHz", "Hypervisor vendor"):
            m = re.search(rf"^{re.escape(key)}:\s*(.*)$", text, re.M)
            if m:
                info[key] = m.group(1).strip()
        for key in ("CPU family", "Model"):
            m = re.search(rf"^{key}:\s*(\S+)\s*$", text, re.M)
            if m:
                info[key] = m.group(1)
        m = re.search(r"^Flags:\s*(.*)$", text, re.M)
        if m:
            info["flags"] = " ".join(f for f in m.group(1).split() if re.match(
                r"avx|amx|fma|f16c|vnni|bf16", f))
    except OSError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package", action="append", default=[], help="int4 package (repeatable)")
    ap.add_argument("--stories", help="stories260K fp32 package (tools/make_model.py --from-llama2c)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--depths", default="0,2048")
    ap.add_argument("--batches", default="1,4,8,16")
    ap.add_argument("--stories-steps", type=int, default=512, help="run.c -n; ours decodes n - 2")
    ap.add_argument("--small", action="append", default=[],
                    help="small package run like --stories without run.c (repeatable; e.g. the gpt2 test package)")
    ap.add_argument("--small-threads", default="", help="thread counts for --small/--stories (default --threads)")
    ap.add_argument("--small-p", type=int, default=128)
    ap.add_argument("--small-n", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probe-mb", type=int, default=512)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "onnx-genai"))
    ap.add_argument("--llama-bench", default=LLAMA_DEFAULT)
    ap.add_argument("--llama2c", default=LLAMA2C_DEFAULT, help="folder with run.c's binary, run")
    ap.add_argument("--llama2c-models", default=os.path.join(ROOT, "..", "shared", "models", "llama2c"),
                    help="folder with stories260K.bin and tok512.bin")
    ap.add_argument("--gguf-dir", default="/tmp/og-peers")
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--kv-dtype", default="auto",
                    help="KV cache types for --package, comma-separated (auto, f32, f16, bf16, int8, fp8)")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    depths = [int(x) for x in a.depths.split(",") if x.strip()]
    kvs = [x.strip() for x in a.kv_dtype.split(",") if x.strip()] or ["auto"]
    for kv in kvs:
        if kv not in ("auto", "f32", "f16", "bf16", "int8", "fp8"):
            ap.error(f"--kv-dtype: '{kv}' is not one of auto, f32, f16, bf16, int8, fp8")
    batches = [int(x) for x in a.batches.split(",") if x.strip()]
    have_llama = os.path.exists(a.llama_bench)
    have_l2c = os.path.exists(os.path.join(a.llama2c, "run"))

    # jobs: (model label, engine, callable) run once per round, engines rotating
    jobs = []
    kv_labels = {}  # row label -> (package label, kv type), for the table between types
    for pkg, kv in [(pkg, kv) for pkg in a.package for kv in kvs]:
        base = os.path.basename(os.path.abspath(pkg))
        label = base if kv == "auto" else f"{base} kv {kv}"
        kv_labels[label] = (base, kv)
        gguf = make_gguf(a, pkg) if have_llama and kv in LLAMA_KV else None
        for d in depths:
            p = a.p if d == 0 else 0  # the prefill is measured from the empty cache
            jobs.append((label, "ours", lambda pkg=pkg, d=d, p=p, kv=kv: ours(a, pkg, d, p, a.n, kv=kv)))
            if not a.no_ort and kv in ("auto", "f32"):
                jobs.append((label, "ort", lambda pkg=pkg, d=d, p=p: ort(a, pkg, d, p, a.n)))
            if gguf:
                jobs.append((label, "llama.cpp", lambda g=gguf, d=d, p=p, kv=kv: llama(a, g, d, p, a.n, kv)))
        for b in batches:
            if b > 1:
                jobs.append((label, "ours", lambda pkg=pkg, b=b, kv=kv: ours(a, pkg, 0, 0, a.n, b, kv=kv)))
    # small packages (the gpt2 test package, stories260K): pp and tg against onnxruntime-genai
    # at each of --small-threads; stories260K's long decode also against run.c (one thread)
    small_threads = [int(x) for x in a.small_threads.split(",") if x.strip()] or [a.threads]
    for pkg in a.small + ([a.stories] if a.stories else []):
        base = os.path.basename(os.path.abspath(pkg))
        for t in small_threads:
            label = f"{base} {t}t"
            tests = [(a.small_p, a.small_n)]
            if pkg == a.stories:
                tests.append((0, a.stories_steps - 2))
            for p, n in tests:
                jobs.append((label, "ours", lambda pkg=pkg, p=p, n=n, t=t: ours(a, pkg, 0, p, n, 1, t)))
                if not a.no_ort:
                    jobs.append((label, "ort", lambda pkg=pkg, p=p, n=n, t=t: ort(a, pkg, 0, p, n, t)))
            if pkg == a.stories and have_l2c:
                jobs.append((label, "llama2.c", lambda: llama2c(a, a.stories_steps)))

    env = compare.environment(argparse.Namespace(bin=a.bin, threads=a.threads, backend=None))
    env["lscpu"] = lscpu()
    # what bench/render_results.py prints above each table
    env["command"] = shlex.join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0].startswith(ROOT)
                                 else sys.argv[0]] + sys.argv[1:])
    env["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    env["llama_bench"] = a.llama_bench if have_llama else None
    rounds, partial = [], {"results": []}
    # Ctrl-C (SIGINT) ends the run early: the table covers the rounds completed so far
    # (or the interrupted one, if none was), so that a long run on a busy machine still
    # reports; each finished round is also written to --json-out as it ends.
    try:
        for r in range(a.rounds):
            pa = argparse.Namespace(bin=a.bin, threads=a.threads, probe_mb=a.probe_mb)
            before = compare.probe(pa)
            k = r % max(1, len(jobs))
            order = jobs[k:] + jobs[:k]
            res = []
            partial = {"probe_before": before, "probe_after": float("nan"), "moved": float("nan"),
                       "discarded": True, "interrupted": True, "results": res}
            for label, eng, fn in order:
                out = fn()
                res.append({"model": label, "engine": eng, **out})
                if "error" in out:
                    print(f"# {label} {eng}: {out['error']}", file=sys.stderr)
            after = compare.probe(pa)
            moved = abs(after - before) / before if before > 0 else float("inf")
            rounds.append({"probe_before": before, "probe_after": after, "moved": moved,
                           "discarded": not moved <= 0.10, "results": res})
            print(f"# round {r + 1}: probe {before:.1f} -> {after:.1f} GB/s"
                  f"{' (discarded)' if not moved <= 0.10 else ''}", file=sys.stderr)
            if a.json_out:
                with open(a.json_out, "w") as fh:
                    json.dump({"environment": env, "rounds": rounds}, fh, indent=1, default=str)
    except KeyboardInterrupt:
        print(f"# interrupted after {len(rounds)} complete round(s)", file=sys.stderr)
        env["interrupted_after_rounds"] = len(rounds)
        if not rounds and partial["results"]:
            rounds.append(partial)
    env["loadavg_end"] = os.getloadavg()

    kept = [r for r in rounds if not r["discarded"]] or rounds
    samples, bpt = {}, {}  # (model, test) -> engine -> [samples]
    for r in kept:
        for x in r["results"]:
            for name, s in x.get("tests", {}).items():
                if name.startswith("_"):
                    continue
                samples.setdefault((x["model"], name), {}).setdefault(x["engine"], []).extend(s)
            for name, v in x.get("bytes_per_token", {}).items():
                bpt[(x["model"], name)] = v
    probes = [p for r in kept for p in (r["probe_before"], r["probe_after"]) if math.isfinite(p)]
    bw = statistics.median(probes) if probes else float("nan")

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    def f(x, spec=".1f"):
        return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"

    print(f"| model | test | bytes/token | ours tok/s [min .. max] | ORT-genai | ours ÷ ORT | llama.cpp "
          f"| ours ÷ llama.cpp | llama2.c | ours ÷ llama2.c | ours GB/s | % of probe |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for (model, test), by in samples.items():
        o = by.get("ours", [])
        om = med(o)
        cells = [model, test]
        b = bpt.get((model, test))
        is_tg = test.startswith("tg")
        cells.append(f"{b / 1e6:.1f} MB" if b and is_tg else "-")
        cells.append(f"{f(om)} [{f(min(o) if o else None)} .. {f(max(o) if o else None)}]")
        row = {"model": model, "test": test, "ours": om, "ours_samples": o}
        for eng in ("ort", "llama.cpp", "llama2.c"):
            pm = med(by.get(eng, []))
            row[eng] = pm
            cells += [f(pm), f(om / pm, ".2f") if by.get(eng) and o else "-"]
        gbps = om * b / 1e9 if b and is_tg and o else float("nan")
        cells += [f(gbps, ".2f"), f(100 * gbps / bw, ".0f") if is_tg else "-"]
        row.update(bytes_per_token=b if is_tg else None, gbps=gbps, probe_gbps=bw)
        m = re.match(r"(tg\d+)@b(\d+)$", test)
        if m and (model, m.group(1)) in samples:
            one = med(samples[(model, m.group(1))].get("ours", []))
            cells[1] = f"{test} ({om / one:.2f}x batch 1)"
            row["vs_batch1"] = om / one
        rows.append(row)
        print("| " + " | ".join(cells) + " |")
    # ours at each KV cache type against the first type given, per package and test
    by_kv = {}
    for (model, test), by in samples.items():
        if model in kv_labels and by.get("ours"):
            base, kv = kv_labels[model]
            by_kv.setdefault((base, test), {})[kv] = med(by["ours"])
    if len(kvs) > 1 and by_kv:
        print(f"\n| model | test | " + " | ".join(f"ours kv {kv} tok/s" for kv in kvs) + " | "
              + " | ".join(f"{kv} ÷ {kvs[0]}" for kv in kvs[1:]) + " |")
        print("|---|---|" + "---:|" * (2 * len(kvs) - 1))
        for (base, test), t in by_kv.items():
            first = t.get(kvs[0])
            cells = [base, test] + [f(t.get(kv, float("nan"))) for kv in kvs]
            cells += [f(t[kv] / first, ".2f") if first and kv in t else "-" for kv in kvs[1:]]
            rows.append({"model": base, "test": test, "kv_tok_s": t})
            print("| " + " | ".join(cells) + " |")
    # opening and memory: per model and run of ours, medians of the times over the kept
    # rounds, the largest resident sizes; the goal is peak RSS <= weights + KV + 10 %
    mems = {}
    for r in kept:
        for x in r["results"]:
            if x["engine"] == "ours" and x.get("memory"):
                mems.setdefault((x["model"], x["memory"]["run"]), []).append(x["memory"])
    if mems:
        print("\n| model | ours run | ISA | open s | pack cache | prepare s | prepared MB | released MB "
              "| RSS after open MB | peak RSS MB | RSS while decoding MB | weights + KV MB "
              "| peak ÷ (weights + KV) | decoding ÷ (weights + KV) |")
        print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (model, run_), ms in mems.items():
            m0 = ms[0]
            mb = lambda v: f"{v / 1e6:.1f}" if isinstance(v, (int, float)) else "-"  # noqa: E731
            need = (m0.get("weight_bytes") or 0) + m0["positions"] * (m0.get("kv_bytes_per_position") or 0)
            peak = max(m.get("peak_rss_bytes") or 0 for m in ms)
            end = max(m.get("rss_decoding_bytes") or 0 for m in ms)
            print(f"| {model} | {run_} | {m0.get('isa')} | {f(med([m.get('load_s') or 0 for m in ms]), '.3f')} "
                  f"| {'/'.join(sorted(set(str(m.get('pack_cache')) for m in ms)))} "
                  f"| {f(med([m.get('prepare_s') or 0 for m in ms]), '.3f')} | {mb(m0.get('prepared_bytes'))} "
                  f"| {mb(m0.get('released_bytes'))} | {mb(max(m.get('rss_after_open_bytes') or 0 for m in ms))} "
                  f"| {mb(peak)} | {mb(end)} | {mb(need)} | {f(peak / need if need else float('nan'), '.2f')} "
                  f"| {f(end / need if need else float('nan'), '.2f')} |")
        rows.append({"memory": {f"{k[0]} | {k[1]}": v for k, v in mems.items()}})
    print(f"\nthreads {a.threads}; {len(kept)} of {len(rounds)} rounds kept; probe "
          + ", ".join(f"{r['probe_before']:.1f}->{r['probe_after']:.1f}" for r in rounds) + " GB/s")
    print("environment: " + json.dumps(env))
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump({"environment": env, "rounds": [{k: v for k, v in r.items()} for r in rounds],
                       "rows": rows}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
