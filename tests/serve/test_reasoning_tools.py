#!/usr/bin/env python3
"""`onnx-genai serve`'s reasoning split and streamed tool calls, on scripted answers
(tests/onnx-genai-scripted: given texts replace the sampled tokens; the rest of the path is
the real one) with real chat templates of ../shared/chat-templates, through the openai
client and raw SSE:

  reasoning    packages whose genai_config has no bor/eor ids but whose template writes
               <think> blocks: Qwen3's (the block opens the answer) and DeepSeek-R1's (its
               generation prompt ends inside the block); reasoning_content and content equal
               what those templates take back from an answer (the templates' own split:
               answer.split('</think>')[-1].lstrip('\\n') for the content, the part before
               it less its newlines for the reasoning), streamed and not; an answer without
               a block stays content; a block followed by a tool call gives reasoning_content
               and tool_calls; a template without <think> (Qwen2.5's) splits nothing; under
               response_format the constrained answer is all content.
  tool_deltas  streamed tool calls as OpenAI streams them, in every format a template
               teaches (hermes, llama 3.1 JSON, mistral's list and NAME[ARGS] forms,
               deepseek, LFM2's pythonic): each call's first chunk carries index, id, type,
               name and arguments "", the later ones index and a piece of the arguments;
               JSON arguments come in several pieces, and call 0's pieces come before call
               1's first chunk (they stream as the model writes them); the pieces joined
               equal the non-streamed answer's arguments; parallel_tool_calls false streams
               one call; a call that turns out malformed ends as content with finish stop.
               The same answers through /v1/responses and /v1/messages streams (raw SSE):
               a function_call item / tool_use block per call, each added, streamed and
               done before the next, its arguments in several deltas (input_json_delta)
               that join to chat's; a malformed call closed as it stands (incomplete), its
               text after it.

Usage: test_reasoning_tools.py BUILD_DIR PACKAGES_DIR CASE. Exits 77 without the scripted
binary, the template corpus or the openai client."""
import json
import os
import shutil
import sys
import tempfile

from test_dialects import sse_events
from server_harness import SKIP, Server, check, run
from test_server import (CALL_A, CALL_B, DEEPSEEK_CALLS, HERMES_BAD, HERMES_CALLS, LLAMA_CALL, MISTRAL_ARGS_CALLS,
                         MISTRAL_CALLS, PYTHONIC_CALLS, TOOLS, openai_client, scripted_needs, scripted_server,
                         templated_package)


def template_split(answer):
    """(reasoning, content) as Qwen3's / QwQ's templates read an answer back."""
    if "</think>" not in answer:
        return "", answer
    content = answer.split("</think>")[-1].lstrip("\n")
    reasoning = answer.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
    return reasoning, content


KW = dict(extra_body={"ignore_eos": True}, temperature=0, max_tokens=400)
MSGS = [{"role": "user", "content": "Hi, what is 2+2?"}]


def extra(obj, key):
    return getattr(obj, key, None) or (obj.model_extra or {}).get(key)


def streamed(c, model, **kw):
    """(reasoning, content, order of channels, tool-call chunks, finish) of a streamed answer."""
    reasoning, content, order, calls, finish = "", "", [], [], None
    for e in c.chat.completions.create(model=model, messages=kw.pop("messages", MSGS), stream=True, **kw):
        for ch in e.choices:
            d = ch.delta
            r = extra(d, "reasoning_content")
            if r:
                reasoning += r
                order.append("r")
            if d.content:
                content += d.content
                order.append("c")
            for t in d.tool_calls or []:
                calls.append(t)
                order.append("t")
            finish = ch.finish_reason or finish
    return reasoning, content, order, calls, finish


