/* Generation limits (src/genai/budget.c), search-option validation and typed attribute
 * look-ups: each refusal is an error naming the option, the estimate and the limit. */
#include "testing.h"

#include "genai/budget.h"
#include "genai/generator.h"
#include "graph/graph.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#define OPEN_GPT2(m)                                                                     \
    char dir_[1024];                                                                     \
    if (!test_ortgenai_package(dir_, sizeof dir_, "hf-internal-testing/tiny-random-gpt2-fp32")) \
        return;                                                                          \
    og_model *m;                                                                         \
    CHECK_OK(og_model_open(dir_, NULL, &m))

/* The memory estimate is what the generator then really allocates for the cache. */
TEST(budget_kv_estimate_matches_the_allocation) {
    OPEN_GPT2(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 20;
    p.num_beams = 3;
    p.num_return_sequences = 2;
    p.batch_size = 2;
    og_generator *g = NULL;
    og_status *st = og_generator_create(m, &p, &g);
    if (st) og_model_close(m);
    CHECK_OK(st);
    gen_budget b;
    gen_budget_estimate(m, &p, g->share_kv, &b);
    double want = 0; /* what generator_cache.c allocated */
    for (int i = 0; i < m->n_cache; i++)
        want += (double)g->bytes[i] * (g->buf[1][i] == g->buf[0][i] ? 1 : 2);
    CHECK_NEAR(b.kv_bytes, want, 0.5);
    /* gpt2: five layers of combined past [2, rows, 4 heads, len, 8] float32, two buffers */
    CHECK_NEAR(b.kv_bytes, 5.0 * 2 * (2 * 6 * 4 * 20 * 8 * 4), 0.5);
    CHECK_NEAR(b.rows, 6, 0);
    og_generator_destroy(g);
    og_model_close(m);
}

/* The same where past and present share one buffer (GroupQueryAttention, one beam) and
 * where the model carries states (the hybrid package). */
static void check_estimate(const char *rel, int max_length) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, rel)) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    og_generator_params p = og_generator_params_default(m);
    p.max_length = max_length;
    og_generator *g = NULL;
    og_status *st = og_generator_create(m, &p, &g);
    if (st) og_model_close(m);
    CHECK_OK(st);
    gen_budget b;
    gen_budget_estimate(m, &p, g->share_kv, &b);
    double want = 0;
    for (int i = 0; i < m->n_cache; i++)
        want += (double)g->bytes[i] * (g->buf[1][i] == g->buf[0][i] ? 1 : 2);
    og_generator_destroy(g);
    og_model_close(m);
    CHECK(want > 0);
    CHECK_NEAR(b.kv_bytes, want, 0.5);
}

TEST(budget_estimate_matches_shared_and_state_caches) {
    check_estimate("hf-internal-testing/tiny-qwen35-cuda", 32);
    check_estimate("qwen3-5", 16);
}

static void expect_refusal(og_model *m, og_generator_params p, const char *needle) {
    og_generator *g = NULL;
    og_status *st = og_generator_create(m, &p, &g);
    if (!st) {
        test_fail(__FILE__, __LINE__, "accepted, expected an error with '%s'", needle);
        og_generator_destroy(g);
        return;
    }
    if (og_status_code(st) != OG_ERR_INVALID_ARGUMENT || !strstr(og_status_message(st), needle))
        test_fail(__FILE__, __LINE__, "got '%s', expected '%s'", og_status_message(st), needle);
    og_status_free(st);
}

TEST(generator_refuses_unbounded_or_meaningless_options) {
    OPEN_GPT2(m);
    og_generator_params d = og_generator_params_default(m), p;
    /* 2000 beams over 512 positions: copying the beams' caches (reordering, and the
     * past->present copies beams force) costs far more than the tiny model's arithmetic
     * (1000 beams, estimated at 57 s of search, measured 65 CPU seconds in all, are
     * allowed: bench-beam-budget). */
    p = d, p.num_beams = 2000, p.max_length = 512;
    expect_refusal(m, p, "generator: num_beams 2000 x max_length 512 x vocab 1000 (batch_size 1): "
                         "the search would take an estimated");
    p = d, p.num_beams = 2000, p.max_length = 512;
    expect_refusal(m, p, "more than the 60 s a search may add");
    p = d, p.batch_size = 64, p.num_beams = 128;
    expect_refusal(m, p, "batch_size 64 x num_beams 128 is 8192 rows; at most 4096");
    p = d, p.batch_size = 65536, p.num_beams = 65536; /* the product overflows an int */
    expect_refusal(m, p, "is 4294967296 rows");
    p = d, p.num_return_sequences = 5;
    expect_refusal(m, p, "num_return_sequences 5 must be in [1, num_beams 1]: more than one "
                         "sequence per prompt needs beam search");
    p = d, p.temperature = NAN;
    expect_refusal(m, p, "temperature is nan, expected a finite number >= 0");
    p = d, p.temperature = -1, p.do_sample = 1;
    expect_refusal(m, p, "temperature is -1, expected a finite number >= 0");
    p = d, p.top_p = 2; /* refused without do_sample too */
    expect_refusal(m, p, "top_p is 2, expected a number in [0, 1]");
    p = d, p.top_k = -1;
    expect_refusal(m, p, "top_k is -1");
    p = d, p.repetition_penalty = 0;
    expect_refusal(m, p, "repetition_penalty is 0, expected a finite number > 0");
    p = d, p.length_penalty = INFINITY;
    expect_refusal(m, p, "length_penalty is inf");
    p = d, p.min_length = 20, p.max_length = 10;
    expect_refusal(m, p, "min_length 20 is greater than max_length 10");
    p = d, p.max_length = 100000;
    expect_refusal(m, p, "max_length 100000 exceeds the model's context_length 512");
    og_model_close(m);
}

