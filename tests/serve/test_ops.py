#!/usr/bin/env python3
"""`onnx-genai serve` under an orchestrator, over real HTTP on loopback, on stories260K.

  drain   liveness and readiness probes (GET /health/live, /health/ready); SIGTERM drains:
          a request being answered finishes, new generation requests get 503 with
          Retry-After, readiness fails while liveness holds, then the server exits 0; a
          second signal ends the drain at once; --drain-timeout 0 stops at once. (The
          test hook OG_SERVE_TEST_DRAIN_HOLD_MS keeps the drain open long enough to look
          at it: a stories260K answer takes milliseconds.)

Usage: test_ops.py BUILD_DIR PACKAGES_DIR CASE."""
import json
import os
import signal
import sys
import threading
import time

from server_harness import Server, check, run


def wait_line(s, text, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(text in line for line in s.lines):
            return True
        time.sleep(0.02)
    return False


def exit_code(s, timeout):
    try:
        return s.p.wait(timeout=timeout)
    except Exception:  # noqa: BLE001 (subprocess.TimeoutExpired)
        s.p.kill()
        return "hung"


def case_drain(build, pkgs):
    pkg = os.path.join(pkgs, "stories260K")
    s = Server(build, pkg, "--drain-timeout", "20", env={"OG_SERVE_TEST_DRAIN_HOLD_MS": "3000"})
    st, _, j, _ = s.request("GET", "/health/live")
    check(st == 200 and j == {"status": "alive"}, f"/health/live answers 200 alive ({st} {j})")
    st, _, j, _ = s.request("GET", "/health/ready")
    check(st == 200 and j.get("status") == "ok", f"/health/ready answers 200 once loaded ({st} {j})")
    # a request being answered when SIGTERM comes finishes
    done = {}

    def long_request():
        done["r"] = s.stream("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 200,
                                                 "stream": True, "ignore_eos": True})

    t = threading.Thread(target=long_request)
    t.start()
    time.sleep(0.05)
    s.p.send_signal(signal.SIGTERM)
    t.join(timeout=60)
    status, events = done.get("r", (None, []))
    check(status == 200 and events and events[-1] == "[DONE]",
          f"the request being answered at SIGTERM finishes ({status}, {len(events)} events)")
    check(wait_line(s, "draining (SIGTERM)"), "SIGTERM starts a drain (printed)")
    st, h, j, _ = s.request("POST", "/v1/completions", {"prompt": "Hello", "max_tokens": 4})
    check(st == 503 and "Retry-After" in h and "shutting down" in json.dumps(j),
          f"a new generation request while draining: 503 with Retry-After ({st} {j})")
    st, _, j, _ = s.request("GET", "/health/ready")
    check(st == 503, f"/health/ready fails while draining ({st} {j})")
    st, _, j, _ = s.request("GET", "/health")
    check(st == 503 and j.get("status") == "draining", f"/health says draining ({st} {j})")
    st, _, j, _ = s.request("GET", "/health/live")
    check(st == 200, f"/health/live still answers while draining ({st})")
    rc = exit_code(s, 30)
    check(rc == 0 and wait_line(s, "stopping (SIGTERM)", 1), f"the drained server exits 0 ({rc})")

    # a second signal ends the drain at once
    s = Server(build, pkg, env={"OG_SERVE_TEST_DRAIN_HOLD_MS": "60000"})
    s.p.send_signal(signal.SIGTERM)
    check(wait_line(s, "draining (SIGTERM)"), "draining again")
    t0 = time.monotonic()
    s.p.send_signal(signal.SIGTERM)
    rc = exit_code(s, 30)
    check(rc == 0 and time.monotonic() - t0 < 10, f"a second SIGTERM stops at once ({rc})")

    # --drain-timeout 0: SIGTERM stops at once
    s = Server(build, pkg, "--drain-timeout", "0", env={"OG_SERVE_TEST_DRAIN_HOLD_MS": "60000"})
    t0 = time.monotonic()
    s.p.send_signal(signal.SIGTERM)
    rc = exit_code(s, 30)
    check(rc == 0 and time.monotonic() - t0 < 10 and not any("draining" in x for x in s.lines),
          f"--drain-timeout 0: SIGTERM stops without draining ({rc})")
    return 0


if __name__ == "__main__":
    sys.exit(run({"drain": case_drain}, __doc__))
