/* GGUF tensors into ONNX initializers. Q4_0, Q4_1 and Q8_0 rows keep their blocks of 32:
 * only the packing changes (MatMulNBits puts elements 2i and 2i+1 into byte i, GGUF's
 * 4-bit blocks elements i and i+16), the float16 scales widen exactly to float32, and
 * Q4_0's implicit zero point 8 and Q8_0's signed values (stored + 128, MatMulNBits'
 * default 8-bit zero point) give the same products as GGUF's d * q. Float tensors
 * (F32, F16, BF16) widen exactly to float32. Everything streams from the mapping to the
 * data file a row or a tile at a time. */
#include "convert/convert_internal.h"

#include "base/half.h"

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
    if (s->unpermute_heads <= 0) return r;
    int64_t hd = s->rows / s->unpermute_heads, half = hd / 2;
    int64_t h = r / hd, w = r % hd;
    return h * hd + 2 * (w % half) + w / half;
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
    case GGML_Q4_0:
        for (int64_t b = 0; b < n / 32; b++, p += 18, out += 32) {
            float d = f16(p);
            for (int i = 0; i < 16; i++) {
                out[i] = d * (float)((p[2 + i] & 15) - 8);
                out[i + 16] = d * (float)((p[2 + i] >> 4) - 8);
            }
        }
        return NULL;
    case GGML_Q4_1:
        for (int64_t b = 0; b < n / 32; b++, p += 20, out += 32) {
            float d = f16(p), mn = f16(p + 2);
            for (int i = 0; i < 16; i++) {
                /* two roundings (product, then sum), as numpy computes d * q + m */
                float lo = d * (float)(p[4 + i] & 15), hi = d * (float)(p[4 + i] >> 4);
                out[i] = lo + mn;
                out[i + 16] = hi + mn;
            }
        }
        return NULL;
    case GGML_Q8_0:
        for (int64_t b = 0; b < n / 32; b++, p += 34, out += 32) {
            float d = f16(p);
            for (int i = 0; i < 32; i++) out[i] = d * (float)(int8_t)p[2 + i];
        }
        return NULL;
    default:
        return og_errorf(OG_ERR_UNSUPPORTED,
                         "%s: tensor '%s' is %s: only F32, F16, BF16, Q4_0, Q4_1 and Q8_0 "
                         "are converted", m->path, t->name, gguf_type_name(t->type));
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

/* [N, K/32, 32*bits/8] blocks (what 0), [N, K/32] scales (1), and for Q4_1 [N, K/32]
 * float zero points (2); a row at a time into buf (K bytes is enough for any of them) */
static void write_blocks(onnx_out *o, const cv_src *src, int n_src, int64_t kb, int what,
                         uint8_t *buf) {
    for (int s = 0; s < n_src; s++) {
        const gguf_tensor *t = src[s].t;
        size_t bb = t->type == GGML_Q8_0 ? 34 : t->type == GGML_Q4_0 ? 18 : 20;
        for (int64_t r = 0; r < src[s].rows; r++) {
            const uint8_t *p = row_ptr(t, src_row(&src[s], r));
            uint8_t *out = buf;
            for (int64_t b = 0; b < kb; b++) {
                const uint8_t *blk = p + (size_t)b * bb;
                float v;
                if (what == 1) {
                    v = f16(blk);
                } else if (what == 2) {
                    /* Q4_1: d * q + m = (q - zp) * d with zp = -m / d, one rounding away
                     * (cv_weight refuses blocks with d = 0 and m != 0) */
                    float d = f16(blk), mn = f16(blk + 2);
                    v = d != 0.0f ? -mn / d : 0.0f;
                } else if (t->type == GGML_Q8_0) {
                    for (int i = 0; i < 32; i++) out[i] = (uint8_t)(blk[2 + i] ^ 0x80);
                    out += 32;
                    continue;
                } else {
                    /* GGUF element e < 16 is the low nibble of qs[e], e >= 16 the high
                     * nibble of qs[e - 16]; output byte i holds elements 2i and 2i + 1 */
                    const uint8_t *qs = blk + bb - 16;
                    for (int i = 0; i < 8; i++)
                        out[i] = (uint8_t)((qs[2 * i] & 15) | (qs[2 * i + 1] & 15) << 4);
                    for (int i = 0; i < 8; i++)
                        out[8 + i] = (uint8_t)(qs[2 * i] >> 4 | (qs[2 * i + 1] & 0xF0));
                    out += 16;
                    continue;
                }
                memcpy(out, &v, 4);
                out += 4;
            }
            onnx_init_write(o, buf, (size_t)(out - buf));
        }
    }
}

