"""A Hugging Face hub on loopback for the pull tests: the routes and headers the hub
serves (and huggingface_hub reads), with faults on demand.

  GET  /api/models/{repo}/revision/{rev}   {"id", "sha": commit, "siblings": [{"rfilename"}]}
  HEAD/GET /{repo}/resolve/{rev}/{file}    X-Repo-Commit; a git file: 200, ETag = its git
                                           blob sha1; an LFS file: 302 to the "CDN" (another
                                           host name, http://localhost:PORT/cdn/...) with
                                           X-Linked-Etag = its sha256 and X-Linked-Size
  GET  /cdn/{sha256}                       the bytes; Range: bytes=N- answered with 206

Faults: cuts[file] = n cuts the next n downloads of a file halfway through the body (the
connection closes); wrong.add(file) serves it with one byte changed; no_linked_size.add(file)
leaves X-Linked-Size out of its redirect; a repository with a
token answers 401 (X-Error-Code: GatedRepo) without "Authorization: Bearer TOKEN"; an
unknown repository 404 (RepoNotFound). Every request is logged (method, path, headers)."""
import hashlib
import http.server
import json
import threading
import urllib.parse


class Repo:
    def __init__(self, files, lfs=lambda f: f.endswith((".onnx", ".data", "tokenizer.json")),
                 token=None, commit=None):
        self.files = dict(files)  # path -> bytes
        self.lfs = {f for f in self.files if lfs(f)}
        self.token = token
        h = hashlib.sha1()
        for f in sorted(self.files):
            h.update(f.encode() + b"\0" + self.files[f])
        self.commit = commit or h.hexdigest()

    def etag(self, f):
        data = self.files[f]
        if f in self.lfs:
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Hub:
    def __init__(self):
        self.repos = {}
        self.cuts = {}
        self.wrong = set()
        self.no_linked_size = set()
        self.log = []
        self.lock = threading.Lock()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                hub._answer(self, head=True)

            def do_GET(self):
                hub._answer(self, head=False)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def requests(self, kind=None):
        """The log, or its entries of one kind: 'api', 'resolve', 'cdn'."""
        with self.lock:
            return [r for r in self.log if kind is None or r["kind"] == kind]

    def clear_log(self):
        with self.lock:
            self.log.clear()

    # --- answers ---

    def _send(self, h, status, headers=None, body=b"", head=False):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _error(self, h, status, code, head):
        body = json.dumps({"error": code}).encode()
        self._send(h, status, {"X-Error-Code": code, "Content-Type": "application/json"}, body, head)

    def _repo(self, h, name, head):
        repo = self.repos.get(name)
        if repo is None:
            self._error(h, 404, "RepoNotFound", head)
            return None
        if repo.token and h.headers.get("Authorization") != f"Bearer {repo.token}":
            self._error(h, 401, "GatedRepo", head)
            return None
        return repo

    def _answer(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        kind = "api" if path.startswith("/api/") else "cdn" if path.startswith("/cdn/") else "resolve"
        entry = {"method": h.command, "path": path, "kind": kind, "range": h.headers.get("Range"),
                 "auth": h.headers.get("Authorization"), "host": h.headers.get("Host"), "sent": 0}
        with self.lock:
            self.log.append(entry)
        parts = path.strip("/").split("/")
        if kind == "api" and len(parts) >= 6 and parts[1] == "models" and parts[4] == "revision":
            repo = self._repo(h, parts[2] + "/" + parts[3], head)
            if repo is None:
                return
            rev = "/".join(parts[5:])
            if rev not in ("main", repo.commit):
                return self._error(h, 404, "RevisionNotFound", head)
            body = json.dumps({"id": parts[2] + "/" + parts[3], "sha": repo.commit,
                               "siblings": [{"rfilename": f} for f in sorted(repo.files)]}).encode()
            return self._send(h, 200, {"Content-Type": "application/json"}, body, head)
        if kind == "resolve" and len(parts) >= 5 and parts[2] == "resolve":
            repo = self._repo(h, parts[0] + "/" + parts[1], head)
            if repo is None:
                return
            rev, f = parts[3], "/".join(parts[4:])
            if rev not in ("main", repo.commit):
                return self._error(h, 404, "RevisionNotFound", head)
            if f not in repo.files:
                return self._error(h, 404, "EntryNotFound", head)
            common = {"X-Repo-Commit": repo.commit}
            if f in repo.lfs:
                sha = repo.etag(f)
                if f not in self.no_linked_size:
                    common["X-Linked-Size"] = str(len(repo.files[f]))
                common.update({"X-Linked-Etag": f'"{sha}"',
                               "ETag": '"0123456789abcdef0123456789abcdef01234567"',
                               "Location": f"http://localhost:{self.port}/cdn/{sha}?f={urllib.parse.quote(f)}"})
                return self._send(h, 302, common, b"", head)
            common["ETag"] = f'"{repo.etag(f)}"'
            return self._send_bytes(h, entry, f, repo.files[f], common, head)
        if kind == "cdn":
            sha = parts[1] if len(parts) == 2 else ""
            for repo in self.repos.values():
                for f in repo.lfs:
                    if repo.etag(f) == sha:
                        return self._send_bytes(h, entry, f, repo.files[f], {"ETag": f'"{sha}"'}, head)
        self._error(h, 404, "EntryNotFound", head)

    def _send_bytes(self, h, entry, f, data, headers, head):
        if f in self.wrong:
            data = bytes([data[0] ^ 1]) + data[1:]
        status, start = 200, 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self._send(h, 416, {"Content-Range": f"bytes */{len(data)}"}, b"", head)
            status = 206
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
        body = data[start:]
        if head:
            return self._send(h, status, headers, body, True)
        cut = False
        with self.lock:
            if self.cuts.get(f, 0) > 0:
                self.cuts[f] -= 1
                cut = True
        if not cut:
            entry["sent"] = len(body)
            return self._send(h, status, headers, body)
        # Promise the whole body, send half, hang up.
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        half = max(1, len(body) // 2)
        h.wfile.write(body[:half])
        h.wfile.flush()
        entry["sent"] = half
        h.close_connection = True
