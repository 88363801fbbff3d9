"""Classic decoders described the way checkpoints describe them (DecoderSpec: llama2.c
checkpoints, synthetic real-shape models), the build options every package takes, and
exact head padding. The graph itself is written by transformer.py from the Arch that
arch_from_spec() makes of a spec.
"""

from dataclasses import dataclass, field, replace

import math

import numpy as np

from .arch import Arch


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
    partial_rotary: float = 1.0  # share of each head the rotary embedding turns (Phi-4-mini: 0.75)
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
    lora: tuple = ()             # projections (qkv_proj, o_proj, gate_proj, ...) given LoRA inputs
    kv_quant: str = "none"       # builder's kv_cache_quant_scheme: int8/int4/fp8 _per_tensor/_per_channel
    kv_scales: object = None     # with kv_quant: {layer id: (k_scale, v_scale)} (kvquant.load_scales)
    hidden_states: str = ""      # builder's "include" (include_hidden_states: the final norm's output
                                 # as output hidden_states beside logits) or "exclude" (exclude_lm_head:
                                 # hidden_states, no lm_head, no logits)
    no_kv: bool = False          # no past/present inputs and outputs (an embedding export: every run
                                 # starts from an empty cache); attention-only models


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


def arch_from_spec(spec, shared_embeddings=False):
    """The Arch of a (possibly head-padded) classic decoder."""
    true = spec.true_head_size or spec.head_size
    return Arch(model_type=spec.model_type, hidden=spec.hidden_size, inter=spec.intermediate_size,
                layers=spec.num_layers, heads=spec.num_heads, kv_heads=spec.num_kv_heads,
                head_dim=spec.head_size, vocab=spec.vocab_size, context=spec.context_length,
                eps=spec.rms_eps, rope_theta=spec.rope_theta, rope_scaling=dict(spec.rope_scaling),
                partial_rotary=spec.partial_rotary,
                rotary_interleaved=spec.rotary_interleaved, qkv_bias=spec.qkv_bias, qk_norm=spec.qk_norm,
                attn_scale=1.0 / math.sqrt(true), tied=shared_embeddings, bos=spec.bos_token_id,
                eos=spec.eos_token_id, pad=spec.pad_token_id)
