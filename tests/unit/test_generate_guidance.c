/* Guidance in the generator (og_generator_params_set_guidance) on tiny-random-gpt2-fp32:
 * random weights, so its unguided output is noise, and every guided output must still be
 * a string of the language. Its tokenizer is GPT-2's (the first 1000 ids are the model's
 * vocabulary: bytes and early merges); the model's EOS is 98. */
#include "testing.h"

#include "base/status.h"
#include "genai/guidance.h"

#include <pthread.h>
#include <regex.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PKG "hf-internal-testing/tiny-random-gpt2-fp32"
#define CODE_RE "[0-9]{3}-[a-z]+"

static const int32_t prompt[] = {0, 0, 195, 731};
enum { N_PROMPT = 4, EOS = 98 };

#define OPEN(model)                                                                      \
    char dir_[1024];                                                                     \
    if (!test_ortgenai_package(dir_, sizeof dir_, PKG)) return;                         \
    og_model *model;                                                                     \
    CHECK_OK(og_model_open(dir_, NULL, &model))

static og_status *run_to_end(og_generator *g) {
    while (!og_generator_is_done(g)) OG_TRY(og_generator_generate_next_token(g));
    return NULL;
}

/* Row `row`'s tokens after the prompt, decoded (special tokens kept), into buf. */
static og_status *generated_text(og_model *m, og_generator *g, size_t row, char *buf,
                                 size_t size, size_t *n_tokens) {
    const int32_t *ids;
    size_t len;
    OG_TRY(og_generator_get_sequence(g, row, &ids, &len));
    og_tokenizer *tok;
    OG_TRY(og_tokenizer_create(m, &tok));
    char *text = NULL;
    og_status *st = og_tokenizer_decode(tok, ids + N_PROMPT, len - N_PROMPT, 0, &text);
    if (!st) snprintf(buf, size, "%s", text);
    free(text);
    og_tokenizer_free(tok);
    if (n_tokens) *n_tokens = len - N_PROMPT;
    return st;
}

/* Whether text is wholly a string of the extended regular expression re. */
static bool full_match(const char *re, const char *text) {
    char anchored[256];
    snprintf(anchored, sizeof anchored, "^(%s)$", re);
    regex_t r;
    if (regcomp(&r, anchored, REG_EXTENDED | REG_NOSUB)) return false;
    bool ok = regexec(&r, text, 0, NULL, 0) == 0;
    regfree(&r);
    if (!ok) fprintf(stderr, "    '%s' does not match %s\n", text, re);
    return ok;
}

static og_status *guided(og_model *m, og_generator_params *p, const char *type,
                         const char *data, og_generator **g) {
    OG_TRY(og_generator_params_set_guidance(p, type, data));
    return og_generator_create(m, p, g);
}

/* 16 new tokens of at least a byte each: past "ddd-" the output must be letters, so a
 * row cut by max_length still matches whole. */
TEST(guidance_regex_greedy) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 16;
    og_generator *g;
    /* unguided, the model's greedy output is not of the language (so the test means it) */
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    char text[512];
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, NULL));
    og_generator_destroy(g);
    regex_t r;
    CHECK(regcomp(&r, "^[0-9]{3}-[a-z]+$", REG_EXTENDED | REG_NOSUB) == 0);
    CHECK(regexec(&r, text, 0, NULL, 0) != 0);
    regfree(&r);

    CHECK_OK(guided(m, &p, "regex", CODE_RE, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, NULL));
    CHECK(full_match(CODE_RE, text));
    og_generator_destroy(g);
    og_model_close(m);
}

