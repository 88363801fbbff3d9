#!/usr/bin/env python3
"""`onnx-genai pull` and `-m ORG/NAME[/SUBFOLDER]` against a hub on loopback
(hub_server.py), with huggingface_hub (PyPI) as the oracle of the cache layout.

The repository holds stories260K (made from the shared llama2.c checkpoint) under
cpu/stories/ beside a README and another folder. Cases:

  full      pull ORG/NAME/cpu/stories into an empty cache: only that folder's files are
            asked for; each blob equals the served bytes and is named by its sha256 (LFS,
            hashlib) or git sha1; snapshot links relative; refs/main = the commit; the
            printed folder is the snapshot's; `generate -m ORG/NAME/cpu/stories` gives the
            text `generate` gives on the package folder it came from
  again     a second pull asks for the file list only; with HF_HUB_OFFLINE=1 nothing
  resume    a download cut halfway is resumed in the same pull with Range from where it
            stopped; one cut every time fails with the bytes kept in .incomplete, and the
            next pull asks only for the rest (no byte served twice)
  mismatch  a body whose sha256 is not its etag: refused, nothing left in the cache; a
            later good pull works
  hashes    LFS files of 0 to 1000 bytes (every SHA-256 padding case) pass the check,
            also where the redirect has no X-Linked-Size
  file      ORG/NAME/FILE pulls that one file (a GGUF for `convert`)
  bar       a progress bar on a terminal (a pty), none otherwise
  errors    404 (unknown repository, unknown folder), 401 (gated: HF_TOKEN named; with the
            token it works, and the token never goes to the CDN host), no server (the
            offline message), HF_HUB_OFFLINE with an empty cache
  shared    our cache read by huggingface_hub (snapshot_download and try_to_load_from_cache
            with local_files_only, scan_cache_dir without warnings), and a cache
            huggingface_hub filled (hf_hub_download) used by `generate -m` and `pull`
            without downloading anything
  auto      `generate -m REPO` on an empty cache pulls first; `generate REPO` and `show
            REPO` take it without -m too; `serve -m REPO` answers to the repository's name

Usage: test_pull.py BUILD_DIR SHARED_DIR [CASE...]. Exit 77 (skip) without the shared
checkpoint or huggingface_hub."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "serve")]
from hub_server import Hub, Repo  # noqa: E402
import server_harness as harness  # noqa: E402 (the server harness the serve tests share)

REPO = "test-org/tiny-stories-onnx"
SUB = "cpu/stories"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


class Env:
    def __init__(self, build, hub, tmp):
        self.cli = os.path.join(build, "onnx-genai")
        self.hub = hub
        self.tmp = tmp
        self.n = 0

    def new_home(self):
        self.n += 1
        home = os.path.join(self.tmp, f"home{self.n}")
        os.makedirs(home)
        return home

    def env(self, home, **extra):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
        e.update({"HF_ENDPOINT": self.hub.endpoint, "HF_HOME": home, "HF_HUB_DISABLE_TELEMETRY": "1"})
        e.update(extra)
        return e

    def run(self, home, *args, timeout=120, **extra):
        r = subprocess.run([self.cli, *args], env=self.env(home, **extra), capture_output=True,
                           text=True, timeout=timeout)
        # Under the sanitizer suite a failing command must fail for its own reason only.
        if "Sanitizer" in r.stderr:
            check(False, f"{' '.join(args)}: sanitizer report: {r.stderr[-2000:]}")
        return r

    def python(self, home, code, **extra):
        return subprocess.run([sys.executable, "-c", code], env=self.env(home, **extra),
                              capture_output=True, text=True, timeout=120)


def repo_dir(home):
    return os.path.join(home, "hub", "models--" + REPO.replace("/", "--"))


def generate(env, home, model, **extra):
    r = env.run(home, "generate", "-m", model, "-p", "Once upon a time", "--max-length", "40", **extra)
    return r


def case_full(env, repo, pkg):
    home = env.new_home()
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    check(r.returncode == 0, f"pull {REPO}/{SUB} succeeds ({r.stderr.strip()[-300:]})")
    asked = {e["path"].split("/resolve/main/")[-1].split("/resolve/" + repo.commit + "/")[-1]
             for e in env.hub.requests("resolve")}
    want = {f for f in repo.files if f.startswith(SUB + "/")}
    check(asked == want, f"only the folder's files are asked for ({sorted(asked)})")
    rd = repo_dir(home)
    snap = os.path.join(rd, "snapshots", repo.commit)
    check(r.stdout.strip() == os.path.join(snap, SUB), f"prints the snapshot folder ({r.stdout.strip()})")
    with open(os.path.join(rd, "refs", "main")) as f:
        check(f.read() == repo.commit, "refs/main holds the commit")
    for name in want:
        link = os.path.join(snap, name)
        target = os.readlink(link) if os.path.islink(link) else None
        blob = os.path.join(rd, "blobs", repo.etag(name))
        check(target is not None and not os.path.isabs(target) and
              os.path.realpath(link) == os.path.realpath(blob),
              f"{name} links relatively to blobs/{repo.etag(name)[:12]}... ({target})")
        with open(blob, "rb") as f:
            data = f.read()
        check(data == repo.files[name], f"blob of {name} holds the served bytes")
        if name in repo.lfs:
            check(hashlib.sha256(data).hexdigest() == repo.etag(name), f"{name}'s blob is named by its sha256")
    leftovers = [f for f in os.listdir(os.path.join(rd, "blobs")) if f.endswith(".incomplete")]
    check(not leftovers, f"no .incomplete left ({leftovers})")
    ours = generate(env, home, f"{REPO}/{SUB}")
    local = generate(env, home, pkg)
    check(ours.returncode == 0 and local.returncode == 0 and ours.stdout == local.stdout and
          len(ours.stdout) > 20,
          f"generate -m {REPO}/{SUB} gives the local package's text ({ours.stdout[:60]!r} / "
          f"{ours.stderr.strip()[-200:]})")
    return home


def case_again(env, repo, pkg, home=None):
    home = home or case_full(env, repo, pkg)
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    kinds = [e["kind"] for e in env.hub.requests()]
    check(r.returncode == 0 and kinds == ["api"],
          f"a second pull asks for the file list only ({kinds}; {r.stderr.strip()[-200:]})")
    check("0 downloaded" in r.stderr, f"and says it downloaded nothing ({r.stderr.strip()})")
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}/{SUB}", HF_HUB_OFFLINE="1")
    g = generate(env, home, f"{REPO}/{SUB}", HF_HUB_OFFLINE="1")
    check(r.returncode == 0 and r.stdout.strip().endswith(SUB) and g.returncode == 0 and
          not env.hub.requests(),
          f"HF_HUB_OFFLINE=1: pull and generate -m use the cache, no request "
          f"({len(env.hub.requests())}; {r.stderr.strip()[-200:]} {g.stderr.strip()[-200:]})")


def case_resume(env, repo, pkg):
    big = f"{SUB}/model.onnx.data"
    size = len(repo.files[big])
    home = env.new_home()
    env.hub.clear_log()
    env.hub.cuts[big] = 1
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    gets = [e for e in env.hub.requests("cdn") if e["path"].endswith(repo.etag(big))]
    check(r.returncode == 0 and len(gets) == 2 and gets[0]["range"] is None and
          gets[1]["range"] == f"bytes={gets[0]['sent']}-",
          f"a cut download resumes in the same pull from byte {gets[0]['sent'] if gets else '?'} "
          f"({[g['range'] for g in gets]}; {r.stderr.strip()[-200:]})")
    with open(os.path.join(repo_dir(home), "blobs", repo.etag(big)), "rb") as f:
        check(f.read() == repo.files[big], "the resumed blob equals the served bytes")

    home = env.new_home()
    env.hub.clear_log()
    env.hub.cuts[big] = 100
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    env.hub.cuts[big] = 0
    part = os.path.join(repo_dir(home), "blobs", repo.etag(big) + ".incomplete")
    kept = os.path.getsize(part) if os.path.exists(part) else -1
    check(r.returncode != 0 and "run pull again to resume" in r.stderr and 0 < kept < size,
          f"cut at every try: fails, keeps {kept} of {size} bytes ({r.stderr.strip()[-250:]})")
    check(not os.path.exists(os.path.join(repo_dir(home), "snapshots", repo.commit, SUB,
                                          "genai_config.json")),
          "genai_config.json (fetched last) is not in the unfinished snapshot")
    served_before = sum(e["sent"] for e in env.hub.requests("cdn") if e["path"].endswith(repo.etag(big)))
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    gets = [e for e in env.hub.requests("cdn") if e["path"].endswith(repo.etag(big))]
    check(r.returncode == 0 and len(gets) == 1 and gets[0]["range"] == f"bytes={kept}-",
          f"the next pull asks for bytes {kept}- only ({[g['range'] for g in gets]}; "
          f"{r.stderr.strip()[-200:]})")
    check(served_before + sum(g["sent"] for g in gets) == size,
          f"no byte served twice ({served_before} + {sum(g['sent'] for g in gets)} = {size})")
    with open(os.path.join(repo_dir(home), "blobs", repo.etag(big)), "rb") as f:
        check(f.read() == repo.files[big], "the blob finished by the second pull equals the served bytes")


def case_mismatch(env, repo, pkg):
    big = f"{SUB}/model.onnx.data"
    home = env.new_home()
    env.hub.wrong.add(big)
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    env.hub.wrong.discard(big)
    blobs = os.path.join(repo_dir(home), "blobs")
    left = [f for f in os.listdir(blobs) if f.startswith(repo.etag(big))] if os.path.isdir(blobs) else []
    check(r.returncode != 0 and "checksum mismatch" in r.stderr and repo.etag(big) in r.stderr and
          "model.onnx.data" in r.stderr,
          f"a wrong body is refused naming the file and the sha256 ({r.stderr.strip()[-300:]})")
    check(not left and not os.path.lexists(os.path.join(repo_dir(home), "snapshots", repo.commit, big)),
          f"nothing of it stays in the cache ({left})")
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    check(r.returncode == 0, f"a later good pull works ({r.stderr.strip()[-200:]})")


def case_hashes(env, repo, pkg):
    home = env.new_home()
    # half of them without X-Linked-Size: the redirect's own Content-Length is not the size
    env.hub.no_linked_size = {f for f in repo.files if f.startswith("edge/f1")}
    r = env.run(home, "pull", f"{REPO}/edge")
    env.hub.no_linked_size = set()
    blobs = os.path.join(repo_dir(home), "blobs")
    names = sorted(os.listdir(blobs)) if os.path.isdir(blobs) else []
    want = sorted(repo.etag(f) for f in repo.files if f.startswith("edge/"))
    check(r.returncode == 0 and names == want,
          f"files of 0 to 1000 bytes (every padding case of SHA-256) pass the sha256 check "
          f"({len(names)} of {len(want)}; {r.stderr.strip()[-200:]})")


def case_file(env, repo, pkg):
    home = env.new_home()
    env.hub.clear_log()
    one = "edge/f55.onnx"
    r = env.run(home, "pull", f"{REPO}/{one}")
    asked = [e["path"] for e in env.hub.requests("resolve")]
    path = os.path.join(repo_dir(home), "snapshots", repo.commit, one)
    with open(path, "rb") as f:
        data = f.read()
    check(r.returncode == 0 and r.stdout.strip() == path and data == repo.files[one] and
          len(asked) == 1 and asked[0].endswith(one) and "note:" not in r.stderr,
          f"ORG/NAME/FILE pulls that one file and prints its path ({asked}; {r.stderr.strip()[-200:]})")


def case_bar(env, repo, pkg):
    import pty
    import select
    home = env.new_home()
    master, slave = pty.openpty()
    p = subprocess.Popen([env.cli, "pull", f"{REPO}/{SUB}"], env=env.env(home), stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    text = out.decode(errors="replace")
    check(p.returncode == 0 and "model.onnx.data" in text and "100%" in text and "\r" in text and
          "[" + "#" * 30 + "]" in text,
          f"on a terminal each download draws a bar that ends full ({text[-300:]!r})")
    r = env.run(env.new_home(), "pull", f"{REPO}/{SUB}")
    check("\r" not in r.stderr and "%" not in r.stderr,
          f"not on a terminal: no bar, one summary line ({r.stderr.strip()!r})")


def case_errors(env, repo, pkg):
    home = env.new_home()
    r = env.run(home, "pull", "test-org/no-such-model")
    check(r.returncode != 0 and "repository or file not found" in r.stderr and
          "test-org/no-such-model" in r.stderr, f"404: names the repository ({r.stderr.strip()})")
    r = env.run(home, "pull", f"{REPO}/gpu/none")
    check(r.returncode != 0 and "gpu/none" in r.stderr and SUB in r.stderr,
          f"an unknown folder: named, with the folders that hold packages ({r.stderr.strip()})")
    r = env.run(home, "pull", f"{REPO}/{SUB}", "--revision", "v9")
    check(r.returncode != 0 and "revision 'v9' not found" in r.stderr,
          f"an unknown revision: named ({r.stderr.strip()})")
    home_c = env.new_home()
    r = env.run(home_c, "pull", f"{REPO}/{SUB}", "--revision", repo.commit)
    check(r.returncode == 0 and
          r.stdout.strip() == os.path.join(repo_dir(home_c), "snapshots", repo.commit, SUB) and
          not os.path.exists(os.path.join(repo_dir(home_c), "refs")),
          f"--revision COMMIT: that snapshot, no ref written (as huggingface_hub) ({r.stderr.strip()[-200:]})")
    r = env.run(home, "pull", "test-org/gated-stories")
    check(r.returncode != 0 and "HF_TOKEN" in r.stderr and "gated" in r.stderr and "401" in r.stderr,
          f"401: says gated or private and to set HF_TOKEN ({r.stderr.strip()})")
    env.hub.clear_log()
    r = env.run(home, "pull", f"test-org/gated-stories/{SUB}", HF_TOKEN="hf_loopback_token")
    cdn_auth = [e["auth"] for e in env.hub.requests("cdn")]
    hub_auth = {e["auth"] for e in env.hub.requests() if e["kind"] != "cdn"}
    check(r.returncode == 0 and hub_auth == {"Bearer hf_loopback_token"} and cdn_auth and
          not any(cdn_auth),
          f"with HF_TOKEN the gated repository comes, the token to the hub only "
          f"({hub_auth}, CDN {cdn_auth}; {r.stderr.strip()[-200:]})")
    home2 = env.new_home()
    with open(os.path.join(home2, "token"), "w") as f:
        f.write("hf_loopback_token\n")
    r = env.run(home2, "pull", f"test-org/gated-stories/{SUB}")
    check(r.returncode == 0, f"the token `hf auth login` saves in HF_HOME/token is used ({r.stderr.strip()[-200:]})")
    r = env.run(home, "pull", f"{REPO}/{SUB}", HF_ENDPOINT="http://127.0.0.1:9")
    check(r.returncode != 0 and "cannot reach the hub" in r.stderr and "HF_HUB_OFFLINE" in r.stderr,
          f"no server: the offline message ({r.stderr.strip()})")
    r = env.run(env.new_home(), "pull", f"{REPO}/{SUB}", HF_HUB_OFFLINE="1")
    check(r.returncode != 0 and "HF_HUB_OFFLINE" in r.stderr and "not in the cache" in r.stderr,
          f"HF_HUB_OFFLINE with an empty cache: says so ({r.stderr.strip()})")
    g = generate(env, env.new_home(), f"{REPO}/{SUB}", HF_HUB_OFFLINE="1")
    check(g.returncode != 0 and "onnx-genai pull" in g.stderr,
          f"generate -m offline and not cached: says to pull ({g.stderr.strip()})")


def case_shared(env, repo, pkg):
    home = case_full(env, repo, pkg)
    code = f"""
