/* Attention over fixed key tiles, merged in order (see attention_tiles.h).
 *
 * A task is (sequence, kv head, block of QB query rows, key tile): the tile's key and
 * value rows are located once (converted to float32 when stored narrower) and read by
 * all query heads of the group and all rows of the block. Each (row, head, tile) writes
 * its partial (m, l, o) to its own slot; the merge then reads the slots in tile order.
 *
 * The arithmetic of a row is fixed: a score is cpu_attn_scores' (whose value for a key
 * does not depend on the keys beside it; a task with several query rows computes the
 * same values from the keys laid across the lanes, cpu_attn_scores_t), the softmax runs
 * over exactly the row's visible keys of the tile, and the output is the sum over
 * those keys of p * v in an order fixed by their count (tl_weighted). Nothing in it
 * depends on the other rows, the tile's width or how the keys are laid out (blocks of
 * any size, or one contiguous run).
 *
 * Quantized rows (int8 / float8 rows with their scales, or the node's fixed-scale codes)
 * are never loaded into float32 tiles for a decode step (a task of one query row): it
 * dequantizes its keys and then its values 16 rows at a time into two small blocks that
 * stay in L1, each row once for all the group's heads (AVX-512, 16 values a step,
 * kv_lanes.h, where that takes the head size: a multiple of 16 up to 256; else
 * kv_rows_load / kv_fixed_load), scores a key block as the tiles score float32 rows, and
 * takes the value blocks into weighted sums whose accumulators carry over from block to
 * block (tl_weighted_block: the bits of tl_weighted_heads over the whole run, on AVX-512,
 * AVX2 and the portable loops). On AVX-512 a task of several rows lays its keys across
 * the lanes straight from the codes (cpu_attn_keys_t_q, dequantized in registers) and
 * loads only its values into a tile. Either way a query gets the bits the float32 tiles
 * give the rows' values (gqa_tiles_float_tiles takes the tiles, for the tests). */
#include "backends/native/kernels/attention/attention_tiles.h"

#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/attention_ort.h"
#include "backends/native/kernels/attention/kv_lanes.h"
#include "backends/native/kernels/attention/kv_rows.h"

#include "backends/native/kernels/kernel_util.h"
#include "base/isa.h"
#include "base/vmath.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

enum { QB = 16, TK = GQA_TILE, TL_ACC = 16 /* vectors of a head's streaming sums (U C) */ };

/* The partial results of a run's (row, head, tile)s take at most this many bytes at once
 * (attention_tiles.h): the rows go in slices of whole QB-row blocks (a prompt piece of 512
 * rows over 32768 keys would otherwise hold 512 x 14 heads x 128 tiles x (D + 2) floats,
 * 242 MB at D 64). */
size_t gqa_tiles_part_bytes = (size_t)16 << 20;

typedef struct tl_task {
    int32_t seq, g, i0, i1, tile;
} tl_task;

typedef struct tl_job {
    const gqa_tiles *t;
    int64_t R;
    size_t row_bytes;        /* one position of one kv head */
    int64_t *part_base, *tok_base, *tile0, *ntiles; /* per sequence */
    int64_t *row0, *row1;    /* per sequence: the slice's rows [row0, row1) */
    float *part;             /* per (row of the slice, head, tile): m, l, o[D] */
    tl_task *tasks;
    int64_t ntasks;
    float *wbuf;
    int64_t per_worker;      /* floats per worker slice */
    /* Quantized rows not loaded into float32 tiles (see the top): keys' format (kv_lanes.h;
     * the fixed scales' channel scales of kv head g at kch + g * kch_ld) */
    bool qdec;               /* a decode step's task reads its rows in L1 blocks */
    bool qkeys;              /* a prompt's task lays its keys across from the codes */
    bool qlanes;             /* the L1 blocks dequantize with kv_lanes.h (else kv_rows_load) */
    kvl_src fmt[2];          /* keys', values' formats (ch unset) */
    const float *ch[2];      /* the fixed scales' channel scales: kv head g's at ch[p] + g * ch_ld[p] */
    int64_t ch_ld[2];
    int64_t ktile;           /* floats of the float32 key tile (0 with qkeys) */
    atomic_long next;
} tl_job;

/* Floats rounded up to 64 bytes, so that every part of a worker's slice is aligned. */
static inline int64_t tl_round(int64_t floats) { return (floats + 15) / 16 * 16; }

static inline const char *tl_row(const tl_job *j, const gqa_tiles_seq *s, const char *base,
                                 int64_t g, int64_t p) {
    int64_t r = p - s->key0, bs = s->block_size;
    int64_t blk = s->blocks ? s->blocks[r / bs] : 0;
    return base + (size_t)blk * s->block_bytes + ((size_t)g * (size_t)bs + (size_t)(r % bs)) * j->row_bytes;
}

/* o += sum over x < n of w[x] * v[x] across the head dimension. The order of the sum
 * depends only on n and the head size (never on where the rows lie), so a row gets the
 * same bits from a contiguous cache, a paged one or any batch. With AVX-512 and a head
 * size that is a multiple of 8 up to 256, the head is C = D / 16 vectors rounded up (the
 * last one eight floats when D % 16 == 8, its other lanes unused), U independent
 * accumulators take the keys in turn (key x into accumulator x % U, fused multiply-adds),
 * combined as a0 + a1 or ((a0 + a1) + (a2 + a3)) at the end, and the leftover n % U keys
 * go to a0 before that; U is 4 for C <= 2, 2 for C <= 8, else 1 (TL_KEYS). Builds
 * without AVX-512 on an AVX2 CPU take cpu_attn_weighted_heads_avx2 (head sizes that are
 * multiples of 8); other head sizes four keys a pass, each element summed one key after
 * the other. */