TEST(guidance_regex_sampled) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 16;
    p.do_sample = 1;
    p.top_k = 0;
    p.top_p = 0.95f;
    p.temperature = 1.5f;
    char first[512] = "";
    bool differ = false;
    for (int seed = 1; seed <= 8; seed++) {
        p.random_seed = seed;
        og_generator *g;
        CHECK_OK(guided(m, &p, "regex", CODE_RE, &g));
        CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
        CHECK_OK(run_to_end(g));
        char text[512];
        CHECK_OK(generated_text(m, g, 0, text, sizeof text, NULL));
        og_generator_destroy(g);
        CHECK(full_match(CODE_RE, text));
        if (seed == 1) snprintf(first, sizeof first, "%s", text);
        else differ |= strcmp(first, text) != 0;
    }
    CHECK(differ); /* sampling under the mask still samples */
    /* top_k 5 keeps five of the allowed tokens, not five of the vocabulary */
    p.top_k = 5;
    p.random_seed = 3;
    og_generator *g;
    CHECK_OK(guided(m, &p, "regex", CODE_RE, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    char text[512];
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, NULL));
    og_generator_destroy(g);
    CHECK(full_match(CODE_RE, text));
    og_model_close(m);
}

/* One matcher per row: two prompts of different lengths, both outputs of the language. */
TEST(guidance_regex_batch) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 2;
    p.max_length = 20;
    static const int32_t rows_in[] = {0, 0, 0, 52, 0, 0, 195, 731};
    og_generator *g;
    CHECK_OK(guided(m, &p, "regex", "[a-c]{2}x[0-9]+", &g));
    CHECK_OK(og_generator_append_tokens(g, rows_in, 8));
    CHECK_OK(run_to_end(g));
    for (size_t row = 0; row < 2; row++) {
        char text[512];
        CHECK_OK(generated_text(m, g, row, text, sizeof text, NULL));
        CHECK(full_match("[a-c]{2}x[0-9]+", text));
    }
    og_generator_destroy(g);
    og_model_close(m);
}

/* The grammar closes: only EOS can follow, so the row ends before max_length, also where
 * min_length would still block EOS (the grammar wins). */
TEST(guidance_finished_grammar_ends_row) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 30;
    for (int min_length = 0; min_length <= N_PROMPT + 25; min_length += N_PROMPT + 25) {
        p.min_length = min_length;
        og_generator *g;
        CHECK_OK(guided(m, &p, "regex", "(ab|cd)e", &g));
        CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
        CHECK_OK(run_to_end(g));
        char text[512];
        size_t n;
        CHECK_OK(generated_text(m, g, 0, text, sizeof text, &n));
        CHECK(full_match("(ab|cd)e", text));
        CHECK(n <= 3);
        const int32_t *next;
        size_t n_next;
        CHECK_OK(og_generator_get_next_tokens(g, &next, &n_next));
        CHECK_EQ_INT(next[0], EOS); /* it ended on EOS, which the sequence leaves out */
        og_generator_destroy(g);
    }
    og_model_close(m);
}

/* Rewinding rolls the matcher back: continuing gives the sequence of the first run, and
 * appended tokens begin a new guided output. */
TEST(guidance_rewind) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 12;
    og_generator *g;
    CHECK_OK(guided(m, &p, "regex", CODE_RE, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    const int32_t *ids;
    size_t len;
    CHECK_OK(og_generator_get_sequence(g, 0, &ids, &len));
    int32_t first[64];
    size_t first_len = len;
    CHECK(len <= 64);
    memcpy(first, ids, len * sizeof *ids);
    for (size_t back = N_PROMPT + 1; back < first_len; back += 2) {
        CHECK_OK(og_generator_rewind_to(g, back));
        CHECK_OK(run_to_end(g));
        CHECK_OK(og_generator_get_sequence(g, 0, &ids, &len));
        CHECK_EQ_INT(len, first_len);
        CHECK(memcmp(ids, first, len * sizeof *ids) == 0);
    }
    /* back into the prompt: the guided output starts again after what is appended */
    CHECK_OK(og_generator_rewind_to(g, 2));
    CHECK_OK(og_generator_append_tokens(g, prompt + 2, 2));
    CHECK_OK(run_to_end(g));
    CHECK_OK(og_generator_get_sequence(g, 0, &ids, &len));
    CHECK_EQ_INT(len, first_len);
    CHECK(memcmp(ids, first, len * sizeof *ids) == 0);
    /* and from nothing */
    CHECK_OK(og_generator_rewind_to(g, 0));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    CHECK_OK(og_generator_get_sequence(g, 0, &ids, &len));
    CHECK_EQ_INT(len, first_len);
    CHECK(memcmp(ids, first, len * sizeof *ids) == 0);
    og_generator_destroy(g);
    og_model_close(m);
}

/* A JSON Schema whose strings all end: `"yes"` or `"no"` and EOS. */
TEST(guidance_json_schema_enum) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 20;
    og_generator *g;
    CHECK_OK(guided(m, &p, "json_schema", "{\"enum\": [\"yes\", \"no\"]}", &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    char text[512];
    size_t n;
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, &n));
    CHECK(n < 20);
    CHECK(full_match("[ \n]*(\"yes\"|\"no\")[ \n]*", text));
    og_generator_destroy(g);
    og_model_close(m);
}

