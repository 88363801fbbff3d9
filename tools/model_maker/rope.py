"""Rotary embedding cos/sin caches [positions, rotary_dim / 2], computed as onnxruntime-genai
0.18's model builder bakes them into the graph for each rope scaling type of a Hugging Face
config (`rope_scaling` / `rope_parameters`).

The builder bakes every scaling into initializers: nothing about it reaches genai_config.json
(only context_length and search.max_length) and neither runtime computes rotary angles. So the
kind of scaling changes the cache values, and only LongRoPE changes the graph (two caches and
an If on the attention mask's width, see transformer.py). What each type does there:

  default   inv[i] = 1 / theta^(2i / dim)
  linear    inv / factor                                  (base Model: rescale_factors)
  llama3    per-frequency by wavelength: kept above original/high_freq_factor, divided by
            factor below original/low_freq_factor, blended between   (LlamaModel only)
  yarn      NTK by parts over d_half = head_size / 2: ramp from low to high (not rounded, the
            builder asserts 0 < low < high < d_half - 1), interpolated (inv / factor) below
            the ramp, kept above; cos and sin times the attention factor   (base Model)
  longrope  inv / short_factor for a cache of original rows, inv / long_factor for a cache of
            context rows, both times sqrt(1 + ln(context / original) / ln(original)) unless the
            config gives short_mscale / long_mscale                 (Phi-3 LongRoPE classes)
  dynamic   HunYuan's NTK-alpha: theta * alpha^(head_size / (head_size - 2)), then default
            (HF's factor-based dynamic NTK, which re-derives theta at run time from the length,
            is not something the builder writes: it cannot be baked into one cache)

The builder computes in float32 (torch): the exponents, inv, the positions and their outer
product; so does this file, with numpy's float32.
"""

import math

import numpy as np

# Which builder classes read which rope_type (0.18): make_rope_init is overridden per class and
# an override does not fall back to the base one. LlamaModel (llama, nemotron, smollm3) knows
# only llama3 and bakes plain caches for any other type; the base Model knows linear and yarn
# and raises on the rest; Phi-3's LongRoPE class knows longrope; HunYuan knows dynamic.
_LLAMA_CLASS = {"llama", "nemotron", "smollm3"}


def kind_of(scaling):
    """The config's rope_type; "su" is LongRoPE's older name (Phi-3's first configs), which
    transformers reads as longrope."""
    rs = scaling or {}
    k = rs.get("rope_type", rs.get("type", "default")) or "default"
    return "longrope" if k == "su" else k


def builder_kind(model_type, scaling):
    """The scaling the builder bakes for this model type, or ValueError naming what it does."""
    k = kind_of(scaling)
    if k == "default":
        return k
    if model_type in _LLAMA_CLASS:
        if k == "llama3":
            return k
        raise ValueError(f"{model_type}: the builder's LlamaModel ignores rope_type {k} "
                         "(it writes unscaled caches); only llama3 is read")
    if k == "longrope" and model_type == "phi3":
        return k
    if k == "dynamic" and model_type == "hunyuandensev1":
        return k
    if k in ("linear", "yarn") and model_type not in ("phi3", "hunyuandensev1"):
        return k
    raise ValueError(f"{model_type}: the builder has no rope_type {k} for this model type "
                     "(NotImplementedError, or unscaled caches)")


def _f32(x):
    return np.float32(x)


def _mscale(kind, factor, original, cfg_mscale=0.0, cfg_mscale_all_dim=0.0):
    """The attention factor multiplying cos and sin (the builder's make_mscale): the ratio of
    two YaRN scales when the config gives both, the config's mscale alone when only it is
    given, else the policy's formula of the factor (1 when factor <= 1)."""
    if cfg_mscale > 0 and cfg_mscale_all_dim > 0:
        def g(s, m):
            return 0.1 * m * math.log(s) + 1.0 if s > 1 else 1.0
        return g(factor, cfg_mscale) / g(factor, cfg_mscale_all_dim)
    if cfg_mscale > 0:
        return float(cfg_mscale)
    if factor <= 1.0:
        return 1.0
    if kind == "yarn":
        return 0.1 * math.log(factor) + 1.0
    if kind == "longrope":
        return math.sqrt(1 + math.log(factor) / math.log(original))
    return float(factor)


