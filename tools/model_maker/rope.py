"""Rotary embedding cos/sin caches [positions, rotary_dim / 2], as the model builder bakes
them into the graph (llama3 and YaRN rescaling included). Any values make a valid package
(both runtimes read the caches from the graph); these follow the published formulas so
that the packages look like real ones."""

import math

import numpy as np


def inv_freq(dim, theta, scaling=None):
    """float64 inverse frequencies of the dim/2 rotated pairs, and the attention factor that
    scales cos and sin (YaRN's; 1 otherwise)."""
    inv = 1.0 / (theta ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim))
    rs = scaling or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "llama3":
        # wavelength-dependent rescaling of Llama 3.1+
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
        return np.array(out, dtype=np.float64), 1.0
    if kind == "linear":
        return inv / rs["factor"], 1.0
    if kind == "yarn":
        # YaRN: frequencies below a ramp are interpolated by `factor`, above it kept
        factor = rs["factor"]
        old = rs["original_max_position_embeddings"]
        fast, slow = rs.get("beta_fast", 32.0), rs.get("beta_slow", 1.0)

        def bound(rot):
            return dim * math.log(old / (rot * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = bound(fast), bound(slow)
        if rs.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        keep = 1 - ramp
        inv = inv / factor * (1 - keep) + inv * keep
        att = rs.get("attention_factor") or (0.1 * math.log(factor) + 1.0)
        return inv, att
    return inv, 1.0


def caches(positions, dim, theta, scaling=None, dtype=np.float32):
    """(cos, sin), each [positions, dim / 2]."""
    inv, att = inv_freq(dim, theta, scaling)
    t = np.arange(positions, dtype=np.float32)
    freqs = np.outer(t, inv.astype(np.float32)).astype(np.float32)
    cos, sin = np.cos(freqs) * np.float32(att), np.sin(freqs) * np.float32(att)
    return cos.astype(dtype), sin.astype(dtype)
