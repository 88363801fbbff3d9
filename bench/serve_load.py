#!/usr/bin/env python3
"""Load generator for `onnx-genai serve` (loopback only, bounded in count and time).

Starts the server on a free port with the package given, then for each concurrency C in
--clients runs C streaming clients at once, each sending --requests chat completions
(greedy, --max-tokens each, ignore_eos so that every answer has that length) with a
distinct prompt, and reports:
  - throughput: completion tokens of all clients / wall time of the round
  - TTFT p50/p99: request sent -> first content chunk
  - inter-token latency p50/p99: between content chunks (one token each unless the client
    fell behind), per request
  - the server's peak resident memory (VmHWM) after the round
Every round is bounded by --max-seconds; the server is stopped at the end.

Usage: serve_load.py BUILD_DIR PACKAGE [--clients 1,4,16,64] [--requests 4]
       [--max-tokens 64] [--threads N] [--max-seconds 120] [-- extra serve options]"""
import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import threading
import time


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one_request(host, port, prompt, max_tokens, out, deadline):
    c = http.client.HTTPConnection(host, port, timeout=max(1, deadline - time.time()))
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True}
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        out["errors"].append(r.status)
        r.read()
        return
    first, last, gaps, tokens = None, None, [], 0
    for line in r:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
        if any(ch.get("delta", {}).get("content") for ch in ev.get("choices", [])):
            now = time.perf_counter()
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
    c.close()
    out["ttft"].append(first - t0 if first else float("nan"))
    out["itl"].extend(gaps)
    out["tokens"] += tokens


def round_(host, port, clients, requests, max_tokens, max_seconds):
    out = {"ttft": [], "itl": [], "tokens": 0, "errors": []}
    lock = threading.Lock()
    deadline = time.time() + max_seconds

    def client(k):
        for i in range(requests):
            if time.time() > deadline:
                return
            local = {"ttft": [], "itl": [], "tokens": 0, "errors": []}
            one_request(host, port, f"Once upon a time, client {k} asked story {i}", max_tokens, local, deadline)
            with lock:
                for key in ("ttft", "itl", "errors"):
                    out[key].extend(local[key])
                out["tokens"] += local["tokens"]
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out["wall"] = time.perf_counter() - t0
    return out


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("package")
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    cmd = [os.path.join(a.build, "onnx-genai"), "serve", "-m", a.package, "--port", "0", "--max-batch", "64",
           *(["--threads", str(a.threads)] if a.threads else []), *a.extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        m = re.match(r"listening on http://([0-9.]+):(\d+)", p.stdout.readline())
        host, port = m.group(1), int(m.group(2))
        print(p.stdout.readline().strip())
        threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
        print(f"{'clients':>7} {'tokens':>7} {'tok/s':>8} {'TTFT p50':>9} {'TTFT p99':>9} "
              f"{'ITL p50':>8} {'ITL p99':>8} {'peak RSS':>9} errors")
        for c in [int(x) for x in a.clients.split(",")]:
            r = round_(host, port, c, a.requests, a.max_tokens, a.max_seconds)
            print(f"{c:>7} {r['tokens']:>7} {r['tokens'] / r['wall']:>8.1f} {pct(r['ttft'], 50) * 1e3:>7.1f}ms "
                  f"{pct(r['ttft'], 99) * 1e3:>7.1f}ms {pct(r['itl'], 50) * 1e3:>6.2f}ms {pct(r['itl'], 99) * 1e3:>6.2f}ms "
                  f"{peak_rss(p.pid) / 2**20:>7.0f}MB {len(r['errors'])}", flush=True)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)


if __name__ == "__main__":
    main()
