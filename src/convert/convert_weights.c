/* GGUF tensors into ONNX initializers. Block-quantized rows keep their values: only the
 * packing changes (gguf_blocks.h reads each format as sub-blocks of 16 or 32 values with
 * a float32 scale and an integer zero point or an offset), so MatMulNBits (2 bits for
 * Q2_K, 4 for 3- and 4-bit formats, 8 for 5, 6 and 8) gives gguf's dequantized values bit
 * for bit for Q3_K, Q4_0, Q5_0, Q8_0 and Q6_K; the affine formats of up to 4 bits (Q2_K,
 * Q4_1, Q4_K: scale * q + offset) get float zero points -offset / scale, one rounding away; the
 * 5-bit ones (Q5_1, Q5_K) and the float types (F32, F16, BF16) become float32, exactly.
 * Everything streams from the mapping to the data file a row or a tile at a time. */
#include "convert/convert_internal.h"

#include "base/half.h"
#include "convert/gguf_blocks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

og_status *cv_tensor(const cv_model *m, const char *name, int64_t rows, int64_t cols,
                     const gguf_tensor **out) {
    const gguf_tensor *t = gguf_tensor_find(m->g, name);
    if (!t) return og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor '%s' is missing", m->path, name);
    bool ok = rows ? t->n_dims == 2 && (int64_t)t->ne[0] == cols && (int64_t)t->ne[1] == rows
                   : t->n_dims == 1 && (int64_t)t->ne[0] == cols;
    if (!ok)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: tensor '%s' has shape [%" PRIu64 ", %" PRIu64 "] (%u dims), "
                         "expected [%" PRId64 ", %" PRId64 "] (GGUF order: columns first)",
                         m->path, name, t->ne[0], t->ne[1], t->n_dims, cols, rows);
    *out = t;
    return NULL;
}

static size_t row_bytes(const gguf_tensor *t) {
    uint32_t be, bb;
    gguf_block(t->type, &be, &bb);
    return (size_t)(t->ne[0] / be * bb);
}

static const uint8_t *row_ptr(const gguf_tensor *t, int64_t r) {
    return t->data + (size_t)r * row_bytes(t);
}

/* llama.cpp's converter reorders each q/k head's rows from HF's halves (j, j + d/2) to
 * adjacent pairs (2j, 2j + 1) for its interleaved rotary; this maps an HF row back. */
static int64_t src_row(const cv_src *s, int64_t r) {
    if (s->unpermute_heads <= 0) return s->row0 + r;
    int64_t hd = s->rows / s->unpermute_heads, half = hd / 2;
    int64_t h = r / hd, w = r % hd;
    return s->row0 + h * hd + 2 * (w % half) + w / half;
}

static float f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return f16_to_f32(h);
}

og_status *cv_dequant_row(const cv_model *m, const gguf_tensor *t, int64_t r, float *out) {
    const uint8_t *p = row_ptr(t, r);
    int64_t n = (int64_t)t->ne[0];
    switch (t->type) {
    case GGML_F32: memcpy(out, p, (size_t)n * 4); return NULL;
    case GGML_F16:
        for (int64_t i = 0; i < n; i++) out[i] = f16(p + 2 * i);
        return NULL;
    case GGML_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = f32_from_bits((uint32_t)h << 16);
        }
        return NULL;
    default: {
        const gq_format *f = gq_format_of(t->type);
        if (!f)
            return og_errorf(OG_ERR_UNSUPPORTED,
                             "%s: tensor '%s' is %s: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, "
                             "Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K are converted", m->path, t->name,
                             gguf_type_name(t->type));
        gq_sub sb;
        for (int64_t b = 0; b < n / f->block; b++, p += f->bytes)
            for (int i = 0; i < f->block / f->sub; i++, out += f->sub) {
                gq_decode(f, p, i, &sb);
                for (int j = 0; j < f->sub; j++) out[j] = gq_value(f, &sb, j);
            }
        return NULL;
    }
    }
}

