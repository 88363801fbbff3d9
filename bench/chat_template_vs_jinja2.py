#!/usr/bin/env python3
"""Microseconds per render of a 20-turn conversation with tools (and tool-call rounds)
through real chat templates: ours (bench-chat-template: og_chat_template_apply, which
parses the messages/tools JSON every time) against Python jinja2 in transformers'
environment (the corpus's render.py; the template compiled once, as transformers caches
it; messages normalised every time, as apply_chat_template does). The two renders are
first checked to be byte-identical.

Usage: python3 bench/chat_template_vs_jinja2.py [--bin build/bench/bench-chat-template]
           [--cli build/onnx-genai] [--corpus ../shared/chat-templates] [--seconds 2]
           [--rounds 3]"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = ["qwen2.5-7b-instruct", "llama-3.1-8b-instruct"]


def conversation():
    tools = []
    for name, desc, props in [
        ("get_weather", "Current weather for a city.", {"city": "string", "unit": "string"}),
        ("search_web", "Search the web and return the top results.", {"query": "string", "count": "integer"}),
        ("get_time", "Local time in an IANA time zone.", {"timezone": "string"}),
        ("convert_currency", "Convert an amount between currencies.",
         {"amount": "number", "from": "string", "to": "string"}),
    ]:
        tools.append({"type": "function", "function": {
            "name": name, "description": desc,
            "parameters": {"type": "object",
                           "properties": {k: {"type": t, "description": f"The {k}."} for k, t in props.items()},
                           "required": list(props)[:1]}}})
    msgs = [{"role": "system", "content": "You are a helpful assistant. Answer briefly and use tools when needed."}]
    for turn in range(20):
        msgs.append({"role": "user", "content": f"Question {turn}: what about city number {turn}? "
                                                "Please be precise, and explain your reasoning step by step."})
        if turn % 4 == 1:  # a tool-call round
            msgs.append({"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": {"city": f"City {turn}", "unit": "celsius"}}}]})
            msgs.append({"role": "tool", "content": json.dumps({"temperature": 20 + turn, "sky": "clear"})})
        msgs.append({"role": "assistant", "content": f"Answer {turn}: it is sunny in city {turn}, "
                                                     f"about {20 + turn} degrees, with a light breeze."})
    msgs.append({"role": "user", "content": "Thanks! And tomorrow?"})
    return msgs, tools


def lscpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "?", ""
    info = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    model = info.get("Model name", "?").strip()
    flags = [f for f in info.get("Flags", "").split() if f.startswith(("avx", "fma", "sse4", "amx"))]
    return model, " ".join(flags)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bench/bench-chat-template")
    ap.add_argument("--cli", default="build/onnx-genai")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "chat-templates"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    sys.path.insert(0, a.corpus)
    import jinja2
    import render  # the corpus's oracle: transformers' environment and message handling

    env = render.make_environment()
    msgs, tools = conversation()
    tmp = tempfile.mkdtemp()
    mpath, tpath = os.path.join(tmp, "messages.json"), os.path.join(tmp, "tools.json")
    with open(mpath, "w") as f:
        json.dump(msgs, f)
    with open(tpath, "w") as f:
        json.dump(tools, f)
    rows = []
    for name in TEMPLATES:
        path = os.path.join(a.corpus, "templates", name + ".jinja")
        with open(path, encoding="utf-8", newline="") as f:
            source = f.read()
        tokens, _ = render.TOKENS.get(name, (render.DEFAULT_TOKENS, ""))
        compiled = env.from_string(source)

        def jinja_render():
            return compiled.render(messages=render.normalize_messages(msgs), tools=tools, documents=None,
                                   add_generation_prompt=True, **tokens)
        want = jinja_render()
        ours = subprocess.run([a.cli, "template", path, "--messages", mpath, "--tools", tpath,
                               "--add-generation-prompt", "--bos", tokens["bos_token"], "--eos",
                               tokens["eos_token"]], capture_output=True)
        if ours.returncode != 0 or ours.stdout.decode() != want:
            print(f"{name}: outputs differ, not timing ({ours.stderr.decode().strip()})")
            return 1
        ours_us, jinja_us = [], []
        for _ in range(a.rounds):  # alternate, so that both see the same load
            r = subprocess.run([a.bin, path, mpath, tpath, tokens["bos_token"], tokens["eos_token"],
                                str(a.seconds)], capture_output=True, text=True, check=True)
            ours_us.append(json.loads(r.stdout)["median_us"])
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < a.seconds:
                jinja_render()
                n += 1
            jinja_us.append((time.perf_counter() - t0) / n * 1e6)
        rows.append((name, len(want), statistics.median(ours_us), statistics.median(jinja_us)))
    model, flags = lscpu()
    print(f"CPU: {model}; {flags}")
    print(f"load average: {os.getloadavg()[0]:.1f}; Python {platform.python_version()}, "
          f"jinja2 {jinja2.__version__}")
    print(f"conversation: {len(msgs)} messages (20 turns, 5 tool-call rounds), {len(tools)} tools\n")
    print("| template | prompt chars | ours µs/render | jinja2 µs/render | jinja2 / ours |")
    print("|---|---|---|---|---|")
    for name, chars, o, j in rows:
        print(f"| {name} | {chars} | {o:.1f} | {j:.1f} | {j / o:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
