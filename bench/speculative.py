#!/usr/bin/env python3
"""Speculative decoding against plain decoding, and against onnxruntime-genai's, in one run.

  speculative.py [--build build] [--tokens 160] [--rounds 3] [--ort] [--case NAME ...]
                 [--llama-server PATH [--gguf FILE] [--llama-draft FILE] [--llama-threads T]]

Each case is a package and a prompt; each runs plain and speculative decoding (ours, in
this process through the Python binding; onnxruntime-genai 0.18's with --ort), alternating
over the rounds after an untimed one (which makes the plans of the runs' lengths), and
prints decode tokens/s (the median of the rounds), the ratio to
plain decoding measured in the same run, the acceptance rate and the tokens decided per
verification. The ids of every speculative run are checked against plain decoding's.

With --llama-server (llama.cpp's binary, as bench/README.md builds it), the qwen-code
case also runs llama.cpp on the same weights as GGUF (--gguf, default
/tmp/og-peers/qwen05-int4.Q4_0.gguf: tools/make_gguf.py's Q4_0 of the package) and the
same prompt ids: one llama-server per variant (-np 1, -t/-tb --llama-threads), plain, its
n-gram lookup (--spec-type ngram-simple, lookup n-gram 2 and drafts of 4: our ngram_size
3 and K 4) and, with --llama-draft GGUF, a draft model (--spec-draft-n-max 4); each is
asked /completion for the same greedy tokens over the rounds after an untimed request,
and prints its decode tokens/s (timings.predicted_per_second, the median) against our
plain decoding's, its own speculative / plain ratio, and its acceptance
(timings.draft_n_accepted / draft_n). Whether its speculative text equals its plain text
is printed, not required (llama.cpp's numerics are its own).

Cases:
  stories-repeat   stories260K continuing a text that it goes on to repeat (input-grounded)
  stories-free     stories260K from a short prompt (free generation: little to look up)
  qwen-code        the Qwen2.5-0.5B-shaped int4 package (random weights, accuracy level 4):
                   a code prompt; random weights fall into loops, which lookups find
  draft-curve      stories260K fp32 drafted by itself (acceptance 1: the bound on the
                   overhead, as the draft costs what the target does) and by its int4 copy
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STORY = ("Once upon a time, there was a little girl named Lily. She loved to play with her "
         "toys. One day, Lily went to the park. Once upon a time, there was a little")
CODE = ("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\n"
        "def mul(a, b):")


def load(build):
    os.environ.setdefault("ONNX_GENAI_LIBRARY", os.path.join(build, "libonnx_genai.so"))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import onnx_genai
    return onnx_genai


def decode(mod, model, ids, tokens, spec):
    p = mod.GeneratorParams(model)
    p.set_search_options(max_length=len(ids) + tokens)
    if spec:
        p.set_speculative_options(**spec)
    g = mod.Generator(model, p)
    g.append_tokens(ids)
    g.generate_next_token()  # the first token comes from the prompt's run
    t = time.perf_counter()
    n = 1
    while not g.is_done():
        g.generate_next_token()
        n += 1
    dt = time.perf_counter() - t
    stats = g.get_speculative_stats() if spec else None
    return list(g.get_sequence(0)), (n - 1) / dt, stats


def row(name, rates, base, stats):
    r = statistics.median(rates)
    acc = tpv = "-"
    if stats and stats.get("draft_tokens_proposed"):
        acc = f"{100 * stats['draft_tokens_accepted'] / stats['draft_tokens_proposed']:.0f} %"
    if stats and stats.get("rounds"):
        tpv = f"{stats['tokens_emitted'] / stats['rounds']:.2f}"
    ratio = f"{r / base:.2f}x" if base else "1.00x"
    print(f"  {name:<44} {r:9.1f} tok/s  {ratio:>6}  accept {acc:>6}  per verification {tpv}")
    return r


def run_case(a, og, ort, title, pkg, text, variants, llama=False):
    print(f"{title}: {os.path.basename(pkg)}, {a.tokens} tokens")
    model = og.Model(pkg)
    ids = np.array(og.Tokenizer(model).encode(text), dtype=np.int32)
    rates = {name: [] for name, _ in variants}
    last = {}
    plain_ids = None
    for r in range(a.rounds + 1):  # a first round untimed: it makes the runs' plans
        for name, spec in variants:
            seq, rate, st = decode(og, model, ids, a.tokens, spec)
            if spec is None:
                plain_ids = seq
            elif seq != plain_ids:
                raise SystemExit(f"{title} {name}: the ids differ from plain decoding's")
            if r:
                rates[name].append(rate)
            last[name] = st
    base = statistics.median(rates[variants[0][0]])
    for name, _ in variants:
        row(name, rates[name], base if name != variants[0][0] else None, last[name])
    if ort:
        om = ort.Model(pkg)
        orates = {"onnxruntime-genai plain": [], "onnxruntime-genai ngram_size=3 K=4": []}
        ost = None
        for r in range(a.rounds + 1):
            for name, spec in (("onnxruntime-genai plain", None),
                               ("onnxruntime-genai ngram_size=3 K=4",
                                dict(ngram_size=3, max_draft_tokens=4))):
                seq, rate, st = decode(ort, om, ids, a.tokens, spec)
                if r:
                    orates[name].append(rate)
                ost = st or ost
        ob = statistics.median(orates["onnxruntime-genai plain"])
        row("onnxruntime-genai plain", orates["onnxruntime-genai plain"], base, None)
        row("onnxruntime-genai ngram_size=3 K=4", orates["onnxruntime-genai ngram_size=3 K=4"],
            base, ost)
        print(f"  (onnxruntime-genai's speculative / its plain: "
              f"{statistics.median(orates['onnxruntime-genai ngram_size=3 K=4']) / ob:.2f}x)")
    if llama:
        llama_rows(a, ids, base)
    print()


class LlamaServer:
    """llama-server on a free loopback port for one variant (extra: its speculative
    options), ready once /health answers 200."""

    def __init__(self, a, extra):
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            self.port = sk.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="speculative-llama-", suffix=".log",
                                               delete=False)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = (os.path.dirname(a.llama_server) + ":" +
                                  env.get("LD_LIBRARY_PATH", ""))
        t = str(a.llama_threads)
        cmd = [a.llama_server, "-m", a.gguf, "--host", "127.0.0.1", "--port", str(self.port),
               "-np", "1", "-c", str(a.llama_ctx), "-t", t, "-tb", t, *extra]
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        end = time.time() + 600
        while True:
            if self.p.poll() is not None or time.time() > end:
                self.stop()
                raise SystemExit(f"llama-server did not get ready: {' '.join(cmd)}; "
                                 f"log {self.log.name}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.5)

    def complete(self, ids, tokens):
        body = json.dumps({"prompt": [int(x) for x in ids], "n_predict": tokens,
                           "temperature": 0, "top_k": 1, "cache_prompt": False,
                           "stream": False}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=3600) as r:
            return json.loads(r.read())

    def stop(self):
        self.p.terminate()  # (SIGTERM: it exits cleanly; a process that ended ignores it)
        try:
            self.p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()
        self.log.close()


def llama_rows(a, ids, base):
    """llama.cpp's plain and speculative decoding of the same ids (see the docstring)."""
    variants = [("llama.cpp plain", []),
                ("llama.cpp ngram-simple N=2 M=4",
                 ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2",
                  "--spec-ngram-simple-size-m", "4"])]
    if a.llama_draft:
        variants.append((f"llama.cpp draft {os.path.basename(a.llama_draft)} K=4",
                         ["-md", a.llama_draft, "--spec-draft-n-max", "4"]))
    rates, text = {}, {}
    for name, extra in variants:
        srv = LlamaServer(a, extra)
        try:
            got = []
            for r in range(a.rounds + 1):  # the first untimed
                out = srv.complete(ids, a.tokens)
                if r:
                    got.append(out)
        finally:
            srv.stop()
        rates[name] = [o["timings"]["predicted_per_second"] for o in got]
        text[name] = got[-1].get("content")
        tm = got[-1]["timings"]
        st = None
        if tm.get("draft_n"):
            st = {"draft_tokens_proposed": tm["draft_n"],
                  "draft_tokens_accepted": tm.get("draft_n_accepted", 0)}
        row(name, rates[name], base, st)
    lp = statistics.median(rates["llama.cpp plain"])
    for name, _ in variants[1:]:
        same = "same text as its plain" if text[name] == text["llama.cpp plain"] else \
            "text DIFFERS from its plain"
        print(f"  (llama.cpp's {name[10:]} / its plain: "
              f"{statistics.median(rates[name]) / lp:.2f}x; {same})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tokens", type=int, default=160)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ort", action="store_true", help="onnxruntime-genai 0.18 in the same run")
    ap.add_argument("--qwen", default="/work/bench-pkgs/qwen05-int4",
                    help="the Qwen2.5-0.5B-shaped int4 package")
    ap.add_argument("--case", action="append")
    ap.add_argument("--llama-server", help="llama.cpp's llama-server: its plain and speculative "
                    "decoding of the qwen-code case in the same run")
    ap.add_argument("--gguf", default="/tmp/og-peers/qwen05-int4.Q4_0.gguf",
                    help="the Qwen package's weights as GGUF (with --llama-server)")
    ap.add_argument("--llama-draft", help="a GGUF draft model for llama.cpp (with --llama-server)")
    ap.add_argument("--llama-threads", type=int, default=os.cpu_count())
    ap.add_argument("--llama-ctx", type=int, default=2048)
    a = ap.parse_args()
    if a.llama_server and not os.path.isfile(a.gguf):
        ap.error(f"--llama-server needs the GGUF weights: {a.gguf} is missing (--gguf)")
    og = load(a.build)
    ort = None
    if a.ort:
        import onnxruntime_genai as ort
    pp = os.path.join(a.build, "parity_packages")
    stories = os.path.join(pp, "stories260K-fp32")
    ngram = [("plain", None), ("ngram (cost model)", dict(ngram_size=3)),
             ("ngram chained, K<=8 (cost model)", dict(ngram_size=3, max_draft_tokens=8,
                                                        ngram_chained_lookup=True)),
             ("ngram fixed K=4", dict(ngram_size=3, fixed_k=True))]
    cases = a.case or ["stories-repeat", "stories-free", "qwen-code", "draft-curve"]
    if "stories-repeat" in cases:
        run_case(a, og, ort, "input-grounded", stories, STORY, ngram)
    if "stories-free" in cases:
        run_case(a, og, ort, "free generation", stories, "Once upon a time", ngram)
    if "qwen-code" in cases and os.path.isdir(a.qwen):
        run_case(a, og, ort, "input-grounded (loops)", a.qwen, CODE, ngram,
                 llama=bool(a.llama_server))
    if "draft-curve" in cases:
        drafts = [("plain", None)]
        for d in ("stories260K-fp32", "stories260K-int4-acc0"):
            dm = og.Model(os.path.join(pp, d))
            drafts.append((f"draft {d} (cost model)", dict(draft_model=dm)))
            drafts.append((f"draft {d} fixed K=4", dict(draft_model=dm, fixed_k=True)))
        run_case(a, og, None, "draft model", stories, "Once upon a time", drafts)


if __name__ == "__main__":
    main()
