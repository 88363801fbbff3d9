#!/usr/bin/env python3
"""`onnx-genai serve`'s POST /v1/embeddings over real HTTP, against onnxruntime:

  embeddings  packages tools/make_model.py writes here with a hidden-states output:
              - qwen3, the builder's exclude_lm_head (no logits: an embeddings-only package,
                which answers chat with a 400 and /health "mode": "embeddings"), with
                sentence-transformers' modules.json (mean pooling, a Normalize module);
              - llama, include_hidden_states (logits too: it still completes), pooled by
                serve --pooling last and then cls --embeddings-normalize no;
              - qwen2 without a KV cache (no past/present inputs), 1_Pooling cls and no
                Normalize module (vectors not unit length).
              Each vector equals numpy's pooling (and L2 normalising) of onnxruntime's
              hidden states of the same graph on the same ids (an empty cache) within 1e-5
              absolute: through the openai client (its default base64 and "float"), for a
              string, a list of strings, a list of ids and a list of id lists; the ids of a
              text are HF tokenizers' of the package's tokenizer.json; usage.prompt_tokens is
              their count. `dimensions`: refused below the width (400 naming it) unless
              --matryoshka, then the leading values normalised again. Refusals (400 naming
              the field): an empty input, ids beyond the vocabulary, a mixed list, an input
              past the context (context_length_exceeded), a bad encoding_format, an unknown
              field. --log-format's lines carry the model and the tokens read. Inputs of
              three lengths in one request (two packages): each vector as above, and
              /metrics' og_embedding_* counters: the request, its inputs and tokens, one
              model run per length (inputs of one length run as one batch). A qwen2
              package with logits only gives the lm_head's input (the final
              norm's output, made an output of the native session) = onnxruntime's
              hidden_states of its include_hidden_states twin (the same weights); on
              onnxruntime it is refused, naming the native backend.

Usage: test_embeddings.py BUILD_DIR PACKAGES_DIR embeddings (PACKAGES_DIR unused: the
packages are written to a temporary folder). Exits 77 when onnxruntime,
tokenizers, numpy or the openai client is missing."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

from server_harness import FAILS, SKIP, Server, check
from test_server import openai_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-5  # float32 hidden states of two runtimes (sums in another order), after pooling (measured: 3.2e-7 at most)
TEXTS = ["The quick brown fox jumps over the lazy dog.", "hello", "Embeddings of several inputs at once, "
         "some longer than others, run one by one."]


def make(out, *args):
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--out", out, *args],
                   check=True, stdout=subprocess.DEVNULL)
    return out


class Oracle:
    """onnxruntime's hidden states of a package's graph, pooled by numpy."""

    def __init__(self, pkg, ort, np, tokenizers):
        self.np = np
        self.s = ort.InferenceSession(os.path.join(pkg, "model.onnx"), providers=["CPUExecutionProvider"])
        self.tok = tokenizers.Tokenizer.from_file(os.path.join(pkg, "tokenizer.json"))
        with open(os.path.join(pkg, "genai_config.json")) as f:
            d = json.load(f)["model"]["decoder"]
        self.kv = (d["num_key_value_heads"], d["head_size"])

    def ids(self, text):
        return self.tok.encode(text).ids

    def vector(self, ids, pool, normalize, dim=None):
        np = self.np
        feed = {}
        for i in self.s.get_inputs():
            if i.name == "input_ids":
                feed[i.name] = np.array([ids], np.int64)
            elif i.name == "attention_mask":
                feed[i.name] = np.ones((1, len(ids)), np.int64)
            elif i.name == "position_ids":
                feed[i.name] = np.arange(len(ids), dtype=np.int64)[None]
            else:  # past_key_values.N.key/value: [1, kv heads, 0, head size]
                feed[i.name] = np.zeros((1, self.kv[0], 0, self.kv[1]), np.float32)
        h = self.s.run(["hidden_states"], feed)[0][0].astype(np.float64)  # [sequence, hidden]
        v = {"mean": h.mean(axis=0), "cls": h[0], "last": h[-1]}[pool]
        if dim:
            v = v[:dim]
        if normalize:
            v = v / max(np.linalg.norm(v), 1e-12)
        return v


def close(np, got, want):
    d = float(np.max(np.abs(np.asarray(got, np.float64) - want)))
    return d <= TOL, d


def vectors_of(np, data, b64):
    out = []
    for e in sorted(data, key=lambda e: e["index"]):
        v = e["embedding"]
        out.append(np.frombuffer(base64.b64decode(v), "<f4") if b64 else np.array(v))
    return out


def need(name):
    try:
        return __import__(name)
    except ImportError:
        print(f"SKIP: the {name} package (tools/requirements.txt) is not installed")
        return None


def case_embeddings(build, pkgs):
    mods = [need(n) for n in ("numpy", "onnxruntime", "tokenizers", "openai")]
    if not all(mods):
        return SKIP
    np, ort, tokenizers, openai = mods
    tmp = tempfile.mkdtemp(prefix="og-embed-")
    try:
        excl = make(os.path.join(tmp, "excl"), "--type", "qwen3", "--hidden-states", "exclude",
                    "--st-pooling", "mean", "--st-normalize")
        incl = make(os.path.join(tmp, "incl"), "--type", "llama", "--hidden-states", "include")
        nokv = make(os.path.join(tmp, "nokv"), "--type", "qwen2", "--hidden-states", "exclude", "--no-kv",
                    "--st-pooling", "cls")
        # logits only, and its twin (the same weights) with the final norm's output as well
        plain = make(os.path.join(tmp, "plain"), "--type", "qwen2")
        twin = make(os.path.join(tmp, "twin"), "--type", "qwen2", "--hidden-states", "include")
        embeddings_only(build, excl, Oracle(excl, ort, np, tokenizers), np, openai)
        with_logits(build, incl, Oracle(incl, ort, np, tokenizers), np, openai)
        no_cache(build, nokv, Oracle(nokv, ort, np, tokenizers), np)
        logits_only(build, plain, Oracle(twin, ort, np, tokenizers), np)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def embeddings_only(build, pkg, oracle, np, openai):
    s = Server(build, pkg, "--log-format", "json")
    try:
        st, _, j, _ = s.request("GET", "/health")
        check(st == 200 and j.get("mode") == "embeddings", f"embeddings-only package: /health mode ({j})")
        st, _, j, _ = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
        check(st == 400 and j["error"]["param"] == "model" and "embeddings-only" in j["error"]["message"],
              f"embeddings-only package: chat refused with 400 ({st})")
        c = openai_client(s, openai)
        ids = [oracle.ids(t) for t in TEXTS]
        want = [oracle.vector(i, "mean", True) for i in ids]
        for fmt in (None, "float"):  # the client asks for base64 unless told
            kw = {"encoding_format": fmt} if fmt else {}
            r = c.embeddings.create(model="excl", input=TEXTS, **kw)
            got = [np.array(e.embedding) for e in sorted(r.data, key=lambda e: e.index)]
            res = [close(np, g, w) for g, w in zip(got, want)]
            check(len(got) == 3 and all(ok for ok, _ in res),
                  f"openai client ({fmt or 'default base64'}), 3 texts: mean + normalize = onnxruntime's "
                  f"(max diff {max(d for _, d in res):.2e})")
            check(r.usage.prompt_tokens == sum(map(len, ids)) and r.usage.total_tokens == r.usage.prompt_tokens,
                  f"usage.prompt_tokens {r.usage.prompt_tokens} = the ids' count {sum(map(len, ids))}")
        r = c.embeddings.create(model="excl", input=TEXTS[0], encoding_format="float")
        ok, d = close(np, r.data[0].embedding, want[0])
        check(ok and len(r.data) == 1, f"a string input (max diff {d:.2e})")
        check(abs(np.linalg.norm(r.data[0].embedding) - 1) < 1e-5, "unit length (a Normalize module)")
        r = c.embeddings.create(model="excl", input=ids[1], encoding_format="float")
        ok, d = close(np, r.data[0].embedding, want[1])
        check(ok and r.usage.prompt_tokens == len(ids[1]), f"a list of ids (max diff {d:.2e})")
        raw = [5, 77, 300, 12, 12, 9]
        r = c.embeddings.create(model="excl", input=[ids[2], raw], encoding_format="float")
        res = [close(np, r.data[0].embedding, want[2]), close(np, r.data[1].embedding, oracle.vector(raw, "mean", True))]
        check(all(ok for ok, _ in res), f"a list of id lists (max diff {max(d for _, d in res):.2e})")
        # the same over raw HTTP in base64: little-endian float32
        st, _, j, _ = s.post("/v1/embeddings", {"input": TEXTS[:2], "encoding_format": "base64"})
        got = vectors_of(np, j["data"], True) if st == 200 else []
        check(len(got) == 2 and all(close(np, g, w)[0] for g, w in zip(got, want)) and
              all(g.shape == (128,) for g in got), "raw HTTP base64: float32 little-endian")
        batched(s, oracle, np, "mean", True, "embeddings-only")
        refusals(s, np)
        lines = [json.loads(x) for x in s.stderr().splitlines() if x.startswith("{")]
        emb = [x for x in lines if x["path"] == "/v1/embeddings" and x["status"] == 200]
        check(emb and all(x["model"] == "excl" for x in emb) and
              any(x["prompt_tokens"] == sum(map(len, ids)) for x in emb),
              f"--log-format: the embeddings requests' lines have their model and tokens ({emb[:1]})")
    finally:
        s.stop()


def refusals(s, np):
    cases = [
        ({"input": ""}, "input"),
        ({"input": []}, "input"),
        ({"input": ["a", ""]}, "input[1]"),
        ({"input": [[1, 2], [3, 100000]]}, "input[1]"),
        ({"input": [1, -2]}, "input"),
        ({"input": ["a", [1, 2]]}, "input[1]"),
        ({"input": 7}, "input"),
        ({}, "input"),
        ({"input": "x " * 400}, "input"),
        ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
        ({"input": "a", "dimensions": 64}, "dimensions"),
        ({"input": "a", "dimensions": 0}, "dimensions"),
        ({"input": "a", "dimensions": 1.5}, "dimensions"),
        ({"input": "a", "frobnicate": 1}, "frobnicate"),
    ]
    for body, param in cases:
        st, _, j, text = s.post("/v1/embeddings", body)
        got = (j or {}).get("error", {}).get("param")
        check(st == 400 and got == param, f"refused: {str(body)[:60]} -> 400 naming {param} ({st} {got})")
    st, _, j, _ = s.post("/v1/embeddings", {"input": "x " * 400})
    check(j and j["error"].get("code") == "context_length_exceeded", "too long: context_length_exceeded")
    st, _, j, _ = s.post("/v1/embeddings", {"input": "a", "dimensions": 128})
    check(st == 200 and len(j["data"][0]["embedding"]) == 128, "dimensions equal to the width is taken")


def with_logits(build, pkg, oracle, np, openai):
    ids = [oracle.ids(t) for t in TEXTS]
    s = Server(build, pkg, "--pooling", "last", "--matryoshka")
    try:
        c = openai_client(s, openai)
        r = c.embeddings.create(model="incl", input=TEXTS)
        res = [close(np, e.embedding, oracle.vector(i, "last", True)) for e, i in zip(r.data, ids)]
        check(all(ok for ok, _ in res), f"include_hidden_states, --pooling last (normalised by default): "
              f"= onnxruntime's (max diff {max(d for _, d in res):.2e})")
        r = c.embeddings.create(model="incl", input=TEXTS, dimensions=32, encoding_format="float")
        res = [close(np, e.embedding, oracle.vector(i, "last", True, 32)) for e, i in zip(r.data, ids)]
        check(all(ok for ok, _ in res) and all(len(e.embedding) == 32 for e in r.data),
              f"--matryoshka, dimensions 32: the first 32 values normalised again (max diff "
              f"{max(d for _, d in res):.2e})")
        st, _, j, _ = s.post("/v1/completions", {"prompt": "Once", "max_tokens": 4, "temperature": 0})
        check(st == 200 and j["usage"]["completion_tokens"] == 4, "a package with logits and hidden states still completes")
    finally:
        s.stop()
    s = Server(build, pkg, "--pooling", "cls", "--embeddings-normalize", "no")
    try:
        st, _, j, _ = s.post("/v1/embeddings", {"input": TEXTS, "encoding_format": "float"})
        got = vectors_of(np, j["data"], False) if st == 200 else []
        res = [close(np, g, oracle.vector(i, "cls", False)) for g, i in zip(got, ids)]
        check(len(res) == 3 and all(ok for ok, _ in res), f"--pooling cls --embeddings-normalize no "
              f"(max diff {max(d for _, d in res) if res else -1:.2e})")
    finally:
        s.stop()


def logits_only(build, pkg, oracle, np):
    ids = [oracle.ids(t) for t in TEXTS]
    s = Server(build, pkg, "--pooling", "mean")
    try:
        st, _, j, _ = s.post("/v1/embeddings", {"input": TEXTS, "encoding_format": "float"})
        got = vectors_of(np, j["data"], False) if st == 200 else []
        res = [close(np, g, oracle.vector(i, "mean", True)) for g, i in zip(got, ids)]
        check(len(res) == 3 and all(ok for ok, _ in res), f"logits only: the lm_head's input, made an output, = "
              f"onnxruntime's hidden_states of the include_hidden_states twin (max diff "
              f"{max(d for _, d in res) if res else -1:.2e})")
        st, _, j, _ = s.post("/v1/completions", {"prompt": "Once", "max_tokens": 4, "temperature": 0})
        check(st == 200 and j["usage"]["completion_tokens"] == 4, "logits only: it still completes")
    finally:
        s.stop()
    s = Server(build, pkg, "--backend", "ort")
    try:
        st, _, j, _ = s.post("/v1/embeddings", {"input": "hello"})
        msg = (j or {}).get("error", {}).get("message", "")
        check(st == 400 and j["error"]["param"] == "model" and "native backend" in msg,
              f"logits only on onnxruntime: 400 saying the inner value needs the native backend ({st} {msg[:200]!r})")
    finally:
        s.stop()


def batched(s, oracle, np, pool, normalize, what):
    """Inputs of equal and of other lengths in one request: each vector = onnxruntime's of
    the input alone; /metrics counts the request, its inputs and tokens, and one model run
    per length (those of one length run as one batch)."""
    rows = [[5, 77, 300, 12, 12, 9], [8, 8, 8], [40, 41, 42, 43, 44, 45], [7] * 9, [300, 2, 3, 4, 5, 6],
            [1, 2, 3, 4, 5, 6, 7, 8, 9]]
    before = s.metrics()
    st, _, j, _ = s.post("/v1/embeddings", {"input": rows, "encoding_format": "float"})
    got = vectors_of(np, j["data"], False) if st == 200 else []
    res = [close(np, g, oracle.vector(r, pool, normalize)) for g, r in zip(got, rows)]
    check(len(res) == 6 and all(ok for ok, _ in res),
          f"{what}: 6 inputs of 3 lengths, batched by length = each alone in onnxruntime "
          f"(max diff {max(d for _, d in res) if res else -1:.2e})")
    after = s.metrics()
    d = {k: after.get(k, 0) - before.get(k, 0) for k in ("og_embedding_requests_total", "og_embedding_inputs_total",
                                                         "og_embedding_tokens_total", "og_embedding_runs_total")}
    check(d == {"og_embedding_requests_total": 1, "og_embedding_inputs_total": 6,
                "og_embedding_tokens_total": sum(map(len, rows)), "og_embedding_runs_total": 3},
          f"{what}: /metrics counts the request, 6 inputs, {sum(map(len, rows))} tokens, 3 runs ({d})")


def no_cache(build, pkg, oracle, np):
    ids = [oracle.ids(t) for t in TEXTS]
    s = Server(build, pkg)
    try:
        batched(s, oracle, np, "cls", False, "no KV cache")
        st, _, j, _ = s.post("/v1/embeddings", {"input": TEXTS, "encoding_format": "float"})
        got = vectors_of(np, j["data"], False) if st == 200 else []
        res = [close(np, g, oracle.vector(i, "cls", False)) for g, i in zip(got, ids)]
        check(len(res) == 3 and all(ok for ok, _ in res),
              f"no KV cache, 1_Pooling cls, no Normalize module (max diff {max(d for _, d in res) if res else -1:.2e})")
        check(len(got) == 3 and abs(float(np.linalg.norm(got[0])) - 1) > 1e-3, "not unit length without Normalize")
    finally:
        s.stop()


def main():
    if len(sys.argv) != 4 or sys.argv[3] != "embeddings":
        print(__doc__)
        return 2
    if case_embeddings(sys.argv[1], sys.argv[2]) == SKIP:
        return SKIP
    print(f"embeddings: {len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