import json, os, warnings
from huggingface_hub import snapshot_download, try_to_load_from_cache, scan_cache_dir
d = snapshot_download({REPO!r}, local_files_only=True)
f = try_to_load_from_cache({REPO!r}, {SUB + '/genai_config.json'!r})
info = scan_cache_dir()
repos = [(r.repo_id, r.size_on_disk, sorted(x.file_name for rv in r.revisions for x in rv.files),
          sorted(rr for rv in r.revisions for rr in rv.refs)) for r in info.repos]
print(json.dumps({{"dir": d, "file": f, "repos": repos, "warnings": [str(w) for w in info.warnings]}}))
"""
    r = env.python(home, code)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        out = {}
    snap = os.path.join(repo_dir(home), "snapshots", repo.commit)
    check(out.get("dir") == snap, f"huggingface_hub.snapshot_download(local_files_only) finds our "
          f"snapshot ({out.get('dir')}; {r.stderr.strip()[-300:]})")
    check(out.get("file") == os.path.join(snap, SUB, "genai_config.json"),
          f"try_to_load_from_cache finds genai_config.json ({out.get('file')})")
    want_size = sum(len(repo.files[f]) for f in repo.files if f.startswith(SUB + "/"))
    want_files = sorted(os.path.basename(f) for f in repo.files if f.startswith(SUB + "/"))
    check(out.get("repos") == [[REPO, want_size, want_files, ["main"]]] and not out.get("warnings"),
          f"scan_cache_dir reads the layout without warnings ({out.get('repos')}, {out.get('warnings')})")

    # The other way: huggingface_hub fills a cache, we use it.
    home = env.new_home()
    files = sorted(f for f in repo.files if f.startswith(SUB + "/"))
    code = f"""
