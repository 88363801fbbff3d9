#!/usr/bin/env python3
"""`onnx-genai serve` at its door: who may call it and what a hostile client cannot do to
it. Over real HTTP on loopback (raw sockets where a well-behaved client library would not
send what is tested), on stories260K (an answer takes milliseconds).

  access   --api-key / --api-key-file (401 in OpenAI's error shape, /health open), the
           warning for a non-loopback address without a key, CORS only with --cors-origin
           (preflight and headers for that origin, none without), 415 for a body that is
           not application/json, 400 for a body that is not UTF-8, --template-file.
  hostile  600 connections trickling their headers (from three loopback addresses) while a
           normal client gets /health and a completion within a second, then each of them
           answered 408 at --read-timeout; a Content-Length above --max-body answered 413
           from the header alone; a request line that is not HTTP answered 400 and closed;
           a header too large 431; a connection beyond --max-per-address and one beyond
           --max-connections answered 503 (not closed silently), /health still answered;
           idle kept-alive connections closed at --read-timeout, and one that trickles its
           next request's header closed at --read-timeout after its answer.

Usage: test_guard.py BUILD_DIR PACKAGES_DIR CASE. Exits 77 (skipped, saying why) when a
package is missing, or when the open-files limit cannot be raised for 600 connections."""
import json
import os
import resource
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

from server_harness import SKIP, Server, check, run
from test_server import chat_body

KEY = "sk-test-0123456789abcdef"


def raw(host, port, data, source=None, wait=5.0, half_close=False):
    """Sends data on a fresh connection and returns (status, headers, body, closed): what
    came back until the server closed (or wait ran out; closed False then)."""
    s = socket.create_connection((host, port), timeout=wait,
                                 source_address=(source, 0) if source else None)
    try:
        if data:
            s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        return read_reply(s, wait)
    finally:
        s.close()


def read_reply(s, wait):
    got, closed, end = b"", False, time.monotonic() + wait
    while time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    return parse_reply(got) + (closed,)


def parse_reply(got):
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, got
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def status_within(seconds, fn):
    """fn()'s status once it is 200, trying every 0.1 s for up to seconds (a loaded machine
    may take a moment to see a close); the last status otherwise."""
    end = time.monotonic() + seconds
    while True:
        st = fn()
        if st == 200 or time.monotonic() > end:
            return st
        time.sleep(0.1)


def is_error(body, kind=None):
    try:
        j = json.loads(body)
    except ValueError:
        return False
    e = j.get("error") if isinstance(j, dict) else None
    return isinstance(e, dict) and isinstance(e.get("message"), str) and \
        (kind is None or e.get("type") == kind)


# ---- access ----------------------------------------------------------------------------

