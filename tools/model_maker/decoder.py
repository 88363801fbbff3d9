"""Decoder-only transformer graph in onnxruntime-genai's model-builder layout.

One graph for llama / qwen2 / qwen3 style models on the CPU GroupQueryAttention path:

  attention_mask -> ReduceSum -> Sub 1 -> Cast int32 = seqlens_k
                 -> Shape -> Gather 1 -> Cast int32 = total_sequence_length
  input_ids -> Gather(embed) -> SimplifiedLayerNormalization (layer 0 input norm)
  per layer: packed QKV MatMul (+ bias Add) [-> Split -> per-head q/k norm]
             -> GroupQueryAttention(do_rotary, cos/sin caches, past/present KV)
             -> o_proj MatMul -> SkipSimplifiedLayerNormalization
             -> gate/up MatMul, Sigmoid, Mul, Mul -> down MatMul
             -> SkipSimplifiedLayerNormalization (next layer's input norm)
  final SkipSimplifiedLayerNormalization -> lm_head MatMul -> logits

Node and initializer names follow the builder (/model/layers.N/attn/qkv_proj/MatMul,
model.layers.N.attn.qkv_proj.MatMul.weight, ...). Weights come from a provider with
torch Linear orientation ([out, in]); MatMul initializers are stored transposed [in, out]
(or as MatMulNBits blocks for int4).
"""

from dataclasses import dataclass, field, replace

import numpy as np
from onnx import TensorProto

from .graph import GraphWriter
from .quant import quantize_int4


@dataclass
class DecoderSpec:
    model_type: str            # genai model.type: llama, qwen2, qwen3
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_size: int
    vocab_size: int
    context_length: int
    rms_eps: float
    rope_theta: float
    qkv_bias: bool = False
    qk_norm: bool = False
    rotary_interleaved: int = 0
    rope_scaling: dict = field(default_factory=dict)  # llama3: factor, low/high_freq_factor, original_max
    true_head_size: int = 0    # when head_size was padded (see pad_heads): the model's own
    bos_token_id: int = 1
    eos_token_id: object = 2   # int or list
    pad_token_id: int = 0


@dataclass
class BuildOptions:
    dtype: str = "fp32"          # fp32 | fp16 | int4
    accuracy_level: int = 4      # MatMulNBits attribute (omitted when 0, as the builder does)
    block_size: int = 32
    symmetric: bool = True       # int4 without zero points (builder default)
    head_multiple: int = 16      # pad head_size to this multiple (0: keep it)
    shared_embeddings: bool = False  # builder's shared_embeddings: embedding read from lm_head's weight


def rope_inv_freq(spec):
    d = spec.true_head_size or spec.head_size
    inv = 1.0 / (spec.rope_theta ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float64) / d))
    rs = spec.rope_scaling
    if rs.get("rope_type") == "llama3":
        # Llama 3.1+ wavelength-dependent rescaling, baked into the caches as the builder does.
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        out = []
        for f in inv:
            wl = 2 * np.pi / f
            if wl < hi_wl:
                out.append(f)
            elif wl > lo_wl:
                out.append(f / factor)
            else:
                s = (old / wl - lo) / (hi - lo)
                out.append((1 - s) * f / factor + s * f)
        inv = np.array(out, dtype=np.float64)
    return inv


def rope_caches(spec):
    """cos/sin caches [context_length, head_size/2] for GroupQueryAttention."""
    inv = rope_inv_freq(spec).astype(np.float32)
    t = np.arange(spec.context_length, dtype=np.float32)
    freqs = np.outer(t, inv).astype(np.float32)
    cos, sin = np.cos(freqs), np.sin(freqs)
    half = spec.head_size // 2
    if cos.shape[1] < half:
        # padded heads: the extra (all-zero) dimensions rotate by the identity
        extra = half - cos.shape[1]
        cos = np.concatenate([cos, np.ones((cos.shape[0], extra), np.float32)], axis=1)
        sin = np.concatenate([sin, np.zeros((sin.shape[0], extra), np.float32)], axis=1)
    return cos, sin