def case_reasoning(build, pkgs):
    openai = scripted_needs(build)
    if not openai:
        return SKIP
    tmp = tempfile.mkdtemp(prefix="og-reasoning-")
    try:
        qwen3 = "<think>\nThe user asks for 2+2.\n\nThat is 4.\n</think>\n\nThe answer is 4."
        plain = "  Four, without thinking."
        call = ('<think>\nI need the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
                '{"city": "Paris"}}\n</tool_call>')
        pkg, _ = templated_package(pkgs, tmp, "qwen3-0.6b")
        s = scripted_server(build, pkg, [qwen3, qwen3, plain, plain, call, call])
        try:
            c = openai_client(s, openai)
            want_r, want_c = template_split(qwen3)
            m = c.chat.completions.create(model="qwen3-0.6b", messages=MSGS, **KW).choices[0].message
            check(m.content == want_c and extra(m, "reasoning_content") == want_r,
                  f"qwen3: content {m.content!r} and reasoning_content {extra(m, 'reasoning_content')!r} as the "
                  f"template splits them")
            r, ct, order, _, finish = streamed(c, "qwen3-0.6b", **KW)
            check(r == want_r and ct == want_c and finish == "stop" and order[0] == "r" and
                  order.index("c") > max(i for i, x in enumerate(order) if x == "r"),
                  f"qwen3 stream: reasoning first ({len(order)} pieces), then the content")
            m = c.chat.completions.create(model="qwen3-0.6b", messages=MSGS, **KW).choices[0].message
            check(m.content == plain and not extra(m, "reasoning_content"), "qwen3: an answer without a block is content")
            r, ct, _, _, _ = streamed(c, "qwen3-0.6b", **KW)
            check(ct == plain and r == "", "qwen3 stream: an answer without a block is content")
            ch = c.chat.completions.create(model="qwen3-0.6b", messages=MSGS, tools=TOOLS, **KW).choices[0]
            calls = ch.message.tool_calls or []
            check(extra(ch.message, "reasoning_content") == "I need the weather." and ch.finish_reason == "tool_calls"
                  and [(t.function.name, json.loads(t.function.arguments)) for t in calls] == [("get_weather", {"city": "Paris"})]
                  and not ch.message.content, "qwen3: a block, then a tool call: reasoning_content and tool_calls")
            r, ct, _, tcs, finish = streamed(c, "qwen3-0.6b", tools=TOOLS, **KW)
            check(r == "I need the weather." and ct == "" and finish == "tool_calls" and tcs and tcs[0].function.name == "get_weather",
                  "qwen3 stream: a block, then a tool call")
        finally:
            s.stop()
        # DeepSeek-R1: the prompt ends with "<think>\n"; the answer starts inside the block
        r1 = "Two and two.\nMake four.\n</think>\n\nThe answer is 4."
        pkg, _ = templated_package(pkgs, os.path.join(tmp, "r1"), "deepseek-r1-distill-qwen-32b")
        s = scripted_server(build, pkg, [r1, r1])
        try:
            c = openai_client(s, openai)
            st, _, tok, _ = s.post("/tokenize", {"messages": MSGS})
            want_r, want_c = template_split("<think>\n" + r1)
            m = c.chat.completions.create(model="deepseek-r1-distill-qwen-32b", messages=MSGS, **KW).choices[0].message
            check(m.content == want_c and extra(m, "reasoning_content") == want_r,
                  f"deepseek-r1 (prompt ends inside the block): {m.content!r} / {extra(m, 'reasoning_content')!r}")
            r, ct, _, _, _ = streamed(c, "deepseek-r1-distill-qwen-32b", **KW)
            check(r == want_r and ct == want_c, "deepseek-r1 stream: the same split")
        finally:
            s.stop()
        # under guidance the answer is the constrained text from its first token (the model's
        # own tokens: the scripted ones would not follow the grammar)
        s = Server(build, pkg)
        try:
            m = openai_client(s, openai).chat.completions.create(
                model="deepseek-r1-distill-qwen-32b", messages=MSGS, response_format={"type": "json_object"},
                temperature=0, max_tokens=40).choices[0].message
            check((m.content or "").startswith("{") and not extra(m, "reasoning_content"),
                  f"deepseek-r1 with response_format: the answer is content ({m.content!r})")
        finally:
            s.stop()
        # a template that writes no <think>: nothing is split
        pkg, _ = templated_package(pkgs, os.path.join(tmp, "q25"), "qwen2.5-7b-instruct")
        s = scripted_server(build, pkg, [qwen3])
        try:
            m = openai_client(s, openai).chat.completions.create(model="qwen2.5-7b-instruct", messages=MSGS, **KW).choices[0].message
            check(m.content == qwen3 and not extra(m, "reasoning_content"), "qwen2.5 (no <think> in its template): all content")
        finally:
            s.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def call_pieces(chunks, what):
    """{index: [(has head, name, arguments piece), ...]} of streamed tool-call chunks, and
    the order of (index, head) as they came; checks each chunk's shape."""
    out, order, bad = {}, [], []
    for t in chunks:
        head = t.id is not None
        fn = t.function
        if head and not (t.type == "function" and fn.name and fn.arguments == ""):
            bad.append(t)
        if not head and not (fn is not None and not fn.name and fn.arguments and t.type is None):
            bad.append(t)
        out.setdefault(t.index, []).append((head, fn.name, fn.arguments or ""))
        order.append((t.index, head))
    check(not bad, f"{what}: a call's first chunk has id, type, name and arguments '', the later ones "
          f"arguments only ({len(chunks)} chunks; {bad[:2]})")
    return out, order


