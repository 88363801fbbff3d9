/* guide_driver: the constraint engine driven line by line, for the differential mask test
 * (tests/guide/check_masks.py) and by hand.
 *
 *   guide_driver [--n N] [--pure] TOKENIZER.json KIND FILE [STOP_ID...]
 *
 * builds the guidance vocabulary of the tokenizer (N ids wide, the tokenizer's vocabulary
 * size unless given; with the tokenizer's encoding for the rule on forced bytes, as
 * llguidance's matcher has it, unless --pure: then every token that fits), compiles FILE's text as guidance of KIND (json_schema, json_object,
 * regex, lark_grammar) and makes a matcher whose stop ids are STOP_ID... (the
 * tokenizer's EOS unless given). The first line out is "ready n_vocab=N compile_us=T", or
 * "error MESSAGE" and exit 2. Then one command a line in, one line out:
 *
 *   mask         "mask HEX": the mask's words as little-endian bytes in hex (the layout
 *                of llguidance's compute_bitmask), or "err MESSAGE"
 *   allowed      "allowed COUNT A-B,C,...": the allowed ids as ranges
 *   consume ID   "ok" or "err MESSAGE"
 *   rollback N   "ok" or "err MESSAGE"
 *   accepting    "1" or "0"
 *   stopped      "1" or "0"
 *   consumed     the number of tokens consumed
 *   reset        "ok": a new matcher at the start
 *   time         "time masks=N p50_us=X p99_us=X max_us=X compile_us=T"
 *   compile KIND FILE   other guidance on the same vocabulary, with a new matcher and new
 *                timings: "ready n_vocab=N compile_us=T" or "error MESSAGE" (then
 *                every matcher command is "err no guidance" until one compiles)
 *   quit
 *
 * Anything else is "err ..."; nothing a line says can crash it. */
#include "genai/guidance.h"
#include "guide/guide.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A status as one line of output (its message's newlines made spaces), freed. */
static void put_err(const char *tag, og_status *st) {
    const char *msg = og_status_message(st);
    fputs(tag, stdout);
    for (const char *p = msg; *p; p++) putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
    putchar('\n');
    og_status_free(st);
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *p = malloc(cap + 1);
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n < cap) continue;
        char *q = realloc(p, cap * 2 + 1);
        if (!q) {
            free(p);
            p = NULL;
            break;
        }
        p = q;
        cap *= 2;
    }
    fclose(f);
    if (p) p[n] = 0;
    *len = n;
    return p;
}

/* Parses a whole decimal integer in [lo, hi]. */
static bool parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct driver {
    const guide_vocab *vocab;
    guide_grammar *grammar;
    guide_matcher *m;
    const int32_t *stops;
    size_t n_stop, n_vocab, words;
    uint32_t *mask;
    char *hex;
    double *mask_us; /* every mask's time, for `time` */
    size_t n_mask, cap_mask;
    double compile_us;
} driver;

static void cmd_mask(driver *d) {
    double t0 = now_us();
    og_status *st = guide_matcher_mask(d->m, d->mask);
    double dt = now_us() - t0;
    if (st) return put_err("err ", st);
    if (d->n_mask == d->cap_mask) {
        size_t cap = d->cap_mask ? d->cap_mask * 2 : 1024;
        double *p = realloc(d->mask_us, cap * sizeof *p);
        if (!p) return (void)puts("err out of memory");
        d->mask_us = p;
        d->cap_mask = cap;
    }
    d->mask_us[d->n_mask++] = dt;
    static const char digits[] = "0123456789abcdef";
    char *h = d->hex;
    for (size_t w = 0; w < d->words; w++)
        for (int b = 0; b < 4; b++) {
            unsigned byte = d->mask[w] >> (8 * b) & 0xff;
            *h++ = digits[byte >> 4];
            *h++ = digits[byte & 15];
        }
    *h = 0;
    printf("mask %s\n", d->hex);
}

