#!/usr/bin/env python3
"""`onnx-genai serve`'s routes for other APIs, through their own clients, over real HTTP:

  messages   POST /v1/messages (Anthropic's Messages API) through the pinned `anthropic`
             client and raw HTTP: greedy text equal to /v1/chat/completions' for the same
             conversation (system as a string and as text blocks), usage equal to chat's,
             stop_reason max_tokens / end_turn (scripted) / stop_sequence (with the sequence), the
             exact event order of a stream and its text, errors in Anthropic's shape (no
             max_tokens, a wrong key), the key taken from x-api-key; tool_use blocks from a
             scripted hermes answer (streamed too: input_json_delta), and tool_result blocks
             rendered as chat's tool messages (the prompt chat renders for them).
  responses  POST /v1/responses (OpenAI's Responses API) through the pinned `openai`
             client: output_text equal to chat's greedy answer (input a string, and message
             items with instructions), status incomplete at max_output_tokens, usage; the
             stream's event order and text; function_call items from a scripted hermes
             answer (streamed: arguments in several deltas), and function_call_output items
             rendered as chat's tool messages; text.format (json_schema, json_object) as
             chat's response_format, streamed too, echoed, its errors naming its fields.

  props      GET /props and /slots as llama-server has them (behind --api-key): n_ctx,
             the default sampling and the chat template against the package's files,
             total_slots from --max-batch; slots held by streamed requests (their ids,
             prompt and generated counts), idle once they end; a hybrid whose --kv-memory
             holds fewer state slots than --max-batch: total_slots and /slots are the
             engine's state slots (/metrics).

Oracles: the server's /v1/chat/completions on the same conversation (itself tested against
`generate` in test_server.py), the clients' parsing of the wire format, and the scripted
calls' text. Usage: test_dialects.py BUILD_DIR PACKAGES_DIR CASE. Exits 77 when a package,
client or the chat-template corpus is missing."""
import json
import os
import shutil
import sys
import tempfile

from server_harness import SKIP, Server, check, run
from test_server import CALL_A, HERMES_CALLS, PLAIN, ROOT_TEMPLATES, TOOLS, scripted_server, templated_package

KEY = "sk-dialect-0123456789"
PROMPT = "Once upon a time"
SYSTEM = "You are a storyteller."
ANT_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in TOOLS]
# (the anthropic client no longer has sampling arguments; the API still takes them)
GREEDY = {"temperature": 0}
RESP_TOOLS = [dict(type="function", **t["function"]) for t in TOOLS]


def chat(s, messages, max_tokens, headers=None, **kw):
    body = {"messages": messages, "temperature": 0, "max_tokens": max_tokens}
    body.update(kw)
    st, _, j, text = s.request("POST", "/v1/chat/completions", body, headers=headers)
    if st != 200:
        raise SystemExit(f"chat completions failed: {st} {text!r}")
    return j


def sse_events(s, path, body, headers):
    """(event name, data) of a streamed answer, in order, over raw HTTP."""
    c = s.conn()
    h = {"Content-Type": "application/json"}
    h.update(headers)
    c.request("POST", path, body=json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    out, name = [], None
    for line in r.read().decode().split("\n"):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, json.loads(line[6:])))
            name = None
        elif line:
            out.append(("bad line", line))
    c.close()
    return r.status, out


def need(module):
    try:
        return __import__(module)
    except ImportError:
        print(f"SKIP: the {module} package (tools/requirements.txt) is not installed")
        return None


def both_parts(build, pkgs, client, args, plain, tools):
    """The plain parts on stories260K (a server started with args), then the tools part on
    scripted hermes answers, with the client module."""
    module = need(client)
    if not module:
        return SKIP
    s = Server(build, os.path.join(pkgs, "stories260K"), *args)
    try:
        for part in plain:
            part(s, module)
    finally:
        s.stop()
    if not os.path.isdir(ROOT_TEMPLATES):
        print(f"SKIP (tools part): the chat-template corpus is missing ({ROOT_TEMPLATES})")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="og-dialects-")
    try:
        tools(build, pkgs, tmp, module)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ---- /v1/messages ---------------------------------------------------------------------------

