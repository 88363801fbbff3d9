/* onnx-genai parity DIR [--ids 1,2,3] [--max-length N] [--json] ...
 *
 * Runs one package on the native backend and on onnxruntime side by side, with the same
 * prompt ids and search options, one step at a time, and compares after every model
 * run: the logits of the next token (max |difference|, and whether they are within
 * tolerance), every output of that run (the full logits and each present / state, over
 * the positions the cache holds) to say where a difference is largest, and the token
 * each backend picks. Stops at the first token that differs. Exit status 0: no
 * divergence (identical tokens, logits within tolerance); 1: a divergence or an error. */
#include "backends/kv_format.h"
#include "genai/model.h"
#include "runtime/og_session.h"
#include "cli/cli.h"

#include "base/json_str.h"
#include "base/tensor.h"
#include "onnx_genai.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char parity_usage[] =
    "usage: onnx-genai parity [-m] DIR [options]\n"
    "  Runs the package on the native backend and on onnxruntime with the same ids and\n"
    "  search options; reports per step the max logit difference and the output where\n"
    "  the backends differ most, and the first token they disagree on. Exit status 0\n"
    "  when they agree (same tokens, logits within tolerance), 1 otherwise.\n"
    "  --ids LIST          prompt token ids, comma-separated (default: the package's BOS,\n"
    "                      else 1, 2, 3, 4)\n"
    "  --max-length N      total tokens, prompt included (default: prompt + 16)\n"
    "  --min-length N      no EOS before N tokens, prompt included (default: the\n"
    "                      package's): --min-length N --max-length N compares N tokens\n"
    "                      even where a model picks EOS early\n"
    "  --do-sample, --top-k N, --top-p F, --temperature F, --seed N, --num-beams N\n"
    "                      search options (default: the package's, greedy)\n"
    "  --rtol F, --atol F  logit tolerance: max |a - b| <= atol + rtol * max |b| (default:\n"
    "                      1e-4 and 1e-5 for float32 logits; 4e-3 and 2e-3 for float16 or\n"
    "                      bfloat16; rtol 3/127 where activations are quantized to int8,\n"
    "                      MatMulNBits accuracy_level 4, or the KV cache by the attention\n"
    "                      node's own scales, GroupQueryAttention k_quant_type)\n"
    "  --threads N         compute threads of each backend (default: all cores)\n"
    "  --ort-lib PATH, --ep cpu|cuda, --ort-opt-level LEVEL\n"
    "                      the onnxruntime side (see 'onnx-genai generate --help')\n"
    "  --through-ties      greedy: where the two pick different tokens at a step whose\n"
    "                      logits are within tolerance (a near-tie: onnxruntime's margin\n"
    "                      between the two picks is then at most twice the step's max\n"
    "                      |Δlogit|), report it as a tie, give the native side\n"
    "                      onnxruntime's token and go on; exit 0 when every step is\n"
    "                      within tolerance and every disagreement such a tie\n"
    "  --json              one JSON object instead of the table\n";

typedef struct parity_opts {
    const char *model;
    int32_t *ids;
    size_t n_ids;
    int max_length, min_length, threads, top_k, num_beams;
    bool json, through_ties, do_sample, set_min, set_topk, set_topp, set_temp, set_seed, set_beams;
    float top_p, temperature;
    long seed;
    double rtol, atol;
    bool set_rtol, set_atol;
    cli_backend be;
} parity_opts;

