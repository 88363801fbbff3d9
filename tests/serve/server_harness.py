"""The one harness that tests start servers with: `onnx-genai serve` on a free loopback port
(--port 0, the address read from its first line, ready at its "ready:" line) or any other
server command on a port of free_port() (llama-server too: ready once GET /health answers
200), HTTP calls to it, and a stop by SIGTERM that must end it with status 0 and no
sanitizer report.

The script-style tests (tests/serve/test_*.py and others) count failures through check()
into FAILS and pick their case with run(); pytest tests give Server check=None and assert
what they need themselves. Other folders import it with tests/serve on sys.path."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
FAILS = []


def check(cond, what):
    if cond:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        FAILS.append(what)
    return cond


def free_port():
    """A loopback port free now (for servers that cannot be given --port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli_env(env=None, drop_preload=False, base=None):
    """base (os.environ) with env's entries; without LD_PRELOAD where drop_preload (a
    sanitizer runtime preloaded into python is not the server binary's)."""
    e = dict(os.environ if base is None else base)
    e.update(env or {})
    if drop_preload:
        e.pop("LD_PRELOAD", None)
    return e


class Client:
    """HTTP calls to the server at self.host:self.port."""

    def conn(self, timeout=120):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, raw=None, headers=None):
        """(status, headers, parsed JSON or None, raw body) of one call (JSON body)."""
        c = self.conn()
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read()
        c.close()
        try:
            j = json.loads(text)
        except ValueError:
            j = None
        return r.status, dict(r.getheaders()), j, text

    def post(self, path, body):
        return self.request("POST", path, body)

    def call(self, method, path, body=None):
        """(status, the parsed JSON answer, or its raw body where it is not JSON)."""
        st, _, j, text = self.request(method, path, body)
        return st, j if j is not None else text

    def stream(self, path, body, delay=0.0, stop_after=None):
        """The data events of a streamed answer, parsed (the final "[DONE]" as a string)."""
        c = self.conn()
        c.request("POST", path, body=json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            text = r.read()
            c.close()
            return r.status, json.loads(text)
        events = []
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\n")
            if not line:
                continue
            if not line.startswith("data: "):
                events.append(("bad line", line))
                continue
            data = line[6:]
            events.append(data if data == "[DONE]" else json.loads(data))
            if stop_after is not None and len(events) >= stop_after:
                c.sock.shutdown(socket.SHUT_RDWR)
                c.close()
                return 200, events
            if delay:
                time.sleep(delay)
        c.close()
        return 200, events

    def metrics(self):
        st, _, _, text = self.request("GET", "/metrics")
        out = {}
        for line in text.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
                # engine samples carry only a model label: also summed under the bare name
                m = re.fullmatch(r'([a-z_]+)\{model="[^"]*"\}', k)
                if m:
                    out[m.group(1)] = out.get(m.group(1), 0) + float(v)
        return out

    def wait_cancelled(self, before, used):
        """Waits (10 s at most) until a request more than in `before` ended cancelled, nothing
        runs and the gauge `used` is 0; returns (whether it came, the last metrics)."""
        for _ in range(200):
            m = self.metrics()
            if m["og_running"] == 0 and m[used] == 0 and \
                    m["og_requests_cancelled_total"] > before["og_requests_cancelled_total"]:
                return True, m
            time.sleep(0.05)
        return False, m


class Server(Client):
    """`onnx-genai serve` (or `binary`) on a free loopback port: -m PKG for a package folder,
    --models-dir PKG for a folder of them, nothing where pkg is None (args name the model).
    Its environment: env's entries over base_env (os.environ). Raises SystemExit when it
    does not start. check: how stop() reports (None: it does not)."""

    def __init__(self, build, pkg, *args, env=None, wait_ready=True, binary=None,
                 drop_preload=False, base_env=None, check=check):
        self.bin = binary or os.path.join(build, "onnx-genai")
        self.check = check
        self.err = tempfile.TemporaryFile()
        if pkg is None:
            where = []
        elif os.path.exists(os.path.join(pkg, "genai_config.json")):
            where = ["-m", pkg]
        else:
            where = ["--models-dir", pkg]
        self.p = subprocess.Popen([self.bin, "serve", *where, "--port", "0", *args],
                                  stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  env=cli_env(env, drop_preload, base_env))
        line = self.p.stdout.readline()
        m = re.match(r"listening on http://\[?([^\]/]+?)\]?:(\d+)", line)
        if not m:
            self.p.kill()
            raise SystemExit(f"server did not start: {line!r} {self.stderr()}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.ready = None
        if wait_ready:
            self.wait_ready()

    def wait_ready(self):
        line = self.p.stdout.readline()
        if not line.startswith("ready:"):
            self.p.kill()
            raise SystemExit(f"server not ready: {line!r} {self.stderr()}")
        print(line.strip())
        self.ready = line
        # keep reading what it prints (loads, unloads), so that a full pipe never blocks it
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(self.p.stdout), daemon=True).start()

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def stop(self, timeout=120):
        """SIGTERM; with a check, reports that it exits 0 with no sanitizer report. Returns
        its status ("hung" when killed after timeout seconds)."""
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        if self.check is None:
            return rc
        err = self.stderr()
        self.check(rc == 0, f"server exits 0 on SIGTERM (got {rc})")
        if rc != 0 or "ERROR: AddressSanitizer" in err or "runtime error:" in err:
            print(err[-6000:])
            self.check(False, "server stderr")
        return rc


class Process(Client):
    """Any server command that listens on 127.0.0.1:port (free_port()), ready once GET
    /health answers 200 (within `timeout` seconds, else SystemExit with its output)."""

    def __init__(self, cmd, port, env=None, timeout=120):
        self.log = tempfile.TemporaryFile()
        self.host, self.port = "127.0.0.1", port
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        t_end = time.time() + timeout
        while True:
            if self.p.poll() is not None or time.time() > t_end:
                self.log.seek(0)
                raise SystemExit(f"{cmd[0]} did not start: {self.log.read()[-2000:]!r}")
            try:
                if self.call("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)

    def stop(self, timeout=30):
        self.p.terminate()
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()


def run(cases, doc):
    """Runs the case the command line names (BUILD_DIR PACKAGES_DIR CASE), one of cases;
    returns the exit status: 77 when the packages are missing or the case skips, 1 when a
    check failed."""
    if len(sys.argv) != 4 or sys.argv[3] not in cases:
        print(doc)
        return 2
    build, pkgs, case = sys.argv[1:]
    if not os.path.exists(os.path.join(pkgs, "stories260K", "genai_config.json")):
        print(f"SKIP: {pkgs} has no packages (serve_packages did not write them)")
        return SKIP
    rc = cases[case](build, pkgs)
    if rc == SKIP:
        return SKIP
    print(f"{case}: {len(FAILS)} failed")
    return 1 if FAILS else 0