def case_access(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    tmp = tempfile.mkdtemp()
    keyfile = os.path.join(tmp, "key")
    with open(keyfile, "w") as f:
        f.write(f"  {KEY}\n")
    s = Server(build, pkg, "--api-key-file", keyfile)
    try:
        auth = {"Authorization": f"Bearer {KEY}"}
        st, _, j, _ = s.request("GET", "/health")
        check(st == 200 and j["status"] == "ok", f"--api-key-file: /health without a key: 200 ({st})")
        st, h, j, text = s.request("GET", "/v1/models")
        check(st == 401 and is_error(text, "invalid_request_error") and h.get("WWW-Authenticate") == "Bearer",
              f"no key: 401 with OpenAI's error object, type invalid_request_error ({st} {text[:200]!r})")
        st, _, j, text = s.request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 2},
                                   headers={"Authorization": "Bearer sk-wrong"})
        check(st == 401 and is_error(text, "invalid_request_error"), f"a wrong key: 401 ({st})")
        st, _, j, _ = s.request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 2},
                                headers={"Authorization": f"Bearer {KEY}x"})
        check(st == 401, f"the key with one more character: 401 ({st})")
        st, _, j, _ = s.request("GET", "/v1/models", headers=auth)
        check(st == 200 and j["data"], f"the right key: /v1/models 200 ({st})")
        st, _, j, _ = s.request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 3, "temperature": 0},
                                headers={"Authorization": f"bearer {KEY}"})
        check(st == 200 and j["choices"][0]["text"], f"the right key ('bearer', any case): a completion 200 ({st})")
        st, _, _, _ = s.request("GET", "/metrics")
        check(st == 401, f"/metrics needs the key too ({st})")
        # no CORS without --cors-origin: no header, no preflight
        st, h, _, _ = s.request("GET", "/v1/models", headers={**auth, "Origin": "https://evil.example"})
        check(st == 200 and not any(k.lower().startswith("access-control") for k in h),
              "without --cors-origin: no Access-Control-* header")
        st, h, _, _ = s.request("OPTIONS", "/v1/chat/completions",
                                headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        check(st != 204 and not any(k.lower().startswith("access-control") for k in h),
              f"without --cors-origin: a preflight is not granted ({st})")
        # content type and encoding
        C = "/v1/chat/completions"
        body = json.dumps(chat_body("hi", max_tokens=2)).encode()
        for ctype, want in [("text/plain", 415), ("application/x-www-form-urlencoded", 415),
                            ("application/json; charset=latin-1", 415), ("application/jsonx", 415),
                            ("application/json; charset=utf-8", 200), ("Application/JSON;charset=\"UTF-8\"", 200),
                            ("application/json", 200)]:
            st, _, _, text = s.request("POST", C, raw=body, headers={**auth, "Content-Type": ctype})
            check(st == want and (want == 200 or is_error(text, "invalid_request_error")),
                  f"Content-Type {ctype}: {want} ({st})")
        st, _, text, _ = raw(s.host, s.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                             + KEY.encode() + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        check(st == 415 and is_error(text), f"no Content-Type: 415 ({st})")
        for what, data in [("a lone continuation byte", b'{"prompt": "a\x80b", "max_tokens": 2}'),
                           ("a truncated sequence", b'{"prompt": "\xe2\x82", "max_tokens": 2}'),
                           ("an overlong encoding", b'{"prompt": "\xc0\xaf", "max_tokens": 2}'),
                           ("a surrogate encoded", b'{"prompt": "\xed\xa0\x80", "max_tokens": 2}')]:
            st, _, j, text = s.request("POST", "/v1/completions", raw=data, headers=auth)
            check(st == 400 and is_error(text, "invalid_request_error") and "UTF-8" in j["error"]["message"],
                  f"invalid UTF-8 in the body ({what}): 400 ({st})")
        st, _, _, _ = s.request("POST", "/v1/completions", raw='{"prompt": "café ☕", "max_tokens": 2}'.encode(),
                                headers=auth)
        check(st == 200, f"valid multi-byte UTF-8: 200 ({st})")
    finally:
        s.stop()

    # --api-key on the command line; CORS for one origin
    origin = "https://app.example.com"
    s = Server(build, pkg, "--api-key", KEY, "--cors-origin", origin)
    try:
        st, h, _, _ = s.request("OPTIONS", "/v1/chat/completions",
                                headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                         "Access-Control-Request-Headers": "authorization, content-type"})
        allow_h = h.get("Access-Control-Allow-Headers", "").lower()
        check(st == 204 and h.get("Access-Control-Allow-Origin") == origin and
              "POST" in h.get("Access-Control-Allow-Methods", "") and
              "authorization" in allow_h and "content-type" in allow_h,
              f"--cors-origin: the preflight (no key needed) is granted for that origin ({st} {h})")
        st, h, _, _ = s.request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 2},
                                headers={"Authorization": f"Bearer {KEY}", "Origin": origin})
        check(st == 200 and h.get("Access-Control-Allow-Origin") == origin,
              f"--cors-origin: an answer carries Access-Control-Allow-Origin: {origin}")
        st, h, _, _ = s.request("GET", "/v1/models", headers={"Origin": origin})
        check(st == 401 and h.get("Access-Control-Allow-Origin") == origin,
              "--cors-origin: a 401 carries it too (the page can read why)")
        st, h, _, _ = s.request("GET", "/health")
        check(st == 200 and h.get("Access-Control-Allow-Origin") == origin, "/health (answered at the door) too")
        check(all(v != "*" for k, v in h.items() if k.lower().startswith("access-control")), "never '*'")
    finally:
        s.stop()

    # the warning on an address others can reach, without a key (and none with one)
    for args, want in [([], True), (["--api-key", KEY], False)]:
        s = Server(build, pkg, "--host", "0.0.0.0", *args)
        s.stop()
        said = "without an API key" in s.stderr()
        check(said == want, f"--host 0.0.0.0 {' '.join(args) or 'without a key'}: "
              f"{'a warning' if want else 'no warning'} on stderr")
    s = Server(build, pkg)
    s.stop()
    check("warning" not in s.stderr(), "loopback without a key: no warning")

    # --template-file: the server renders chats with it
    tpl = os.path.join(tmp, "t.jinja")
    with open(tpl, "w") as f:
        f.write("{% for m in messages %}<{{ m.role }}> {{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}ANSWER:{% endif %}")
    s = Server(build, pkg, "--template-file", tpl)
    try:
        msgs = [{"role": "user", "content": "Once upon a time"}]
        st, _, j, _ = s.post("/tokenize", {"messages": msgs})
        st2, _, j2, _ = s.post("/tokenize", {"prompt": "<user> Once upon a time\nANSWER:",
                                       "add_special_tokens": False})
        check(st == 200 and st2 == 200 and j["tokens"] == j2["tokens"],
              "--template-file: a chat is rendered with the given template")
        st, _, j, _ = s.post("/v1/chat/completions", chat_body("Once upon a time", max_tokens=3))
        check(st == 200 and j["usage"]["prompt_tokens"] == len(j2["tokens"]),
              f"--template-file: a chat completion's prompt is that rendering ({st})")
    finally:
        s.stop()
    p = subprocess.run([os.path.join(build, "onnx-genai"), "serve", "-m", pkg, "--port", "0",
                        "--template-file", os.path.join(tmp, "missing.jinja")],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode != 0 and "missing.jinja" in p.stderr,
          f"--template-file that does not exist: the server does not start ({p.returncode})")
    return 0