#if defined(__AVX512F__)
#include <immintrin.h>

/* The keys in flight for a head of C vectors: enough independent chains of fused
 * multiply-adds in one head. A function of C alone, so a head takes the same operations
 * however many heads share its pass. */
#define TL_KEYS(C) ((C) <= 2 ? 4 : (C) <= 8 ? 2 : 1)

/* Vector c of the C of a head row: whole, or only its first eight floats when it is the
 * last and the head size is an odd multiple of 8 (T8). */
#define TL_LANES(c, C, T8) ((T8) && (c) == (C) - 1 ? (__mmask16)0x00ff : (__mmask16)0xffff)

/* tl_weighted_h a block of keys at a time, for value rows dequantized a block at a time:
 * the H x U x C accumulators wait in am ([H][U][C] vectors) between blocks, so the sums
 * are tl_weighted_h's over the whole run, bit for bit, when every block but the last
 * holds a multiple of U keys. Keys x0 .. x1 of the run, their rows at v[x - x0]; the
 * first block starts from zero, the last adds the n % U keys left to accumulator 0 and
 * then o += the combined sums. Head sizes 16 C - 8 T8. */
static inline __attribute__((always_inline)) void tl_wstream_h(__m512 *am, float *const *o,
                                                               const float *const *w,
                                                               const float *const *v, int64_t x0,
                                                               int64_t x1, bool first, bool last,
                                                               int C, int T8, int H) {
    const int U = TL_KEYS(C);
    __m512 acc[6][4][16];
#pragma GCC unroll 6
    for (int h = 0; h < H; h++)
#pragma GCC unroll 4
        for (int u = 0; u < U; u++)
#pragma GCC unroll 16
            for (int c = 0; c < C; c++)
                acc[h][u][c] = first ? _mm512_setzero_ps() : _mm512_loadu_ps((const float *)(am + (h * U + u) * C + c));
    int64_t x = x0;
    for (; x + U <= x1; x += U)
#pragma GCC unroll 4
        for (int u = 0; u < U; u++) {
            const float *r = v[x + u - x0];
            __m512 rv[16];
#pragma GCC unroll 16
            for (int c = 0; c < C; c++) rv[c] = _mm512_maskz_loadu_ps(TL_LANES(c, C, T8), r + 16 * c);
#pragma GCC unroll 6
            for (int h = 0; h < H; h++) {
                __m512 wx = _mm512_set1_ps(w[h][x + u]);
#pragma GCC unroll 16
                for (int c = 0; c < C; c++) acc[h][u][c] = _mm512_fmadd_ps(wx, rv[c], acc[h][u][c]);
            }
        }
    if (!last) {
#pragma GCC unroll 6
        for (int h = 0; h < H; h++)
#pragma GCC unroll 4
            for (int u = 0; u < U; u++)
#pragma GCC unroll 16
                for (int c = 0; c < C; c++) _mm512_storeu_ps((float *)(am + (h * U + u) * C + c), acc[h][u][c]);
        return;
    }
    for (; x < x1; x++) {
        __m512 rv[16];
#pragma GCC unroll 16
        for (int c = 0; c < C; c++) rv[c] = _mm512_maskz_loadu_ps(TL_LANES(c, C, T8), v[x - x0] + 16 * c);
#pragma GCC unroll 6
        for (int h = 0; h < H; h++) {
            __m512 wx = _mm512_set1_ps(w[h][x]);
#pragma GCC unroll 16
            for (int c = 0; c < C; c++) acc[h][0][c] = _mm512_fmadd_ps(wx, rv[c], acc[h][0][c]);
        }
    }
#pragma GCC unroll 6
    for (int h = 0; h < H; h++)
#pragma GCC unroll 16
        for (int c = 0; c < C; c++) {
            __m512 a = acc[h][0][c];
            if (U == 2) a = _mm512_add_ps(a, acc[h][1][c]);
            if (U == 4)
                a = _mm512_add_ps(_mm512_add_ps(a, acc[h][1][c]),
                                  _mm512_add_ps(acc[h][2][c], acc[h][3][c]));
            __mmask16 m = TL_LANES(c, C, T8);
            _mm512_mask_storeu_ps(o[h] + 16 * c, m,
                                  _mm512_add_ps(_mm512_maskz_loadu_ps(m, o[h] + 16 * c), a));
        }
}

/* Heads per pass: as many as keep the H x U x C accumulators and the C value vectors
 * within 30 registers (a broadcast weight beside them), at most 6. */
#define TL_HEADS_FIT(C) ((30 - (C)) / (TL_KEYS(C) * (C)))
#define TL_HEADS(C) (TL_HEADS_FIT(C) > 6 ? 6 : TL_HEADS_FIT(C) < 1 ? 1 : TL_HEADS_FIT(C))

