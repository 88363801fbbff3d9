"""LoRA adapters (og.Adapters, Generator.set_active_adapter, --adapter) against
onnxruntime-genai 0.18 running the same package with the same adapter files.

The package is written by tools/make_model.py --lora all (the LoRA A/B weights of every
projection as graph inputs with rank-0 defaults); the adapters by onnxruntime's own
writer, onnxruntime.AdapterFormat, with random A/B. Greedy ids must equal
onnxruntime-genai's exactly, without an adapter, with each adapter, and with adapters
switched between generators of one model. An adapter for another base model (a name,
dtype or shape the model does not take) and corrupt files are refused with messages that
name the file and the parameter. Missing oracles (onnx, onnxruntime, onnxruntime_genai)
skip loudly."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "serve"))
import server_harness as harness  # noqa: E402 (the server harness the serve tests share)

PROMPT = [5, 17, 42, 99, 3]
MAX_LENGTH = 28
RANK = 4


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    pytest.importorskip("onnx")
    return make(tmp_path_factory.mktemp("lora") / "llama", "--lora", "all")


def make(out, *extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_model.py"), "--type", "llama",
                    "--out", str(out), "--seed", "3", *extra], check=True, capture_output=True, env=env)
    return str(out)


def lora_inputs(pkg):
    """{name: (shape with the rank as -1, numpy dtype)} of the package's LoRA inputs."""
    import onnx
    m = onnx.load(os.path.join(pkg, "model.onnx"), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    out = {}
    for i in m.graph.input:
        if i.name in inits:
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in i.type.tensor_type.shape.dim]
            out[i.name] = (dims, np.float32)
    assert out, "the maker wrote no LoRA inputs"
    return out


def write_adapter(path, params):
    ort = pytest.importorskip("onnxruntime")
    a = ort.AdapterFormat()
    a.set_adapter_version(1)
    a.set_model_version(1)
    a.set_parameters({k: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v)) for k, v in params.items()})
    a.export_adapter(str(path))
    return str(path)


def random_params(pkg, seed, only=None, rank=RANK):
    rng = np.random.default_rng(seed)
    out = {}
    for name, (dims, dt) in lora_inputs(pkg).items():
        if only and not any(s in name for s in only):
            continue
        shape = [rank if d < 0 else d for d in dims]
        out[name] = (rng.standard_normal(shape) * 0.3).astype(dt)
    return out


@pytest.fixture(scope="module")
def adapters(pkg, tmp_path_factory):
    d = tmp_path_factory.mktemp("adapters")
    return {
        "a1": write_adapter(d / "a1.onnx_adapter", random_params(pkg, 1)),
        "a2": write_adapter(d / "a2.onnx_adapter", random_params(pkg, 2, rank=2)),
        # only the attention projections: the rest keep the graph's defaults
        "attn": write_adapter(d / "attn.onnx_adapter", random_params(pkg, 3, only=("attn",))),
    }


def prompted(mod, model, adapters=None, name=None):
    """A greedy generator with adapter `name` active (None: none) and the prompt in."""
    p = mod.GeneratorParams(model)
    p.set_search_options(max_length=MAX_LENGTH, do_sample=False)
    g = mod.Generator(model, p)
    if name:
        g.set_active_adapter(adapters, name)
    g.append_tokens(PROMPT)
    return g


def finish(g):
    while not g.is_done():
        g.generate_next_token()
    return [int(t) for t in g.get_sequence(0)]


def greedy(mod, model, adapters=None, name=None):
    return finish(prompted(mod, model, adapters, name))


def load_all(mod, model, files):
    ad = mod.Adapters(model)
    for name, path in files.items():
        ad.load(path, name)
    return ad


@pytest.fixture(scope="module")
def oracle(pkg, adapters):
    """onnxruntime-genai 0.18's ids for no adapter and each adapter."""
    ortg = pytest.importorskip("onnxruntime_genai")
    model = ortg.Model(pkg)
    ad = load_all(ortg, model, adapters)
    return {n: greedy(ortg, model, ad, n) for n in [None] + list(adapters)}


def test_same_ids_as_onnxruntime_genai(og, pkg, adapters, oracle):
    model = og.Model(pkg)
    ad = load_all(og, model, adapters)
    for name in [None] + list(adapters):
        assert greedy(og, model, ad, name) == oracle[name], f"adapter {name}"
    # the adapters change the output (else the comparison above proves little)
    assert len({tuple(v) for v in oracle.values()}) == len(oracle)


def test_ort_backend_same_ids(og, pkg, adapters, oracle):
    """Our generator over the onnxruntime backend feeds the same adapter tensors (and the
    defaults) by name: onnxruntime-genai's ids."""
    model = og.Model(pkg, backend="ort")
    assert model.backend == "onnxruntime"
    ad = load_all(og, model, adapters)
    for name in [None] + list(adapters):
        assert greedy(og, model, ad, name) == oracle[name], f"adapter {name}"


