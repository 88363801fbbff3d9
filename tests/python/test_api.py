"""The onnxruntime-genai API surface of onnx_genai on the tiny gpt2 package, against
onnxruntime-genai's own test vectors (../shared/models/README.md), Hugging Face
`tokenizers`, jinja2 in transformers' environment (../shared/chat-templates/render.py)
and the installed onnxruntime_genai where it is the reference for the API's shape."""
import glob
import json
import os
import sys

import numpy as np
import pytest

from conftest import BUILD, ORTGENAI, SHARED

BATCH_IN = np.array([[0, 0, 0, 52], [0, 0, 195, 731]], dtype=np.int32)
BATCH_OUT = [[0, 0, 0, 52, 204, 204, 204, 204, 204, 204],
             [0, 0, 195, 731, 731, 114, 114, 114, 114, 114]]


def generate(og, model, prompt, **search):
    params = og.GeneratorParams(model)
    params.set_search_options(**search)
    gen = og.Generator(model, params)
    gen.append_tokens(prompt)
    while not gen.is_done():
        gen.generate_next_token()
    return gen


def test_greedy_batch_and_logits(og, gpt2):
    gen = og.Generator(gpt2, og.GeneratorParams(gpt2))
    del gen
    params = og.GeneratorParams(gpt2)
    params.set_search_options(max_length=10, batch_size=2)
    gen = og.Generator(gpt2, params)
    gen.append_tokens(BATCH_IN)
    logits = gen.get_output("logits")
    assert logits.shape == (2, 4, 1000) and logits.dtype == np.float32
    want = {(0, 0): [0.29694548, 0.00955007, 0.0430819, 0.10063869, 0.0437237],
            (0, 3): [-0.12675379, -0.04443946, 0.14492269, 0.03021223, -0.03212897],
            (1, 2): [-0.04699047, 0.17915794, 0.20838135, 0.10888482, -0.00277808],
            (1, 3): [0.2938929, -0.10538938, -0.00226692, 0.12050669, -0.10622668]}
    for (b, t), w in want.items():
        np.testing.assert_allclose(logits[b, t, ::200], w, atol=1e-3)
    assert gen.get_logits().shape == (2, 1, 1000)
    np.testing.assert_allclose(gen.get_logits()[:, 0, :], logits[:, 3, :], atol=1e-6)
    for _ in range(2):
        gen.generate_next_token()
    np.testing.assert_allclose(gen.get_output("logits")[:, 0, ::200],
                               [[0.03742531, -0.05752287, 0.14159015, 0.04210977, -0.1484456],
                                [0.3041716, -0.08701379, -0.03778192, 0.07471392, -0.02049096]],
                               atol=1e-3)
    while not gen.is_done():
        gen.generate_next_token()
        nxt = gen.get_next_tokens()
        assert nxt.dtype == np.int32 and nxt.shape == (2,)
    for i in range(2):
        seq = gen.get_sequence(i)
        assert seq.dtype == np.int32 and seq.tolist() == BATCH_OUT[i]
    assert gen.token_count() == 10


def test_rewind(og, gpt2):
    gen = generate(og, gpt2, np.array([0, 0, 195, 731], dtype=np.int32), max_length=10)
    assert gen.get_sequence(0).tolist() == BATCH_OUT[1]
    gen.rewind_to(5)
    while not gen.is_done():
        gen.generate_next_token()
    assert gen.get_sequence(0).tolist() == BATCH_OUT[1]
    gen.rewind_to(3)
    gen.append_tokens([731, 731])
    while not gen.is_done():
        gen.generate_next_token()
    assert gen.get_sequence(0).tolist() == BATCH_OUT[1]


def test_beam_search(og, gpt2):
    rows = [[0, 0, 0, 0, 0, 52, 195, 731, 321, 301, 734, 620],
            [41, 554, 74, 622, 206, 222, 75, 223, 221, 198, 224, 572],
            [0, 0, 0, 52, 328, 219, 328, 206, 288, 227, 896, 328]]
    tails = [[131, 131, 131, 181, 638, 638, 638, 638], [292] * 8, [328, 669, 669, 669, 669, 669, 669, 669]]
    gen = generate(og, gpt2, np.array(rows, dtype=np.int32), max_length=20, batch_size=3,
                   num_beams=4, length_penalty=1.0, early_stopping=True)
    for i in range(3):
        assert gen.get_sequence(i).tolist() == rows[i] + tails[i]


