/* The bit layouts of GGUF's block formats (as llama.cpp's ggml-quants and gguf-py's
 * quants.py define them), decoded one sub-block at a time. */
#include "convert/gguf_blocks.h"

#include "base/half.h"
#include "convert/gguf.h"

#include <string.h>

static const gq_format formats[] = {
    {GGML_Q4_0, 32, 18, 32, 4, false, 8},   {GGML_Q4_1, 32, 20, 32, 4, true, 0},
    {GGML_Q5_0, 32, 22, 32, 5, false, 16},  {GGML_Q5_1, 32, 24, 32, 5, true, 0},
    {GGML_Q8_0, 32, 34, 32, 8, false, 128}, {GGML_Q4_K, 256, 144, 32, 4, true, 0},
    {GGML_Q5_K, 256, 176, 32, 5, true, 0},  {GGML_Q6_K, 256, 210, 16, 6, false, 32},
    /* Q2_K: q 0..3 (stored as they are); Q3_K: q - 4 in -4..3, stored as q + 4 (4..11)
     * with zero point 8, MatMulNBits' 4-bit default */
    {GGML_Q2_K, 256, 84, 16, 2, true, 0},   {GGML_Q3_K, 256, 110, 16, 3, false, 8},
};

const gq_format *gq_format_of(uint32_t type) {
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].type == type) return &formats[i];
    return NULL;
}

static float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return f16_to_f32(h);
}

/* value e of a 32-block whose 4 low bits sit in 16 bytes (elements e and e+16 share byte
 * e % 16, low nibble first) */
static int nib32(const uint8_t *qs, int e) { return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4; }

