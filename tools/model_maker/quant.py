"""Blockwise 4-bit round-to-nearest quantization in MatMulNBits layout.

Matches what onnxruntime's MatMulNBitsQuantizer (the model builder's default for
int4) produces through MLAS: blocks of block_size consecutive elements along K for
each output column n; symmetric blocks take scale = v / -8 for the value v of largest
magnitude and store q + 8 (no zero_points input, the op's default is 8); asymmetric
blocks span [min(v,0), max(v,0)] over 15 steps with a rounded, clamped zero point.
"""

import numpy as np


def _round_half_away(x):
    # C's roundf, which MLAS uses; numpy's round is half-to-even.
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_int4(w_nk, block_size=32, symmetric=True):
    """w_nk: float array [N, K] (a torch Linear weight). Returns (packed, scales, zp).

    packed: uint8 [N, k_blocks, block_size/2], element 2i in the low nibble.
    scales: float32 [N, k_blocks]. zp: uint8 [N, ceil(k_blocks/2)] or None.
    """
    w = np.asarray(w_nk, dtype=np.float32)
    n, k = w.shape
    k_blocks = (k + block_size - 1) // block_size
    pad = k_blocks * block_size - k
    if pad:
        w = np.pad(w, ((0, 0), (0, pad)))
    b = w.reshape(n, k_blocks, block_size)
    if symmetric:
        bmax = b.max(axis=2)
        bmin = b.min(axis=2)
        peak = np.where(np.abs(bmax) > np.abs(bmin), bmax, bmin)
        scales = (peak / np.float32(-8.0)).astype(np.float32)
        zero = np.full((n, k_blocks), 8.0, dtype=np.float32)
    else:
        bmin = np.minimum(b.min(axis=2), 0.0)
        bmax = np.maximum(b.max(axis=2), 0.0)
        scales = ((bmax - bmin) / np.float32(15.0)).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            zfp = np.where(scales != 0, -bmin / np.where(scales != 0, scales, 1), bmin)
        zero = np.clip(_round_half_away(zfp), 0, 15).astype(np.float32)
        zero = np.where(zfp < 0, 0, zero).astype(np.float32)
    with np.errstate(divide="ignore"):
        recip = np.where(scales != 0, np.float32(1.0) / np.where(scales != 0, scales, 1), 0).astype(np.float32)
    q = _round_half_away(b * recip[:, :, None] + zero[:, :, None])
    q = np.clip(q, 0, 15).astype(np.uint8)
    packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    zp = None
    if not symmetric:
        zq = zero.astype(np.uint8)
        if k_blocks % 2:
            zq = np.pad(zq, ((0, 0), (0, 1)))
        zp = (zq[:, 0::2] | (zq[:, 1::2] << 4)).astype(np.uint8)
    return packed, scales, zp


def dequantize_int4(packed, scales, zp, k, block_size=32):
    """Inverse of quantize_int4 back to [N, K] (used by tests and references)."""
    n, k_blocks, _ = packed.shape
    q = np.empty((n, k_blocks, block_size), dtype=np.float32)
    q[:, :, 0::2] = packed & 0x0F
    q[:, :, 1::2] = packed >> 4
    if zp is None:
        z = np.full((n, k_blocks), 8.0, dtype=np.float32)
    else:
        zz = np.empty((n, zp.shape[1] * 2), dtype=np.float32)
        zz[:, 0::2] = zp & 0x0F
        zz[:, 1::2] = zp >> 4
        z = zz[:, :k_blocks]
    w = (q - z[:, :, None]) * scales[:, :, None]
    return w.reshape(n, k_blocks * block_size)[:, :k]
