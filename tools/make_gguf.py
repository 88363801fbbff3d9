#!/usr/bin/env python3
"""Write an onnxruntime-genai int4 package's weights as a GGUF Q4_0 model for llama.cpp.

    make_gguf.py --package DIR --out MODEL.gguf

The package is one tools/make_model.py writes (the model builder's layout: MatMulNBits
int4, block 32, symmetric, no zero points; qwen2, qwen3, llama or phi3). Q4_0 is the same
format but for the packing and the scale's precision: 32 values a block, value =
(q - 8) * d. So the 4-bit values are copied as they are (only reordered: MatMulNBits
packs elements 2i and 2i+1 into byte i, Q4_0 elements i and i + 16) and each float32
scale becomes d in float16; llama.cpp then runs the very weights we run, up to the
scale's rounding. The fused qkv projection is split into q, k and v (with their biases
for qwen2); for llama, q and k rows are permuted to llama.cpp's rotary layout (the
interleaved pairs convert_hf_to_gguf makes). The embedding table (float32 in the
package, one row read per token) is quantized to Q4_0 as llama.cpp's own converter
would; norms stay float32. The vocabulary comes from the package's tokenizer.json
(byte-level BPE: tokens, merges, special tokens).

phi3 (Phi-4-mini's shape) is written as llama.cpp's phi3 architecture: q, k and v in one
fused tensor, gate and up in one (gate rows first), rotary over the package's rotary
dimensions (partial), half-split pairs as the package has them. A LongRoPE package's
factors are baked into its caches, not kept as such: the GGUF carries none, so llama.cpp
turns every position by the base frequencies (the same work per token; other values).

Needs numpy, onnx and PyPI's gguf package (bench/requirements.txt).
"""
import argparse
import json
import os
import sys

import numpy as np