static bool parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, parity_opts *o) {
    cli_backend_init(&o->be);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--backend"))
            return cli_fail("parity: --backend does not apply: parity runs both backends");
        if (!strcmp(a, "--kv-dtype"))
            return cli_fail("parity: --kv-dtype does not apply: parity compares our caches with "
                            "onnxruntime's, which keeps the package's");
        int took = cli_backend_arg(argc, argv, &i, &o->be);
        if (took) {
            if (took < 0) return -took;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        bool valued = !strcmp(a, "--ids") || !strcmp(a, "--max-length") || !strcmp(a, "-m") ||
                      !strcmp(a, "--min-length") ||
                      !strcmp(a, "--model") || !strcmp(a, "--threads") || !strcmp(a, "--top-k") ||
                      !strcmp(a, "--top-p") || !strcmp(a, "--temperature") ||
                      !strcmp(a, "--seed") || !strcmp(a, "--num-beams") || !strcmp(a, "--rtol") ||
                      !strcmp(a, "--atol");
        if (valued && !v) return cli_fail("%s needs a value (see 'onnx-genai parity --help')", a);
        if (valued) i++;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(parity_usage, stdout);
            exit(0);
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            o->model = v;
        } else if (!strcmp(a, "--ids")) {
            free(o->ids);
            o->ids = NULL;
            int rc = cli_parse_ids(v, &o->ids, &o->n_ids);
            if (rc) return rc;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--through-ties")) {
            o->through_ties = true;
        } else if (!strcmp(a, "--do-sample")) {
            o->do_sample = true;
        } else if (!strcmp(a, "--rtol") || !strcmp(a, "--atol") || !strcmp(a, "--top-p") ||
                   !strcmp(a, "--temperature")) {
            if (!parse_double(v, 0, 1e30, &x))
                return cli_fail("%s: '%s' is not a non-negative number", a, v);
            if (!strcmp(a, "--rtol")) o->rtol = x, o->set_rtol = true;
            else if (!strcmp(a, "--atol")) o->atol = x, o->set_atol = true;
            else if (!strcmp(a, "--top-p")) o->top_p = (float)x, o->set_topp = true;
            else o->temperature = (float)x, o->set_temp = true;
        } else if (valued) { /* the integer options */
            if (!parse_double(v, 0, 1 << 30, &x) || x != floor(x))
                return cli_fail("%s: '%s' is not a non-negative integer", a, v);
            if (!strcmp(a, "--max-length")) o->max_length = (int)x;
            else if (!strcmp(a, "--min-length")) o->min_length = (int)x, o->set_min = true;
            else if (!strcmp(a, "--threads")) o->threads = (int)x;
            else if (!strcmp(a, "--top-k")) o->top_k = (int)x, o->set_topk = true;
            else if (!strcmp(a, "--seed")) o->seed = (long)x, o->set_seed = true;
            else o->num_beams = (int)x, o->set_beams = true;
        } else if (a[0] != '-' && !o->model) {
            o->model = a;
        } else {
            return cli_fail("parity: unknown argument '%s' (see 'onnx-genai parity --help')", a);
        }
    }
    if (!o->model) return cli_fail("parity: no model folder given (see 'onnx-genai parity --help')");
    return 0;
}

/* ---- comparing ------------------------------------------------------------------------- */

typedef struct diff {
    double max_abs;   /* max |a - b| */
    double scale;     /* max |b| */
    bool within;      /* max_abs <= atol + rtol * scale */
    int64_t at;       /* the element of max_abs */
} diff;

/* Compares a and b (same dtype and shape) over [0, len) of axis `axis` (-1: all). The
 * tolerance is relative to the largest |b|, not to each element: rounding in a model
 * (float16 activations, int8-quantized activations) scales with the magnitudes it
 * computes with, and a logit near zero is no more precise than the large ones. */
static og_status *compare(const og_tensor *a, const og_tensor *b, int axis, int64_t len,
                          double rtol, double atol, diff *d) {
    char sa[160], sb[160];
    if (a->dtype != b->dtype || a->rank != b->rank ||
        memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank))
        return og_errorf(OG_ERR_RUNTIME, "the backends' outputs differ in type or shape: %s %s "
                         "and %s %s", og_dtype_name(a->dtype), shape_str(a->dims, a->rank, sa, sizeof sa),
                         og_dtype_name(b->dtype), shape_str(b->dims, b->rank, sb, sizeof sb));
    d->max_abs = d->scale = 0;
    d->at = -1;
    int64_t n = shape_count(a->dims, a->rank);
    int64_t inner = 1, extent = axis >= 0 ? a->dims[axis] : 1;
    for (int k = axis + 1; axis >= 0 && k < a->rank; k++) inner *= a->dims[k];
    for (int64_t i = 0; i < n; i++) {
        if (axis >= 0 && (i / inner) % extent >= len) continue;
        double x = tensor_get_f64(a, i), y = tensor_get_f64(b, i);
        double e = fabs(x - y);
        if (isnan(x) != isnan(y) || (isinf(y) && x != y)) e = INFINITY;
        else if (isnan(x) || (isinf(y) && x == y)) e = 0;
        if (isfinite(y) && fabs(y) > d->scale) d->scale = fabs(y);
        if (e > d->max_abs || d->at < 0) {
            d->max_abs = e;
            d->at = i;
        }
    }
    d->within = d->max_abs <= atol + rtol * d->scale;
    return NULL;
}