/* tl_wstream_h for one head and for TL_HEADS(C) heads a pass (H heads at once over the
 * same value rows: a value vector is loaded once for all H, and each head takes exactly
 * the one-head operations, so it gets the same bits), for the head size 16 C - 8 T8; the
 * whole run is one block (am NULL, x0 0, x1 n, first and last). */
typedef void (*tl_weighted_fn)(__m512 *am, float *const *o, const float *const *w,
                               const float *const *v, int64_t x0, int64_t x1, bool first,
                               bool last);
#define TL_WEIGHTED(C, T8)                                                                  \
    static void tl_weighted_##C##_##T8##_1(__m512 *am, float *const *o,                   \
                                           const float *const *w, const float *const *v,  \
                                           int64_t x0, int64_t x1, bool first, bool last) { \
        tl_wstream_h(am, o, w, v, x0, x1, first, last, C, T8, 1);                          \
    }                                                                                      \
    static void tl_weighted_##C##_##T8##_h(__m512 *am, float *const *o,                   \
                                           const float *const *w, const float *const *v,  \
                                           int64_t x0, int64_t x1, bool first, bool last) { \
        tl_wstream_h(am, o, w, v, x0, x1, first, last, C, T8, TL_HEADS(C));                \
    }
#define TL_WEIGHTED2(C) TL_WEIGHTED(C, 1) TL_WEIGHTED(C, 0)
TL_WEIGHTED2(1) TL_WEIGHTED2(2) TL_WEIGHTED2(3) TL_WEIGHTED2(4) TL_WEIGHTED2(5) TL_WEIGHTED2(6)
TL_WEIGHTED2(7) TL_WEIGHTED2(8) TL_WEIGHTED2(9) TL_WEIGHTED2(10) TL_WEIGHTED2(11)
TL_WEIGHTED2(12) TL_WEIGHTED2(13) TL_WEIGHTED2(14) TL_WEIGHTED2(15) TL_WEIGHTED2(16)
#undef TL_WEIGHTED2
#undef TL_WEIGHTED