def pad_heads(spec, weights, multiple=16):
    """Pad head_size up to a multiple (onnxruntime's GroupQueryAttention needs % 16 == 0).

    Exact: q/k/v get zero rows in the new dimensions (so q.k and the rotation of the real
    dimensions are unchanged, given cos/sin columns of the real frequencies and the
    attention scale of the real head size), and o_proj gets zero columns for them.
    Returns (spec, weights), unchanged when already a multiple.
    """
    t = spec.head_size
    if t % multiple == 0:
        return spec, weights
    if spec.qk_norm:
        raise ValueError("cannot pad heads of a model with per-head q/k norms (the RMS would change)")
    h = (t + multiple - 1) // multiple * multiple
    if spec.rotary_interleaved:
        index = np.arange(t)
    else:  # half-split pairs (j, j + t/2) must become (j, j + h/2)
        index = np.concatenate([np.arange(t // 2), h // 2 + np.arange(t // 2)])
    new_spec = replace(spec, head_size=h, true_head_size=t)
    return new_spec, _PaddedHeads(weights, spec, t, h, index)


class _PaddedHeads:
    def __init__(self, inner, spec, t, h, index):
        self.inner, self.s, self.t, self.h, self.index = inner, spec, t, h, index

    def _rows(self, w, heads):
        out = np.zeros((heads, self.h) + w.shape[1:], dtype=w.dtype)
        out[:, self.index] = w.reshape((heads, self.t) + w.shape[1:])
        return out.reshape((heads * self.h,) + w.shape[1:])

    def layer(self, i):
        w = dict(self.inner.layer(i))
        nh, nkv = self.s.num_heads, self.s.num_kv_heads
        for key, heads in (("q", nh), ("k", nkv), ("v", nkv), ("q_bias", nh), ("k_bias", nkv), ("v_bias", nkv)):
            if key in w:
                w[key] = self._rows(w[key], heads)
        w["o"] = np.ascontiguousarray(self._rows(np.ascontiguousarray(w["o"].T), nh).T)
        return w

    def embed(self):
        return self.inner.embed()

    def final_norm(self):
        return self.inner.final_norm()

    def lm_head(self):
        return self.inner.lm_head()


class DecoderBuilder:
    def __init__(self, spec, opts, out_dir):
        self.s = spec
        self.o = opts
        self.g = GraphWriter(out_dir)
        self.io_np = np.float16 if opts.dtype == "fp16" else np.float32
        self.io_onnx = TensorProto.FLOAT16 if opts.dtype == "fp16" else TensorProto.FLOAT

    # -- pieces -------------------------------------------------------------------
    def weight(self, basename, w_nk):
        """Write a MatMul weight; returns (N, K, initializer names) for matmul()."""
        g = self.g
        wname = basename[1:].replace("/", ".") + ".weight"
        n, k = w_nk.shape
        if self.o.dtype == "int4":
            packed, scales, zp = quantize_int4(w_nk, self.o.block_size, self.o.symmetric)
            names = [g.initializer(wname + "_Q4", packed), g.initializer(wname + "_scales", scales)]
            if zp is not None:
                names.append(g.initializer(wname + "_zero_points", zp))
            return n, k, names
        return n, k, [g.initializer(wname, np.ascontiguousarray(w_nk.T), self.io_np)]

    def matmul(self, basename, x, w_nk, written=None):
        """MatMul (or MatMulNBits for int4) of x by a [N, K] weight; returns output name."""
        g = self.g
        n, k, names = written or self.weight(basename, w_nk)
        if self.o.dtype == "int4":
            inputs = [x] + names
            attrs = dict(K=k, N=n, bits=4, block_size=self.o.block_size)
            if self.o.accuracy_level:
                attrs["accuracy_level"] = self.o.accuracy_level
            out = f"{basename}/output_0" if basename != "/lm_head/MatMul" else "logits"
            g.node("MatMulNBits", inputs, [out], basename + "_Q4", domain="com.microsoft", **attrs)
            return out
        out = f"{basename}/output_0" if basename != "/lm_head/MatMul" else "logits"
        g.node("MatMul", [x, names[0]], [out], basename)
        return out

    def add_bias(self, name, x, bias):
        b = self.g.initializer(name[1:].replace("/", ".") + ".bias", bias, self.io_np)
        return self.g.node("Add", [x, b], [f"{name}/output_0"], name)

    def io_inputs(self):
        s, g = self.s, self.g
        g.input("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])
        g.input("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])
        for i in range(s.num_layers):
            for kv in ("key", "value"):
                g.input(f"past_key_values.{i}.{kv}", self.io_onnx,
                        ["batch_size", s.num_kv_heads, "past_sequence_length", s.head_size])
        g.output("logits", self.io_onnx, ["batch_size", "sequence_length", s.vocab_size])
        for i in range(s.num_layers):
            for kv in ("key", "value"):
                g.output(f"present.{i}.{kv}", self.io_onnx,
                         ["batch_size", s.num_kv_heads, "total_sequence_length", s.head_size])

    def mask_subgraph(self):
        g = self.g
        b = "/model/attn_mask_reformat/attn_mask_subgraph"
        one = g.const_i64([1])
        rs = g.node("ReduceSum", ["attention_mask", one], [f"{b}/ReduceSum/output_0"], f"{b}/ReduceSum", keepdims=0)
        sub = g.node("Sub", [rs, one], [f"{b}/Sub/output_0"], f"{b}/Sub")
        seqlens = g.node("Cast", [sub], [f"{b}/Sub/Cast/output_0"], f"{b}/Sub/Cast", to=TensorProto.INT32)
        shp = g.node("Shape", ["attention_mask"], [f"{b}/Shape/output_0"], f"{b}/Shape")
        gat = g.node("Gather", [shp, g.const_i64(1)], [f"{b}/Gather/output_0"], f"{b}/Gather", axis=0)
        total = g.node("Cast", [gat], [f"{b}/Gather/Cast/output_0"], f"{b}/Gather/Cast", to=TensorProto.INT32)
        return seqlens, total

    def qk_norm(self, layer, which, x, weight, width):
        s, g = self.s, self.g
        b = f"/model/layers.{layer}/attn/{which}_norm"
        r1 = g.node("Reshape", [x, g.const_i64([0, -1, s.head_size])], [f"{b}/Reshape_1/output_0"], f"{b}/Reshape_1")
        w = g.initializer(f"model.layers.{layer}.attn.{which}_norm.layernorm.weight", weight, self.io_np)
        ln = g.node("SimplifiedLayerNormalization", [r1, w],
                    [f"{b}/SimplifiedLayerNormalization/output_0"], f"{b}/SimplifiedLayerNormalization",
                    epsilon=float(s.rms_eps), axis=-1, stash_type=1)
        return g.node("Reshape", [ln, g.const_i64([0, -1, width])], [f"{b}/Reshape_2/output_0"], f"{b}/Reshape_2")

    # -- whole model --------------------------------------------------------------
    def build(self, weights):
        s, g = self.s, self.g
        self.io_inputs()
        seqlens, total = self.mask_subgraph()

        lm_written = None
        if self.o.shared_embeddings:
            lm_written = self.weight("/lm_head/MatMul", weights.lm_head())
            x = self.shared_embedding(lm_written)
        else:
            emb = g.initializer("model.embed_tokens.weight", weights.embed(), self.io_np)
            x = g.node("Gather", [emb, "input_ids"], ["/model/embed_tokens/Gather/output_0"],
                       "/model/embed_tokens/Gather")

        cos, sin = rope_caches(s)
        cos_name = g.initializer("cos_cache", cos, self.io_np)
        sin_name = g.initializer("sin_cache", sin, self.io_np)

        q_size = s.num_heads * s.head_size
        kv_size = s.num_kv_heads * s.head_size
        residual = x      # root input of the next skip norm
        skip = None       # branch output to add into it
        for i in range(s.num_layers):
            lw = weights.layer(i)
            base = f"/model/layers.{i}"
            # input norm: plain for layer 0, fused residual add afterwards
            w_in = g.initializer(f"model.layers.{i}.input_layernorm.weight", lw["input_norm"], self.io_np)
            if i == 0:
                h = g.node("SimplifiedLayerNormalization", [residual, w_in], [f"{base}/input_layernorm/output_0"],
                           f"{base}/input_layernorm/LayerNorm", epsilon=float(s.rms_eps), axis=-1, stash_type=1)
            else:
                h, residual = self.skip_norm(f"{base}/input_layernorm", residual, skip, w_in)

            # attention
            qkv_w = np.concatenate([lw["q"], lw["k"], lw["v"]], axis=0)
            qkv = self.matmul(f"{base}/attn/qkv_proj/MatMul", h, qkv_w)
            if s.qkv_bias:
                qkv = self.add_bias(f"{base}/attn/qkv_proj/Add", qkv,
                                    np.concatenate([lw["q_bias"], lw["k_bias"], lw["v_bias"]]))
            if s.qk_norm:
                sp = f"{base}/attn/qkv_proj/Split"
                q, k, v = [f"{sp}/output_{j}" for j in range(3)]
                g.node("Split", [qkv, g.const_i64([q_size, kv_size, kv_size])], [q, k, v], sp, axis=-1)
                q = self.qk_norm(i, "q", q, lw["q_norm"], q_size)
                k = self.qk_norm(i, "k", k, lw["k_norm"], kv_size)
            else:
                q, k, v = qkv, "", ""
            an = f"{base}/attn/GroupQueryAttention"
            attn = g.node(
                "GroupQueryAttention",
                [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens, total, cos_name, sin_name],
                [f"{an}/output_0", f"present.{i}.key", f"present.{i}.value"], an, domain="com.microsoft",
                num_heads=s.num_heads, kv_num_heads=s.num_kv_heads, scale=float(1.0 / np.sqrt(s.true_head_size or s.head_size)),
                local_window_size=-1, softcap=0.0, do_rotary=1, rotary_interleaved=int(s.rotary_interleaved))
            o = self.matmul(f"{base}/attn/o_proj/MatMul", attn, lw["o"])

            w_post = g.initializer(f"model.layers.{i}.post_attention_layernorm.weight", lw["post_norm"], self.io_np)
            h, residual = self.skip_norm(f"{base}/post_attention_layernorm", residual, o, w_post)

            # SiLU-gated MLP
            gate = self.matmul(f"{base}/mlp/gate_proj/MatMul", h, lw["gate"])
            up = self.matmul(f"{base}/mlp/up_proj/MatMul", h, lw["up"])
            act = g.node("Sigmoid", [gate], [f"{base}/mlp/act_fn/Sigmoid/output_0"], f"{base}/mlp/act_fn/Sigmoid")
            act = g.node("Mul", [gate, act], [f"{base}/mlp/act_fn/Mul/output_0"], f"{base}/mlp/act_fn/Mul")
            m = g.node("Mul", [act, up], [f"{base}/mlp/Mul/output_0"], f"{base}/mlp/Mul")
            skip = self.matmul(f"{base}/mlp/down_proj/MatMul", m, lw["down"])

        L = s.num_layers
        w_fin = g.initializer(f"model.layers.{L}.final_norm_layernorm.weight", weights.final_norm(), self.io_np)
        h = g.node("SkipSimplifiedLayerNormalization", [residual, skip, w_fin],
                   [f"/model/layers.{L}/final_norm_layernorm/output_0"],
                   f"/model/layers.{L}/final_norm_layernorm/SkipLayerNorm", domain="com.microsoft",
                   epsilon=float(s.rms_eps))
        self.matmul("/lm_head/MatMul", h, None if lm_written else weights.lm_head(), lm_written)
        return g.save()

    def shared_embedding(self, lm_written):
        """Embedding lookup reading the lm_head weight, as the builder's shared_embeddings does:
        int4 -> Reshape(uint8 [V, K/2]) + GatherBlockQuantized [+ Slice of K padding];
        float -> Transpose + Gather."""
        g, s = self.g, self.s
        b = "/model/embed_tokens"
        v, k, names = lm_written
        if self.o.dtype != "int4":
            t = g.node("Transpose", [names[0]], [f"{b}/Transpose/output_0"], f"{b}/Transpose", perm=[1, 0])
            return g.node("Gather", [t, "input_ids"], [f"{b}/Gather/output_0"], f"{b}/Gather")
        bs = self.o.block_size
        padded = (k + bs - 1) // bs * bs
        r = g.node("Reshape", [names[0], g.const_i64([v, padded // 2])], [f"{b}/Reshape/output_0"], f"{b}/Reshape")
        out = g.node("GatherBlockQuantized", [r, "input_ids"] + names[1:], [f"{b}/GatherBlockQuantized/output_0"],
                     f"{b}/GatherBlockQuantized", domain="com.microsoft", bits=4, block_size=bs,
                     gather_axis=0, quantize_axis=1)
        if padded != k:
            out = g.node("Slice", [out, g.const_i64([0]), g.const_i64([k]), g.const_i64([-1])],
                         [f"{b}/Slice/output_0"], f"{b}/Slice")
        return out

    def skip_norm(self, b, residual, skip, weight):
        out0, out3 = f"{b}/output_0", f"{b}/output_3"
        self.g.node("SkipSimplifiedLayerNormalization", [residual, skip, weight], [out0, "", "", out3],
                    f"{b}/SkipLayerNorm", domain="com.microsoft", epsilon=float(self.s.rms_eps))
        return out0, out3
