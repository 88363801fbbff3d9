/* Row selection on whole packages: the logits of only the rows a caller needs equal those
 * rows of the whole output, bit for bit (the same kernels run the same rows; every kernel
 * on the pruned path is row invariant, which tests/unit/test_batch_invariance.c holds).
 *
 *   rows-check DIR ...
 *
 * For each package:
 *   - a generator computing every position's logits (all_logits = 1, onnxruntime-genai's
 *     output) and one computing the last position's only: a batch of two equal-length
 *     prompts, then greedy steps; after the prompt the pruned [2, 1, vocab] equals the
 *     last position of each row of the whole [2, P, vocab], and the tokens and every
 *     step's logits are the same;
 *   - the decoder session alone (packages of one stage): a prompt from the empty cache
 *     (window-sized KV caches: a zero past of their capacity) with rows given as a list
 *     (out of order, repeated) against the whole output; the state and present outputs,
 *     requested too, equal the whole run's.
 * Prints one line per package; exits 1 on any difference. */
#include "onnx_genai.h"

#include "base/status.h"
#include "genai/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P = 7, STEPS = 6 };

static int failures;

static void fail(const char *dir, const char *what) {
    printf("FAIL %s: %s\n", dir, what);
    failures++;
}

static og_status *generator(og_model *m, int batch, int all, og_generator **g) {
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = batch;
    p.max_length = P + STEPS + 1;
    p.min_length = p.max_length;
    p.do_sample = 0;
    p.num_beams = 1;
    p.num_return_sequences = 1;
    p.all_logits = all;
    return og_generator_create(m, &p, g);
}

static size_t esize(og_dtype dt) { return dt == OG_FLOAT32 ? 4 : 2; }

/* The generator pair on one package; returns the problem or NULL. */
static const char *check_generators(og_model *m, og_status **st) {
    og_generator *a = NULL, *b = NULL;
    og_tensor *fa = NULL, *fb = NULL, *la = NULL, *lb = NULL;
    const char *bad = NULL;
    int V = og_model_vocab_size(m);
    const int nb = 2;
    int32_t ids[2 * P];
    for (int i = 0; i < 2 * P; i++) ids[i] = (int32_t)((i * 131 + 17) % (V > 600 ? 600 : V - 1)) + 1;
    if ((*st = generator(m, nb, 1, &a)) || (*st = generator(m, nb, 0, &b))) goto done;
    if ((*st = og_generator_append_tokens(a, ids, (size_t)nb * P)) ||
        (*st = og_generator_append_tokens(b, ids, (size_t)nb * P)))
        goto done;
    const char *name = m->logits.name;
    if ((*st = og_generator_get_output(a, name, &fa)) || (*st = og_generator_get_output(b, name, &fb)))
        goto done;
    const int64_t *da = og_tensor_dims(fa), *db = og_tensor_dims(fb);
    int pa = P; /* (a batch of prompts runs whole, with snapshots too) */
    if (da[0] != nb || da[1] != pa || db[0] != nb || db[1] != 1) {
        bad = "the logits outputs do not have the shapes [B, P, V] and [B, 1, V]";
        goto done;
    }
    size_t row = esize(og_tensor_dtype(fa)) * (size_t)V;
    for (int r = 0; r < nb && !bad; r++)
        if (memcmp((char *)og_tensor_data(fa) + ((size_t)r * pa + pa - 1) * row,
                   (char *)og_tensor_data(fb) + (size_t)r * row, row))
            bad = "the prompt's last-position logits differ from the whole output's";
    for (int s = 0; s < STEPS && !bad; s++) {
        if ((*st = og_generator_get_logits(a, &la)) || (*st = og_generator_get_logits(b, &lb)))
            goto done;
        if (memcmp(og_tensor_data(la), og_tensor_data(lb), og_tensor_size_bytes(la)))
            bad = "a step's logits differ";
        og_tensor_free(la);
        og_tensor_free(lb);
        la = lb = NULL;
        if ((*st = og_generator_generate_next_token(a)) || (*st = og_generator_generate_next_token(b)))
            goto done;
        const int32_t *ta, *tb;
        size_t n_a, n_b;
        if ((*st = og_generator_get_next_tokens(a, &ta, &n_a)) ||
            (*st = og_generator_get_next_tokens(b, &tb, &n_b)))
            goto done;
        if (n_a != n_b || memcmp(ta, tb, n_a * sizeof *ta)) bad = "the chosen tokens differ";
    }
done:
    og_tensor_free(fa);
    og_tensor_free(fb);
    og_tensor_free(la);
    og_tensor_free(lb);
    og_generator_destroy(a);
    og_generator_destroy(b);
    return bad;
}

/* A zero tensor (or ids / mask / positions) for a decoder input of a prompt of n tokens
 * from the empty cache; NULL (and *skip) when a dim cannot be told. */
