#!/usr/bin/env python3
"""`onnx-genai serve` over real HTTP: each case starts the server on a free loopback port
(--port 0, the port read from its first line), talks to it with Python's http.client (and
the pinned `openai` client as the oracle of the wire format), and stops it with SIGTERM,
which must end it with status 0 (under ASan/UBSan that includes no leak report).

Oracles: `onnx-genai generate` (plain and --chat --json) for greedy answers; the server's
own single answers for concurrent ones; the text of a non-streamed answer for its stream.

The tools case runs tests/onnx-genai-scripted, the server built with OG_SERVE_TEST_SCRIPT:
the tokens of scripted texts replace the sampled ones (a random model never writes a
tool call), and everything after sampling is the real path. Its oracles: the scripted
text itself, the openai client's parsing, and ../shared/chat-templates/render.py
(transformers' rendering) for conversations that carry tool calls back.

Usage: test_server.py BUILD_DIR PACKAGES_DIR CASE   (CASE: routes, concurrency, errors,
loading, page, models, backend, tools, hybrid, nul, ignore_eos, guidance, probe, answers).
Exits 77 (skipped) when a package or tool it needs is missing."""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from prompt_ids import token_prompts
from server_harness import SKIP, Server, check, run


def chat_body(text, **kw):
    b = {"messages": [{"role": "user", "content": text}], "temperature": 0}
    b.update(kw)
    return b


def content_of(events):
    """(content, finish_reasons by index, usage) of streamed chat chunks."""
    text, finish, usage = {}, {}, None
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("usage"):
            usage = e["usage"]
        for c in e.get("choices", []):
            i = c["index"]
            piece = c["delta"].get("content") if "delta" in c else c.get("text")
            text[i] = text.get(i, "") + (piece or "")
            if c.get("finish_reason"):
                finish[i] = c["finish_reason"]
    return text, finish, usage


def generate_chat(build, pkg, text, max_new):
    out = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "--chat", "-m", pkg, "-p", text,
                          "--max-new-tokens", str(max_new), "--json"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def generate_plain(build, pkg, text, max_new, n_prompt, *args):
    out = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "-m", pkg, "-p", text,
                          "--max-length", str(n_prompt + max_new), "--json", *args],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


# ---- routes --------------------------------------------------------------------------------

def case_routes(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg)
    try:
        routes_basic(s)
        routes_generate(s, build, pkg)
        routes_stream_stop_n(s)
        routes_logprobs(s)
        routes_tokenize_metrics(s)
        routes_openai_client(s)
    finally:
        s.stop()


def routes_basic(s):
    st, _, j, _ = s.request("GET", "/health")
    check(st == 200 and j["status"] == "ok", "GET /health: 200 ok")
    st, _, j, _ = s.request("GET", "/v1/models")
    check(st == 200 and j["object"] == "list" and j["data"][0]["id"] == "stories260K",
          "GET /v1/models lists the model")
    st, _, j, _ = s.request("GET", "/v1/models/stories260K")
    check(st == 200 and j["id"] == "stories260K" and j["max_model_len"] == 512, "GET /v1/models/ID")
    st, h, _, text = s.request("GET", "/")
    check(st == 200 and h.get("Content-Type", "").startswith("text/html") and b"/v1/chat/completions" in text,
          "GET /: the chat page")


def routes_generate(s, build, pkg):
    prompt = "Once upon a time"
    ref = generate_chat(build, pkg, prompt, 24)
    st, _, j, _ = s.post("/v1/chat/completions", chat_body(prompt, max_tokens=24))
    ok = st == 200 and j["object"] == "chat.completion"
    check(ok and j["choices"][0]["message"]["content"] == ref["text"],
          f"chat greedy answer equals generate --chat's ({ref['text']!r})")
    check(ok and j["usage"]["completion_tokens"] == ref["generated_tokens"] == 24 and
          j["usage"]["prompt_tokens"] == ref["prompt_tokens"] and
          j["usage"]["total_tokens"] == j["usage"]["prompt_tokens"] + 24, "chat usage counts")
    check(ok and j["choices"][0]["finish_reason"] == "length", "chat finish_reason length")

    st, _, t, _ = s.post("/tokenize", {"prompt": prompt})
    n_prompt = t["count"]
    plain = generate_plain(build, pkg, prompt, 30, n_prompt)
    check(plain["sequences"][0][:n_prompt] == t["tokens"], "/tokenize gives generate's prompt ids")
    st, _, j, _ = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 30, "temperature": 0})
    text = j["choices"][0]["text"] if st == 200 else None
    check(st == 200 and plain["text"][0] == prompt + text, "completion greedy text equals generate's")
    check(st == 200 and j["usage"]["completion_tokens"] == len(plain["sequences"][0]) - n_prompt and
          j["usage"]["prompt_tokens"] == n_prompt, "completion usage counts")
    # the same prompt as ids
    st, _, j2, _ = s.post("/v1/completions", {"prompt": t["tokens"], "max_tokens": 30, "temperature": 0})
    check(st == 200 and j2["choices"][0]["text"] == text, "completion from token ids equals from text")
    # a list of prompts: choices in order
    st, _, j3, _ = s.post("/v1/completions", {"prompt": [prompt, t["tokens"]], "max_tokens": 30,
                                              "temperature": 0})
    check(st == 200 and [c["index"] for c in j3["choices"]] == [0, 1] and
          all(c["text"] == text for c in j3["choices"]), "completion of a list of prompts")
    # sampling with a seed is repeatable
    body = chat_body(prompt, max_tokens=24, temperature=1.0, seed=1234, top_p=0.9, top_k=20)
    a = s.post("/v1/chat/completions", body)[2]
    b = s.post("/v1/chat/completions", body)[2]
    check(a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"],
          "sampling with a seed gives the same answer twice")


def routes_stream_stop_n(s):
    prompt = "Once upon a time"
    whole = s.post("/v1/chat/completions", chat_body(prompt, max_tokens=40))[2]
    answer = whole["choices"][0]["message"]["content"]
    st, ev = s.stream("/v1/chat/completions", chat_body(prompt, max_tokens=40, stream=True,
                                                         stream_options={"include_usage": True}))
    text, finish, usage = content_of(ev)
    check(st == 200 and ev[-1] == "[DONE]", "chat stream ends with data: [DONE]")
    check(all(isinstance(e, str) or e.get("object") == "chat.completion.chunk" for e in ev),
          "every chat event is a chat.completion.chunk")
    check(isinstance(ev[0], dict) and ev[0]["choices"][0]["delta"].get("role") == "assistant",
          "the first chunk carries the role")
    check(text.get(0) == answer, "streamed chat chunks concatenate to the whole answer")
    check(finish.get(0) == "length", "stream finish_reason")
    check(usage is not None and usage == whole["usage"], "stream_options.include_usage: the usage chunk")
    check(all(isinstance(e, str) or "usage" in e for e in ev), "with include_usage every chunk has usage")

    st, ev = s.stream("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0,
                                          "stream": True})
    plain = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0})[2]
    text, finish, _ = content_of(ev)
    check(st == 200 and ev[-1] == "[DONE]" and text.get(0) == plain["choices"][0]["text"],
          "streamed completion equals the whole one")

    # stop strings: one inside a token run, one that never comes
    cut = answer.index("girl named")
    st, _, j, _ = s.post("/v1/chat/completions", chat_body(prompt, max_tokens=40, stop=["zzz", "girl named"]))
    check(st == 200 and j["choices"][0]["message"]["content"] == answer[:cut] and
          j["choices"][0]["finish_reason"] == "stop", f"stop string cuts the answer ({answer[:cut]!r})")
    st, ev = s.stream("/v1/chat/completions", chat_body(prompt, max_tokens=40, stop="girl named", stream=True))
    text, finish, _ = content_of(ev)
    check(text.get(0) == answer[:cut] and finish.get(0) == "stop", "stop string in a stream")
    st, _, j, _ = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 40, "temperature": 0,
                                             "stop": "Lily"})
    ptext = plain["choices"][0]["text"]
    check(st == 200 and j["choices"][0]["text"] == ptext[:ptext.index("Lily")], "stop string in a completion")

    # n > 1: greedy choices all equal the single answer
    st, _, j, _ = s.post("/v1/chat/completions", chat_body(prompt, max_tokens=40, n=3))
    check(st == 200 and [c["index"] for c in j["choices"]] == [0, 1, 2] and
          all(c["message"]["content"] == answer for c in j["choices"]) and
          j["usage"]["completion_tokens"] == 120 and j["usage"]["prompt_tokens"] == whole["usage"]["prompt_tokens"],
          "n=3 greedy: three equal choices, usage counts them")
    st, ev = s.stream("/v1/chat/completions", chat_body(prompt, max_tokens=40, n=2, stream=True))
    text, finish, _ = content_of(ev)
    check(text == {0: answer, 1: answer} and finish == {0: "length", 1: "length"}, "n=2 streamed")


def routes_logprobs(s):
    st, _, j, _ = s.post("/v1/chat/completions", chat_body("Once upon a time", max_tokens=12, logprobs=True,
                                                            top_logprobs=3))
    lp = j["choices"][0]["logprobs"]["content"] if st == 200 else []
    check(len(lp) == 12, "chat logprobs: one entry per token")
    good = True
    for e in lp:
        tops = e["top_logprobs"]
        good &= len(tops) == 3 and e["logprob"] <= 0 and abs(e["logprob"] - tops[0]["logprob"]) < 1e-6
        good &= all(tops[k]["logprob"] >= tops[k + 1]["logprob"] for k in range(2))
        good &= sum(2.718281828 ** t["logprob"] for t in tops) <= 1 + 1e-5
        good &= bytes(e["bytes"]).decode(errors="replace") == e["token"] or "\ufffd" in e["token"]
    check(good, "chat logprobs: greedy picks the top one, alternatives sorted, probabilities <= 1")
    joined = "".join(e["token"] for e in lp)
    check(joined.replace(" ", "") == j["choices"][0]["message"]["content"].replace(" ", ""),
          "chat logprobs tokens spell the answer")
    st, _, j, _ = s.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0,
                                             "logprobs": 2})
    lp = j["choices"][0]["logprobs"] if st == 200 else {}
    check(len(lp.get("tokens", [])) == 8 and len(lp["token_logprobs"]) == 8 and
          all(len(t) == 2 for t in lp["top_logprobs"]) and lp["text_offset"][0] == 0,
          "completion logprobs: tokens, token_logprobs, top_logprobs, text_offset")
    st, ev = s.stream("/v1/chat/completions", chat_body("Once upon a time", max_tokens=12, logprobs=True,
                                                         stream=True))
    n = sum(len(c["logprobs"]["content"]) for e in ev if isinstance(e, dict)
            for c in e["choices"] if c.get("logprobs"))
    check(n == 12, "streamed chat logprobs: one entry per token")


def routes_tokenize_metrics(s):
    st, _, t, _ = s.post("/tokenize", {"prompt": "Once upon a time", "add_special_tokens": False})
    st2, _, d, _ = s.post("/detokenize", {"tokens": t["tokens"]})
    check(st == 200 and st2 == 200 and d["prompt"] == "Once upon a time" and t["count"] == len(t["tokens"]),
          "/tokenize then /detokenize gives the text back")
    st, _, tm, _ = s.post("/tokenize", {"messages": [{"role": "user", "content": "Once upon a time"}]})
    chat = s.post("/v1/chat/completions", chat_body("Once upon a time", max_tokens=2))[2]
    check(st == 200 and tm["count"] == chat["usage"]["prompt_tokens"], "/tokenize messages: the chat prompt")

    before = s.metrics()
    j = s.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0})[2]
    after = s.metrics()
    d = lambda k: after.get(k, 0) - before.get(k, 0)  # noqa: E731
    check(d("og_generation_tokens_total") == 10 and d("og_prompt_tokens_total") == j["usage"]["prompt_tokens"],
          "/metrics: token counters move by the request's usage")
    check(d('og_http_responses_total{route="/v1/completions",status="200"}') == 1, "/metrics: responses by route")
    check(d("og_time_to_first_token_seconds_count") == 1 and d("og_inter_token_latency_seconds_count") == 9,
          "/metrics: TTFT and inter-token histograms count the request")
    check(after["og_kv_blocks_total"] > 0 and after["og_running"] == 0 and after["og_queue_depth"] == 0,
          "/metrics: KV pool, nothing running at rest")
    check(0 < after.get("og_plan_bytes", 0) <= 64 << 20 and "og_plan_evictions_total" in after,
          "/metrics: the cached plans' bytes, within the default plan memory")


