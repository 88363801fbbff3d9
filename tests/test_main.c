/* Runs every registered unit test (or those whose name contains argv[1]) and ends with
 * the line "N passed, M failed, K skipped". */
#include "testing.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_TESTS = 4096 };
typedef struct test_entry {
    const char *name;
    test_fn fn;
} test_entry;
static test_entry tests[MAX_TESTS];
static int n_tests;
static int cur_failed, cur_skipped;

void test_register(const char *name, test_fn fn) {
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    cur_failed = 1;
}

void test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    SKIP: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    cur_skipped = 1;
}

const char *test_shared_dir(void) {
    const char *d = getenv("OG_SHARED_DIR");
    return d && *d ? d : OG_DEFAULT_SHARED_DIR;
}

const char *test_models_dir(void) {
    const char *d = getenv("OG_TEST_MODELS");
    return d && *d ? d : NULL;
}

bool test_ortgenai_package(char *buf, size_t size, const char *rel) {
    snprintf(buf, size, "%s/models/ortgenai/%s", test_shared_dir(), rel);
    char cfg[4200];
    struct stat st;
    snprintf(cfg, sizeof cfg, "%s/genai_config.json", buf);
    if (stat(cfg, &st) == 0) return true;
    test_skip("%s is missing: the shared test models are not beside the project", cfg);
    return false;
}

const char *test_tmp_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/og-unit-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const test_entry *)a)->name, ((const test_entry *)b)->name);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    qsort(tests, (size_t)n_tests, sizeof tests[0], by_name);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_tests; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        cur_failed = cur_skipped = 0;
        tests[i].fn();
        const char *verdict = cur_failed ? "FAIL" : cur_skipped ? "SKIP" : "ok";
        printf("%-4s %s\n", verdict, tests[i].name);
        fflush(stdout);
        if (cur_failed) failed++;
        else if (cur_skipped) skipped++;
        else passed++;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
