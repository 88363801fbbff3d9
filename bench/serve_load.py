#!/usr/bin/env python3
"""Load generator for `onnx-genai serve`, and the same load on llama.cpp's `llama-server`
(loopback only, bounded in count and time).

For each thread count in --threads and each concurrency C in --clients, a fresh server is
started on a free loopback port (ours: `serve --max-batch C --threads T` plus the extra
serve options; with --llama-server and --gguf also `llama-server -np C -cb -c C*ctx -t T
-tb T` on the same weights as GGUF, the two taking turns first from one level to the
next, --first at the first), one short warm-up request is sent, then C streaming clients at once each send
--requests requests (or more, so that the round has --min-requests in all) one after
another (greedy, --max-tokens each, ignore_eos so that every answer has that length, a
distinct prompt each; /v1/chat/completions, or /v1/completions with --endpoint
completions, for packages without a chat template), and it reports:
  - throughput: completion tokens of all clients / wall time of the round, and per
    CPU-second of the server process (user + system time of all its threads over the
    round: steadier than wall time when other processes share the cores; a thread that
    busy-waits counts)
  - TTFT p50/p99: request sent -> first chunk with text
  - inter-token latency p50/p99: between text chunks (one token each unless the client
    fell behind), per request
  - the server's peak resident memory (VmHWM) after the round, and its anonymous
    resident memory then (RssAnon: what it allocated, i.e. KV cache, buffers and
    weights repacked at open, without the pages of the mapped weight file)
  - the load average (/proc/loadavg) before and after the round, and the CPU (lscpu)
--ctx is each sequence's context: llama-server gets C*ctx positions for C slots, ours a
KV pool of the same C*ctx positions (--kv-memory, in the package's KV type). With
--prefix K, after the load rounds, each server (one slot, threads of the last --threads)
answers --prefix-reps pairs of requests whose prompt starts with a new K-token text
(context K + 64 at least): the first cold, the second (another tail) from its prefix
cache; it prints both TTFTs (of 2-token answers) and their ratio.
Every round is bounded by --max-seconds (streams still open then are dropped, their text
chunks counted as tokens and each reported as an error); each server is stopped after
its round.
--json-out FILE gets every round as it ends; Ctrl-C prints the rounds done so far.
With --soak S, each level is instead a soak round (issue 22's "256 streaming clients for
2 minutes"): the server runs --soak-batch sequences at once (its KV pool sized for them;
its queue is --max-queue among the extra options), and C clients send streamed requests
back to back for S seconds. A 429 or 503 answer is a refusal, not an error, when it
carries Retry-After: the client waits that long (at most 5 s) and goes on; one without the
header, or any other failure, is an error. The server's resident memory is sampled every
second (VmRSS, RssAnon) and reported beside the budgets it was given (the KV pool's, and
--plan-memory's when among the extra options), with the weights' file size.

Usage: serve_load.py BUILD_DIR PACKAGE [--clients 1,4,16,64] [--requests 4] [--min-requests 0]
       [--max-tokens 64] [--threads 2[,1]] [--max-seconds 120] [--ctx 1024]
       [--endpoint chat|completions] [--llama-server PATH --gguf FILE [--first ours|llama]]
       [--prefix K [--prefix-reps 3]] [--soak S [--soak-batch 16]] [--json-out FILE]
       [-- extra serve options]"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def cpu_line():
    """lscpu's model name and the SIMD flags that decide the kernels (both servers')."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "lscpu unavailable"
    model = re.search(r"Model name:\s*(.+)", out)
    flags = re.search(r"Flags:\s*(.+)", out)
    keep = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8")
    have = [f for f in keep if flags and f in flags.group(1).split()]
    return f"{model.group(1).strip() if model else '?'}; {' '.join(have)}; {os.cpu_count()} CPUs"


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def body_for(endpoint, prompt, max_tokens):
    b = {"max_tokens": max_tokens, "temperature": 0, "stream": True,
         "stream_options": {"include_usage": True}, "ignore_eos": True}
    if endpoint == "chat":
        b["messages"] = [{"role": "user", "content": prompt}]
    else:
        b["prompt"] = prompt
    return b