def routes_openai_client(s):
    try:
        import openai
    except ImportError:
        print("SKIP openai client part: the openai package (tools/requirements.txt) is not installed")
        return
    c = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    models = c.models.list()
    check([m.id for m in models.data] == ["stories260K"], "openai client: models.list")
    raw = s.post("/v1/chat/completions", chat_body("Once upon a time", max_tokens=20))[2]
    r = c.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Once upon a time"}],
                                  max_tokens=20, temperature=0)
    check(r.choices[0].message.content == raw["choices"][0]["message"]["content"] and
          r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 20,
          "openai client: chat.completions.create")
    parts = []
    usage = None
    for ch in c.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "Once upon a time"}],
                                        max_tokens=20, temperature=0, stream=True,
                                        stream_options={"include_usage": True}):
        if ch.usage:
            usage = ch.usage
        for x in ch.choices:
            parts.append(x.delta.content or "")
    check("".join(parts) == raw["choices"][0]["message"]["content"] and usage and usage.completion_tokens == 20,
          "openai client: streamed chat")
    r = c.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=10, temperature=0)
    check(r.choices[0].text and r.usage.completion_tokens == 10, "openai client: completions.create")
    try:
        c.chat.completions.create(model="stories260K", messages=[{"role": "user", "content": "x"}], max_tokens=-3)
        check(False, "openai client: a bad parameter raises BadRequestError")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "max_tokens" in str(e), "openai client: a bad parameter raises BadRequestError")
    try:
        c.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
        check(False, "openai client: an unknown model raises NotFoundError")
    except openai.NotFoundError:
        check(True, "openai client: an unknown model raises NotFoundError")


# ---- concurrency ---------------------------------------------------------------------------

def run_all(fn, items):
    out = [None] * len(items)

    def one(i):
        try:
            out[i] = fn(items[i])
        except Exception as e:  # noqa: BLE001 - reported as a failure below
            out[i] = e
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(items))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def case_concurrency(build, pkgs):
    pkg = os.path.join(pkgs, "tiny-int4")
    # --threads N sizes the compute pool (N - 1 workers beside the engine's thread): the
    # same server, idle after loading, has exactly 2 threads more at --threads 3 than at 1.
    if os.path.isdir("/proc/self/task"):
        counts = {}
        for n in (1, 3):
            s = Server(build, pkg, "--threads", str(n))
            try:
                time.sleep(0.2)
                counts[n] = thread_count(s.p.pid)
            finally:
                s.stop()
        check(counts[3] - counts[1] == 2, f"--threads 3 runs 2 compute threads more than --threads 1 "
              f"({counts[3]} and {counts[1]} threads)")
    else:
        print("SKIP the --threads check: no /proc/PID/task on this system")
    s = Server(build, pkg, "--max-batch", "16")
    try:
        words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi".split()
        prompts = [" ".join(words[: 1 + (3 * i) % 16]) + f" {i}" for i in range(8)]
        chat = lambda p: s.post("/v1/chat/completions", chat_body(p, max_tokens=24 + len(p) % 7))  # noqa: E731
        alone = [chat(p)[2]["choices"][0]["message"]["content"] for p in prompts]
        ref = generate_chat(build, pkg, prompts[3], 24 + len(prompts[3]) % 7)
        check(alone[3] == ref["text"], "tiny-int4: a chat answer equals generate --chat's")
        res = run_all(chat, prompts)
        same = [not isinstance(r, Exception) and r[0] == 200 and r[2]["choices"][0]["message"]["content"] == a
                for r, a in zip(res, alone)]
        check(all(same), f"8 concurrent greedy chats equal their single answers ({sum(same)}/8)")
        streams = run_all(lambda p: s.stream("/v1/chat/completions",
                                             chat_body(p, max_tokens=24 + len(p) % 7, stream=True)), prompts)
        same = [not isinstance(r, Exception) and content_of(r[1])[0].get(0) == a for r, a in zip(streams, alone)]
        check(all(same), f"8 concurrent streams equal their single answers ({sum(same)}/8)")
        # 16 completions sharing a long system prompt: equal alone and together, from the prefix cache
        system = " ".join(words * 4)
        comps = [f"{system} question {i}: " + " ".join(words[i % 16:]) for i in range(16)]
        comp = lambda p: s.post("/v1/completions", {"prompt": p, "max_tokens": 16, "temperature": 0})  # noqa: E731
        alone = [comp(p)[2] for p in comps]
        before = s.metrics()
        res = run_all(comp, comps)
        after = s.metrics()
        same = [not isinstance(r, Exception) and r[0] == 200 and
                r[2]["choices"][0]["text"] == a["choices"][0]["text"] for r, a in zip(res, alone)]
        check(all(same), f"16 concurrent completions with a shared prefix equal their single answers ({sum(same)}/16)")
        hits = after["og_prefix_cache_hit_tokens_total"] - before["og_prefix_cache_hit_tokens_total"]
        cached = sum(r[2]["usage"]["prompt_tokens_details"]["cached_tokens"] for r in res if not isinstance(r, Exception))
        check(hits > 0 and cached > 0, f"the shared prefix came from the prefix cache ({int(hits)} tokens)")
        lookups = after["og_prefix_cache_lookups_total"] - before["og_prefix_cache_lookups_total"]
        found = after["og_prefix_cache_hits_total"] - before["og_prefix_cache_hits_total"]
        check(lookups >= 16 and 0 < found <= lookups, f"prefix-cache lookups and hits counted ({int(found)}/{int(lookups)})")
    finally:
        s.stop()


# ---- errors ----------------------------------------------------------------------------------

def expect_error(s, what, status, path, body=None, raw=None, param=None, method="POST"):
    st, h, j, text = s.request(method, path, body=body, raw=raw)
    ok = st == status and isinstance(j, dict) and isinstance(j.get("error"), dict) and \
        isinstance(j["error"].get("message"), str) and "type" in j["error"]
    if param is not None:
        ok = ok and j["error"].get("param") == param
    check(ok, f"{what}: {status}" + (f" naming {param}" if param else "") + ("" if ok else f" (got {st} {text[:300]!r})"))
    return h


def case_errors(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg, "--max-queue", "32", "--max-batch", "4", "--max-body", "1M")
    try:
        C, P = "/v1/chat/completions", "/v1/completions"
        msgs = [{"role": "user", "content": "hi"}]
        expect_error(s, "malformed JSON", 400, C, raw=b'{"messages": [')
        expect_error(s, "empty body", 400, C, raw=b"")
        expect_error(s, "a body that is not an object", 400, C, raw=b"[1, 2]")
        expect_error(s, "trailing garbage", 400, C, raw=b'{"messages": []} x')
        # U+0000 in a request string would be cut short by the JSON library: refused
        expect_error(s, "\\u0000 in a message", 400, C,
                     raw=b'{"messages": [{"role": "user", "content": "a\\u0000b"}], "max_tokens": 2}')
        expect_error(s, "\\u0000 in a stop string", 400, P, raw=b'{"prompt": "x", "stop": ["\\u0000"]}')
        expect_error(s, "a raw NUL byte in the body", 400, P, raw=b'{"prompt": "x\x00y"}')
        st, _, j, _ = s.request("POST", "/tokenize", raw=b'{"prompt": "a\\\\u0000"}')
        check(st == 200 and isinstance(j, dict) and j.get("count", 0) >= 7,
              "an escaped backslash before u0000 is text, not U+0000: 200")
        expect_error(s, "nesting 100000 deep", 400, C, raw=b"[" * 100000)
        expect_error(s, "messages missing", 400, C, {"max_tokens": 3}, param="messages")
        expect_error(s, "messages not an array", 400, C, {"messages": "hi"}, param="messages")
        expect_error(s, "a message not an object", 400, C, {"messages": [3]}, param="messages[0]")
        expect_error(s, "a message without role", 400, C, {"messages": [{"content": "x"}]}, param="messages[0].role")
        expect_error(s, "content of a wrong type", 400, C, {"messages": [{"role": "user", "content": 5}]},
                     param="messages[0].content")
        expect_error(s, "max_tokens a string", 400, C, {"messages": msgs, "max_tokens": "10"}, param="max_tokens")
        expect_error(s, "negative max_tokens", 400, C, {"messages": msgs, "max_tokens": -1}, param="max_tokens")
        expect_error(s, "max_tokens not whole", 400, P, {"prompt": "x", "max_tokens": 2.5}, param="max_tokens")
        expect_error(s, "max_completion_tokens 0", 400, C, {"messages": msgs, "max_completion_tokens": 0},
                     param="max_completion_tokens")
        expect_error(s, "temperature a string", 400, C, {"messages": msgs, "temperature": "hot"}, param="temperature")
        expect_error(s, "temperature out of range", 400, C, {"messages": msgs, "temperature": 7}, param="temperature")
        expect_error(s, "top_p 0", 400, C, {"messages": msgs, "top_p": 0}, param="top_p")
        expect_error(s, "top_k negative", 400, C, {"messages": msgs, "top_k": -5}, param="top_k")
        expect_error(s, "seed a float", 400, C, {"messages": msgs, "seed": 1.5}, param="seed")
        expect_error(s, "n 0", 400, C, {"messages": msgs, "n": 0}, param="n")
        expect_error(s, "n too large", 400, C, {"messages": msgs, "n": 1000}, param="n")
        expect_error(s, "stream not a boolean", 400, C, {"messages": msgs, "stream": "yes"}, param="stream")
        expect_error(s, "stream_options without stream", 400, C, {"messages": msgs, "stream_options": {}},
                     param="stream_options")
        expect_error(s, "five stop strings", 400, C, {"messages": msgs, "stop": ["a", "b", "c", "d", "e"]}, param="stop")
        expect_error(s, "stop a number", 400, C, {"messages": msgs, "stop": 3}, param="stop")
        expect_error(s, "chat logprobs a number", 400, C, {"messages": msgs, "logprobs": 3}, param="logprobs")
        expect_error(s, "top_logprobs without logprobs", 400, C, {"messages": msgs, "top_logprobs": 2},
                     param="top_logprobs")
        expect_error(s, "top_logprobs too many", 400, C, {"messages": msgs, "logprobs": True, "top_logprobs": 50},
                     param="top_logprobs")
        expect_error(s, "an unknown field", 400, C, {"messages": msgs, "foo": 1}, param="foo")
        expect_error(s, "frequency_penalty (not implemented)", 400, C, {"messages": msgs, "frequency_penalty": 0.5},
                     param="frequency_penalty")
        expect_error(s, "logit_bias (not implemented)", 400, C, {"messages": msgs, "logit_bias": {"5": 10}},
                     param="logit_bias")
        expect_error(s, "echo (not implemented)", 400, P, {"prompt": "x", "echo": True}, param="echo")
        expect_error(s, "prompt missing", 400, P, {"max_tokens": 3}, param="prompt")
        expect_error(s, "prompt of mixed types", 400, P, {"prompt": [1, "a"]}, param="prompt")
        expect_error(s, "an empty prompt list", 400, P, {"prompt": []}, param="prompt")
        expect_error(s, "a token id out of the vocabulary", 400, P, {"prompt": [1, 99999]}, param="prompt")
        st, _, j, _ = s.request("POST", P, {"prompt": [5] * 600})
        check(st == 400 and j["error"]["code"] == "context_length_exceeded" and j["error"]["param"] == "prompt",
              "a prompt longer than the context: 400 context_length_exceeded")
        expect_error(s, "a chat longer than the context", 400, C,
                     {"messages": [{"role": "user", "content": "Once upon a time " * 200}]}, param="messages")
        expect_error(s, "an unknown model", 404, C, {"model": "nope", "messages": msgs}, param="model")
        expect_error(s, "an unknown model id", 404, "/v1/models/nope", method="GET")
        expect_error(s, "an unknown route", 404, "/v2/everything", {"x": 1})
        expect_error(s, "a wrong method", 405, C, method="GET")
        expect_error(s, "detokenize an id out of range", 400, "/detokenize", {"tokens": [1, -4]}, param="tokens")
        expect_error(s, "tokenize without prompt", 400, "/tokenize", {}, param="prompt")
        # a body above --max-body is refused on its Content-Length before it is read, so a
        # client that sends it anyway meets a closed connection: test_guard.py's hostile case
        # odd bytes inside strings: an answer or a 400, never a crash
        st, _, _, _ = s.request("POST", P, raw=b'{"prompt": "\xff\xfe\x00abc", "max_tokens": 3}')
        check(st in (200, 400), f"invalid UTF-8 in a prompt: {st}")
        st, _, _, _ = s.request("POST", P, raw=b'{"prompt": "\\ud800", "max_tokens": 3}')
        check(st in (200, 400), f"a lone surrogate escape: {st}")

        # 200 requests at once against a queue of 32: answers and 429s with Retry-After, nothing else
        def one(_):
            return s.request("POST", P, {"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0})
        res = run_all(one, list(range(200)))
        codes = [r[0] if not isinstance(r, Exception) else repr(r) for r in res]
        busy = [r for r in res if not isinstance(r, Exception) and r[0] == 429]
        check(set(codes) <= {200, 429} and busy and codes.count(200) >= 32,
              f"200 at once, queue 32: {codes.count(200)} answered, {len(busy)} refused, nothing else "
              f"({sorted(set(map(str, codes)))})")
        check(all(r[1].get("Retry-After") and r[2]["error"]["type"] == "rate_limit_error" for r in busy),
              "every 429 has Retry-After and a rate_limit_error")
        texts = {r[2]["choices"][0]["text"] for r in res if not isinstance(r, Exception) and r[0] == 200}
        check(len(texts) == 1, "every answered one has the same greedy text")

        # a client that leaves mid-stream: its request is cancelled and its KV freed
        before = s.metrics()
        st, ev = s.stream(C, chat_body("Once upon a time", max_tokens=400, stream=True), stop_after=3)
        freed, m = s.wait_cancelled(before, "og_kv_blocks_used")
        check(freed, "a client gone mid-stream: its request is cancelled, its KV blocks freed")
        check(m["og_generation_tokens_total"] - before["og_generation_tokens_total"] < 400,
              "the cancelled stream stopped generating")
        # the same without streaming: the connection closes while the answer is generated
        before = m
        c = s.conn()
        c.request("POST", P, body=json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "temperature": 0,
                                              "ignore_eos": True, "n": 16}).encode(),
                  headers={"Content-Type": "application/json"})
        for _ in range(200):  # 16 x 400 tokens on 4 rows: seconds of work once it runs
            if s.metrics()["og_running"] > 0:
                break
            time.sleep(0.01)
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        freed = False
        for _ in range(200):
            m = s.metrics()
            if m["og_running"] == 0 and m["og_requests_cancelled_total"] > before["og_requests_cancelled_total"]:
                freed = True
                break
            time.sleep(0.05)
        check(freed and m["og_generation_tokens_total"] - before["og_generation_tokens_total"] < 16 * 400,
              "a client gone before its whole answer: its requests are cancelled")

        # a slow reader gets the same stream
        fast = content_of(s.stream(C, chat_body("Once upon a time", max_tokens=30, stream=True))[1])[0]
        slow = content_of(s.stream(C, chat_body("Once upon a time", max_tokens=30, stream=True), delay=0.05)[1])[0]
        check(fast == slow and fast.get(0), "a slow reader gets the same stream")
        st, _, j, _ = s.request("GET", "/health")
        check(st == 200, "still healthy after all that")
    finally:
        s.stop()


