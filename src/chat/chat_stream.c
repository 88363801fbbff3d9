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
    free(s->pend.p);
    memset(&s->pend, 0, sizeof s->pend);
}

void chat_stream_think(chat_stream *s, const char *open, const char *close, bool inside) {
    s->think_open = open;
    s->think_close = close;
    s->think_state = inside ? 1 : 0;
    s->think_lead = inside;
    if (inside) s->ch = CH_THINKING;
}

const char *chat_think_markers(const char *template_source, bool has_tokens, const char **close) {
    *close = NULL;
    if (has_tokens || !template_source || !strstr(template_source, "<think>") ||
        !strstr(template_source, "</think>"))
        return NULL;
    *close = "</think>";
    return "<think>";
}

bool chat_text_in_block(const char *text, const char *open, const char *close) {
    const char *last = NULL;
    for (const char *p = strstr(text, open); p; p = strstr(p + 1, open)) last = p;
    return last && !strstr(last + strlen(open), close);
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

/* Reasoning text t[0, n) as it becomes final: without the newlines that open the block. */
static void think_emit(chat_stream *s, const char *t, size_t n) {
    if (s->think_lead)
        while (n && *t == '\n') t++, n--;
    if (!n) return;
    s->think_lead = false;
    if (text_add(s, &s->text[CH_THINKING], t, n)) s->emit(s->ctx, CH_THINKING, t, n);
}

/* Answer text after a block: without the newlines that follow its close. */
static void answer_emit(chat_stream *s, const char *t, size_t n) {
    if (s->answer_lead)
        while (n && *t == '\n') t++, n--;
    if (!n) return;
    s->answer_lead = false;
    answer_piece(s, t, n);
}

/* The length of the longest end of t[0, n) that is a proper start of m. */
static size_t partial_end(const char *t, size_t n, const char *m) {
    size_t k = strlen(m);
    for (size_t l = k - 1 < n ? k - 1 : n; l > 0; l--)
        if (!memcmp(t + n - l, m, l)) return l;
    return 0;
}

/* Text while reasoning may be marked in it (think_open set, no bor/eor channel active):
 * held in pend until it is known which channel it belongs to. */
static void think_text(chat_stream *s, const char *piece, size_t len) {
    if (s->think_state == 2) {
        answer_emit(s, piece, len);
        return;
    }
    if (!text_add(s, &s->pend, piece, len)) return;
    for (;;) {
        char *t = s->pend.p;
        size_t n = s->pend.n, used = 0;
        if (s->think_state == 0) { /* only white space may come before a block */
            size_t i = 0, ko = strlen(s->think_open);
            while (i < n && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) i++;
            if (i == n) return;
            if (n - i >= ko && !memcmp(t + i, s->think_open, ko)) {
                s->think_state = 1;
                s->think_lead = true;
                s->ch = CH_THINKING;
                used = i + ko;
            } else if (n - i < ko && !memcmp(t + i, s->think_open, n - i)) {
                return; /* may still be the opener */
            } else {
                s->think_state = 2;
                s->pend.n = 0;
                answer_piece(s, t, n);
                return;
            }
        } else { /* inside: up to the close */
            size_t kc = strlen(s->think_close), at = SIZE_MAX;
            for (size_t i = 0; i + kc <= n && at == SIZE_MAX; i++)
                if (!memcmp(t + i, s->think_close, kc)) at = i;
            if (at == SIZE_MAX) { /* emit what cannot become the close, less trailing newlines */
                size_t keep = partial_end(t, n, s->think_close), e = n - keep;
                while (e > 0 && t[e - 1] == '\n') e--;
                think_emit(s, t, e);
                memmove(t, t + e, n - e);
                s->pend.n = n - e;
                return;
            }
            size_t e = at;
            while (e > 0 && t[e - 1] == '\n') e--;
            think_emit(s, t, e);
            s->think_state = 2;
            s->answer_lead = true;
            s->ch = CH_ANSWER;
            size_t rest = n - at - kc;
            s->pend.n = 0;
            if (rest) answer_emit(s, t + at + kc, rest);
            return;
        }
        memmove(t, t + used, n - used);
        s->pend.n = n - used;
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
    if (s->think_open && (s->ch == CH_ANSWER || s->think_state == 1)) {
        think_text(s, piece, len);
    } else if (s->ch == CH_ANSWER) {
        answer_piece(s, piece, len);
    } else if (text_add(s, &s->text[s->ch], piece, len)) {
        s->emit(s->ctx, s->ch, piece, len);
    }
}

void chat_stream_finish(chat_stream *s) {
    if (s->think_open && s->pend.n) { /* what was held: white space of the answer, or reasoning */
        size_t n = s->pend.n;
        s->pend.n = 0;
        if (s->think_state == 1) {
            while (n > 0 && s->pend.p[n - 1] == '\n') n--;
            think_emit(s, s->pend.p, n);
        } else if (!s->stopped) {
            answer_piece(s, s->pend.p, n);
        }
    }
    chat_text *a = &s->text[CH_ANSWER];
    if (!s->stopped && a->n > s->emitted) {
        s->emit(s->ctx, CH_ANSWER, a->p + s->emitted, a->n - s->emitted);
        s->emitted = a->n;
    }
}

const char *chat_stream_text(const chat_stream *s, chat_channel ch) {
    return s->text[ch].p ? s->text[ch].p : "";
}