def one_request(host, port, endpoint, prompt, max_tokens, out, deadline):
    """One streamed request; appends its TTFT, gaps, tokens (or an error) to out."""
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    try:
        c = http.client.HTTPConnection(host, port, timeout=max(1, deadline - time.time()))
        t0 = time.perf_counter()
        c.request("POST", path, body=json.dumps(body_for(endpoint, prompt, max_tokens)).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            retry = r.getheader("Retry-After")
            r.read()
            c.close()
            if r.status in (429, 503) and retry and retry.isdigit():
                out.setdefault("refused", []).append(r.status)
                return int(retry)
            out["errors"].append(f"HTTP {r.status}" + (" without Retry-After" if r.status in (429, 503) else ""))
            return
        first, last, gaps, tokens, ptoks, chunks = None, None, [], 0, 0, 0
        for line in r:
            if time.time() > deadline:
                # The round's time is up: drop the stream, count the text chunks read.
                c.close()
                out["errors"].append("cut at --max-seconds")
                out["tokens"] += chunks
                return
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if ev.get("error"):
                out["errors"].append(str(ev["error"])[:200])
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
                ptoks = ev["usage"].get("prompt_tokens", 0)
            if any(ch.get("delta", {}).get("content") or ch.get("text") for ch in ev.get("choices", [])):
                now = time.perf_counter()
                chunks += 1
                if first is None:
                    first = now
                else:
                    gaps.append(now - last)
                last = now
        end = time.perf_counter()
        c.close()
    except (OSError, http.client.HTTPException, ValueError) as e:
        out["errors"].append(f"{type(e).__name__}: {e}"[:200])
        return
    # A token whose text is empty (a partial UTF-8 byte) sends no text; then the stream's end.
    out["ttft"].append((first if first is not None else end) - t0)
    out["itl"].extend(gaps)
    out["tokens"] += tokens
    out["prompt_tokens"].append(ptoks)
    if tokens != max_tokens:
        out["errors"].append(f"{tokens} of {max_tokens} tokens")


def round_(host, port, endpoint, clients, requests, max_tokens, max_seconds):
    """clients threads, each sending requests streamed requests one after another."""
    out = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": []}
    lock = threading.Lock()
    deadline = time.time() + max_seconds

    def client(k):
        for i in range(requests):
            if time.time() > deadline:
                return
            local = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": []}
            one_request(host, port, endpoint, f"Once upon a time, client {k} asked story {i}", max_tokens,
                        local, deadline)
            with lock:
                for key in ("ttft", "itl", "errors", "prompt_tokens"):
                    out[key].extend(local[key])
                out["errors"].extend(f"HTTP {x} (Retry-After)" for x in local.get("refused", []))
                out["tokens"] += local["tokens"]
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out["wall"] = time.perf_counter() - t0
    return out


def soak_round(host, port, endpoint, clients, max_tokens, seconds, pid):
    """clients threads sending streamed requests back to back for `seconds`; refusals with
    Retry-After are waited out. The server's RSS is sampled every second."""
    out = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": [], "refused": [],
           "rss": [], "anon": []}
    lock = threading.Lock()
    t_end = time.time() + seconds
    done = threading.Event()

    def client(k):
        i = 0
        while time.time() < t_end:
            local = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": []}
            # a stream still open at the end is cut there: counted apart, not as an error
            retry = one_request(host, port, endpoint, f"Once upon a time, client {k} asked story {i}",
                                max_tokens, local, t_end + 60)
            i += 1
            with lock:
                for key in ("ttft", "itl", "errors", "prompt_tokens", "refused"):
                    out[key].extend(local.get(key, []))
                out["tokens"] += local["tokens"]
            if retry:
                time.sleep(min(retry, 5))

    def sample():
        while not done.wait(1.0):
            try:
                with open(f"/proc/{pid}/status") as f:
                    st = dict(line.split(":", 1) for line in f if ":" in line)
                out["rss"].append(int(st["VmRSS"].split()[0]) * 1024)
                out["anon"].append(int(st["RssAnon"].split()[0]) * 1024)
            except (OSError, KeyError, ValueError):
                pass
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    sampler.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out["wall"] = time.perf_counter() - t0
    done.set()
    return out


