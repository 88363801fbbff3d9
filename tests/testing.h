/* A tiny self-registering test framework: each TEST() adds itself to a list at
 * start-up, so test files never share a list to edit. Assertions report the file and
 * line and mark the test failed; CHECK_OK also prints the status message. */
#ifndef OG_TESTS_TESTING_H
#define OG_TESTS_TESTING_H

#include "onnx_genai.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Skips the current test, loudly, with a reason (missing data or oracle). */
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Path of the shared/ folder next to the project ("../shared" unless OG_SHARED_DIR). */
const char *test_shared_dir(void);
/* The folder of shared/models/ortgenai/<rel> into buf; false (after a loud skip) when
 * its genai_config.json is missing. */
bool test_ortgenai_package(char *buf, size_t size, const char *rel);
/* A scratch directory for this test run (created on first use). */
const char *test_tmp_dir(void);
/* The folder of the graphs tests/models/make_test_models.py writes ($OG_TEST_MODELS,
 * set by ctest), or NULL. */
const char *test_models_dir(void);

/* Declares `char path[1024]` naming model `name` in test_models_dir(), or skips the test
 * loudly when that folder is not set. */
#define NEED_TEST_MODEL(path, name)                                                      \
    char path[1024];                                                                     \
    do {                                                                                 \
        if (!test_models_dir()) {                                                        \
            test_skip("OG_TEST_MODELS is not set: run through ctest, which writes them"); \
            return;                                                                      \
        }                                                                                \
        snprintf(path, sizeof path, "%s/%s", test_models_dir(), name);                   \
    } while (0)

#define TEST(name)                                                                       \
    static void test_##name(void);                                                      \
    __attribute__((constructor)) static void register_##name(void) {                    \
        test_register(#name, test_##name);                                              \
    }                                                                                    \
    static void test_##name(void)

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                           \
            return;                                                                      \
        }                                                                                \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                               \
    do {                                                                                 \
        long long a_ = (long long)(a), b_ = (long long)(b);                              \
        if (a_ != b_) {                                                                  \
            test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);     \
            return;                                                                      \
        }                                                                                \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                            \
    do {                                                                                 \
        double a_ = (double)(a), b_ = (double)(b);                                       \
        if (!(fabs(a_ - b_) <= (tol))) {                                                 \
            test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, \
                      (double)(tol));                                                    \
            return;                                                                      \
        }                                                                                \
    } while (0)

#define CHECK_OK(expr)                                                                   \
    do {                                                                                 \
        og_status *s_ = (expr);                                                          \
        if (s_) {                                                                        \
            test_fail(__FILE__, __LINE__, "%s failed: %s", #expr, og_status_message(s_)); \
            og_status_free(s_);                                                          \
            return;                                                                      \
        }                                                                                \
    } while (0)

/* Expects an error of `code` whose message contains `needle`; frees it. */
#define CHECK_ERR(expr, code, needle)                                                    \
    do {                                                                                 \
        og_status *s_ = (expr);                                                          \
        if (!s_) {                                                                       \
            test_fail(__FILE__, __LINE__, "%s succeeded, expected an error", #expr);     \
            return;                                                                      \
        }                                                                                \
        if (og_status_code(s_) != (code) || !strstr(og_status_message(s_), (needle))) {  \
            test_fail(__FILE__, __LINE__, "%s: got [%s] '%s', expected [%s] containing '%s'", \
                      #expr, og_code_name(og_status_code(s_)), og_status_message(s_),    \
                      og_code_name(code), (needle));                                     \
            og_status_free(s_);                                                          \
            return;                                                                      \
        }                                                                                \
        og_status_free(s_);                                                              \
    } while (0)

#endif
