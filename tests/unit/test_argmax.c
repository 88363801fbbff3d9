/* gen_argmax at every instruction-set level this CPU has (forced with isa_set, as
 * OG_ISA does) against the scalar loop that defines it: the first index of the largest
 * value, a NaN never larger than anything (a NaN in x[0] gives 0), -0.0 equal to +0.0.
 * Every length 1..200 (all the vector tails of 8 and 16 lanes and of the 4-vector blocks)
 * and a 151,936-token row (Qwen2.5's vocabulary) and one with a 15-element tail; for each,
 * random rows, rows of few distinct values (ties everywhere), constant rows, all -inf,
 * all NaN, NaN-sprinkled rows, signed zeros, and the maximum moved through positions,
 * alone and tied with a later copy in another lane or another accumulator. */
#include "testing.h"

#include "base/isa.h"
#include "genai/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The definition, written here independently of src/genai/search.c. */
static int32_t want_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint32_t next_u32(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static long checked;

/* Compares every level on x; reports the first mismatch of this row and returns false. */
static bool check_row(const float *x, int n, const char *what, int p) {
    int32_t want = want_argmax(x, n);
    isa_level saved = isa_active();
    bool ok = true;
    for (int level = ISA_GENERIC; ok && level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        int32_t got = gen_argmax(x, n);
        checked++;
        if (got != want) {
            test_fail(__FILE__, __LINE__, "%s: n=%d p=%d at %s: got %d (%g), want %d (%g)",
                      what, n, p, isa_name((isa_level)level), got,
                      got >= 0 && got < n ? (double)x[got] : 0.0, want, (double)x[want]);
            ok = false;
        }
    }
    isa_set(saved);
    return ok;
}

enum { FILL_RANDOM, FILL_FEW, FILL_CONST, FILL_NEG_INF, FILL_NAN, FILL_SOME_NAN, FILL_ZEROS, FILLS };
static const char *fill_name[FILLS] = {"random", "few values", "constant", "all -inf",
                                       "all NaN", "some NaN", "signed zeros"};

static void fill(float *x, int n, int kind) {
    for (int i = 0; i < n; i++) {
        uint32_t r = next_u32();
        switch (kind) {
        case FILL_RANDOM: x[i] = (float)((double)r / 4294967296.0 * 2.0 - 1.0); break;
        case FILL_FEW: x[i] = (float)(r % 4) - 2.0f; break;
        case FILL_CONST: x[i] = 0.5f; break;
        case FILL_NEG_INF: x[i] = -INFINITY; break;
        case FILL_NAN: x[i] = NAN; break;
        case FILL_SOME_NAN: x[i] = r % 8 == 0 ? NAN : (float)(r % 5); break;
        case FILL_ZEROS: x[i] = r % 2 ? 0.0f : -0.0f; break;
        }
    }
}

/* The row as filled, then with a maximum at p (alone, then tied at p + d for lane and
 * accumulator distances d), with NaN next to it, and with x[0] NaN. */
static bool check_position(float *x, const float *base, int n, int kind, int p, bool all_ties) {
    static const int dist[] = {1, 8, 16, 7, 15, 17, 31, 32, 48, 63, 64, 65};
    size_t n_dist = all_ties ? sizeof dist / sizeof *dist : 3;
    size_t bytes = sizeof(float) * (size_t)n;
    const char *what = fill_name[kind];
    float top = kind == FILL_ZEROS ? 0.0f : 10.0f;
    memcpy(x, base, bytes);
    x[p] = top;
    if (!check_row(x, n, what, p)) return false;
    for (size_t k = 0; k < n_dist; k++) {
        if (p + dist[k] >= n) break;
        x[p + dist[k]] = top;
        if (!check_row(x, n, what, p)) return false;
    }
    memcpy(x, base, bytes);
    x[p] = INFINITY;
    if (p + 1 < n) x[p + 1] = NAN;
    if (p > 0) x[p - 1] = NAN;
    if (!check_row(x, n, what, p)) return false;
    x[0] = NAN;
    if (!check_row(x, n, what, p)) return false;
    /* -inf everywhere but p, which holds the row's own value (maybe NaN or -0.0) */
    for (int i = 0; i < n; i++) x[i] = -INFINITY;
    x[p] = base[p];
    return check_row(x, n, what, p);
}

static void check_length(int n, bool every_position) {
    float *x = malloc(sizeof(float) * (size_t)n), *base = malloc(sizeof(float) * (size_t)n);
    if (!x || !base) {
        test_fail(__FILE__, __LINE__, "out of memory for n=%d", n);
        free(x);
        free(base);
        return;
    }
    for (int kind = 0; kind < FILLS; kind++) {
        fill(base, n, kind);
        if (!check_row(base, n, fill_name[kind], -1)) break;
        if (every_position) {
            bool ok = true;
            for (int p = 0; ok && p < n; p++) ok = check_position(x, base, n, kind, p, true);
            if (!ok) break;
        } else {
            /* the ends, both sides of vector and block boundaries, the middle, random */
            int ps[12], np = 0;
            static const int edge[] = {0, 15, 16, 63, 64};
            for (size_t k = 0; k < sizeof edge / sizeof *edge; k++) {
                ps[np++] = edge[k];
                ps[np++] = n - 1 - edge[k];
            }
            ps[np++] = n / 2;
            while (np < 12) ps[np++] = (int)(next_u32() % (uint32_t)n);
            bool ok = true;
            for (int k = 0; ok && k < np; k++) ok = check_position(x, base, n, kind, ps[k], false);
            if (!ok) break;
        }
    }
    free(x);
    free(base);
}

TEST(argmax_every_isa_level_matches_scalar) {
    checked = 0;
    for (int n = 1; n <= 200; n++) check_length(n, true);
    check_length(151936, false);
    check_length(151936 + 15, false);
    fprintf(stderr, "argmax: %ld comparisons at levels generic..%s (the best this CPU has)\n",
            checked, isa_name(isa_supported()));
    CHECK(checked > 0);
}
