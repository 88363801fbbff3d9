/* The fuzzers' seed corpora stay meaningful: every genai_config.json seed parses (bad_*
 * seeds must fail, they seed the error paths) and every tokenizer.json seed loads and
 * round-trips plain text. A seed that no longer parses would leave the fuzzer mutating
 * inputs that stop at the first check. regress_* seeds are inputs the fuzzers found
 * (run here, they keep the fix under the sanitizer build): they must load and encode. */
#include "testing.h"

#include "base/pkg_file.h"
#include "genai/config.h"
#include "tokenizer/tokenizer.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

typedef og_status *(*seed_fn)(const char *path, const char *data, size_t len, const char *kind);

static og_status *config_seed(const char *path, const char *data, size_t len, const char *kind) {
    gen_config *cfg = NULL;
    og_status *st = gen_config_parse(data, len, path, &cfg);
    gen_config_free(cfg);
    if (!strcmp(kind, "bad")) {
        bool failed = st != NULL;
        og_status_free(st);
        return failed ? NULL : og_errorf(OG_ERR_RUNTIME, "%s: a bad_ seed parsed", path);
    }
    return st;
}

static og_status *tokenizer_seed(const char *path, const char *data, size_t len, const char *kind) {
    tok_tokenizer *t = NULL;
    OG_TRY(tok_tokenizer_parse(data, len, path, &t));
    int32_t *ids = NULL;
    size_t n = 0;
    char *text = NULL;
    /* the fuzzer's text (fuzz/fuzz_tokenizer.c), where regress_ seeds went wrong */
    static const char fuzz_text[] = "Hello, world!  It's 2024 \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 "
                                    "\xf0\x9f\x98\x80 \xff\xfe tab\tnew\nline <s></s> aaaaaaaa";
    og_status *st = tok_encode(t, fuzz_text, sizeof fuzz_text - 1, true, &ids, &n);
    free(ids);
    ids = NULL;
    if (!st) st = tok_encode(t, "hello the world 12!", 19, false, &ids, &n);
    if (!st) st = tok_decode(t, ids, n, true, &text, NULL);
    if (!st && strcmp(kind, "regress") && (n == 0 || !strstr(text, "hello")))
        st = og_errorf(OG_ERR_RUNTIME, "%s: 'hello the world 12!' came back as '%s' (%zu ids)",
                       path, text, n);
    free(ids);
    free(text);
    tok_tokenizer_free(t);
    return st;
}

static int each_seed(const char *sub, seed_fn fn) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", OG_SOURCE_DIR, sub);
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *data = NULL;
        size_t len = 0;
        og_status *st = pkg_read_file(path, PKG_MAX_JSON_BYTES, &data, &len);
        const char *kind = !strncmp(e->d_name, "bad_", 4)       ? "bad"
                           : !strncmp(e->d_name, "regress_", 8) ? "regress"
                                                                : "seed";
        if (!st) st = fn(path, data, len, kind);
        free(data);
        if (st) {
            test_fail(__FILE__, __LINE__, "seed %s: %s", path, og_status_message(st));
            og_status_free(st);
        }
        n++;
    }
    closedir(d);
    return n;
}

TEST(fuzz_seeds_are_valid) {
    CHECK(each_seed("genai_config", config_seed) >= 4);
    CHECK(each_seed("tokenizer", tokenizer_seed) >= 3);
}