def _base_inv(dim, theta, divisor=1.0):
    """float32 1 / (divisor * theta^(2i / dim)); divisor may be per pair (LongRoPE)."""
    e = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / _f32(dim)
    powed = np.power(_f32(theta), e, dtype=np.float32)
    return (_f32(1.0) / (np.asarray(divisor, np.float32) * powed)).astype(np.float32)


def _llama3(inv, rs, original):
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    lo_wl, hi_wl = original / lo, original / hi
    out = np.empty_like(inv)
    for i, f in enumerate(inv):
        wl = _f32(2 * math.pi) / f
        if wl < hi_wl:
            out[i] = f
        elif wl > lo_wl:
            out[i] = f / _f32(factor)
        else:
            s = _f32((original / wl - lo) / (hi - lo))
            out[i] = (1 - s) * f / _f32(factor) + s * f
    return out


def _yarn(inv, rs, original, head_size, theta):
    factor = rs["factor"]
    d_half = head_size / 2
    fast, slow = rs.get("beta_fast", 32.0), rs.get("beta_slow", 1.0)
    low = d_half * math.log(original / (fast * 2 * math.pi)) / math.log(theta)
    high = d_half * math.log(original / (slow * 2 * math.pi)) / math.log(theta)
    if not 0 < low < high < d_half - 1:
        raise ValueError(f"yarn: the builder asserts 0 < low < high < head_size/2 - 1; here low {low:.3f}, "
                         f"high {high:.3f}, head_size/2 {d_half} (original_max_position_embeddings "
                         f"{original}, beta_fast {fast}, beta_slow {slow}, theta {theta})")
    ramp = (np.arange(int(d_half), dtype=np.float32) - _f32(low)) / _f32(high - low)
    keep = (1 - np.clip(ramp, 0, 1)).astype(np.float32)[: inv.shape[0]]
    return ((inv / _f32(factor)) * (1 - keep) + inv * keep).astype(np.float32)


def tables(rows, dim, theta, scaling=None, head_size=0, context=0):
    """The builder's caches for a rotary dim and a scaling: a list of (name, rows, inv, scale),
    one entry, or LongRoPE's two ("small" with original rows, "large" with `rows`)."""
    rs = scaling or {}
    kind = kind_of(rs)
    head_size = head_size or dim
    context = context or rows
    original = rs.get("original_max_position_embeddings", context)
    if kind == "default":
        return [("", rows, _base_inv(dim, theta), 1.0)]
    if kind == "linear":
        return [("", rows, _base_inv(dim, theta, rs["factor"]), 1.0)]
    if kind == "llama3":
        return [("", rows, _llama3(_base_inv(dim, theta), rs, original), 1.0)]
    if kind == "yarn":
        att = _mscale("yarn", rs.get("factor", 0), original, rs.get("mscale", 0), rs.get("mscale_all_dim", 0))
        return [("", rows, _yarn(_base_inv(dim, theta), rs, original, head_size, theta), att)]
    if kind == "dynamic":
        t = theta * rs["alpha"] ** (head_size / (head_size - 2))
        return [("", rows, _base_inv(dim, t), 1.0)]
    if kind == "longrope":
        short, long = rs["short_factor"], rs["long_factor"]
        if len(short) != dim // 2 or len(long) != dim // 2:
            raise ValueError(f"longrope: short_factor and long_factor need {dim // 2} entries, have "
                             f"{len(short)} and {len(long)}")
        att = _mscale("longrope", context / original, original)
        s_att = rs.get("short_mscale", 0) or att
        l_att = rs.get("long_mscale", 0) or att
        return [("small", original, _base_inv(dim, theta, short), s_att),
                ("large", rows, _base_inv(dim, theta, long), l_att)]
    raise ValueError(f"rope_type {kind}: not one the builder writes (default, linear, llama3, yarn, "
                     "longrope, dynamic)")


def cos_sin(rows, inv, scale, dtype=np.float32):
    """cos and sin of position x inv, [rows, len(inv)], times scale (float32 throughout)."""
    t = np.arange(rows, dtype=np.int64).astype(np.float32)
    freqs = np.outer(t, inv).astype(np.float32)
    s = _f32(scale)
    return (np.cos(freqs) * s).astype(dtype), (np.sin(freqs) * s).astype(dtype)