/* Bad guidance is refused with a reason before anything runs. */
TEST(guidance_errors) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    CHECK_ERR(og_generator_params_set_guidance(&p, "grammar", "x"), OG_ERR_INVALID_ARGUMENT,
              "json_schema, json_object, regex, lark_grammar");
    CHECK(p.guidance_type == NULL);
    CHECK_ERR(og_generator_params_set_guidance(&p, "regex", NULL), OG_ERR_INVALID_ARGUMENT,
              "needs its text");
    og_generator *g = NULL;
    CHECK_OK(og_generator_params_set_guidance(&p, "regex", "[0-9"));
    CHECK_ERR(og_generator_create(m, &p, &g), OG_ERR_INVALID_ARGUMENT, "regex");
    CHECK(g == NULL);
    CHECK_OK(og_generator_params_set_guidance(&p, "json_schema", "{\"type\": \"integer\""));
    CHECK_ERR(og_generator_create(m, &p, &g), OG_ERR_INVALID_ARGUMENT, "json_schema");
    CHECK_OK(og_generator_params_set_guidance(&p, "lark_grammar", "start: missing_rule"));
    CHECK_ERR(og_generator_create(m, &p, &g), OG_ERR_INVALID_ARGUMENT, "missing_rule");
    CHECK_OK(og_generator_params_set_guidance(&p, "regex", CODE_RE));
    p.num_beams = 2;
    CHECK_ERR(og_generator_create(m, &p, &g), OG_ERR_UNSUPPORTED, "beam search");
    p.num_beams = 1;
    /* NULL clears: the unguided generator again */
    CHECK_OK(og_generator_params_set_guidance(&p, NULL, NULL));
    CHECK(p.guidance_type == NULL && p.guidance_data == NULL);
    CHECK_OK(og_generator_create(m, &p, &g));
    og_generator_destroy(g);
    /* a struct from before the guidance fields is still taken, without guidance */
    og_generator_params old = og_generator_params_default(m);
    old.struct_size = offsetof(og_generator_params, guidance_type);
    CHECK_ERR(og_generator_params_set_guidance(&old, "regex", "a"), OG_ERR_INVALID_ARGUMENT,
              "struct_size");
    CHECK_OK(og_generator_create(m, &old, &g));
    og_generator_destroy(g);
    og_model_close(m);
}

/* json_object: whatever the model does, the output so far is a prefix of a JSON object. */
TEST(guidance_json_object_prefix) {
    OPEN(m);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 24;
    og_generator *g;
    CHECK_OK(guided(m, &p, "json_object", NULL, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    char text[1024];
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, NULL));
    size_t k = strspn(text, " \t\n\r");
    CHECK(text[k] == '{');
    og_generator_destroy(g);
    og_model_close(m);
}

/* ---- the model's grammar cache (genai/guidance.h) ---- */

typedef struct compile_job {
    og_model *m;
    guide_grammar *g;
    og_status *st;
} compile_job;