# ---- hostile clients -------------------------------------------------------------------

def raise_files(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= want:
        return True
    if hard != resource.RLIM_INFINITY and hard < want:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        return False
    return True


def loopback_sources(port, host):
    """Loopback addresses other than 127.0.0.1 this machine lets a client bind (Linux:
    all of 127/8), so that one test can be several clients."""
    try:
        s = socket.create_connection((host, port), timeout=5, source_address=("127.0.0.2", 0))
        s.close()
        return True
    except OSError:
        return False


def case_hostile(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    if not raise_files(4096):
        print(f"SKIP: the open-files limit ({resource.getrlimit(resource.RLIMIT_NOFILE)}) cannot be "
              "raised to 4096 for 600 connections on each side")
        return SKIP
    # the trickling must stop well before the header deadline (a byte sent after the 408
    # and the close would reset the connection, and the 408 with it): the probes take
    # at most a second each
    timeout = 2
    s = Server(build, pkg, "--read-timeout", str(timeout + 1))
    try:
        if not loopback_sources(s.port, s.host):
            print("SKIP: cannot bind client sockets to 127.0.0.2 (needed to be several clients)")
            return SKIP
        # warm up: the first answer loads plans
        s.post("/v1/completions", {"prompt": "Once", "max_tokens": 4, "temperature": 0})
        slow = []
        t0 = time.monotonic()
        for i in range(600):
            c = socket.create_connection((s.host, s.port), timeout=10,
                                         source_address=(f"127.0.0.{2 + i % 3}", 0))
            c.sendall(b"GET /v1/models HTTP/1.1\r\n")
            slow.append(c)
        opened = time.monotonic() - t0
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                for c in slow:
                    try:
                        c.send(b"X")
                    except OSError:
                        pass
                stop.wait(0.2)
        th = threading.Thread(target=trickle, daemon=True)
        th.start()
        time.sleep(0.3)
        t = time.monotonic()
        st, _, j, _ = s.request("GET", "/health")
        dt_health = time.monotonic() - t
        t = time.monotonic()
        st2, _, j2, _ = s.post("/v1/completions", {"prompt": "Once upon", "max_tokens": 4, "temperature": 0})
        dt_comp = time.monotonic() - t
        check(st == 200 and dt_health < 1.0,
              f"600 connections trickling their headers: /health 200 in {dt_health:.3f} s (600 opened in {opened:.1f} s)")
        check(st2 == 200 and dt_comp < 1.0, f"... and a completion 200 in {dt_comp:.3f} s")
        stop.set()
        th.join()
        # each slow one is answered 408 once --read-timeout has passed since it connected
        deadline = t0 + timeout + 1 + 15
        answered, odd = 0, []
        for c in slow:
            status, _, body, closed = read_reply(c, max(0.1, deadline - time.monotonic()))
            good = status == 408 and is_error(body) and closed
            answered += good
            if not good:
                odd.append((status, body[:100], closed))
            c.close()
        if odd:
            print(f"    not answered 408 and closed: {odd[:5]}")
        check(answered == 600, f"every trickling connection answered 408 and closed at --read-timeout ({answered}/600)")
        st, _, _, _ = s.request("GET", "/health")
        check(st == 200, "healthy after it")
    finally:
        s.stop()

    s = Server(build, pkg, "--max-body", "1M", "--max-per-address", "4", "--max-connections", "2",
               "--read-timeout", str(timeout))
    try:
        H, P = s.host, s.port
        # a Content-Length above --max-body: 413 on the header, the body never sent
        for n in (2 << 20, 10 ** 15):
            t = time.monotonic()
            st, h, body, closed = raw(H, P, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"pro" % n)
            check(st == 413 and is_error(body) and time.monotonic() - t < 2.5,
                  f"Content-Length {n} (above --max-body 1M): 413 before the body ({st})")
        # a request line that is not HTTP: 400 and a close
        for what, data in [("a TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40),
                           ("words", b"HELLO WORLD\r\n\r\n"),
                           ("no version", b"GET /health\r\n\r\n"),
                           ("a wrong version", b"GET /health HTTQ/1.1\r\n\r\n"),
                           ("a control byte in the method", b"G\x01T / HTTP/1.1\r\n\r\n")]:
            st, _, body, closed = raw(H, P, data)
            check(st == 400 and is_error(body) and closed, f"not HTTP ({what}): 400 and closed ({st}, closed {closed})")
        st, _, body, closed = raw(H, P, b"GET /v1/models HTTP/1.1\r\nX: " + b"a" * (17 << 10))
        check(st == 431 and closed, f"a header above 16 KiB: 431 ({st})")
        st, _, _, closed = raw(H, P, b"GET /v1/mod", half_close=True)
        check(st is None and closed, "a client that shuts its side mid-header: closed")
        # --max-per-address 4: four idle connections from one address, the fifth answered 503
        held = [socket.create_connection((H, P), source_address=("127.0.0.5", 0)) for _ in range(4)]
        time.sleep(0.2)
        st, h, body, closed = raw(H, P, None, source="127.0.0.5")
        check(st == 503 and is_error(body) and h.get("retry-after") and closed,
              f"a fifth connection from one address (--max-per-address 4): 503 with Retry-After ({st})")
        st, _, _, _ = raw(H, P, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.6")
        check(st == 200, f"another address meanwhile: /health 200 ({st})")
        for c in held:
            c.close()
        st = status_within(5, lambda: raw(H, P, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.5")[0])
        check(st == 200, f"once they close, that address is served again ({st})")
        # --max-connections 2: two kept-alive connections hold both handler slots
        busy = []
        for i in range(2):
            c = socket.create_connection((H, P), source_address=(f"127.0.0.{7 + i}", 0))
            c.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            busy.append(c)
        for c in busy:
            c.settimeout(10)
            c.recv(65536)
        st, h, body, _ = raw(H, P, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.9")
        check(st == 503 and is_error(body) and h.get("retry-after"),
              f"every handler slot held (--max-connections 2): a new request 503 with Retry-After ({st})")
        st, _, body, _ = raw(H, P, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.9")
        check(st == 200 and json.loads(body)["status"] == "ok", f"... and /health still 200 ({st})")
        st, h, _, _ = raw(H, P, b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n", source="127.0.0.9")
        check(st == 200 and h.get("content-type", "").startswith("application/json"), f"HEAD /health 200 ({st})")
        # an idle kept-alive connection is closed at --read-timeout, and its slot comes back
        time.sleep(timeout)
        st = status_within(5, lambda: raw(H, P, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
                                          source="127.0.0.9")[0])
        check(st == 200, f"idle kept-alive connections closed after --read-timeout: slots free again ({st})")
        for c in busy:
            c.close()
        # a kept-alive connection that trickles its next request's header: closed once
        # --read-timeout has passed since its answer, whatever the bytes trickling in
        c = socket.create_connection((H, P), source_address=("127.0.0.10", 0))
        c.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        c.settimeout(10)
        first = c.recv(65536)
        t = time.monotonic()
        c.sendall(b"GET /v1/models HTTP/1.1\r\n")
        closed_after = None
        while time.monotonic() - t < timeout + 4:
            try:
                c.send(b"X")
            except OSError:
                closed_after = time.monotonic() - t
                break
            r, _, _ = select.select([c], [], [], 0.3)
            if r:
                try:
                    if not c.recv(65536):
                        closed_after = time.monotonic() - t
                        break
                except OSError:
                    closed_after = time.monotonic() - t
                    break
        c.close()
        check(first.startswith(b"HTTP/1.1 200") and closed_after is not None and closed_after < timeout + 1.5,
              f"a kept-alive connection trickling its next header: closed {closed_after and round(closed_after, 2)} s "
              f"after its answer (--read-timeout {timeout})")
    finally:
        s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run({"access": case_access, "hostile": case_hostile}, __doc__))