/* Q4_K/Q5_K: 6-bit scale and min of sub-block j from the 12 packed bytes */
static void scale_min_k4(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q2_K/Q3_K: the 2 low bits of sub-block i's value e: each half of 128 values takes 32
 * bytes, whose bit pairs 2j hold sub-blocks 2j (bytes 0..15) and 2j + 1 (16..31) */
static int low2_k(const uint8_t *qs, int i, int e) {
    return (qs[32 * (i / 8) + 16 * (i % 2) + e] >> (2 * ((i % 8) / 2))) & 3;
}

/* Q3_K: the 6-bit scale of sub-block i: low nibbles of bytes 0..7, then their high
 * nibbles; the top two bits from bytes 8..11, bit pair i / 4 of byte 8 + i % 4 */
static int scale_k3(const uint8_t *s, int i) {
    int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4;
    return lo | ((s[8 + i % 4] >> (2 * (i / 4))) & 3) << 4;
}

void gq_decode(const gq_format *f, const uint8_t *blk, int i, gq_sub *out) {
    out->offset = 0.0f;
    switch (f->type) {
    case GGML_Q4_0:
        out->scale = f16_at(blk);
        for (int e = 0; e < 32; e++) out->q[e] = (uint8_t)nib32(blk + 2, e);
        return;
    case GGML_Q4_1:
        out->scale = f16_at(blk);
        out->offset = f16_at(blk + 2);
        for (int e = 0; e < 32; e++) out->q[e] = (uint8_t)nib32(blk + 4, e);
        return;
    case GGML_Q5_0:
    case GGML_Q5_1: {
        int at = f->type == GGML_Q5_0 ? 2 : 4;
        out->scale = f16_at(blk);
        if (f->type == GGML_Q5_1) out->offset = f16_at(blk + 2);
        uint32_t qh;
        memcpy(&qh, blk + at, 4); /* bit e: value e's fifth bit */
        for (int e = 0; e < 32; e++)
            out->q[e] = (uint8_t)(nib32(blk + at + 4, e) | ((qh >> e) & 1) << 4);
        return;
    }
    case GGML_Q8_0:
        out->scale = f16_at(blk);
        for (int e = 0; e < 32; e++) out->q[e] = (uint8_t)(blk[2 + e] ^ 0x80);
        return;
    case GGML_Q4_K:
    case GGML_Q5_K: {
        /* d, dmin, 12 bytes of scales/mins, [Q5_K: 32 bytes of fifth bits], 128 bytes of
         * nibbles: sub-blocks 2j and 2j+1 are the low and high nibbles of bytes 32j.. */
        int sc, m;
        scale_min_k4(blk + 4, i, &sc, &m);
        out->scale = f16_at(blk) * (float)sc;
        out->offset = -(f16_at(blk + 2) * (float)m);
        const uint8_t *qh = blk + 16, *qs = blk + (f->type == GGML_Q5_K ? 48 : 16);
        const uint8_t *src = qs + 32 * (i / 2);
        for (int e = 0; e < 32; e++) {
            int v = i % 2 ? src[e] >> 4 : src[e] & 15;
            if (f->type == GGML_Q5_K) v |= ((qh[e] >> i) & 1) << 4;
            out->q[e] = (uint8_t)v;
        }
        return;
    }
    case GGML_Q6_K: {
        /* 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, d; each half of
         * 128 values: rows r of 32 take ql nibbles (r & 1: bytes 32.., r >= 2: high) and
         * bits 2r of qh */
        const uint8_t *ql = blk, *qh = blk + 128;
        const int8_t *scales = (const int8_t *)(blk + 192);
        out->scale = f16_at(blk + 208) * (float)scales[i];
        int half = i / 8, row = (i % 8) / 2, part = i % 2; /* 16 of the row's 32 */
        const uint8_t *l = ql + 64 * half + 32 * (row & 1), *h = qh + 32 * half;
        for (int e = 0; e < 16; e++) {
            int k = 16 * part + e;
            int lo = row >= 2 ? l[k] >> 4 : l[k] & 15;
            out->q[e] = (uint8_t)(lo | ((h[k] >> (2 * row)) & 3) << 4);
        }
        return;
    }
    case GGML_Q2_K: {
        /* 16 bytes of 4-bit scale (low) and min (high), 64 of bit pairs, d, dmin */
        out->scale = f16_at(blk + 80) * (float)(blk[i] & 15);
        out->offset = -(f16_at(blk + 82) * (float)(blk[i] >> 4));
        for (int e = 0; e < 16; e++) out->q[e] = (uint8_t)low2_k(blk + 16, i, e);
        return;
    }
    case GGML_Q3_K: {
        /* 32 bytes of high bits (bit i / 2 of bytes 16 (i % 2) .. : set means no -4),
         * 64 of low bit pairs, 12 of 6-bit scales (minus 32), d */
        out->scale = f16_at(blk + 108) * (float)(scale_k3(blk + 96, i) - 32);
        for (int e = 0; e < 16; e++) {
            int hi = (blk[16 * (i % 2) + e] >> (i / 2)) & 1;
            out->q[e] = (uint8_t)(low2_k(blk + 32, i, e) + 4 * hi + 4);
        }
        return;
    }
    default:
        memset(out, 0, sizeof *out);
        return;
    }
}

void gq_scale(const gq_format *f, const uint8_t *blk, int i, float *scale, float *offset) {
    int sc, m;
    *offset = 0.0f;
    switch (f->type) {
    case GGML_Q4_1:
    case GGML_Q5_1:
        *offset = f16_at(blk + 2);
        /* fall through */
    case GGML_Q4_0:
    case GGML_Q5_0:
    case GGML_Q8_0: *scale = f16_at(blk); return;
    case GGML_Q4_K:
    case GGML_Q5_K:
        scale_min_k4(blk + 4, i, &sc, &m);
        *scale = f16_at(blk) * (float)sc;
        *offset = -(f16_at(blk + 2) * (float)m);
        return;
    case GGML_Q6_K: *scale = f16_at(blk + 208) * (float)((const int8_t *)(blk + 192))[i]; return;
    case GGML_Q2_K:
        *scale = f16_at(blk + 80) * (float)(blk[i] & 15);
        *offset = -(f16_at(blk + 82) * (float)(blk[i] >> 4));
        return;
    case GGML_Q3_K: *scale = f16_at(blk + 108) * (float)(scale_k3(blk + 96, i) - 32); return;
    default: *scale = 0.0f; return;
    }
}