def test_int4_package_same_ids(og, tmp_path):
    """An int4 package (MatMulNBits projections, float LoRA paths beside some, q/k/v
    unpacked): the same ids as onnxruntime-genai's."""
    ortg = pytest.importorskip("onnxruntime_genai")
    pkg = make(tmp_path / "int4", "--lora", "q_proj,v_proj,down_proj", "--dtype", "int4")
    path = write_adapter(tmp_path / "a.onnx_adapter", random_params(pkg, 6))
    got = {}
    for mod in (ortg, og):
        model = mod.Model(pkg)
        ad = load_all(mod, model, {"a": path})
        got[mod] = [greedy(mod, model, ad, n) for n in (None, "a")]
    assert got[og] == got[ortg]
    assert got[og][0] != got[og][1]


def test_switching_between_generators(og, pkg, adapters, oracle):
    """Generators of one model with different adapters, stepped in turn: each gives its
    adapter's ids (the adapter is the generator's, not the model's)."""
    model = og.Model(pkg)
    ad = load_all(og, model, adapters)
    names = ["a2", None, "a1", "attn", "a1"]
    gens = [prompted(og, model, ad, n) for n in names]
    while not all(g.is_done() for g in gens):
        for g in gens:
            if not g.is_done():
                g.generate_next_token()
    for n, g in zip(names, gens):
        assert [int(t) for t in g.get_sequence(0)] == oracle[n], f"adapter {n}"
    # in use: cannot be unloaded; once its generators are gone, it can
    with pytest.raises(og.InvalidArgumentError, match="active in 2 generator"):
        ad.unload("a1")
    del gens, g
    ad.unload("a1")
    with pytest.raises(og.NotFoundError, match="'a1' is not loaded"):
        ad.unload("a1")
    # the container outlives its owner's reference while a generator uses it
    g = prompted(og, model, ad, "a2")
    del ad
    assert finish(g) == oracle["a2"]