def case_messages(build, pkgs):
    return both_parts(build, pkgs, "anthropic", ["--api-key", KEY],
                      [messages_text, messages_stream, messages_errors], messages_tools)


AUTH = {"Authorization": f"Bearer {KEY}"}


def messages_text(s, anthropic):
    client = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key=KEY, max_retries=0)
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    ref = chat(s, conv, 24, headers=AUTH)
    want = ref["choices"][0]["message"]["content"]
    r = client.messages.create(model="stories260K", max_tokens=24, extra_body=GREEDY, system=SYSTEM,
                               messages=[{"role": "user", "content": PROMPT}])
    check(r.type == "message" and r.role == "assistant" and r.id.startswith("msg_"), "messages: a message object")
    check(len(r.content) == 1 and r.content[0].type == "text" and r.content[0].text == want,
          f"messages: greedy text equals chat completions' ({want!r})")
    check(r.stop_reason == "max_tokens" and r.stop_sequence is None, f"messages: stop_reason max_tokens ({r.stop_reason})")
    check(r.usage.input_tokens == ref["usage"]["prompt_tokens"] and r.usage.output_tokens == 24,
          f"messages: usage equals chat's ({r.usage.input_tokens}, {r.usage.output_tokens})")
    # system and content as text blocks: the same conversation
    r2 = client.messages.create(model="stories260K", max_tokens=24, extra_body=GREEDY,
                                system=[{"type": "text", "text": SYSTEM}],
                                messages=[{"role": "user", "content": [{"type": "text", "text": PROMPT}]}])
    check(r2.content[0].text == want, "messages: text blocks give the same answer")
    # a stop sequence from inside the answer: cut before it, named
    words = want.split(" ")
    stop = " " + words[len(words) // 2]
    cut = want[:want.index(stop)]
    r4 = client.messages.create(model="stories260K", max_tokens=24, extra_body=GREEDY, system=SYSTEM,
                                stop_sequences=[stop], messages=[{"role": "user", "content": PROMPT}])
    check(r4.stop_reason == "stop_sequence" and r4.stop_sequence == stop and r4.content[0].text == cut,
          f"messages: stop_sequence {stop!r} cuts the answer ({r4.stop_reason}, {r4.content[0].text!r})")


def messages_stream(s, anthropic):
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    want = chat(s, conv, 24, headers=AUTH)["choices"][0]["message"]["content"]
    body = {"model": "stories260K", "max_tokens": 24, "temperature": 0, "system": SYSTEM, "stream": True,
            "messages": [{"role": "user", "content": PROMPT}]}
    st, ev = sse_events(s, "/v1/messages", body, {"x-api-key": KEY})
    names = [n for n, _ in ev]
    ok = st == 200 and len(names) >= 6 and names[:2] == ["message_start", "content_block_start"] and \
        names[-3:] == ["content_block_stop", "message_delta", "message_stop"] and \
        set(names[2:-3]) == {"content_block_delta"}
    check(ok, f"messages stream: the event order ({names[:3]}...{names[-3:]})")
    check(all(n == d.get("type") for n, d in ev), "messages stream: each event's data names its type")
    text = "".join(d["delta"]["text"] for n, d in ev if n == "content_block_delta")
    check(ok and all(d["delta"]["type"] == "text_delta" and d["index"] == 0 for n, d in ev if n == "content_block_delta"),
          "messages stream: text_delta deltas of block 0")
    check(text == want, f"messages stream: text equals chat's ({text!r})")
    md = dict(ev).get("message_delta", {})
    check(md.get("delta", {}).get("stop_reason") == "max_tokens" and md.get("usage", {}).get("output_tokens") == 24,
          "messages stream: message_delta has stop_reason and usage")
    # the client's own reading of the stream
    client = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key=KEY, max_retries=0)
    with client.messages.stream(model="stories260K", max_tokens=24, extra_body=GREEDY, system=SYSTEM,
                                messages=[{"role": "user", "content": PROMPT}]) as stream:
        final = stream.get_final_message()
    check(final.content[0].text == want and final.stop_reason == "max_tokens",
          "messages stream: the anthropic client's final message")