typedef struct step_report {
    int step;                 /* 0: the prompt's run */
    size_t position;          /* the token position whose logits these are */
    diff logits;              /* of the next-token logits */
    int64_t vocab_at;         /* the token id of logits.max_abs */
    const char *worst;        /* the output with the largest max |Δ| this step */
    double worst_diff;
    int32_t tok_native, tok_ort;
    bool have_tokens;
    bool tie;                 /* --through-ties: the picks differ at a near-tie */
    double tie_margin;        /* onnxruntime's logit of its pick less that of native's */
} step_report;

typedef struct side {
    og_model *m;
    og_generator *g;
} side;

static og_status *open_side(const parity_opts *o, og_backend b, side *s) {
    og_model_options mo = og_model_options_default();
    mo.num_threads = o->threads;
    cli_backend_model(&o->be, &mo);
    mo.backend = b;
    return og_model_open(o->model, &mo, &s->m);
}

static og_generator_params params_for(const parity_opts *o, const og_model *m, size_t n_ids) {
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 1;
    p.max_length = o->max_length ? o->max_length : (int)n_ids + 16;
    p.do_sample = o->do_sample;
    if (o->set_min) p.min_length = o->min_length;
    if (o->set_topk) p.top_k = o->top_k;
    if (o->set_topp) p.top_p = o->top_p;
    if (o->set_temp) p.temperature = o->temperature;
    if (o->set_seed) p.random_seed = o->seed;
    else if (p.random_seed < 0) p.random_seed = 0; /* the two sides must draw alike */
    if (o->set_beams) p.num_beams = o->num_beams;
    if (p.num_beams < 1) p.num_beams = 1;
    p.num_return_sequences = 1;
    return p;
}

/* Compares every output of the last run: the full logits and each present/state (KV
 * over the positions the cache holds: `fed`). The largest difference names the output. */
/* The logits of the last run cover the positions that run computed; after a tie one side
 * may have run more of them (a rewind to a snapshot runs the tokens after it again): then
 * both are cut to their last position (one row: parity runs batch 1). */
static og_status *last_positions(og_tensor **x, og_tensor **y) {
    const int64_t *a = og_tensor_dims(*x), *b = og_tensor_dims(*y);
    if (og_tensor_rank(*x) != 3 || og_tensor_rank(*y) != 3 || a[1] == b[1] || a[0] != 1 ||
        b[0] != 1 || a[2] != b[2] || og_tensor_dtype(*x) != og_tensor_dtype(*y))
        return NULL;
    for (int k = 0; k < 2; k++) {
        og_tensor **t = k ? y : x, *last;
        const int64_t *d = og_tensor_dims(*t);
        int64_t one[3] = {1, 1, d[2]};
        size_t row = og_tensor_size_bytes(*t) / (size_t)d[1];
        OG_TRY(og_tensor_create(og_tensor_dtype(*t), one, 3, &last));
        memcpy(og_tensor_data(last), (char *)og_tensor_data(*t) + row * (size_t)(d[1] - 1), row);
        og_tensor_free(*t);
        *t = last;
    }
    return NULL;
}

static og_status *compare_outputs(const side *a, const side *b, size_t fed, double rtol,
                                  double atol, step_report *r) {
    const og_model *m = a->m;
    r->worst = NULL;
    r->worst_diff = -1;
    for (int i = -1; i < m->n_cache; i++) {
        const char *name = i < 0 ? m->logits.name : m->cache[i].present;
        og_tensor *x = NULL, *y = NULL;
        og_status *st = og_generator_get_output(a->g, name, &x);
        if (!st) st = og_generator_get_output(b->g, name, &y);
        diff d = {0};
        int axis = -1;
        if (!st && i >= 0 && m->cache[i].kind == GEN_CACHE_KV) axis = x->rank - 2;
        if (!st && i < 0) st = last_positions(&x, &y);
        if (!st) st = compare(x, y, axis, (int64_t)fed, rtol, atol, &d);
        og_tensor_free(x);
        og_tensor_free(y);
        if (st) return og_status_wrap(st, "output '%s'", name);
        if (d.max_abs > r->worst_diff) {
            r->worst_diff = d.max_abs;
            r->worst = name;
        }
    }
    return NULL;
}

/* Compares the next-token logits; *ort_logits keeps onnxruntime's (the caller frees). */
static og_status *compare_logits(side *a, side *b, double rtol, double atol, step_report *r,
                                 og_tensor **ort_logits) {
    og_tensor *x = NULL, *y = NULL;
    og_status *st = og_generator_get_logits(a->g, &x);
    if (!st) st = og_generator_get_logits(b->g, &y);
    if (!st) st = compare(x, y, -1, 0, rtol, atol, &r->logits);
    if (!st) r->vocab_at = r->logits.at % og_tensor_dims(x)[1];
    og_tensor_free(x);
    if (st) og_tensor_free(y);
    else *ort_logits = y;
    return st;
}

