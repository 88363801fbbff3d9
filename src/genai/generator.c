/* The decode loop: sequences, attention mask, positions and the KV cache of one
 * generation, and the public og_generator_* functions.
 *
 * Tokens of a sequence are either fed (their keys/values are in the cache) or pending
 * (appended or generated, not yet run). Computing logits runs all pending tokens at
 * once, so prefill, one-token decode, continuous decoding and re-feeding after a rewind
 * are the same operation.
 *
 * KV cache: allocated once per generator at max_length. When the graph and config allow
 * it (past_present_share_buffer: past and present are the same [B, H, max_length, D]
 * buffer, GroupQueryAttention writes the new entries in place) nothing is copied per
 * step. Graphs whose present output is a fresh, longer tensor (com.microsoft Attention
 * in gpt2) get two buffers per layer: past is read from one and present written into
 * the other, then they swap: no allocation per step, and the only copy is the one the
 * attention kernel itself makes from past to present. */
#include "genai/generator.h"

#include "base/half.h"
#include "base/tensor.h"
#include "genai/config.h"
#include "genai/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static size_t kv_block_bytes(const og_generator *g, int seq) {
    /* bytes of one layer's cache tensor (one of key/value, or the combined pair) */
    const og_model *m = g->m;
    size_t per = (size_t)g->rows * (size_t)m->kv_heads * (size_t)seq * (size_t)m->head_size *
                 dtype_size(m->kv_dtype);
    return m->kv == GEN_KV_COMBINED ? 2 * per : per;
}

/* Dims of a cache tensor holding `seq` positions. */
static int kv_dims(const og_generator *g, int seq, int64_t *dims) {
    const og_model *m = g->m;
    int r = 0;
    if (m->kv == GEN_KV_COMBINED) dims[r++] = 2;
    dims[r++] = g->rows;
    dims[r++] = m->kv_heads;
    dims[r++] = seq;
    dims[r++] = m->head_size;
    return r;
}

og_status *gen_generator_alloc(og_generator *g) {
    const og_model *m = g->m;
    size_t rows = (size_t)g->rows, L = (size_t)g->max_len;
    g->seq = calloc(rows * L, sizeof *g->seq);
    g->mask = calloc(rows * L, 1);
    g->done = calloc(rows, sizeof *g->done);
    g->logits = calloc(rows * (size_t)m->vocab_size, sizeof *g->logits);
    g->work = calloc(2 * (size_t)m->vocab_size + 16, sizeof *g->work);
    g->feed_ids = calloc(rows * L, sizeof(int64_t));
    g->feed_mask = calloc(rows * L, sizeof(int64_t));
    g->feed_pos = calloc(rows * L, sizeof(int64_t));
    g->step_logits = malloc(rows * (size_t)m->vocab_size * sizeof(float) + 64);
    if (!g->seq || !g->mask || !g->done || !g->logits || !g->work || !g->feed_ids ||
        !g->feed_mask || !g->feed_pos || !g->step_logits)
        return og_oom();
    if (m->kv != GEN_KV_NONE) {
        g->kv_bytes = kv_block_bytes(g, g->max_len);
        for (int b = 0; b < (g->share_buffer ? 1 : 2); b++) {
            g->kv[b] = calloc((size_t)m->n_past, sizeof(void *));
            if (!g->kv[b]) return og_oom();
            for (int i = 0; i < m->n_past; i++) {
                if (posix_memalign(&g->kv[b][i], 64, g->kv_bytes ? g->kv_bytes : 64) != 0)
                    return og_oom();
                memset(g->kv[b][i], 0, g->kv_bytes);
            }
        }
    }
    return NULL;
}

void gen_generator_free(og_generator *g) {
    if (!g) return;
    for (int b = 0; b < 2; b++) {
        if (!g->kv[b]) continue;
        for (int i = 0; i < g->m->n_past; i++) free(g->kv[b][i]);
        free(g->kv[b]);
    }
    for (int i = 0; i < g->n_outputs; i++) og_tensor_free(g->outputs[i]);
    free(g->outputs);
    free(g->output_names);
    free(g->seq);
    free(g->mask);
    free(g->done);
    free(g->logits);
    free(g->work);
    free(g->feed_ids);
    free(g->feed_mask);
    free(g->feed_pos);
    free(g->step_logits);
    free(g->final_seqs);
    free(g->final_lens);
    gen_beam_free(g->beam);
    free(g);
}

/* Writes int64 values into an ids/mask/positions buffer of the graph's dtype. */
static void narrow_ints(int64_t *vals, size_t n, og_dtype dt) {
    if (dt != OG_INT32) return;
    int32_t *out = (int32_t *)(void *)vals; /* in place: int32 slots never overtake int64 */
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)vals[i];
}

