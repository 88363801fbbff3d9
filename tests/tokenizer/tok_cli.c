/* tok-cli: drives the tokenizer from the command line, for the parity check against HF
 * tokenizers (tests/tokenizer/check_parity.py) and the benchmark.
 *
 *   tok-cli encode <tokenizer> <text>          ids with special tokens, one line
 *   tok-cli decode <tokenizer> <id>...         decoded text (special tokens kept)
 *   tok-cli batch  <tokenizer> <hexfile>       per input line (hex UTF-8 bytes): lines
 *       "E ids" (add_special_tokens), "N ids" (without), "D hex" (decode of E, specials
 *       kept), "S hex" (decode of E skipping specials), "T hex" (stream decode of E,
 *       skipping specials: pieces concatenated), "B n" (stream pieces that were not
 *       valid UTF-8 or split a character: must be 0), "P hex" and "C hex" (stream decode
 *       of E's ids after the first one and after the first half, with the ids before
 *       set as the stream's context: pieces concatenated)
 *   tok-cli bench  <tokenizer> <textfile> [reps]  encode every line, print MB/s (by wall
 *       and by CPU time) */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(og_status *st) {
    fprintf(stderr, "tok-cli: %s\n", og_status_message(st));
    og_status_free(st);
    return 1;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap + 1);
    size_t got;
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *q = realloc(p, cap * 2 + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (p) p[n] = 0;
    *len = n;
    return p;
}

static void put_hex(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) printf("%02x", (unsigned char)s[i]);
}

static void put_ids(char tag, const int32_t *ids, size_t n) {
    printf("%c", tag);
    for (size_t i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\n");
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A piece is well-formed when it is valid UTF-8 on its own. */
static int valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
        if (!k || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        i += k;
    }
    return 1;
}

static int batch(tok_tokenizer *tok, const char *path) {
    size_t len;
    char *data = slurp(path, &len);
    if (!data) {
        fprintf(stderr, "tok-cli: cannot read %s\n", path);
        return 1;
    }
    char *line = data, *text = malloc(len / 2 + 1);
    tok_stream *stream = NULL;
    og_status *st = tok_stream_new(tok, true, &stream);
    if (st) return fail(st);
    while (line < data + len) {
        char *end = strchr(line, '\n');
        if (!end) end = data + len;
        size_t n = 0;
        for (char *p = line; p + 1 < end; p += 2) text[n++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
        int32_t *ids = NULL, *ids2 = NULL;
        size_t ni = 0, ni2 = 0;
        if ((st = tok_encode(tok, text, n, true, &ids, &ni)) || (st = tok_encode(tok, text, n, false, &ids2, &ni2)))
            return fail(st);
        put_ids('E', ids, ni);
        put_ids('N', ids2, ni2);
        char *out;
        size_t olen;
        if ((st = tok_decode(tok, ids, ni, false, &out, &olen))) return fail(st);
        printf("D ");
        put_hex(out, olen);
        printf("\n");
        free(out);
        if ((st = tok_decode(tok, ids, ni, true, &out, &olen))) return fail(st);
        printf("S ");
        put_hex(out, olen);
        printf("\n");
        free(out);
        printf("T ");
        int bad = 0;
        for (size_t i = 0; i <= ni; i++) {
            const char *piece;
            size_t plen;
            st = i < ni ? tok_stream_feed(stream, ids[i], &piece, &plen) : tok_stream_flush(stream, &piece, &plen);
            if (st) return fail(st);
            if (!valid_utf8((const unsigned char *)piece, plen)) bad++;
            put_hex(piece, plen);
        }
        printf("\nB %d\n", bad);
        /* continuations: the ids after a split, from a stream whose context is the ids
         * before it (after the first id, e.g. BOS, and after half of them) */
        for (int c = 0; c < 2; c++) {
            size_t k = c == 0 ? (ni > 0) : ni / 2;
            printf("%c ", c == 0 ? 'P' : 'C');
            if ((st = tok_stream_set_context(stream, ids, k))) return fail(st);
            for (size_t i = k; i <= ni; i++) {
                const char *piece;
                size_t plen;
                st = i < ni ? tok_stream_feed(stream, ids[i], &piece, &plen) : tok_stream_flush(stream, &piece, &plen);
                if (st) return fail(st);
                put_hex(piece, plen);
            }
            printf("\n");
        }
        free(ids);
        free(ids2);
        line = end + 1;
    }
    tok_stream_free(stream);
    free(text);
    free(data);
    return 0;
}

static int bench(tok_tokenizer *tok, const char *path, int reps) {
    size_t len;
    char *data = slurp(path, &len);
    if (!data) {
        fprintf(stderr, "tok-cli: cannot read %s\n", path);
        return 1;
    }
    size_t total_ids = 0;
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    for (int r = 0; r < reps; r++) {
        for (char *line = data; line < data + len;) {
            char *end = memchr(line, '\n', (size_t)(data + len - line));
            if (!end) end = data + len;
            int32_t *ids;
            size_t n;
            og_status *st = tok_encode(tok, line, (size_t)(end - line), false, &ids, &n);
            if (st) return fail(st);
            total_ids += n;
            free(ids);
            line = end + 1;
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    /* CPU time is the steadier measure on a shared machine; wall time is printed too. */
    printf("bytes %zu reps %d seconds %.4f cpu %.4f ids %zu MB/s %.2f cpuMB/s %.2f\n", len, reps,
           sec, cpu, total_ids, (double)len * reps / sec / 1e6, (double)len * reps / cpu / 1e6);
    free(data);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tok-cli encode|decode|batch|bench <tokenizer> ...\n");
        return 2;
    }
    tok_tokenizer *tok = NULL;
    og_status *st = tok_tokenizer_load(argv[2], &tok);
    if (st) return fail(st);
    int rc = 0;
    if (!strcmp(argv[1], "encode") && argc > 3) {
        int32_t *ids;
        size_t n;
        if ((st = tok_encode(tok, argv[3], strlen(argv[3]), true, &ids, &n))) rc = fail(st);
        else {
            put_ids('E', ids, n);
            free(ids);
        }
    } else if (!strcmp(argv[1], "decode")) {
        size_t n = (size_t)(argc - 3);
        int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
        for (size_t i = 0; i < n; i++) ids[i] = (int32_t)atoi(argv[3 + i]);
        char *out;
        if ((st = tok_decode(tok, ids, n, false, &out, NULL))) rc = fail(st);
        else {
            printf("%s\n", out);
            free(out);
        }
        free(ids);
    } else if (!strcmp(argv[1], "batch") && argc > 3) {
        rc = batch(tok, argv[3]);
    } else if (!strcmp(argv[1], "bench") && argc > 3) {
        rc = bench(tok, argv[3], argc > 4 ? atoi(argv[4]) : 1);
    } else {
        fprintf(stderr, "tok-cli: bad command\n");
        rc = 2;
    }
    tok_tokenizer_free(tok);
    return rc;
}