static bool is_block_type(uint32_t t) {
    return t == GGML_Q4_0 || t == GGML_Q4_1 || t == GGML_Q8_0;
}

og_status *cv_weight(onnx_out *o, const cv_model *m, const char *base, const cv_src *src,
                     int n_src, int64_t k, cv_written *w) {
    memset(w, 0, sizeof *w);
    w->k = k;
    uint32_t type = src[0].t->type;
    bool quant = is_block_type(type);
    for (int s = 0; s < n_src; s++) {
        w->n += src[s].rows;
        if (src[s].t->type != type && (quant || is_block_type(src[s].t->type)))
            return og_errorf(OG_ERR_UNSUPPORTED,
                             "%s: tensors '%s' (%s) and '%s' (%s) are fused into one "
                             "projection and must have the same quantization",
                             m->path, src[0].t->name, gguf_type_name(type), src[s].t->name,
                             gguf_type_name(src[s].t->type));
    }
    if (type == GGML_Q4_1) {
        for (int s = 0; s < n_src; s++)
            for (int64_t r = 0; r < src[s].rows; r++) {
                const uint8_t *p = row_ptr(src[s].t, r);
                for (int64_t b = 0; b < k / 32; b++)
                    if (f16(p + b * 20) == 0.0f && f16(p + b * 20 + 2) != 0.0f)
                        return og_errorf(OG_ERR_UNSUPPORTED,
                                         "%s: tensor '%s' row %" PRId64 " block %" PRId64
                                         ": Q4_1 scale 0 with offset %g has no MatMulNBits form",
                                         m->path, src[s].t->name, r, b, f16(p + b * 20 + 2));
            }
    }
    /* the builder's initializer name: node path without its leading '/', dots for '/' */
    char wname[256];
    snprintf(wname, sizeof wname, "%s.weight", base + 1);
    for (char *c = wname; *c; c++)
        if (*c == '/') *c = '.';
    if (!quant) {
        OG_TRY(write_float_kn(o, m, wname, src, n_src, w->n, k));
        w->names[0] = onnx_fmt(o, "%s", wname);
        return NULL;
    }
    w->bits = type == GGML_Q8_0 ? 8 : 4;
    w->float_zp = type == GGML_Q4_1;
    int64_t kb = k / 32;
    int64_t dq[3] = {w->n, kb, 32 * w->bits / 8}, ds[2] = {w->n, kb};
    uint8_t *buf = malloc((size_t)k);
    if (!buf) return og_oom_for((size_t)k, "a row of %s", src[0].t->name);
    onnx_init_begin(o, onnx_fmt(o, "%s_Q%d", wname, w->bits), OX_UINT8, dq, 3);
    write_blocks(o, src, n_src, kb, 0, buf);
    w->names[0] = onnx_init_end(o);
    onnx_init_begin(o, onnx_fmt(o, "%s_scales", wname), OX_FLOAT, ds, 2);
    write_blocks(o, src, n_src, kb, 1, buf);
    w->names[1] = onnx_init_end(o);
    if (w->float_zp) {
        onnx_init_begin(o, onnx_fmt(o, "%s_zero_points", wname), OX_FLOAT, ds, 2);
        write_blocks(o, src, n_src, kb, 2, buf);
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
    /* accuracy_level 4 (int8 activations) is the builder's CPU default for int4; the 8-bit
     * and float-zero-point forms keep float activations */
    onnx_attr attrs[5] = {ATTR_I("K", w->k), ATTR_I("N", w->n), ATTR_I("bits", w->bits),
                          ATTR_I("block_size", 32), ATTR_I("accuracy_level", 4)};
    int n_attr = w->bits == 4 && !w->float_zp ? 5 : 4;
    return onnx_node(o, "MatMulNBits", "com.microsoft", onnx_fmt(o, "%s_Q%d", base, w->bits),
                     ins, w->float_zp ? 4 : 3, &out, 1, attrs, n_attr);
}

og_status *cv_matmul(onnx_out *o, const cv_model *m, const char *base, const char *x,
                     const cv_src *src, int n_src, int64_t k, const char *out,
                     const char **result) {
    cv_written w;
    OG_TRY(cv_weight(o, m, base, src, n_src, k, &w));
    *result = cv_matmul_node(o, base, x, &w, out);
    return NULL;
}