/* onnxruntime's logit of its own pick less that of native's pick (row 0). */
static double ort_margin(const og_tensor *logits, int32_t ort_pick, int32_t native_pick) {
    const float *v = og_tensor_data((og_tensor *)logits);
    if (og_tensor_dtype(logits) != OG_FLOAT32) return -1;
    return (double)v[ort_pick] - (double)v[native_pick];
}

/* Activations quantized to int8 (com.microsoft MatMulNBits, accuracy_level 4): one
 * rounding flipped by an ulp upstream moves a product by a step of amax / 127, so two
 * correct implementations agree only to a few such steps. */
static bool int8_activations(const og_model *m) {
    for (int s = 0; s < m->n_stages; s++) {
        const graph *g = runtime_session_graph(m->stages[s].s);
        for (int i = 0; i < g->n_nodes; i++)
            if (!strcmp(g->nodes[i].op_type, "MatMulNBits") &&
                !strcmp(g->nodes[i].domain, "com.microsoft") &&
                graph_attr_int(&g->nodes[i], "accuracy_level", 0) == 4)
                return true;
    }
    return false;
}

/* A KV cache the attention quantizes with its own scales (GroupQueryAttention's
 * k_quant_type, the builder's kv_cache_quant_scheme): a key or value an ulp away from
 * onnxruntime's (a MatMul's summation order) can round to the neighbouring code, a step
 * of the scale, and every later step reads it; the logits then agree to a few int8
 * steps, as with int8 activations. */
static bool quantized_kv(const og_model *m) {
    for (int s = 0; s < m->n_stages; s++) {
        const graph *g = runtime_session_graph(m->stages[s].s);
        for (int i = 0; i < g->n_nodes; i++)
            if (kv_node_scaled(&g->nodes[i])) return true;
    }
    return false;
}

static int32_t last_token(const side *s, size_t *len) {
    const int32_t *ids;
    og_status *st = og_generator_get_sequence(s->g, 0, &ids, len);
    if (st || *len == 0) {
        og_status_free(st);
        *len = 0;
        return -1;
    }
    return ids[*len - 1];
}

/* ---- the report ------------------------------------------------------------------------ */

static void print_json(const parity_opts *o, const side *nat, const int32_t *ids, size_t n_ids,
                       const og_generator_params *p, double rtol, double atol,
                       const step_report *steps, int n_steps, int tok_div, int logit_div) {
    printf("{\"model\": ");
    json_str_fwrite(stdout, o->model, strlen(o->model));
    printf(", \"model_type\": \"%s\", \"backends\": [\"native\", \"onnxruntime\"], "
           "\"prompt\": [", og_model_type(nat->m));
    for (size_t i = 0; i < n_ids; i++) printf("%s%d", i ? ", " : "", ids[i]);
    printf("], \"max_length\": %d, \"do_sample\": %s, \"num_beams\": %d, \"rtol\": %g, "
           "\"atol\": %g, \"steps\": [", p->max_length, p->do_sample ? "true" : "false",
           p->num_beams, rtol, atol);
    double worst = 0;
    for (int k = 0; k < n_steps; k++) {
        const step_report *r = &steps[k];
        if (r->logits.max_abs > worst) worst = r->logits.max_abs;
        printf("%s{\"step\": %d, \"position\": %zu, \"logit_scale\": %.6g, "
               "\"max_logit_diff\": %.6g, "
               "\"max_logit_diff_token\": %lld, \"logits_within_tolerance\": %s, "
               "\"worst_output\": \"%s\", \"worst_output_diff\": %.6g", k ? ", " : "", r->step,
               r->position, r->logits.scale, r->logits.max_abs, (long long)r->vocab_at,
               r->logits.within ? "true" : "false", r->worst ? r->worst : "",
               r->worst_diff < 0 ? 0.0 : r->worst_diff);
        if (r->have_tokens)
            printf(", \"token\": {\"native\": %d, \"onnxruntime\": %d}", r->tok_native, r->tok_ort);
        if (r->tie) printf(", \"tie\": {\"onnxruntime_margin\": %.6g}", r->tie_margin);
        printf("}");
    }
    printf("], \"max_logit_diff\": %.6g, \"first_token_divergence\": ", worst);
    if (tok_div >= 0)
        printf("{\"step\": %d, \"position\": %zu, \"native\": %d, \"onnxruntime\": %d}",
               steps[tok_div].step, steps[tok_div].position, steps[tok_div].tok_native,
               steps[tok_div].tok_ort);
    else printf("null");
    printf(", \"first_logit_divergence\": ");
    if (logit_div >= 0)
        printf("{\"step\": %d, \"position\": %zu, \"max_logit_diff\": %.6g, \"output\": \"%s\"}",
               steps[logit_div].step, steps[logit_div].position, steps[logit_div].logits.max_abs,
               steps[logit_div].worst ? steps[logit_div].worst : "");
    else printf("null");
    int ties = 0;
    for (int k = 0; k < n_steps; k++) ties += steps[k].tie;
    printf(", \"ties\": %d, \"diverged\": %s}\n", ties,
           tok_div >= 0 || logit_div >= 0 ? "true" : "false");
}

