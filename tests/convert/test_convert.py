#!/usr/bin/env python3
"""`onnx-genai convert` against outside oracles (issue 25).

  test_convert.py BUILD_DIR WORK_DIR [CASE ...]

GGUF files are written by PyPI's gguf package (llama.cpp's writer, tests/convert/
gguf_models.py) from random weights in each architecture's layout, then converted:

  greedy_*    float32 files: our greedy ids (native) equal onnxruntime-genai 0.18's on the
              converted package, and onnxruntime-genai's on a package tools/make_model.py
              writes from the same float weights (the HF layout, not permuted), whose
              graph the converted one equals node for node (tools/compare_graphs.py);
  dequant_*   every weight of the converted package (MatMulNBits and GatherBlockQuantized
              blocks dequantized in numpy as the ops define them, float MatMul weights,
              norms and biases) equals gguf.quants.dequantize() of the GGUF tensor bit for
              bit (Q4_0, Q5_0, Q8_0, Q3_K, Q6_K, Q5_1, Q5_K, F16, BF16); the float zero
              points of Q4_1, Q2_K and Q4_K are one rounding away: the largest difference
              is printed and must stay below 2e-7 / 1e-6 here. K-quant blocks are random bytes (gguf
              dequantizes them but cannot quantize into them); a Q4_K_M-like mix (attn_v,
              ffn_down and the output Q6_K) has q, k and v of two types, written apart;
  parity_*    `onnx-genai parity` (native vs onnxruntime, same tokens, logits within the
              CLI's tolerances) on the quantized packages;
  tokenizer_* our tokenizer.json encodes tests/tokenizer/corpus.txt exactly as the Hugging
              Face tokenizer the GGUF metadata came from (tokenizers library on both, and
              our runtime's tokenizer on ours): SentencePiece (llama2.c's tok512), byte-
              level BPE with Qwen2's and Llama 3's pre-tokenizers, GPT-2's;
  refuse      unsupported architectures, tensor types and broken files are refused with
              the key or tensor named.
qwen3moe (Qwen3-MoE: MoE / QMoE experts) runs greedy (against make_model.py's qwen3
package with MoE layers of the same weights), dequant (expert rows, gate and up
interleaved) and parity like the others.
A case whose oracle or data is missing prints SKIP and the script exits 77 when nothing ran.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

import gguf_models as gm  # noqa: E402


class Skip(Exception):
    pass


def need(module):
    try:
        return __import__(module)
    except ImportError as e:
        raise Skip(f"{module} is not installed ({e})")


def cli_env():
    """Without a sanitizer runtime preloaded into python3 (a sanitized CLI has its own)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def convert(build, gguf_path, out, expect_ok=True):
    r = subprocess.run([os.path.join(build, "onnx-genai"), "convert", gguf_path, out, "--quiet"],
                       capture_output=True, text=True, env=cli_env())
    if expect_ok and r.returncode != 0:
        raise RuntimeError(f"convert {gguf_path}: {r.stderr.strip()}")
    return r


def ours_greedy(build, d, ids, max_length):
    r = subprocess.run([os.path.join(build, "onnx-genai"), "generate", "-m", d, "--ids",
                        ",".join(map(str, ids)), "--max-length", str(max_length),
                        "--min-length", str(max_length), "--json", "--backend", "native"],
                       capture_output=True, text=True, env=cli_env())
    if r.returncode != 0:
        raise RuntimeError(f"generate {d}: {r.stderr.strip()}")
    return json.loads(r.stdout)["sequences"][0]


def ort_greedy(d, ids, max_length):
    og = need("onnxruntime_genai")
    cfg = og.Config(d)
    cfg.clear_providers()
    model = og.Model(cfg)
    p = og.GeneratorParams(model)
    p.set_search_options(max_length=max_length, min_length=max_length, do_sample=False)
    g = og.Generator(model, p)
    g.append_tokens(ids)
    while not g.is_done():
        g.generate_next_token()
    return [int(t) for t in g.get_sequence(0)]


def tokenizers_for(arch):
    got = gm.spm_tokenizer() if arch in ("llama", "mistral") else gm.bpe_tokenizer()
    if got is None:
        raise Skip("../shared/models/llama2c/tok512.bin is missing")
    return got