def weights_bytes(package):
    return sum(os.path.getsize(os.path.join(package, f)) for f in os.listdir(package)
               if ".onnx" in f or f.endswith(".data"))


def extra_option(extra, name):
    for i, x in enumerate(extra[:-1]):
        if x == name:
            return extra[i + 1]
    return None


def soak(a, clients, threads, cpu):
    batch = a.soak_batch
    srv = Server(a, "ours", batch, threads, a.ctx)
    try:
        warm_up(srv, a)
        before = loadavg()
        start = time.strftime("%H:%M:%S", time.gmtime())
        r = soak_round(srv.host, srv.port, a.endpoint, clients, a.max_tokens, a.soak, srv.p.pid)
        hwm, anon = proc_status(srv.p.pid)
        after = loadavg()
    finally:
        srv.stop()
    plan = extra_option(a.extra, "--plan-memory")
    row = {"server": "ours", "soak_s": a.soak, "threads": threads, "clients": clients, "max_batch": batch,
           "start_utc": start, "wall_s": r["wall"], "requests": len(r["ttft"]), "tokens": r["tokens"],
           "tok_s": r["tokens"] / r["wall"], "refused": len(r["refused"]),
           "refused_by_status": {str(k): r["refused"].count(k) for k in set(r["refused"])},
           "n_errors": len(r["errors"]), "errors": r["errors"][:5],
           "ttft_p50_ms": pct(r["ttft"], 50) * 1e3, "ttft_p99_ms": pct(r["ttft"], 99) * 1e3,
           "itl_p50_ms": pct(r["itl"], 50) * 1e3, "itl_p99_ms": pct(r["itl"], 99) * 1e3,
           "rss_max_mb": max(r["rss"], default=0) / 2**20, "rss_first_mb": (r["rss"][0] if r["rss"] else 0) / 2**20,
           "rss_last_mb": (r["rss"][-1] if r["rss"] else 0) / 2**20, "anon_max_mb": max(r["anon"], default=0) / 2**20,
           "peak_rss_mb": hwm / 2**20, "kv_budget_mb": batch * a.ctx * a.kv_pos_bytes / 2**20,
           "plan_memory": plan, "weights_mb": weights_bytes(a.package) / 2**20,
           "load_before": before, "load_after": after, "cpu": cpu, "cmd": " ".join(srv.cmd)}
    print(f"soak {clients} clients x {a.soak:.0f} s on --max-batch {batch}, {threads} threads: "
          f"{row['requests']} answered, {row['tokens']} tokens ({row['tok_s']:.1f} tok/s), "
          f"{row['refused']} refused with Retry-After {row['refused_by_status']}, {row['n_errors']} errors "
          f"{row['errors']}; TTFT p50 {row['ttft_p50_ms']:.0f} ms p99 {row['ttft_p99_ms']:.0f} ms; "
          f"RSS first {row['rss_first_mb']:.0f} MB, max {row['rss_max_mb']:.0f} MB, last {row['rss_last_mb']:.0f} MB "
          f"(anon max {row['anon_max_mb']:.0f} MB; KV budget {row['kv_budget_mb']:.0f} MB, plan memory "
          f"{plan or 'default'}, weights {row['weights_mb']:.0f} MB); load {before} -> {after} ({start} UTC)",
          flush=True)
    return row


def proc_status(pid):
    """(VmHWM, RssAnon) in bytes."""
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "RssAnon"):
                vals[k] = int(v.split()[0]) * 1024
    return vals.get("VmHWM", 0), vals.get("RssAnon", 0)