/* Per head size D = 8 (i + 1): one head, several heads a pass, and how many that is. */
#define TL_ENTRY(C)                                                                         \
    {tl_weighted_##C##_1_1, tl_weighted_##C##_1_h, TL_HEADS(C)},                           \
        {tl_weighted_##C##_0_1, tl_weighted_##C##_0_h, TL_HEADS(C)}
static const struct {
    tl_weighted_fn one, many;
    int heads;
} tl_weighted_table[32] = {TL_ENTRY(1),  TL_ENTRY(2),  TL_ENTRY(3),  TL_ENTRY(4),
                           TL_ENTRY(5),  TL_ENTRY(6),  TL_ENTRY(7),  TL_ENTRY(8),
                           TL_ENTRY(9),  TL_ENTRY(10), TL_ENTRY(11), TL_ENTRY(12),
                           TL_ENTRY(13), TL_ENTRY(14), TL_ENTRY(15), TL_ENTRY(16)};
#undef TL_ENTRY

#endif

static void tl_weighted(float *restrict o, const float *w, const float *const *v, int64_t n,
                        int64_t D) {
#if defined(__AVX512F__)
    if (D % 8 == 0 && D >= 8 && D <= 256) {
        float *const oh[1] = {o};
        const float *const wh[1] = {w};
        tl_weighted_table[D / 8 - 1].one(NULL, oh, wh, v, 0, n, true, true);
        return;
    }
#endif
    int64_t x = 0;
    for (; x + 4 <= n; x += 4) {
        const float *restrict v0 = v[x], *restrict v1 = v[x + 1], *restrict v2 = v[x + 2],
                              *restrict v3 = v[x + 3];
        float w0 = w[x], w1 = w[x + 1], w2 = w[x + 2], w3 = w[x + 3];
        int64_t d = 0;
        for (; d + 8 <= D; d += 8)
            for (int e = 0; e < 8; e++)
                o[d + e] = o[d + e] + w0 * v0[d + e] + w1 * v1[d + e] + w2 * v2[d + e] +
                           w3 * v3[d + e];
        for (; d < D; d++) o[d] = o[d] + w0 * v0[d] + w1 * v1[d] + w2 * v2[d] + w3 * v3[d];
    }
    for (; x < n; x++) {
        const float *restrict vx = v[x];
        float wx = w[x];
        int64_t d = 0;
        for (; d + 8 <= D; d += 8)
            for (int e = 0; e < 8; e++) o[d + e] = o[d + e] + wx * vx[d + e];
        for (; d < D; d++) o[d] = o[d] + wx * vx[d];
    }
}

/* tl_weighted for nh heads over the same value rows, several heads per pass where the
 * head size has such a path (the same bits as one head at a time). */
static void tl_weighted_heads(float *const *o, const float *const *w, const float *const *v,
                              int64_t n, int64_t D, int64_t nh) {
    int64_t h = 0;
#if !defined(__AVX512F__) && defined(__x86_64__)
    if (D % 8 == 0 && D <= 256 && isa_active() >= ISA_AVX2) {
        cpu_attn_weighted_heads_avx2(o, w, v, n, D, nh);
        return;
    }
#endif
#if defined(__AVX512F__)
    if (D % 8 == 0 && D >= 8 && D <= 256) {
        int hp = tl_weighted_table[D / 8 - 1].heads;
        if (hp > 1)
            for (; h + hp <= nh; h += hp)
                tl_weighted_table[D / 8 - 1].many(NULL, o + h, w + h, v, 0, n, true, true);
    }
#endif
    for (; h < nh; h++) tl_weighted(o[h], w[h], v, n, D);
}

/* The softmax of query row i's n scores rs (keys from a) for head h, softcap and bias as
 * the tiles take them, in place: part[0] = their maximum, part[1] = the sum of exp. */
static void tl_softmax(const gqa_tiles *t, int seq, int64_t i, int64_t h, int64_t a, int64_t n,
                       float *rs, float *part) {
    if (t->softcap > 0) {
        float cap = t->softcap, ic = 1.0f / t->softcap;
        for (int64_t x = 0; x < n; x++) rs[x] *= ic;
        vtanh_f32(rs, rs, n);
        for (int64_t x = 0; x < n; x++) rs[x] *= cap;
    }
    const float *bias = t->bias ? t->bias(t->arg, seq, i, h) : NULL;
    if (bias)
        for (int64_t x = 0; x < n; x++) rs[x] += bias[a + x];
    float mx = vmax_f32(rs, n);
    part[0] = mx;
    part[1] = vexp_shift_sum_f32(rs, rs, n, mx);
}

/* Floats of one head's accumulators for tl_weighted_block. */
static inline int64_t tl_acc_floats(int64_t D) {
    return 2 * D > TL_ACC * 16 ? 2 * D : TL_ACC * 16;
}

/* tl_weighted_heads a block of keys at a time (keys x0 .. x1 of the run, rows v[x - x0];
 * every block but the last a multiple of 16 keys), the heads' accumulators at am
 * (tl_acc_floats(D) a head) between blocks: the bits of tl_weighted_heads over the run.
 * The portable loops accumulate into o itself, four keys at a time from the run's first. */
static void tl_weighted_block(float *am, float *const *o, const float *const *w,
                              const float *const *v, int64_t x0, int64_t x1, bool first, bool last,
                              int64_t D, int64_t nh) {
    int64_t h = 0;
#if !defined(__AVX512F__) && defined(__x86_64__)
    if (D % 8 == 0 && D <= 256 && isa_active() >= ISA_AVX2) {
        cpu_attn_weighted_heads_avx2_block(am, o, w, v, x0, x1, first, last, D, nh);
        return;
    }
#endif
#if defined(__AVX512F__)
    if (D % 8 == 0 && D >= 8 && D <= 256) {
        int hp = tl_weighted_table[D / 8 - 1].heads;
        int64_t A = tl_acc_floats(D);
        if (hp > 1)
            for (; h + hp <= nh; h += hp)
                tl_weighted_table[D / 8 - 1].many((__m512 *)(am + h * A), o + h, w + h, v, x0, x1,
                                                  first, last);
        for (; h < nh; h++)
            tl_weighted_table[D / 8 - 1].one((__m512 *)(am + h * A), o + h, w + h, v, x0, x1,
                                             first, last);
        return;
    }
#endif
    (void)am, (void)first, (void)last;
    for (; h < nh; h++) {
        const float *wx = w[h] + x0;
        tl_weighted(o[h], wx, v, x1 - x0, D);
    }
}

#if defined(__AVX512F__)
/* n consecutive rows in format fmt (kv_lanes.h) as float32 at dst: the values
 * kv_rows_load / kv_fixed_load give, 16 a step. */
static inline __attribute__((always_inline)) void tl_deq_f(kvl_fmt fmt, const char *r, size_t rb,
                                                           int64_t n, int64_t D, const float *ch,
                                                           float *dst) {
    for (int64_t k = 0; k < n; k++, r += rb, dst += D) {
        kvl_row rs = kvl_row_of(fmt, r, D);
        for (int64_t c = 0; c < D / 16; c++) _mm512_storeu_ps(dst + 16 * c, kvl_load(fmt, r, rs, ch, c));
    }
}

static void tl_deq(const kvl_src *f, const char *r, int64_t n, float *dst) {
    switch (f->fmt) {
    case KVL_I8: tl_deq_f(KVL_I8, r, f->row_bytes, n, f->D, f->ch, dst); return;
    case KVL_F8: tl_deq_f(KVL_F8, r, f->row_bytes, n, f->D, f->ch, dst); return;
    case KVL_FIX8: tl_deq_f(KVL_FIX8, r, f->row_bytes, n, f->D, f->ch, dst); return;
    case KVL_FIX4: tl_deq_f(KVL_FIX4, r, f->row_bytes, n, f->D, f->ch, dst); return;
    default: return;
    }
}
#endif

/* Rows p .. p + m of kv head g (pass 0 keys, 1 values; format f with the head's scales)
 * as float32 at dst, a run of consecutive rows per call. */
static void tl_load_rows(const tl_job *j, const gqa_tiles_seq *s, const kvl_src *f, int pass,
                         int64_t g, int64_t p, int64_t m, float *dst) {
    const gqa_tiles *t = j->t;
    const char *base = pass ? s->vbase : s->kbase;
    for (int64_t e = p + m; p < e;) {
        int64_t run = s->block_size - (p - s->key0) % s->block_size;
        if (run > e - p) run = e - p;
        const char *src = tl_row(j, s, base, g, p);
#if defined(__AVX512F__)
        if (j->qlanes) tl_deq(f, src, run, dst);
        else
#endif
        if (t->fixed) kv_fixed_load(&t->fixed[pass], g, src, run, t->D, dst);
        else kv_rows_load(t->dt, src, run, t->D, dst);
        (void)f;
        dst += run * t->D;
        p += run;
    }
}

static void tl_weighted_block(float *am, float *const *o, const float *const *w,
                              const float *const *v, int64_t x0, int64_t x1, bool first, bool last,
                              int64_t D, int64_t nh);

/* A task of one query row over quantized rows (j->qdec; see the top): keys then values
 * 16 rows at a time into L1 blocks kb and vb, each row dequantized once for the R heads. */
static void tl_run_decode_q(tl_job *j, const tl_task *tk, float *kb, float *vb, float *sc,
                            float *am) {
    const gqa_tiles *t = j->t;
    const gqa_tiles_seq *s = &t->seqs[tk->seq];
    int64_t D = t->D, R = j->R, g = tk->g, i = tk->i0;
    int64_t c0 = (int64_t)tk->tile * TK, c1 = c0 + TK;
    if (c0 < s->key0) c0 = s->key0;
    if (c1 > s->keys) c1 = s->keys;
    int64_t lo, hi;
    t->range(t->arg, tk->seq, i, &lo, &hi);
    int64_t a = lo > c0 ? lo : c0, b = hi < c1 - 1 ? hi : c1 - 1, n = b - a + 1;
    int64_t nt = j->ntiles[tk->seq], ct = tk->tile - j->tile0[tk->seq], sld = tl_round(TK);
    const float *qg = t->q + (s->tok0 + i) * t->q_ld + g * R * D;
    kvl_src f[2];
    for (int p = 0; p < 2; p++) {
        f[p] = j->fmt[p];
        f[p].ch = j->ch[p] ? j->ch[p] + g * j->ch_ld[p] : NULL;
    }
    for (int64_t x = 0; x < n; x += 16) {
        int64_t m = n - x < 16 ? n - x : 16;
        tl_load_rows(j, s, &f[0], 0, g, a + x, m, kb);
        cpu_attn_scores_heads(qg, D, R, kb, m, D, t->scale, sc + x, sld);
    }
    float *oh[64];
    const float *wh[64];
    for (int64_t r = 0; r < R; r++) {
        int64_t h = g * R + r;
        float *part =
            j->part + (j->part_base[tk->seq] + ((i - j->row0[tk->seq]) * t->N + h) * nt + ct) * (D + 2);
        oh[r] = part + 2;
        wh[r] = sc + r * sld;
        for (int64_t d = 0; d < D; d++) oh[r][d] = 0.0f;
        if (n <= 0) {
            part[0] = -INFINITY;
            part[1] = 0.0f;
            continue;
        }
        tl_softmax(t, tk->seq, i, h, a, n, sc + r * sld, part);
    }
    const float *vr[16];
    for (int64_t x = 0; x < n; x += 16) {
        int64_t m = n - x < 16 ? n - x : 16;
        tl_load_rows(j, s, &f[1], 1, g, a + x, m, vb);
        for (int64_t k = 0; k < m; k++) vr[k] = vb + k * D;
        tl_weighted_block(am, oh, wh, vr, x, x + m, x == 0, x + m == n, D, R);
    }
}

static void tl_run_task(tl_job *j, const tl_task *tk, float *slice) {
    const gqa_tiles *t = j->t;
    const gqa_tiles_seq *s = &t->seqs[tk->seq];
    int64_t D = t->D, R = j->R, g = tk->g;
    int64_t c0 = (int64_t)tk->tile * TK, c1 = c0 + TK;
    if (c0 < s->key0) c0 = s->key0;
    if (c1 > s->keys) c1 = s->keys;
    const float **kp = (const float **)slice, **vp = kp + TK;
    float *kb = (float *)(vp + TK), *vb = kb + j->ktile, *sc = vb + tl_round(TK * D);
    int32_t *run_len = (int32_t *)(sc + R * tl_round(TK));
    float *kt = sc + (R + 1) * tl_round(TK);
    if (j->qdec && tk->i1 - tk->i0 == 1) {
        tl_run_decode_q(j, tk, vb, vb + 16 * D, sc, kt + tl_round(TK * D));
        return;
    }
    /* the tile's rows, walked block by block (no division per row) */
    for (int64_t p = c0; p < c1;) {
        int64_t r = p - s->key0, run = s->block_size - r % s->block_size;
        if (run > c1 - p) run = c1 - p;
        const char *kr = tl_row(j, s, s->kbase, g, p), *vr = tl_row(j, s, s->vbase, g, p);
        /* codes times the node's scales of head g, or the run's rows as float32, one call
         * each (with qkeys the keys stay as stored) */
        if (t->fixed) {
            if (!j->qkeys) kv_fixed_load(&t->fixed[0], g, kr, run, D, kb + (p - c0) * D);
            kv_fixed_load(&t->fixed[1], g, vr, run, D, vb + (p - c0) * D);
        } else if (t->dt != OG_FLOAT32) {
            if (!j->qkeys) kv_rows_load(t->dt, kr, run, D, kb + (p - c0) * D);
            kv_rows_load(t->dt, vr, run, D, vb + (p - c0) * D);
        }
        for (int64_t x = 0; x < run; x++, p++) {
            bool stored = t->dt == OG_FLOAT32;
            kp[p - c0] = stored || j->qkeys ? (const float *)(kr + (size_t)x * j->row_bytes)
                                            : kb + (p - c0) * D;
            vp[p - c0] = stored ? (const float *)(vr + (size_t)x * j->row_bytes) : vb + (p - c0) * D;
        }
    }
    /* Several query rows against these keys: the keys the rows see, from the tile's
     * start, laid across the lanes once (the scores are the same bits either way). One
     * row (a decode step) reads each key row once for its heads instead: laying them
     * across would cost more than the scores it serves. */
    bool across = false;
    if (tk->i1 - tk->i0 > 1 && ((tk->i1 - tk->i0) * R >= 4 || j->qkeys)) {
        int64_t kn = 0;
        for (int64_t i = tk->i0; i < tk->i1; i++) {
            int64_t lo, hi;
            t->range(t->arg, tk->seq, i, &lo, &hi);
            if (lo <= hi && hi >= c0 && lo < c1) {
                int64_t e = (hi < c1 - 1 ? hi : c1 - 1) - c0 + 1;
                kn = e > kn ? e : kn;
            }
        }
        if (j->qkeys && kn > 0) { /* the codes laid across, dequantized in registers */
            kvl_src kf = j->fmt[0];
            kf.ch = j->ch[0] ? j->ch[0] + g * j->ch_ld[0] : NULL;
            cpu_attn_keys_t_q(&kf, (const char *const *)kp, kn, kt);
            across = true;
        } else {
            across = kn > 0 && cpu_attn_keys_t(kp, kn, D, kt);
        }
    }
    /* otherwise run_len[x]: how many keys from x on lie one after the other in memory */
    if (!across)
        for (int64_t x = c1 - c0 - 1; x >= 0; x--)
            run_len[x] = x + 1 < c1 - c0 && kp[x + 1] == kp[x] + D ? run_len[x + 1] + 1 : 1;
    int64_t nt = j->ntiles[tk->seq], ct = tk->tile - j->tile0[tk->seq];
    int64_t sld = tl_round(TK); /* head r's scores at sc + r * sld */
    float *oh[64];
    const float *wh[64];
    for (int64_t i = tk->i0; i < tk->i1; i++) {
        int64_t lo, hi;
        t->range(t->arg, tk->seq, i, &lo, &hi);
        int64_t a = lo > c0 ? lo : c0, b = hi < c1 - 1 ? hi : c1 - 1, n = b - a + 1;
        const float *qg = t->q + (s->tok0 + i) * t->q_ld + g * R * D;
        int64_t x0 = (a - c0) & ~(int64_t)15;
        if (across && n > 0) /* the group's heads together, whole blocks of 16 keys from a's */
            cpu_attn_scores_t_heads(qg, D, R, kt + x0 * D, (a - c0 + n - x0 + 15) / 16, D,
                                    t->scale, sc + x0, sld);
        /* otherwise per contiguous run of keys, the group's heads together; a key's score
         * does not depend on the run */
        for (int64_t x = 0; !across && x < n;) {
            int64_t run = run_len[a - c0 + x] < n - x ? run_len[a - c0 + x] : n - x;
            cpu_attn_scores_heads(qg, D, R, kp[a - c0 + x], run, D, t->scale, sc + x, sld);
            x += run;
        }
        for (int64_t r = 0; r < R; r++) {
            int64_t h = g * R + r;
            float *part = j->part + (j->part_base[tk->seq] + ((i - j->row0[tk->seq]) * t->N + h) * nt +
                                     ct) * (D + 2);
            float *o = part + 2;
            oh[r] = o;
            for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
            if (n <= 0) {
                part[0] = -INFINITY;
                part[1] = 0.0f;
                continue;
            }
            float *rs = sc + r * sld + (across ? a - c0 : 0); /* the row's n scores */
            tl_softmax(t, tk->seq, i, h, a, n, rs, part);
            wh[r] = rs;
        }
        /* the value rows once for several heads of the group */
        if (n > 0) tl_weighted_heads(oh, wh, vp + (a - c0), n, D, R);
    }
}

static void tl_worker(void *arg, int64_t begin, int64_t end) {
    tl_job *j = arg;
    (void)end;
    float *slice = j->wbuf + begin * j->per_worker;
    for (;;) {
        long k = atomic_fetch_add(&j->next, 1);
        if (k >= j->ntasks) break;
        tl_run_task(j, &j->tasks[k], slice);
    }
}

/* Per (sequence, row): merge the tiles of every head in order. */
static void tl_merge_fn(void *arg, int64_t begin, int64_t end) {
    tl_job *j = arg;
    const gqa_tiles *t = j->t;
    int64_t D = t->D;
    bool has_sink = t->sink || t->smooth;
    for (int si = 0; si < t->n_seqs; si++) {
        const gqa_tiles_seq *s = &t->seqs[si];
        int64_t first = j->tok_base[si] - j->row0[si], nt = j->ntiles[si];
        if (j->row0[si] >= j->row1[si] || first + j->row0[si] >= end || first + j->row1[si] <= begin)
            continue;
        for (int64_t i = j->row0[si]; i < j->row1[si]; i++) {
            if (first + i < begin || first + i >= end) continue;
            int64_t lo, hi;
            t->range(t->arg, si, i, &lo, &hi);
            if (lo < s->key0) lo = s->key0;
            if (hi > s->keys - 1) hi = s->keys - 1;
            int64_t ca = lo / TK - j->tile0[si], cb = lo > hi ? ca - 1 : hi / TK - j->tile0[si];
            for (int64_t h = 0; h < t->N; h++) {
                const float *base =
                    j->part + (j->part_base[si] + ((i - j->row0[si]) * t->N + h) * nt) * (D + 2);
                float sk = t->sink ? t->sink[h] : 0.0f;
                float M = has_sink ? sk : -INFINITY;
                for (int64_t c = ca; c <= cb; c++) M = base[c * (D + 2)] > M ? base[c * (D + 2)] : M;
                float den = has_sink ? expf(sk - M) : 0.0f;
                float *o = t->out + (s->tok0 + i) * t->N * D + h * D;
                if (ca == cb && !has_sink) { /* one tile: its weight e^(m - M) is 1 */
                    const float *pc = base + ca * (D + 2);
                    float inv = pc[1] > 0 ? 1.0f / pc[1] : 0.0f;
                    for (int64_t d = 0; d < D; d++) o[d] = pc[1] == 0.0f ? 0.0f : pc[2 + d] * inv;
                    continue;
                }
                for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
                for (int64_t c = ca; c <= cb; c++) {
                    const float *pc = base + c * (D + 2);
                    if (pc[1] == 0.0f) continue; /* no key of this tile is visible */
                    float w = expf(pc[0] - M);
                    den += w * pc[1];
                    for (int64_t d = 0; d < D; d++) o[d] += w * pc[2 + d];
                }
                float inv = den > 0 ? 1.0f / den : 0.0f;
                for (int64_t d = 0; d < D; d++) o[d] *= inv;
            }
        }
    }
}

bool gqa_tiles_float_tiles = false;

/* Which of the quantized paths t's rows take (see the top): a decode step's L1 blocks
 * for any quantized rows (unless gqa_tiles_float_tiles); the codes laid across for a
 * prompt, and the blocks' AVX-512 dequantization, where kv_lanes.h takes the head size
 * on this CPU; then the formats and channel scales (a per-tensor scale repeated into
 * scratch). */
static og_status *tl_quant_setup(kernel_ctx *ctx, tl_job *j) {
    const gqa_tiles *t = j->t;
    j->qdec = j->qkeys = j->qlanes = false;
    if (!(kv_quantized(t->dt) || t->fixed) || gqa_tiles_float_tiles) return NULL;
    j->qdec = true;
#if defined(__AVX512F__)
    j->qkeys = j->qlanes = cpu_attn_q_fast(t->D);
#endif
    for (int p = 0; p < 2; p++) {
        j->fmt[p] = (kvl_src){.D = t->D, .row_bytes = j->row_bytes};
        j->ch[p] = NULL;
        j->ch_ld[p] = 0;
        if (!t->fixed) {
            j->fmt[p].fmt = t->dt == OG_INT8 ? KVL_I8 : KVL_F8;
            continue;
        }
        const kv_fixed *f = &t->fixed[p];
        j->fmt[p].fmt = f->bits == 8 ? KVL_FIX8 : KVL_FIX4;
        if (f->per_channel) {
            j->ch[p] = f->scale;
            j->ch_ld[p] = t->D;
        } else if (j->qkeys) {
            float *rep;
            OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)t->D, (void **)&rep));
            for (int64_t d = 0; d < t->D; d++) rep[d] = f->scale[0];
            j->ch[p] = rep;
        }
    }
    return NULL;
}