# llama.cpp's Q4_K_M mix, as its quantizer assigns it: attn_v and ffn_down Q6_K, the output
# (or a tied embedding) Q6_K, the rest Q4_K
Q4_K_M = {"attn_v": "Q6_K", "ffn_down": "Q6_K", "output": "Q6_K"}


def model_files(work, arch, qtype, tied=False, seed=1, mix=None, rope_scaling=None):
    need("gguf")
    from gguf import GGMLQuantizationType as Q
    tok, hf = tokenizers_for(arch)
    kq = qtype.name.endswith("_K") or bool(mix)
    s = gm.shape(arch, len(tok["tokens"]), kquant=kq)
    w = gm.random_weights(s, seed)
    name = f"{arch}_{qtype.name.lower()}{'_mix' if mix else ''}{'_tied' if tied else ''}" \
        f"{'_llama3rope' if rope_scaling else ''}"
    path = os.path.join(work, name + ".gguf")
    mix_types = {k: getattr(Q, v) for k, v in (mix or {}).items()}
    if mix and tied:
        mix_types["token_embd"] = mix_types.pop("output")
    gm.write_gguf(path, s, w, qtype, tok, tied=tied, mix=mix_types, rope_scaling=rope_scaling)
    return path, os.path.join(work, name), s, w, hf


PROMPT = [1, 17, 42, 99, 7]


# Llama 3's rope scaling at a short original context, so that all three kinds of pairs
# (kept, divided by the factor, blended) occur at head size 16
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 32}


def greedy_case(arch, rope_scaling=None):
    name = f"greedy_{arch}{'_llama3rope' if rope_scaling else ''}"

    def run(build, work):
        from gguf import GGMLQuantizationType as Q
        path, out, s, w, hf = model_files(work, arch, Q.F32, rope_scaling=rope_scaling)
        convert(build, path, out)
        ours = ours_greedy(build, out, PROMPT, 24)
        theirs = ort_greedy(out, PROMPT, 24)
        maker_dir = out + "_maker"
        if arch.startswith("gemma"):
            write_gemma_maker(maker_dir, arch, s, w)
        elif arch == "qwen3moe":
            write_moe_maker(maker_dir, s, w)
        else:
            write_classic_maker(maker_dir, arch, s, w, hf, rope_scaling)
        maker = ort_greedy(maker_dir, PROMPT, 24)
        return check_greedy(name, out, maker_dir, ours, theirs, maker)
    return run


def write_classic_maker(maker_dir, arch, s, w, hf, rope_scaling):
    """make_model.py's package of the same weights (DecoderSpec: llama, qwen2/3, phi3)."""
    from model_maker.decoder import BuildOptions, DecoderSpec
    from model_maker.package import write_package
    spec = DecoderSpec(model_type=arch, hidden_size=s["hidden"], intermediate_size=s["inter"],
                           num_layers=s["layers"], num_heads=s["heads"], num_kv_heads=s["kv_heads"],
                           head_size=s["head_dim"], vocab_size=s["vocab"], context_length=s["context"],
                           rms_eps=s["eps"], rope_theta=s["theta"], qkv_bias=arch == "qwen2",
                           qk_norm=arch == "qwen3", rope_scaling=dict(rope_scaling or {}))
    write_package(maker_dir, spec, gm.MakerWeights(w), BuildOptions(dtype="fp32", head_multiple=0), hf, {})


def write_gemma_maker(maker_dir, arch, s, w):
    """make_model.py's Gemma 2 / Gemma 3 package of the same weights (an Arch as its catalog
    has them, at these shapes; the embedding scale spelled as the converter spells it)."""
    from model_maker.arch import Arch
    from model_maker.decoder import BuildOptions
    from model_maker.package import write_arch_package
    scale = float(np.float32(np.sqrt(s["hidden"])))
    kw = dict(softcap=s["softcap"], final_softcap=s["final_softcap"]) if arch == "gemma2" else \
        dict(qk_norm=True, local_rope_theta=10000.0)
    a = Arch(model_type="gemma2" if arch == "gemma2" else "gemma3_text", hidden=s["hidden"],
             inter=s["inter"], layers=s["layers"], heads=s["heads"], kv_heads=s["kv_heads"],
             head_dim=s["head_dim"], vocab=s["vocab"], context=s["context"], eps=s["eps"],
             rope_theta=s["theta"], mlp="gelu_tanh", emb_scale=scale, emb_scale_text=repr(scale),
             sandwich=True, sliding_window=s["window"], sliding_layers=(0,), bos=400, eos=402,
             pad=400, **kw)
    write_arch_package(maker_dir, a, BuildOptions(dtype="fp32", head_multiple=0), gm.MakerWeights(w))