def deltas(build, pkgs, tmp, openai, template, answer, want, special=None, max_tokens=400, pieces=True):
    sub = os.path.join(tmp, template + ("-special" if special else "") + str(len(answer)))
    pkg, _ = templated_package(pkgs, sub, template, special)
    s = scripted_server(build, pkg, [answer])
    try:
        c = openai_client(s, openai)
        kw = dict(KW, max_tokens=max_tokens, tools=TOOLS, messages=[{"role": "user", "content": "Weather?"}])
        whole = c.chat.completions.create(model=template, **kw).choices[0].message.tool_calls or []
        _, _, _, chunks, finish = streamed(c, template, **kw)
        got, order = call_pieces(chunks, template)
        names = [got[i][0][1] for i in sorted(got)]
        joined = ["".join(p[2] for p in got[i]) for i in sorted(got)]
        check(finish == "tool_calls" and names == [w[0] for w in want] and
              [json.loads(a) for a in joined] == [w[1] for w in want],
              f"{template}: streamed calls {names} with their arguments")
        check(joined == [t.function.arguments for t in whole], f"{template}: the pieces joined = the answer's arguments")
        check(all(got[i][0][0] and not any(p[0] for p in got[i][1:]) for i in got), f"{template}: one first chunk per call")
        if pieces:
            check(len(got[0]) > 2, f"{template}: call 0's arguments in {len(got[0]) - 1} pieces (as written)")
        if len(want) > 1:
            first1 = order.index((1, True))
            check(sum(1 for k, h in order[:first1] if k == 0 and not h) >= 1,
                  f"{template}: call 0's arguments stream before call 1 begins")
        dialect_streams(s, template, want, joined, pieces, max_tokens)
    finally:
        s.stop()


def responses_calls(s, template, max_tokens):
    """The function_call items of a raw /v1/responses stream: [(item added, argument
    deltas, item done)], whether every item was added, streamed and done before the next
    one was added (as OpenAI streams them), and the final response."""
    tools = [dict(type="function", **t["function"]) for t in TOOLS]
    body = dict(model=template, input="Weather?", tools=tools, max_output_tokens=max_tokens, temperature=0,
                ignore_eos=True, stream=True)
    st, ev = sse_events(s, "/v1/responses", body, {})
    items, open_, seq = {}, None, st == 200
    for _, d in ev:
        t, k = d.get("type"), d.get("output_index")
        if t == "response.output_item.added":
            seq &= open_ is None and k == len(items)
            open_, items[k] = k, [d["item"], [], None]
        elif t == "response.output_item.done":
            seq &= open_ == k
            open_, items[k][2] = None, d["item"]
        elif t in ("response.function_call_arguments.delta", "response.output_text.delta"):
            seq &= open_ == k
            if t == "response.function_call_arguments.delta":
                items[k][1].append(d["delta"])
    calls = [items[k] for k in sorted(items) if items[k][0]["type"] == "function_call"]
    return calls, seq and open_ is None, ev[-1][1].get("response", {}), [items[k][2] for k in sorted(items)]


def messages_calls(s, template, max_tokens):
    """The tool_use blocks of a raw /v1/messages stream: [(content_block_start's block,
    partial_json pieces)], whether each block started, streamed and stopped before the next
    (Anthropic's order), and the message_delta's stop_reason."""
    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in TOOLS]
    body = dict(model=template, max_tokens=max_tokens, tools=tools, temperature=0, ignore_eos=True, stream=True,
                messages=[{"role": "user", "content": "Weather?"}])
    st, ev = sse_events(s, "/v1/messages", body, {})
    blocks, open_, seq, stop = [], None, st == 200, None
    for _, d in ev:
        t, k = d.get("type"), d.get("index")
        if t == "content_block_start":
            seq &= open_ is None and k == len(blocks)
            open_ = k
            blocks.append((d["content_block"], []))
        elif t == "content_block_delta":
            seq &= open_ == k
            if d["delta"]["type"] == "input_json_delta":
                blocks[k][1].append(d["delta"]["partial_json"])
        elif t == "content_block_stop":
            seq &= open_ == k
            open_ = None
        elif t == "message_delta":
            stop = d["delta"]["stop_reason"]
    return [b for b in blocks if b[0]["type"] == "tool_use"], seq and open_ is None, stop