def test_cli_adapter(og, pkg, adapters, oracle):
    exe = os.path.join(BUILD, "onnx-genai")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} is not built")
    ids = ",".join(map(str, PROMPT))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the sanitizer suite's runtime: a sanitized CLI has its own
    r = subprocess.run([exe, "generate", pkg, "--ids", ids, "--max-length", str(MAX_LENGTH), "--json",
                        "--adapter", adapters["a1"]], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sequences"][0] == oracle["a1"]
    # generate --chat (run's path): the answer's tokens are the generator's with the adapter
    tpl = os.path.join(os.path.dirname(adapters["a1"]), "plain.jinja")
    with open(tpl, "w") as f:
        f.write("{% for m in messages %}{{ m.content }}{% endfor %}")
    r = subprocess.run([exe, "generate", "--chat", pkg, "--template-file", tpl, "-p", "hello there",
                        "--max-new-tokens", "12", "--json", "--adapter", adapters["attn"]],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    model = og.Model(pkg)
    ids = list(og.Tokenizer(model).encode("hello there"))
    p = og.GeneratorParams(model)
    p.set_search_options(max_length=len(ids) + 12, do_sample=False)
    g = og.Generator(model, p)
    g.set_active_adapter(load_all(og, model, adapters), "attn")
    g.append_tokens(ids)
    assert json.loads(r.stdout)["tokens"] == finish(g)[len(ids):]


def test_adapter_for_another_model_refused(og, pkg, tmp_path):
    model = og.Model(pkg)
    ad = og.Adapters(model)
    good = random_params(pkg, 4)
    name = next(n for n in good if "lora_A" in n)
    cases = {
        "shape": dict(good, **{name: np.zeros((good[name].shape[0] + 8, RANK), np.float32)}),
        "dtype": dict(good, **{name: good[name].astype(np.float16)}),
        "name": dict(good, **{"model.layers.7.attn.q_proj.lora_A.MatMul.weight": good[name]}),
    }
    for what, params in cases.items():
        path = write_adapter(tmp_path / f"{what}.onnx_adapter", params)
        with pytest.raises(og.InvalidArgumentError) as e:
            ad.load(path, what)
        msg = str(e.value)
        assert path in msg and "another base model" in msg, msg
        assert ("model.layers.7" if what == "name" else name) in msg, msg
    # a package without LoRA inputs takes no adapter at all
    plain = make(tmp_path / "plain")
    # with the defaults (rank 0) the LoRA package is the base model: the same ids
    assert greedy(og, og.Model(plain)) == greedy(og, model)
    ok = write_adapter(tmp_path / "ok.onnx_adapter", good)
    with pytest.raises(og.InvalidArgumentError, match="not an adapter input of the model"):
        og.Adapters(og.Model(plain)).load(ok, "x")
    # an adapter loaded for one model cannot be activated in another's generator
    other = og.Model(pkg)
    ad.load(ok, "ok")
    g = og.Generator(other, og.GeneratorParams(other))
    with pytest.raises(og.InvalidArgumentError, match="made for model"):
        g.set_active_adapter(ad, "ok")


def test_corrupt_adapter_refused(og, pkg, tmp_path):
    model = og.Model(pkg)
    ad = og.Adapters(model)
    good = open(write_adapter(tmp_path / "good.onnx_adapter", random_params(pkg, 5)), "rb").read()
    cases = {
        "empty": b"",
        "identifier": good[:4] + b"XXXX" + good[8:],
        "truncated": good[: len(good) // 3],
        "root": b"\xff\xff\xff\x7f" + good[4:],
        "version": None,  # format_version 2: written below
    }
    # format_version is the root table's first field: find it by writing a second file
    # whose only difference is known (onnxruntime writes version 1)
    root = int.from_bytes(good[0:4], "little")
    vt = root - int.from_bytes(good[root:root + 4], "little", signed=True)
    off = int.from_bytes(good[vt + 4:vt + 6], "little")
    assert int.from_bytes(good[root + off:root + off + 4], "little") == 1
    cases["version"] = good[:root + off] + (2).to_bytes(4, "little") + good[root + off + 4:]
    for what, data in cases.items():
        path = tmp_path / f"{what}.onnx_adapter"
        path.write_bytes(data)
        with pytest.raises((og.InvalidModelError, og.UnsupportedError)) as e:
            ad.load(str(path), what)
        assert str(path) in str(e.value), str(e.value)
    with pytest.raises(og.NotFoundError, match="missing.onnx_adapter"):
        ad.load(str(tmp_path / "missing.onnx_adapter"), "missing")
    # truncations into the data are refused, never read past the end (a file's last
    # bytes may be padding after its last string)
    for n in range(0, len(good) - 8, max(1, len(good) // 97)):
        path = tmp_path / "cut.onnx_adapter"
        path.write_bytes(good[:n])
        with pytest.raises(og.OgError):
            ad.load(str(path), "cut")
    path = tmp_path / "whole.onnx_adapter"
    path.write_bytes(good)
    ad.load(str(path), "whole")


@pytest.mark.parametrize("mode", ["batched", "per-sequence"])
def test_serve_adapters(og, pkg, adapters, oracle, mode):
    """serve --adapter NAME=FILE: a request's model "MODEL:NAME" runs with that adapter,
    the plain name without; requests with different adapters at once (batched: each step
    runs one adapter's group, the groups taking turns; or one generator per sequence) each
    get onnxruntime-genai's ids for theirs, several of one adapter too; /v1/models lists
    them; an unknown adapter is a 404 and one for another base model stops the start."""
    exe = os.path.join(BUILD, "onnx-genai")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} is not built")
    args = ["--per-sequence"] if mode != "batched" else []
    for name in adapters:
        args += ["--adapter", f"{name}={adapters[name]}"]
    s = harness.Server(BUILD, pkg, *args, drop_preload=True, check=None)
    base = os.path.basename(pkg)
    tok = og.Tokenizer(og.Model(pkg))
    try:
        assert ("continuous batching" in s.ready) == (mode == "batched"), s.ready

        def post(model, out, key=None):
            body = {"model": model, "prompt": PROMPT, "max_tokens": MAX_LENGTH - len(PROMPT), "temperature": 0}
            out[key or model] = s.call("POST", "/v1/completions", body)

        got = {}
        names = [base] + [f"{base}:{n}" for n in adapters]
        sent = names + names[1:]  # two requests of each adapter at once
        threads = [threading.Thread(target=post, args=(n, got, (n, k))) for k, n in enumerate(sent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, n in enumerate(sent):
            status, answer = got[(n, k)]
            assert status == 200, answer
            assert answer["model"] == n
            want = oracle[n.split(":")[1] if ":" in n else None]
            assert answer["choices"][0]["text"] == tok.decode(want[len(PROMPT):]), n
        post(f"{base}:nope", got)
        assert got[f"{base}:nope"][0] == 404
        ids = [d["id"] for d in s.call("GET", "/v1/models")[1]["data"]]
        assert ids == names, ids
    finally:
        s.stop(timeout=60)
    env = harness.cli_env(drop_preload=True)
    bad = write_adapter(os.path.join(os.path.dirname(adapters["a1"]), "bad.onnx_adapter"),
                        {"not.an.input": np.zeros((2, 2), np.float32)})
    r = subprocess.run([exe, "serve", "-m", pkg, "--port", "0", "--adapter", f"x={bad}"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0 and "not.an.input" in r.stderr and "x=" in r.stderr, r.stderr
