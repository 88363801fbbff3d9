/* GroupQueryAttention over a paged KV cache (kernels/attention/attention_paged.c) against the same
 * kernel over contiguous caches: sequences of different lengths, prefilled in pieces
 * and batched with padding, in float32 and float16, with rotary, a local window, softcap
 * and a head sink. Both share the tile arithmetic (attention_tiles.h), so the results
 * are equal bit for bit: the engine's tokens equal `generate`'s. Then the invariance the
 * engine relies on: a sequence's output bits do not change with its batch-mates, its
 * layout or the thread count. */
#include "kernel_harness.h"
#include "testing.h"

#include "backends/backend.h"
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/attention_tiles.h"
#include "backends/paged_kv.h"
#include "base/half.h"

#include <stdlib.h>

enum { PN = 4, PKV = 2, PD = 16, PBS = 4, PBLOCKS = 64, PMAXPOS = 128, PSEQ = 3 };

typedef struct pa_case {
    og_dtype dt;
    int window;     /* local_window_size, -1: none */
    float softcap;
    bool sink;
} pa_case;

typedef struct pa_data {
    int T[PSEQ], past[PSEQ];
    float *q[PSEQ], *k[PSEQ], *v[PSEQ]; /* [T][heads * D] float32 */
    float cos[PMAXPOS * PD / 2], sin[PMAXPOS * PD / 2], sink[PN];
    int32_t blocks[PSEQ][PBLOCKS];
    void *kpool, *vpool;
} pa_data;

