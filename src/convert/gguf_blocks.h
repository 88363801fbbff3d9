/* GGUF's quantized block formats read as sub-blocks of 16 or 32 values, each with one
 * float scale and either an integer zero point (value = scale * (q - zp)) or an offset
 * (value = scale * q + offset): the forms MatMulNBits and GatherBlockQuantized take.
 * The scale and offset are computed in float32 exactly as gguf's dequantize() computes
 * them (a float16 times a small integer is exact), so scale * (q - zp), and
 * scale * q + offset with two roundings, give its values bit for bit. */
#ifndef OG_CONVERT_GGUF_BLOCKS_H
#define OG_CONVERT_GGUF_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gq_format {
    uint32_t type;
    int block;  /* values per GGUF block (32 or 256) */
    int bytes;  /* bytes per GGUF block */
    int sub;    /* values per sub-block (one scale): 32 or 16 */
    int bits;   /* bits of the values: 2 fit MatMulNBits' 2-bit form, 3 and 4 its 4-bit, 5 and
                 * 6 its 8-bit */
    bool affine; /* an offset per sub-block (no integer zero point) */
    int zp;     /* the zero point of a symmetric format (the same for every block) */
} gq_format;

/* The format of a block-quantized type this reader knows, else NULL (F32 etc., Q8_1, Q8_K
 * and the IQ types). */
const gq_format *gq_format_of(uint32_t ggml_type);

typedef struct gq_sub {
    uint8_t q[32]; /* unsigned values (Q8_0: its int8 values + 128, zero point 128) */
    float scale;
    float offset;  /* affine formats */
} gq_sub;

/* Sub-block i (0 .. block/sub - 1) of the GGUF block at blk. */
void gq_decode(const gq_format *f, const uint8_t *blk, int i, gq_sub *out);

/* Only the scale and offset of sub-block i (what gq_decode gives, without the values). */
void gq_scale(const gq_format *f, const uint8_t *blk, int i, float *scale, float *offset);

/* One value as gguf's dequantize() gives it. */
static inline float gq_value(const gq_format *f, const gq_sub *s, int j) {
    if (f->affine) {
        float p = s->scale * (float)s->q[j];
        return p + s->offset;
    }
    return s->scale * (float)((int)s->q[j] - f->zp);
}

#endif
