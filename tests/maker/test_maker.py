#!/usr/bin/env python3
"""Checks for tools/make_model.py; a plain script that exits non-zero on any failure.

  python3 tests/maker/test_maker.py [--out DIR] [--quick]

Packages are written under DIR (default build/maker-packages, which git ignores):
  stories-fp32, stories-fp32-interleaved, stories-fp16, stories-int4, stories-int4-acc0,
  stories-int4-shared-asym, qwen2.5-0.5b-l1, qwen3-0.6b-l2-shared, llama-3.2-1b-l1-shared.
Every package must load and generate greedily in onnxruntime-genai. The stories260K
fp32/fp16 packages must reproduce llama2.c's published 200-step text exactly, and the
SentencePiece-style tokenizer.json must encode like llama2.c's own encoder.
--quick skips the full-vocab synthetic models.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

import numpy as np
import onnx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from model_maker import llama2c, quant  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "models")
CKPT = os.path.join(SHARED, "llama2c", "stories260K.bin")
TOK = os.path.join(SHARED, "llama2c", "tok512.bin")
README = os.path.join(SHARED, "README.md")
MAKER = os.path.join(ROOT, "tools", "make_model.py")

failures = []
skips = []


def check(cond, what):
    if cond:
        print(f"  ok: {what}")
    else:
        print(f"  FAIL: {what}")
        failures.append(what)
    return cond


def make(out, *args):
    t = time.time()
    r = subprocess.run([sys.executable, MAKER, "--out", out, *args], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        raise RuntimeError(f"make_model.py {' '.join(args)} failed")
    print(f"  made {os.path.basename(out)} in {time.time() - t:.1f}s: {r.stdout.strip().splitlines()[-1]}")
    return out


def published_text():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"Published output.*?```\n(.*?)\n```", text, re.S)
    if not m:
        raise RuntimeError("README.md: published llama2.c text not found")
    return m.group(1)


def greedy(og, path, prompt_ids, max_length):
    model = og.Model(path)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length, do_sample=False)
    gen = og.Generator(model, params)
    gen.append_tokens(prompt_ids)
    logits = np.array(gen.get_output("logits"))
    while not gen.is_done():
        gen.generate_next_token()
    return model, [int(t) for t in gen.get_sequence(0)], logits


def graph_facts(path):
    m = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
    ops = {}
    for n in m.graph.node:
        ops.setdefault(n.op_type, []).append(n)
    opsets = {o.domain: o.version for o in m.opset_import}
    return m, ops, opsets


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def check_layout(path, dtype, vocab, layers, interleaved=0, accuracy=4, zero_points=False, shared=False,
                 qk_norm=False, bias=False):
    m, ops, opsets = graph_facts(path)
    cfg = json.load(open(os.path.join(path, "genai_config.json")))
    dec = cfg["model"]["decoder"]
    io = onnx.TensorProto.FLOAT16 if dtype == "fp16" else onnx.TensorProto.FLOAT
    ins = {i.name: i for i in m.graph.input}
    outs = {o.name: o for o in m.graph.output}
    ok = opsets.get("") == 22 and opsets.get("com.microsoft") == 1
    ok &= ins["input_ids"].type.tensor_type.elem_type == onnx.TensorProto.INT64
    ok &= ins["attention_mask"].type.tensor_type.elem_type == onnx.TensorProto.INT64
    ok &= all(f"past_key_values.{i}.{kv}" in ins and f"present.{i}.{kv}" in outs
              for i in range(layers) for kv in ("key", "value"))
    ok &= ins["past_key_values.0.key"].type.tensor_type.elem_type == io
    ok &= outs["logits"].type.tensor_type.elem_type == io
    ok &= outs["logits"].type.tensor_type.shape.dim[2].dim_value == vocab
    ok &= ins["past_key_values.0.key"].type.tensor_type.shape.dim[3].dim_param == "kv_cache_dim"
    ok &= len(ops["GroupQueryAttention"]) == layers
    ga = attrs(ops["GroupQueryAttention"][0])
    ok &= ga["do_rotary"] == 1 and ga["rotary_interleaved"] == interleaved
    ok &= ga["num_heads"] == dec["num_attention_heads"] and ga["kv_num_heads"] == dec["num_key_value_heads"]
    ok &= len(ops["SimplifiedLayerNormalization"]) == 1 + (2 * layers if qk_norm else 0)
    ok &= len(ops["SkipSimplifiedLayerNormalization"]) == 2 * layers
    ok &= [n.op_type for n in m.graph.node if "attn_mask_reformat" in n.name] == \
        ["ReduceSum", "Sub", "Cast", "Shape", "Gather", "Cast"]
    ok &= ("Split" in ops) == qk_norm and ("Add" in ops) == bias
    if dtype == "int4":
        mm = ops["MatMulNBits"]
        ok &= len(mm) == 5 * layers + 1 and "MatMul" not in ops
        a = attrs(mm[0])
        ok &= a["bits"] == 4 and a["block_size"] == 32 and a.get("accuracy_level", 0) == accuracy
        ok &= ("accuracy_level" in a) == (accuracy != 0)
        ok &= all((len(n.input) == 4) == zero_points for n in mm)
        ok &= any(n.output[0] == "logits" for n in mm)
        ok &= ("GatherBlockQuantized" in ops) == shared
    else:
        ok &= len(ops["MatMul"]) == 5 * layers + 1 and ("Transpose" in ops) == shared
    ok &= cfg["search"]["past_present_share_buffer"] is True
    ok &= dec["num_hidden_layers"] == layers and cfg["model"]["vocab_size"] == vocab
    n_ops = {k: len(v) for k, v in sorted(ops.items())}
    size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    check(ok, f"{os.path.basename(path)}: model-builder layout ({size / 1e6:.1f} MB; {n_ops})")


def test_quant_matches_onnxruntime():
    print("int4 quantization vs onnxruntime's MLAS quantizer")
    try:
        from onnxruntime.capi._pybind_state import quantize_matmul_4bits
    except ImportError:
        skips.append("onnxruntime quantize_matmul_4bits not available")
        print("  SKIP: onnxruntime.capi._pybind_state.quantize_matmul_4bits not available")
        return
    rng = np.random.default_rng(0)
    for k, n in ((172, 64), (96, 40), (256, 33)):
        w = rng.standard_normal((k, n)).astype(np.float32)
        w[:32, 0] = 0
        w[32:64, 1] = np.abs(w[32:64, 1])
        for sym in (True, False):
            kb = (k + 31) // 32
            packed = np.zeros((n, kb, 16), np.uint8)
            zp = np.zeros((n, (kb + 1) // 2), np.uint8)
            sc = np.zeros((n, kb), np.float32)
            quantize_matmul_4bits(packed, np.pad(w, ((0, kb * 32 - k), (0, 0))), sc, zp, 32, n, k, sym)
            p, s, z = quant.quantize_int4(w.T, 32, sym)
            same = np.array_equal(packed, p) and np.array_equal(sc, s) and (z is None or np.array_equal(zp, z))
            check(same, f"K={k} N={n} {'symmetric' if sym else 'asymmetric'} blocks byte-identical")


def tokenizer_prompts():
    corpus = os.path.join(ROOT, "tests", "tokenizer", "corpus.txt")
    lines = []
    if os.path.exists(corpus):
        with open(corpus, encoding="utf-8") as f:
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
    words = " ".join(lines).split() or "Once upon a time there was a little girl".split()
    rnd = random.Random(0)
    prompts = ["Once upon a time", "", " ", "Hello world!", "  two  spaces", "tab\there",
               "Lily's mom said, \"Lily, let's go to the park.\"\nThe end.", "\u00fcn\u00efc\u00f6d\u00e9 \u2603 \u65e5\u672c"]
    prompts += lines
    prompts += [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 12))) for _ in range(1500)]
    prompts += ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz ABCTHE.,'!\n\u00e9<>0x") for _ in range(rnd.randint(1, 30)))
                for _ in range(1000)]
    # U+2581 is the space marker and <s>/</s>/<unk> are matched as special tokens by HF
    # tokenizers (as for any SentencePiece tokenizer.json); llama2.c reads them as text.
    return [p for p in prompts if "\u2581" not in p and not re.search(r"</?s>|<unk>", p)]


def test_stories(og, out, tok):
    print("stories260K (llama2.c)")
    text = published_text()
    base = os.path.join(out, "stories-fp32")
    make(base, "--from-llama2c", CKPT, "--tokenizer", TOK, "--dtype", "fp32")
    check_layout(base, "fp32", 512, 5)
    cfg = json.load(open(os.path.join(base, "genai_config.json")))
    check(cfg["model"]["type"] == "llama" and cfg["model"]["bos_token_id"] == 1
          and cfg["model"]["eos_token_id"] == 2 and cfg["model"]["context_length"] == 512,
          "genai_config: llama, bos 1, eos 2, context 512")

    # llama2.c's 200 steps are 200 forward passes, each emitting a token: BOS + 200 = 201
    model, seq, _ = greedy(og, base, [1], 201)
    got = og.Tokenizer(model).decode(seq)
    check(got == text, "fp32 greedy from BOS, 200 steps: exactly the published llama2.c text")
    if got != text:
        print("    got:      " + repr(got[-120:]) + "\n    expected: " + repr(text[-120:]))
    fp32_seq = seq

    # tokenizer parity with llama2.c's encoder
    pieces, scores, _ = read_tok()
    hf = tok.Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    prompts = tokenizer_prompts()
    bad = [p for p in prompts if hf.encode(p).ids != llama2c.llama2c_encode(p, pieces, scores)]
    check(not bad, f"HF tokenizers encodes {len(prompts)} prompts exactly like llama2.c's encode()")
    for p in bad[:3]:
        print(f"    {p!r}: hf {hf.encode(p).ids} llama2.c {llama2c.llama2c_encode(p, pieces, scores)}")
    ot = og.Tokenizer(model)
    ot.update_options(add_special_tokens="true")
    bad = [p for p in prompts[:400] if [int(t) for t in ot.encode(p)] != llama2c.llama2c_encode(p, pieces, scores)]
    check(not bad, "onnxruntime-genai's tokenizer agrees on 400 of them (add_special_tokens)")
    check(hf.decode(fp32_seq) == text, "HF tokenizers decodes the generated ids to the same text")

    variants = [
        ("stories-fp32-interleaved", ["--rotary-interleaved"], "fp32", dict(interleaved=1), True),
        ("stories-fp16", ["--dtype", "fp16"], "fp16", {}, True),
        ("stories-int4", ["--dtype", "int4"], "int4", {}, False),
        ("stories-int4-acc0", ["--dtype", "int4", "--accuracy-level", "0"], "int4", dict(accuracy=0), False),
        ("stories-int4-shared-asym", ["--dtype", "int4", "--shared-embeddings", "--asymmetric"], "int4",
         dict(shared=True, zero_points=True), False),
    ]
    for name, args, dtype, layout, exact in variants:
        path = os.path.join(out, name)
        make(path, "--from-llama2c", CKPT, "--tokenizer", TOK, *args)
        check_layout(path, dtype, 512, 5, **layout)
        model, seq, logits = greedy(og, path, [1], 201 if exact else 41)
        got = og.Tokenizer(model).decode(seq)
        if exact:
            check(got == text, f"{name}: exactly the published text")
        else:
            same = next((i for i in range(1, len(seq)) if seq[i] != fp32_seq[i]), len(seq)) - 1
            check(np.isfinite(logits).all() and len(seq) == 41 and same >= 8,
                  f"{name}: 40 greedy tokens, first {same} equal to fp32: {got[:70]!r}...")


_tok_cache = None


def read_tok():
    global _tok_cache
    if _tok_cache is None:
        _tok_cache = llama2c.read_tokenizer_bin(TOK, 512)
    return _tok_cache


def test_synthetic(og, out, tok):
    print("synthetic models at real shapes (random weights, int4)")
    cases = [
        ("qwen2.5-0.5b", 1, [], dict(bias=True), 151936),
        ("qwen3-0.6b", 2, ["--shared-embeddings"], dict(qk_norm=True, shared=True), 151936),
        ("llama-3.2-1b", 1, ["--shared-embeddings"], dict(shared=True), 128256),
        ("phi-3-mini", 1, [], dict(), 32064),  # head size 96
        ("llama-3.1-8b", 1, [], dict(), 128256),  # hidden 4096, head size 128, not tied
    ]
    # a special token of each tokenizer and its real id
    specials = {"qwen": ("<|im_end|>", 151645), "llama": ("<|eot_id|>", 128009), "phi-3": ("<|end|>", 32007)}
    for name, layers, extra, layout, vocab in cases:
        path = os.path.join(out, f"{name}-l{layers}" + ("-shared" if extra else ""))
        make(path, "--synthetic", name, "--dtype", "int4", "--layers", str(layers), "--seed", "7", *extra)
        check_layout(path, "int4", vocab, layers, **layout)
        hf = tok.Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        cfg = json.load(open(os.path.join(path, "genai_config.json")))
        eos = cfg["model"]["eos_token_id"]
        text, sid = next(v for k, v in specials.items() if name.startswith(k))
        enc = hf.encode(text, add_special_tokens=False).ids
        check(enc == [sid] and hf.get_vocab_size() <= vocab,
              f"{name}: tokenizer.json loads in HF tokenizers, special tokens at real ids (eos {eos})")
        model = og.Model(path)
        ids = [int(t) for t in og.Tokenizer(model).encode("hello world, the end")]
        check(ids == hf.encode("hello world, the end", add_special_tokens=False).ids,
              f"{name}: onnxruntime-genai and HF tokenizers agree on a prompt")
        _, seq, logits = greedy(og, path, ids, len(ids) + 6)
        check(np.isfinite(logits).all() and logits.shape[-1] == vocab and len(seq) == len(ids) + 6,
              f"{name}: generates in onnxruntime-genai: {seq[len(ids):]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "maker-packages"))
    ap.add_argument("--quick", action="store_true", help="skip the full-vocab synthetic models")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    try:
        import onnxruntime_genai as og
        import tokenizers as tok
    except ImportError as e:
        print(f"SKIP: {e} (onnxruntime-genai and tokenizers are needed to check packages)")
        return 0

    test_quant_matches_onnxruntime()
    if all(os.path.exists(p) for p in (CKPT, TOK, README)):
        test_stories(og, a.out, tok)
    else:
        skips.append("stories260K data missing")
        print(f"SKIP: {CKPT} / {TOK} / {README} missing: llama2.c checks not run")
    if not a.quick:
        test_synthetic(og, a.out, tok)

    print(f"\n{len(failures)} failure(s), {len(skips)} skip(s) in {time.time() - t0:.0f}s")
    for f in failures:
        print("  FAILED: " + f)
    for s in skips:
        print("  SKIPPED: " + s)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