/* The next slice from row i0 of sequence si on: whole row blocks in the flat order of
 * the sequences, their parts within gqa_tiles_part_bytes (at least one block). Sets row0 / row1,
 * part_base and tok_base, advances (si, i0) and returns the slice's rows; *parts gets
 * its parts and *ntasks at most its tasks. */
static int64_t tl_next_slice(tl_job *j, int *si, int64_t *i0, int64_t *parts, int64_t *ntasks) {
    const gqa_tiles *t = j->t;
    int64_t tokens = 0;
    *parts = *ntasks = 0;
    for (int k = 0; k < t->n_seqs; k++) j->row0[k] = j->row1[k] = 0;
    while (*si < t->n_seqs) {
        const gqa_tiles_seq *s = &t->seqs[*si];
        if (*i0 >= s->n) {
            (*si)++, *i0 = 0;
            continue;
        }
        int64_t n = s->n - *i0 < QB ? s->n - *i0 : QB, np = n * t->N * j->ntiles[*si];
        size_t bytes = sizeof(float) * (size_t)((*parts + np) * (t->D + 2));
        if (tokens > 0 && bytes > gqa_tiles_part_bytes) break;
        if (j->row1[*si] == j->row0[*si]) { /* the sequence's first block in this slice */
            j->row0[*si] = j->row1[*si] = *i0;
            j->part_base[*si] = *parts;
            j->tok_base[*si] = tokens;
        }
        j->row1[*si] += n;
        *parts += np;
        *ntasks += t->KV * j->ntiles[*si];
        tokens += n;
        *i0 += n;
    }
    return tokens;
}