def case_loading(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg, env={"OG_SERVE_TEST_LOAD_DELAY_MS": "3000"}, wait_ready=False)
    try:
        st, h, j, _ = s.request("GET", "/health")
        check(st == 503 and j["status"] == "loading", "GET /health while loading: 503 loading")
        h = expect_error(s, "a chat while loading", 503, "/v1/chat/completions", chat_body("x"))
        check(bool(h.get("Retry-After")), "503 while loading has Retry-After")
        st, _, _, text = s.request("GET", "/metrics")
        check(st == 200 and b'og_model_loaded{model="stories260K"} 0' in text, "/metrics while loading")
        s.wait_ready()
        st, _, j, _ = s.request("GET", "/health")
        check(st == 200 and j["status"] == "ok", "GET /health once loaded: 200")
    finally:
        s.stop()


def case_models(build, pkgs):
    s = Server(build, pkgs, "--models-memory", "1")  # below any model: one loaded at a time when idle
    try:
        st, _, j, _ = s.request("GET", "/health")
        folders = sorted(d for d in os.listdir(pkgs) if os.path.exists(os.path.join(pkgs, d, "genai_config.json")))
        check(st == 200 and j["models"] == len(folders) and j["loaded"] == 0, "--models-dir: healthy, nothing loaded yet")
        st, _, j, _ = s.request("GET", "/v1/models")
        check({"stories260K", "tiny-fp16", "tiny-int4"} <= set(folders) and [m["id"] for m in j["data"]] == folders and
              not any(m["loaded"] for m in j["data"]), "--models-dir: /v1/models lists every package folder")
        expect_error(s, "no model named", 400, "/v1/chat/completions", chat_body("x"), param="model")
        expect_error(s, "an unknown model", 404, "/v1/chat/completions", dict(chat_body("x"), model="nope"),
                     param="model")
        want = {}
        for name in ("stories260K", "tiny-int4"):
            ref = generate_chat(build, os.path.join(pkgs, name), "Once upon a time", 16)
            st, _, j, _ = s.post("/v1/chat/completions", dict(chat_body("Once upon a time", max_tokens=16), model=name))
            want[name] = ref["text"]
            check(st == 200 and j["model"] == name and j["choices"][0]["message"]["content"] == ref["text"],
                  f"--models-dir: {name} loaded on first use answers as generate --chat")
        m = s.metrics()
        check(m.get('og_model_loaded{model="stories260K"}') == 0 and m.get('og_model_loaded{model="tiny-int4"}') == 1,
              "--models-memory: the least recently used idle model was unloaded")
        items = ["stories260K", "tiny-int4", "tiny-fp16"] * 3

        def one(name):
            return s.post("/v1/chat/completions", dict(chat_body("Once upon a time", max_tokens=16), model=name))
        res = run_all(one, items)
        ok = [not isinstance(r, Exception) and r[0] == 200 and r[2]["model"] == n and
              (n not in want or r[2]["choices"][0]["message"]["content"] == want[n]) for r, n in zip(res, items)]
        check(all(ok), f"--models-dir: 9 concurrent requests over 3 models, each answered by its model ({sum(ok)}/9)")
        st, _, t, _ = s.post("/tokenize", {"model": "tiny-int4", "prompt": "hello"})
        check(st == 200 and t["count"] > 0, "--models-dir: /tokenize names its model")
    finally:
        s.stop()


class DevTools:
    """Just enough of the Chrome DevTools protocol (a WebSocket client on a socket) to
    open a page and evaluate expressions in it."""

    def __init__(self, ws_url):
        import base64
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", ws_url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise OSError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError(f"DevTools refused the WebSocket: {head[:200]!r}")
        self.next_id = 0

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise OSError("DevTools closed the connection")
            out += chunk
        return out

    def _recv_message(self):
        data = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._recv_exact(2), "big")
            elif n == 127:
                n = int.from_bytes(self._recv_exact(8), "big")
            data += self._recv_exact(n)
            if b0 & 0x80:
                return data

    def call(self, method, **params):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))
        while True:
            msg = json.loads(self._recv_message())
            if msg.get("id") == self.next_id:
                return msg

    def close(self):
        self.sock.close()


def case_page(build, pkgs):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: no chromium (Debian package chromium) to load the chat page")
        return SKIP
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg)
    prof = tempfile.mkdtemp()
    browser = None
    try:
        q = "Once upon a time"
        want = s.post("/v1/chat/completions", chat_body(q, max_tokens=256))[2]["choices"][0]["message"]["content"]
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                    f"--user-data-dir={prof}", "--remote-debugging-port=0", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ws = None
        deadline = time.time() + 60
        while time.time() < deadline and ws is None:
            line = browser.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", "/json/list")
                pages = [t for t in json.loads(c.getresponse().read()) if t.get("type") == "page"]
                ws = pages[0]["webSocketDebuggerUrl"] if pages else None
        if not check(ws is not None, "headless Chromium started with its DevTools endpoint"):
            return
        threading.Thread(target=lambda: browser.stderr.read(), daemon=True).start()
        dt = DevTools(ws)
        dt.call("Page.navigate", url=f"http://{s.host}:{s.port}/")
        # type the message into the page and press Send, as a user would
        expr_ready = "document.readyState === 'complete' && !!document.getElementById('input')"
        for _ in range(300):
            if dt.call("Runtime.evaluate", expression=expr_ready, returnByValue=True)["result"]["result"].get("value"):
                break
            time.sleep(0.1)
        dt.call("Runtime.evaluate", expression=f"document.getElementById('input').value = {json.dumps(q)};"
                "document.getElementById('form').requestSubmit();")
        seen_partial, got = False, None
        done_expr = ("(() => { const a = document.querySelector('.msg.assistant, .msg.error');"
                     " return a ? [a.dataset.done, a.className, a.textContent] : null; })()")
        for _ in range(1200):
            v = dt.call("Runtime.evaluate", expression=done_expr, returnByValue=True)["result"]["result"].get("value")
            if v and v[0] == "0" and v[2]:
                seen_partial = True
            if v and v[0] == "1":
                got = v
                break
            time.sleep(0.05)
        dt.close()
        check(got is not None and got[1] == "msg assistant", f"the page shows a finished answer ({got!r:.200})")
        check(got is not None and got[2] == want, "the page's streamed answer equals the API's answer")
        print(f"note: a partial answer was {'seen' if seen_partial else 'not seen'} while it streamed")
        m2 = s.metrics()
        check(m2.get('og_http_responses_total{route="/v1/chat/completions",status="200"}', 0) >= 2,
              "the page asked /v1/chat/completions")
    finally:
        if browser:
            browser.kill()
            browser.wait()
        shutil.rmtree(prof, ignore_errors=True)
        s.stop()


# ---- backends -------------------------------------------------------------------------------

def case_backend(build, pkgs):
    """serve --backend ort: the model on onnxruntime (the engine serves it per sequence),
    greedy completions equal to `generate --backend ort`'s; --ep cuda with --backend native
    is refused before anything starts."""
    pkg = os.path.join(pkgs, "stories260K")
    exe = os.path.join(build, "onnx-genai")
    r = subprocess.run([exe, "serve", "-m", pkg, "--backend", "native", "--ep", "cuda"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "native backend runs on the CPU only" in r.stderr,
          f"serve --backend native --ep cuda refused: {r.stderr.strip()!r}")
    probe = subprocess.run([exe, "generate", "-m", pkg, "-p", "a", "--max-length", "4",
                            "--backend", "ort"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0 and "onnxruntime is not available" in probe.stderr:
        print(f"SKIP: {probe.stderr.strip()}")
        return SKIP
    if not check(probe.returncode == 0, f"generate --backend ort runs: {probe.stderr.strip()!r}"):
        return None
    prompt = "Once upon a time"
    s = Server(build, pkg, "--backend", "ort")
    try:
        st, _, t, _ = s.post("/tokenize", {"prompt": prompt})
        n_prompt = t["count"]
        plain = generate_plain(build, pkg, prompt, 30, n_prompt, "--backend", "ort")
        st, _, j, _ = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 30, "temperature": 0})
        text = j["choices"][0]["text"] if st == 200 else None
        check(st == 200 and plain["text"][0] == prompt + text,
              f"serve --backend ort: completion equals generate --backend ort's ({text!r})")
        st, _, j3, _ = s.post("/v1/completions", {"prompt": [prompt, t["tokens"]], "max_tokens": 30,
                                                  "temperature": 0})
        check(st == 200 and all(c["text"] == text for c in j3["choices"]),
              "serve --backend ort: two prompts at once, each the same answer")
    finally:
        s.stop()


# ---- tool calls ------------------------------------------------------------------------------

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City."}},
                   "required": ["city"]}}}]
CALL_A = {"city": "Zürich", "unit": "c", "opts": {"days": [1, 2], "x": None}}
CALL_B = {"tz": "UTC"}
# the answers the scripted model gives, per template family
HERMES_CALLS = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": '
                + json.dumps(CALL_A, ensure_ascii=False) + '}\n</tool_call>\n<tool_call>\n'
                '{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>')