def messages_errors(s, anthropic):
    st, _, j, _ = s.request("POST", "/v1/messages", {"model": "stories260K", "messages": [
        {"role": "user", "content": "x"}]}, headers={"x-api-key": KEY})
    check(st == 400 and j.get("type") == "error" and j["error"]["type"] == "invalid_request_error" and
          "max_tokens" in j["error"]["message"], f"messages: no max_tokens is a 400 in Anthropic's shape ({j})")
    st, _, j, _ = s.request("POST", "/v1/messages", {"model": "stories260K", "max_tokens": 4, "messages": [
        {"role": "user", "content": "x"}]}, headers={"x-api-key": "wrong"})
    check(st == 401 and j.get("type") == "error" and j["error"]["type"] == "authentication_error",
          f"messages: a wrong key is a 401 authentication_error ({st})")
    st, _, j, _ = s.request("POST", "/v1/messages", {"model": "stories260K", "max_tokens": 4, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {}}]}]}, headers={"x-api-key": KEY})
    check(st == 400 and j["error"]["type"] == "invalid_request_error" and "messages[0].content[0]" in j["error"]["message"],
          "messages: an image block is a 400 naming it")
    client = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key=KEY, max_retries=0)
    try:
        client.messages.create(model="stories260K", max_tokens=4, extra_body={"top_p": 7},
                               messages=[{"role": "user", "content": "x"}])
        check(False, "messages: top_p 7 refused")
    except anthropic.BadRequestError as e:
        check(e.status_code == 400 and "top_p" in str(e), f"messages: top_p 7 is a BadRequestError ({e})")


def messages_tools(build, pkgs, tmp, anthropic):
    pkg, _ = templated_package(pkgs, tmp, "qwen2.5-7b-instruct")
    s = scripted_server(build, pkg, [HERMES_CALLS, HERMES_CALLS, PLAIN, PLAIN])
    try:
        client = anthropic.Anthropic(base_url=f"http://{s.host}:{s.port}", api_key="none", max_retries=0)
        kw = dict(model="qwen2.5-7b-instruct", max_tokens=300, tools=ANT_TOOLS,
                  extra_body={"ignore_eos": True, "temperature": 0}, messages=[{"role": "user", "content": "Weather?"}])
        r = client.messages.create(**kw)
        kinds = [b.type for b in r.content]
        check(kinds == ["text", "tool_use", "tool_use"] and r.content[0].text == "Let me check.",
              f"messages tools: a text block and two tool_use blocks ({kinds})")
        check(r.content[1].name == "get_weather" and r.content[1].input == CALL_A and
              r.content[2].name == "get_time" and r.content[2].input == {"tz": "UTC"},
              "messages tools: names and inputs as the answer wrote them")
        check(r.stop_reason == "tool_use" and r.content[1].id != r.content[2].id, "messages tools: stop_reason tool_use")
        with client.messages.stream(**kw) as st:
            final = st.get_final_message()
        check([b.type for b in final.content] == kinds and final.content[1].input == CALL_A and
              final.content[2].input == {"tz": "UTC"} and final.stop_reason == "tool_use",
              "messages tools: streamed, the client assembles the same blocks from input_json_delta")
        # the calls and their results sent back: the prompt chat renders for tool messages
        back = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}] +
                 [{"type": "tool_use", "id": b.id, "name": b.name, "input": b.input} for b in r.content[1:]]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": r.content[1].id, "content": "sunny"},
                                             {"type": "tool_result", "tool_use_id": r.content[2].id,
                                              "content": [{"type": "text", "text": "12:00"}]},
                                             {"type": "text", "text": "Thanks."}]}]
        oa = [{"role": "user", "content": "Weather?"},
              {"role": "assistant", "content": "Let me check.", "tool_calls": [
                  {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.input)}}
                  for b in r.content[1:]]},
              {"role": "tool", "tool_call_id": r.content[1].id, "content": "sunny"},
              {"role": "tool", "tool_call_id": r.content[2].id, "content": "12:00"},
              {"role": "user", "content": "Thanks."}]
        st_, _, tok, _ = s.request("POST", "/tokenize", {"messages": oa, "tools": TOOLS})
        r = client.messages.create(**dict(kw, messages=back, max_tokens=1))
        check(st_ == 200 and r.usage.input_tokens == tok["count"],
              f"messages tools: tool_result blocks render as chat's tool messages ({r.usage.input_tokens} "
              f"prompt tokens, chat's {tok.get('count')})")
        # an answer that ends by itself (the script's end is the end-of-sequence token)
        r = client.messages.create(**dict(kw, tools=None))
        check(r.stop_reason == "end_turn" and r.content[0].text == PLAIN and r.stop_sequence is None,
              f"messages: an answer that ends is end_turn ({r.stop_reason}, {r.content[0].text!r})")
    finally:
        s.stop()


