"""Blockwise 4-bit round-to-nearest quantization in MatMulNBits layout.

Matches what onnxruntime's MatMulNBitsQuantizer (the model builder's default for
int4) produces through MLAS: blocks of block_size consecutive elements along K for
each output column n; symmetric blocks take scale = v / -8 for the value v of largest
magnitude and store q + 8 (no zero_points input, the op's default is 8); asymmetric
blocks span [min(v,0), max(v,0)] over 15 steps with a rounded, clamped zero point.
"""

import numpy as np


def quantize_int4(w_nk, block_size=32, symmetric=True, rows_per_chunk=1024):
    """w_nk: float array [N, K] (a torch Linear weight). Returns (packed, scales, zp).

    packed: uint8 [N, k_blocks, block_size/2], element 2i in the low nibble.
    Byte-identical to onnxruntime's quantize_matmul_4bits (MLAS), padding included.
    scales: float32 [N, k_blocks]. zp: uint8 [N, ceil(k_blocks/2)] or None.
    """
    w = np.asarray(w_nk, dtype=np.float32)
    n, k = w.shape
    k_blocks = (k + block_size - 1) // block_size
    packed = np.empty((n, k_blocks, block_size // 2), dtype=np.uint8)
    scales = np.empty((n, k_blocks), dtype=np.float32)
    zeros = np.empty((n, k_blocks), dtype=np.uint8)
    # chunks of rows keep the float temporaries small (the lm_head of a 128K vocab is 1 GiB)
    for r0 in range(0, n, rows_per_chunk):
        r1 = min(n, r0 + rows_per_chunk)
        p, s, z = _quantize_rows(w[r0:r1], k, k_blocks, block_size, symmetric)
        packed[r0:r1], scales[r0:r1], zeros[r0:r1] = p, s, z
    zp = None
    if not symmetric:
        zq = zeros
        if k_blocks % 2:
            # the spare nibble of the last byte is 8, as MLAS writes it
            zq = np.pad(zq, ((0, 0), (0, 1)), constant_values=8)
        zp = (zq[:, 0::2] | (zq[:, 1::2] << 4)).astype(np.uint8)
    return packed, scales, zp


def _block_reduce(b, op):
    # halving with elementwise ops: numpy's reduce over a short last axis is ~10x slower
    while b.shape[2] > 1 and b.shape[2] % 2 == 0:
        h = b.shape[2] // 2
        b = op(b[:, :, :h], b[:, :, h:])
    return op.reduce(b, axis=2)


def _quantize_rows(w, k, k_blocks, block_size, symmetric):
    n = w.shape[0]
    pad = k_blocks * block_size - k
    if pad:
        w = np.pad(w, ((0, 0), (0, pad)))
    b = w.reshape(n, k_blocks, block_size)
    bmax = _block_reduce(b, np.maximum)
    bmin = _block_reduce(b, np.minimum)
    if symmetric:
        peak = np.where(np.abs(bmax) > np.abs(bmin), bmax, bmin)
        scales = (peak / np.float32(-8.0)).astype(np.float32)
        zero = np.full((n, k_blocks), 8, dtype=np.uint8)
    else:
        bmin = np.minimum(bmin, np.float32(0))
        bmax = np.maximum(bmax, np.float32(0))
        scales = ((bmax - bmin) / np.float32(15.0)).astype(np.float32)
        safe = np.where(scales != 0, scales, np.float32(1))
        zfp = np.where(scales != 0, -bmin / safe, bmin)
        # zfp >= 0 here, so C's roundf is floor(x + 0.5)
        zero = np.clip(np.floor(zfp + np.float32(0.5)), 0, 15).astype(np.uint8)
    safe = np.where(scales != 0, scales, np.float32(1))
    recip = np.where(scales != 0, np.float32(1.0) / safe, np.float32(0)).astype(np.float32)
    # x = v / scale + zero lies in [-0.5, 16]; after clamping, roundf(x) == floor(x + 0.5)
    x = b * recip[:, :, None]
    x += (zero.astype(np.float32) + np.float32(0.5))[:, :, None]
    np.floor(x, out=x)
    np.clip(x, 0, 15, out=x)
    q = x.astype(np.uint8)
    if pad:
        # MLAS leaves the nibbles past K at 0 (they meet no input element)
        q.reshape(n, k_blocks * block_size)[:, k:] = 0
    packed = q[:, :, 0::2] | (q[:, :, 1::2] << 4)
    return packed, scales, zero


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