static void cmd_allowed(driver *d) {
    og_status *st = guide_matcher_mask(d->m, d->mask);
    if (st) return put_err("err ", st);
    size_t count = 0;
    for (size_t i = 0; i < d->n_vocab; i++) count += d->mask[i / 32] >> (i % 32) & 1;
    printf("allowed %zu ", count);
    const char *sep = "";
    for (size_t i = 0; i < d->n_vocab; i++) {
        if (!(d->mask[i / 32] >> (i % 32) & 1)) continue;
        size_t j = i;
        while (j + 1 < d->n_vocab && d->mask[(j + 1) / 32] >> ((j + 1) % 32) & 1) j++;
        if (j > i) printf("%s%zu-%zu", sep, i, j);
        else printf("%s%zu", sep, i);
        sep = ",";
        i = j;
    }
    putchar('\n');
}

static void cmd_time(driver *d) {
    double p50 = 0, p99 = 0, max = 0;
    if (d->n_mask) {
        double *s = malloc(d->n_mask * sizeof *s);
        if (!s) return (void)puts("err out of memory");
        memcpy(s, d->mask_us, d->n_mask * sizeof *s);
        qsort(s, d->n_mask, sizeof *s, cmp_double);
        p50 = s[d->n_mask / 2];
        p99 = s[(d->n_mask * 99) / 100];
        max = s[d->n_mask - 1];
        free(s);
    }
    printf("time masks=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f compile_us=%.0f\n", d->n_mask,
           p50, p99, max, d->compile_us);
}

/* Compiles FILE's text as guidance of KIND (a kind's name) and starts a matcher on it,
 * replacing the driver's; on an error the driver has none. */
static og_status *load(driver *d, const char *kind_name, const char *path) {
    guide_matcher_free(d->m);
    d->m = NULL;
    if (d->grammar) guide_grammar_unref(d->grammar);
    d->grammar = NULL;
    d->n_mask = 0;
    guide_kind kind;
    og_status *st = guide_kind_parse(kind_name, &kind);
    if (st) return st;
    size_t len;
    char *text = slurp(path, &len);
    if (!text) return og_errorf(OG_ERR_NOT_FOUND, "cannot read %s: %s", path, strerror(errno));
    double t0 = now_us();
    st = guide_grammar_compile(kind, text, len, d->vocab, &d->grammar);
    d->compile_us = now_us() - t0;
    free(text);
    if (!st) st = guide_matcher_new(d->grammar, d->stops, d->n_stop, &d->m);
    return st;
}

/* One command line; false on quit. */
static bool command(driver *d, char *line) {
    line[strcspn(line, "\r\n")] = 0;
    char *arg = strchr(line, ' ');
    if (arg) *arg++ = 0;
    long long v;
    og_status *st;
    if (!strcmp(line, "quit")) return false;
    if (!strcmp(line, "compile")) {
        char *file = arg ? strchr(arg, ' ') : NULL;
        if (!file) {
            puts("error compile: needs a kind and a file");
        } else {
            *file++ = 0;
            if ((st = load(d, arg, file))) put_err("error ", st);
            else printf("ready n_vocab=%zu compile_us=%.0f\n", d->n_vocab, d->compile_us);
        }
        return true;
    }
    if (!d->m && strcmp(line, "time")) {
        puts("err no guidance (the last compile failed)");
        return true;
    }
    if (!strcmp(line, "mask")) {
        cmd_mask(d);
    } else if (!strcmp(line, "allowed")) {
        cmd_allowed(d);
    } else if (!strcmp(line, "consume")) {
        if (!arg || !parse_int(arg, INT32_MIN, INT32_MAX, &v)) puts("err consume: needs a token id");
        else if ((st = guide_matcher_consume(d->m, (int32_t)v))) put_err("err ", st);
        else puts("ok");
    } else if (!strcmp(line, "rollback")) {
        if (!arg || !parse_int(arg, 0, INT32_MAX, &v)) puts("err rollback: needs a count");
        else if ((st = guide_matcher_rollback(d->m, (size_t)v))) put_err("err ", st);
        else puts("ok");
    } else if (!strcmp(line, "accepting")) {
        puts(guide_matcher_accepting(d->m) ? "1" : "0");
    } else if (!strcmp(line, "stopped")) {
        puts(guide_matcher_stopped(d->m) ? "1" : "0");
    } else if (!strcmp(line, "consumed")) {
        printf("%zu\n", guide_matcher_consumed(d->m));
    } else if (!strcmp(line, "reset")) {
        guide_matcher *m = NULL;
        if ((st = guide_matcher_new(d->grammar, d->stops, d->n_stop, &m))) {
            put_err("err ", st);
        } else {
            guide_matcher_free(d->m);
            d->m = m;
            puts("ok");
        }
    } else if (!strcmp(line, "time")) {
        cmd_time(d);
    } else {
        printf("err unknown command '%.80s' (mask, allowed, consume ID, rollback N, "
               "accepting, stopped, consumed, reset, time, quit)\n", line);
    }
    return true;
}