# ---- /v1/responses ---------------------------------------------------------------------------

def case_responses(build, pkgs):
    return both_parts(build, pkgs, "openai", [], [responses_text, responses_stream, responses_format],
                      responses_tools)


def responses_text(s, openai):
    client = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    ref = chat(s, [{"role": "user", "content": PROMPT}], 24)
    want = ref["choices"][0]["message"]["content"]
    r = client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=24, temperature=0)
    check(r.object == "response" and r.id.startswith("resp_") and r.output[0].type == "message",
          "responses: a response object with a message item")
    check(r.output_text == want, f"responses: output_text equals chat completions' ({want!r})")
    check(r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens",
          f"responses: cut at max_output_tokens is incomplete ({r.status})")
    check(r.usage.input_tokens == ref["usage"]["prompt_tokens"] and r.usage.output_tokens == 24 and
          r.usage.total_tokens == r.usage.input_tokens + 24, "responses: usage equals chat's")
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    want2 = chat(s, conv, 24)["choices"][0]["message"]["content"]
    r = client.responses.create(model="stories260K", instructions=SYSTEM, max_output_tokens=24, temperature=0,
                                input=[{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}])
    check(r.output_text == want2, "responses: instructions and input_text items equal chat's system + user")
    try:
        client.responses.create(model="stories260K", input="x", previous_response_id="resp_1")
        check(False, "responses: previous_response_id refused")
    except openai.BadRequestError as e:
        check("previous_response_id" in str(e), "responses: previous_response_id is a 400 naming it (nothing is stored)")


def responses_stream(s, openai):
    client = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    want = chat(s, [{"role": "user", "content": PROMPT}], 24)["choices"][0]["message"]["content"]
    events = list(client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=24,
                                          temperature=0, stream=True))
    names = [e.type for e in events]
    head = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    tail = ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"]
    check(names[:4] == head and names[-4:] == tail and set(names[4:-4]) == {"response.output_text.delta"},
          f"responses stream: the event order ({names[:4]}...{names[-4:]})")
    check([e.sequence_number for e in events] == list(range(len(events))), "responses stream: sequence numbers")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    check(text == want and events[-4].text == want, f"responses stream: text equals chat's ({text!r})")
    final = events[-1].response
    check(final.output_text == want and final.usage.output_tokens == 24, "responses stream: the final response")


FORMAT_SCHEMA = {"type": "object", "properties": {"mood": {"enum": ["happy", "sad"]},
                                                  "n": {"type": "integer", "minimum": 0, "maximum": 9}},
                 "required": ["mood", "n"], "additionalProperties": False,
                 # compact: free JSON white space lets this small model spend its tokens on it
                 "x-guidance": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}}


