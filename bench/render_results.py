#!/usr/bin/env python3
"""The current performance tables, rendered from the `peers.py --json-out` files kept in
bench/results/.

    python3 bench/render_results.py [FILES or DIRS ...] [--all]
        [--update docs/PERFORMANCE.md | --check docs/PERFORMANCE.md]

Each file is one run of bench/peers.py (its environment: command, commit, CPU, date,
threads, probes; its rows: medians per model and test). Files are grouped by machine
kind (CPU name, family and model, and whether it has AMX or AVX-512); for each kind the
runs that are the newest for at least one of their models are printed, newest first
(every run with --all), newest kind first. --update replaces the
text between the markers `<!-- results:begin -->` and `<!-- results:end -->` of the
given Markdown file with the tables, so the page's opening table is always these files;
--check exits 1 (saying so) when that text is not what the files render now.

A file may also be a transcription of a run whose JSON was not kept: it carries
"transcribed_from" (where the numbers are printed) in its environment, and its table
says so; its rows may give a peer's ratio alone ("ratio_ort": ours / onnxruntime-genai)
and the share of the bandwidth probe ("probe_pct") where that is what was printed.
"""
import argparse
import glob
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def load(paths):
    files = []
    for p in paths or [os.path.join(HERE, "results")]:
        names = sorted(glob.glob(os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
        for name in names:
            with open(name) as fh:
                j = json.load(fh)
            if "environment" not in j:
                continue
            j["_path"] = os.path.relpath(name, os.path.dirname(HERE))
            files.append(j)
    return files


def kind_key(env):
    """What makes two runs the same machine kind: CPU family, model and ISA class (the
    name lscpu gives a VM's CPU is often only the vendor's)."""
    ls = env.get("lscpu", {})
    if ls.get("CPU family") and ls.get("Model"):
        return (ls["CPU family"], ls["Model"], cpu_kind(env).rsplit(", ", 1)[-1])
    return cpu_kind(env)


def cpu_kind(env):
    """'NAME (family F model M), ISA' from what peers.py recorded."""
    ls = env.get("lscpu", {})
    name = ls.get("Model name") or env.get("cpu") or "unknown CPU"
    fam, mod = ls.get("CPU family"), ls.get("Model")
    flags = (ls.get("flags", "") + " " + env.get("cpu_flags", "")).split()
    isa = ("AMX" if any(f.startswith("amx") for f in flags)
           else "AVX-512, no AMX" if "avx512f" in flags
           else "AVX2" if "avx2" in flags else "no AVX2")
    ident = f" (family {fam} model {mod})" if fam and mod else ""
    return f"{name}{ident}, {isa}"


def num(x, spec=".1f"):
    if isinstance(x, (int, float)) and math.isfinite(x):
        return format(x, ",.0f" if spec == ".1f" and abs(x) >= 1000 else spec)
    return "–"


def ratio(a, b, given=None):
    if isinstance(given, (int, float)) and math.isfinite(given):
        return f"{given:.2f}×"
    if all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in (a, b)):
        return f"{a / b:.2f}×"
    return "–"


def table(j):
    env = j["environment"]
    rows = [r for r in j.get("rows", []) if "test" in r]
    out = []
    rounds = j.get("rounds", [])
    kept = [r for r in rounds if not r.get("discarded")]
    flagged = not kept and rounds
    kept = kept or rounds  # as peers.py: when every round moved, all are kept
    load = env.get("loadavg_start")
    out.append(f"{env.get('date', 'date not recorded')}, commit `{(env.get('commit') or '?')[:7]}`"
               f"{' (tree with edits)' if env.get('tree_dirty') else ''}, {env.get('threads')} threads, "
               f"{cpu_kind(env)}, {env.get('cores', '?')} vCPUs"
               + (f", load {load[0]:.1f} at the start" if isinstance(load, list) and load else "")
               + (f", the probe moved > 10 % in all {len(rounds)} rounds (all kept)" if flagged else
                  f", {len(kept)} of {len(rounds)} rounds kept" if rounds else "")
               + (f"; onnxruntime-genai {env['onnxruntime_genai']}" if env.get("onnxruntime_genai") else "")
               + ".")
    if env.get("transcribed_from"):
        out.append(f"Transcribed from {env['transcribed_from']} (the run's JSON was not kept).")
    out.append("")
    out.append(f"```sh\n{env.get('command', '(command not recorded)')}\n```")
    out.append("")
    peers = [e for e in ("ort", "llama.cpp", "llama2.c")
             if any((isinstance(r.get(e), (int, float)) and math.isfinite(r[e])) or f"ratio_{e}" in r
                    for r in rows)]
    head = {"ort": "onnxruntime-genai", "llama.cpp": "llama.cpp", "llama2.c": "llama2.c"}
    cols = ["model", "test", "ours tok/s"]
    for e in peers:
        cols += [head[e], f"ours ÷ {head[e]}"]
    cols += ["GB/s", "% of probe"]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "---|" * 2 + "---:|" * (len(cols) - 2))
    for r in rows:
        test = r["test"]
        if "vs_batch1" in r:
            test = f"{test} ({r['vs_batch1']:.2f}× batch 1)"
        cells = [r["model"], test, num(r.get("ours"))]
        for e in peers:
            cells += [num(r.get(e)), ratio(r.get("ours"), r.get(e), r.get(f"ratio_{e}"))]
        g, pr = r.get("gbps"), r.get("probe_gbps")
        pct = r.get("probe_pct")
        if pct is None and isinstance(g, (int, float)) and isinstance(pr, (int, float)) and pr > 0:
            pct = 100 * g / pr
        cells += [num(g, ".2f"), num(pct, ".0f")]
        out.append("| " + " | ".join(cells) + " |")
    probes = [p for r in kept for p in (r.get("probe_before"), r.get("probe_after"))
              if isinstance(p, (int, float)) and math.isfinite(p)]
    probes += env.get("probe_range_gbps") or []
    out.append("")
    if probes:
        out.append(f"Bandwidth probe {min(probes):.1f}–{max(probes):.1f} GB/s ({env.get('threads')} threads).")
    mem = [r["memory"] for r in j.get("rows", []) if "memory" in r]
    if mem:
        opens = []
        for runs in mem:
            for key, ms in runs.items():
                ms = [m for m in ms if m.get("load_s")]
                if not ms or not ms[0].get("weight_bytes"):
                    continue
                s = sorted(m["load_s"] for m in ms)[len(ms) // 2]
                opens.append(f"{key.split(' | ')[0]} {s:.2f} s "
                             f"({s / (ms[0]['weight_bytes'] / 1e9):.2f} s/GB)")
        if opens:
            out.append("Open (median): " + ", ".join(dict.fromkeys(opens)) + ".")
    out.append(f"Source: `{j['_path']}`.")
    return "\n".join(out)


def render(files, every=False):
    kinds = {}
    for j in files:
        kinds.setdefault(kind_key(j["environment"]), []).append(j)
    parts = []
    order = sorted(kinds.values(), key=lambda js: max(x["environment"].get("date", "") for x in js),
                   reverse=True)
    for js in order:
        js.sort(key=lambda x: x["environment"].get("date", ""), reverse=True)
        parts.append(f"### {cpu_kind(js[0]['environment'])}\n")
        seen = set()
        for j in js:
            models = {r["model"] for r in j.get("rows", []) if "model" in r}
            if every or models - seen:
                parts.append(table(j) + "\n")
            seen |= models
    return "\n".join(parts).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="JSON files or folders (default bench/results)")
    ap.add_argument("--all", action="store_true", help="every run, not only each machine kind's newest")
    ap.add_argument("--update", metavar="MARKDOWN", help="replace the text between the results markers")
    ap.add_argument("--check", metavar="MARKDOWN", help="exit 1 unless that text is the render")
    a = ap.parse_args()
    text = render(load(a.paths), a.all)
    path = a.update or a.check
    if not path:
        sys.stdout.write(text)
        return 0
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        print(f"{path}: no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = doc.split(BEGIN, 1)
    now, tail = rest.split(END, 1)
    if a.check:
        if now == "\n" + text:
            print(f"{path}: the current tables are bench/results' render")
            return 0
        print(f"{path}: the tables between the results markers are not what bench/results "
              f"renders; run python3 bench/render_results.py --update {path}", file=sys.stderr)
        return 1
    with open(path, "w") as fh:
        fh.write(head + BEGIN + "\n" + text + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