static og_status *make_input(const og_model *m, const og_value_info *in, int n, og_tensor **out,
                             const char **skip) {
    int64_t d[OG_MAX_RANK];
    *out = NULL;
    for (int i = 0; i < m->n_cache; i++) { /* past KV (empty) and states (zero) */
        const gen_cache *c = &m->cache[i];
        if (strcmp(c->past, in->name) != 0) continue;
        if (c->fixed) {
            memcpy(d, c->dims, sizeof d);
            d[0] = 1;
            return og_tensor_create(in->dtype, d, c->rank, out);
        }
        if (in->rank != 4) break;
        int64_t kv[4] = {1, c->heads, 0, c->head_size};
        return og_tensor_create(in->dtype, kv, 4, out);
    }
    for (int k = 0; k < in->rank; k++) {
        const char *sym = in->dim_names[k];
        d[k] = in->dims[k];
        if (d[k] >= 0) continue;
        if (!sym) d[k] = -1;
        else if (strstr(sym, "batch")) d[k] = 1;
        else if (strstr(sym, "past")) d[k] = 0;
        else if (strstr(sym, "seq") || strstr(sym, "total")) d[k] = n;
        if (d[k] < 0) {
            *skip = in->name;
            return NULL;
        }
    }
    OG_TRY(og_tensor_create(in->dtype, d, in->rank, out));
    size_t cnt = og_tensor_size_bytes(*out) / (in->dtype == OG_INT32 ? 4 : 8);
    bool ids = !strcmp(in->name, "input_ids"), mask = !strcmp(in->name, "attention_mask"),
         pos = !strcmp(in->name, "position_ids");
    if (!ids && !mask && !pos) return NULL;
    for (size_t i = 0; i < cnt; i++) {
        int64_t v = ids ? (int64_t)((i * 97 + 5) % 500) + 1 : mask ? 1 : (int64_t)(i % (size_t)n);
        if (in->dtype == OG_INT32) ((int32_t *)og_tensor_data(*out))[i] = (int32_t)v;
        else ((int64_t *)og_tensor_data(*out))[i] = v;
    }
    return NULL;
}

/* The decoder session with a list of rows. */
static const char *check_session(og_model *m, og_status **st, const char **skip) {
    og_session *s = m->decoder;
    size_t ni = og_session_input_count(s), no = og_session_output_count(s);
    og_tensor **ins = calloc(ni + 1, sizeof *ins), **full = calloc(no + 1, sizeof *full),
              **part = calloc(no + 1, sizeof *part);
    const char **in_names = calloc(ni + 1, sizeof *in_names), **out_names = calloc(no + 1, sizeof *out_names);
    const char *bad = NULL;
    int li = -1;
    if (!ins || !full || !part || !in_names || !out_names) {
        bad = "out of memory";
        goto done;
    }
    for (size_t i = 0; i < ni && !*skip; i++) {
        og_value_info info;
        if ((*st = og_session_input_info(s, i, &info)) || (*st = make_input(m, &info, P, &ins[i], skip)))
            goto done;
        in_names[i] = info.name;
    }
    if (*skip) goto done;
    for (size_t i = 0; i < no; i++) {
        og_value_info info;
        if ((*st = og_session_output_info(s, i, &info))) goto done;
        out_names[i] = info.name;
        if (!strcmp(info.name, m->logits.name)) li = (int)i;
    }
    if (li < 0) {
        bad = "the decoder has no logits output";
        goto done;
    }
    int64_t rows[4] = {P - 1, 0, 3, P - 1};
    og_output_rows sel = {m->logits.name, rows, 4};
    if ((*st = og_session_run(s, in_names, ins, ni, out_names, full, no)) ||
        (*st = og_session_run_rows(s, in_names, ins, ni, out_names, part, no, &sel)))
        goto done;
    size_t row = og_tensor_size_bytes(full[li]) / P;
    if (og_tensor_rank(part[li]) != 2 || og_tensor_dims(part[li])[0] != 4) {
        bad = "the selected logits are not [4, vocab]";
        goto done;
    }
    for (int k = 0; k < 4 && !bad; k++)
        if (memcmp((char *)og_tensor_data(part[li]) + (size_t)k * row,
                   (char *)og_tensor_data(full[li]) + (size_t)rows[k] * row, row))
            bad = "a selected row differs from the whole output's";
    for (size_t i = 0; i < no && !bad; i++)
        if ((int)i != li && (og_tensor_size_bytes(part[i]) != og_tensor_size_bytes(full[i]) ||
                             memcmp(og_tensor_data(part[i]), og_tensor_data(full[i]),
                                    og_tensor_size_bytes(full[i]))))
            bad = "a present/state output differs from the whole run's";
done:
    for (size_t i = 0; ins && i < ni; i++) og_tensor_free(ins[i]);
    for (size_t i = 0; full && i < no; i++) og_tensor_free(full[i]);
    for (size_t i = 0; part && i < no; i++) og_tensor_free(part[i]);
    free(ins);
    free(full);
    free(part);
    free(in_names);
    free(out_names);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: rows-check DIR ...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *dir = argv[i];
        og_model *m;
        og_status *st = og_model_open(dir, NULL, &m);
        if (st) {
            fail(dir, og_status_message(st));
            og_status_free(st);
            continue;
        }
        const char *bad = check_generators(m, &st), *skip = NULL;
        if (!bad && !st && m->n_stages == 1) bad = check_session(m, &st, &skip);
        if (st) fail(dir, og_status_message(st));
        else if (bad) fail(dir, bad);
        else
            printf("ok   %s (%s, %s logits)%s%s\n", dir, og_model_type(m),
                   og_dtype_name(m->logits.dtype), m->n_stages > 1 ? "; pipeline: generator only" :
                   skip ? "; session list skipped, input: " : "", skip ? skip : "");
        og_status_free(st);
        og_model_close(m);
    }
    return failures ? 1 : 0;
}