def responses_format(s, openai):
    """text.format as chat's response_format: json_schema and json_object answers equal
    chat's under the same format (greedy), streamed too; the response echoes the format;
    a bad format is a 400 naming text.format's field."""
    client = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
    msgs = [{"role": "user", "content": PROMPT}]
    rf = {"type": "json_schema", "json_schema": {"name": "mood", "schema": FORMAT_SCHEMA, "strict": True}}
    want = chat(s, msgs, 60, response_format=rf)["choices"][0]["message"]["content"]
    fmt = {"type": "json_schema", "name": "mood", "schema": FORMAT_SCHEMA, "strict": True}
    r = client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=60, temperature=0,
                                text={"format": fmt})
    out = json.loads(r.output_text) if r.status == "completed" else {}
    check(r.output_text == want and out.get("mood") in ("happy", "sad") and set(out) == {"mood", "n"},
          f"responses text.format json_schema: chat's constrained answer, valid ({r.output_text!r})")
    check(r.to_dict()["text"]["format"] == fmt, f"responses text.format: echoed ({r.to_dict()['text']})")
    events = list(client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=60,
                                          temperature=0, text={"format": fmt}, stream=True))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    check(text == want and events[-1].type == "response.completed" and
          events[-1].response.to_dict()["text"]["format"] == fmt,
          f"responses text.format streamed: the same text ({text!r}), the format echoed")
    want = chat(s, msgs, 40, response_format={"type": "json_object"})["choices"][0]["message"]["content"]
    r = client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=40, temperature=0,
                                text={"format": {"type": "json_object"}})
    check(r.output_text == want and want.lstrip().startswith("{") and
          r.to_dict()["text"]["format"] == {"type": "json_object"},
          f"responses text.format json_object: chat's answer ({want[:40]!r})")
    r = client.responses.create(model="stories260K", input=PROMPT, max_output_tokens=4, temperature=0,
                                text={"format": {"type": "text"}})
    check(r.to_dict()["text"]["format"] == {"type": "text"}, "responses text.format text: as without it")
    bad = [({"type": "json_schema", "name": "t", "schema": {"type": "nonsense"}}, "text.format.schema"),
           ({"type": "json_schema", "name": "t", "schema": {"type": "string", "pattern": "(("}}, "text.format.schema"),
           ({"type": "json_schema", "schema": FORMAT_SCHEMA}, "text.format.name"),
           ({"type": "json_schema", "name": "t", "schema": FORMAT_SCHEMA, "strict": "yes"}, "text.format.strict"),
           ({"type": "json_schema", "name": "t", "schema": FORMAT_SCHEMA, "extra": 1}, "text.format.extra"),
           ({"type": "xml"}, "text.format.type"),
           ({"type": "json_object", "extra": 1}, "text.format.extra"),
           ("json", "text.format")]
    for f, param in bad:
        st, _, j, _ = s.request("POST", "/v1/responses", {"model": "stories260K", "input": "x",
                                                          "max_output_tokens": 4, "text": {"format": f}})
        err = (j or {}).get("error") or {}
        check(st == 400 and err.get("param") == param and "response_format" not in err.get("message", ""),
              f"responses text.format {json.dumps(f)[:60]}: 400 naming {param} ({err.get('message', '')[:100]!r})")
    st, _, j, _ = s.request("POST", "/v1/responses", {"model": "stories260K", "input": "x", "text": {"verbosity": "low"}})
    check(st == 400 and j["error"]["param"] == "text.verbosity", "responses text.verbosity: 400 naming it")