static int usage(void) {
    fputs("usage: guide_driver [--n N] [--pure] TOKENIZER.json KIND FILE [STOP_ID...]\n",
          stderr);
    return 2;
}

int main(int argc, char **argv) {
    long long width = 0;
    bool pure = false;
    int a = 1;
    for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
        if (!strcmp(argv[a], "--pure")) pure = true;
        else if (!strcmp(argv[a], "--n") && a + 1 < argc && parse_int(argv[a + 1], 1, INT32_MAX, &width)) a++;
        else return usage();
    }
    if (argc - a < 3) return usage();
    const char *tok_path = argv[a], *kind_name = argv[a + 1], *path = argv[a + 2];
    size_t n_stop = (size_t)(argc - a - 3);

    setvbuf(stdout, NULL, _IOLBF, 1 << 16);
    int rc = 2;
    tok_tokenizer *tok = NULL;
    gen_token_table table = {0};
    guide_vocab *vocab = NULL;
    char *line = NULL;
    int32_t *stops = calloc(n_stop ? n_stop : 1, sizeof *stops);
    driver d = {0};
    og_status *st = NULL;

    if (!stops) {
        puts("error out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_stop; i++) {
        long long v;
        if (!parse_int(argv[a + 3 + i], 0, INT32_MAX, &v)) {
            printf("error stop id '%s' is not a token id\n", argv[a + 3 + i]);
            goto done;
        }
        stops[i] = (int32_t)v;
    }
    if ((st = tok_tokenizer_load(tok_path, &tok))) goto fail;
    if (!n_stop) {
        stops[0] = tok_eos_id(tok);
        n_stop = stops[0] >= 0;
    }
    d.n_vocab = width ? (size_t)width : tok_vocab_size(tok);
    if ((st = gen_token_table_build(tok, d.n_vocab, stops, n_stop, &table))) goto fail;
    if ((st = guide_vocab_new(table.n, table.bytes, table.lens, table.excluded, &vocab)))
        goto fail;
    if (!pure) guide_vocab_set_tokenize(vocab, gen_guidance_encode, tok);
    d.vocab = vocab;
    d.stops = stops;
    d.n_stop = n_stop;
    if ((st = load(&d, kind_name, path))) goto fail;
    d.words = guide_mask_words(d.n_vocab);
    d.mask = malloc(d.words * sizeof *d.mask);
    d.hex = malloc(d.words * 8 + 1);
    if (!d.mask || !d.hex) {
        puts("error out of memory");
        goto done;
    }
    printf("ready n_vocab=%zu compile_us=%.0f\n", d.n_vocab, d.compile_us);
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if (memchr(line, 0, (size_t)n)) puts("err the command holds a NUL byte");
        else if (!command(&d, line)) break;
    }
    rc = 0;
    goto done;
fail:
    put_err("error ", st);
done:
    guide_matcher_free(d.m);
    if (d.grammar) guide_grammar_unref(d.grammar);
    guide_vocab_free(vocab);
    gen_token_table_free(&table);
    tok_tokenizer_free(tok);
    free(d.mask);
    free(d.hex);
    free(d.mask_us);
    free(line);
    free(stops);
    return rc;
}
