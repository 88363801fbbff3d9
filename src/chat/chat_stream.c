#include "chat/chat_stream.h"

#include <stdlib.h>
#include <string.h>

static bool text_add(chat_stream *s, chat_text *t, const char *p, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + n + 1) cap *= 2;
        char *q = realloc(t->p, cap);
        if (!q) {
            s->oom = true;
            return false;
        }
        t->p = q;
        t->cap = cap;
    }
    memcpy(t->p + t->n, p, n);
    t->n += n;
    t->p[t->n] = 0;
    return true;
}

void chat_stream_init(chat_stream *s, const char *const *stops, int n_stops, int32_t bor,
                      int32_t eor, int32_t bot, int32_t eot, chat_emit_fn emit, void *ctx) {
    memset(s, 0, sizeof *s);
    s->stops = stops;
    s->n_stops = n_stops;
    s->bor = bor;
    s->eor = eor;
    s->bot = bot;
    s->eot = eot;
    s->emit = emit;
    s->ctx = ctx;
    s->ch = CH_ANSWER;
}

void chat_stream_free(chat_stream *s) {
    for (int i = 0; i < 3; i++) free(s->text[i].p);
    memset(s->text, 0, sizeof s->text);
}

/* Bytes at the end of the answer that are the start of some stop string (held back). */
static size_t holdback(const chat_stream *s) {
    const chat_text *a = &s->text[CH_ANSWER];
    size_t best = 0;
    for (int i = 0; i < s->n_stops; i++) {
        size_t sl = strlen(s->stops[i]);
        for (size_t k = sl > 1 ? sl - 1 : 0; k > best; k--)
            if (k <= a->n && memcmp(a->p + a->n - k, s->stops[i], k) == 0) {
                best = k;
                break;
            }
    }
    return best;
}

static void answer_piece(chat_stream *s, const char *piece, size_t len) {
    chat_text *a = &s->text[CH_ANSWER];
    size_t before = a->n;
    if (!text_add(s, a, piece, len)) return;
    /* the earliest stop string that ends inside the new text */
    size_t cut = SIZE_MAX;
    int which = -1;
    for (int i = 0; i < s->n_stops; i++) {
        size_t sl = strlen(s->stops[i]);
        if (sl == 0) continue;
        size_t from = before >= sl - 1 ? before - (sl - 1) : 0;
        for (size_t at = from; at + sl <= a->n; at++)
            if (memcmp(a->p + at, s->stops[i], sl) == 0) {
                if (at < cut) {
                    cut = at;
                    which = i;
                }
                break;
            }
    }
    if (cut != SIZE_MAX) {
        a->n = cut;
        a->p[cut] = 0;
        s->stopped = true;
        s->stop = which;
        if (cut > s->emitted) s->emit(s->ctx, CH_ANSWER, a->p + s->emitted, cut - s->emitted);
        s->emitted = cut;
        return;
    }
    size_t safe = a->n - holdback(s);
    if (safe > s->emitted) {
        s->emit(s->ctx, CH_ANSWER, a->p + s->emitted, safe - s->emitted);
        s->emitted = safe;
    }
}

void chat_stream_token(chat_stream *s, int32_t id, const char *piece, size_t len) {
    if (s->stopped) return;
    if (id >= 0 && (id == s->bor || id == s->bot)) {
        s->ch = id == s->bor ? CH_THINKING : CH_TOOL;
        return;
    }
    if (id >= 0 && (id == s->eor || id == s->eot)) {
        s->ch = CH_ANSWER;
        return;
    }
    if (!len) return;
    if (s->ch == CH_ANSWER) {
        answer_piece(s, piece, len);
    } else if (text_add(s, &s->text[s->ch], piece, len)) {
        s->emit(s->ctx, s->ch, piece, len);
    }
}

void chat_stream_finish(chat_stream *s) {
    chat_text *a = &s->text[CH_ANSWER];
    if (!s->stopped && a->n > s->emitted) {
        s->emit(s->ctx, CH_ANSWER, a->p + s->emitted, a->n - s->emitted);
        s->emitted = a->n;
    }
}

const char *chat_stream_text(const chat_stream *s, chat_channel ch) {
    return s->text[ch].p ? s->text[ch].p : "";
}