def cpu_seconds(pid):
    """User + system CPU time of the process so far (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kv_position_bytes(package):
    """Bytes of one position of the KV cache (all layers, K and V) from the package."""
    cfg = json.load(open(os.path.join(package, "genai_config.json")))["model"]["decoder"]
    size = 4
    try:
        import onnx
        m = onnx.load(os.path.join(package, cfg.get("filename", "model.onnx")), load_external_data=False)
        elem = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
        size = {1: 4, 10: 2, 16: 2}.get(elem.get("past_key_values.0.key", 1), 4)
    except ImportError:
        pass
    return cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * cfg["head_size"] * size


class Server:
    """One server process on loopback: ours or llama-server, started for one round."""

    def __init__(self, a, kind, clients, threads, ctx):
        self.kind, self.log = kind, tempfile.NamedTemporaryFile("w+", prefix=f"serve_load-{kind}-", suffix=".log",
                                                                delete=False)
        if kind == "ours":
            kv = clients * ctx * a.kv_pos_bytes
            cmd = [os.path.join(a.build, "onnx-genai"), "serve", "-m", a.package, "--port", "0", "--max-batch",
                   str(clients), "--kv-memory", str(kv), "--threads", str(threads), *a.extra]
            self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
            line = self.p.stdout.readline()
            m = re.match(r"listening on http://([0-9.]+):(\d+)", line)
            if not m:
                self.stop()
                raise SystemExit(f"ours did not start: {line!r}; log {self.log.name}")
            self.host, self.port = m.group(1), int(m.group(2))
            threading.Thread(target=lambda: self.p.stdout.read(), daemon=True).start()
        else:
            self.host, self.port = "127.0.0.1", free_port()
            cmd = [a.llama_server, "-m", a.gguf, "--host", self.host, "--port", str(self.port), "-np", str(clients),
                   "-cb", "-c", str(clients * ctx), "-t", str(threads), "-tb", str(threads)]
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = os.path.dirname(a.llama_server) + ":" + env.get("LD_LIBRARY_PATH", "")
            self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.cmd = cmd
        self.wait_ready()

    def wait_ready(self):
        """Both answer /health 503 while the model loads, then 200."""
        t_end = time.time() + 180
        while True:
            if self.p.poll() is not None or time.time() > t_end:
                self.stop()
                raise SystemExit(f"{self.kind} did not get ready; log {self.log.name}")
            try:
                c = http.client.HTTPConnection(self.host, self.port, timeout=5)
                c.request("GET", "/health")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    break
            except OSError:
                pass
            time.sleep(0.5)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def warm_up(srv, a):
    local = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": []}
    one_request(srv.host, srv.port, a.endpoint, "Warm up", 4, local, time.time() + 120)
    if local["errors"]:
        raise SystemExit(f"{srv.kind}: warm-up failed: {local['errors']}")


def load_round(a, kind, clients, threads, cpu):
    srv = Server(a, kind, clients, threads, a.ctx)
    try:
        warm_up(srv, a)
        before = loadavg()
        cpu0 = cpu_seconds(srv.p.pid)
        start = time.strftime("%H:%M:%S", time.gmtime())
        requests = max(a.requests, -(-a.min_requests // clients))
        r = round_(srv.host, srv.port, a.endpoint, clients, requests, a.max_tokens, a.max_seconds)
        cpu_s = cpu_seconds(srv.p.pid) - cpu0
        hwm, anon = proc_status(srv.p.pid)
        after = loadavg()
    finally:
        srv.stop()
    return {"server": kind, "threads": threads, "clients": clients, "start_utc": start, "wall_s": r["wall"],
            "requests": len(r["ttft"]), "tokens": r["tokens"], "tok_s": r["tokens"] / r["wall"],
            "cpu_s": cpu_s, "tok_per_cpu_s": r["tokens"] / cpu_s if cpu_s > 0 else float("nan"),
            "ttft_p50_ms": pct(r["ttft"], 50) * 1e3, "ttft_p99_ms": pct(r["ttft"], 99) * 1e3,
            "itl_p50_ms": pct(r["itl"], 50) * 1e3, "itl_p99_ms": pct(r["itl"], 99) * 1e3,
            "peak_rss_mb": hwm / 2**20, "anon_rss_mb": anon / 2**20,
            "prompt_tokens_mean": statistics.mean(r["prompt_tokens"]) if r["prompt_tokens"] else 0,
            "errors": r["errors"][:5], "n_errors": len(r["errors"]), "load_before": before, "load_after": after,
            "cpu": cpu, "cmd": " ".join(srv.cmd)}


def prefix_text(srv, a, rep):
    """A text of about a.prefix tokens (within 2 %, counted by the server's /tokenize),
    distinct for each rep."""
    words = ["river", "stone", "lamp", "garden", "quiet", "orbit", "paper", "window", "signal", "harbor",
             "maple", "engine", "silver", "thunder", "cotton", "ladder"]
    text = lambda n: f"System note {rep}: " + " ".join(words[(i * 7 + rep * 3 + i // 16) % len(words)]
                                                     for i in range(n))
    n = a.prefix
    for _ in range(4):
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
        body = {"prompt": text(n)} if srv.kind == "ours" else {"content": text(n)}
        c.request("POST", "/tokenize", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        got = json.loads(c.getresponse().read())
        c.close()
        count = got.get("count", len(got.get("tokens", [])))
        if abs(count - a.prefix) <= a.prefix * 0.02:
            break
        n = max(1, round(n * a.prefix / max(count, 1)))
    return text(n) + "\n"


def prefix_rounds(a, kind, threads, cpu):
    srv = Server(a, kind, 1, threads, max(a.ctx, a.prefix + 64))
    rows = []
    try:
        warm_up(srv, a)
        for rep in range(a.prefix_reps):
            base = prefix_text(srv, a, rep)
            row = {"server": kind, "threads": threads, "rep": rep, "load_before": loadavg(), "cpu": cpu}
            for which, tail in (("cold", "Question one: what is the river?"), ("warm", "Question two: and the lamp?")):
                local = {"ttft": [], "itl": [], "tokens": 0, "errors": [], "prompt_tokens": []}
                one_request(srv.host, srv.port, a.endpoint, base + tail, 2, local, time.time() + a.max_seconds)
                row[f"{which}_ms"] = local["ttft"][0] * 1e3 if local["ttft"] else float("nan")
                row[f"{which}_prompt_tokens"] = local["prompt_tokens"][0] if local["prompt_tokens"] else 0
                row.setdefault("errors", []).extend(e for e in local["errors"] if "tokens" not in e)
            row["ratio"] = row["warm_ms"] / row["cold_ms"]
            row["load_after"] = loadavg()
            rows.append(row)
    finally:
        srv.stop()
    return rows


def print_table(rows):
    print(f"{'server':>6} {'thr':>3} {'clients':>7} {'tokens':>6} {'tok/s':>7} {'tok/CPUs':>8} "
          f"{'TTFT p50':>9} {'TTFT p99':>9} "
          f"{'ITL p50':>8} {'ITL p99':>8} {'peak RSS':>8} {'anon':>6} {'err':>3} load before -> after")
    for r in rows:
        print(f"{r['server']:>6} {r['threads']:>3} {r['clients']:>7} {r['tokens']:>6} {r['tok_s']:>7.1f} "
              f"{r.get('tok_per_cpu_s', float('nan')):>8.1f} "
              f"{r['ttft_p50_ms']:>7.1f}ms {r['ttft_p99_ms']:>7.1f}ms "
              f"{r['itl_p50_ms']:>6.2f}ms {r['itl_p99_ms']:>6.2f}ms "
              f"{r['peak_rss_mb']:>6.0f}MB {r['anon_rss_mb']:>4.0f}MB {r['n_errors']:>3} "
              f"{r['load_before']} -> {r['load_after']}  ({r['start_utc']} UTC)", flush=True)


def print_ratios(rows):
    """Each level's ours / llama-server (same minutes) and each server's C / 1-client throughput."""
    by = {(r["server"], r["threads"], r["clients"]): r for r in rows}
    for (srv, t, c), r in sorted(by.items()):
        one = by.get((srv, t, 1))
        other = by.get(("llama", t, c)) if srv == "ours" else None
        parts = []
        if one and c != 1:
            parts.append(f"{r['tok_s'] / one['tok_s']:.2f}x its 1-client tok/s "
                         f"({r['tok_per_cpu_s'] / one['tok_per_cpu_s']:.2f}x per CPU-s)")
        if other:
            parts.append(f"ours / llama-server tok/s {r['tok_s'] / other['tok_s']:.2f} "
                         f"(per CPU-s {r['tok_per_cpu_s'] / other['tok_per_cpu_s']:.2f}), "
                         f"TTFT p50 {r['ttft_p50_ms'] / other['ttft_p50_ms']:.2f}, "
                         f"ITL p50 {r['itl_p50_ms'] / other['itl_p50_ms']:.2f}")
        if parts:
            print(f"  {srv} threads {t} clients {c}: " + "; ".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("package")
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--min-requests", type=int, default=0, help="each round at least this many requests in all")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", default=str(os.cpu_count() or 1), help="comma-separated thread counts")
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("--ctx", type=int, default=1024, help="context positions per sequence (both servers)")
    ap.add_argument("--endpoint", choices=("chat", "completions"), default="chat")
    ap.add_argument("--llama-server", help="llama.cpp's llama-server binary (with --gguf)")
    ap.add_argument("--gguf", help="the package's weights as GGUF (tools/make_gguf.py)")
    ap.add_argument("--first", choices=("ours", "llama"), default="ours", help="who runs first at the first level")
    ap.add_argument("--prefix", type=int, default=0, help="prefix-cache TTFT test with a K-token prompt prefix")
    ap.add_argument("--prefix-reps", type=int, default=3)
    ap.add_argument("--soak", type=float, default=0, help="soak rounds of this many seconds instead")
    ap.add_argument("--soak-batch", type=int, default=16, help="the server's --max-batch in soak rounds")
    ap.add_argument("--json-out")
    ap.add_argument("extra", nargs="*")
    argv, extra = sys.argv[1:], []
    if "--" in argv:  # argparse drops a "--" that follows the positionals
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    a = ap.parse_args(argv)
    a.extra = list(a.extra or []) + extra
    if bool(a.llama_server) != bool(a.gguf):
        ap.error("--llama-server and --gguf go together")
    a.kv_pos_bytes = kv_position_bytes(a.package)
    kinds = ["ours", "llama"] if a.llama_server else ["ours"]
    cpu = cpu_line()
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    print(f"# lscpu: {cpu}\n# commit: {commit()}  load: {loadavg()}  {now} UTC", flush=True)
    rows, prefix = [], []

    def save():
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"rounds": rows, "prefix": prefix, "cpu": cpu, "commit": commit()}, f, indent=1)
    if a.soak:
        for t in [int(x) for x in a.threads.split(",")]:
            for c in [int(x) for x in a.clients.split(",") if x]:
                rows.append(soak(a, c, t, cpu))
                save()
        return
    try:
        turn = 0
        for t in [int(x) for x in a.threads.split(",")]:
            for c in [int(x) for x in a.clients.split(",") if x]:
                order = kinds if (turn + (a.first == "llama")) % 2 == 0 else kinds[::-1]
                turn += 1
                for kind in order:
                    rows.append(load_round(a, kind, c, t, cpu))
                    print_table(rows[-1:])
                    save()
        if a.prefix:
            t = int(a.threads.split(",")[-1])
            for kind in kinds:
                prefix.extend(prefix_rounds(a, kind, t, cpu))
                save()
    except KeyboardInterrupt:
        print("\ninterrupted: the rounds done so far", file=sys.stderr)
    print(f"\n# all rounds (lscpu: {cpu})")
    print_table(rows)
    print_ratios(rows)
    for p in prefix:
        print(f"prefix {p['server']} threads {p['threads']} rep {p['rep']}: cold {p['cold_ms']:.1f} ms "
              f"({p['cold_prompt_tokens']} tokens), warm {p['warm_ms']:.1f} ms, warm/cold {p['ratio']:.3f}, "
              f"load {p['load_before']} -> {p['load_after']}" + (f", errors {p['errors']}" if p["errors"] else ""))
    save()


def commit():
    try:
        return subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


if __name__ == "__main__":
    main()