static og_status *wrap(og_dtype dt, const int64_t *dims, int rank, void *data, og_tensor **out) {
    int64_t count = shape_count(dims, rank);
    return og_tensor_wrap(dt, dims, rank, data, dtype_nbytes(dt, count), out);
}

/* Copies row `r` of the last position of a [rows, n, vocab] logits tensor to float32. */
static void take_last_logits(og_generator *g, const og_tensor *lt) {
    int V = g->m->vocab_size;
    int64_t n = lt->dims[1];
    for (int r = 0; r < g->rows; r++) {
        size_t off = ((size_t)r * (size_t)n + (size_t)(n - 1)) * (size_t)V;
        float *dst = g->logits + (size_t)r * V;
        if (lt->dtype == OG_FLOAT32) {
            memcpy(dst, (const float *)lt->data + off, sizeof(float) * (size_t)V);
        } else {
            const uint16_t *src = (const uint16_t *)lt->data + off;
            for (int v = 0; v < V; v++)
                dst[v] = lt->dtype == OG_FLOAT16 ? f16_to_f32(src[v]) : bf16_to_f32(src[v]);
        }
    }
}

/* Runs the pending tokens seq[fed..len) of every row. */
static og_status *compute_logits(og_generator *g) {
    og_model *m = g->m;
    int n = g->len - g->fed;
    if (n <= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: no tokens to run (append tokens "
                         "first)");
    int rows = g->rows, total = g->len;
    /* inputs: ids [rows, n], mask [rows, total], positions [rows, n] */
    for (int r = 0; r < rows; r++) {
        const int32_t *s = g->seq + (size_t)r * g->max_len;
        const uint8_t *mk = g->mask + (size_t)r * g->max_len;
        int64_t pos = 0;
        for (int i = 0; i < total; i++) {
            g->feed_mask[(size_t)r * total + i] = mk[i];
            if (i >= g->fed) {
                g->feed_ids[(size_t)r * n + (i - g->fed)] = s[i];
                g->feed_pos[(size_t)r * n + (i - g->fed)] = mk[i] ? pos : 0;
            }
            pos += mk[i];
        }
    }
    og_status *st = NULL;
    enum { MAXIN = 512 };
    const char *in_names[MAXIN];
    og_tensor *ins[MAXIN];
    const char *out_names[MAXIN];
    og_tensor *outs[MAXIN];
    int ni = 0, no = 0;
    memset(ins, 0, sizeof ins);
    memset(outs, 0, sizeof outs);
    if (2 * m->n_past + 4 > MAXIN)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: %d cache tensors are more than supported",
                         m->n_past);
    int64_t d2[2] = {rows, n}, dm[2] = {rows, total};
    if (m->input_ids.name) {
        narrow_ints(g->feed_ids, (size_t)rows * n, m->input_ids.dtype);
        if ((st = wrap(m->input_ids.dtype, d2, 2, g->feed_ids, &ins[ni]))) goto done;
        in_names[ni++] = m->input_ids.name;
    }
    if (m->attention_mask.name) {
        narrow_ints(g->feed_mask, (size_t)rows * total, m->attention_mask.dtype);
        if ((st = wrap(m->attention_mask.dtype, dm, 2, g->feed_mask, &ins[ni]))) goto done;
        in_names[ni++] = m->attention_mask.name;
    }
    if (m->position_ids.name) {
        narrow_ints(g->feed_pos, (size_t)rows * n, m->position_ids.dtype);
        if ((st = wrap(m->position_ids.dtype, d2, 2, g->feed_pos, &ins[ni]))) goto done;
        in_names[ni++] = m->position_ids.name;
    }
    int64_t kd[5];
    for (int i = 0; i < m->n_past; i++) {
        int rank = kv_dims(g, g->share_buffer ? g->max_len : g->fed, kd);
        if ((st = wrap(m->kv_dtype, kd, rank, g->kv[g->kv_cur][i], &ins[ni]))) goto done;
        in_names[ni++] = m->past_names[i];
        rank = kv_dims(g, g->share_buffer ? g->max_len : total, kd);
        void *dst = g->share_buffer ? g->kv[0][i] : g->kv[1 - g->kv_cur][i];
        if ((st = wrap(m->kv_dtype, kd, rank, dst, &outs[no]))) goto done;
        out_names[no++] = m->present_names[i];
    }
    int logits_at = no;
    if (n == 1) { /* a decode step: the logits land in the generator's own buffer */
        int64_t ld[3] = {rows, 1, m->vocab_size};
        if ((st = wrap(m->logits.dtype, ld, 3, g->step_logits, &outs[no]))) goto done;
    }
    out_names[no++] = m->logits.name;
    if ((st = og_session_run(m->decoder, in_names, ins, (size_t)ni, out_names, outs, (size_t)no)))
        goto done;
    const og_tensor *lt = outs[logits_at];
    if (lt->rank != 3 || lt->dims[0] != rows || lt->dims[1] != n || lt->dims[2] != m->vocab_size) {
        char b[160];
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' has shape %s, expected [%d,%d,%d]",
                       m->dir, m->logits.name, shape_str(lt->dims, lt->rank, b, sizeof b), rows,
                       n, m->vocab_size);
        goto done;
    }
    take_last_logits(g, lt);
    /* keep the last run's outputs for og_generator_get_output */
    for (int i = 0; i < g->n_outputs; i++) og_tensor_free(g->outputs[i]);
    free(g->outputs);
    free(g->output_names);
    g->outputs = calloc((size_t)no, sizeof *g->outputs);
    g->output_names = calloc((size_t)no, sizeof *g->output_names);
    g->n_outputs = 0;
    if (!g->outputs || !g->output_names) {
        st = og_oom();
        goto done;
    }
    g->outputs[0] = outs[logits_at];
    g->output_names[0] = m->logits.name;
    outs[logits_at] = NULL;
    g->n_outputs = 1;
    g->fed = total;
    if (!g->share_buffer && m->kv != GEN_KV_NONE) g->kv_cur = 1 - g->kv_cur;
    g->has_logits = true;