def test_config_overlay_and_providers(og, gpt2_dir):
    config = og.Config(gpt2_dir)
    config.clear_providers()
    config.append_provider("cpu")
    config.overlay(json.dumps({"search": {"max_length": 7}, "model": {"eos_token_id": 114}}))
    model = og.Model(config)
    assert og.GeneratorParams(model).get_search_options()["max_length"] == 7
    gen = generate(og, model, np.array([0, 0, 195, 731], dtype=np.int32))
    assert gen.get_sequence(0).tolist() == [0, 0, 195, 731, 731]  # stopped on the EOS 114
    assert og.Tokenizer(model).eos_token_ids.tolist() == [114]
    # "cuda" is onnxruntime's CUDA provider: the model opens on onnxruntime with it, or
    # fails naming it where the onnxruntime found has no CUDA; other providers are refused
    config.append_provider("cuda")
    try:
        import onnxruntime
        cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    except ImportError:
        cuda = None
    if cuda:
        assert og.Model(config).backend == "onnxruntime"
    elif cuda is False:
        with pytest.raises(og.UnsupportedError, match="'cuda' .CUDAExecutionProvider"):
            og.Model(config)
    else:
        with pytest.raises(og.NotFoundError, match="onnxruntime is not available"):
            og.Model(config)
    config.clear_providers()
    with pytest.raises(og.UnsupportedError, match="'tpu'"):
        config.append_provider("tpu")
    with pytest.raises(og.UnsupportedError, match="enable_cuda_graph"):
        config.set_provider_option("cuda", "enable_cuda_graph", "1")
    with pytest.raises(og.InvalidModelError, match="search.max_length"):
        config.overlay('{"search": {"max_length": "long"}}')
    assert isinstance(og.OgError("x"), RuntimeError)
    assert model.type == "gpt2" and model.device_type == "CPU"


def test_search_options(og, gpt2):
    import onnxruntime_genai as ortg
    ours = og.GeneratorParams(gpt2).get_search_options()
    theirs = ortg.GeneratorParams(ortg.Model(os.path.join(SHARED, "models", "ortgenai",
                                                          "hf-internal-testing",
                                                          "tiny-random-gpt2-fp32"))).get_search_options()
    for k in ("max_length", "min_length", "num_beams", "num_return_sequences", "top_k",
              "temperature", "repetition_penalty", "length_penalty", "do_sample",
              "early_stopping", "batch_size", "no_repeat_ngram_size"):
        assert ours[k] == theirs[k], k
    params = og.GeneratorParams(gpt2)
    params.set_search_options(do_sample=True, top_k=5, top_p=0.9, temperature=0.7,
                              random_seed=42, max_length=12)
    gens = [generate(og, gpt2, np.array([0, 0, 195, 731], dtype=np.int32), do_sample=True,
                     top_k=5, top_p=0.9, temperature=0.7, random_seed=42, max_length=12)
            for _ in range(2)]
    assert gens[0].get_sequence(0).tolist() == gens[1].get_sequence(0).tolist()
    with pytest.raises(og.InvalidArgumentError, match="unknown search option 'foo'"):
        params.set_search_options(foo=1)
    with pytest.raises(TypeError, match="max_length"):
        params.set_search_options(max_length="10")
    with pytest.raises(og.InvalidArgumentError, match="integer"):
        params.set_search_options(max_length=10.5)
    with pytest.raises(TypeError, match="do_sample"):
        params.set_search_options(do_sample=1)
    params.set_search_options(temperature=-1.0)
    with pytest.raises(og.InvalidArgumentError, match="temperature"):
        og.Generator(gpt2, params)