def write_moe_maker(maker_dir, s, w):
    """make_model.py's Qwen3-MoE package of the same weights: qwen3 with MoE layers (float
    experts, SwiGLU with interleaved gate/up rows, as it writes Qwen3.5-MoE's)."""
    from model_maker.arch import Arch
    from model_maker.decoder import BuildOptions
    from model_maker.package import write_arch_package
    a = Arch(model_type="qwen3", hidden=s["hidden"], inter=s["inter"], layers=s["layers"],
             heads=s["heads"], kv_heads=s["kv_heads"], head_dim=s["head_dim"], vocab=s["vocab"],
             context=s["context"], eps=s["eps"], rope_theta=s["theta"], qk_norm=True, mlp="moe",
             experts=s["experts"], top_k=s["top_k"], moe_inter=s["inter"], bos=400, eos=402, pad=400)
    write_arch_package(maker_dir, a, BuildOptions(dtype="fp32", head_multiple=0), gm.MakerWeights(w))


def check_greedy(name, out, maker_dir, ours, theirs, maker):
    """Our ids against onnxruntime-genai's on both packages, and the two graphs."""
    ok = True
    # the layout too: node by node, the graph make_model.py writes (tools/compare_graphs.py)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "compare_graphs.py"),
                        os.path.join(out, "model.onnx"), os.path.join(maker_dir, "model.onnx")],
                       capture_output=True, text=True)
    if r.returncode != 0 or "0 difference(s)" not in r.stdout:
        print(f"FAIL {name}: the graph differs from make_model.py's:\n{r.stdout[-2000:]}{r.stderr}")
        ok = False
    for label, seq in (("onnxruntime-genai on the converted package", theirs),
                       ("onnxruntime-genai on make_model.py's package", maker)):
        if ours != seq:
            print(f"FAIL {name}: ours {ours}\n     {label}: {seq}")
            ok = False
    if ok:
        print(f"ok   {name}: {len(ours)} ids equal onnxruntime-genai's on the converted "
              f"package and on make_model.py's, whose graph it equals node for node")
    return ok