HERMES_BAD = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'
PLAIN = "It is sunny."
LLAMA_CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
MISTRAL_CALLS = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]'
MISTRAL_ARGS_CALLS = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}'
# as deepseek-v3.jinja writes two calls
DEEPSEEK_CALLS = ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
                  + json.dumps(CALL_A, ensure_ascii=False) + "\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function"
                  "<｜tool▁sep｜>get_time\n```json\n{\"tz\": \"UTC\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")
# as command-r-plus-tool_use.jinja writes them
COMMAND_R_CALLS = ('Let me check.\nAction:\n```json\n[\n    {\n        "tool_name": "get_weather",\n'
                   '        "parameters": {"city": "Paris"}\n    }\n]```')
# LFM2's Python list between its call tokens
PYTHONIC_CALLS = "<|tool_call_start|>[get_weather(city='Zürich', opts={'days': [1, 2], 'x': None}), get_time(tz=\"UTC\")]<|tool_call_end|>"


def templated_package(pkgs, tmp, template, special=None):
    """tiny-int4 (byte-level BPE, 1024 positions) with a real chat template (symlinked files,
    its own tokenizer_config); special (a text, or two separated by a space) replaces its
    unused special token <|im_start|> (then <|endoftext|>, its padding) in tokenizer.json,
    so that the tokenizer has that marker as a special token (which the streaming decoder
    drops)."""
    src = os.path.abspath(os.path.join(pkgs, "tiny-int4"))
    dst = os.path.join(tmp, template)
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "tokenizer_config.json" and not (special and f == "tokenizer.json"):
            os.symlink(os.path.join(src, f), os.path.join(dst, f))
    if special:
        with open(os.path.join(src, "tokenizer.json")) as f:
            tok = json.load(f)
        new = dict(zip(["<|im_start|>", "<|endoftext|>"], special.split(" ")))
        for t in tok["added_tokens"]:
            t["content"] = new.get(t["content"], t["content"])
        with open(os.path.join(dst, "tokenizer.json"), "w") as f:
            json.dump(tok, f)
    with open(os.path.join(src, "tokenizer_config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(ROOT_TEMPLATES, template + ".jinja")) as f:
        cfg["chat_template"] = f.read()
    with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f)
    # the special tokens the template sees, as transformers passes them (only those defined)
    return dst, {k: cfg[k] for k in ("bos_token", "eos_token") if cfg.get(k)}


ROOT_TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "..", "shared", "chat-templates", "templates")


def tool_body(stream=False, **kw):
    b = {"messages": [{"role": "user", "content": "Weather?"}], "tools": TOOLS, "temperature": 0,
         "max_tokens": 300, "ignore_eos": True, "stream": stream}
    b.update(kw)
    return b


def stream_calls(events):
    """(content, {index: {id, type, name, arguments}}, finish) of a streamed chat answer."""
    content, calls, finish = "", {}, None
    for e in events:
        if not isinstance(e, dict):
            continue
        for c in e.get("choices", []):
            d = c.get("delta", {})
            content += d.get("content") or ""
            for tc in d.get("tool_calls") or []:
                k = calls.setdefault(tc["index"], {"arguments": ""})
                for f in ("id", "type"):
                    if f in tc:
                        check(f not in k, f"stream: '{f}' of call {tc['index']} comes once")
                        k[f] = tc[f]
                fn = tc.get("function", {})
                if "name" in fn:
                    k["name"] = fn["name"]
                k["arguments"] += fn.get("arguments", "")
            finish = c.get("finish_reason") or finish
    return content, calls, finish


def scripted_needs(build):
    """The openai module when the scripted binary, the template corpus and the client are
    there; else None after saying which is missing."""
    scripted = os.path.join(build, "tests", "onnx-genai-scripted")
    if not os.path.exists(scripted):
        print(f"SKIP: {scripted} was not built")
        return None
    if not os.path.isdir(ROOT_TEMPLATES):
        print(f"SKIP: the chat-template corpus is missing ({ROOT_TEMPLATES})")
        return None
    try:
        import openai
    except ImportError:
        print("SKIP: the openai package (tools/requirements.txt) is not installed")
        return None
    return openai


def openai_client(s, openai):
    return openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)


def case_tools(build, pkgs):
    openai = scripted_needs(build)
    if not openai:
        return SKIP
    sys.path.insert(0, os.path.dirname(ROOT_TEMPLATES))
    import render  # the oracle of transformers' rendering
    tmp = tempfile.mkdtemp(prefix="og-tools-")
    try:
        tools_hermes(build, pkgs, tmp, openai, render)
        tools_other(build, pkgs, tmp, "llama-3.1-8b-instruct", LLAMA_CALL,
                    [("get_weather", {"city": "Paris"})], "")
        tools_other(build, pkgs, tmp, "mistral-nemo-instruct-2407", MISTRAL_CALLS,
                    [("get_weather", {"city": "Paris"}), ("get_time", {})], "")
        # [TOOL_CALLS] as a special token, as Mistral's tokenizers have it: the decoder
        # drops its text, the server puts it back by its id
        tools_other(build, pkgs, tmp, "mistral-nemo-instruct-2407", MISTRAL_CALLS,
                    [("get_weather", {"city": "Paris"}), ("get_time", {})], "", special="[TOOL_CALLS]")
        tools_other(build, pkgs, tmp, "mistral-nemo-instruct-2407", MISTRAL_ARGS_CALLS,
                    [("get_weather", {"city": "Paris"}), ("get_time", {})], "", subdir="args")
        # (this byte-level tokenizer spends a token on each byte of DeepSeek's markers)
        tools_other(build, pkgs, tmp, "deepseek-v3", DEEPSEEK_CALLS,
                    [("get_weather", CALL_A), ("get_time", CALL_B)], "", max_tokens=900)
        # (Command-R's template is longer than this package's 1024 positions: its answers
        # are checked by tool-calls-check alone, its rendering of calls below)
        # LFM2.5's template shows no format: its vocabulary's call tokens do
        tools_other(build, pkgs, tmp, "lfm2.5-instruct", PYTHONIC_CALLS,
                    [("get_weather", {"city": "Zürich", "opts": {"days": [1, 2], "x": None}}), ("get_time", CALL_B)],
                    "", special="<|tool_call_start|> <|tool_call_end|>")
        for template in ("deepseek-v3", "command-r-plus-tool_use"):
            tools_sent_back(build, pkgs, tmp, template, render)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- constrained decoding ----------------------------------------------------------------

# Schemas a random-weight model completes well within max_tokens (every string, number
# and array bounded, and compact JSON asked for with llguidance's x-guidance option: under
# the default free white space a random model spends any budget on it), so that a complete
# output is expected, not only a valid prefix.
GUIDE_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                                      "b": {"enum": ["x", "y"]}, "c": {"type": "boolean"}},
     "required": ["a", "b", "c"], "additionalProperties": False},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                      "tags": {"type": "array", "items": {"enum": ["p", "q"]},
                                               "maxItems": 3}},
     "required": ["name", "tags"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 5}, "minItems": 1,
     "maxItems": 4},
    {"enum": ["red", "green", "blue"]},
    {"type": "object", "properties": {"ok": {"const": True}, "n": {"type": "null"}},
     "required": ["ok", "n"], "additionalProperties": False},
    {"$defs": {"leaf": {"type": "integer", "minimum": 1, "maximum": 3}},
     "type": "object", "properties": {"x": {"$ref": "#/$defs/leaf"}, "y": {"$ref": "#/$defs/leaf"}},
     "required": ["x", "y"], "additionalProperties": False},
]
for _s in GUIDE_SCHEMAS:
    _s["x-guidance"] = {"whitespace_flexible": False}
GUIDE_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]},
                                                     "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                    "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time.",
     "parameters": {"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}},
                    "required": ["tz"], "additionalProperties": False}}},
]


def json_format(schema, name="answer"):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def valid(jsonschema, text, schema):
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except Exception:  # noqa: BLE001 - any failure is "not valid"
        return False


