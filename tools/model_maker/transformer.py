"""A decoder graph in onnxruntime-genai's model-builder layout, for any Arch (arch.py).

The prelude and the per-layer skeleton are the builder's:

  attention_mask -> ReduceSum -> Sub 1 -> Cast int32 = seqlens_k
                 -> Shape -> Gather 1 -> Cast int32 = total_sequence_length
  input_ids -> Gather(embed) [-> Mul scale]        (or the inputs_embeds input of a split
                                                    package's text decoder)
  per layer:  input norm (plain on layer 0, fused residual add after)
              -> mixer: attention | Qwen3.5 gated delta-net | LFM2 short convolution
              -> post-attention skip norm -> MLP (gated SiLU / GELU, fc1-fc2, relu^2,
                 Phi-3-small's gegelu, MoE with an optional gated shared expert)
  final skip norm -> lm_head MatMul [-> Add bias | Mul scale | softcap] -> logits

Node, value and initializer names follow the builder (/model/layers.N/attn/qkv_proj/MatMul,
model.layers.N.attn.qkv_proj.MatMul.weight, ...), so that tools/compare_graphs.py can
check a package against one the builder wrote. MatMul weights are stored [in, out]
(float) or as MatMulNBits blocks (int4); expert weights as MoE (float) or QMoE (int4).
"""

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from . import kvquant, rope
from .arch import ATTENTION, CONV, LINEAR
from .graph import GraphWriter
from .quant import quantize_int4

MS = "com.microsoft"
INT64_MAX = 9223372036854775807


def _ftext(v):
    """The builder's spelling of a float constant's value in its name."""
    return repr(float(v))


class WeightSource:
    """Tensors by key, from a RandomTensors (drawn by name) or from a provider with per-layer
    dicts and embed()/final_norm()/lm_head() methods (llama2c checkpoints, synthetic)."""

    def __init__(self, provider):
        self.p = provider
        self.by_name = hasattr(provider, "get")
        self._cached = (None, None)

    def layer(self, i, key, shape, kind="w"):
        if self.by_name:
            return self.p.get(f"layers.{i}.{key}", shape, kind)
        if self._cached[0] != i:
            self._cached = (i, self.p.layer(i))
        w = self._cached[1].get(key)
        if w is None:
            raise ValueError(f"the weights have no layer tensor '{key}'")
        if tuple(w.shape) != tuple(shape):
            raise ValueError(f"layer {i} '{key}' has shape {tuple(w.shape)}, expected {tuple(shape)}")
        return w

    def top(self, key, shape, kind="w"):
        if self.by_name:
            return self.p.get(key, shape, kind)
        return {"embed": self.p.embed, "final_norm": self.p.final_norm, "lm_head": self.p.lm_head}[key]()


