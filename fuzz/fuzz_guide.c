/* libFuzzer target: the constraint engine's compilers (src/guide). The first byte picks
 * the kind of guidance (its value mod 4: JSON Schema, JSON object, regular expression,
 * Lark grammar; the seeds use '0'..'3'), the rest is the guidance text. Any text must
 * compile or fail with a message, never crash, leak, hang or run away in memory (the
 * compiler's limits refuse what is too large); a grammar that compiles is walked for a
 * few steps on a small vocabulary — the mask, a token it allows (chosen from the input's
 * bytes), one it refuses, a rollback — as the matcher is used in decoding. */
#include "guide/guide.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every single byte, then multi-byte pieces a JSON, regex or Lark output is made of
 * (whole words and punctuation runs, UTF-8 characters, whitespace runs), an excluded
 * control token and the stop id. */
static const char *const pieces[] = {
    "{\"", "\":", "\"}", "\", \"", "true", "false", "null", "123", "-0.5e3", "  ", "\n  ",
    "ab", "abc", "hello", " world", "\\u00e9", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
    "\xf0\x9f\x98\x80", "[1, ", "]]", "2024-01-31", "T12:00:00Z", "@example.com", "<|ctl|>"};
enum { N_PIECES = sizeof pieces / sizeof pieces[0], N_TOKENS = 256 + N_PIECES + 1 };
static const int32_t stop_id = N_TOKENS - 1;

static guide_vocab *vocab(void) {
    static guide_vocab *v;
    if (v) return v;
    static uint8_t singles[256];
    static const uint8_t *bytes[N_TOKENS];
    static uint32_t lens[N_TOKENS];
    static bool excluded[N_TOKENS];
    for (int i = 0; i < 256; i++) {
        singles[i] = (uint8_t)i;
        bytes[i] = &singles[i];
        lens[i] = 1;
    }
    for (int i = 0; i < N_PIECES; i++) {
        bytes[256 + i] = (const uint8_t *)pieces[i];
        lens[256 + i] = (uint32_t)strlen(pieces[i]);
    }
    excluded[256 + N_PIECES - 1] = true; /* "<|ctl|>": a control token */
    bytes[stop_id] = (const uint8_t *)"";
    excluded[stop_id] = true;
    og_status *st = guide_vocab_new(N_TOKENS, bytes, lens, excluded, &v);
    if (st) abort(); /* a fixed, valid vocabulary: refusing it is a bug */
    return v;
}

static bool allowed(const uint32_t *mask, int32_t t) { return mask[t / 32] >> (t % 32) & 1; }

/* Walks a compiled grammar for a few steps; `pick` (the input's bytes) chooses tokens. */
static void walk(guide_grammar *g, const uint8_t *pick, size_t n_pick) {
    guide_matcher *m = NULL;
    if (guide_matcher_new(g, &stop_id, 1, &m)) abort(); /* the only error is memory */
    uint32_t mask[(N_TOKENS + 31) / 32];
    for (size_t step = 0; step < 12 && !guide_matcher_stopped(m); step++) {
        og_status *st = guide_matcher_mask(m, mask);
        if (st) {
            og_status_free(st);
            break;
        }
        int32_t ids[N_TOKENS], n = 0;
        for (int32_t t = 0; t < N_TOKENS; t++)
            if (allowed(mask, t)) ids[n++] = t;
        /* a token outside the mask is refused and changes nothing */
        for (int32_t t = 0; t < N_TOKENS; t++)
            if (!allowed(mask, t)) {
                st = guide_matcher_consume(m, t);
                if (!st) abort();
                og_status_free(st);
                break;
            }
        if (!n) break;
        uint8_t r = n_pick ? pick[step % n_pick] : 0;
        if ((st = guide_matcher_consume(m, ids[(r * 31u + step) % (unsigned)n]))) abort();
        (void)guide_matcher_accepting(m);
        if (r % 5 == 0 && !guide_matcher_stopped(m) && guide_matcher_consumed(m) > 0) {
            if ((st = guide_matcher_rollback(m, 1))) abort();
        }
    }
    guide_matcher_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const guide_kind kinds[4] = {GUIDE_JSON_SCHEMA, GUIDE_JSON_OBJECT, GUIDE_REGEX,
                                        GUIDE_LARK};
    guide_kind kind = kinds[data[0] % 4];
    guide_grammar *g = NULL;
    og_status *st = guide_grammar_compile(kind, (const char *)data + 1, size - 1, vocab(), &g);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    walk(g, data + 1, size - 1);
    guide_grammar_unref(g);
    return 0;
}