def case_guidance(build, pkgs):
    """response_format and forced tool calls: outputs of a random-weight model (noise when
    unconstrained) validate with jsonschema, streamed equals not streamed, concurrent
    requests with different schemas equal their answers alone, max_tokens cuts with
    "length", invalid schemas are a 400 naming the field; tool_choice required / named /
    parallel_tool_calls in the hermes, llama 3.1, mistral and deepseek formats, the arguments
    validated against the function's parameters. Oracle: jsonschema (PyPI)."""
    try:
        import jsonschema
        import openai
    except ImportError:
        print("SKIP: jsonschema or openai (tools/requirements.txt) is not installed: no oracle")
        return SKIP
    pkg = os.path.join(pkgs, "tiny-int4")
    s = Server(build, pkg)
    try:
        guidance_response_format(s, jsonschema, openai)
    finally:
        s.stop()
    # per-sequence mode: the engine chooses from the generator's logits under the mask
    s = Server(build, pkg, "--per-sequence")
    try:
        for i, schema in enumerate(GUIDE_SCHEMAS[:3]):
            st, _, j, _ = s.post("/v1/chat/completions", chat_body(f"q{i}", max_tokens=200,
                                                                   response_format=json_format(schema)))
            ok = st == 200 and j["choices"][0]["finish_reason"] == "stop"
            check(ok and valid(jsonschema, j["choices"][0]["message"]["content"], schema),
                  f"per-sequence mode: schema {i} validates ({j if not ok else ''})")
    finally:
        s.stop()
    if not os.path.isdir(ROOT_TEMPLATES):
        print(f"SKIP tool parts: the chat-template corpus is missing ({ROOT_TEMPLATES})")
        return
    tmp = tempfile.mkdtemp(prefix="og-guide-")
    try:
        for template, fmt in (("qwen2.5-7b-instruct", "hermes"), ("llama-3.1-8b-instruct", "llama3"),
                              ("mistral-nemo-instruct-2407", "mistral"), ("deepseek-v3", "deepseek")):
            tpkg, _ = templated_package(pkgs, tmp, template)
            s = Server(build, tpkg)
            try:
                guidance_tools(s, jsonschema, openai, fmt)
            finally:
                s.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def guidance_response_format(s, jsonschema, openai):
    c = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    # 1. every schema, greedy and sampled, chat and completions: complete and valid
    alone = {}
    for i, schema in enumerate(GUIDE_SCHEMAS):
        r = c.chat.completions.create(model="tiny-int4", messages=[{"role": "user", "content": f"q{i}"}],
                                      temperature=0, max_tokens=200, response_format=json_format(schema))
        text = r.choices[0].message.content
        alone[i] = text
        check(r.choices[0].finish_reason == "stop" and valid(jsonschema, text, schema),
              f"json_schema {i}, greedy: {text!r} validates")
        r = c.chat.completions.create(model="tiny-int4", messages=[{"role": "user", "content": f"q{i}"}],
                                      temperature=1.0, seed=i, n=2, max_tokens=200,
                                      response_format=json_format(schema))
        check(all(ch.finish_reason == "stop" and valid(jsonschema, ch.message.content, schema)
                  for ch in r.choices), f"json_schema {i}, sampled (n=2): both validate")
        st, _, j, _ = s.post("/v1/completions", {"prompt": f"q{i}", "max_tokens": 200, "temperature": 0,
                                                 "response_format": json_format(schema)})
        check(st == 200 and j["choices"][0]["finish_reason"] == "stop" and
              valid(jsonschema, j["choices"][0]["text"], schema), f"completions json_schema {i}: validates")
    # 2. streamed: the same text as the whole answer
    for i in (0, 2):
        st, ev = s.stream("/v1/chat/completions", chat_body(f"q{i}", max_tokens=200, stream=True,
                                                            response_format=json_format(GUIDE_SCHEMAS[i])))
        got, finish, _ = content_of(ev)
        check(st == 200 and got.get(0) == alone[i] and finish.get(0) == "stop",
              f"json_schema {i} streamed: the same text, finish stop")
    # 3. json_object: a JSON object (max_tokens generous; a cut answer must say "length")
    r = c.chat.completions.create(model="tiny-int4", messages=[{"role": "user", "content": "obj"}],
                                  temperature=0, max_tokens=400, response_format={"type": "json_object"})
    text, fin = r.choices[0].message.content, r.choices[0].finish_reason
    check((fin == "stop" and isinstance(json.loads(text), dict)) or
          (fin == "length" and text.lstrip().startswith("{") and r.usage.completion_tokens == 400),
          f"json_object: an object, or cut by length ({fin}: {text[:80]!r})")
    st, _, j, _ = s.post("/v1/chat/completions", chat_body("t", max_tokens=5, response_format={"type": "text"}))
    check(st == 200, "response_format text: as without it")
    # 4. max_tokens cuts a constrained answer: finish_reason length
    st, _, j, _ = s.post("/v1/chat/completions", chat_body("q0", max_tokens=3, response_format=json_format(GUIDE_SCHEMAS[0])))
    check(st == 200 and j["choices"][0]["finish_reason"] == "length" and j["usage"]["completion_tokens"] == 3 and
          alone[0].startswith(j["choices"][0]["message"]["content"]),
          "max_tokens 3 under a schema: length, a prefix of the full answer")
    # 4b. log-probabilities under a schema: one entry per token, of the model's distribution
    # (the first token's top alternatives include tokens the schema does not allow there)
    st, _, j, _ = s.post("/v1/chat/completions", chat_body("q0", max_tokens=200, logprobs=True, top_logprobs=5,
                                                            response_format=json_format(GUIDE_SCHEMAS[0])))
    lp = j["choices"][0]["logprobs"]["content"] if st == 200 else []
    check(st == 200 and j["choices"][0]["message"]["content"] == alone[0] and
          len(lp) == j["usage"]["completion_tokens"] and "".join(e["token"] for e in lp) == alone[0] and
          any(not a["token"].startswith("{") for a in lp[0]["top_logprobs"]),
          "logprobs under a schema: the same answer, an entry per token, the model's alternatives")
    # 5. stop strings still cut
    cut = alone[0][2:4]
    st, _, j, _ = s.post("/v1/chat/completions", chat_body("q0", max_tokens=200, stop=[cut],
                                                            response_format=json_format(GUIDE_SCHEMAS[0])))
    check(st == 200 and j["choices"][0]["message"]["content"] == alone[0][:alone[0].index(cut)] and
          j["choices"][0]["finish_reason"] == "stop", f"a stop string {cut!r} cuts a constrained answer")
    # 6. concurrent requests with different schemas in one batch equal their answers alone
    bodies = [chat_body(f"q{i}", max_tokens=200, response_format=json_format(GUIDE_SCHEMAS[i]))
              for i in range(len(GUIDE_SCHEMAS))] * 2
    bodies.append(chat_body("free", max_tokens=20))  # an unconstrained batch-mate
    outs = run_all(lambda b: s.post("/v1/chat/completions", b), bodies)
    same = all(not isinstance(o, Exception) and o[0] == 200 and
               o[2]["choices"][0]["message"]["content"] == alone[i % len(GUIDE_SCHEMAS)]
               for i, o in enumerate(outs[:-1]))
    check(same, f"{len(bodies)} concurrent requests, {len(GUIDE_SCHEMAS)} schemas: each its answer alone")
    check(not isinstance(outs[-1], Exception) and outs[-1][0] == 200, "an unconstrained batch-mate answers")
    # 7. bad response_format: 400 naming the field, before anything runs
    bad = [({"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "nonsense"}}},
            "response_format.json_schema.schema"),
           ({"type": "json_schema", "json_schema": {"name": "t", "schema": {"$ref": "#/$defs/missing"}}},
            "response_format.json_schema.schema"),
           ({"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "string", "pattern": "(("}}},
            "response_format.json_schema.schema"),
           ({"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
            "response_format.json_schema.name"),
           ({"type": "json_schema"}, "response_format.json_schema"),
           ({"type": "xml"}, "response_format.type"),
           ({"type": "json_object", "extra": 1}, "response_format.extra"),
           ("json", "response_format")]
    for rf, param in bad:
        st, _, j, _ = s.post("/v1/chat/completions", chat_body("x", max_tokens=5, response_format=rf))
        check(st == 400 and j["error"]["param"] == param and j["error"]["type"] == "invalid_request_error",
              f"response_format {json.dumps(rf)[:70]}: 400 naming {param} ({j and j['error']['message'][:120]!r})")
    try:
        c.chat.completions.create(model="tiny-int4", messages=[{"role": "user", "content": "x"}], max_tokens=5,
                                  response_format=json_format({"type": "nonsense"}))
        check(False, "openai client: an invalid schema raises BadRequestError")
    except openai.BadRequestError as e:
        check(e.status_code == 400, "openai client: an invalid schema raises BadRequestError")


def calls_of(fmt, jsonschema, calls, want_name=None):
    """Whether every call names a GUIDE_TOOLS function (want_name if given) and its
    arguments validate against that function's parameters."""
    params = {t["function"]["name"]: t["function"]["parameters"] for t in GUIDE_TOOLS}
    for name, args in calls:
        if name not in params or (want_name and name != want_name) or not valid(jsonschema, args, params[name]):
            print(f"     {fmt}: bad call {name} {args!r}")
            return False
    return True


def guidance_tools(s, jsonschema, openai, fmt):
    c = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    base = dict(messages=[{"role": "user", "content": "Weather?"}], tools=GUIDE_TOOLS, temperature=0)
    mname = c.models.list().data[0].id
    st, _, t, _ = s.post("/tokenize", {"messages": base["messages"], "tools": GUIDE_TOOLS})
    if st == 200 and t["count"] + 100 > t["max_model_len"]:
        print(f"SKIP {fmt}: the template's prompt ({t['count']} tokens) leaves under 100 of the "
              f"package's {t['max_model_len']} positions")
        return
    # as many tokens as the context leaves (this byte-level vocabulary spends one on each
    # byte of DeepSeek's markers), at most 400
    base["max_tokens"] = min(400, t["max_model_len"] - t["count"])
    for choice, parallel in (("required", True), ("required", False),
                             ({"type": "function", "function": {"name": "get_time"}}, False)):
        r = c.chat.completions.create(model=mname, tool_choice=choice, parallel_tool_calls=parallel, **base)
        ch = r.choices[0]
        calls = [(t.function.name, t.function.arguments) for t in ch.message.tool_calls or []]
        want = choice["function"]["name"] if isinstance(choice, dict) else None
        check(ch.finish_reason == "tool_calls" and len(calls) >= 1 and (parallel or len(calls) == 1) and
              calls_of(fmt, jsonschema, calls, want),
              f"{fmt}: tool_choice {json.dumps(choice)}, parallel {parallel}: {len(calls)} valid call(s)")
        # streamed: the same calls
        st, ev = s.stream("/v1/chat/completions", dict(base, model=mname, tool_choice=choice,
                                                       parallel_tool_calls=parallel, stream=True))
        _, scalls, finish = stream_calls(ev)
        got = [(scalls[k].get("name"), scalls[k]["arguments"]) for k in sorted(scalls)]
        check(st == 200 and finish == "tool_calls" and got == calls,
              f"{fmt}: the same, streamed")
    # sampled: still valid calls (one each: several may not fit the positions left)
    r = c.chat.completions.create(model=mname, tool_choice="required", temperature=1.0, seed=3, n=3,
                                  parallel_tool_calls=False,
                                  **{k: v for k, v in base.items() if k != "temperature"})
    check(all(ch.finish_reason == "tool_calls" and ch.message.tool_calls and
              calls_of(fmt, jsonschema, [(t.function.name, t.function.arguments) for t in ch.message.tool_calls])
              for ch in r.choices), f"{fmt}: sampled (n=3): valid calls")
    # bad tool_choice / tools
    for body, param in ((dict(base, tool_choice={"type": "function", "function": {"name": "nope"}}), "tool_choice"),
                        (dict(base, tool_choice="required", response_format={"type": "json_object"}), "response_format"),
                        (dict(base, tool_choice="required",
                              tools=GUIDE_TOOLS + [{"type": "function", "function": {"name": "f", "parameters": {"type": "nonsense"}}}]),
                         "tools[2].function.parameters")):
        st, _, j, _ = s.post("/v1/chat/completions", body)
        check(st == 400 and j["error"]["param"] == param, f"{fmt}: 400 naming {param} ({j and j['error']['message'][:100]!r})")


# ---- NUL characters ------------------------------------------------------------------------

def stories_tokenizer(pkgs):
    """stories260K's folder and its tokenizer in HF tokenizers (the oracle; None, said,
    when the package is not installed)."""
    pkg = os.path.join(pkgs, "stories260K")
    return pkg, package_tokenizer(pkg)


def case_nul(build, pkgs):
    """Text that holds a NUL character (stories260K's byte token <0x00>, id 3) comes back
    whole, with "\u0000" in its JSON: /detokenize, and answers whose scripted tokens hold
    it (completion text, chat content, streamed or not, logprobs, a stop string after it).
    Oracle: HF tokenizers decoding the same ids from the package's tokenizer.json."""
    pkg, tok = stories_tokenizer(pkgs)
    if not tok:
        return SKIP
    nul = tok.token_to_id("<0x00>")
    if not check(nul is not None and tok.decode([nul]) == "\x00", "the package has the byte token <0x00>"):
        return 1
    words = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    ids = words("Once upon a time") + [nul] + words(" there was a girl") + [nul, nul] + words(" Lily ran")
    want = tok.decode(ids)
    check("\x00" in want and want.endswith("Lily ran"), f"oracle text {want!r}")
    s = scripted_server(build, pkg, [ids])
    try:
        st, _, d, raw = s.post("/detokenize", {"tokens": ids})
        check(st == 200 and d["prompt"] == want and b"\\u0000" in raw,
              f"/detokenize keeps the NUL characters and what follows ({d and d.get('prompt')!r})")
        prompt = words("Tom")
        body = {"prompt": prompt, "max_tokens": len(ids) + 5, "temperature": 0, "ignore_eos": True}
        st, _, j, raw = s.post("/v1/completions", body)
        # the answer's text continues the prompt: decode(prompt + ids) beyond decode(prompt)
        # (" Once", with the space, as OpenAI's completions give a continuation)
        text = tok.decode(prompt + ids)[len(tok.decode(prompt)):]
        check(st == 200 and j["choices"][0]["text"] == text and b"\\u0000" in raw and text[0] == " ",
              f"completion text with NUL characters equals the decode of its tokens after the prompt ({text!r})")
        st, ev = s.stream("/v1/completions", dict(body, stream=True))
        got, _, _ = content_of(ev)
        check(st == 200 and got.get(0) == text, "streamed completion: the same text")
        st, _, j, _ = s.post("/v1/completions", dict(body, logprobs=2))
        lp = j["choices"][0]["logprobs"] if st == 200 else {}
        # (a token alone decodes without its leading space, as the routes case says)
        check(lp.get("tokens", [])[4:5] == ["\x00"] and
              "".join(lp["tokens"]).replace(" ", "") == text.replace(" ", "") and
              lp["text_offset"][5] == lp["text_offset"][4] + 1,
              "completion logprobs: the NUL token's text and offsets")
        chat = chat_body("Tom", max_tokens=len(ids) + 5, ignore_eos=True)
        # the content continues the rendered chat prompt (its ids from /tokenize)
        st, _, tm, _ = s.post("/tokenize", {"messages": chat["messages"]})
        ctx = tm["tokens"] if st == 200 else []
        text = tok.decode(ctx + ids)[len(tok.decode(ctx)):]
        st, _, j, _ = s.post("/v1/chat/completions", chat)
        content = j["choices"][0]["message"]["content"] if st == 200 else None
        check(content is not None and "\x00" in content and content == text,
              f"chat content with NUL characters ({content!r})")
        st, ev = s.stream("/v1/chat/completions", dict(chat, stream=True))
        got, finish, _ = content_of(ev)
        check(st == 200 and got.get(0) == content and finish.get(0) == "stop", "streamed chat: the same content")
        st, _, j, _ = s.post("/v1/chat/completions", dict(chat, logprobs=True))
        lp = j["choices"][0]["logprobs"]["content"] if st == 200 else []
        check(len(lp) == len(ids) and lp[4]["token"] == "\x00" and lp[4]["bytes"] == [0],
              "chat logprobs: the NUL token's text and bytes")
        cut = text.index("Lily")
        st, _, j, _ = s.post("/v1/chat/completions", dict(chat, stop=["Lily"]))
        check(st == 200 and j["choices"][0]["message"]["content"] == text[:cut] and
              j["choices"][0]["finish_reason"] == "stop", "a stop string after NUL characters cuts there")
        st, ev = s.stream("/v1/chat/completions", dict(chat, stop=["Lily"], stream=True))
        got, finish, _ = content_of(ev)
        check(got.get(0) == text[:cut] and finish.get(0) == "stop", "the same, streamed")
    finally:
        s.stop()


def scripted_server(build, pkg, script):
    return Server(build, pkg, env={"OG_SERVE_TEST_SCRIPT": json.dumps(script)}, binary=os.path.join(build, "tests", "onnx-genai-scripted"))


def tools_hermes(build, pkgs, tmp, openai, render):
    pkg, tokens = templated_package(pkgs, tmp, "qwen2.5-7b-instruct")
    # one scripted answer per choice, in the order the requests below submit them
    script = [HERMES_CALLS, HERMES_CALLS, HERMES_BAD, HERMES_BAD, PLAIN, HERMES_CALLS, HERMES_CALLS, HERMES_CALLS]
    s = scripted_server(build, pkg, script)
    try:
        c = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
        kw = dict(extra_body={"ignore_eos": True}, temperature=0, max_tokens=300)
        msgs = [{"role": "user", "content": "Weather?"}]
        # 1. two calls after some text, not streamed, through the openai client
        r = c.chat.completions.create(model="qwen2.5-7b-instruct", messages=msgs, tools=TOOLS, **kw)
        ch = r.choices[0]
        calls = ch.message.tool_calls or []
        check(ch.finish_reason == "tool_calls", f"hermes: finish_reason tool_calls ({ch.finish_reason})")
        check(ch.message.content == "Let me check.", f"hermes: content is the text before the calls ({ch.message.content!r})")
        check([t.function.name for t in calls] == ["get_weather", "get_time"], "hermes: two calls, names in order")
        check(len(calls) == 2 and json.loads(calls[0].function.arguments) == CALL_A
              and json.loads(calls[1].function.arguments) == CALL_B, "hermes: arguments are the JSON the model wrote (unicode, nesting, null)")
        check(all(t.type == "function" and t.id.startswith("call_") for t in calls) and len({t.id for t in calls}) == 2,
              "hermes: distinct call ids, type function")
        # 2. the same streamed, through the openai client: content, then the calls in fragments
        content, got, finish = "", {}, None
        for chunk in c.chat.completions.create(model="qwen2.5-7b-instruct", messages=msgs, tools=TOOLS, stream=True, **kw):
            for cc in chunk.choices:
                content += cc.delta.content or ""
                for tc in cc.delta.tool_calls or []:
                    k = got.setdefault(tc.index, {"name": None, "arguments": "", "id": None})
                    if tc.id:
                        k["id"] = tc.id
                    if tc.function and tc.function.name:
                        k["name"] = tc.function.name
                    if tc.function and tc.function.arguments:
                        k["arguments"] += tc.function.arguments
                finish = cc.finish_reason or finish
        check(content == "Let me check." and "<tool" not in content, f"hermes stream: content without the opener ({content!r})")
        check(finish == "tool_calls", "hermes stream: finish_reason tool_calls")
        check(sorted(got) == [0, 1] and got[0]["name"] == "get_weather" and got[1]["name"] == "get_time"
              and json.loads(got[0]["arguments"]) == CALL_A and json.loads(got[1]["arguments"]) == CALL_B
              and all(g["id"] for g in got.values()), "hermes stream: the calls, by index, equal the unstreamed ones")
        # 3. a malformed call: the whole answer comes back as content, finish stop
        st, _, j, _ = s.post("/v1/chat/completions", tool_body())
        m = j["choices"][0]["message"]
        check(st == 200 and m["content"] == HERMES_BAD and "tool_calls" not in m
              and j["choices"][0]["finish_reason"] == "stop", "hermes: malformed call -> plain content, stop")
        st, events = s.stream("/v1/chat/completions", tool_body(stream=True))
        content, calls, finish = stream_calls(events)
        # (a call streams as it is written: its name and arguments so far went out before the
        # end showed the text malformed; the text then comes as content, finish stop)
        check(content == HERMES_BAD and finish == "stop", "hermes stream: malformed call -> the same content, stop")
        # 4. no call at all
        st, _, j, _ = s.post("/v1/chat/completions", tool_body())
        check(j["choices"][0]["message"]["content"] == PLAIN and j["choices"][0]["finish_reason"] == "stop",
              "hermes: a plain answer stays plain")
        # 5. tool_choice none: the template gets no tools, the answer is not parsed
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(tool_choice="none"))
        check(j["choices"][0]["message"]["content"] == HERMES_CALLS and j["choices"][0]["finish_reason"] == "stop",
              "hermes: tool_choice none -> the answer as text")
        # 6. parallel_tool_calls false: the first call only
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(parallel_tool_calls=False))
        calls = j["choices"][0]["message"].get("tool_calls") or []
        check([t["function"]["name"] for t in calls] == ["get_weather"], "hermes: parallel_tool_calls false -> one call")
        # 7. streamed raw: each call's first chunk has id, type, name and arguments ""
        st, events = s.stream("/v1/chat/completions", tool_body(stream=True))
        firsts = [tc for e in events if isinstance(e, dict) for ch in e["choices"]
                  for tc in ch["delta"].get("tool_calls") or [] if "id" in tc]
        check(len(firsts) == 2 and all(f["type"] == "function" and f["function"]["arguments"] == ""
                                       and f["index"] == i for i, f in enumerate(firsts)),
              "hermes stream: first chunk of each call: index, id, type, name, arguments ''")
        # 8. refused tool_choice values (nothing is submitted: the script's order holds;
        # forced calls are the guidance case's)
        for tc in [{"type": "function", "function": {"name": "get_time"}}, "sometimes",
                   {"type": "function", "name": "get_weather"}]:
            st, _, j, _ = s.post("/v1/chat/completions", tool_body(tool_choice=tc))
            check(st == 400 and j["error"]["param"] == "tool_choice", f"tool_choice {tc!r}: 400 naming it")
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(tool_choice="required", tools=[]))
        check(st == 400 and j["error"]["param"] == "tool_choice", "tool_choice required without tools: 400")
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(parallel_tool_calls="yes"))
        check(st == 400 and j["error"]["param"] == "parallel_tool_calls", "parallel_tool_calls not a bool: 400")
        # 9. the calls go back into the conversation (arguments as the client has them: a
        # JSON string) with the tool's answer; the template must see arguments as an
        # object, as transformers renders it (render.py)
        conv = msgs + [{"role": "assistant", "content": None, "tool_calls": [
                           {"id": t.id, "type": "function", "function": {"name": t.function.name, "arguments": t.function.arguments}}
                           for t in r.choices[0].message.tool_calls]},
                       {"role": "tool", "tool_call_id": r.choices[0].message.tool_calls[0].id, "content": "12 C"},
                       {"role": "tool", "tool_call_id": r.choices[0].message.tool_calls[1].id, "content": "10:00"}]
        st, _, tj, _ = s.post("/tokenize", {"messages": conv, "tools": TOOLS})
        oracle_conv = json.loads(json.dumps(conv))
        for t in oracle_conv[1]["tool_calls"]:
            t["function"]["arguments"] = json.loads(t["function"]["arguments"])
        with open(os.path.join(ROOT_TEMPLATES, "qwen2.5-7b-instruct.jinja")) as f:
            text = render.render_case(render.make_environment(), f.read(),
                                      {"messages": oracle_conv, "tools": TOOLS, "add_generation_prompt": True}, tokens)
        check('"arguments": {"city": "Zürich"' in text and "<tool_response>\n12 C\n</tool_response>" in text,
              "oracle: the rendered conversation has the call's arguments as an object and the tool's answer")
        st2, _, oj, _ = s.post("/tokenize", {"prompt": text, "add_special_tokens": False})
        check(st == 200 and st2 == 200 and tj["tokens"] == oj["tokens"],
              "a conversation with tool calls and tool answers renders as transformers renders it")
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(messages=[{"role": "assistant", "tool_calls": [{"function": {"arguments": 3}}]}]))
        check(st == 400 and j["error"]["param"] == "messages[0].tool_calls[0].function", "a malformed tool call in messages: 400 naming it")
    finally:
        s.stop()