def test_tokenizer(og, gpt2, gpt2_dir):
    from tokenizers import Tokenizer as HF
    hf = HF.from_file(os.path.join(gpt2_dir, "tokenizer.json"))
    tok = og.Tokenizer(gpt2)
    texts = ["Hello world", "  spaces and\ttabs\n", "ünïcödé ☃ 日本語", "", "a NUL \x00 inside"]
    for t in texts:
        ids = tok.encode(t)
        assert ids.dtype == np.int32 and ids.tolist() == hf.encode(t).ids
        assert tok.decode(ids) == hf.decode(ids.tolist(), skip_special_tokens=True)
        stream = tok.create_stream()
        assert "".join(stream.decode(int(i)) for i in ids) + stream.flush() == tok.decode(ids)
    batch = tok.encode_batch(texts[:2]).as_numpy()
    n0, n1 = len(hf.encode(texts[0]).ids), len(hf.encode(texts[1]).ids)
    assert batch.shape == (2, max(n0, n1)) and batch.dtype == np.int32
    assert batch[0, n0:].tolist() == [tok.pad_token_id] * (batch.shape[1] - n0)
    assert tok.decode_batch(batch) == [tok.decode(batch[0]), tok.decode(batch[1])]
    assert tok.to_token_id("hello") == hf.token_to_id("hello")
    assert tok.to_token_id("<|endoftext|>") == hf.token_to_id("<|endoftext|>")
    assert tok.to_token_id("zzzzqqqq") == -1
    assert tok.bos_token_id == 98 and tok.pad_token_id == 98 and tok.eos_token_ids.tolist() == [98]
    assert og.Tokenizer(gpt2_dir).encode("Hello").tolist() == hf.encode("Hello").ids
    assert og.Tokenizer(og.Config(gpt2_dir)).eos_token_ids.tolist() == [98]


def test_tokenizer_stream_context(og, gpt2_dir):
    """A stream with the prompt as context gives what the generated ids add to the text:
    HF tokenizers' decode(prompt + generated) beyond decode(prompt). On stories260K
    (llama-style: Replace, ByteFallback, Fuse, Strip) onnxruntime-genai's stream gives
    the same pieces after the prompt "Tom" (its stream never strips a first space)."""
    from tokenizers import Tokenizer as HF
    stories = os.path.join(BUILD, "parity_packages", "stories260K-fp32")
    for d in (os.path.join(ORTGENAI, "phi3-v"), gpt2_dir, stories):
        if not os.path.isfile(os.path.join(d, "tokenizer.json")):
            pytest.skip(f"{d}/tokenizer.json is missing")
    for d in (os.path.join(ORTGENAI, "phi3-v"), gpt2_dir, stories):
        hf = HF.from_file(os.path.join(d, "tokenizer.json"))
        tok = og.Tokenizer(d)
        for text in ["Tom and Lily went out", " leading space, then 日本語 and ünï", "a\n b\n\n c"]:
            ids = hf.encode(text).ids
            for k in range(len(ids) + 1):
                stream = tok.create_stream()
                stream.set_context(np.array(ids[:k]))
                got = "".join(stream.decode(i) for i in ids[k:]) + stream.flush()
                full, ctx = (hf.decode(ids, skip_special_tokens=True),
                             hf.decode(ids[:k], skip_special_tokens=True))
                # (a context that ends inside a character decodes it as U+FFFD: from
                # the first character that differs)
                common = next((i for i, (a, b) in enumerate(zip(full, ctx)) if a != b), min(len(full), len(ctx)))
                assert got == full[common:], (d, text, k, got)
    with pytest.raises(og.InvalidArgumentError):
        og.Tokenizer(gpt2_dir).create_stream().set_context([2**31])

    import onnxruntime_genai as ortg
    model = ortg.Model(stories)
    params = ortg.GeneratorParams(model)
    params.set_search_options(max_length=16, do_sample=False)
    gen = ortg.Generator(model, params)
    prompt = HF.from_file(os.path.join(stories, "tokenizer.json")).encode("Tom").ids
    gen.append_tokens(prompt)
    theirs_stream, ours_stream = ortg.Tokenizer(model).create_stream(), og.Tokenizer(stories).create_stream()
    ours_stream.set_context(prompt)
    theirs, ours = [], []
    while not gen.is_done():
        gen.generate_next_token()
        t = int(gen.get_next_tokens()[0])
        theirs.append(theirs_stream.decode(t))
        ours.append(ours_stream.decode(t))
    assert ours == theirs and theirs[0].startswith(" "), (ours, theirs)


