#!/usr/bin/env python3
"""Turn-2 time to first token of `onnx-genai run`, keeping the KV cache across turns
against running the whole conversation again (--no-cache-reuse), on a package with a
chat template (default: the qwen2.5-0.5b-shaped int4 package the parity fixture makes,
with the Qwen2.5 template from the chat-template corpus). `run` is driven through a
pseudo-terminal as a person would use it; the numbers are the ones --verbose prints.
Rounds alternate the two modes so that both see the same machine load.

Usage: python3 bench/chat_ttft.py [--bin build/onnx-genai]
           [--package build/parity_packages/qwen2.5-0.5b-int4-acc0]
           [--template ../shared/chat-templates/templates/qwen2.5-7b-instruct.jinja]
           [--rounds 3] [--threads 2] [--new-tokens 32]"""
import argparse
import json
import os
import pty
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM = ("You are a careful assistant for a travel agency. Answer in short paragraphs, give "
          "prices in euros, and say when you are not sure. Prefer trains to planes for trips "
          "under six hours, mention accessibility, and never invent timetables.")
TURN1 = "I want to go from Paris to Lyon next Friday morning. What are my options?"
TURN2 = "And what about coming back on Sunday evening?"
STATS = re.compile(r"\[turn (\d+): prompt (\d+) tokens \((\d+) from the cache, (\d+) prefilled "
                   r"in ([\d.]+) ms\), TTFT ([\d.]+) ms, (\d+) tokens, ([\d.]+) tokens/s")


def make_package(src, template, dst):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "tokenizer_config.json":
            try:
                os.link(os.path.join(src, f), os.path.join(dst, f))
            except OSError:
                shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "tokenizer_config.json")) as f:
        cfg = json.load(f)
    with open(template, encoding="utf-8", newline="") as f:
        cfg["chat_template"] = f.read()
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f)


def session(binary, pkg, threads, new_tokens, reuse, timeout=900):
    """Two turns in `run`; returns the two stats tuples."""
    master, slave = pty.openpty()
    cmd = [binary, "run", pkg, "--verbose", "--system", SYSTEM, "--max-new-tokens", str(new_tokens),
           "--max-length", "2048", "--threads", str(threads)] + ([] if reuse else ["--no-cache-reuse"])
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=subprocess.PIPE, close_fds=True)
    os.close(slave)
    err = b""
    stats = []

    def pump(until):
        nonlocal err
        end = time.time() + timeout
        while time.time() < end:
            r, _, _ = select.select([master, p.stderr], [], [], 0.5)
            if master in r:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
            if p.stderr in r:
                chunk = os.read(p.stderr.fileno(), 65536)
                err += chunk
                found = STATS.findall(err.decode(errors="replace"))
                if len(found) >= until:
                    return found
            if p.poll() is not None:
                break
        raise RuntimeError(f"run did not finish a turn: {err.decode(errors='replace')[-500:]}")
    try:
        time.sleep(0.5)
        os.write(master, (TURN1 + "\n").encode())
        pump(1)
        os.write(master, (TURN2 + "\n").encode())
        stats = pump(2)
        os.write(master, b"/exit\n")
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    return [tuple(float(x) for x in s) for s in stats[:2]]


def lscpu():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    info = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    flags = [f for f in info.get("Flags", "").split() if f.startswith(("avx", "fma", "amx"))]
    return info.get("Model name", "?").strip(), " ".join(flags)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/onnx-genai")
    ap.add_argument("--package", default="build/parity_packages/qwen2.5-0.5b-int4-acc0")
    ap.add_argument("--template", default=os.path.join(HERE, "..", "..", "shared", "chat-templates",
                                                       "templates", "qwen2.5-7b-instruct.jinja"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=32)
    a = ap.parse_args()
    work = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(a.package)))
    try:
        pkg = os.path.join(work, "chat")
        make_package(a.package, a.template, pkg)
        res = {True: [], False: []}
        for _ in range(a.rounds):
            for reuse in (True, False):
                res[reuse].append(session(a.bin, pkg, a.threads, a.new_tokens, reuse))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    model, flags = lscpu()
    print(f"CPU: {model}; {flags}; threads {a.threads}; load average {os.getloadavg()[0]:.1f}")
    print(f"package: {a.package} + {os.path.basename(a.template)}; {a.rounds} rounds, medians\n")
    print("| turn 2 | prompt tokens | from the cache | prefilled | prefill ms | TTFT ms |")
    print("|---|---|---|---|---|---|")
    for reuse in (True, False):
        t2 = [r[1] for r in res[reuse]]
        med = lambda i: statistics.median(x[i] for x in t2)
        print(f"| {'cache kept (run)' if reuse else 'full re-prefill (--no-cache-reuse)'} | {med(1):.0f} | "
              f"{med(2):.0f} | {med(3):.0f} | {med(4):.0f} | {med(5):.0f} |")
    t1 = [r[0] for r in res[True] + res[False]]
    print(f"\nturn 1 (both modes): prompt {statistics.median(x[1] for x in t1):.0f} tokens, TTFT "
          f"{statistics.median(x[5] for x in t1):.0f} ms; decode {statistics.median(x[7] for x in t1):.1f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