def tools_other(build, pkgs, tmp, template, answer, want, content, special=None, subdir=None, max_tokens=300):
    pkg, _ = templated_package(pkgs, os.path.join(tmp, subdir or ("special" if special else "")), template, special)
    s = scripted_server(build, pkg, [answer])
    try:
        if special:
            st, _, j, _ = s.post("/tokenize", {"prompt": answer, "add_special_tokens": False})
            check(st == 200 and j["tokens"][0] == 16382, f"{special} is one special token ({j['tokens'][:3]})")
        msgs = [{"role": "user", "content": "Weather?"}]
        st, _, j, _ = s.post("/v1/chat/completions", tool_body(messages=msgs, max_tokens=max_tokens))
        ok = st == 200
        m = j["choices"][0]["message"] if ok else {}
        got = [(t["function"]["name"], json.loads(t["function"]["arguments"])) for t in m.get("tool_calls") or []]
        check(ok and got == want and j["choices"][0]["finish_reason"] == "tool_calls"
              and (m["content"] or "") == content, f"{template}: the calls ({got})")
        st, events = s.stream("/v1/chat/completions", tool_body(stream=True, messages=msgs, max_tokens=max_tokens))
        c, calls, finish = stream_calls(events)
        check(c == content and finish == "tool_calls"
              and [(calls[i]["name"], json.loads(calls[i]["arguments"])) for i in sorted(calls)] == want,
              f"{template} stream: the same calls")
    finally:
        s.stop()