done:
    for (int i = 0; i < ni; i++) og_tensor_free(ins[i]);
    for (int i = 0; i < no; i++) og_tensor_free(outs[i]);
    return st;
}

static bool is_eos(const og_model *m, int32_t t) {
    for (int i = 0; i < m->n_eos; i++)
        if (m->eos_ids[i] == t) return true;
    return false;
}

/* Applies min_length, repetition penalty and n-gram blocking to row r of the logits. */
static void process_row(og_generator *g, int r, float *row) {
    const og_model *m = g->m;
    const int32_t *s = g->seq + (size_t)r * g->max_len;
    if (g->len < g->p.min_length) gen_block_tokens(row, m->vocab_size, m->eos_ids, m->n_eos);
    gen_repetition_penalty(row, m->vocab_size, s, g->len, g->p.repetition_penalty);
    gen_block_repeated_ngrams(row, m->vocab_size, s, g->len, g->p.no_repeat_ngram_size);
}

/* Reorders the cache rows, sequences and masks after a beam step. */
static void reorder_rows(og_generator *g, const int32_t *parents) {
    const og_model *m = g->m;
    int rows = g->rows;
    size_t L = (size_t)g->max_len;
    int32_t *seq2 = malloc(sizeof(int32_t) * rows * L);
    uint8_t *mask2 = malloc((size_t)rows * L);
    if (seq2 && mask2) {
        for (int r = 0; r < rows; r++) {
            memcpy(seq2 + r * L, g->seq + (size_t)parents[r] * L, sizeof(int32_t) * L);
            memcpy(mask2 + r * L, g->mask + (size_t)parents[r] * L, L);
        }
        memcpy(g->seq, seq2, sizeof(int32_t) * rows * L);
        memcpy(g->mask, mask2, (size_t)rows * L);
    }
    free(seq2);
    free(mask2);
    if (m->kv == GEN_KV_NONE) return;
    /* Cache rows: [halves][rows][row bytes] with the current (fed) length. The other
     * buffer of the pair receives the gathered rows, then becomes current. */
    int seq = g->fed;
    size_t row_bytes = (size_t)m->kv_heads * seq * m->head_size * dtype_size(m->kv_dtype);
    int halves = m->kv == GEN_KV_COMBINED ? 2 : 1;
    for (int i = 0; i < m->n_past; i++) {
        const char *src = g->kv[g->kv_cur][i];
        char *dst = g->kv[1 - g->kv_cur][i];
        for (int h = 0; h < halves; h++)
            for (int r = 0; r < rows; r++)
                memcpy(dst + ((size_t)h * rows + r) * row_bytes,
                       src + ((size_t)h * rows + parents[r]) * row_bytes, row_bytes);
    }
    g->kv_cur = 1 - g->kv_cur;
}

static og_status *append_column(og_generator *g, const int32_t *tokens) {
    for (int r = 0; r < g->rows; r++) {
        g->seq[(size_t)r * g->max_len + g->len] = tokens[r];
        g->mask[(size_t)r * g->max_len + g->len] = 1;
    }
    g->len++;
    return NULL;
}

