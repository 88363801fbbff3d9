"""Random decoders written as GGUF files with PyPI's gguf package (llama.cpp's writer),
in the layout llama.cpp's convert_hf_to_gguf gives each architecture, and the same float
weights for tools/make_model.py (the HF layout).

  llama/mistral: q and k rows permuted to llama.cpp's interleaved rotary order
  qwen2: q/k/v biases; qwen3: per-head q/k norms; phi3: attn_qkv and ffn_up = [gate; up];
  gemma2/gemma3: four norms a layer, a sliding first layer, soft caps / q-k norms
  qwen3moe: qwen3's attention, 4 experts (2 used) as 3-D ffn_{gate,up,down}_exps and the
  router ffn_gate_inp (float32, as llama.cpp's quantizer leaves it)
Weights are normal(0, 0.08) (norms 1 + normal(0, 0.1)), float32 in HF order; quantized
files quantize them with gguf.quants (exactly as llama.cpp's converter would).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def shape(arch, vocab, layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, inter=128,
          context=128, kquant=False):
    if kquant:  # every K a multiple of the 256 values of a K-quant block
        hidden, head_dim, inter = 256, 64, 512
    return dict(arch=arch, vocab=vocab, layers=layers, hidden=hidden, heads=heads,
                kv_heads=kv_heads, head_dim=head_dim, inter=inter, context=context,
                experts=4 if arch == "qwen3moe" else 0, top_k=2,
                eps=1e-5, theta=10000.0 if arch in ("llama", "mistral", "gemma2") else 1000000.0,
                # Gemma: layer 0 slides over 8 positions, layer 1 attends to all; Gemma 2's
                # soft caps; Gemma 3's local rotary base is llama.cpp's default 10000
                window=8 if arch.startswith("gemma") else 0,
                softcap=50.0 if arch == "gemma2" else 0.0, final_softcap=30.0 if arch == "gemma2" else 0.0)


def random_weights(s, seed):
    """HF-layout float32 weights: per layer dicts keyed as tools/model_maker expects."""
    rng = np.random.default_rng(seed)
    H, F, nh, nkv, hd = s["hidden"], s["inter"], s["heads"], s["kv_heads"], s["head_dim"]

    def w(*shape):
        return rng.normal(0, 0.08, shape).astype(np.float32)

    def norm(n):
        return (1 + rng.normal(0, 0.1, n)).astype(np.float32)

    layers = []
    for _ in range(s["layers"]):
        d = dict(q=w(nh * hd, H), k=w(nkv * hd, H), v=w(nkv * hd, H), o=w(H, nh * hd),
                 gate=w(F, H), up=w(F, H), down=w(H, F), input_norm=norm(H), post_norm=norm(H))
        if s["arch"] == "qwen2":
            d.update(q_bias=w(nh * hd), k_bias=w(nkv * hd), v_bias=w(nkv * hd))
        if s["arch"] in ("qwen3", "gemma3", "qwen3moe"):
            d.update(q_norm=norm(hd), k_norm=norm(hd))
        if s["experts"]:  # router and experts; the maker's fc1 interleaves gate and up rows
            E = s["experts"]
            d.update(router=w(E, H), exp_gate=w(E, F, H), exp_up=w(E, F, H), experts_down=w(E, H, F))
            gu = np.empty((E, 2 * F, H), np.float32)
            gu[:, 0::2], gu[:, 1::2] = d["exp_gate"], d["exp_up"]
            d["experts_gate_up"] = gu
        if s["arch"].startswith("gemma"):  # sandwich norms
            d.update(pre_ff_norm=norm(H), post_ff_norm=norm(H))
        layers.append(d)
    return dict(layers=layers, embed=w(s["vocab"], H), final_norm=norm(H), lm_head=w(s["vocab"], H))


def permute_rows(w, heads):
    """convert_hf_to_gguf's q/k permutation: halves (j, j + d/2) -> pairs (2j, 2j + 1)."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def unpermute_rows(w, heads):
    return (w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


class MakerWeights:
    """The provider tools/model_maker's write_package reads (layer dicts, embed, ...)."""

    def __init__(self, weights):
        self.w = weights

    def layer(self, i):
        return self.w["layers"][i]

    def embed(self):
        return self.w["embed"]

    def final_norm(self):
        return self.w["final_norm"]

    def lm_head(self):
        return self.w["lm_head"]


# K-quant blocks gguf cannot quantize into: random values with small float16 scales at
# these byte offsets (bytes per 256 values, offsets of d and dmin)
K_BLOCKS = {"Q4_K": (144, 0, 2), "Q5_K": (176, 0, 2), "Q6_K": (210, 208, None),
            "Q2_K": (84, 80, 82), "Q3_K": (110, 108, None)}


def random_k_blocks(rows, cols, qname, seed):
    """rows x cols values in a K-quant format, drawn as bytes (the scales of Q6_K are int8 in
    [-16, 16]); every sub-block scale, zero one included, occurs."""
    size, d_at, dmin_at = K_BLOCKS[qname]
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, size=(rows, cols // 256, size), dtype=np.uint8)
    b[:, :, d_at:d_at + 2] = np.frombuffer(np.float16(0.0006).tobytes(), np.uint8)
    if dmin_at is not None:
        b[:, :, dmin_at:dmin_at + 2] = np.frombuffer(np.float16(0.0004).tobytes(), np.uint8)
    if qname == "Q6_K":
        b[:, :, 192:208] = rng.integers(-16, 17, size=(rows, cols // 256, 16)).astype(np.int8).view(np.uint8)
    return b.reshape(rows, -1)


def _write_tensor(writer, name, arr, qtype):
    import gguf
    from gguf import GGMLQuantizationType as Q
    if arr.ndim == 1 or qtype == Q.F32:
        writer.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))
    elif qtype == Q.F16:
        writer.add_tensor(name, arr.astype(np.float16))
    elif qtype.name in K_BLOCKS:  # (3-D experts: their rows one after another)
        seed = int.from_bytes(name.encode()[-4:], "little")
        rows = int(np.prod(arr.shape[:-1]))
        blocks = random_k_blocks(rows, arr.shape[-1], qtype.name, seed)
        writer.add_tensor(name, blocks.reshape(*arr.shape[:-1], -1), raw_dtype=qtype)
    else:
        writer.add_tensor(name, gguf.quants.quantize(np.ascontiguousarray(arr), qtype), raw_dtype=qtype)


def llama3_rope_factors(s, scaling):
    """rope_freqs.weight as llama.cpp's converter computes it for Llama 3's rope scaling:
    per rotated pair the divisor of its frequency (1 for short wavelengths, `factor` for
    long ones, a smooth blend between)."""
    import math
    dim, base = s["head_dim"], s["theta"]
    factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    out = []
    for j in range(0, dim, 2):
        wavelen = 2 * math.pi * base ** (j / dim)
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def write_gguf(path, s, weights, qtype, tok, tied=False, embed_type=None, mix=None,
               rope_scaling=None):
    """tok: dict(model='llama'|'gpt2', tokens, scores?, types?, merges?, pre?, bos, eos,
    template?, add_bos?); mix: {tensor suffix ('attn_v', 'ffn_down', 'output',
    'token_embd'): another type}, as llama.cpp's K-quant mixes give some tensors."""
    import gguf
    mix = mix or {}

    def _tensor(wr, name, arr, q):  # the mix's type where it names the tensor
        key = name.split(".")[-2]
        return _write_tensor(wr, name, arr, mix.get(key, q) if arr.ndim > 1 else q)
    arch = s["arch"]
    wr = gguf.GGUFWriter(path, arch)
    wr.add_block_count(s["layers"])
    wr.add_context_length(s["context"])
    wr.add_embedding_length(s["hidden"])
    wr.add_feed_forward_length(s["inter"])
    wr.add_head_count(s["heads"])
    wr.add_head_count_kv(s["kv_heads"])
    wr.add_layer_norm_rms_eps(s["eps"])
    wr.add_rope_freq_base(s["theta"])
    if s.get("window"):
        wr.add_sliding_window(s["window"])
        if arch == "gemma3":
            wr.add_sliding_window_pattern(2)  # (llama.cpp's default for Gemma 3 is 6)
    if s.get("softcap"):
        wr.add_attn_logit_softcapping(s["softcap"])
        wr.add_final_logit_softcapping(s["final_softcap"])
    if s.get("experts"):
        wr.add_expert_count(s["experts"])
        wr.add_expert_used_count(s["top_k"])
        wr.add_expert_feed_forward_length(s["inter"])
    if s["head_dim"] != s["hidden"] // s["heads"]:
        wr.add_key_length(s["head_dim"])
        wr.add_value_length(s["head_dim"])
    if tok.get("name"):
        wr.add_name(tok["name"])
    wr.add_tokenizer_model(tok["model"])
    if tok.get("pre"):
        wr.add_tokenizer_pre(tok["pre"])
    wr.add_token_list(tok["tokens"])
    if tok.get("scores") is not None:
        wr.add_token_scores(tok["scores"])
    if tok.get("types") is not None:
        wr.add_token_types(tok["types"])
    if tok.get("merges"):
        wr.add_token_merges(tok["merges"])
    wr.add_bos_token_id(tok["bos"])
    wr.add_eos_token_id(tok["eos"])
    if "eot" in tok:
        wr.add_eot_token_id(tok["eot"])
    if "add_bos" in tok:
        wr.add_add_bos_token(tok["add_bos"])
    if tok.get("template"):
        wr.add_chat_template(tok["template"])
    nh, nkv = s["heads"], s["kv_heads"]
    permute = arch in ("llama", "mistral")
    _tensor(wr, "token_embd.weight", weights["embed"], embed_type if embed_type is not None else qtype)
    for i, L in enumerate(weights["layers"]):
        p = f"blk.{i}."
        _tensor(wr, p + "attn_norm.weight", L["input_norm"], qtype)
        q, k = L["q"], L["k"]
        if permute:
            q, k = permute_rows(q, nh), permute_rows(k, nkv)
        if arch == "phi3":  # llama.cpp keeps Phi-3's fused projections
            _tensor(wr, p + "attn_qkv.weight", np.concatenate([q, k, L["v"]]), qtype)
        else:
            _tensor(wr, p + "attn_q.weight", q, qtype)
            _tensor(wr, p + "attn_k.weight", k, qtype)
            _tensor(wr, p + "attn_v.weight", L["v"], qtype)
        for b in ("q", "k", "v"):
            if b + "_bias" in L:
                _tensor(wr, p + f"attn_{b}.bias", L[b + "_bias"], qtype)
        if "q_norm" in L:
            _tensor(wr, p + "attn_q_norm.weight", L["q_norm"], qtype)
            _tensor(wr, p + "attn_k_norm.weight", L["k_norm"], qtype)
        _tensor(wr, p + "attn_output.weight", L["o"], qtype)
        if "pre_ff_norm" in L:  # Gemma's four norms
            _tensor(wr, p + "post_attention_norm.weight", L["post_norm"], qtype)
            _tensor(wr, p + "ffn_norm.weight", L["pre_ff_norm"], qtype)
            _tensor(wr, p + "post_ffw_norm.weight", L["post_ff_norm"], qtype)
        else:
            _tensor(wr, p + "ffn_norm.weight", L["post_norm"], qtype)
        if "router" in L:
            wr.add_tensor(p + "ffn_gate_inp.weight", L["router"])
            _tensor(wr, p + "ffn_gate_exps.weight", L["exp_gate"], qtype)
            _tensor(wr, p + "ffn_up_exps.weight", L["exp_up"], qtype)
            _tensor(wr, p + "ffn_down_exps.weight", L["experts_down"], qtype)
        elif arch == "phi3":
            _tensor(wr, p + "ffn_up.weight", np.concatenate([L["gate"], L["up"]]), qtype)
        else:
            _tensor(wr, p + "ffn_gate.weight", L["gate"], qtype)
            _tensor(wr, p + "ffn_up.weight", L["up"], qtype)
        if "router" not in L:
            _tensor(wr, p + "ffn_down.weight", L["down"], qtype)
    if rope_scaling:
        wr.add_tensor("rope_freqs.weight", llama3_rope_factors(s, rope_scaling))
    _tensor(wr, "output_norm.weight", weights["final_norm"], qtype)
    if not tied:
        _tensor(wr, "output.weight", weights["lm_head"], qtype)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def spm_tokenizer():
    """llama2.c's tok512 (SentencePiece pieces and scores) as GGUF tokenizer metadata, and
    the HF tokenizer.json tools/model_maker makes of the same pieces (the oracle)."""
    from model_maker import llama2c
    path = os.path.join(ROOT, "..", "shared", "models", "llama2c", "tok512.bin")
    if not os.path.exists(path):
        return None
    pieces, scores, _ = llama2c.read_tokenizer_bin(path, 512)
    hf = llama2c.tokenizer_json(pieces, scores)
    names = [None] * len(pieces)
    for name, i in hf["model"]["vocab"].items():
        names[i] = name
    types = []
    for i, n in enumerate(names):
        if i == 0:
            types.append(2)      # unknown
        elif i < 3:
            types.append(3)      # control
        elif n.startswith("<0x") and len(n) == 6:
            types.append(6)      # byte
        else:
            types.append(1)
    tok = dict(model="llama", tokens=names, scores=[float(x) for x in scores], types=types, bos=1,
               eos=2, template="{% for m in messages %}{{ m['content'] }}{% endfor %}")
    return tok, hf


def bpe_tokenizer(llama3=False):
    """A small byte-level BPE (tools/model_maker's synthetic one: Qwen2's pre-tokenizer and
    NFC, or Llama 3's with merges ignored for whole-word tokens and a BOS template) as GGUF
    metadata, and its HF tokenizer.json."""
    from model_maker import synthetic
    specials = [(400, "<|endoftext|>"), (401, "<|im_start|>"), (402, "<|im_end|>")]
    if llama3:
        specials = [(400, "<|begin_of_text|>"), (401, "<|end_of_text|>"), (402, "<|eot_id|>")]
    hf = synthetic.byte_bpe_tokenizer(specials, llama_style=llama3)
    n = len(hf["model"]["vocab"]) + len(specials)
    names = [None] * n
    for name, i in hf["model"]["vocab"].items():
        names[i] = name
    for i, c in specials:
        names[i] = c
    types = [3 if i >= 400 else 1 for i in range(n)]
    merges = [f"{a} {b}" for a, b in hf["model"]["merges"]]
    tok = dict(model="gpt2", pre="llama-bpe" if llama3 else "qwen2", tokens=names, types=types,
               merges=merges, bos=400, eos=402, add_bos=llama3,
               template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                        "<|im_end|>\n{% endfor %}")
    return tok, hf