static uint32_t pa_state = 12345;
static float pa_rand(void) {
    pa_state = pa_state * 1664525u + 1013904223u;
    return (float)(pa_state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

static size_t pa_esz(og_dtype dt) { return dt == OG_FLOAT32 ? 4 : 2; }

static void pa_setup(pa_data *d, og_dtype dt) {
    static const int T[PSEQ] = {37, 5, 20}, past[PSEQ] = {30, 0, 13};
    for (int s = 0; s < PSEQ; s++) {
        d->T[s] = T[s];
        d->past[s] = past[s];
        d->q[s] = malloc(sizeof(float) * (size_t)T[s] * PN * PD);
        d->k[s] = malloc(sizeof(float) * (size_t)T[s] * PKV * PD);
        d->v[s] = malloc(sizeof(float) * (size_t)T[s] * PKV * PD);
        for (int i = 0; i < T[s] * PN * PD; i++) d->q[s][i] = cpu_round_to(dt, pa_rand());
        for (int i = 0; i < T[s] * PKV * PD; i++) d->k[s][i] = cpu_round_to(dt, pa_rand());
        for (int i = 0; i < T[s] * PKV * PD; i++) d->v[s][i] = cpu_round_to(dt, pa_rand());
    }
    for (int p = 0; p < PMAXPOS; p++)
        for (int j = 0; j < PD / 2; j++) {
            double a = p / pow(10000.0, 2.0 * j / PD);
            d->cos[p * PD / 2 + j] = cpu_round_to(dt, (float)cos(a));
            d->sin[p * PD / 2 + j] = cpu_round_to(dt, (float)sin(a));
        }
    for (int h = 0; h < PN; h++) d->sink[h] = cpu_round_to(dt, 0.5f * pa_rand());
    /* blocks handed out in a scrambled order, none shared */
    int next = 0;
    for (int s = 0; s < PSEQ; s++)
        for (int b = 0; b < PBLOCKS / PSEQ; b++) d->blocks[s][b] = (next++ * 37) % PBLOCKS;
    size_t pool = (size_t)PBLOCKS * PKV * PBS * PD * pa_esz(dt);
    d->kpool = calloc(1, pool);
    d->vpool = calloc(1, pool);
}

static void pa_free(pa_data *d) {
    for (int s = 0; s < PSEQ; s++) {
        free(d->q[s]);
        free(d->k[s]);
        free(d->v[s]);
    }
    free(d->kpool);
    free(d->vpool);
}

/* Rows [a, a + n) of an [T][w] float32 array into storage type dt at dst. */
static void pa_put(og_dtype dt, void *dst, const float *src, int a, int n, int w) {
    src += (size_t)a * w;
    for (size_t i = 0; i < (size_t)n * (size_t)w; i++) {
        if (dt == OG_FLOAT32) ((float *)dst)[i] = src[i];
        else ((uint16_t *)dst)[i] = f32_to_f16(src[i]);
    }
}

static int pa_attrs(const pa_case *c, graph_attr *at) {
    int n = 0;
    at[n++] = (graph_attr){.name = "num_heads", .type = ATTR_INT, .i = PN};
    at[n++] = (graph_attr){.name = "kv_num_heads", .type = ATTR_INT, .i = PKV};
    at[n++] = (graph_attr){.name = "do_rotary", .type = ATTR_INT, .i = 1};
    if (c->window > 0) at[n++] = (graph_attr){.name = "local_window_size", .type = ATTR_INT, .i = c->window};
    if (c->softcap > 0) at[n++] = (graph_attr){.name = "softcap", .type = ATTR_FLOAT, .f = c->softcap};
    return n;
}

/* The reference: sequence s alone through the contiguous kernel, all T tokens as one
 * prompt; out gets [T][N * D] float32. */
static og_status *pa_reference(const pa_case *c, pa_data *d, int s, float *out) {
    og_dtype dt = c->dt;
    int T = d->T[s];
    size_t es = pa_esz(dt);
    void *q = malloc(es * (size_t)T * PN * PD), *k = malloc(es * (size_t)T * PKV * PD),
         *v = malloc(es * (size_t)T * PKV * PD), *cs = malloc(es * PMAXPOS * PD / 2),
         *sn = malloc(es * PMAXPOS * PD / 2), *sk = malloc(es * PN);
    pa_put(dt, q, d->q[s], 0, T, PN * PD);
    pa_put(dt, k, d->k[s], 0, T, PKV * PD);
    pa_put(dt, v, d->v[s], 0, T, PKV * PD);
    pa_put(dt, cs, d->cos, 0, PMAXPOS, PD / 2);
    pa_put(dt, sn, d->sin, 0, PMAXPOS, PD / 2);
    pa_put(dt, sk, d->sink, 0, 1, PN);
    int64_t qd[3] = {1, T, PN * PD}, kd[3] = {1, T, PKV * PD}, one = 1, cd[2] = {PMAXPOS, PD / 2},
            nd = PN;
    int32_t sl = T - 1, tl = T;
    tensor tq = kh_tensor(dt, 3, qd, q), tk = kh_tensor(dt, 3, kd, k), tv = kh_tensor(dt, 3, kd, v),
           tsl = kh_tensor(OG_INT32, 1, &one, &sl), ttl = kh_tensor(OG_INT32, 1, &one, &tl),
           tc = kh_tensor(dt, 2, cd, cs), ts = kh_tensor(dt, 2, cd, sn), tsk = kh_tensor(dt, 1, &nd, sk);
    const tensor *in[12] = {&tq, &tk, &tv, NULL, NULL, &tsl, &ttl, &tc, &ts, NULL, NULL,
                            c->sink ? &tsk : NULL};
    graph_attr at[8];
    kh_run r;
    og_status *st = kh_call(&r, cpu_contrib_gqa, 1, at, pa_attrs(c, at), in, 12, 1);
    if (!st) cpu_load_f32(dt, r.out[0].data, (int64_t)T * PN * PD, out);
    kh_free(&r);
    free(q), free(k), free(v), free(cs), free(sn), free(sk);
    return st;
}

/* One paged run over a [B, S] query: seq i (of n_seqs) is data sequence which[i] with
 * tokens [from[i], from[i] + n[i]) placed at (row[i], off[i]). out: [B][S][N * D]. */
typedef struct pa_run {
    int n_seqs, B, S;
    int which[PSEQ], from[PSEQ], n[PSEQ], row[PSEQ], off[PSEQ];
} pa_run;

static og_status *pa_paged(const pa_case *c, pa_data *d, const pa_run *pr, float *out) {
    og_dtype dt = c->dt;
    size_t es = pa_esz(dt);
    int B = pr->B, S = pr->S;
    size_t room = (size_t)B * S + 64; /* a test may place tokens past S (refused) */
    void *q = calloc(room * PN * PD, es), *k = calloc(room * PKV * PD, es),
         *v = calloc(room * PKV * PD, es), *cs = malloc(es * PMAXPOS * PD / 2),
         *sn = malloc(es * PMAXPOS * PD / 2), *sk = malloc(es * PN);
    paged_kv_seq seqs[PSEQ];
    for (int i = 0; i < pr->n_seqs; i++) {
        int s = pr->which[i];
        size_t tok = (size_t)pr->row[i] * S + (size_t)pr->off[i];
        pa_put(dt, (char *)q + tok * PN * PD * es, d->q[s], pr->from[i], pr->n[i], PN * PD);
        pa_put(dt, (char *)k + tok * PKV * PD * es, d->k[s], pr->from[i], pr->n[i], PKV * PD);
        pa_put(dt, (char *)v + tok * PKV * PD * es, d->v[s], pr->from[i], pr->n[i], PKV * PD);
        seqs[i] = (paged_kv_seq){pr->row[i], pr->off[i], pr->n[i], pr->from[i], d->blocks[s]};
    }
    pa_put(dt, cs, d->cos, 0, PMAXPOS, PD / 2);
    pa_put(dt, sn, d->sin, 0, PMAXPOS, PD / 2);
    pa_put(dt, sk, d->sink, 0, 1, PN);
    int64_t qd[3] = {B, S, PN * PD}, kd[3] = {B, S, PKV * PD}, cd[2] = {PMAXPOS, PD / 2}, nd = PN;
    tensor tq = kh_tensor(dt, 3, qd, q), tk = kh_tensor(dt, 3, kd, k), tv = kh_tensor(dt, 3, kd, v),
           tc = kh_tensor(dt, 2, cd, cs), ts = kh_tensor(dt, 2, cd, sn), tsk = kh_tensor(dt, 1, &nd, sk);
    const tensor *in[12] = {&tq, &tk, &tv, NULL, NULL, NULL, NULL, &tc, &ts, NULL, NULL,
                            c->sink ? &tsk : NULL};
    const char *names[1] = {"past_key_values.0.key"};
    void *kp[1] = {d->kpool}, *vp[1] = {d->vpool};
    paged_kv pk = {.dtype = dt, .kv_heads = PKV, .head_size = PD, .block_size = PBS,
                   .n_blocks = PBLOCKS, .n_layers = 1, .layer_names = names, .k = kp, .v = vp,
                   .n_seqs = pr->n_seqs, .seqs = seqs};
    graph_value val = {.name = "past_key_values.0.key"};
    graph g = {.n_values = 1, .values = &val};
    int iv[12] = {-1, -1, -1, 0, -1, -1, -1, -1, -1, -1, -1, -1};
    graph_attr at[8];
    kh_run r;
    og_status *st = kh_call_ex(&r, cpu_contrib_gqa, 1, at, pa_attrs(c, at), in, 12, 1, &g, iv, &pk);
    if (!st) cpu_load_f32(dt, r.out[0].data, (int64_t)B * S * PN * PD, out);
    kh_free(&r);
    free(q), free(k), free(v), free(cs), free(sn), free(sk);
    return st;
}

/* Prefill the first `past` tokens of sequences 0 and 2 in one flat run, then the rest of
 * all three in another (with two padding tokens), and compare with the reference. */
static void pa_check_case(const pa_case *c) {
    pa_data d;
    pa_setup(&d, c->dt);
    float tol = 0; /* the same arithmetic: the same bits */
    float *ref[PSEQ], *out = calloc(64 * PN * PD, sizeof(float)), *alone = calloc(64 * PN * PD, sizeof(float));
    for (int s = 0; s < PSEQ; s++) {
        ref[s] = malloc(sizeof(float) * (size_t)d.T[s] * PN * PD);
        CHECK_OK(pa_reference(c, &d, s, ref[s]));
    }
    pa_run pre = {.n_seqs = 2, .B = 1, .S = 43, .which = {0, 2}, .from = {0, 0}, .n = {30, 13},
                  .row = {0, 0}, .off = {0, 30}};
    CHECK_OK(pa_paged(c, &d, &pre, out));
    for (int t = 0; t < 30; t++)
        for (int e = 0; e < PN * PD; e++) CHECK_NEAR(out[t * PN * PD + e], ref[0][t * PN * PD + e], tol);
    pa_run step = {.n_seqs = 3, .B = 1, .S = 21, .which = {0, 1, 2}, .from = {30, 0, 13},
                   .n = {7, 5, 7}, .row = {0, 0, 0}, .off = {0, 9, 14}};
    CHECK_OK(pa_paged(c, &d, &step, out));
    for (int i = 0; i < 3; i++)
        for (int t = 0; t < step.n[i]; t++)
            for (int e = 0; e < PN * PD; e++)
                CHECK_NEAR(out[(step.off[i] + t) * PN * PD + e],
                           ref[step.which[i]][(step.from[i] + t) * PN * PD + e], tol);
    for (int t = 7; t < 9; t++)
        for (int e = 0; e < PN * PD; e++) CHECK(out[t * PN * PD + e] == 0.0f);
    /* the same tokens of sequence 2 alone, then in a [B, S] layout: the same bits */
    pa_run one = {.n_seqs = 1, .B = 1, .S = 7, .which = {2}, .from = {13}, .n = {7}, .row = {0},
                  .off = {0}};
    CHECK_OK(pa_paged(c, &d, &one, alone));
    CHECK(memcmp(alone, out + 14 * PN * PD, sizeof(float) * 7 * PN * PD) == 0);
    pa_run rows = {.n_seqs = 2, .B = 2, .S = 7, .which = {0, 2}, .from = {30, 13}, .n = {7, 7},
                   .row = {1, 0}, .off = {0, 0}};
    CHECK_OK(pa_paged(c, &d, &rows, alone));
    CHECK(memcmp(alone, out + 14 * PN * PD, sizeof(float) * 7 * PN * PD) == 0);
    CHECK(memcmp(alone + 7 * PN * PD, out, sizeof(float) * 7 * PN * PD) == 0);
    /* sequence 0's last token alone, in the form of its prompt's run (the row forms the
     * engine gives): the same bits as in the batched run */
    pa_run last = {.n_seqs = 1, .B = 1, .S = 1, .which = {0}, .from = {36}, .n = {1}, .row = {0},
                  .off = {0}};
    static const uint8_t many = BACKEND_ROW_MANY;
    kh_row_forms = &many, kh_n_row_forms = 1;
    og_status *lst = pa_paged(c, &d, &last, alone);
    kh_row_forms = NULL, kh_n_row_forms = 0;
    CHECK_OK(lst);
    CHECK(memcmp(alone, out + 6 * PN * PD, sizeof(float) * PN * PD) == 0);
    for (int s = 0; s < PSEQ; s++) free(ref[s]);
    free(out);
    free(alone);
    pa_free(&d);
}

TEST(paged_gqa_matches_contiguous_f32) {
    pa_case c = {OG_FLOAT32, -1, 0, false};
    pa_check_case(&c);
}

TEST(paged_gqa_matches_contiguous_f16_window_softcap_sink) {
    pa_case c = {OG_FLOAT16, 9, 3.0f, true};
    pa_check_case(&c);
    pa_case w = {OG_FLOAT32, 300, 0, true}; /* a window longer than the tile */
    pa_check_case(&w);
}

/* A prefill of three sequences of a batch, run once as is and once under vary(true) (put
 * back by vary(false)): the two give the same bits. */
static void pa_check_same_bits(og_dtype dt, void (*vary)(bool on)) {
    pa_case c = {dt, -1, 0, false};
    pa_data d;
    pa_setup(&d, c.dt);
    float *a = calloc(64 * PN * PD, sizeof(float)), *b = calloc(64 * PN * PD, sizeof(float));
    pa_run pre = {.n_seqs = 3, .B = 1, .S = 62, .which = {0, 1, 2}, .from = {0, 0, 0},
                  .n = {37, 5, 20}, .row = {0, 0, 0}, .off = {0, 37, 42}};
    CHECK_OK(pa_paged(&c, &d, &pre, a));
    vary(true);
    og_status *st = pa_paged(&c, &d, &pre, b);
    vary(false);
    CHECK_OK(st);
    CHECK(memcmp(a, b, sizeof(float) * 62 * PN * PD) == 0);
    free(a);
    free(b);
    pa_free(&d);
}

static threadpool *pa_saved_pool, *pa_three;
static void pa_three_threads(bool on) {
    if (on) {
        pa_saved_pool = kh_pool;
        CHECK_OK(threadpool_create(3, &pa_three));
        kh_pool = pa_three;
    } else {
        kh_pool = pa_saved_pool;
        threadpool_free(pa_three);
    }
}

TEST(paged_gqa_threads_do_not_change_bits) { pa_check_same_bits(OG_FLOAT32, pa_three_threads); }

static size_t pa_saved_part;
static void pa_one_byte_parts(bool on) {
    if (on) {
        pa_saved_part = gqa_tiles_part_bytes;
        gqa_tiles_part_bytes = 1;
    } else {
        gqa_tiles_part_bytes = pa_saved_part;
    }
}

/* The tiles' partial results are held in slices of whole 16-row blocks when they exceed
 * gqa_tiles_part_bytes (a long prompt piece over a long cache): a slice of every block,
 * across sequences of a batch, gives the bits of one pass (float16: the tiles' own path). */
TEST(paged_gqa_part_slices_do_not_change_bits) { pa_check_same_bits(OG_FLOAT16, pa_one_byte_parts); }

TEST(paged_gqa_refuses_bad_tables) {
    pa_case c = {OG_FLOAT32, -1, 0, false};
    pa_data d;
    pa_setup(&d, c.dt);
    float *out = calloc(64 * PN * PD, sizeof(float));
    pa_run twice = {.n_seqs = 2, .B = 1, .S = 8, .which = {0, 1}, .from = {0, 0}, .n = {5, 5},
                    .row = {0, 0}, .off = {0, 3}};
    CHECK_ERR(pa_paged(&c, &d, &twice, out), OG_ERR_INVALID_ARGUMENT, "belongs to two sequences");
    pa_run outside = {.n_seqs = 1, .B = 1, .S = 4, .which = {0}, .from = {0}, .n = {5}, .row = {0},
                      .off = {0}};
    CHECK_ERR(pa_paged(&c, &d, &outside, out), OG_ERR_INVALID_ARGUMENT, "does not fit");
    d.blocks[1][0] = PBLOCKS; /* one past the pool */
    pa_run bad = {.n_seqs = 1, .B = 1, .S = 5, .which = {1}, .from = {0}, .n = {5}, .row = {0},
                  .off = {0}};
    CHECK_ERR(pa_paged(&c, &d, &bad, out), OG_ERR_INVALID_ARGUMENT, "names block");
    free(out);
    pa_free(&d);
}