def responses_tools(build, pkgs, tmp, openai):
    pkg, _ = templated_package(pkgs, tmp, "qwen2.5-7b-instruct")
    s = scripted_server(build, pkg, [HERMES_CALLS, HERMES_CALLS, PLAIN, PLAIN, PLAIN])
    try:
        client = openai.OpenAI(base_url=f"http://{s.host}:{s.port}/v1", api_key="none", max_retries=0)
        kw = dict(model="qwen2.5-7b-instruct", max_output_tokens=300, temperature=0, tools=RESP_TOOLS,
                  extra_body={"ignore_eos": True}, input="Weather?")
        r = client.responses.create(**kw)
        kinds = [o.type for o in r.output]
        check(kinds == ["message", "function_call", "function_call"] and r.output_text == "Let me check.",
              f"responses tools: a message and two function_call items ({kinds})")
        calls = r.output[1:]
        check(calls[0].name == "get_weather" and json.loads(calls[0].arguments) == CALL_A and
              calls[1].name == "get_time" and json.loads(calls[1].arguments) == {"tz": "UTC"} and
              r.status == "completed", "responses tools: names and arguments as the answer wrote them")
        events = list(client.responses.create(stream=True, **kw))
        done = [e.item for e in events if e.type == "response.output_item.done"]
        deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta" and e.output_index == 1]
        check([i.type for i in done] == kinds and json.loads(done[1].arguments) == CALL_A and
              len(deltas) > 2 and "".join(deltas) == done[1].arguments,
              f"responses tools: streamed, the same items, call 0's arguments in {len(deltas)} deltas")
        back = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]}] + \
            [{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls] + \
            [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"},
             {"type": "function_call_output", "call_id": calls[1].call_id, "output": "12:00"}]
        oa = [{"role": "user", "content": "Weather?"},
              {"role": "assistant", "content": "Let me check.", "tool_calls": [
                  {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                  for c in calls]},
              {"role": "tool", "tool_call_id": calls[0].call_id, "content": "sunny"},
              {"role": "tool", "tool_call_id": calls[1].call_id, "content": "12:00"}]
        st, _, tok, _ = s.request("POST", "/tokenize", {"messages": oa, "tools": TOOLS})
        r = client.responses.create(**dict(kw, input=back, max_output_tokens=16))
        check(st == 200 and r.usage.input_tokens == tok["count"],
              f"responses tools: function_call_output items render as chat's tool messages "
              f"({r.usage.input_tokens} prompt tokens, chat's {tok.get('count')})")
        r = client.responses.create(**dict(kw, tools=None))
        check(r.status == "completed" and r.output_text == PLAIN and r.incomplete_details is None,
              f"responses: an answer that ends is completed ({r.status}, {r.output_text!r})")
        events = list(client.responses.create(stream=True, **dict(kw, tools=None)))
        last = events[-1]
        check(last.type == "response.completed" and last.response.output_text == PLAIN and
              last.response.usage.output_tokens > 0 and
              last.response.usage.total_tokens == last.response.usage.input_tokens + last.response.usage.output_tokens,
              f"responses stream: an answer that ends closes with response.completed and usage ({last.type})")
    finally:
        s.stop()


# ---- llama-server's /props and /slots ----------------------------------------------------------

def case_props(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    with open(os.path.join(pkg, "genai_config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(pkg, "tokenizer_config.json")) as f:
        template = json.load(f)["chat_template"]
    s = Server(build, pkg, "--max-batch", "4", "--api-key", KEY)
    try:
        st, _, _, _ = s.request("GET", "/props")
        check(st == 401, f"/props without the key: 401 ({st})")
        st, _, _, _ = s.request("GET", "/health")
        check(st == 200, "/health stays open")
        st, _, p, _ = s.request("GET", "/props", headers=AUTH)
        search = cfg["search"]
        g = p["default_generation_settings"] if st == 200 else {}
        check(st == 200 and g["n_ctx"] == cfg["model"]["context_length"] and p["total_slots"] == 4 and
              os.path.samefile(p["model_path"], pkg), f"/props: n_ctx, total_slots (--max-batch), model_path ({p})")
        check(g.get("params", {}).get("top_k") == search["top_k"] and g["params"]["top_p"] == search["top_p"] and
              g["params"]["temperature"] == (search["temperature"] if search["do_sample"] else 0),
              "/props: the default sampling is the package's search block")
        check(p.get("chat_template") == template, "/props: chat_template is the package's")
        check(p.get("build_info", "").startswith("onnx-genai "), f"/props: build_info ({p.get('build_info')})")
        st, _, sl, _ = s.request("GET", "/slots", headers=AUTH)
        check(st == 200 and [e["id"] for e in sl] == [0, 1, 2, 3] and not any(e["is_processing"] for e in sl) and
              all(e["n_ctx"] == 512 for e in sl), "/slots: four idle slots")
        slots_busy(s)
    finally:
        s.stop()
    # a hybrid batched with state slots: --kv-memory leaves room for fewer than --max-batch
    # (the engine's count in /metrics), and /props and /slots give those
    s = Server(build, os.path.join(pkgs, "hybrid-qwen3_5"), "--max-batch", "64", "--kv-memory", "1M",
               "--api-key", KEY)
    try:
        _, _, _, text = s.request("GET", "/metrics", headers=AUTH)
        n = [int(float(x.rsplit(" ", 1)[1])) for x in text.decode().splitlines()
             if x.startswith("og_state_slots_total{")] or [0]
        n = n[0]
        st, _, p, _ = s.request("GET", "/props", headers=AUTH)
        check(st == 200 and 1 < n < 64 and p["total_slots"] == n and p["mode"] == "batched",
              f"hybrid-qwen3_5, --max-batch 64 --kv-memory 1M: /props total_slots {p.get('total_slots')} = "
              f"the engine's state slots {n}")
        st, _, sl, _ = s.request("GET", "/slots", headers=AUTH)
        check(st == 200 and [e["id"] for e in sl] == list(range(n)) and not any(e["is_processing"] for e in sl),
              f"/slots: the {len(sl)} slots listed, idle ({n})")
        st, _, j, _ = s.request("POST", "/v1/completions", {"prompt": "Tom", "max_tokens": 4, "temperature": 0},
                                headers=AUTH)
        st2, _, sl, _ = s.request("GET", "/slots", headers=AUTH)
        check(st == 200 and st2 == 200 and len(sl) == n and not any(e["is_processing"] for e in sl),
              f"hybrid: a completion answered ({st}), its slot given back")
    finally:
        s.stop()


def slots_busy(s):
    """Six streamed requests on four slots: /slots shows four busy with their requests' ids
    and counts, and none once they are done."""
    conns, ids = [], []
    for i in range(6):
        c = s.conn()
        body = {"messages": [{"role": "user", "content": f"Tom and {i}"}], "max_tokens": 400, "ignore_eos": True,
                "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
        c.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                  headers={"Content-Type": "application/json", **AUTH})
        r = c.getresponse()
        first = json.loads(r.readline().decode()[6:])  # the role chunk: the request's id
        r.readline()
        conns.append((c, r))
        ids.append(first["id"])
    # while four or more are unfinished, four slots are busy (a request submitted while all
    # were taken takes one once it runs)
    seen, busy = [], []
    for _ in range(50):
        st, _, sl, _ = s.request("GET", "/slots", headers=AUTH)
        busy = [e for e in sl if e["is_processing"]] if st == 200 else []
        seen.append(len(busy))
        if len(busy) == 4:
            break
    check(len(busy) == 4 and all(e["id_task"] in ids for e in busy) and
          len({e["id_task"] for e in busy}) == 4, f"/slots: four busy slots with four of the requests' ids ({seen})")
    texts, usage = {}, {}
    for (c, r), i in zip(conns, ids):
        for line in r.read().decode().split("\n"):
            if line.startswith("data: {"):
                e = json.loads(line[6:])
                if e.get("usage"):
                    usage[i] = e["usage"]
        c.close()
    check(all(0 <= e["next_token"]["n_decoded"] <= 400 and e["n_prompt_tokens"] == usage[e["id_task"]]["prompt_tokens"] and
              e["next_token"]["n_remain"] == 400 - e["next_token"]["n_decoded"] for e in busy),
          "/slots: prompt and generated counts of each request")
    st, _, sl, _ = s.request("GET", "/slots", headers=AUTH)
    check(st == 200 and not any(e["is_processing"] for e in sl), "/slots: all idle once the requests are done")


if __name__ == "__main__":
    sys.exit(run({"messages": case_messages, "responses": case_responses, "props": case_props}, __doc__))