def test_apply_chat_template_signature(og, gpt2):
    import onnxruntime_genai as ortg
    tpl = ("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
           "{% if add_generation_prompt %}<assistant>{% endif %}"
           "{% if tools %}{{ tools | length }} tools{% endif %}")
    msgs = '[{"role": "user", "content": "Hi"}]'
    tools = '[{"type": "function", "function": {"name": "f"}}]'
    theirs = ortg.Tokenizer(ortg.Model(os.path.join(SHARED, "models", "ortgenai", "hf-internal-testing",
                                                   "tiny-random-gpt2-fp32")))
    tok = og.Tokenizer(gpt2)
    for kw in ({}, {"add_generation_prompt": False}, {"tools": tools}, {"tools": ""}):
        want = theirs.apply_chat_template(msgs, template_str=tpl, **kw)
        assert tok.apply_chat_template(msgs, template_str=tpl, **kw) == want, kw
    assert tok.apply_chat_template(json.loads(msgs), template_str=tpl) == \
        "<|endoftext|><user>Hi<assistant>"
    with pytest.raises(TypeError):
        tok.apply_chat_template(msgs, tpl)  # keyword-only, as in onnxruntime-genai
    with pytest.raises(og.NotFoundError, match="no chat template"):
        tok.apply_chat_template(msgs)  # the package has none
    with pytest.raises(og.InvalidArgumentError):
        tok.apply_chat_template("[{", template_str=tpl)


def test_apply_chat_template_corpus(og, gpt2, monkeypatch):
    """Every corpus template x conversation (without extra variables) through the Python
    API against jinja2 in transformers' environment, with the package's special tokens;
    onnxruntime-genai's own renderer is counted, not required (it differs from jinja2)."""
    root = os.path.join(SHARED, "chat-templates")
    if not os.path.isfile(os.path.join(root, "render.py")):
        pytest.skip(f"{root} is missing")
    sys.path.insert(0, root)
    import render
    import onnxruntime_genai as ortg
    theirs = ortg.Tokenizer(ortg.Model(os.path.join(SHARED, "models", "ortgenai", "hf-internal-testing",
                                                   "tiny-random-gpt2-fp32")))
    env = render.make_environment()
    monkeypatch.setenv("CHAT_TEMPLATE_NOW", render.NOW.strftime("%Y-%m-%dT%H:%M:%S"))
    tokens = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
              "unk_token": "<|endoftext|>"}
    tok = og.Tokenizer(gpt2)
    cases = [c for c in json.load(open(os.path.join(root, "conversations.json"))) if not c.get("extra")]
    n = agree_ort = 0
    bad = []
    for path in sorted(glob.glob(os.path.join(root, "templates", "*.jinja"))):
        src = open(path, encoding="utf-8").read()
        for case in cases:
            tools = json.dumps(case["tools"]) if case.get("tools") else None
            agp = case.get("add_generation_prompt", False)
            try:
                want = render.render_case(env, src, case, tokens)
            except Exception:
                want = None
            try:
                got = tok.apply_chat_template(json.dumps(case["messages"]), template_str=src,
                                              tools=tools, add_generation_prompt=agp)
            except og.OgError:
                got = None
            try:
                ort_out = theirs.apply_chat_template(json.dumps(case["messages"]), template_str=src,
                                                     tools=tools, add_generation_prompt=agp)
            except Exception:
                ort_out = None
            n += 1
            agree_ort += ort_out == got
            if got != want:
                bad.append(f"{os.path.basename(path)} x {case['name']}: got {str(got)[:120]!r}, "
                           f"jinja2 {str(want)[:120]!r}")
    print(f"\n{n} template x conversation pairs: all equal to jinja2; {agree_ort} also equal "
          "to onnxruntime-genai's renderer")
    assert n > 100 and not bad, "\n".join(bad[:20])


def test_sources_hold_to_python_39(og):
    """pyproject.toml promises Python 3.9+, and CI runs one newer Python: every module of
    the installed package must parse with 3.9's grammar (ast's feature_version, which
    refuses later syntax such as match and except*), and a module with annotations must
    defer them (PEP 563), as they use PEP 604 unions (`int | None`) that 3.9 cannot
    evaluate. (Checked by hand: pip install . and test_bad_inputs on Python 3.9.18.)"""
    import ast
    here = os.path.dirname(og.__file__)
    paths = sorted(glob.glob(os.path.join(here, "*.py")))
    assert len(paths) >= 5, paths
    for path in paths:
        src = open(path, encoding="utf-8").read()
        tree = ast.parse(src, path, feature_version=(3, 9))
        annotated = any(getattr(n, "returns", None) is not None or
                        isinstance(n, (ast.AnnAssign, ast.arg)) and n.annotation is not None
                        for n in ast.walk(tree))
        deferred = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                       any(a.name == "annotations" for a in n.names) for n in tree.body)
        assert deferred or not annotated, f"{path}: annotations without " \
                                          "`from __future__ import annotations`"