static og_status *finalize_beams(og_generator *g) {
    int R = g->p.num_return_sequences, B = g->p.batch_size;
    g->final_seqs = calloc((size_t)B * R * g->max_len, sizeof *g->final_seqs);
    g->final_lens = calloc((size_t)B * R, sizeof *g->final_lens);
    const int32_t **rows = calloc((size_t)g->rows, sizeof *rows);
    if (!g->final_seqs || !g->final_lens || !rows) {
        free(rows);
        return og_oom();
    }
    for (int r = 0; r < g->rows; r++) rows[r] = g->seq + (size_t)r * g->max_len;
    og_status *st = gen_beam_finalize(g->beam, rows, g->len, g->final_seqs, g->final_lens);
    free(rows);
    g->finalized = true;
    return st;
}

og_status *og_generator_generate_next_token(og_generator *g) {
    if (!g) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_generate_next_token: NULL");
    if (og_generator_is_done(g))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: generation is done (length %d of "
                         "max_length %d)", g->len, g->max_len);
    if (g->len == 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: append prompt tokens before "
                         "generating");
    if (!g->has_logits) OG_TRY(compute_logits(g));
    const og_model *m = g->m;
    int V = m->vocab_size;
    int32_t tokens[4096], parents[4096];
    if (g->rows > 4096) return og_errorf(OG_ERR_UNSUPPORTED, "generator: more than 4096 rows");
    if (g->beam) {
        for (int r = 0; r < g->rows; r++) {
            float *row = g->logits + (size_t)r * V;
            process_row(g, r, row);
            gen_log_softmax(row, V);
        }
        const int32_t *rowp[4096];
        for (int r = 0; r < g->rows; r++) rowp[r] = g->seq + (size_t)r * g->max_len;
        OG_TRY(gen_beam_step(g->beam, g->logits, rowp, g->len, parents, tokens));
        reorder_rows(g, parents);
    } else {
        for (int r = 0; r < g->rows; r++) {
            if (g->done[r]) {
                tokens[r] = m->pad_id;
                continue;
            }
            float *row = g->logits + (size_t)r * V;
            process_row(g, r, row);
            bool sample = g->p.do_sample && g->p.top_k != 1 && g->p.temperature != 0;
            tokens[r] = sample ? gen_sample(row, V, g->p.top_k, g->p.top_p, g->p.temperature,
                                            &g->rng, g->work)
                               : gen_argmax(row, V);
            if (is_eos(m, tokens[r])) g->done[r] = true;
        }
    }
    append_column(g, tokens);
    g->has_logits = false;
    if (g->beam && (g->len >= g->max_len || gen_beam_done(g->beam))) OG_TRY(finalize_beams(g));
    return NULL;
}

int og_generator_is_done(const og_generator *g) {
    if (!g) return 1;
    if (g->beam) return g->finalized;
    if (g->len >= g->max_len) return 1;
    if (g->len == 0) return 0;
    for (int r = 0; r < g->rows; r++)
        if (!g->done[r]) return 0;
    return 1;
}

og_status *og_generator_append_tokens(og_generator *g, const int32_t *ids, size_t n) {
    if (!g || (!ids && n)) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_append_tokens: NULL");
    if (n == 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: no tokens to append");
    const og_model *m = g->m;
    int B = g->p.batch_size, K = g->beam ? g->p.num_beams : 1;
    size_t per_row = n;
    if (B > 1) {
        if (g->len != 0)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: with batch_size %d tokens can "
                             "be appended only once (rewind to 0 first)", B);
        if (n % (size_t)B)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: %zu tokens do not split into "
                             "%d rows of equal length", n, B);
        per_row = n / (size_t)B;
    }
    if (g->beam && g->len != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: beam search takes one prompt; rewind to "
                         "0 to start again");
    if ((size_t)g->len + per_row > (size_t)g->max_len)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: %zu prompt tokens + %d already in "
                         "the sequence exceed max_length %d", per_row, g->len, g->max_len);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->vocab_size)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: token %d at position %zu is "
                             "outside the vocabulary [0, %d)", ids[i], i, m->vocab_size);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) {
            int r = b * K + k;
            for (size_t i = 0; i < per_row; i++) {
                int32_t t = ids[(size_t)b * per_row + i];
                g->seq[(size_t)r * g->max_len + g->len + i] = t;
                /* Left padding in a batch is masked out; a lone sequence is all real. */
                g->mask[(size_t)r * g->max_len + g->len + i] = (B > 1 && t == m->pad_id) ? 0 : 1;
            }
        }
    g->len += (int)per_row;
    g->has_logits = false;
    return compute_logits(g);
}