static void *compile_thread(void *arg) {
    compile_job *j = arg;
    j->st = gen_guidance_grammar(j->m, GUIDE_REGEX, "(ab)+c[0-9]*", &j->g);
    return NULL;
}

TEST(guidance_grammar_cache) {
    OPEN(m);
    guide_grammar *a, *b, *c;
    CHECK_OK(gen_guidance_grammar(m, GUIDE_REGEX, "a+", &a));
    CHECK_OK(gen_guidance_grammar(m, GUIDE_REGEX, "a+", &b));
    CHECK(a == b); /* compiled once */
    CHECK_OK(gen_guidance_grammar(m, GUIDE_LARK, "start: \"a\"+", &c));
    CHECK(c != a);
    guide_grammar_unref(b);
    guide_grammar_unref(c);
    /* threads asking at once all get the one grammar the cache keeps */
    compile_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (compile_job){.m = m};
        CHECK(pthread_create(&th[i], NULL, compile_thread, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) CHECK_OK(jobs[i].st);
    for (int i = 1; i < 4; i++) CHECK(jobs[i].g == jobs[0].g);
    for (int i = 0; i < 4; i++) guide_grammar_unref(jobs[i].g);
    /* bounded: after 64 other texts "a+" was dropped and compiles anew; the reference
     * held meanwhile stays good */
    for (int i = 0; i < 70; i++) {
        char re[32];
        snprintf(re, sizeof re, "x{%d}", i + 1);
        CHECK_OK(gen_guidance_grammar(m, GUIDE_REGEX, re, &b));
        guide_grammar_unref(b);
    }
    CHECK_OK(gen_guidance_grammar(m, GUIDE_REGEX, "a+", &b));
    CHECK(b != a);
    guide_matcher *mt;
    CHECK_OK(guide_matcher_new(a, NULL, 0, &mt));
    CHECK_OK(guide_matcher_consume(mt, 64)); /* 'a' */
    CHECK(guide_matcher_accepting(mt));
    guide_matcher_free(mt);
    guide_grammar_unref(a);
    guide_grammar_unref(b);
    /* the vocabulary: the model's logits width, EOS excluded */
    const guide_vocab *v;
    CHECK_OK(gen_guidance_vocab(m, &v));
    CHECK_EQ_INT(guide_vocab_size(v), 1000);
    og_model_close(m);
}

/* A package whose EOS id is past the logits (a config naming a token the model cannot
 * produce): a closed grammar ends the row itself, on its last token. */
TEST(guidance_closed_without_stop_id) {
    char dir_[1024];
    if (!test_ortgenai_package(dir_, sizeof dir_, PKG)) return;
    char dir[1100], cmd[4096];
    snprintf(dir, sizeof dir, "%s/gpt2_eos_outside", test_tmp_dir());
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s && for f in %s/*; do ln -sf \"$f\" %s/; done && rm %s/genai_config.json "
             "&& sed 's/\"eos_token_id\": 98/\"eos_token_id\": 4000/' %s/genai_config.json > "
             "%s/genai_config.json", dir, dir_, dir, dir, dir_, dir);
    CHECK(system(cmd) == 0);
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    og_generator_params p = og_generator_params_default(m);
    p.max_length = N_PROMPT + 30;
    og_generator *g;
    CHECK_OK(guided(m, &p, "regex", "(ab|cd)e", &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, N_PROMPT));
    CHECK_OK(run_to_end(g));
    char text[512];
    size_t n;
    CHECK_OK(generated_text(m, g, 0, text, sizeof text, &n));
    CHECK(full_match("(ab|cd)e", text));
    const int32_t *next, *ids;
    size_t n_next, len;
    CHECK_OK(og_generator_get_next_tokens(g, &next, &n_next));
    CHECK_OK(og_generator_get_sequence(g, 0, &ids, &len));
    CHECK_EQ_INT(next[0], ids[len - 1]); /* the last step chose the grammar's last token */
    og_generator_destroy(g);
    og_model_close(m);
}