def test_model_backends(og, gpt2_dir):
    """Model(backend=...): native by default on a package every op of which has a kernel;
    on onnxruntime ("ort") the same greedy tokens."""
    native = og.Model(gpt2_dir)
    assert native.backend == "native"
    with pytest.raises(ValueError, match="'cpu' is not one of auto, native, ort"):
        og.Model(gpt2_dir, backend="cpu")
    pytest.importorskip("onnxruntime", reason="the onnxruntime Python package (its "
                        "libonnxruntime.so) is not installed")
    ort = og.Model(gpt2_dir, backend="ort")
    assert ort.backend == "onnxruntime"
    prompt = np.array([0, 0, 195, 731], dtype=np.int32)
    want = generate(og, native, prompt, max_length=12).get_sequence(0).tolist()
    assert generate(og, ort, prompt, max_length=12).get_sequence(0).tolist() == want


def plan_graph(path):
    """y = tanh(x + x) * x over [batch, 64]: two intermediates, so every batch size is a
    shape class of its own with a plan holding an arena."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["a"]), helper.make_node("Tanh", ["a"], ["t"]),
         helper.make_node("Mul", ["t", "x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_plan_memory(og, gpt2_dir, tmp_path):
    """SessionOptions.plan_memory / Model(plan_memory=) bound the cached execution plans
    (og_session_options.plan_memory): plan_stats() reports the budget and what is held; a
    small budget evicts (results unchanged, numpy's), 0 keeps no plan; a value that is not
    an int of bytes is refused with a message naming the option."""
    path = plan_graph(str(tmp_path / "plans.onnx"))
    sizes = [1, 2, 3, 5, 8, 13, 1, 2]

    def run_all(so):
        s = og.InferenceSession(path, so)
        rng = np.random.default_rng(3)
        for b in sizes:
            x = rng.standard_normal((b, 64)).astype(np.float32)
            (y,) = s.run(None, {"x": x})
            np.testing.assert_allclose(y, np.tanh(x + x) * x, rtol=1e-5, atol=1e-6)
        return s.plan_stats()

    so = og.SessionOptions()
    assert so.plan_memory is None
    full = run_all(so)  # the library's default: 64 MiB, room for every class
    assert full["budget"] == 64 << 20 and full["plans"] == 6 and full["evicted"] == 0
    assert full["bytes"] > 0 and full["peak"] >= full["bytes"], full
    so.plan_memory = full["bytes"] // 2
    half = run_all(so)
    assert half["budget"] == full["bytes"] // 2 and half["bytes"] <= half["budget"], half
    assert half["evicted"] > 0 and half["plans"] < 6, half
    so.plan_memory = 0
    none = run_all(so)
    assert none == {"bytes": 0, "peak": none["peak"], "plans": 0, "evicted": none["evicted"],
                    "budget": 0} and none["evicted"] > 0, none

    # a model's sessions: the same tokens, no plan kept with 0
    prompt = np.array([0, 0, 195, 731], dtype=np.int32)
    m = og.Model(gpt2_dir)
    got = generate(og, m, prompt, max_length=12).get_sequence(0).tolist()
    st = m.plan_stats()
    assert st["budget"] == 64 << 20 and st["plans"] > 0 and st["bytes"] > 0, st
    m0 = og.Model(gpt2_dir, plan_memory=0)
    assert generate(og, m0, prompt, max_length=12).get_sequence(0).tolist() == got
    st0 = m0.plan_stats()
    assert st0["budget"] == 0 and st0["plans"] == 0 and st0["bytes"] == 0 and st0["evicted"] > 0, st0

    for bad, err, msg in [(-1, ValueError, r"SessionOptions.plan_memory: -1 bytes is outside 0\.\."),
                          (2**64, ValueError, "is outside 0"),
                          (1.5, TypeError, "SessionOptions.plan_memory: expected an int.*float"),
                          ("64M", TypeError, "expected an int.*str"),
                          (True, TypeError, "expected an int.*bool")]:
        with pytest.raises(err, match=msg):
            so.plan_memory = bad
        with pytest.raises(err, match=msg.replace("SessionOptions.plan_memory", "Model plan_memory")):
            og.Model(gpt2_dir, plan_memory=bad)

    class Options:  # an options object of another kind: checked when the session opens
        plan_memory = -5
    with pytest.raises(ValueError, match="SessionOptions.plan_memory: -5 bytes"):
        og.InferenceSession(path, Options())
