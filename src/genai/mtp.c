/* Multi-token prediction drafts (mtp.h). */
#include "genai/mtp.h"

#include "base/tensor.h"
#include "genai/generator.h"
#include "genai/step.h"

#include <stdlib.h>
#include <string.h>

/* Hidden rows kept per generator: a verification adds at most GEN_SPEC_MAX_DRAFT + 1
 * positions, and the head needs the rows from the end of what it holds on. */
enum { MTP_RING = 64 };

struct gen_mtp {
    /* the hidden rows this generator's runs returned: ring[i] holds position pos[i] */
    char *ring;
    int pos[MTP_RING];
    size_t row_bytes;
    int hidden;
    og_dtype dtype;
    /* rows fed to the model's GEN_SRC_HIDDEN input: [feed_n] rows from position feed_at */
    char *feed;
    int feed_at, feed_n;
    og_dtype feed_dtype;
    int feed_hidden;
    /* a generator drafting with the head: the head's generator; its position q holds the
     * token at base + q; positions below `trusted` were made from main-model rows */
    og_generator *head;
    int base, trusted;
};

og_status *gen_mtp_check(const og_model *m, const og_generator_params *p) {
    if (!m->mtp)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative mtp: the package %s "
                         "has no MTP head (genai_config.json model.mtp, as onnxruntime-genai's "
                         "builder writes it for a checkpoint with MTP layers)", m->dir);
    if (p->speculative_ngram_size || p->speculative_draft_model)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative mtp cannot be "
                         "combined with %s (choose one drafter)",
                         p->speculative_ngram_size ? "ngram_size" : "a draft model");
    if (p->num_beams > 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: speculative decoding with beam "
                         "search (num_beams %d) is not supported", p->num_beams);
    return NULL;
}

og_status *gen_mtp_new(const og_model *m, struct gen_mtp **out) {
    *out = NULL;
    struct gen_mtp *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    for (int i = 0; i < MTP_RING; i++) t->pos[i] = -1;
    if (m->hidden_out) {
        t->hidden = m->hidden_size;
        t->dtype = m->hidden_dtype;
        t->row_bytes = dtype_size(t->dtype) * (size_t)t->hidden;
        if (!t->row_bytes || !(t->ring = malloc(MTP_RING * t->row_bytes))) {
            free(t);
            return og_oom();
        }
    }
    *out = t;
    return NULL;
}

void gen_mtp_delete(struct gen_mtp *t) {
    if (!t) return;
    og_generator_destroy(t->head);
    free(t->ring);
    free(t->feed);
    free(t);
}

void gen_mtp_forget_head(struct gen_mtp *t) {
    if (!t) return;
    og_generator_destroy(t->head);
    t->head = NULL;
}

og_status *gen_mtp_init(og_generator *g) { return gen_mtp_new(g->m, &g->mtp); }

void gen_mtp_free(og_generator *g) {
    gen_mtp_delete(g->mtp);
    g->mtp = NULL;
}

void gen_mtp_keep_rows(struct gen_mtp *t, const og_tensor *h, int64_t row0, int n,
                       int first_pos) {
    if (!t || !t->ring || h->rank != 3 || h->dims[2] != t->hidden || h->dtype != t->dtype ||
        row0 < 0 || row0 + n > h->dims[0] * h->dims[1])
        return;
    for (int i = 0; i < n; i++) {
        int p = first_pos + i, s = p % MTP_RING;
        memcpy(t->ring + (size_t)s * t->row_bytes,
               (const char *)h->data + (size_t)(row0 + i) * t->row_bytes, t->row_bytes);
        t->pos[s] = p;
    }
}

void gen_mtp_keep(og_generator *g, const og_tensor *h, int first_pos) {
    if (h->rank == 3) gen_mtp_keep_rows(g->mtp, h, 0, (int)h->dims[1], first_pos);
}

/* The kept row of position p, NULL when it is gone. */
static const char *kept_row(const struct gen_mtp *t, int p) {
    if (!t->ring || p < 0 || t->pos[p % MTP_RING] != p) return NULL;
    return t->ring + (size_t)(p % MTP_RING) * t->row_bytes;
}

const og_tensor *gen_mtp_feed(og_generator *g, int first_pos, int n, og_tensor *slot) {
    struct gen_mtp *t = g->mtp;
    if (!t || !t->feed || first_pos < t->feed_at || first_pos + n > t->feed_at + t->feed_n)
        return NULL;
    size_t rb = dtype_size(t->feed_dtype) * (size_t)t->feed_hidden;
    int64_t d[3] = {1, n, t->feed_hidden};
    og_tensor *v;
    if (gen_step_view(t->feed_dtype, d, 3, t->feed + (size_t)(first_pos - t->feed_at) * rb, slot,
                      &v))
        return NULL; /* (a view of memory it is given cannot fail) */
    return v;
}