static void print_table(const parity_opts *o, const side *nat, size_t n_ids,
                        const og_generator_params *p, double rtol, double atol,
                        const step_report *steps, int n_steps, int tok_div, int logit_div) {
    printf("parity: %s (%s), native vs onnxruntime; prompt %zu tokens, max_length %d, %s\n",
           o->model, og_model_type(nat->m), n_ids, p->max_length,
           p->do_sample ? "sampling (same seed)" : p->num_beams > 1 ? "beam search" : "greedy");
    printf("| %4s | %8s | %13s | %12s | %-28s | %-22s |\n", "step", "position",
           "max |Δlogit|", "at token id", "largest difference (output)", "token native / ort");
    printf("|-----:|---------:|--------------:|-------------:|------------------------------|"
           "------------------------|\n");
    double worst = 0;
    for (int k = 0; k < n_steps; k++) {
        const step_report *r = &steps[k];
        if (r->logits.max_abs > worst) worst = r->logits.max_abs;
        char where[64], tok[32] = "-";
        snprintf(where, sizeof where, "%.3g (%s)", r->worst_diff < 0 ? 0.0 : r->worst_diff,
                 r->worst ? r->worst : "-");
        if (r->have_tokens)
            snprintf(tok, sizeof tok, "%d / %d%s", r->tok_native, r->tok_ort,
                     r->tie ? " tie" : r->tok_native != r->tok_ort ? " ≠" : "");
        printf("| %4d | %8zu | %12.3g%s | %12lld | %-28s | %-22s |\n", r->step, r->position,
               r->logits.max_abs, r->logits.within ? " " : "!", (long long)r->vocab_at, where, tok);
    }
    if (tok_div >= 0)
        printf("diverged: step %d (position %zu): native picks %d, onnxruntime %d\n",
               steps[tok_div].step, steps[tok_div].position, steps[tok_div].tok_native,
               steps[tok_div].tok_ort);
    if (logit_div >= 0)
        printf("logits out of tolerance (rtol %g, atol %g) first at step %d (position %zu): "
               "max |Δ| %.3g; the largest difference that step is in '%s'\n", rtol, atol,
               steps[logit_div].step, steps[logit_div].position, steps[logit_div].logits.max_abs,
               steps[logit_div].worst ? steps[logit_div].worst : "?");
    int ties = 0;
    for (int k = 0; k < n_steps; k++)
        if (steps[k].tie && ++ties)
            printf("tie: step %d (position %zu): native picks %d, onnxruntime %d, %.3g above it "
                   "in its own logits (max |Δ| %.3g that step); native goes on with %d\n",
                   steps[k].step, steps[k].position, steps[k].tok_native, steps[k].tok_ort,
                   steps[k].tie_margin, steps[k].logits.max_abs, steps[k].tok_ort);
    if (tok_div < 0 && logit_div < 0)
        printf("no divergence: %d steps, %s; logits within rtol %g, atol %g (max |Δ| %.3g)\n",
               n_steps, ties ? "the same tokens but at the ties above" : "the same tokens",
               rtol, atol, worst);
}