/* The tasks of the slice tl_next_slice set: per row block, kv head and tile that a row of
 * the block sees. Returns their count; *work_ns gets the slice's estimated work. */
static int64_t tl_slice_tasks(tl_job *j, double *work_ns) {
    const gqa_tiles *t = j->t;
    int64_t ntasks = 0;
    *work_ns = 0;
    for (int i = 0; i < t->n_seqs; i++) {
        const gqa_tiles_seq *s = &t->seqs[i];
        /* about 8 multiply-adds a nanosecond and an exponential per (query, head, key) */
        *work_ns += (double)((j->row1[i] - j->row0[i]) * t->N) * (double)(s->keys - s->key0) *
                    ((double)t->D * 0.25 + 1.0);
        for (int64_t i0 = j->row0[i]; i0 < j->row1[i]; i0 += QB) {
            int64_t i1 = i0 + QB < s->n ? i0 + QB : s->n, lo_min = INT64_MAX, hi_max = -1;
            for (int64_t r = i0; r < i1; r++) {
                int64_t lo, hi;
                t->range(t->arg, i, r, &lo, &hi);
                if (lo < s->key0) lo = s->key0;
                if (hi > s->keys - 1) hi = s->keys - 1;
                if (lo > hi) continue;
                lo_min = lo < lo_min ? lo : lo_min;
                hi_max = hi > hi_max ? hi : hi_max;
            }
            if (hi_max < 0) continue; /* no row sees a key: all zero */
            for (int64_t c = lo_min / TK; c <= hi_max / TK; c++)
                for (int64_t g = 0; g < t->KV; g++)
                    j->tasks[ntasks++] = (tl_task){i, (int32_t)g, (int32_t)i0, (int32_t)i1, (int32_t)c};
        }
    }
    return ntasks;
}