def tools_sent_back(build, pkgs, tmp, template, render):
    """A conversation with an assistant turn's tool calls (arguments as the JSON text
    OpenAI's clients send) and the tool's answer renders as transformers renders it
    (render.py, given the arguments as the server gives them to the template: objects
    where the template renders objects); content None, which transformers drops and
    DeepSeek's templates then fail on, fails on both."""
    pkg, tokens = templated_package(pkgs, os.path.join(tmp, "back"), template)
    s = scripted_server(build, pkg, [PLAIN])
    try:
        with open(os.path.join(ROOT_TEMPLATES, template + ".jinja")) as f:
            source = f.read()
        args_object = template != "deepseek-v3"  # DeepSeek's template writes `+ arguments`
        for content in ("", None, "Checking."):
            conv = [{"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": content, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": json.dumps(CALL_A, ensure_ascii=False)}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "12 C"}]
            oracle_conv = json.loads(json.dumps(conv))
            if args_object:
                oracle_conv[1]["tool_calls"][0]["function"]["arguments"] = CALL_A
            try:
                text = render.render_case(render.make_environment(), source,
                                          {"messages": oracle_conv, "tools": TOOLS, "add_generation_prompt": True}, tokens)
            except Exception as e:  # noqa: BLE001 (the oracle's refusal)
                text = None
                why = f"{type(e).__name__}: {e}"
            st, _, tj, _ = s.post("/tokenize", {"messages": conv, "tools": TOOLS})
            if text is None:
                check(st == 400, f"{template}, content {content!r}: the template fails as in transformers ({why}; got {st})")
                continue
            st2, _, oj, _ = s.post("/tokenize", {"prompt": text, "add_special_tokens": False})
            check(st == 200 and st2 == 200 and tj["tokens"] == oj["tokens"],
                  f"{template}, content {content!r}: the conversation renders as transformers renders it")
    finally:
        s.stop()


# ---- hybrid models ---------------------------------------------------------------------------

def hybrid_prompts(vocab, n):
    """n token-id prompts of 3 + 9i tokens (prompt_ids.token_prompts)."""
    return token_prompts(vocab, [3 + 9 * i for i in range(n)], 12345)


def case_hybrid(build, pkgs):
    """Hybrid packages (recurrent / conv state: lfm2, qwen3_5_text), which the engine batches
    with state slots (/health says "batched"): 8 concurrent greedy completions of token-id
    prompts of different lengths each equal `generate --ids` alone; then 4 more sharing a
    70-token prefix, one after another, equal `generate` too with the prefix served from
    the cache (a state snapshot) and counted in /metrics; a client gone mid-stream frees
    its slot and its memory; --kv-memory bounds the pool and the slots (a request that
    cannot fit is refused with 400, smaller ones still answered)."""
    exe = os.path.join(build, "onnx-genai")
    for name in ("hybrid-lfm2", "hybrid-qwen3_5"):
        pkg = os.path.join(pkgs, name)
        if not os.path.exists(os.path.join(pkg, "genai_config.json")):
            print(f"SKIP: {pkg} is missing (serve_packages did not write it)")
            return SKIP
        cfg = json.load(open(os.path.join(pkg, "genai_config.json")))["model"]
        prompts = hybrid_prompts(cfg["vocab_size"], 8)
        news = [8 + 5 * i for i in range(8)]
        alone = []
        for p, k in zip(prompts, news):
            out = subprocess.run([exe, "generate", "-m", pkg, "--ids", ",".join(map(str, p)),
                                  "--max-length", str(len(p) + k), "--json"],
                                 capture_output=True, text=True, check=True, timeout=300)
            alone.append(json.loads(out.stdout)["sequences"][0][len(p):])
        tok = package_tokenizer(pkg)
        if not tok:
            return SKIP
        shared = token_prompts(cfg["vocab_size"], [70], 777)[0]
        tails = token_prompts(cfg["vocab_size"], [5 + 4 * i for i in range(4)], 99)
        sys_prompts = [shared + t for t in tails]
        sys_alone = []
        for p in sys_prompts:
            out = subprocess.run([exe, "generate", "-m", pkg, "--ids", ",".join(map(str, p)),
                                  "--max-length", str(len(p) + 12), "--json"],
                                 capture_output=True, text=True, check=True, timeout=300)
            sys_alone.append(json.loads(out.stdout)["sequences"][0][len(p):])
        s = Server(build, pkg, "--max-batch", "8")
        try:
            m0 = s.metrics()
            st, _, hj, _ = s.request("GET", "/health")
            check(st == 200 and hj.get("mode") == "batched" and m0["og_kv_blocks_total"] > 0 and
                  m0["og_kv_bytes_total"] > 0, f"{name}: batched mode ({hj.get('mode')}), a block pool "
                  "and its budget in bytes")
            # token by token (logprobs' token strings against each id's text in context): the
            # random-weight models emit byte tokens, and a whole text can hide one (id 0
            # detokenizes to a NUL, which ends /detokenize's text)
            piece = {}
            for t in {t for a in alone for t in a}:
                piece[t] = s.post("/detokenize", {"tokens": [t]})[2]["prompt"]
            want = [answer_texts(tok, p, a, piece.get) for p, a in zip(prompts, alone)]
            comp = lambda pk: s.post("/v1/completions", {"prompt": pk[0], "max_tokens": pk[1],  # noqa: E731
                                                         "temperature": 0, "logprobs": 0})
            res = run_all(comp, list(zip(prompts, news)))
            same = [not isinstance(r, Exception) and r[0] == 200 and
                    r[2]["choices"][0]["logprobs"]["tokens"] == w and
                    r[2]["usage"]["completion_tokens"] == len(w) for r, w in zip(res, want)]
            check(all(same), f"{name}: 8 concurrent greedy completions equal generate's tokens alone "
                  f"({sum(same)}/8; {sum(len(a) for a in alone)} tokens)")
            m = s.metrics()
            check(m["og_running"] == 0 and m["og_kv_bytes_used"] == 0,
                  f"{name}: nothing running and no memory charged at rest")
            # a shared system prompt: the first request leaves blocks, the second a state
            # snapshot at the block boundary inside the prefix, the later ones start there
            sys_ok = []
            for p, a in zip(sys_prompts, sys_alone):
                r = s.post("/v1/completions", {"prompt": p, "max_tokens": 12, "temperature": 0})
                sys_ok.append(r[0] == 200 and r[2]["usage"]["completion_tokens"] == len(a))
            ids_ok = []
            for p, a in zip(sys_prompts, sys_alone):
                r = s.post("/v1/completions", {"prompt": p, "max_tokens": 12, "temperature": 0, "logprobs": 0})
                ids_ok.append(r[0] == 200 and r[2]["choices"][0]["logprobs"]["tokens"] ==
                              answer_texts(tok, p, a, lambda t: s.post("/detokenize", {"tokens": [t]})[2]["prompt"]))
            after = s.metrics()
            reused = after["og_prefix_cache_hit_tokens_total"] - m["og_prefix_cache_hit_tokens_total"]
            hits = after["og_prefix_cache_hits_total"] - m["og_prefix_cache_hits_total"]
            check(all(sys_ok) and all(ids_ok) and hits >= 4 and reused >= 4 * 64,
                  f"{name}: a shared 70-token prefix, 8 requests in turn: the answers equal generate's "
                  f"({sum(ids_ok)}/4), {int(hits)} admissions found it cached ({int(reused)} prompt tokens)")
            check(after["og_state_slots_total"] == 8 and after["og_state_slots_used"] == 0 and
                  after["og_state_snapshots"] >= 1 and after["og_state_snapshots_taken_total"] >= 1,
                  f"{name}: /metrics: 8 state slots, none held at rest, "
                  f"{int(after['og_state_snapshots'])} snapshots held")
            # a client that leaves mid-stream: the request ends cancelled, the slot is free.
            # A tiny model makes ~100 tokens while the server notices; three long requests
            # beside it make every engine step four generators long.
            before = m
            most = cfg["context_length"] - len(prompts[0])
            long_body = {"prompt": prompts[1], "max_tokens": 200, "temperature": 0, "ignore_eos": True}
            done = []
            load = threading.Thread(target=lambda: done.extend(run_all(lambda b: s.post("/v1/completions", b),
                                                                       [long_body] * 3)))
            load.start()
            st, ev = s.stream("/v1/completions", {"prompt": prompts[0], "max_tokens": most, "temperature": 0,
                                                  "ignore_eos": True, "stream": True}, stop_after=3)
            load.join()
            freed, m = s.wait_cancelled(before, "og_kv_bytes_used")
            beside = sum(r[2]["usage"]["completion_tokens"] for r in done if not isinstance(r, Exception) and r[0] == 200)
            streamed = m["og_generation_tokens_total"] - before["og_generation_tokens_total"] - beside
            check(freed and streamed < most, f"{name}: a client gone mid-stream: its request is cancelled "
                  f"after {int(streamed)} of {most} tokens, its slot and memory freed")
            j = s.post("/v1/completions", {"prompt": prompts[3], "max_tokens": news[3], "temperature": 0,
                                           "logprobs": 0})[2]
            check(j["choices"][0]["logprobs"]["tokens"] == want[3], f"{name}: the next request is answered as before")
        finally:
            s.stop()
    # a budget whose pool holds a 30-token prompt with 8 new tokens beside the slots, not 200
    pkg = os.path.join(pkgs, "hybrid-lfm2")
    s = Server(build, pkg, "--kv-memory", "150K", "--max-batch", "8")
    try:
        st, _, j, _ = s.post("/v1/completions", {"prompt": prompts[3], "max_tokens": 200, "temperature": 0})
        msg = (j or {}).get("error", {}).get("message", "")
        check(st == 400 and "--kv-memory" in msg, f"hybrid-lfm2, --kv-memory 150K: a request too large "
              f"for it is refused with 400 ({st}: {msg!r})")
        res = run_all(lambda p: s.post("/v1/completions", {"prompt": p, "max_tokens": 8, "temperature": 0}),
                      prompts[:4])
        check(all(not isinstance(r, Exception) and r[0] == 200 for r in res),
              "hybrid-lfm2, --kv-memory 150K: small requests at once are answered (they wait for memory)")
        m = s.metrics()
        check(0 < m["og_kv_bytes_total"] <= 150 * 1024 and m["og_kv_bytes_used"] == 0,
              f"hybrid-lfm2: the pool and slots fit --kv-memory ({int(m['og_kv_bytes_total'])} bytes), "
              "nothing charged at rest")
    finally:
        s.stop()


def read_eos_oracle(path):
    """ignore_eos_oracle.py's file: [(prompt, answer with ignore_eos, answer without)]."""
    rows = {"P": [], "T": [], "S": []}
    with open(path) as f:
        for line in f:
            kind, *ids = line.split()
            rows[kind].append([int(t) for t in ids])
    return list(zip(rows["P"], rows["T"], rows["S"]))


def case_ignore_eos(build, pkgs):
    """ignore_eos on a hybrid (batched with state slots): on hybrid-qwen3_5-eos
    (ignore_eos_oracle.py: a copy of hybrid-qwen3_5 whose EOS is a token greedy decoding
    writes early), concurrent greedy
    completions with ignore_eos give exactly max_tokens tokens, onnxruntime-genai's answer
    on the original package (EOS tokens included), and end for their length; their
    logprobs pick the top alternative at every position, EOS ones included; streamed, the
    text of the first one; without ignore_eos they stop where onnxruntime-genai stops on the copy."""
    pkg = os.path.join(pkgs, "hybrid-qwen3_5-eos")
    path = os.path.join(pkg, "ignore_eos.txt")
    if not os.path.exists(path):
        print(f"SKIP: {path} is missing (its oracle, onnxruntime-genai, did not run)")
        return SKIP
    cases = read_eos_oracle(path)
    eos = json.load(open(os.path.join(pkg, "genai_config.json")))["model"]["eos_token_id"]
    n_eos = sum(t.count(eos) for _, t, _ in cases)
    check(n_eos > 0 and any(len(st) < len(t) for _, t, st in cases),
          f"the oracle's answers hold {n_eos} EOS tokens ({eos}) and stop early without ignore_eos")
    tok = package_tokenizer(pkg)
    if not tok:
        return SKIP
    s = Server(build, pkg, "--max-batch", "4")
    try:
        piece = {}
        for t in {t for _, a, _ in cases for t in a}:
            piece[t] = s.post("/detokenize", {"tokens": [t]})[2]["prompt"]
        texts = lambda p, ids: answer_texts(tok, p, ids, piece.get)  # noqa: E731
        body = lambda p, n, **kw: dict(prompt=p, max_tokens=n, temperature=0, **kw)  # noqa: E731
        res = run_all(lambda c: s.post("/v1/completions", body(c[0], len(c[1]), ignore_eos=True, logprobs=2)),
                      cases)
        good = 0
        for r, (p, t, _) in zip(res, cases):
            if isinstance(r, Exception) or r[0] != 200:
                print(f"    prompt {p}: {r}")
                continue
            ch, lp = r[2]["choices"][0], r[2]["choices"][0]["logprobs"]
            tops = [max(d.values()) if d else None for d in lp["top_logprobs"]]
            ok = (lp["tokens"] == texts(p, t) and r[2]["usage"]["completion_tokens"] == len(t) and
                  ch["finish_reason"] == "length" and
                  all(top is not None and abs(v - top) < 1e-6 for v, top in zip(lp["token_logprobs"], tops)))
            good += ok
            if not ok:
                print(f"    prompt {p}: {ch['finish_reason']}, {r[2]['usage']['completion_tokens']} tokens "
                      f"{lp['tokens']} vs {texts(p, t)}")
        check(good == len(cases), f"{len(cases)} concurrent completions with ignore_eos: exactly max_tokens "
              f"tokens, onnxruntime-genai's greedy answer with its EOS tokens, finish_reason length, "
              f"greedy logprobs ({good}/{len(cases)})")
        p, t, _ = cases[0]
        st, ev = s.stream("/v1/completions", body(p, len(t), ignore_eos=True, stream=True))
        text = "".join(c["text"] for e in ev if isinstance(e, dict) for c in e["choices"])
        ends = [c.get("finish_reason") for e in ev if isinstance(e, dict) for c in e["choices"]
                if c.get("finish_reason")]
        whole = res[0][2]["choices"][0]["text"] if not isinstance(res[0], Exception) and res[0][0] == 200 else None
        check(st == 200 and text == whole and ends == ["length"],
              f"streamed with ignore_eos: the same text past the EOS, finish_reason length ({ends})")
        res = run_all(lambda c: s.post("/v1/completions", body(c[0], len(c[1]), logprobs=0)), cases)
        same = [not isinstance(r, Exception) and r[0] == 200 and
                r[2]["choices"][0]["logprobs"]["tokens"] == texts(p, st_) and
                r[2]["choices"][0]["finish_reason"] == ("stop" if len(st_) < len(t) else "length")
                for r, (p, t, st_) in zip(res, cases)]
        check(all(same), f"without ignore_eos: each stops at its first EOS as onnxruntime-genai does "
              f"({sum(same)}/{len(cases)})")
    finally:
        s.stop()


# ---- answers a new user found wrong ----------------------------------------------------------

def in_context(tok, ctx, i, alone=None):
    """Oracle: the text token i adds after the ids ctx, as HF tokenizers decode them (what
    the text gains beyond its common start with the decode of ctx); a token that adds no
    complete text there (part of a character, a special token) decoded alone (by alone(i)
    where given: the server's own /detokenize, which writes U+FFFD per byte of a broken
    character where HF writes one per sequence)."""
    a = tok.decode(ctx)
    b = tok.decode(ctx + [i])
    k = len(os.path.commonprefix([a, b]))
    t = b[k:]
    if t and not t.endswith("\ufffd"):
        return t
    return alone(i) if alone else tok.decode([i], skip_special_tokens=False)


def answer_texts(tok, prompt, ids, alone):
    """The logprobs' token texts of an answer of ids after prompt (in_context)."""
    return [in_context(tok, list(prompt) + list(ids[:k]), t, alone) for k, t in enumerate(ids)]


def package_tokenizer(pkg):
    """HF tokenizers' reading of a package's tokenizer.json (None, said, without it)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("SKIP: the tokenizers package (tools/requirements.txt) is not installed: no oracle")
        return None
    return Tokenizer.from_file(os.path.join(pkg, "tokenizer.json"))


def answers_logprobs(s, tok, prompt, ids, chat):
    """The logprobs of an answer whose ids are `ids` after the prompt ids `prompt`, against
    the oracle: each token's text in context, every alternative's text one some token has
    there, and (completions) each text_offset the characters of the text before the token."""
    body = {"max_tokens": len(ids) + 5, "temperature": 0, "ignore_eos": True}
    if chat:
        body.update(messages=[{"role": "user", "content": "Tom"}], logprobs=True, top_logprobs=5)
        st, _, j, _ = s.post("/v1/chat/completions", body)
        lp = j["choices"][0]["logprobs"]["content"] if st == 200 else []
        got = [e["token"] for e in lp]
        alts = [[a["token"] for a in e["top_logprobs"]] for e in lp]
        good_bytes = all(bytes(e["bytes"]).decode(errors="replace") == e["token"] for e in lp)
    else:
        body.update(prompt=prompt, logprobs=5)
        st, _, j, _ = s.post("/v1/completions", body)
        lp = j["choices"][0]["logprobs"] if st == 200 else {}
        got, alts = lp.get("tokens", []), [list(d) for d in lp.get("top_logprobs", [])]
        good_bytes = True
    want = [in_context(tok, prompt + ids[:i], t) for i, t in enumerate(ids)]
    what = "chat" if chat else "completion"
    check(st == 200 and got == want, f"{what} logprobs: each token's text in context, as HF tokenizers "
          f"decode it ({got[:6]} want {want[:6]})")
    check(good_bytes, f"{what} logprobs: bytes are the token's text")
    vocab = tok.get_vocab_size()
    bad = 0
    for i, a in enumerate(alts):
        texts = {in_context(tok, prompt + ids[:i], v) for v in range(vocab)}
        bad += sum(x not in texts for x in a)
    check(st == 200 and len(alts) == len(ids) and bad == 0,
          f"{what} logprobs: every alternative's text is one a token has in that context ({bad} not)")
    if not chat:
        text = j["choices"][0]["text"] if st == 200 else ""
        base = tok.decode(prompt)
        offs = [len(tok.decode(prompt + ids[:i])[len(base):].rstrip("\ufffd")) for i in range(len(ids))]
        check(lp.get("text_offset") == offs and text == tok.decode(prompt + ids)[len(base):],
              f"completion text_offset counts characters, not bytes ({lp.get('text_offset')} want {offs})")


def answers_host_and_images(build, pkg):
    """--host by name (localhost, through the resolver); an image or audio part on a model
    that reads text only is a 400 naming the part (it was pasted into the prompt as text)."""
    s = Server(build, pkg, "--host", "localhost")
    try:
        st, _, j, _ = s.request("GET", "/health")
        check(s.host == "localhost" and st == 200, f"--host localhost: listening, /health 200 ({s.host}, {st})")
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        parts = [{"type": "text", "text": "What is in it?"}, image]
        for path in ("/v1/chat/completions", "/tokenize"):
            st, _, j, _ = s.post(path, {"messages": [{"role": "user", "content": "hi"},
                                                     {"role": "user", "content": parts}]})
            check(st == 400 and j["error"]["param"] == "messages[1].content[1]" and
                  "takes no images" in j["error"]["message"],
                  f"{path}: an image_url part on a text-only model: 400 naming it ({st} {j})")
        audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
        st, _, j, _ = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [audio]}]})
        check(st == 400 and j["error"]["param"] == "messages[0].content[0]" and "takes no audio" in j["error"]["message"],
              f"an input_audio part: 400 ({st} {j})")
        st, _, j, _ = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [parts[0]]}],
                                                      "max_tokens": 4, "temperature": 0})
        check(st == 200, f"text parts alone are still answered ({st})")
    finally:
        s.stop()


def case_answers(build, pkgs):
    """What a new user found wrong: logprobs of a SentencePiece tokenizer lost the leading
    space ("there" for " there"), the first chat token ("▁" alone) was "", text_offset
    counted bytes. Scripted answers (tests/onnx-genai-scripted) of stories260K, whose ids
    are known, against HF tokenizers. Also --host by name and image parts (no oracle
    needed)."""
    answers_host_and_images(build, os.path.join(pkgs, "stories260K"))
    pkg, tok = stories_tokenizer(pkgs)
    if not tok:
        return SKIP
    space = tok.token_to_id("\u2581")
    words = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
    # a lone space token first (as Llama 2's chat answers start), then words, characters of
    # two and three bytes, and one of byte tokens (a character the vocabulary lacks)
    ids = [space] + words("Tom saw a caf\u00e9\u2019s door, \u4e2d there") + words("was a girl")
    check(space is not None and any(tok.id_to_token(i).startswith("<0x") for i in ids),
          "the script has a lone space token and byte tokens")
    s = scripted_server(build, pkg, [ids])
    try:
        st, _, t, _ = s.post("/tokenize", {"prompt": "Tom"})
        answers_logprobs(s, tok, t["tokens"], ids, False)
        st, _, t, _ = s.post("/tokenize", {"messages": [{"role": "user", "content": "Tom"}]})
        answers_logprobs(s, tok, t["tokens"], ids, True)
        # streamed: the same token texts, chunk after chunk (the context crosses chunks)
        st, ev = s.stream("/v1/chat/completions", {"messages": [{"role": "user", "content": "Tom"}],
                                                   "max_tokens": len(ids) + 5, "logprobs": True, "stream": True})
        got = [e["token"] for x in ev if isinstance(x, dict) for c in x["choices"] if c.get("logprobs")
               for e in c["logprobs"]["content"]]
        want = [in_context(tok, t["tokens"] + ids[:i], v) for i, v in enumerate(ids)]
        check(got == want, "streamed chat logprobs: the same texts in context")
    finally:
        s.stop()


# ---- defects a probe found ------------------------------------------------------------------

def case_probe(build, pkgs):
    """Numbers beyond what their field holds (the seed beyond 64 bits was undefined
    behaviour: the sanitizer build aborted), a top_p too small for a float, duplicate keys,
    response ids that repeated across restarts."""
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg)
    try:
        C, P = "/v1/chat/completions", "/v1/completions"
        msgs = [{"role": "user", "content": "Once upon a time"}]
        greedy = s.post(P, {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0})[2]
        greedy = greedy["choices"][0]["text"]
        # seeds: every 64-bit integer, signed or not, is a seed; beyond that a 400
        for seed in (2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64 - 4096):
            body = {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 1.0, "seed": seed}
            a, b = s.post(P, body), s.post(P, body)
            check(a[0] == 200 and b[0] == 200 and a[2]["choices"][0]["text"] == b[2]["choices"][0]["text"],
                  f"seed {seed}: answered, the same twice ({a[0]}, {b[0]})")
        for seed in ("18446744073709551616", "-9223372036854779904", "1e300", "-1e300", "1e400"):
            expect_error(s, f"seed {seed}", 400, C,
                         raw=b'{"messages": [{"role": "user", "content": "x"}], "seed": ' + seed.encode() + b"}",
                         param="seed")
        for field in ("max_tokens", "max_completion_tokens", "n", "top_k", "top_logprobs"):
            for big in ("2147483648", "9223372036854775808", "1e300", "-1e300"):
                body = {"messages": msgs, "logprobs": True} if field == "top_logprobs" else {"messages": msgs}
                raw = json.dumps(body)[:-1] + f', "{field}": {big}}}'
                expect_error(s, f"{field} {big}", 400, C, raw=raw.encode(), param=field)
        for big in ("2147483648", "1e300", "-1e300"):
            expect_error(s, f"completions logprobs {big}", 400, P,
                         raw=b'{"prompt": "x", "logprobs": ' + big.encode() + b"}", param="logprobs")
            expect_error(s, f"a token id {big} in a prompt", 400, P,
                         raw=b'{"prompt": [1, ' + big.encode() + b"]}", param="prompt")
            expect_error(s, f"detokenize {big}", 400, "/detokenize",
                         raw=b'{"tokens": [1, ' + big.encode() + b"]}", param="tokens")
        for field in ("temperature", "top_p"):
            expect_error(s, f"{field} 1e300", 400, C, {"messages": msgs, field: 1e300}, param=field)
        # top_p and temperature too small for a float: the most likely token alone (greedy)
        for field, v in (("top_p", 1e-300), ("top_p", 1e-45), ("temperature", 1e-300), ("temperature", 1e-30)):
            st, _, j, _ = s.post(P, {"prompt": "Once upon a time", "max_tokens": 12, "seed": 7,
                                     "temperature": 1.0, field: v})
            check(st == 200 and j["choices"][0]["text"] == greedy,
                  f"{field} {v}: the greedy answer ({st}: {j if st != 200 else j['choices'][0]['text']!r})")
        st, _, j, _ = s.post(P, {"prompt": "Once upon a time", "max_tokens": 12, "top_p": 0})
        check(st == 400 and j["error"]["param"] == "top_p" and "top_p" in j["error"]["message"],
              "top_p 0: a 400 naming top_p")
        # duplicate keys, at the top and inside: a 400 naming the key
        expect_error(s, "a repeated top-level key", 400, C,
                     raw=b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "max_tokens": 3}',
                     param="max_tokens")
        expect_error(s, "a repeated key in a message", 400, C,
                     raw=b'{"messages": [{"role": "user", "content": "x", "role": "system"}]}',
                     param="messages[0].role")
        expect_error(s, "a repeated key in stream_options", 400, C,
                     raw=b'{"messages": [{"role": "user", "content": "x"}], "stream": true, '
                         b'"stream_options": {"include_usage": true, "include_usage": false}}',
                     param="stream_options.include_usage")
        expect_error(s, "a repeated key in /tokenize", 400, "/tokenize", raw=b'{"prompt": "a", "prompt": "b"}',
                     param="prompt")
        st, _, _, _ = s.request("POST", P, raw=b'{"prompt": "x", "max_tokens": 2, "stop": ["a", "a"]}')
        check(st == 200, "equal values in an array are no duplicate keys")
        first = [s.post(P, {"prompt": "x", "max_tokens": 1})[2]["id"] for _ in range(3)]
    finally:
        s.stop()
    # ids: unique in a server and across restarts (each server's first id differs)
    s2 = Server(build, pkg)
    try:
        again = [s2.post(P, {"prompt": "x", "max_tokens": 1})[2]["id"] for _ in range(3)]
        chat_id = s2.post(C, chat_body("x", max_tokens=1))[2]["id"]
    finally:
        s2.stop()
    check(len(set(first + again)) == 6 and first[0] != again[0],
          f"response ids differ across restarts ({first[0]}, {again[0]})")
    check(re.fullmatch(r"cmpl-[0-9a-f]{16}", first[0]) and re.fullmatch(r"chatcmpl-[0-9a-f]{16}", chat_id),
          "ids keep their form")


def main():
    return run({"routes": case_routes, "concurrency": case_concurrency, "errors": case_errors,
                "loading": case_loading, "page": case_page, "models": case_models,
                "backend": case_backend, "tools": case_tools, "hybrid": case_hybrid,
                "nul": case_nul, "ignore_eos": case_ignore_eos, "guidance": case_guidance,
                "probe": case_probe, "answers": case_answers}, __doc__)


if __name__ == "__main__":
    sys.exit(main())