og_status *cv_float_init(onnx_out *o, const cv_model *m, const char *name,
                         const gguf_tensor *t, const int64_t *dims, int ndims) {
    int64_t cols = (int64_t)t->ne[0], rows = (int64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    float *row = malloc((size_t)cols * sizeof *row);
    if (!row) return og_oom_for((size_t)cols * 4, "a row of %s", t->name);
    onnx_init_begin(o, name, OX_FLOAT, dims, ndims);
    og_status *st = NULL;
    for (int64_t r = 0; r < rows && !st; r++) {
        st = cv_dequant_row(m, t, r, row);
        if (!st) onnx_init_write(o, row, (size_t)cols * 4);
    }
    free(row);
    if (!st) onnx_init_end(o);
    return st;
}

/* float MatMul weight [K, N]: tiles of rows of the transpose, so memory stays at TILE*N */
enum { TILE = 16 };

static og_status *write_float_kn(onnx_out *o, const cv_model *m, const char *name,
                                 const cv_src *src, int n_src, int64_t n, int64_t k) {
    float *tile = malloc((size_t)TILE * (size_t)n * sizeof *tile);
    float *row = malloc((size_t)k * sizeof *row);
    og_status *st = NULL;
    if (!tile || !row) {
        st = og_oom_for((size_t)TILE * (size_t)n * 4, "the transpose of %s", src[0].t->name);
        goto done;
    }
    int64_t dims[2] = {k, n};
    onnx_init_begin(o, name, OX_FLOAT, dims, 2);
    /* per tile of K, each source row is dequantized whole: K/TILE passes over the
     * weights, cheap next to writing them for the sizes float weights come in */
    for (int64_t k0 = 0; k0 < k && !st; k0 += TILE) {
        int64_t kt = k - k0 < TILE ? k - k0 : TILE, col = 0;
        for (int s = 0; s < n_src && !st; s++)
            for (int64_t r = 0; r < src[s].rows && !st; r++, col++) {
                st = cv_dequant_row(m, src[s].t, src_row(&src[s], r), row);
                for (int64_t j = 0; j < kt && !st; j++) tile[j * n + col] = row[k0 + j];
            }
        if (!st) onnx_init_write(o, tile, (size_t)(kt * n) * 4);
    }
    if (!st) onnx_init_end(o);
done:
    free(tile);
    free(row);
    return st;
}

enum { W_VALUES, W_SCALES, W_ZERO_U8, W_ZERO_F32 };

/* 8 bytes x0..x7 (little-endian in x) -> 4 bytes: nibble n of x(2j) | nibble n of
 * x(2j+1) << 4 (n: shift 0 for the low nibbles, 4 for the high ones). */
static uint32_t pair_nibbles(uint64_t x, int shift) {
    uint64_t v = (x >> shift) & 0x0F0F0F0F0F0F0F0Full;
    v = (v | v >> 4) & 0x00FF00FF00FF00FFull; /* byte 2j: x(2j) | x(2j+1) << 4 */
    v = (v | v >> 8) & 0x0000FFFF0000FFFFull;
    return (uint32_t)(v | v >> 16);
}

/* Q4_0 and Q8_0 values of one row straight into MatMulNBits' packing: Q4_0 element
 * e < 16 is the low nibble of qs[e], e >= 16 the high nibble of qs[e - 16], and output
 * byte i holds elements 2i and 2i + 1; Q8_0's int8 values + 128. Eight bytes at a time
 * (the loops byte by byte were a fifth of convert's CPU time on a 1B Q4_0 file).
 * Returns the end. */
static uint8_t *repack_fast(const gq_format *f, const uint8_t *p, int64_t k, uint8_t *out) {
    const int64_t nb = k / 32;
    const size_t bytes = (size_t)f->bytes;
    if (f->type == GGML_Q8_0) {
        for (int64_t b = 0; b < nb; b++, p += bytes, out += 32)
            for (int i = 0; i < 4; i++) {
                uint64_t x;
                memcpy(&x, p + 2 + 8 * i, 8);
                x ^= 0x8080808080808080ull;
                memcpy(out + 8 * i, &x, 8);
            }
        return out;
    }
    for (int64_t b = 0; b < nb; b++, p += bytes, out += 16) {
        uint64_t lo, hi;
        memcpy(&lo, p + 2, 8);  /* qs[0..7] */
        memcpy(&hi, p + 10, 8); /* qs[8..15] */
        uint32_t w[4] = {pair_nibbles(lo, 0), pair_nibbles(hi, 0), pair_nibbles(lo, 4),
                         pair_nibbles(hi, 4)};
        memcpy(out, w, 16);
    }
    return out;
}

/* Q4_0 and Q8_0 scales of one row: the float16 at each block's start. */
static uint8_t *scales_fast(const gq_format *f, const uint8_t *p, int64_t k, uint8_t *out) {
    const int64_t nb = k / 32;
    const size_t bytes = (size_t)f->bytes;
    for (int64_t b = 0; b < nb; b++, p += bytes, out += 4) {
        uint16_t h;
        memcpy(&h, p, 2);
        float v = f16_to_f32(h);
        memcpy(out, &v, 4);
    }
    return out;
}

/* One initializer's rows: the values packed as MatMulNBits stores them ([N, K/sub,
 * sub*bits/8]: 4-bit pairs low nibble first, else a byte each), the scales, or the zero
 * points ([N, K/sub], uint8 or float); a row at a time through buf (4K bytes) */
static void write_rows(onnx_out *o, const gq_format *f, const cv_src *src, int n_src,
                       int64_t k, int what, uint8_t *buf) {
    gq_sub sb;
    /* the counts as locals: divisions in the loop tests were redone every block */
    const int64_t n_blocks = k / f->block;
    const int subs = f->block / f->sub;
    const bool fast = f->type == GGML_Q4_0 || f->type == GGML_Q8_0;
    for (int s = 0; s < n_src; s++) {
        const gguf_tensor *t = src[s].t;
        for (int64_t r = 0; r < src[s].rows; r++) {
            const uint8_t *p = row_ptr(t, src_row(&src[s], r));
            uint8_t *out = buf;
            if (fast && (what == W_VALUES || what == W_SCALES)) {
                /* the common formats, without decoding */
                out = what == W_VALUES ? repack_fast(f, p, k, out) : scales_fast(f, p, k, out);
                onnx_init_write(o, buf, (size_t)(out - buf));
                continue;
            }
            for (int64_t b = 0; b < n_blocks; b++, p += f->bytes)
                for (int i = 0; i < subs; i++) {
                    if (what == W_VALUES) gq_decode(f, p, i, &sb);
                    else gq_scale(f, p, i, &sb.scale, &sb.offset);
                    if (f->affine && sb.scale == 0.0f && sb.offset != 0.0f) {
                        /* every value is the offset (llama.cpp writes such sub-blocks for
                         * constant weights): as (0 - (-1)) * offset, exactly */
                        memset(sb.q, 0, sizeof sb.q);
                        sb.scale = sb.offset; /* zero point -offset / scale = -1 */
                    }
                    float v;
                    switch (what) {
                    case W_VALUES:
                        if (f->bits <= 2) { /* four a byte, low bits first */
                            for (int j = 0; j < f->sub / 4; j++)
                                out[j] = (uint8_t)(sb.q[4 * j] | sb.q[4 * j + 1] << 2 |
                                                   sb.q[4 * j + 2] << 4 | sb.q[4 * j + 3] << 6);
                            out += f->sub / 4;
                        } else if (f->bits <= 4) {
                            for (int j = 0; j < f->sub / 2; j++)
                                out[j] = (uint8_t)(sb.q[2 * j] | sb.q[2 * j + 1] << 4);
                            out += f->sub / 2;
                        } else {
                            memcpy(out, sb.q, (size_t)f->sub);
                            out += f->sub;
                        }
                        continue;
                    case W_ZERO_U8: *out++ = (uint8_t)f->zp; continue;
                    case W_SCALES: v = sb.scale; break;
                    default: v = sb.scale != 0.0f ? -sb.offset / sb.scale : 0.0f; break;
                    }
                    memcpy(out, &v, 4);
                    out += 4;
                }
            onnx_init_write(o, buf, (size_t)(out - buf));
        }
    }
}

og_status *cv_write_rows(onnx_out *o, const cv_model *m, const gq_format *f,
                         const cv_src *src, int n_src, int64_t k, int what) {
    uint8_t *buf = malloc((size_t)k * 4);
    if (!buf) return og_oom_for((size_t)k * 4, "a row of %s", src[0].t->name);
    og_status *st = NULL;
    if (f) {
        write_rows(o, f, src, n_src, k, what ? W_SCALES : W_VALUES, buf);
    } else {
        for (int s = 0; s < n_src && !st; s++)
            for (int64_t r = 0; r < src[s].rows && !st; r++) {
                st = cv_dequant_row(m, src[s].t, src_row(&src[s], r), (float *)buf);
                if (!st) onnx_init_write(o, buf, (size_t)k * 4);
            }
    }
    free(buf);
    return st;
}

bool cv_same_type(const cv_src *src, int n_src) {
    for (int s = 1; s < n_src; s++)
        if (src[s].t->type != src[0].t->type) return false;
    return true;
}

og_status *cv_weight(onnx_out *o, const cv_model *m, const char *base, const cv_src *src,
                     int n_src, int64_t k, cv_written *w) {
    memset(w, 0, sizeof *w);
    w->k = k;
    const gq_format *f = gq_format_of(src[0].t->type);
    /* 5-bit affine formats (Q5_1, Q5_K) would be 8-bit MatMulNBits with float zero
     * points, which onnxruntime's CPU kernel does not run: float32 instead, exact */
    if (f && f->affine && f->bits > 4) f = NULL;
    for (int s = 0; s < n_src; s++) w->n += src[s].rows;
    if (f && !cv_same_type(src, n_src))
        return og_errorf(OG_ERR_UNSUPPORTED,
                         "%s: tensors '%s' and '%s' fused into one projection must have the "
                         "same quantization", m->path, src[0].t->name, src[n_src - 1].t->name);
    /* the builder's initializer name: node path without its leading '/', dots for '/' */
    char wname[256];
    snprintf(wname, sizeof wname, "%s.weight", base + 1);
    for (char *c = wname; *c; c++)
        if (*c == '/') *c = '.';
    if (!f) {
        OG_TRY(write_float_kn(o, m, wname, src, n_src, w->n, k));
        w->names[0] = onnx_fmt(o, "%s", wname);
        return NULL;
    }
    w->bits = f->bits <= 2 ? 2 : f->bits <= 4 ? 4 : 8;
    w->block = f->sub;
    w->zp = f->affine ? CV_ZP_FLOAT : f->zp == 1 << (w->bits - 1) ? CV_ZP_DEFAULT : CV_ZP_U8;
    int64_t kb = k / f->sub;
    int64_t dq[3] = {w->n, kb, f->sub * w->bits / 8}, ds[2] = {w->n, kb};
    uint8_t *buf = malloc((size_t)k * 4);
    if (!buf) return og_oom_for((size_t)k * 4, "a row of %s", src[0].t->name);
    onnx_init_begin(o, onnx_fmt(o, "%s_Q%d", wname, w->bits), OX_UINT8, dq, 3);
    write_rows(o, f, src, n_src, k, W_VALUES, buf);
    w->names[0] = onnx_init_end(o);
    onnx_init_begin(o, onnx_fmt(o, "%s_scales", wname), OX_FLOAT, ds, 2);
    write_rows(o, f, src, n_src, k, W_SCALES, buf);
    w->names[1] = onnx_init_end(o);
    if (w->zp != CV_ZP_DEFAULT) {
        bool u8 = w->zp == CV_ZP_U8;
        onnx_init_begin(o, onnx_fmt(o, "%s_zero_points", wname), u8 ? OX_UINT8 : OX_FLOAT, ds, 2);
        write_rows(o, f, src, n_src, k, u8 ? W_ZERO_U8 : W_ZERO_F32, buf);
        w->names[2] = onnx_init_end(o);
    }
    free(buf);
    return NULL;
}

const char *cv_matmul_node(onnx_out *o, const char *base, const char *x, const cv_written *w,
                           const char *out) {
    if (!out) out = onnx_fmt(o, "%s/output_0", base);
    if (!w->bits) {
        const char *ins[] = {x, w->names[0]};
        return onnx_node(o, "MatMul", "", base, ins, 2, &out, 1, NULL, 0);
    }
    const char *ins[4] = {x, w->names[0], w->names[1], w->names[2]};
    /* accuracy_level 4 (int8 activations) is the builder's CPU default for its symmetric
     * int4; other forms keep float activations */
    onnx_attr attrs[5] = {ATTR_I("K", w->k), ATTR_I("N", w->n), ATTR_I("bits", w->bits),
                          ATTR_I("block_size", w->block), ATTR_I("accuracy_level", 4)};
    int n_attr = w->bits == 4 && w->zp == CV_ZP_DEFAULT ? 5 : 4;
    return onnx_node(o, "MatMulNBits", "com.microsoft", onnx_fmt(o, "%s_Q%d", base, w->bits),
                     ins, w->zp == CV_ZP_DEFAULT ? 3 : 4, &out, 1, attrs, n_attr);
}

og_status *cv_matmul(onnx_out *o, const cv_model *m, const char *base, const char *x,
                     const cv_src *src, int n_src, int64_t k, const char *out,
                     const char **result) {
    cv_written w;
    OG_TRY(cv_weight(o, m, base, src, n_src, k, &w));
    *result = cv_matmul_node(o, base, x, &w, out);
    return NULL;
}