from huggingface_hub import hf_hub_download
for f in {files!r}:
    hf_hub_download({REPO!r}, f)
"""
    r = env.python(home, code)
    check(r.returncode == 0, f"huggingface_hub downloads the package from the loopback hub ({r.stderr.strip()[-300:]})")
    env.hub.clear_log()
    g = generate(env, home, f"{REPO}/{SUB}")
    check(g.returncode == 0 and not env.hub.requests() and len(g.stdout) > 20,
          f"generate -m uses huggingface_hub's cache without a request ({len(env.hub.requests())}; "
          f"{g.stderr.strip()[-200:]})")
    r = env.run(home, "pull", f"{REPO}/{SUB}")
    kinds = [e["kind"] for e in env.hub.requests()]
    check(r.returncode == 0 and kinds == ["api"],
          f"pull after huggingface_hub downloads nothing ({kinds})")


def case_auto(env, repo, pkg):
    home = env.new_home()
    g = generate(env, home, f"{REPO}/{SUB}")
    local = generate(env, home, pkg)
    check(g.returncode == 0 and "pulling it" in g.stderr and g.stdout == local.stdout,
          f"generate -m on an empty cache pulls, then generates the local package's text "
          f"({g.stderr.strip()[-200:]})")
    pos = env.run(home, "generate", f"{REPO}/{SUB}", "-p", "Once upon a time", "--max-length", "40")
    show = env.run(home, "show", f"{REPO}/{SUB}")
    snap = os.path.join(repo_dir(home), "snapshots", repo.commit, SUB)
    check(pos.returncode == 0 and pos.stdout == local.stdout and show.returncode == 0 and
          f"package:     {snap}" in show.stdout,
          f"the repository given first without -m (generate, show) is the snapshot folder "
          f"({show.stdout[:120]!r}; {pos.stderr.strip()[-200:]} {show.stderr.strip()[-200:]})")
    try:
        s = harness.Server(None, None, "-m", f"{REPO}/{SUB}", binary=env.cli, base_env=env.env(home),
                           check=None)
    except SystemExit as e:
        check(False, f"serve -m REPO starts ({e})")
        return
    try:
        models = s.call("GET", "/v1/models")[1]
        ids = [m.get("id") for m in (models if isinstance(models, dict) else {}).get("data", [])]
        check(ids == [f"{REPO}/{SUB}"], f"serve -m REPO answers to the repository's name ({ids})")
    finally:
        s.stop(timeout=30)


CASES = {"full": case_full, "again": case_again, "resume": case_resume, "mismatch": case_mismatch,
         "hashes": case_hashes, "file": case_file, "bar": case_bar,
         "errors": case_errors, "shared": case_shared, "auto": case_auto}


def main():
    build, shared = sys.argv[1], sys.argv[2]
    cases = sys.argv[3:] or list(CASES)
    ckpt = os.path.join(shared, "models", "llama2c")
    if not os.path.exists(os.path.join(ckpt, "stories260K.bin")):
        print(f"SKIP: {ckpt}/stories260K.bin is missing (the shared models sit beside the checkout)")
        return 77
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        print("SKIP: huggingface_hub is not installed (tools/requirements.txt)")
        return 77
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix="og-hub-") as tmp:
        pkg = os.path.join(tmp, "stories260K")
        subprocess.run([sys.executable, os.path.join(root, "tools", "make_model.py"), "--from-llama2c",
                        os.path.join(ckpt, "stories260K.bin"), "--tokenizer", os.path.join(ckpt, "tok512.bin"),
                        "--dtype", "fp32", "--out", pkg], check=True, capture_output=True)
        files = {f"{SUB}/{f}": open(os.path.join(pkg, f), "rb").read() for f in os.listdir(pkg)}
        other = {"README.md": b"# tiny stories\n", "cpu/other/genai_config.json": b"{}\n",
                 "cpu/other/model.onnx": b"\x08\x07" * 5000}
        # LFS files whose lengths cover SHA-256's padding cases (the last block's fill
        # below, at and past 55 bytes; whole blocks; empty).
        for n in (0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 1000):
            other[f"edge/f{n}.onnx"] = bytes((i * 7 + n) & 255 for i in range(n))
        hub = Hub()
        repo = Repo({**files, **other})
        hub.repos[REPO] = repo
        hub.repos["test-org/gated-stories"] = Repo(files, token="hf_loopback_token")
        env = Env(build, hub, tmp)
        try:
            for name in cases:
                print(f"--- {name}", flush=True)
                CASES[name](env, repo, pkg)
        finally:
            hub.close()
    return report()


def report():
    """The exit status: 1 after printing how many checks failed."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