int cli_parity(int argc, char **argv) {
    parity_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    side nat = {0}, ort = {0};
    step_report *steps = NULL;
    og_status *st = NULL;
    int n_steps = 0, tok_div = -1, logit_div = -1;
    int32_t fallback[4] = {1, 2, 3, 4};
    if (rc) goto done;
    if ((st = open_side(&o, OG_BACKEND_NATIVE, &nat))) goto done;
    if ((st = open_side(&o, OG_BACKEND_ORT, &ort))) goto done;
    const int32_t *ids = o.ids;
    size_t n_ids = o.n_ids;
    int32_t bos = og_model_token_id(nat.m, "bos_token_id");
    if (!ids && bos >= 0) ids = &bos, n_ids = 1;
    if (!ids) ids = fallback, n_ids = 4;
    og_generator_params p = params_for(&o, nat.m, n_ids);
    if ((int)n_ids >= p.max_length) {
        rc = cli_fail("parity: --max-length %d leaves no room after a %zu-token prompt",
                      p.max_length, n_ids);
        goto done;
    }
    const og_dtype ldt = nat.m->logits.dtype;
    bool half = ldt == OG_FLOAT16 || ldt == OG_BFLOAT16;
    /* the tolerances the op tests hold each kernel to against onnxruntime, taken
     * relative to the largest logit (see compare) */
    double rtol = o.set_rtol ? o.rtol
                  : int8_activations(nat.m) || quantized_kv(nat.m) ? 3.0 / 127
                  : half ? 4e-3 : 1e-4;
    double atol = o.set_atol ? o.atol : half ? 2e-3 : 1e-5;
    if ((st = og_generator_create(nat.m, &p, &nat.g))) goto done;
    if ((st = og_generator_create(ort.m, &p, &ort.g))) goto done;
    if ((st = og_generator_append_tokens(nat.g, ids, n_ids))) goto done;
    if ((st = og_generator_append_tokens(ort.g, ids, n_ids))) goto done;
    steps = calloc((size_t)p.max_length + 1, sizeof *steps);
    if (!steps) {
        st = og_oom();
        goto done;
    }
    size_t len = n_ids;
    while (!og_generator_is_done(nat.g) && !og_generator_is_done(ort.g)) {
        step_report *r = &steps[n_steps];
        r->step = n_steps;
        r->position = len;
        og_tensor *ort_logits = NULL;
        if ((st = compare_logits(&nat, &ort, rtol, atol, r, &ort_logits))) goto done;
        if (p.num_beams == 1) st = compare_outputs(&nat, &ort, len, rtol, atol, r);
        n_steps++;
        if (!st && !r->logits.within && logit_div < 0) logit_div = r->step;
        if (!st) st = og_generator_generate_next_token(nat.g);
        if (!st) st = og_generator_generate_next_token(ort.g);
        if (st) {
            og_tensor_free(ort_logits);
            goto done;
        }
        size_t ln, lo;
        r->tok_native = last_token(&nat, &ln);
        r->tok_ort = last_token(&ort, &lo);
        r->have_tokens = ln > len || lo > len;
        bool tie_ok = o.through_ties && ln == lo && r->have_tokens && r->logits.within &&
                      !p.do_sample && p.num_beams == 1 && r->tok_native != r->tok_ort;
        if (tie_ok) {
            r->tie = true;
            r->tie_margin = ort_margin(ort_logits, r->tok_ort, r->tok_native);
            if (!(st = og_generator_rewind_to(nat.g, len)))
                st = og_generator_append_tokens(nat.g, &r->tok_ort, 1);
        }
        og_tensor_free(ort_logits);
        if (st) goto done;
        if (!tie_ok && (ln != lo || (r->have_tokens && r->tok_native != r->tok_ort))) {
            if (ln <= len) r->tok_native = -1; /* stopped (EOS is not appended) */
            if (lo <= len) r->tok_ort = -1;
            tok_div = r->step;
            break;
        }
        len = ln;
    }
    if (tok_div < 0 && og_generator_is_done(nat.g) != og_generator_is_done(ort.g)) {
        st = og_errorf(OG_ERR_RUNTIME, "parity: one backend finished generating before the other "
                       "with the same tokens");
        goto done;
    }
    if (o.json)
        print_json(&o, &nat, ids, n_ids, &p, rtol, atol, steps, n_steps, tok_div, logit_div);
    else print_table(&o, &nat, n_ids, &p, rtol, atol, steps, n_steps, tok_div, logit_div);
    rc = tok_div >= 0 || logit_div >= 0;
done:
    if (st) {
        rc = cli_fail("parity: %s", og_status_message(st));
        og_status_free(st);
    }
    free(steps);
    free(o.ids);
    og_generator_destroy(nat.g);
    og_generator_destroy(ort.g);
    og_model_close(nat.m);
    og_model_close(ort.m);
    return rc;
}