og_status *og_generator_rewind_to(og_generator *g, size_t new_length) {
    if (!g) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_rewind_to: NULL");
    if (new_length > (size_t)g->len)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: cannot rewind to %zu, the sequence "
                         "has %d tokens", new_length, g->len);
    if (new_length != 0 && (g->p.batch_size > 1 || g->beam))
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: with batch_size > 1 or beam search, "
                         "rewind only to 0");
    if ((int)new_length == g->len) return NULL;
    int keep = new_length ? (int)new_length - 1 : 0; /* the last token is fed again */
    if (g->fed > keep) {
        const og_model *m = g->m;
        if (!g->share_buffer && m->kv != GEN_KV_NONE && keep > 0) {
            /* compact every (half, row, head) block from stride fed to stride keep */
            size_t blk = (size_t)m->head_size * dtype_size(m->kv_dtype);
            int n_blocks = (m->kv == GEN_KV_COMBINED ? 2 : 1) * g->rows * m->kv_heads;
            for (int i = 0; i < m->n_past; i++) {
                char *p = g->kv[g->kv_cur][i];
                for (int b = 0; b < n_blocks; b++)
                    memmove(p + (size_t)b * keep * blk, p + (size_t)b * g->fed * blk,
                            (size_t)keep * blk);
            }
        }
        g->fed = keep;
    }
    g->len = (int)new_length;
    for (int r = 0; r < g->rows; r++) g->done[r] = false;
    g->has_logits = false;
    if (g->beam) {
        gen_beam *nb;
        OG_TRY(gen_beam_create(&g->beam_opts, &nb));
        gen_beam_free(g->beam);
        g->beam = nb;
        g->finalized = false;
        free(g->final_seqs);
        free(g->final_lens);
        g->final_seqs = NULL;
        g->final_lens = NULL;
    }
    return NULL;
}

og_status *og_generator_get_sequence(const og_generator *g, size_t index, const int32_t **ids,
                                     size_t *len) {
    if (!g || !ids || !len) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_sequence: NULL");
    if (g->beam && g->finalized) {
        size_t n = (size_t)g->p.batch_size * g->p.num_return_sequences;
        if (index >= n)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sequence %zu of %zu", index, n);
        *ids = g->final_seqs + index * g->max_len;
        *len = (size_t)g->final_lens[index];
        return NULL;
    }
    size_t rows = g->beam ? (size_t)g->rows : (size_t)g->p.batch_size;
    if (index >= rows)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sequence %zu of %zu", index, rows);
    *ids = g->seq + index * g->max_len;
    *len = (size_t)g->len;
    return NULL;
}

og_status *og_generator_get_logits(og_generator *g, og_tensor **out) {
    if (!g || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_logits: NULL");
    if (!g->has_logits) OG_TRY(compute_logits(g));
    int64_t dims[2] = {g->rows, g->m->vocab_size};
    og_tensor *t;
    OG_TRY(og_tensor_create(OG_FLOAT32, dims, 2, &t));
    memcpy(og_tensor_data(t), g->logits, og_tensor_size_bytes(t));
    *out = t;
    return NULL;
}

og_status *og_generator_get_output(og_generator *g, const char *name, og_tensor **out) {
    if (!g || !name || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_output: NULL");
    for (int i = 0; i < g->n_outputs; i++) {
        if (strcmp(g->output_names[i], name) != 0) continue;
        const og_tensor *src = g->outputs[i];
        og_tensor *t;
        OG_TRY(og_tensor_create(src->dtype, src->dims, src->rank, &t));
        memcpy(og_tensor_data(t), src->data, src->nbytes);
        *out = t;
        return NULL;
    }
    /* present key/value outputs live in the cache: the current one holds the last run's */
    const og_model *m = g->m;
    for (int i = 0; m->kv != GEN_KV_NONE && i < m->n_past; i++) {
        if (strcmp(m->present_names[i], name) != 0) continue;
        int64_t dims[5];
        int rank = kv_dims(g, g->share_buffer ? g->max_len : g->fed, dims);
        og_tensor *t;
        OG_TRY(og_tensor_create(m->kv_dtype, dims, rank, &t));
        memcpy(og_tensor_data(t), g->kv[g->share_buffer ? 0 : g->kv_cur][i], og_tensor_size_bytes(t));
        *out = t;
        return NULL;
    }
    return og_errorf(OG_ERR_NOT_FOUND, "generator: the last run has no output named '%s' "
                     "(the logits are '%s')", name, m->logits.name);
}