def load_initializers(model_path):
    """name -> numpy array (external data memory-mapped), and the graph."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(model_path, load_external_data=False)
    base = os.path.dirname(model_path)
    maps = {}
    out = {}
    np_types = {1: np.float32, 2: np.uint8, 10: np.float16, 7: np.int64}
    for t in m.graph.initializer:
        ext = {e.key: e.value for e in t.external_data}
        if not ext:
            out[t.name] = numpy_helper.to_array(t)
            continue
        loc = os.path.join(base, ext["location"])
        if loc not in maps:
            maps[loc] = np.memmap(loc, dtype=np.uint8, mode="r")
        off, length = int(ext.get("offset", 0)), int(ext["length"])
        dt = np_types[t.data_type]
        out[t.name] = maps[loc][off:off + length].view(dt).reshape(tuple(t.dims))
    return out, m.graph


def q4_0_from_matmulnbits(packed, scales):
    """MatMulNBits [N, kb, 16] uint8 + [N, kb] float32 scales -> Q4_0 rows [N, kb * 18]."""
    n, kb, half = packed.shape
    if half != 16:
        raise SystemExit(f"block size {half * 2}: Q4_0 needs blocks of 32")
    q = np.empty((n, kb, 32), dtype=np.uint8)
    q[:, :, 0::2] = packed & 0x0F
    q[:, :, 1::2] = packed >> 4
    qs = q[:, :, :16] | (q[:, :, 16:] << 4)
    d = scales.astype(np.float16).view(np.uint8).reshape(n, kb, 2)
    return np.concatenate([d, qs], axis=2).reshape(n, kb * 18)


def rotary_cos(w, graph):
    """The cos cache: an initializer, or (the builder's LongRoPE If of two caches) the
    short one, a Constant of the If's else branch."""
    if "cos_cache" in w:
        return w["cos_cache"]
    from onnx import numpy_helper
    for n in graph.node:
        if n.op_type != "If":
            continue
        for at in n.attribute:
            if at.name != "else_branch":
                continue
            for c in at.g.node:
                if c.op_type == "Constant" and c.output[0].startswith("cos_cache"):
                    return numpy_helper.to_array(c.attribute[0].t)
    raise SystemExit("no cos cache (cos_cache, or a LongRoPE If's) in the package")


def permute_rope(rows, heads):
    """convert_hf_to_gguf's permutation of q/k rows for llama's interleaved rotary."""
    n = rows.shape[0]
    return rows.reshape(heads, 2, n // heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    import gguf

    with open(os.path.join(a.package, "genai_config.json")) as f:
        cfg = json.load(f)["model"]
    dec = cfg["decoder"]
    arch = cfg["type"]
    if arch not in ("qwen2", "qwen3", "llama", "phi3"):
        raise SystemExit(f"model type {arch}: only qwen2, qwen3, llama and phi3 packages are converted")
    w, graph = load_initializers(os.path.join(a.package, dec["filename"]))
    H, L = dec["hidden_size"], dec["num_hidden_layers"]
    nh, nkv, hd = dec["num_attention_heads"], dec["num_key_value_heads"], dec["head_size"]
    V = cfg["vocab_size"]
    eps = next(float(at.f) for n in graph.node if n.op_type == "SimplifiedLayerNormalization"
               for at in n.attribute if at.name == "epsilon")
    gqa = next(n for n in graph.node if n.op_type == "GroupQueryAttention")
    if any(at.name == "rotary_interleaved" and at.i for at in gqa.attribute):
        raise SystemExit("rotary_interleaved=1 packages are not converted")
    # rope theta from the cos cache: row 1 holds s cos(theta^(-2j/d)), row 0 the scale s;
    # j = 1, d = the rotary dimensions (2 x the cache's columns)
    cos = np.asarray(rotary_cos(w, graph), dtype=np.float64)
    rot = 2 * cos.shape[1]
    theta = float(np.exp(-np.log(np.arccos(cos[1, 1] / cos[0, 1])) * rot / 2))
    theta = float(f"{theta:.6g}")
    if "lm_head.MatMul.weight_Q4" not in w:
        raise SystemExit("no int4 lm_head (lm_head.MatMul.weight_Q4): write the package with --dtype int4")
    ffn = w["model.layers.0.mlp.gate_proj.MatMul.weight_Q4"].shape[0]

    out = gguf.GGUFWriter(a.out, arch)
    out.add_name(os.path.basename(os.path.abspath(a.package)))
    out.add_context_length(cfg.get("context_length", 4096))
    out.add_embedding_length(H)
    out.add_block_count(L)
    out.add_feed_forward_length(ffn)
    out.add_head_count(nh)
    out.add_head_count_kv(nkv)
    out.add_key_length(hd)
    out.add_value_length(hd)
    out.add_rope_freq_base(theta)
    if rot != hd:
        out.add_rope_dimension_count(rot)
    out.add_layer_norm_rms_eps(eps)
    out.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)

    # vocabulary: byte-level BPE from tokenizer.json
    with open(os.path.join(a.package, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    tokens = [f"[PAD{i}]" for i in range(V)]
    types = [gguf.TokenType.UNUSED] * V
    for t, i in vocab.items():
        if i < V:
            tokens[i], types[i] = t, gguf.TokenType.NORMAL
    for at in tok.get("added_tokens", []):
        if at["id"] < V:
            tokens[at["id"]] = at["content"]
            types[at["id"]] = gguf.TokenType.CONTROL if at.get("special") else gguf.TokenType.USER_DEFINED
    merges = [" ".join(m) if isinstance(m, list) else m for m in tok["model"].get("merges", [])]
    out.add_tokenizer_model("gpt2")
    out.add_tokenizer_pre("qwen2" if arch.startswith("qwen") else "llama-bpe")
    out.add_token_list(tokens)
    out.add_token_types(types)
    out.add_token_merges(merges)
    out.add_bos_token_id(cfg["bos_token_id"])
    eos = cfg["eos_token_id"]
    out.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)

    Q4 = gguf.GGMLQuantizationType.Q4_0

    def q4(name, packed, scales, k):
        rows = q4_0_from_matmulnbits(np.asarray(packed), np.asarray(scales, dtype=np.float32))
        assert rows.shape[1] == k // 32 * 18
        out.add_tensor(name, rows, raw_dtype=Q4)  # byte shape: the writer derives [rows, k]

    def f32(name, x):
        out.add_tensor(name, np.ascontiguousarray(np.asarray(x, dtype=np.float32)))

    emb = np.asarray(w["model.embed_tokens.weight"], dtype=np.float32)
    out.add_tensor("token_embd.weight", gguf.quants.quantize(emb, Q4), raw_dtype=Q4)
    for i in range(L):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        f32(b + "attn_norm.weight", w[p + "input_layernorm.weight"])
        f32(b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"])
        qkv, qkv_s = np.asarray(w[p + "attn.qkv_proj.MatMul.weight_Q4"]), np.asarray(w[p + "attn.qkv_proj.MatMul.weight_scales"])
        qn, kn = nh * hd, nkv * hd
        if arch == "phi3":
            q4(b + "attn_qkv.weight", qkv, qkv_s, H)
            parts = {}
        else:
            parts = {"attn_q": (0, qn, nh), "attn_k": (qn, qn + kn, nkv), "attn_v": (qn + kn, qn + 2 * kn, 0)}
        for name, (r0, r1, heads) in parts.items():
            pk, sc = qkv[r0:r1], qkv_s[r0:r1]
            if arch == "llama" and heads:
                pk, sc = permute_rope(pk, heads), permute_rope(sc, heads)
            q4(b + name + ".weight", pk, sc, H)
        if p + "attn.qkv_proj.Add.bias" in w:
            bias = np.asarray(w[p + "attn.qkv_proj.Add.bias"], dtype=np.float32)
            f32(b + "attn_q.bias", bias[:qn])
            f32(b + "attn_k.bias", bias[qn:qn + kn])
            f32(b + "attn_v.bias", bias[qn + kn:])
        for which, gname in (("q", "attn_q_norm"), ("k", "attn_k_norm")):
            key = f"model.layers.{i}.attn.{which}_norm.layernorm.weight"
            if key in w:
                f32(b + gname + ".weight", w[key])
        q4(b + "attn_output.weight", w[p + "attn.o_proj.MatMul.weight_Q4"],
           w[p + "attn.o_proj.MatMul.weight_scales"], nh * hd)
        gate = (w[p + "mlp.gate_proj.MatMul.weight_Q4"], w[p + "mlp.gate_proj.MatMul.weight_scales"])
        up = (w[p + "mlp.up_proj.MatMul.weight_Q4"], w[p + "mlp.up_proj.MatMul.weight_scales"])
        if arch == "phi3":  # one tensor, gate rows first (llama.cpp's fused SwiGLU)
            q4(b + "ffn_up.weight", np.concatenate([np.asarray(gate[0]), np.asarray(up[0])]),
               np.concatenate([np.asarray(gate[1]), np.asarray(up[1])]), H)
        else:
            q4(b + "ffn_gate.weight", gate[0], gate[1], H)
            q4(b + "ffn_up.weight", up[0], up[1], H)
        q4(b + "ffn_down.weight", w[p + "mlp.down_proj.MatMul.weight_Q4"],
           w[p + "mlp.down_proj.MatMul.weight_scales"], ffn)
    f32("output_norm.weight", w[f"model.layers.{L}.final_norm_layernorm.weight"])
    q4("output.weight", w["lm_head.MatMul.weight_Q4"], w["lm_head.MatMul.weight_scales"], H)

    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    print(f"wrote {a.out}: {arch}, {L} layers, hidden {H}, heads {nh}/{nkv} x {hd}, ffn {ffn}, "
          f"vocab {V}, rope theta {theta:g}, rms eps {eps:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
