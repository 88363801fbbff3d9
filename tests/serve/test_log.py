#!/usr/bin/env python3
"""`onnx-genai serve --log-format text|json`: one line per request on stderr.

  log   with --log-format json: a chat completion, a streamed one, a streamed /v1/messages,
        a 404 and a 401 each give one line whose fields match what the client saw (status,
        model, usage's prompt and completion tokens, the path and method), a time within
        the test's clock, the client's loopback address, ttft_ms <= duration_ms; with
        --log-format text the same request gives one line of the text shape; without the
        option no line.

Oracles: the answers' own usage and statuses, and the test's clock. Usage: test_log.py
BUILD_DIR PACKAGES_DIR CASE."""
import datetime
import json
import os
import re
import sys
import time

from server_harness import Server, check, run

KEY = "sk-log-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}


def log_lines(s, n, prefix):
    """The first n lines of s's stderr that start with prefix (waits up to 5 s for them)."""
    for _ in range(100):
        lines = [x for x in s.stderr().splitlines() if x.startswith(prefix)]
        if len(lines) >= n:
            return lines
        time.sleep(0.05)
    return lines


def case_log(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    t0 = datetime.datetime.now(datetime.timezone.utc)
    s = Server(build, pkg, "--log-format", "json", "--api-key", KEY)
    try:
        body = {"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 12, "temperature": 0}
        st, _, j, _ = s.request("POST", "/v1/chat/completions", body, headers=AUTH)
        st2, _, j2, _ = s.request("POST", "/v1/chat/completions",
                                  dict(body, stream=True, stream_options={"include_usage": True}), headers=AUTH)
        st3, _, _, _ = s.request("POST", "/v1/messages", dict(body, max_tokens=7, stream=True), headers=AUTH)
        st4, _, _, _ = s.request("GET", "/nowhere", headers=AUTH)
        st5, _, _, _ = s.request("GET", "/v1/models")
        lines = log_lines(s, 5, "{")
    finally:
        s.stop()
    t1 = datetime.datetime.now(datetime.timezone.utc)
    recs = [json.loads(x) for x in lines]
    check(len(recs) == 5, f"json: one line per request ({len(recs)})")
    if len(recs) != 5:
        return
    want = [("POST", "/v1/chat/completions", st, "stories260K", j["usage"]["prompt_tokens"], 12),
            ("POST", "/v1/chat/completions", st2, "stories260K", j["usage"]["prompt_tokens"], 12),
            ("POST", "/v1/messages", st3, "stories260K", j["usage"]["prompt_tokens"], 7),
            ("GET", "/nowhere", st4, None, 0, 0), ("GET", "/v1/models", st5, None, 0, 0)]
    # a line is written when its request is done with, which may come after the client
    # has its answer and sent the next request: the lines in any order, each request once
    key = lambda t: tuple(str(x) for x in t)  # noqa: E731
    got = sorted(((r["method"], r["path"], r["status"], r["model"], r["prompt_tokens"],
                   r["completion_tokens"]) for r in recs), key=key)
    check(got == sorted(want, key=key), f"json: one line per request, as each went: {got}")
    for r in recs:
        path, c = r["path"], r["completion_tokens"]
        when = datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        check(t0 - datetime.timedelta(seconds=1) <= when <= t1 and r["client"] == "127.0.0.1" and
              r["duration_ms"] >= 0 and (r["ttft_ms"] is None if not c else 0 <= r["ttft_ms"] <= r["duration_ms"]),
              f"json: {path}: time, client, ttft within the duration")
    check([st, st2, st3, st4, st5] == [200, 200, 200, 404, 401], "json: the statuses the clients saw")

    s = Server(build, pkg, "--log-format", "text")
    try:
        s.request("POST", "/v1/chat/completions", body)
        lines = log_lines(s, 1, "20")
    finally:
        s.stop()
    pat = (r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1 "POST" "/v1/chat/completions" 200 '
           r'model="stories260K" prompt_tokens=\d+ completion_tokens=12 ttft_ms=[\d.]+ duration_ms=[\d.]+')
    check(len(lines) == 1 and re.fullmatch(pat, lines[0]), f"text: one line of the text shape ({lines})")

    s = Server(build, pkg)
    try:
        s.request("POST", "/v1/chat/completions", body)
        time.sleep(0.2)
        err = s.stderr()
    finally:
        s.stop()
    check("/v1/chat/completions" not in err, "no --log-format: no request lines")


if __name__ == "__main__":
    sys.exit(run({"log": case_log}, __doc__))
