#!/usr/bin/env python3
"""`pull` and `-m ORG/NAME[:TAG][@REV]` of GGUF repositories against the loopback hub
(hub_server.py): the GGUF file is picked, downloaded into the Hugging Face cache and
converted once into $HF_HUB_CACHE/models--ORG--NAME/onnx-genai/{sha256}; the oracle of
the package is `onnx-genai convert` run on the same file by hand (the same text from
generate), of the cache layout huggingface_hub (scan_cache_dir).

The repository holds a small qwen2 model (tests/convert/gguf_models.py, PyPI gguf's
writer) as tiny-Q4_0.gguf and tiny-Q8_0.gguf, a multimodal projector mmproj-tiny-f16.gguf
(never picked) and a README; another repository holds one GGUF file only, a third a file
split in two parts (refused) beside a whole one.

Usage: test_pull_gguf.py BUILD_DIR. Exit 77 (skip) without PyPI gguf or huggingface_hub."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "convert"))
import test_pull  # noqa: E402
from hub_server import Hub, Repo  # noqa: E402
from test_pull import Env, check  # noqa: E402

REPO = "test-org/tiny-GGUF"
ONE = "test-org/one-GGUF"
SPLIT = "test-org/split-GGUF"
IDS = "1,17,42,99,7"


def repo_dir(home, repo):
    return os.path.join(home, "hub", "models--" + repo.replace("/", "--"))


def generate(env, home, *model_args, **extra):
    return env.run(home, "generate", *model_args, "--ids", IDS, "--max-length", "24", **extra)


def make_ggufs(tmp):
    import gguf_models as gm
    from gguf import GGMLQuantizationType as Q
    tok, _ = gm.bpe_tokenizer()
    s = gm.shape("qwen2", len(tok["tokens"]))
    w = gm.random_weights(s, 3)
    out = {}
    for q in ("Q4_0", "Q8_0"):
        out[q] = os.path.join(tmp, f"tiny-{q}.gguf")
        gm.write_gguf(out[q], s, w, getattr(Q, q), tok)
    return out


def run_cases(env, repo, one, files, local):
    home = env.new_home()
    rd = repo_dir(home, REPO)
    sha = repo.etag("tiny-Q4_0.gguf")
    pkg = os.path.join(rd, "onnx-genai", sha)

    # Two GGUF files and no tag: refused, both named, the projector not.
    env.hub.clear_log()
    r = env.run(home, "pull", REPO)
    check(r.returncode != 0 and "tiny-Q4_0.gguf" in r.stderr and "tiny-Q8_0.gguf" in r.stderr and
          "mmproj" not in r.stderr and f"{REPO}:Q4_K_M" in r.stderr and
          not env.hub.requests("resolve"),
          f"two GGUF files without a tag: refused, naming them ({r.stderr.strip()})")
    r = env.run(home, "pull", f"{REPO}:Q5_K")
    check(r.returncode != 0 and "no GGUF file has the tag 'Q5_K'" in r.stderr and "tiny-Q8_0.gguf" in r.stderr,
          f"a tag no file has: refused, naming the files ({r.stderr.strip()})")

    # The tag (any case) picks one file: downloaded alone, converted into the cache.
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}:q4_0")
    asked = sorted({e["path"].split("/")[-1] for e in env.hub.requests("resolve")})
    check(r.returncode == 0 and r.stdout.strip() == pkg and
          os.path.exists(os.path.join(pkg, "genai_config.json")) and "converting" in r.stderr,
          f"pull {REPO}:q4_0 converts into models--.../onnx-genai/SHA256 and prints it "
          f"({r.stdout.strip()}; {r.stderr.strip()[-300:]})")
    check(asked == ["tiny-Q4_0.gguf"], f"only the tagged file is asked for ({asked})")
    blob = os.path.join(rd, "blobs", sha)
    check(os.path.exists(blob) and open(blob, "rb").read() == repo.files["tiny-Q4_0.gguf"],
          "the GGUF blob is in the cache, named by its sha256")
    check(not [f for f in os.listdir(os.path.join(rd, "onnx-genai")) if f.endswith(".incomplete")],
          "no .incomplete conversion left")
    with open(os.path.join(pkg, "model.onnx"), "rb") as f, open(os.path.join(local, "model.onnx"), "rb") as g:
        check(f.read() == g.read(), "the converted graph equals `convert`'s of the same file")
    stamp = os.stat(os.path.join(pkg, "model.onnx.data"))

    # Generation from the cached package: the local conversion's text, no request.
    want = generate(env, home, local)
    env.hub.clear_log()
    g = generate(env, home, "-m", f"{REPO}:Q4_0")
    check(want.returncode == 0 and g.returncode == 0 and g.stdout == want.stdout and
          len(want.stdout) > 0 and not env.hub.requests() and "converting" not in g.stderr,
          f"generate -m {REPO}:Q4_0 gives the converted file's text without a request or a "
          f"conversion ({g.stdout[:60]!r}; {g.stderr.strip()[-200:]})")

    # A second pull: the file list only, nothing downloaded or converted.
    env.hub.clear_log()
    r = env.run(home, "pull", f"{REPO}:Q4_0")
    kinds = [e["kind"] for e in env.hub.requests()]
    again = os.stat(os.path.join(pkg, "model.onnx.data"))
    check(r.returncode == 0 and kinds == ["api"] and "converting" not in r.stderr and
          r.stdout.strip() == pkg and (again.st_ino, again.st_mtime_ns) == (stamp.st_ino, stamp.st_mtime_ns),
          f"a second pull asks for the list only and converts nothing ({kinds}; {r.stderr.strip()[-200:]})")

    # A package an older converter wrote (its stamp says another format) is converted again.
    with open(os.path.join(pkg, ".onnx-genai-convert"), "w") as f:
        f.write("0\n")
    g = generate(env, home, "-m", f"{REPO}:Q4_0")
    with open(os.path.join(pkg, ".onnx-genai-convert")) as f:
        stamp_now = f.read().strip()
    check(g.returncode == 0 and g.stdout == want.stdout and "converting" in g.stderr and stamp_now != "0",
          f"a package of another converter format is converted again ({stamp_now}; {g.stderr.strip()[-200:]})")

    # Revisions: @COMMIT and --revision COMMIT name the same snapshot.
    for args in (["-m", f"{REPO}:Q4_0@{repo.commit}"], ["-m", f"{REPO}:Q4_0", "--revision", repo.commit]):
        g = generate(env, home, *args)
        check(g.returncode == 0 and g.stdout == want.stdout and "converting" not in g.stderr,
              f"generate {' '.join(args)}: the same package ({g.stderr.strip()[-200:]})")
    g = generate(env, home, "-m", f"{REPO}:Q4_0@v9")
    check(g.returncode != 0 and "revision 'v9' not found" in g.stderr,
          f"an unknown @REV: named ({g.stderr.strip()[-200:]})")
    r = env.run(home, "pull", f"{REPO}:Q4_0@{repo.commit}", "--revision", "main")
    check(r.returncode != 0 and "differ" in r.stderr, f"@REV and another --revision: refused ({r.stderr.strip()})")
    g = generate(env, home, local, "--revision", "main")
    check(g.returncode != 0 and "needs a hub repository" in g.stderr,
          f"--revision with a folder: refused ({g.stderr.strip()})")

    # Offline: the cached conversion.
    env.hub.clear_log()
    g = generate(env, home, "-m", f"{REPO}:Q4_0", HF_HUB_OFFLINE="1")
    r = env.run(home, "pull", f"{REPO}:Q4_0", HF_HUB_OFFLINE="1")
    check(g.returncode == 0 and g.stdout == want.stdout and r.stdout.strip() == pkg and
          not env.hub.requests(), f"HF_HUB_OFFLINE=1: the cached package ({g.stderr.strip()[-200:]})")
    g = generate(env, home, "-m", f"{REPO}:Q8_0", HF_HUB_OFFLINE="1")
    check(g.returncode != 0 and "HF_HUB_OFFLINE" in g.stderr,
          f"HF_HUB_OFFLINE=1 and a tag not cached: says so ({g.stderr.strip()[-200:]})")

    # --no-convert: the file only; --file names it.
    h2 = env.new_home()
    r = env.run(h2, "pull", REPO, "--file", "tiny-Q8_0.gguf", "--no-convert")
    path = os.path.join(repo_dir(h2, REPO), "snapshots", repo.commit, "tiny-Q8_0.gguf")
    check(r.returncode == 0 and r.stdout.strip() == path and
          not os.path.exists(os.path.join(repo_dir(h2, REPO), "onnx-genai")),
          f"--file F --no-convert downloads F and prints its path ({r.stdout.strip()}; {r.stderr.strip()[-200:]})")
    env.hub.clear_log()
    g = generate(env, h2, "-m", f"{REPO}/tiny-Q8_0.gguf")
    q8 = os.path.join(repo_dir(h2, REPO), "onnx-genai", repo.etag("tiny-Q8_0.gguf"))
    check(g.returncode == 0 and "converting" in g.stderr and not env.hub.requests() and
          os.path.exists(os.path.join(q8, "genai_config.json")),
          f"-m ORG/NAME/FILE.gguf of the cache converts that file, asking nothing ({g.stderr.strip()[-200:]})")

    # A repository with one GGUF file: -m ORG/NAME pulls, converts and generates.
    h3 = env.new_home()
    g = generate(env, h3, "-m", ONE)
    check(g.returncode == 0 and g.stdout == want.stdout and "pulling it" in g.stderr and "converting" in g.stderr,
          f"generate -m {ONE} (one GGUF file) pulls, converts and generates ({g.stderr.strip()[-300:]})")
    g = generate(env, h3, "-m", ONE)
    check(g.returncode == 0 and g.stdout == want.stdout and "converting" not in g.stderr,
          f"and the next run converts nothing ({g.stderr.strip()[-200:]})")

    # A file split in parts (llama-gguf-split): refused by name, nothing downloaded; its
    # parts count as one file beside another.
    h4 = env.new_home()
    env.hub.clear_log()
    r = env.run(h4, "pull", f"{SPLIT}:Q4_0")
    check(r.returncode != 0 and "big-Q4_0-00001-of-00002.gguf is one part of a split GGUF file" in r.stderr
          and "llama-gguf-split --merge" in r.stderr and not env.hub.requests("resolve"),
          f"a split file: refused naming its first part ({r.stderr.strip()})")
    r = env.run(h4, "pull", SPLIT)
    check(r.returncode != 0 and "holds 2 GGUF files" in r.stderr and "00002-of" not in r.stderr,
          f"its parts count as one file ({r.stderr.strip()})")
    r = env.run(h4, "pull", f"{SPLIT}:Q8_0")
    check(r.returncode == 0 and r.stdout.strip().endswith(sha), f"the other file comes ({r.stderr.strip()[-200:]})")

    # huggingface_hub reads the cache with our folder beside its own.
    code = ("import json\nfrom huggingface_hub import scan_cache_dir\ni = scan_cache_dir()\n"
            "print(json.dumps([[r.repo_id for r in i.repos], [str(w) for w in i.warnings]]))")
    r = env.python(home, code)
    check(r.returncode == 0 and r.stdout.strip() == f'[["{REPO}"], []]',
          f"scan_cache_dir reads the cache without warnings ({r.stdout.strip()} {r.stderr.strip()[-200:]})")


def main():
    build = sys.argv[1]
    for mod, why in (("gguf", "PyPI gguf"), ("huggingface_hub", "huggingface_hub")):
        try:
            __import__(mod)
        except ImportError:
            print(f"SKIP: {why} is not installed (tools/requirements.txt)")
            return 77
    with tempfile.TemporaryDirectory(prefix="og-hub-gguf-") as tmp:
        files = make_ggufs(tmp)
        local = os.path.join(tmp, "local-q4_0")
        r = subprocess.run([os.path.join(build, "onnx-genai"), "convert", files["Q4_0"], local, "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL convert of the test file: {r.stderr}")
            return 1
        data = {os.path.basename(p): open(p, "rb").read() for p in files.values()}
        hub = Hub()
        repo = Repo({**data, "README.md": b"# tiny GGUF\n", "mmproj-tiny-f16.gguf": b"GGUF" + b"\0" * 60},
                    lfs=lambda f: f.endswith(".gguf"))
        one = Repo({"tiny-Q4_0.gguf": data["tiny-Q4_0.gguf"]}, lfs=lambda f: f.endswith(".gguf"))
        split = Repo({"big-Q4_0-00001-of-00002.gguf": b"GGUF" + b"\1" * 60,
                      "big-Q4_0-00002-of-00002.gguf": b"GGUF" + b"\2" * 60,
                      # (tiny-Q4_0.gguf's bytes: the same blob, so the same package)
                      "tiny-Q8_0.gguf": data["tiny-Q4_0.gguf"]}, lfs=lambda f: f.endswith(".gguf"))
        hub.repos[REPO] = repo
        hub.repos[ONE] = one
        hub.repos[SPLIT] = split
        env = Env(build, hub, tmp)
        try:
            run_cases(env, repo, one, files, local)
        finally:
            hub.close()
            shutil.rmtree(local, ignore_errors=True)
    return test_pull.report()


if __name__ == "__main__":
    sys.exit(main())