/* The head's generator, made on first use (its positions start at the pending token). */
static og_status *head_open(struct gen_mtp *t, og_model *hm, int max_len) {
    og_generator_params hp = og_generator_params_default(hm);
    hp.max_length = max_len;
    hp.min_length = 0;
    hp.all_logits = 0;
    hp.speculative_ngram_size = 0;
    hp.speculative_draft_model = NULL;
    og_generator *h;
    OG_TRY(og_status_wrap(og_generator_create(hm, &hp, &h), "the MTP head"));
    og_status *st = gen_mtp_init(h);
    if (!st && !(h->mtp->feed = malloc(MTP_RING * dtype_size(t->dtype) * (size_t)t->hidden)))
        st = og_oom();
    if (st) {
        gen_mtp_free(h);
        og_generator_destroy(h);
        return st;
    }
    h->mtp->feed_dtype = t->dtype;
    h->mtp->feed_hidden = t->hidden;
    t->head = h;
    return NULL;
}

/* Appends n tokens to the head, which runs them (with the token a rewind left to run
 * again), each with the row it pairs with: a main-model row below `trusted`, the head's
 * own row of the position before above it. *d: the argmax of the last position's logits
 * (the first index of the largest). */
static og_status *head_run(struct gen_mtp *t, const int32_t *tokens, int n, int32_t *d) {
    og_generator *h = t->head;
    struct gen_mtp *ht = h->mtp;
    int from = h->fed[0], to = h->len[0] + n;
    if (to - from > MTP_RING)
        return og_errorf(OG_ERR_RUNTIME, "mtp: %d head tokens at once", to - from);
    for (int q = from; q < to; q++) {
        const char *row = q < t->trusted ? kept_row(t, t->base + q - 1) : kept_row(ht, q - 1);
        if (!row) return og_errorf(OG_ERR_RUNTIME, "mtp: no hidden row for head position %d", q);
        memcpy(ht->feed + (size_t)(q - from) * t->row_bytes, row, t->row_bytes);
    }
    ht->feed_at = from;
    ht->feed_n = to - from;
    OG_TRY(og_generator_append_tokens(h, tokens, (size_t)n));
    if (!h->has_logits) OG_TRY(gen_compute_logits(h));
    h->has_logits = false;
    const float *lg = h->logits;
    int32_t best = 0;
    for (int v = 1; v < h->m->vocab_size; v++)
        if (lg[v] > lg[best]) best = v;
    *d = best;
    return NULL;
}

og_status *gen_mtp_draft_seq(struct gen_mtp *t, og_model *m, const int32_t *seq, int L,
                             int max_len, int k, int32_t *out, int *got) {
    *got = 0;
    if (!t->head) {
        OG_TRY(head_open(t, m->mtp, max_len));
        t->base = L - 1;
        t->trusted = 0;
    }
    og_generator *h = t->head;
    /* the prefix the head holds that is still the sequence, made from main-model rows */
    int c = 0, lim = L - 1 - t->base + 1;
    if (lim > t->trusted) lim = t->trusted;
    if (lim > h->len[0]) lim = h->len[0];
    if (t->base > L - 1) lim = 0;
    while (c < lim && h->seq[c] == seq[t->base + c]) c++;
    if (c == L - t->base) c--; /* (it holds the pending token: run it again for its logits) */
    /* the main-model rows the rest needs (a rewind re-feeds the head's last kept token) */
    int first = c > 0 ? c - 1 : 0;
    bool have = t->base <= L - 1;
    for (int q = first; have && q < L - t->base; q++) have = kept_row(t, t->base + q - 1) != NULL;
    if (!have) { /* start the head again at the pending token */
        if (!kept_row(t, L - 2)) return NULL;
        t->base = L - 1;
        c = 0;
    }
    if (c < h->len[0]) OG_TRY(og_generator_rewind_to(h, (size_t)c));
    t->trusted = L - t->base;
    int32_t d;
    OG_TRY(head_run(t, seq + t->base + c, L - t->base - c, &d));
    out[(*got)++] = d;
    /* further drafts chain the head's own hidden state (when the head returns it) */
    while (*got < k && m->mtp->hidden_out && h->len[0] < h->max_len) {
        int32_t prev = d;
        OG_TRY(head_run(t, &prev, 1, &d));
        out[(*got)++] = d;
    }
    return NULL;
}

og_status *gen_mtp_draft(og_generator *g, int k, int *got) {
    return gen_mtp_draft_seq(g->mtp, g->m, g->seq, g->len[0], g->max_len, k, g->spec_draft, got);
}