def load_inits(d):
    onnx = need("onnx")
    from onnx import numpy_helper
    m = onnx.load(os.path.join(d, "model.onnx"))  # external data loaded from model.onnx.data
    return m, {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def nbits_dequant(node, inits):
    attrs = {a.name: a.i for a in node.attribute}
    return blocks_dequant(inits[node.input[1]], inits[node.input[2]], attrs["N"], attrs["K"],
                          attrs["bits"], attrs["block_size"], node.input[3:4], inits)


def blocks_dequant(packed, scales, n, k, bits, block, zp_name, inits):
    """MatMulNBits / GatherBlockQuantized blocks along K as the ops define them: (q - zero
    point) * scale in float32, zero point 2^(bits-1) unless given (uint8 or float)."""
    scales = scales.astype(np.float32)
    kb = k // block
    if bits == 8:
        q = packed.reshape(n, kb, block).astype(np.float32)
    elif bits == 2:  # four a byte, low bits first
        p = packed.reshape(n, kb, block // 4)
        q = np.empty((n, kb, block), np.float32)
        for j in range(4):
            q[:, :, j::4] = (p >> (2 * j)) & 3
    else:
        p = packed.reshape(n, kb, block // 2)
        q = np.empty((n, kb, block), np.float32)
        q[:, :, 0::2] = p & 15
        q[:, :, 1::2] = p >> 4
    zp = np.float32(1 << (bits - 1))
    if zp_name and zp_name[0]:
        zp = inits[zp_name[0]].astype(np.float32).reshape(n, kb, 1)
    return ((q - zp) * scales.reshape(n, kb, 1)).reshape(n, k)


def gguf_weights(path, arch, s):
    gguf = need("gguf")
    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        out[t.name] = a.reshape([int(x) for x in reversed(t.shape)]) if a.ndim > 1 else a
    if arch in ("llama", "mistral"):
        for i in range(s["layers"]):
            out[f"blk.{i}.attn_q.weight"] = gm.unpermute_rows(out[f"blk.{i}.attn_q.weight"], s["heads"])
            out[f"blk.{i}.attn_k.weight"] = gm.unpermute_rows(out[f"blk.{i}.attn_k.weight"], s["kv_heads"])
    return out


def expected_weights(src, s, tied):
    """The converted package's weights by initializer/node role, from the GGUF's."""
    exp = {"model.embed_tokens.weight": src["token_embd.weight"],
           "/lm_head/MatMul": src["token_embd.weight" if tied else "output.weight"]}
    L = s["layers"]
    exp[f"model.layers.{L}.final_norm_layernorm.weight"] = src["output_norm.weight"]
    for i in range(L):
        p, b = f"blk.{i}.", f"/model/layers.{i}"
        if p + "attn_qkv.weight" in src:  # phi3's fused tensors
            exp[f"{b}/attn/qkv_proj/MatMul"] = src[p + "attn_qkv.weight"]
            f = s["inter"]
            src[p + "ffn_gate.weight"], src[p + "ffn_up.weight"] = \
                src[p + "ffn_up.weight"][:f], src[p + "ffn_up.weight"][f:]
        else:
            exp[f"{b}/attn/qkv_proj/MatMul"] = np.concatenate(
                [src[p + "attn_q.weight"], src[p + "attn_k.weight"], src[p + "attn_v.weight"]])
        exp[f"{b}/attn/o_proj/MatMul"] = src[p + "attn_output.weight"]
        if p + "ffn_gate_inp.weight" in src:  # experts: fc1 rows gate, up, gate, up, ...
            exp[f"{b}/moe/router/MatMul"] = src[p + "ffn_gate_inp.weight"]
            g, u = src[p + "ffn_gate_exps.weight"], src[p + "ffn_up_exps.weight"]
            fc1 = np.empty((g.shape[0], 2 * g.shape[1], g.shape[2]), np.float32)
            fc1[:, 0::2], fc1[:, 1::2] = g, u
            exp[f"{b}/moe/fc1"], exp[f"{b}/moe/fc2"] = fc1, src[p + "ffn_down_exps.weight"]
        else:
            for m in ("gate", "up", "down"):
                exp[f"{b}/mlp/{m}_proj/MatMul"] = src[p + f"ffn_{m}.weight"]
        exp[f"model.layers.{i}.input_layernorm.weight"] = src[p + "attn_norm.weight"]
        if p + "post_ffw_norm.weight" in src:  # Gemma's sandwich
            exp[f"model.layers.{i}.post_attention_layernorm.weight"] = src[p + "post_attention_norm.weight"]
            exp[f"model.layers.{i}.pre_feedforward_layernorm.weight"] = src[p + "ffn_norm.weight"]
            exp[f"model.layers.{i}.post_feedforward_layernorm.weight"] = src[p + "post_ffw_norm.weight"]
        else:
            exp[f"model.layers.{i}.post_attention_layernorm.weight"] = src[p + "ffn_norm.weight"]
        if p + "attn_q.bias" in src:
            exp[f"model.layers.{i}.attn.qkv_proj.Add.bias"] = np.concatenate(
                [src[p + "attn_q.bias"], src[p + "attn_k.bias"], src[p + "attn_v.bias"]])
        if p + "attn_q_norm.weight" in src:
            exp[f"model.layers.{i}.attn.q_norm.layernorm.weight"] = src[p + "attn_q_norm.weight"]
            exp[f"model.layers.{i}.attn.k_norm.layernorm.weight"] = src[p + "attn_k_norm.weight"]
    return exp


def dequant_case(arch, qname, tied=False, tol=0.0, mix=None):
    def run(build, work):
        from gguf import GGMLQuantizationType as Q
        path, out, s, _, _ = model_files(work, arch, getattr(Q, qname), tied=tied, mix=mix)
        convert(build, path, out)
        m, inits = load_inits(out)
        exp = expected_weights(gguf_weights(path, arch, s), s, tied)
        nodes = {}
        for n in m.graph.node:
            if n.op_type == "MatMulNBits":
                nodes[n.name.rsplit("_Q", 1)[0]] = nbits_dequant(n, inits)
            elif n.op_type == "MatMul":
                nodes[n.name] = inits[n.input[1]].T
            elif n.op_type == "MoE":
                b = n.name.rsplit("/", 1)[0]
                nodes[b + "/fc1"], nodes[b + "/fc2"] = inits[n.input[2]], inits[n.input[4]]
            elif n.op_type == "QMoE":  # each expert's rows as MatMulNBits blocks
                at = {a.name: a.i for a in n.attribute}
                b = n.name.rsplit("/", 1)[0]
                for fc, (wi, si) in (("fc1", (2, 3)), ("fc2", (5, 6))):
                    qw, sc = inits[n.input[wi]], inits[n.input[si]]
                    e, rows = qw.shape[0], qw.shape[1]
                    k = qw.shape[2] * 8 // at["expert_weight_bits"]
                    nodes[f"{b}/{fc}"] = np.stack([blocks_dequant(qw[x], sc[x], rows, k, at["expert_weight_bits"],
                                                                  at["block_size"], [], inits) for x in range(e)])
            elif n.op_type == "GatherBlockQuantized":
                # the embedding read from blocks: Reshape(initializer) -> GatherBlockQuantized
                reshape = next(r for r in m.graph.node if n.input[0] in r.output)
                data = inits[reshape.input[0]]
                at = {a.name: a.i for a in n.attribute}
                k = data.shape[1] * data.shape[2] * 8 // at["bits"]
                inits["model.embed_tokens.weight"] = blocks_dequant(
                    data, inits[n.input[2]], data.shape[0], k, at["bits"], at["block_size"],
                    n.input[3:4], inits)
        for i in range(s["layers"]):
            # projections written apart (q, k, v of different types) compare as the fused one
            b = f"/model/layers.{i}/attn"
            if f"{b}/q_proj/MatMul" in nodes:
                nodes[f"{b}/qkv_proj/MatMul"] = np.concatenate(
                    [nodes[f"{b}/{x}_proj/MatMul"] for x in "qkv"])
            p = f"model.layers.{i}.attn"
            if f"{p}.q_proj.Add.bias" in inits:
                inits[f"{p}.qkv_proj.Add.bias"] = np.concatenate(
                    [inits[f"{p}.{x}_proj.Add.bias"] for x in "qkv"])
        worst, checked = 0.0, 0
        for key, want in exp.items():
            got = nodes.get(key) if key.startswith("/") else inits.get(key)
            if got is None:
                print(f"FAIL dequant_{arch}_{qname}: the package has no {key}")
                return False
            if got.shape != want.shape:
                print(f"FAIL dequant_{arch}_{qname}: {key} has shape {got.shape}, expected {want.shape}")
                return False
            if tol == 0.0:
                if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                    bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))[0]
                    print(f"FAIL dequant_{arch}_{qname}: {key} differs at {tuple(bad)}: "
                          f"{got[tuple(bad)]!r} vs gguf {want[tuple(bad)]!r}")
                    return False
            else:
                worst = max(worst, float(np.max(np.abs(got - want))))
            checked += 1
        if worst > tol:
            print(f"FAIL dequant_{arch}_{qname}: max |difference| {worst:.3g} > {tol:.3g}")
            return False
        how = "bit for bit" if tol == 0.0 else f"max |difference| {worst:.3g} (<= {tol:.3g})"
        print(f"ok   dequant_{arch}_{qname}{'_mix' if mix else ''}{'_tied' if tied else ''}: {checked} weights equal "
              f"gguf's dequantize() {how}")
        return True
    return run


def parity_case(arch, qname, tied=False, mix=None):
    def run(build, work):
        from gguf import GGMLQuantizationType as Q
        need("onnxruntime")
        path, out, _, _, _ = model_files(work, arch, getattr(Q, qname), tied=tied, seed=5, mix=mix)
        convert(build, path, out)
        r = subprocess.run([os.path.join(build, "onnx-genai"), "parity", out, "--ids",
                            ",".join(map(str, PROMPT)), "--max-length", "24", "--min-length", "24"],
                           capture_output=True, text=True, env=cli_env())
        last = (r.stdout.strip().splitlines() or [r.stderr.strip()])[-1]
        if r.returncode != 0:
            print(f"FAIL parity_{arch}_{qname}: {last}\n{r.stderr.strip()}")
            return False
        print(f"ok   parity_{arch}_{qname}{'_mix' if mix else ''}{'_tied' if tied else ''}: {last}")
        return True
    return run


def corpus():
    with open(os.path.join(ROOT, "tests", "tokenizer", "corpus.txt"), encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f]
    return [ln for ln in lines if ln] + ["", " ", "  two  spaces", "\n\nnew\nlines\n",
                                          "<|im_start|>user\nhi<|im_end|>", "<s> a </s>"]


def runtime_encode(build, tok_path, texts, work):
    """Our C tokenizer's ids for texts (tests/tokenizer's tok-cli batch mode), or None
    when tok-cli is not built."""
    cli = os.path.join(build, "tests", "tokenizer", "tok-cli")
    if not os.path.exists(cli):
        return None
    hexfile = os.path.join(work, "texts.hex")
    with open(hexfile, "w") as f:
        for t in texts:
            f.write(t.encode("utf-8").hex() + "\n")
    r = subprocess.run([cli, "batch", tok_path, hexfile], capture_output=True, text=True,
                       env=cli_env())
    if r.returncode != 0:
        raise RuntimeError(f"tok-cli {tok_path}: {r.stderr.strip()}")
    rows = [ln.split()[1:] for ln in r.stdout.splitlines() if ln.startswith("E")]
    return [[int(x) for x in row] for row in rows]


def compare_tokenizers(build, work, name, ours_path, hf_json):
    """Our tokenizer.json, run by HF tokenizers and by our runtime, against the source."""
    tokenizers = need("tokenizers")
    ours = tokenizers.Tokenizer.from_file(ours_path)
    ref = tokenizers.Tokenizer.from_str(json.dumps(hf_json))
    texts = corpus()
    native = runtime_encode(build, ours_path, texts, work)
    for i, t in enumerate(texts):
        a, b = ours.encode(t).ids, ref.encode(t).ids
        if a != b or (native is not None and native[i] != b):
            print(f"FAIL {name}: {t!r}\n  ours (HF tokenizers) {a}\n  ours (runtime) "
                  f"{native[i] if native else '-'}\n  source {b}")
            return False
    how = "by HF tokenizers and by our runtime" if native is not None else \
        "by HF tokenizers (tok-cli not built: the runtime's side skipped)"
    print(f"ok   {name}: {len(texts)} texts encode to the source tokenizer's ids, {how}")
    return True


def tokenizer_case(kind):
    def run(build, work):
        from gguf import GGMLQuantizationType as Q
        if kind == "gpt2":
            src = os.path.join(ROOT, "..", "shared", "models", "ortgenai", "hf-internal-testing",
                               "tiny-random-gpt2-fp32", "tokenizer.json")
            if not os.path.exists(src):
                raise Skip(f"{src} is missing")
            with open(src, encoding="utf-8") as f:
                hf = json.load(f)
            vocab = dict(hf["model"]["vocab"])
            special = {}
            for a in hf["added_tokens"]:
                vocab[a["content"]] = a["id"]
                special[a["id"]] = a["special"]
            names = [None] * len(vocab)
            for k, i in vocab.items():
                names[i] = k
            types = [3 if special.get(i) else 4 if i in special else 1 for i in range(len(names))]
            merges = [m if isinstance(m, str) else " ".join(m) for m in hf["model"]["merges"]]
            eos = vocab["<|endoftext|>"]
            tok = dict(model="gpt2", pre="gpt2", tokens=names, types=types, merges=merges, bos=eos,
                       eos=eos, add_bos=False)
            arch, qtype = "qwen2", Q.Q8_0
        elif kind == "llama3":
            tok, hf = gm.bpe_tokenizer(llama3=True)
            arch, qtype = "llama", Q.Q4_0
        else:
            tok, hf = tokenizers_for("llama" if kind == "spm" else "qwen2")
            arch, qtype = ("llama" if kind == "spm" else "qwen2"), Q.Q4_0
            if kind == "qwen2":  # an end-of-turn token apart from eos, as chat models have
                tok = dict(tok, eos=400, eot=402)
            else:  # llama.cpp writes Mistral's checkpoints as "llama", named
                tok = dict(tok, name="Mistral-Tiny-Random")
        s = gm.shape(arch, len(tok["tokens"]), layers=1)
        path = os.path.join(work, f"tok_{kind}.gguf")
        gm.write_gguf(path, s, gm.random_weights(s, 9), qtype, tok)
        out = os.path.join(work, f"tok_{kind}")
        convert(build, path, out)
        ok = compare_tokenizers(build, work, f"tokenizer_{kind}", os.path.join(out, "tokenizer.json"), hf)
        with open(os.path.join(out, "tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        if tok.get("template") and cfg.get("chat_template") != tok["template"]:
            print(f"FAIL tokenizer_{kind}: chat_template {cfg.get('chat_template')!r}")
            ok = False
        with open(os.path.join(out, "genai_config.json"), encoding="utf-8") as f:
            model = json.load(f)["model"]
        eos = model["eos_token_id"]
        if kind == "spm" and model["type"] != "mistral":
            print(f"FAIL tokenizer_{kind}: model.type {model['type']!r} for a file named Mistral")
            ok = False
        want = [tok["eos"], tok["eot"]] if "eot" in tok else tok["eos"]
        if eos != want:
            print(f"FAIL tokenizer_{kind}: genai_config eos_token_id {eos}, expected {want}")
            ok = False
        return ok
    return run


def refuse(build, work):
    gguf = need("gguf")
    from gguf import GGMLQuantizationType as Q
    tok, _ = tokenizers_for("qwen2")
    s = gm.shape("qwen2", len(tok["tokens"]), layers=1)
    w = gm.random_weights(s, 3)
    cases = []
    # an architecture we do not convert: named with its key
    p = os.path.join(work, "bad_arch.gguf")
    gm.write_gguf(p, dict(s, arch="qwen2moe"), w, Q.F32, tok)
    cases.append((p, "general.architecture 'qwen2moe'"))
    # a K-quant tensor: named
    p = os.path.join(work, "bad_type.gguf")
    gm.write_gguf(p, s, w, Q.F32, tok)
    r = gguf.GGUFReader(p)
    data = bytearray(open(p, "rb").read())
    t = next(t for t in r.tensors if t.name == "blk.0.ffn_up.weight")
    cases.append((_retype(p, data, t, Q.Q6_K, work), "blk.0.ffn_up.weight"))
    # a layer's tensors missing (found only while writing: no half-written weights stay)
    p = os.path.join(work, "missing_layer.gguf")
    gm.write_gguf(p, dict(s, layers=2), w, Q.F32, tok)
    cases.append((p, "tensor 'blk.1.attn_norm.weight' is missing"))
    # a truncated file: the tensor that does not fit is named
    p = os.path.join(work, "truncated.gguf")
    with open(p, "wb") as f:
        f.write(data[: len(data) - 100])
    cases.append((p, "output.weight"))
    ok = True
    for path, want in cases:
        r = convert(build, path, os.path.join(work, "refused"), expect_ok=False)
        if r.returncode == 0 or want not in r.stderr:
            print(f"FAIL refuse {os.path.basename(path)}: exit {r.returncode}, {r.stderr.strip()!r} "
                  f"should name {want!r}")
            ok = False
        else:
            print(f"ok   refuse {os.path.basename(path)}: {r.stderr.strip()}")
    left = [f for f in ("model.onnx", "model.onnx.data") if os.path.exists(os.path.join(work, "refused", f))]
    if left:
        print(f"FAIL refuse: refused conversions left {left} in {os.path.join(work, 'refused')}")
        ok = False
    return ok


def context_option(build, work):
    """--context N: rotary caches of N rows and genai_config's context_length/max_length N."""
    from gguf import GGMLQuantizationType as Q
    path, out, _, _, _ = model_files(work, "qwen2", Q.Q8_0)
    r = subprocess.run([os.path.join(build, "onnx-genai"), "convert", path, out, "--context", "48",
                        "--quiet"], capture_output=True, text=True, env=cli_env())
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    m, inits = load_inits(out)
    with open(os.path.join(out, "genai_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    got = (inits["cos_cache"].shape[0], cfg["model"]["context_length"], cfg["search"]["max_length"])
    ok = got == (48, 48, 48)
    print(f"{'ok  ' if ok else 'FAIL'} context_option: cos_cache rows, context_length, max_length {got}")
    return ok


def _retype(path, data, t, qtype, work):
    """The same file with one tensor's type field changed to qtype (its byte size shrinks,
    so the file stays valid for a reader that checks sizes): the converter must refuse it."""
    import struct
    name = t.name.encode()
    at = data.find(struct.pack("<Q", len(name)) + name)
    n_dims = struct.unpack_from("<I", data, at + 8 + len(name))[0]
    type_at = at + 8 + len(name) + 4 + 8 * n_dims
    out = bytearray(data)
    struct.pack_into("<I", out, type_at, int(qtype))
    p = os.path.join(work, "bad_type.gguf")
    with open(p, "wb") as f:
        f.write(out)
    return p


def cases():
    c = {}
    for arch in ("llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "qwen3moe"):
        c[f"greedy_{arch}"] = greedy_case(arch)
    c["greedy_llama_llama3rope"] = greedy_case("llama", LLAMA3_ROPE)
    for arch, q, tied, tol, mix in (("llama", "Q4_0", False, 0.0, None), ("llama", "Q8_0", False, 0.0, None),
                                    ("qwen2", "Q4_0", True, 0.0, None), ("qwen3", "Q8_0", False, 0.0, None),
                                    ("llama", "F16", False, 0.0, None), ("qwen2", "BF16", False, 0.0, None),
                                    ("llama", "Q5_0", False, 0.0, None), ("qwen2", "Q6_K", True, 0.0, None),
                                    ("llama", "Q4_1", False, 2e-7, None), ("qwen3", "Q5_1", False, 0.0, None),
                                    ("llama", "Q4_K", False, 1e-6, None), ("qwen2", "Q5_K", False, 0.0, None),
                                    ("qwen2", "Q4_K", True, 1e-6, Q4_K_M), ("phi3", "Q4_0", False, 0.0, None),
                                    ("gemma3", "Q4_0", True, 0.0, None), ("qwen2", "Q3_K", True, 0.0, None),
                                    ("llama", "Q3_K", False, 0.0, None), ("llama", "Q2_K", False, 1e-6, None),
                                    ("qwen3", "Q2_K", True, 1e-6, None), ("qwen3moe", "Q4_0", False, 0.0, None),
                                    ("qwen3moe", "Q8_0", False, 0.0, None), ("qwen3moe", "Q4_K", False, 1e-6, None)):
        c[f"dequant_{arch}_{q}{'_mix' if mix else ''}{'_tied' if tied else ''}"] = \
            dequant_case(arch, q, tied, tol, mix)
    for arch, q, tied, mix in (("llama", "Q4_0", False, None), ("llama", "Q8_0", False, None),
                               ("qwen2", "Q4_0", True, None), ("qwen3", "Q8_0", False, None),
                               ("llama", "Q4_1", False, None), ("llama", "Q5_0", False, None),
                               ("qwen2", "Q6_K", True, None), ("llama", "Q4_K", False, Q4_K_M),
                               ("qwen3", "Q5_K", False, None), ("phi3", "Q8_0", False, None),
                               ("gemma2", "Q8_0", False, None), ("gemma3", "Q4_0", True, None),
                               ("llama", "Q3_K", False, None), ("qwen2", "Q3_K", True, None),
                               ("qwen2", "Q2_K", False, None), ("qwen3", "Q2_K", True, None),
                               ("qwen3moe", "Q4_0", False, None),
                               ("qwen3moe", "Q8_0", False, None), ("qwen3moe", "Q4_K", False, None)):
        c[f"parity_{arch}_{q}{'_mix' if mix else ''}{'_tied' if tied else ''}"] = parity_case(arch, q, tied, mix)
    for kind in ("spm", "qwen2", "llama3", "gpt2"):
        c[f"tokenizer_{kind}"] = tokenizer_case(kind)
    c["refuse"] = refuse
    c["context_option"] = context_option
    return c


def run_case(name, fn, build, work):
    """'ok', 'fail' or 'skip' (with its reason printed)."""
    try:
        return "ok" if fn(build, work) else "fail"
    except Skip as e:
        print(f"SKIP {name}: {e}")
        return "skip"
    except Exception as e:  # an error in the converter or an oracle is a failure
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        return "fail"


def main():
    build, work = sys.argv[1], sys.argv[2]
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    all_cases = cases()
    results = [run_case(n, all_cases[n], build, work) for n in (sys.argv[3:] or list(all_cases))]
    n_ok, n_fail, n_skip = (results.count(k) for k in ("ok", "fail", "skip"))
    print(f"{n_ok} passed, {n_fail} failed, {n_skip} skipped")
    sys.exit(1 if n_fail else 77 if not n_ok else 0)


if __name__ == "__main__":
    main()