def dialect_streams(s, template, want, joined, pieces, max_tokens):
    """The same answer through /v1/responses and /v1/messages streams: each call its own
    item / block after the one before has ended, its arguments in pieces (as chat's stream
    sends them) that join to chat's arguments."""
    calls, seq, final, done = responses_calls(s, template, max_tokens)
    check(seq, f"{template}: responses stream: each item added, streamed and done before the next")
    check([c[0]["name"] for c in calls] == [w[0] for w in want] and
          ["".join(c[1]) for c in calls] == joined and [c[2]["arguments"] for c in calls] == joined and
          all(c[0]["arguments"] == "" and c[2]["status"] == "completed" for c in calls),
          f"{template}: responses stream: function_call items whose argument deltas join to chat's arguments")
    if pieces:
        check(len(calls[0][1]) > 2, f"{template}: responses stream: call 0's arguments in {len(calls[0][1])} deltas")
    check(final.get("output") == done and final.get("status") == "completed",
          f"{template}: responses stream: the final response lists the items streamed")
    blocks, seq, stop = messages_calls(s, template, max_tokens)
    check(seq and stop == "tool_use", f"{template}: messages stream: blocks one after the other, stop_reason {stop}")
    check([b[0]["name"] for b in blocks] == [w[0] for w in want] and all(b[0]["input"] == {} for b in blocks) and
          ["".join(b[1]) for b in blocks] == joined,
          f"{template}: messages stream: tool_use blocks whose input_json_delta pieces join to chat's arguments")
    if pieces:
        check(len(blocks[0][1]) > 2, f"{template}: messages stream: call 0's input in {len(blocks[0][1])} pieces")


def case_tool_deltas(build, pkgs):
    openai = scripted_needs(build)
    if not openai:
        return SKIP
    tmp = tempfile.mkdtemp(prefix="og-tooldeltas-")
    try:
        deltas(build, pkgs, tmp, openai, "qwen2.5-7b-instruct", HERMES_CALLS, [("get_weather", CALL_A), ("get_time", CALL_B)])
        deltas(build, pkgs, tmp, openai, "llama-3.1-8b-instruct", LLAMA_CALL, [("get_weather", {"city": "Paris"})])
        deltas(build, pkgs, tmp, openai, "mistral-nemo-instruct-2407", MISTRAL_CALLS,
               [("get_weather", {"city": "Paris"}), ("get_time", {})])
        deltas(build, pkgs, tmp, openai, "mistral-nemo-instruct-2407", MISTRAL_ARGS_CALLS,
               [("get_weather", {"city": "Paris"}), ("get_time", {})])
        deltas(build, pkgs, tmp, openai, "deepseek-v3", DEEPSEEK_CALLS, [("get_weather", CALL_A), ("get_time", CALL_B)],
               max_tokens=900)
        # Python literals become JSON once a call has closed: one piece per call
        deltas(build, pkgs, tmp, openai, "lfm2.5-instruct", PYTHONIC_CALLS,
               [("get_weather", {"city": "Zürich", "opts": {"days": [1, 2], "x": None}}), ("get_time", CALL_B)],
               special="<|tool_call_start|> <|tool_call_end|>", pieces=False)
        # parallel_tool_calls false: one call streamed; a malformed call ends as content
        pkg, _ = templated_package(pkgs, os.path.join(tmp, "single"), "qwen2.5-7b-instruct")
        s = scripted_server(build, pkg, [HERMES_CALLS, HERMES_BAD, HERMES_BAD, HERMES_BAD])
        try:
            c = openai_client(s, openai)
            kw = dict(KW, tools=TOOLS, messages=[{"role": "user", "content": "Weather?"}])
            _, content, _, chunks, finish = streamed(c, "qwen2.5-7b-instruct", parallel_tool_calls=False, **kw)
            got, _ = call_pieces(chunks, "parallel_tool_calls false")
            check(sorted(got) == [0] and finish == "tool_calls" and content == "Let me check.",
                  f"parallel_tool_calls false: one call streamed ({sorted(got)})")
            _, content, _, chunks, finish = streamed(c, "qwen2.5-7b-instruct", **kw)
            check(content == HERMES_BAD and finish == "stop",
                  f"a malformed call: its text as content, finish stop ({finish}; {len(chunks)} call chunks had begun)")
            # the same through the other APIs' streams: the call begun is closed as it
            # stands (incomplete), its text follows as a message / text block
            calls, seq, final, done = responses_calls(s, "qwen2.5-7b-instruct", 300)
            texts = [i["content"][0]["text"] for i in done if i["type"] == "message"]
            check(seq and [c[2]["status"] for c in calls] == ["incomplete"] and "".join(texts) == HERMES_BAD and
                  [i["type"] for i in done] == ["function_call", "message"] and final.get("output") == done,
                  f"a malformed call on /v1/responses: an incomplete function_call, then its text ({[i['type'] for i in done]})")
            blocks, seq, stop = messages_calls(s, "qwen2.5-7b-instruct", 300)
            check(seq and len(blocks) == 1 and stop == "end_turn",
                  f"a malformed call on /v1/messages: its tool_use block stopped, end_turn ({stop})")
        finally:
            s.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(run({"reasoning": case_reasoning, "tool_deltas": case_tool_deltas}, __doc__))