class TransformerBuilder:
    def __init__(self, arch, opts, out_dir, filename="model.onnx", inputs_embeds=False):
        arch.check()
        self.a = arch
        self.o = opts
        self.g = GraphWriter(out_dir, filename)
        self.inputs_embeds = inputs_embeds
        self.io_np = np.float16 if opts.dtype == "fp16" else np.float32
        self.io_onnx = TensorProto.FLOAT16 if opts.dtype == "fp16" else TensorProto.FLOAT
        self.w = None
        self.caches = {}

    # -- small pieces -----------------------------------------------------------------
    def init(self, name, array, dtype=None):
        return self.g.initializer(name, array, dtype or self.io_np)

    def const_f(self, value, text=None):
        return self.g.const_f32(value, text or _ftext(value), self.io_np)

    def weight(self, basename, w_nk, force_float=False):
        """A MatMul weight; returns (N, K, initializer names, int4?) for matmul()."""
        g = self.g
        wname = basename[1:].replace("/", ".") + ".weight"
        n, k = w_nk.shape
        if self.o.dtype == "int4" and not force_float:
            packed, scales, zp = quantize_int4(w_nk, self.o.block_size, self.o.symmetric)
            names = [g.initializer(wname + "_Q4", packed), g.initializer(wname + "_scales", scales)]
            if zp is not None:
                names.append(g.initializer(wname + "_zero_points", zp))
            return n, k, names, True
        return n, k, [self.init(wname, np.ascontiguousarray(w_nk.T))], False

    def matmul(self, basename, x, w_nk, out=None, written=None, force_float=False):
        """x times a [N, K] weight: MatMul, or MatMulNBits for int4; returns the output."""
        n, k, names, q4 = written or self.weight(basename, w_nk, force_float)
        parts = basename.split("/")
        if len(parts) > 2 and parts[-2] in self.o.lora:
            base = self._matmul(basename, x, n, k, names, q4, None)
            return self.lora(parts, x, base, n, k, out)
        return self._matmul(basename, x, n, k, names, q4, out)

    def lora(self, parts, x, base, n, k, out):
        """The LoRA path beside a projection, as the builder writes it for an adapter
        (make_matmul_lora): x @ A [K, r] @ B [r, N] added to the projection, with A and B
        graph inputs whose defaults have rank r = 0 (the base model), so that a runtime
        feeds an adapter's A and B by name (onnxruntime's overridable initializers, Olive's
        optional LoRA inputs)."""
        g, d = self.g, "/".join(parts[:-1])
        names = []
        for which, shape, dims in (("lora_A", (k, 0), [k, "lora_r"]), ("lora_B", (0, n), ["lora_r", n])):
            wname = f"{d}/{which}/{parts[-1]}"[1:].replace("/", ".") + ".weight"
            names.append(g.input_with_default(wname, np.zeros(shape, self.io_np), dims))
        a = g.node("MatMul", [x, names[0]], [f"{d}/lora_A/{parts[-1]}/output_0"], f"{d}/lora_A/{parts[-1]}")
        b = g.node("MatMul", [a, names[1]], [f"{d}/lora_B/{parts[-1]}/output_0"], f"{d}/lora_B/{parts[-1]}")
        return g.node("Add", [base, b], [out or f"{d}/lora/Add/output_0"], f"{d}/lora/Add")

    def _matmul(self, basename, x, n, k, names, q4, out):
        out = out or f"{basename}/output_0"
        if q4:
            attrs = dict(K=k, N=n, bits=4, block_size=self.o.block_size)
            if self.o.accuracy_level:
                attrs["accuracy_level"] = self.o.accuracy_level
            self.g.node("MatMulNBits", [x] + names, [out], basename + "_Q4", domain=MS, **attrs)
        else:
            self.g.node("MatMul", [x, names[0]], [out], basename)
        return out

    def add_bias(self, name, x, bias, out=None):
        b = self.init(name[1:].replace("/", ".") + ".bias", bias)
        return self.g.node("Add", [x, b], [out or f"{name}/output_0"], name)

    def linear(self, base, x, i, key, n, k, bias=False, out=None, force_float=False):
        """A projection `key` of layer i ([n, k] weight) at node path base, with its bias."""
        y = self.matmul(f"{base}/MatMul", x, self.w.layer(i, key, (n, k)),
                        out=None if bias else out, force_float=force_float)
        if bias:
            y = self.add_bias(f"{base}/Add", y, self.w.layer(i, key + "_bias", (n,), "bias"), out=out)
        return y

    def norm_weights(self, prefix, i, key, width):
        """Scale (and bias for LayerNorm) initializers of a model-level norm."""
        a = self.a
        src = (lambda k, s, kind: self.w.top(k, s, kind)) if i is None else \
            (lambda k, s, kind: self.w.layer(i, k, s, kind))
        names = [self.init(f"{prefix}.weight", src(key, (width,), "norm"))]
        if a.norm == "layer":
            names.append(self.init(f"{prefix}.bias", src(key + "_bias", (width,), "bias")))
        return names

    def plain_norm(self, b, x, i, key, prefix):
        w = self.norm_weights(prefix, i, key, self.a.hidden)
        op = "LayerNormalization" if self.a.norm == "layer" else "SimplifiedLayerNormalization"
        return self.g.node(op, [x] + w, [f"{b}/output_0"], f"{b}/LayerNorm",
                           epsilon=float(self.a.eps), axis=-1, stash_type=1)

    def skip_norm(self, b, residual, skip, i, key, prefix, final=False, out=None):
        w = self.norm_weights(prefix, i, key, self.a.hidden)
        op = "SkipLayerNormalization" if self.a.norm == "layer" else "SkipSimplifiedLayerNormalization"
        outs = [out or f"{b}/output_0"] if final else [f"{b}/output_0", "", "", f"{b}/output_3"]
        self.g.node(op, [residual, skip] + w, outs, f"{b}/SkipLayerNorm", domain=MS,
                    epsilon=float(self.a.eps))
        return outs[0], outs[-1]

    def head_norm(self, b, x, weight_name, weight, width, head):
        """Per-head RMS norm of a packed [B, S, width] tensor (q_norm / k_norm / v_norm)."""
        g = self.g
        r1 = g.node("Reshape", [x, g.const_i64([0, -1, head])], [f"{b}/Reshape_1/output_0"], f"{b}/Reshape_1")
        w = self.init(weight_name, weight)
        ln = g.node("SimplifiedLayerNormalization", [r1, w], [f"{b}/SimplifiedLayerNormalization/output_0"],
                    f"{b}/SimplifiedLayerNormalization", epsilon=float(self.a.eps), axis=-1, stash_type=1)
        return g.node("Reshape", [ln, g.const_i64([0, -1, width])], [f"{b}/Reshape_2/output_0"], f"{b}/Reshape_2")

    # -- graph inputs and outputs --------------------------------------------------------
    def io(self):
        a, g = self.a, self.g
        if self.inputs_embeds:
            g.input("inputs_embeds", self.io_onnx, ["batch_size", "sequence_length", a.hidden])
        else:
            g.input("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])
        g.input("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])
        if a.position_rank() == 3:
            g.input("position_ids", TensorProto.INT64, [3, "batch_size", "sequence_length"])
        elif a.position_rank() == 2:
            g.input("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"])
        if self.o.hidden_states != "exclude":
            g.output("logits", self.io_onnx, ["batch_size", "sequence_length", a.vocab])
        if self.o.hidden_states:
            g.output("hidden_states", self.io_onnx, ["batch_size", "sequence_length", a.hidden])
        if self.o.no_kv:
            if a.layer_types:
                raise ValueError("no_kv: attention-only models (a state has no empty form here)")
            return
        att = a.attention_layers()
        for kv in ("key", "value"):
            for i in att:
                win = a.sliding(i) and a.window_cache
                past = "past_sliding_length" if win else "past_sequence_length"
                total = "total_sliding_length" if win else "total_sequence_length"
                d = a.hd(i) if a.kv_dim_fixed else "kv_cache_dim"
                ct = self.io_onnx
                if self.o.kv_quant != "none":  # the builder's quantized caches (kvquant.py)
                    ct, packed = kvquant.cache_type(self.o.kv_quant, a.hd(i))
                    d = packed or d
                g.input(f"past_key_values.{i}.{kv}", ct, ["batch_size", a.kv_heads, past, d])
                g.output(f"present.{i}.{kv}", ct, ["batch_size", a.kv_heads, total, d])
        states = []
        for i in range(a.layers):
            if a.kind(i) == LINEAR:
                states.append(("conv", i, [a.conv_dim(), a.conv_kernel - 1]))
            elif a.kind(i) == CONV:
                states.append(("conv", i, [a.hidden, a.conv_L - 1]))
        for i in range(a.layers):
            if a.kind(i) == LINEAR:
                states.append(("recurrent", i, [a.lin_v_heads, a.lin_k_dim, a.lin_v_dim]))
        for what, i, dims in states:
            g.input(f"past.{i}.{what}", TensorProto.FLOAT, ["batch_size"] + dims)
            g.output(f"present.{i}.{what}", TensorProto.FLOAT, ["batch_size"] + dims)

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
        if self.a.mask_sum_cast:
            g.node("Cast", [rs], [f"{b}/ReduceSum/Cast/output_0"], f"{b}/ReduceSum/Cast", to=TensorProto.INT32)
        return seqlens, total

    # -- embedding and rotary caches --------------------------------------------------
    def embedding(self, lm_written):
        a, g = self.a, self.g
        if self.inputs_embeds:
            return "inputs_embeds"
        if a.tied:
            x = self.shared_embedding(lm_written)
        else:
            emb = self.init("model.embed_tokens.weight", self.w.top("embed", (a.vocab, a.hidden), "emb"))
            x = g.node("Gather", [emb, "input_ids"], ["/model/embed_tokens/Gather/output_0"],
                       "/model/embed_tokens/Gather")
        if a.emb_scale:
            c = self.const_f(a.emb_scale, a.emb_scale_text or None)
            x = g.node("Mul", [x, c], ["/model/embed_tokens/Mul/output_0"], "/model/embed_tokens/Mul")
        return x

    def shared_embedding(self, lm_written):
        """Embedding lookup reading the lm_head weight, as the builder's shared_embeddings does:
        int4 -> Reshape(uint8 [V, K/2]) + GatherBlockQuantized [+ Slice of K padding];
        float -> Transpose + Gather."""
        g = self.g
        b = "/model/embed_tokens"
        v, k, names, q4 = lm_written
        if not q4:
            t = g.node("Transpose", [names[0]], [f"{b}/Transpose/output_0"], f"{b}/Transpose", perm=[1, 0])
            return g.node("Gather", [t, "input_ids"], [f"{b}/Gather/output_0"], f"{b}/Gather")
        bs = self.o.block_size
        padded = (k + bs - 1) // bs * bs
        r = g.node("Reshape", [names[0], g.const_i64([v, padded // 2])], [f"{b}/Reshape/output_0"], f"{b}/Reshape")
        out = g.node("GatherBlockQuantized", [r, "input_ids"] + names[1:], [f"{b}/GatherBlockQuantized/output_0"],
                     f"{b}/GatherBlockQuantized", domain=MS, bits=4, block_size=bs, gather_axis=0, quantize_axis=1)
        if padded != k:
            out = g.node("Slice", [out, g.const_i64([0]), g.const_i64([k]), g.const_i64([-1])],
                         [f"{b}/Slice/output_0"], f"{b}/Slice")
        return out

    def rope_caches(self, which=""):
        """(cos, sin) initializer names; which = "" | "local" | "global"."""
        if which in self.caches:
            return self.caches[which]
        a = self.a
        theta = a.local_rope_theta if which == "local" else a.rope_theta
        scaling = None if which == "local" else a.rope_scaling
        padded = self.true_head and self.true_head != a.head_dim
        dim = a.rotary_dim()
        if which == "global" and a.global_head_dim:
            dim = int(a.global_head_dim * a.partial_rotary)
        rope.builder_kind(a.model_type, scaling)
        rdim = self.true_head if padded else dim
        head = self.true_head if padded else (a.global_head_dim if which == "global" and a.global_head_dim
                                              else a.head_dim)
        pairs = []
        for name, rows, inv, scale in rope.tables(a.context, rdim, theta, scaling, head, a.context):
            cos, sin = rope.cos_sin(rows, inv, scale, self.io_np)
            if padded:
                # padded heads (decoder.pad_heads): the extra, all-zero dimensions rotate by the identity
                extra = a.head_dim // 2 - cos.shape[1]
                cos = np.concatenate([cos, np.ones((cos.shape[0], extra), cos.dtype)], axis=1)
                sin = np.concatenate([sin, np.zeros((sin.shape[0], extra), sin.dtype)], axis=1)
            pairs.append((name, cos, sin))
        suffix = f"_{which}" if which else ""
        if len(pairs) == 1:
            _, cos, sin = pairs[0]
            self.caches[which] = (self.init(f"cos_cache{suffix}", cos), self.init(f"sin_cache{suffix}", sin))
        else:
            self.caches[which] = self.longrope_if(pairs, int(scaling["original_max_position_embeddings"]))
        return self.caches[which]

    def longrope_if(self, pairs, original):
        """The builder's LongRoPE layout: both caches as Constants inside the branches of an If
        on Greater(width of attention_mask, original), so a run whose past plus new tokens pass
        the original context reads the long-factor cache, every other run the short one."""
        g = self.g
        b = "/model/rope_caches_subgraph"
        gt = g.node("Greater", ["/model/attn_mask_reformat/attn_mask_subgraph/Gather/output_0",
                                g.const_i64(original)], [f"{b}/Greater/output_0"], f"{b}/Greater")
        branch = {}
        for name, cos, sin in pairs:
            nodes, outs = [], []
            for what, arr in (("cos", cos), ("sin", sin)):
                out = f"{what}_cache_{name}"
                nodes.append(helper.make_node("Constant", [], [out], name=f"/{name}/{what}_cache/Constant",
                                              value=numpy_helper.from_array(np.ascontiguousarray(arr), out)))
                outs.append(helper.make_tensor_value_info(out, self.io_onnx, list(arr.shape)))
            branch[name] = helper.make_graph(nodes, f"{name}_rope_caches_graph", [], outs)
        g.node("If", [gt], ["cos_cache", "sin_cache"], f"{b}/If",
               then_branch=branch["large"], else_branch=branch["small"])
        return "cos_cache", "sin_cache"

    def cache_kind(self, i):
        if not self.a.local_rope_theta:
            return ""
        return "local" if self.a.sliding(i) else "global"

    # -- mixers -------------------------------------------------------------------
    def attention(self, i, h, seqlens, total):
        a, g = self.a, self.g
        b = f"/model/layers.{i}/attn"
        hd, qw, kvw = a.hd(i), a.q_width(i), a.kv_width(i)
        qrows = 2 * qw if a.attn_gate else qw
        rows = {"q": qrows, "k": kvw, "v": kvw}
        # LoRA on q/k/v: the builder then writes them unpacked (its packed MatMul does not
        # take LoRA), GroupQueryAttention taking query, key and value apart
        unpacked = any(f"{x}_proj" in self.o.lora for x in rows)
        if unpacked:
            q, k, v = [self.linear(f"{b}/{x}_proj", h, i, x, n, a.hidden, bias=a.qkv_bias)
                       for x, n in rows.items()]
        else:
            w = np.concatenate([self.w.layer(i, x, (n, a.hidden)) for x, n in rows.items()], axis=0)
            qkv = self.matmul(f"{b}/qkv_proj/MatMul", h, w)
            if a.qkv_bias:
                bias = np.concatenate([self.w.layer(i, x + "_bias", (n,), "bias") for x, n in rows.items()])
                qkv = self.add_bias(f"{b}/qkv_proj/Add", qkv, bias)
        outside = a.rotary in ("external", "mrope")
        gate = None
        if a.qk_norm or a.attn_gate or a.v_norm or outside:
            if not unpacked:
                sp = f"{b}/qkv_proj/Split"
                q, k, v = [f"{sp}/output_{j}" for j in range(3)]
                g.node("Split", [qkv, g.const_i64([qrows, kvw, kvw])], [q, k, v], sp, axis=-1)
            if a.attn_gate:
                # per head [query(hd), gate(hd)], as Qwen3.5's q_proj lays them out
                r = g.node("Reshape", [q, g.const_i64([0, 0, a.heads, 2 * hd])], [f"{b}/q_gate/Reshape/output_0"],
                           f"{b}/q_gate/Reshape")
                qs, gs = f"{b}/q_gate/Split/output_0", f"{b}/q_gate/Split/output_1"
                g.node("Split", [r, g.const_i64([hd, hd])], [qs, gs], f"{b}/q_gate/Split", axis=-1)
                q = g.node("Reshape", [qs, g.const_i64([0, 0, qw])], [f"{b}/q_proj/Reshape/output_0"],
                           f"{b}/q_proj/Reshape")
                gate = g.node("Reshape", [gs, g.const_i64([0, 0, qw])], [f"{b}/gate/Reshape/output_0"],
                              f"{b}/gate/Reshape")
            if a.v_norm:
                v = self.head_norm(f"{b}/v_norm", v, f"model.layers.{i}.attn.v_norm.layernorm.weight",
                                   self.w.layer(i, "v_norm", (hd,), "norm"), kvw, hd)
            if a.qk_norm and a.qk_norm_after_rope:
                q, k = self.rotate(i, b, q, k)
            if a.qk_norm:
                q = self.head_norm(f"{b}/q_norm", q, f"model.layers.{i}.attn.q_norm.layernorm.weight",
                                   self.w.layer(i, "q_norm", (hd,), "norm"), qw, hd)
                k = self.head_norm(f"{b}/k_norm", k, f"model.layers.{i}.attn.k_norm.layernorm.weight",
                                   self.w.layer(i, "k_norm", (hd,), "norm"), kvw, hd)
            if outside and not (a.qk_norm and a.qk_norm_after_rope):
                q, k = self.rotate(i, b, q, k)
        elif not unpacked:
            q, k, v = qkv, "", ""
        fused = a.rotary == "gqa" and i not in a.nope_layers
        cos, sin = self.rope_caches(self.cache_kind(i)) if fused else ("", "")
        sink = self.init(f"model.layers.{i}.attn.sinks", self.w.layer(i, "sinks", (a.heads,), "sinks")) \
            if a.sinks else ""
        attrs = dict(num_heads=a.heads, kv_num_heads=a.kv_heads,
                     scale=float(a.attn_scale or 1.0 / math.sqrt(hd)),
                     local_window_size=a.sliding_window if a.sliding(i) else -1, softcap=float(a.softcap),
                     do_rotary=int(fused), rotary_interleaved=int(a.rotary_interleaved))
        if a.sliding(i) and a.window_cache:
            attrs["sliding_window_cache"] = 1
        scales = []
        if self.o.kv_quant != "none":  # inputs 12/13 and the attributes, as the builder writes them
            mode, bits = kvquant.mode_bits(self.o.kv_quant)
            attrs.update(k_quant_type=mode, v_quant_type=mode, kv_cache_bit_width=bits)
            ks, vs = kvquant.layer_scales(self.o.kv_scales, i)
            scales = [self.init(f"model.layers.{i}.attn.k_scale", ks, np.float32),
                      self.init(f"model.layers.{i}.attn.v_scale", vs, np.float32)]
        an = f"{b}/GroupQueryAttention"
        nk = self.o.no_kv  # no cache: no past, the presents stay inside the graph
        past = ["", ""] if nk else [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        present = [f"{an}/output_1", f"{an}/output_2"] if nk else [f"present.{i}.key", f"present.{i}.value"]
        out = g.node("GroupQueryAttention",
                     [q, k, v] + past + [seqlens, total, cos, sin, "", "", sink] + scales,
                     [f"{an}/output_0"] + present, an, domain=MS, **attrs)
        if gate is not None:
            s = g.node("Sigmoid", [gate], [f"{b}/gate/Sigmoid/output_0"], f"{b}/gate/Sigmoid")
            out = g.node("Mul", [out, s], [f"{b}/gate/Mul/output_0"], f"{b}/gate/Mul")
        return self.linear(f"{b}/o_proj", out, i, "o", a.hidden, qw, bias=a.o_bias)

    def rotate(self, i, b, q, k):
        """RotaryEmbedding (position_ids [B, S]) or MRotaryEmbedding ([3, B, S]) of q and k."""
        a, g = self.a, self.g
        cos, sin = self.rope_caches(self.cache_kind(i))
        outs = []
        for which, x, n in (("q", q, a.heads), ("k", k, a.kv_heads)):
            if a.rotary == "mrope":
                nm = f"{b}/{which}_rotary/MRotaryEmbedding"
                outs.append(g.node("MRotaryEmbedding", [x, "position_ids", cos, sin], [f"{nm}/output_0"], nm,
                                   domain=MS, interleaved=int(a.rotary_interleaved),
                                   rotary_embedding_dim=a.rotary_dim(), num_heads=n,
                                   mrope_section=list(a.mrope_section), mrope_layout=a.mrope_layout, is_packed_batching=0))
            else:
                nm = f"{b}/{which}_rotary/RotaryEmbedding"
                full = a.rotary_dim(i) == a.hd(i)
                outs.append(g.node("RotaryEmbedding", [x, "position_ids", cos, sin], [f"{nm}/output_0"], nm,
                                   domain=MS, interleaved=int(a.rotary_interleaved),
                                   num_heads=0 if full else n, rotary_embedding_dim=0 if full else a.rotary_dim(i)))
        return outs

    def linear_attention(self, i, h):
        """Qwen3.5's gated delta-net layer."""
        a, g = self.a, self.g
        b = f"/model/layers.{i}/linear_attn"
        p = f"model.layers.{i}.linear_attn"
        C, K = a.conv_dim(), a.conv_kernel
        Hk, Hv, dk, dv = a.lin_k_heads, a.lin_v_heads, a.lin_k_dim, a.lin_v_dim
        qkv = self.linear(f"{b}/qkv_proj", h, i, "lin_qkv", C, a.hidden)
        z = self.linear(f"{b}/z_proj", h, i, "lin_z", Hv * dv, a.hidden)
        bb = self.linear(f"{b}/b_proj", h, i, "lin_b", Hv, a.hidden, force_float=True)
        aa = self.linear(f"{b}/a_proj", h, i, "lin_a", Hv, a.hidden, force_float=True)
        t = g.node("Transpose", [qkv], [f"{b}/qkv_proj/Transpose/output_0"], f"{b}/qkv_proj/Transpose", perm=[0, 2, 1])
        cw = g.initializer(f"{p}.conv1d.weight", self.w.layer(i, "conv1d", (C, 1, K), "conv"), np.float32)
        cb = g.initializer(f"{p}.conv1d.bias", np.zeros(C, np.float32), np.float32)
        cn = f"{b}/CausalConvWithState"
        conv = g.node("CausalConvWithState", [t, cw, cb, f"past.{i}.conv"], [f"{cn}/output_0", f"present.{i}.conv"],
                      cn, domain=MS, ndim=1, activation="silu", state_window=0)
        t2 = g.node("Transpose", [conv], [f"{b}/conv_out/Transpose/output_0"], f"{b}/conv_out/Transpose", perm=[0, 2, 1])
        sp = f"{b}/split_qkv/Split"
        q, k, v = [f"{sp}/output_{j}" for j in range(3)]
        g.node("Split", [t2, g.const_i64([Hk * dk, Hk * dk, Hv * dv])], [q, k, v], sp, axis=-1)
        normed = []
        for which, x in (("q", q), ("k", k)):
            nb = f"{b}/{which}_l2norm"
            r = g.node("Reshape", [x, g.const_i64([0, 0, Hk, dk])], [f"{nb}/flat/Reshape/output_0"], f"{nb}/flat/Reshape")
            n = g.node("LpNormalization", [r], [f"{nb}/LpNormalization/output_0"], f"{nb}/LpNormalization", axis=-1, p=2)
            normed.append(g.node("Reshape", [n, g.const_i64([0, 0, Hk * dk])], [f"{nb}/unflat/Reshape/output_0"],
                                 f"{nb}/unflat/Reshape"))
        qs = g.node("Mul", [normed[0], self.const_f(1.0 / math.sqrt(dk))], [f"{b}/q_scaled/Mul/output_0"],
                    f"{b}/q_scaled/Mul")
        dt = g.initializer(f"{p}.dt_bias", self.w.layer(i, "dt_bias", (Hv,), "dt_bias"), np.float32)
        na = g.initializer(f"{p}.neg_exp_A", self.w.layer(i, "neg_exp_A", (Hv,), "neg_exp_A"), np.float32)
        gn = f"{b}/LinearAttentionGate"
        decay, beta = f"{gn}/output_0", f"{gn}/output_1"
        g.node("LinearAttentionGate", [aa, dt, na, bb], [decay, beta], gn, domain=MS)
        ln = f"{b}/LinearAttention"
        o = g.node("LinearAttention", [qs, normed[1], v, f"past.{i}.recurrent", decay, beta],
                   [f"{ln}/output_0", f"present.{i}.recurrent"], ln, domain=MS, q_num_heads=Hk,
                   kv_num_heads=Hv, update_rule="gated_delta", scale=1.0, state_window=0)
        nw = self.init(f"{p}.norm.weight", self.w.layer(i, "lin_norm", (dv,), "norm"))
        o = g.node("GatedRMSNorm", [o, nw, z], [f"{b}/GatedRMSNorm/output_0"], f"{b}/GatedRMSNorm",
                   domain=MS, epsilon=float(a.eps))
        return self.linear(f"{b}/out_proj", o, i, "lin_out", a.hidden, Hv * dv)

    def short_conv(self, i, h):
        """LFM2's gated short convolution: in_proj -> (B, C, x); C * conv(B * x) -> out_proj."""
        a, g = self.a, self.g
        b = f"/model/layers.{i}/conv"
        H = a.hidden
        y = self.linear(f"{b}/in_proj", h, i, "conv_in", 3 * H, H)
        t = g.node("Transpose", [y], [f"{b}/Transpose_1/output_0"], f"{b}/Transpose_1", perm=[0, 2, 1])
        bx, c, x = [f"{b}/Split/output_{j}" for j in range(3)]
        g.node("Split", [t, g.const_i64([H, H, H])], [bx, c, x], f"{b}/Split", axis=1)
        m1 = g.node("Mul", [bx, x], [f"{b}/Mul_1/output_0"], f"{b}/Mul_1")
        cw = g.initializer(f"model.layers.{i}.conv.conv.weight", self.w.layer(i, "conv", (H, 1, a.conv_L), "conv"),
                           np.float32)
        cn = f"{b}/CausalConvWithState"
        conv = g.node("CausalConvWithState", [m1, cw, "", f"past.{i}.conv"], [f"{cn}/output_0", f"present.{i}.conv"],
                      cn, domain=MS, ndim=1, activation="none", state_window=0)
        m2 = g.node("Mul", [c, conv], [f"{b}/Mul_2/output_0"], f"{b}/Mul_2")
        t2 = g.node("Transpose", [m2], [f"{b}/Transpose_2/output_0"], f"{b}/Transpose_2", perm=[0, 2, 1])
        return self.linear(f"{b}/out_proj", t2, i, "conv_out", H, H)

    # -- MLPs -----------------------------------------------------------------------
    def mlp(self, i, h):
        a, g = self.a, self.g
        b = f"/model/layers.{i}/mlp"
        H, F, bias = a.hidden, a.inter, a.mlp_bias
        if a.mlp == "moe":
            return self.moe(i, h)
        if a.mlp in ("silu", "gelu_tanh"):
            return self.gated_mlp(i, h, b, F)
        if a.mlp == "gelu_fc":
            x = self.linear(f"{b}/fc1", h, i, "up", F, H, bias=True)
            x = g.node("Gelu", [x], [f"{b}/act_fn/FastGelu/output_0"], f"{b}/act_fn/FastGelu", approximate="tanh")
            return self.linear(f"{b}/fc2", x, i, "down", H, F, bias=True)
        if a.mlp == "relu2":
            x = self.linear(f"{b}/up_proj", h, i, "up", F, H, bias=bias)
            x = g.node("Relu", [x], [f"{b}/act_fn/Relu/output_0"], f"{b}/act_fn/Relu")
            x = g.node("Pow", [x, g.const_i32([2])], [f"{b}/square/Relu2/pow/output_0"], f"{b}/square/Relu2/pow")
            return self.linear(f"{b}/down_proj", x, i, "down", H, F, bias=bias)
        if a.mlp == "gegelu":
            # Phi-3-small: one up projection, gelu and linear halves interleaved, clamped at 20
            up = self.linear(f"{b}/up_proj", h, i, "up", 2 * F, H, bias=bias)
            halves = []
            for start, which, lo in ((0, "gelu", ""), (1, "linear", self.const_f(-20.0))):
                s = g.node("Slice", [up, g.const_i64([start]), g.const_i64([INT64_MAX]), g.const_i64([-1]),
                                     g.const_i64([2])], [f"{b}/{which}/Slice/output_0"], f"{b}/{which}/Slice")
                c = g.node("Cast", [s], [f"{b}/{which}/Cast/output_0"], f"{b}/{which}/Cast", to=TensorProto.FLOAT)
                inf = g.node("IsInf", [c], [f"{b}/{which}/IsInf/output_0"], f"{b}/{which}/IsInf")
                cl = g.node("Clip", [s, lo, self.const_f(20.0)], [f"{b}/{which}/Clip/output_0"], f"{b}/{which}/Clip")
                halves.append(g.node("Where", [inf, s, cl], [f"{b}/{which}/Where/output_0"], f"{b}/{which}/Where"))
            act = g.node("QuickGelu", [halves[0]], [f"{b}/act_fn/QuickGelu/output_0"], f"{b}/act_fn/QuickGelu",
                         domain=MS)
            lin = g.node("Add", [halves[1], self.const_f(1.0, "1")], [f"{b}/linear/Add/output_0"], f"{b}/linear/Add")
            m = g.node("Mul", [act, lin], [f"{b}/Mul/output_0"], f"{b}/Mul")
            return self.linear(f"{b}/down_proj", m, i, "down", H, F, bias=bias)
        raise ValueError(f"unknown mlp kind {a.mlp}")

    def gated_mlp(self, i, h, b, F):
        a, g = self.a, self.g
        H, bias = a.hidden, a.mlp_bias
        gate = self.linear(f"{b}/gate_proj", h, i, "gate", F, H, bias=bias)
        up = self.linear(f"{b}/up_proj", h, i, "up", F, H, bias=bias)
        if a.mlp == "gelu_tanh":
            act = g.node("Gelu", [gate], [f"{b}/act_fn/FastGelu/output_0"], f"{b}/act_fn/FastGelu",
                         approximate="tanh")
        else:
            s = g.node("Sigmoid", [gate], [f"{b}/act_fn/Sigmoid/output_0"], f"{b}/act_fn/Sigmoid")
            act = g.node("Mul", [gate, s], [f"{b}/act_fn/Mul/output_0"], f"{b}/act_fn/Mul")
        m = g.node("Mul", [act, up], [f"{b}/Mul/output_0"], f"{b}/Mul")
        return self.linear(f"{b}/down_proj", m, i, "down", H, F, bias=bias)

    def moe(self, i, h):
        """Router -> MoE (float experts) or QMoE (int4 blocks), SwiGLU with interleaved
        gate/linear rows (swiglu_fusion 1); plus Qwen3.5-MoE's gated shared expert."""
        a, g = self.a, self.g
        base = f"/model/layers.{i}"
        b = f"{base}/moe"
        p = f"model.layers.{i}.moe.experts"
        E, H, F = a.experts, a.hidden, a.moe_inter
        r = self.linear(f"{b}/router", h, i, "router", E, H, bias=a.router_bias)
        r = g.node("Reshape", [r, g.const_i64([-1, E])], [f"{b}/router/Reshape/output_0"], f"{b}/router/Reshape")
        w1 = self.w.layer(i, "experts_gate_up", (E, 2 * F, H))
        w2 = self.w.layer(i, "experts_down", (E, H, F))
        kind = "zeros" if a.expert_bias == "zero" else "bias"
        b1 = self.w.layer(i, "experts_gate_up_bias", (E, 2 * F), kind) if a.expert_bias else None
        b2 = self.w.layer(i, "experts_down_bias", (E, H), kind) if a.expert_bias else None
        attrs = dict(activation_alpha=float(a.swiglu_alpha), activation_beta=float(a.swiglu_beta),
                     activation_type="swiglu", k=a.top_k, normalize_routing_weights=1, swiglu_fusion=1,
                     use_sparse_mixer=0)
        if a.swiglu_limit:
            attrs["swiglu_limit"] = float(a.swiglu_limit)
        bias_name = (lambda nm, arr: self.init(nm, arr) if arr is not None else "")
        if self.o.dtype == "int4":
            ins = [h, r]
            for nm, w, bias in (("gate_up_proj", w1, b1), ("down_proj", w2, b2)):
                e_, n_, k_ = w.shape
                packed, scales, _ = quantize_int4(w.reshape(e_ * n_, k_), self.o.block_size, True)
                ins += [g.initializer(f"{p}.{nm}.qweight", packed.reshape(e_, n_, -1)),
                        g.initializer(f"{p}.{nm}.scales", scales.reshape(e_, n_, -1)),
                        bias_name(f"{p}.{nm}.bias", bias)]
            ins += [""] * 6
            attrs.update(expert_weight_bits=4, block_size=self.o.block_size)
            out = g.node("QMoE", ins, [f"{b}/QMoE/output_0"], f"{b}/QMoE", domain=MS, **attrs)
        else:
            ins = [h, r, self.init(f"{p}.gate_up_proj.weight", w1), bias_name(f"{p}.gate_up_proj.bias", b1),
                   self.init(f"{p}.down_proj.weight", w2), bias_name(f"{p}.down_proj.bias", b2), "", ""]
            out = g.node("MoE", ins, [f"{b}/MoE/output_0"], f"{b}/MoE", domain=MS, **attrs)
        if not a.shared_expert:
            return out
        shared = self.gated_mlp(i, h, f"{base}/mlp", a.inter)
        gb = f"{base}/shared_expert_gate"
        gl = self.linear(gb, h, i, "shared_gate", 1, H)
        s = g.node("Sigmoid", [gl], [f"{gb}/Sigmoid/output_0"], f"{gb}/Sigmoid")
        return g.node("GatedAdd", [out, shared, s], [f"{b}/GatedAdd/output_0"], f"{b}/GatedAdd", domain=MS)

    # -- whole model -------------------------------------------------------------------
    def build(self, weights, true_head=0):
        a, g = self.a, self.g
        self.w = WeightSource(weights)
        self.true_head = true_head
        self.io()
        seqlens, total = self.mask_subgraph()
        lm_written = self.weight("/lm_head/MatMul", self.w.top("lm_head", (a.vocab, a.hidden))) if a.tied else None
        residual = self.embedding(lm_written)
        skip = None
        n_in, n_post = a.norm_names
        for i in range(a.layers):
            base = f"/model/layers.{i}"
            if i == 0:
                h = self.plain_norm(f"{base}/{n_in}", residual, 0, "input_norm", f"model.layers.0.{n_in}")
            else:
                h, residual = self.skip_norm(f"{base}/{n_in}", residual, skip, i, "input_norm",
                                             f"model.layers.{i}.{n_in}")
            kind = a.kind(i)
            if kind == ATTENTION:
                out = self.attention(i, h, seqlens, total)
            elif kind == LINEAR:
                out = self.linear_attention(i, h)
            else:
                out = self.short_conv(i, h)
            if a.parallel:
                m = self.mlp(i, h)
                skip = g.node("Add", [out, m], [f"{base}/residual_add/Add/output_0"], f"{base}/residual_add/Add")
                continue
            if a.residual_mul:
                out = g.node("Mul", [out, self.const_f(a.residual_mul)], [f"{base}/residual_mul/Mul_1/output_0"],
                             f"{base}/residual_mul/Mul_1")
            if a.sandwich:
                out = self.plain_norm(f"{base}/post_attention_layernorm", out, i, "post_norm",
                                      f"model.layers.{i}.post_attention_layernorm")
                h, residual = self.skip_norm(f"{base}/pre_feedforward_layernorm", residual, out, i, "pre_ff_norm",
                                             f"model.layers.{i}.pre_feedforward_layernorm")
            else:
                h, residual = self.skip_norm(f"{base}/{n_post}", residual, out, i, "post_norm",
                                             f"model.layers.{i}.{n_post}")
            m = self.mlp(i, h)
            if a.sandwich:
                m = self.plain_norm(f"{base}/post_feedforward_layernorm", m, i, "post_ff_norm",
                                    f"model.layers.{i}.post_feedforward_layernorm")
            if a.residual_mul:
                m = g.node("Mul", [m, self.const_f(a.residual_mul)], [f"{base}/residual_mul/Mul_2/output_0"],
                           f"{base}/residual_mul/Mul_2")
            if a.layer_scalar:
                c = self.const_f(a.layer_scalar)
                m = g.node("Mul", [m, c], [f"{base}/layer_scalar/Mul_skip/output_0"], f"{base}/layer_scalar/Mul_skip")
                residual = g.node("Mul", [residual, c], [f"{base}/layer_scalar/Mul_root/output_0"],
                                  f"{base}/layer_scalar/Mul_root")
            skip = m
        L = a.layers
        h, _ = self.skip_norm(f"/model/layers.{L}/final_norm_layernorm", residual, skip, None, "final_norm",
                              f"model.layers.{L}.final_norm_layernorm", final=True,
                              out="hidden_states" if self.o.hidden_states else None)
        if self.o.hidden_states == "exclude":  # the builder's exclude_lm_head: no lm_head at all
            return g.save()
        post = a.lm_head_bias or a.logits_scale or a.final_softcap
        x = self.matmul("/lm_head/MatMul", h, None if lm_written else self.w.top("lm_head", (a.vocab, a.hidden)),
                        out=None if post else "logits", written=lm_written)
        if a.lm_head_bias:
            x = self.add_bias("/lm_head/Add", x, self.w.top("lm_head_bias", (a.vocab,), "bias"), out="logits")
        if a.logits_scale:
            x = g.node("Mul", [x, self.const_f(a.logits_scale)], ["logits"], "/lm_head/Mul")
        if a.final_softcap:
            c = self.const_f(a.final_softcap)
            d = g.node("Div", [x, c], ["/lm_head/softcap/Div/output_0"], "/lm_head/softcap/Div")
            t = g.node("Tanh", [d], ["/lm_head/softcap/Tanh/output_0"], "/lm_head/softcap/Tanh")
            g.node("Mul", [t, c], ["logits"], "/lm_head/softcap/Mul")
        return g.save()