/* What is allowed stays allowed: a beam search of ordinary width on this model, and a
 * long sampled generation (its cost is the model's, not the search's). */
TEST(generator_allows_ordinary_searches) {
    OPEN_GPT2(m);
    og_generator_params p = og_generator_params_default(m);
    p.num_beams = 16, p.num_return_sequences = 16, p.max_length = 512;
    og_generator *g = NULL;
    og_status *st = og_generator_create(m, &p, &g);
    og_generator_destroy(g);
    if (st) og_model_close(m);
    CHECK_OK(st);
    p = og_generator_params_default(m);
    p.do_sample = 1, p.top_p = 0.9f, p.temperature = 0.7f, p.max_length = 512, p.batch_size = 8;
    st = og_generator_create(m, &p, &g);
    og_generator_destroy(g);
    if (st) og_model_close(m);
    CHECK_OK(st);
    og_model_close(m);
}

/* The time estimate grows with beams and length, and its copies cost between the
 * cache's rate and memory's (no timing is asserted: bench-beam-budget measures it). */
TEST(budget_time_estimate_is_monotonic_and_bounded) {
    OPEN_GPT2(m);
    og_generator_params p = og_generator_params_default(m);
    double prev_k = 0;
    for (int k = 1; k <= 256; k *= 4) {
        double prev_l = 0;
        for (int l = 16; l <= 512; l *= 2) {
            p.num_beams = k, p.max_length = l;
            gen_budget b;
            gen_budget_estimate(m, &p, gen_shares_kv(m, &p), &b);
            double t = b.model_s + b.search_s;
            CHECK(isfinite(t) && t > prev_l);
            CHECK(b.attn_flops > 0 && b.attn_flops < b.model_flops);
            double search_floor = b.search_ops / GEN_RATE_SEARCH_OPS;
            CHECK(b.search_s >= search_floor + b.copy_bytes / GEN_RATE_COPY_BYTES - 1e-12);
            CHECK(b.search_s <= search_floor + b.copy_bytes / GEN_RATE_COPY_MEM_BYTES + 1e-12);
            prev_l = t;
            if (l == 512) {
                CHECK(t > prev_k);
                prev_k = t;
            }
        }
    }
    og_model_close(m);
}

TEST(budget_memory_estimate_is_compared_with_available_memory) {
    double avail = gen_available_memory();
    CHECK(avail > 0);
    /* an estimate far beyond any machine: 2^31 positions of a 4096-row cache */
    OPEN_GPT2(m);
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 4096, p.max_length = 2147483647;
    gen_budget b;
    gen_budget_estimate(m, &p, false, &b);
    CHECK(b.kv_bytes + b.state_bytes > 1e15);
    CHECK(isfinite(b.kv_bytes) && isfinite(b.search_ops) && isfinite(b.model_flops));
    og_model_close(m);
    char buf[32];
    CHECK(strcmp(gen_human_bytes(1536.0 * 1024 * 1024, buf, sizeof buf), "1.50 GiB") == 0);
}

/* A node whose attribute has the wrong type: the look-up gives the default, and the
 * type error is there to report (the executor does after every node). */
TEST(attribute_of_the_wrong_type_is_an_error) {
    graph_attr attrs[2] = {
        {.name = "axis", .type = ATTR_STRING, .s = {"one", 3}},
        {.name = "alpha", .type = ATTR_INT, .i = 2},
    };
    graph_node n = {.name = "g", .op_type = "Gather", .n_attrs = 2, .attrs = attrs};
    CHECK_EQ_INT(graph_attr_int(&n, "axis", 0), 0);
    CHECK_ERR(graph_attr_type_error(&n), OG_ERR_INVALID_MODEL,
              "attribute 'axis' is a string, expected an int");
    CHECK(graph_attr_type_error(&n) == NULL); /* cleared */
    /* an int where a float is expected is its value (exact), not an error */
    CHECK_NEAR(graph_attr_float(&n, "alpha", 0.5f), 2.0, 0);
    CHECK(graph_attr_type_error(&n) == NULL);
    const int64_t *v;
    CHECK_EQ_INT(graph_attr_ints(&n, "alpha", &v), -1);
    CHECK_ERR(graph_attr_type_error(&n), OG_ERR_INVALID_MODEL,
              "attribute 'alpha' is an int, expected ints");
    CHECK(graph_attr_string(&n, "missing", NULL) == NULL);
    CHECK(graph_attr_type_error(&n) == NULL); /* absent is not an error */
    /* per node: a node that runs a subgraph keeps its own while inner nodes take theirs */
    graph_attr inner_attrs[1] = {{.name = "to", .type = ATTR_FLOAT, .f = 1}};
    graph_node inner = {.name = "c", .op_type = "Cast", .n_attrs = 1, .attrs = inner_attrs};
    CHECK_EQ_INT(graph_attr_int(&n, "axis", 1), 1);
    CHECK_EQ_INT(graph_attr_int(&inner, "to", 1), 1);
    CHECK_ERR(graph_attr_type_error(&inner), OG_ERR_INVALID_MODEL, "'to' is a float, expected an int");
    CHECK_ERR(graph_attr_type_error(&n), OG_ERR_INVALID_MODEL, "'axis' is a string");
}