og_status *gqa_tiles_run(kernel_ctx *ctx, const gqa_tiles *t) {
    if (gqa_ort_applies(t)) return gqa_ort_run(ctx, t);
    tl_job j = {.t = t, .R = t->N / t->KV,
                .row_bytes = t->fixed ? kv_fixed_row_bytes(t->fixed, t->D)
                                      : kv_row_bytes(t->dt, t->D)};
    int ns = t->n_seqs;
    if (ns == 0) return NULL;
    if (j.R > 64)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%lld query heads per kv head (at most 64)",
                             (long long)j.R);
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)ns * 6 + 1, (void **)&j.part_base));
    j.tok_base = j.part_base + ns;
    j.tile0 = j.tok_base + ns;
    j.ntiles = j.tile0 + ns;
    j.row0 = j.ntiles + ns;
    j.row1 = j.row0 + ns;
    for (int i = 0; i < ns; i++) {
        const gqa_tiles_seq *s = &t->seqs[i];
        j.tile0[i] = s->key0 / TK;
        j.ntiles[i] = s->keys > s->key0 ? (s->keys - 1) / TK - j.tile0[i] + 1 : 0;
    }
    /* the largest slice's parts and tasks: every slice reuses the same scratch */
    int64_t max_parts = 0, max_tasks = 0, parts, ntasks, i0 = 0, tokens;
    int si = 0;
    while (tl_next_slice(&j, &si, &i0, &parts, &ntasks) > 0) {
        max_parts = parts > max_parts ? parts : max_parts;
        max_tasks = ntasks > max_tasks ? ntasks : max_tasks;
    }
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(max_parts * (t->D + 2)) + 1, (void **)&j.part));
    OG_TRY(kernel_scratch(ctx, sizeof(tl_task) * (size_t)max_tasks + 1, (void **)&j.tasks));
    int64_t D = t->D;
    int64_t ptr_floats = 2 * TK * 2; /* two row-pointer arrays, 8 bytes an entry */
    OG_TRY(tl_quant_setup(ctx, &j));
    j.ktile = j.qkeys ? 0 : tl_round(TK * D);
    /* the pointers, the key tile (not with qkeys), the value tile (a decode step's two L1
     * blocks with qdec), R + 1 rows of scores and run lengths, the keys laid across, and
     * with qdec a decode step's accumulators */
    j.per_worker = tl_round(ptr_floats) + j.ktile + 2 * tl_round(TK * D) + (j.R + 1) * tl_round(TK) +
                   (j.qdec ? tl_round(j.R * tl_acc_floats(D)) : 0);
    int64_t pool = threadpool_size(ctx->pool);
    int64_t most = pool < max_tasks ? pool : max_tasks;
    if (most > 0)
        OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(most * j.per_worker), (void **)&j.wbuf));
    /* slice by slice (one, unless the parts exceed gqa_tiles_part_bytes): each row's tasks and
     * merge are those of one pass over all rows, so the bits are too */
    si = 0, i0 = 0;
    while ((tokens = tl_next_slice(&j, &si, &i0, &parts, &ntasks)) > 0) {
        double work_ns;
        j.ntasks = tl_slice_tasks(&j, &work_ns);
        int64_t workers = pool < j.ntasks ? pool : j.ntasks;
        if (workers > 0) {
            atomic_init(&j.next, 0);
            /* each call takes tasks until none are left: one call does it all inline */
            threadpool_parallel_for_cost(ctx->pool, workers, work_ns / (double)workers, tl_worker, &j);
        }
        double merge_ns = (double)(t->N * D) * 0.5 * (double)(j.ntasks / tokens + 1);
        threadpool_parallel_for_cost(ctx->pool, tokens, merge_ns, tl_merge_fn, &j);
    }
    return NULL;
}
