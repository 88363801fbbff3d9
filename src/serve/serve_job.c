/* One chat or completions request on the engine: its prompts become token ids (through
 * the chat template for chat), each choice is an engine request, and the tokens that
 * come back become text through a streaming detokenizer and chat_stream, which cuts the
 * answer before a stop string (text that could start one is held back until known not
 * to) and sends the model's reasoning (between its bor/eor tokens, or the <think> blocks
 * its chat template writes) to its own channel.
 * When the request has tools and the template a tool-call format, the answer then goes
 * through the tool-call parser (tool_calls.c), which passes on the content and keeps the
 * calls; an answer that ends with calls finishes with "tool_calls". */
#include "serve/serve_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- unique numbers: response and tool-call ids, the seed of a request without one ---- */

static uint64_t id_base;
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

static void id_base_init(void) {
    if (getrandom(&id_base, sizeof id_base, 0) == (ssize_t)sizeof id_base) return;
    struct timespec t; /* no entropy source: the clock and the process make it differ */
    clock_gettime(CLOCK_REALTIME, &t);
    id_base = (uint64_t)t.tv_sec * 1000000007ull ^ (uint64_t)t.tv_nsec ^ (uint64_t)getpid() << 32;
}

uint64_t srv_unique64(srv_server *s) {
    pthread_once(&id_once, id_base_init);
    /* splitmix64's finalizer is a bijection: distinct counters give distinct numbers */
    uint64_t z = id_base + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&s->next_id, 1) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void on_content(void *ctx, const char *text, size_t len) {
    srv_choice *c = ctx;
    srv_buf_add(&c->delta[0], text, len);
}

static void on_text(void *ctx, chat_channel ch, const char *text, size_t len) {
    srv_choice *c = ctx;
    if (ch != CH_THINKING && c->tc_live) tc_feed(&c->tc, text, len);
    else srv_buf_add(&c->delta[ch == CH_THINKING ? 1 : 0], text, len);
}

#ifdef OG_SERVE_TEST_SCRIPT
/* Test builds only (the onnx-genai-scripted binary the server tests run): the
 * environment variable OG_SERVE_TEST_SCRIPT holds a JSON array of texts (or arrays of
 * token ids); the k-th choice the server submits takes the tokens of item k (mod the
 * count) in place of the ones the model samples, one for one, and ends as if at the
 * end-of-sequence token after them. choice_step takes one of them a call (test_reasoning_tools
 * counts the pieces a stream sends).
 * Everything after the sampling (detokenizer, stop strings, tool calls, the responses)
 * is the path every answer takes. */
static bool script_tokens(srv_job *j, srv_choice *c, srv_error *err) {
    static atomic_uint next;
    cJSON *a = cJSON_Parse(getenv("OG_SERVE_TEST_SCRIPT") ? getenv("OG_SERVE_TEST_SCRIPT") : "");
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    const cJSON *t = n ? cJSON_GetArrayItem(a, (int)(atomic_fetch_add(&next, 1) % (unsigned)n)) : NULL;
    bool ok = cJSON_IsString(t) || cJSON_IsArray(t);
    size_t k = 0;
    if (cJSON_IsArray(t)) {
        int n_ids = cJSON_GetArraySize(t);
        ok = (c->script = malloc(sizeof(int32_t) * (size_t)(n_ids ? n_ids : 1))) != NULL;
        const cJSON *v;
        cJSON_ArrayForEach(v, t) {
            ok = ok && cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < j->m->vocab;
            if (ok) c->script[k++] = (int32_t)v->valuedouble;
        }
    } else if (ok) {
        og_status *st = og_tokenizer_encode(j->m->tok, t->valuestring, strlen(t->valuestring), 0,
                                            &c->script, &k);
        ok = !st;
        og_status_free(st);
    }
    cJSON_Delete(a);
    c->n_script = (int)k;
    if (!ok) srv_fail(err, 500, "", "OG_SERVE_TEST_SCRIPT must be a JSON array of texts or of arrays of token ids");
    return ok;
}
#endif

static bool chat_prompt(srv_job *j, srv_error *err) {
    srv_model *m = j->m;
    size_t n = 0;
    if (srv_model_takes_audio(m)) { /* Whisper: no template; the audio and a decoder prompt */
        if (!srv_media_audio_prompt(m, &j->p->media, j->p->messages_json, &j->ids[0], &n, err))
            return false;
        j->n_ids[0] = (int)n;
        return true;
    }
    if (!m->tpl) {
        srv_fail(err, 400, "messages", "this model has no chat template (%s): use /v1/completions",
                 m->tpl_error);
        return false;
    }
    og_chat_options co = og_chat_options_default();
    co.add_generation_prompt = 1;
    co.tools_json = j->p->tools_json;
    co.extra_json = j->p->extra_json;
    char *text = NULL;
    og_status *st = og_chat_template_apply(m->tpl, j->p->messages_json, &co, &text);
    if (st) {
        srv_fail_status(err, st, "messages", "the chat template could not render the messages");
        return false;
    }
    j->think_in = m->think_open && chat_text_in_block(text, m->think_open, m->think_close);
    if (j->p->media.n_images) { /* the placeholders expanded for the images */
        bool ok = srv_media_images_prompt(m, &j->p->media, text, &j->ids[0], &n, err);
        og_free(text);
        j->n_ids[0] = (int)n;
        return ok;
    }
    st = og_tokenizer_encode(m->tok, text, strlen(text), 0, &j->ids[0], &n);
    og_free(text);
    if (st) {
        srv_fail_status(err, st, "messages", "tokenizing the rendered messages");
        return false;
    }
    j->n_ids[0] = (int)n;
    return true;
}

static bool completion_prompt(srv_job *j, int i, const cJSON *pr, srv_error *err) {
    srv_model *m = j->m;
    if (cJSON_IsString(pr)) {
        size_t n = 0;
        og_status *st = og_tokenizer_encode(m->tok, pr->valuestring, strlen(pr->valuestring), 1,
                                            &j->ids[i], &n);
        if (st) {
            srv_fail_status(err, st, "prompt", "tokenizing the prompt");
            return false;
        }
        j->n_ids[i] = (int)n;
        return true;
    }
    int n = cJSON_GetArraySize(pr);
    if (!(j->ids[i] = malloc(sizeof(int32_t) * (size_t)n))) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    int k = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, pr) j->ids[i][k++] = (int32_t)v->valuedouble;
    j->n_ids[i] = n;
    return true;
}

static bool submit(srv_job *j, srv_choice *c, srv_error *err) {
    srv_model *m = j->m;
    const int32_t *ids = j->ids[c->prompt];
    int n = j->n_ids[c->prompt];
    const char *param = j->p->chat ? "messages" : "prompt";
    if (n == 0) {
        srv_fail(err, 400, param, "the prompt is empty (it encodes to no tokens)");
        return false;
    }
    if (n >= m->context) {
        srv_fail(err, 400, param, "This model's maximum context length is %d tokens; the prompt "
                 "has %d, which leaves no room for the answer", m->context, n);
        err->code = "context_length_exceeded";
        return false;
    }
    eng_sampling s = j->p->s;
    s.max_tokens = j->p->max_tokens;
    if (s.max_tokens <= 0) { /* up to the context, or what the KV pool can hold of it */
        eng_stats es;
        eng_get_stats(m->eng, &es);
        int64_t room = es.kv_blocks_total > 0 ? es.kv_blocks_total * es.block_size : m->context;
        s.max_tokens = (int)((room < m->context ? room : m->context) - n);
        if (s.max_tokens < 1) s.max_tokens = 1; /* the engine says why it cannot run */
    }
    s.seed += (uint64_t)c->index; /* n > 1: each choice its own draw */
    s.guide = j->grammar; /* the engine takes its own reference */
    s.guide_tokens = j->guide_tokens;
    /* a reasoning model thinks first (its block free text), then answers under guidance;
     * a prompt that leaves the block open (DeepSeek-R1's templates end with it) starts
     * inside it */
    bool think_in = false;
    if (j->grammar && j->p->chat && m->bor >= 0 && m->eor >= 0) {
        s.think = true;
        s.think_open = m->bor;
        s.think_close = m->eor;
        for (int i = n - 1; i >= 0 && ids[i] != m->eor; i--) think_in |= ids[i] == m->bor;
        s.think_in = think_in;
    }
    char msg[512];
    const srv_media *md = &j->p->media; /* images or audio: with their encoder inputs */
    eng_submit_code code = eng_submit_inputs(m->eng, ids, n, md->input_names,
                                             (const og_tensor *const *)md->inputs, md->count, &s,
                                             &c->req, msg, sizeof msg);
    switch (code) {
    case ENG_SUBMIT_OK:
        break;
    case ENG_SUBMIT_INVALID:
        srv_fail(err, 400, param, "%s", msg);
        return false;
    case ENG_SUBMIT_QUEUE_FULL:
        srv_fail(err, 429, "", "The server is busy (%s): retry later", msg);
        err->retry_after = 1;
        return false;
    case ENG_SUBMIT_STOPPED:
        srv_fail(err, 503, "", "%s", msg);
        err->retry_after = 5;
        return false;
    default:
        srv_fail(err, 500, "", "%s", msg);
        return false;
    }
    /* the text continues the prompt: " and" after "Tom", as decoding both together has it */
    og_status *st = og_tokenizer_stream_create(m->tok, &c->ts);
    if (!st) st = og_tokenizer_stream_set_context(c->ts, ids, (size_t)n);
    if (st) {
        srv_fail_status(err, st, "", "creating a streaming detokenizer");
        return false;
    }
    c->n_lp_ctx = n < SRV_LP_CONTEXT ? n : SRV_LP_CONTEXT;
    memcpy(c->lp_ctx, ids + (n - c->n_lp_ctx), sizeof *ids * (size_t)c->n_lp_ctx);
    int32_t bor = j->p->chat ? m->bor : -1, eor = j->p->chat ? m->eor : -1;
    chat_stream_init(&c->cs, (const char *const *)j->p->stops, j->p->n_stops, bor, eor, -1, -1,
                     on_text, c);
    if (think_in) {
        c->cs.ch = CH_THINKING; /* the answer is what follows the block */
    } else if (j->p->chat && m->think_open && !j->grammar) {
        /* <think> blocks in the text (not under guidance: the constrained text is all answer) */
        chat_stream_think(&c->cs, m->think_open, m->think_close, j->think_in);
    }
    c->cs_live = true;
    if (j->p->parse_tools) {
        tc_init(&c->tc, m->tools_fmt, on_content, c);
        c->tc_live = true;
    }
#ifdef OG_SERVE_TEST_SCRIPT
    return script_tokens(j, c, err);
#else
    return true;
#endif
}

bool srv_job_start(srv_job *j, srv_server *s, srv_model *m, srv_params *p, int fd, srv_error *err) {
    memset(j, 0, sizeof *j);
    j->srv = s;
    j->m = m;
    j->p = p;
    j->fd = fd;
    j->created = (long)time(NULL);
    snprintf(j->id, sizeof j->id, "%s-%016llx", p->chat ? "chatcmpl" : "cmpl",
             (unsigned long long)srv_unique64(s));
    j->n_prompts = p->chat ? 1 : cJSON_GetArraySize(p->prompts);
    j->ids = calloc((size_t)j->n_prompts, sizeof *j->ids);
    j->n_ids = calloc((size_t)j->n_prompts, sizeof *j->n_ids);
    j->n_choices = j->n_prompts * p->n;
    j->c = calloc((size_t)j->n_choices, sizeof *j->c);
    if (!j->ids || !j->n_ids || !j->c) {
        srv_fail(err, 500, "", "out of memory");
        srv_job_free(j);
        return false;
    }
    /* guidance first: an invalid schema is refused before anything is tokenized or run */
    bool ok = srv_guide_compile(m, p, &j->grammar, &j->guide_tokens, err);
    if (ok && !p->chat && srv_model_takes_audio(m)) { /* its decoder needs the encoder's input */
        srv_fail(err, 400, "prompt", "model '%.100s' is a Whisper package: it takes audio, as an "
                 "input_audio part of a chat request", m->name);
        ok = false;
    }
    if (ok && p->chat) {
        ok = chat_prompt(j, err);
    } else if (ok) {
        int i = 0;
        const cJSON *pr;
        cJSON_ArrayForEach(pr, p->prompts) if (ok) ok = completion_prompt(j, i++, pr, err);
    }
    for (int i = 0; ok && i < j->n_prompts; i++) j->prompt_tokens += j->n_ids[i];
    for (int i = 0; ok && i < j->n_choices; i++) {
        j->c[i].index = i;
        j->c[i].prompt = i / p->n;
        ok = submit(j, &j->c[i], err);
        if (ok) j->c[i].slot = srv_slot_take(s, j, i, j->n_ids[j->c[i].prompt]);
    }
    if (!ok) srv_job_free(j);
    return ok;
}

/* The choice leaves its slot, which keeps the tokens its sequence ran: the prompt and
 * the ids the engine gave (/slots/{id}?action=save). */
static void give_slot(srv_job *j, srv_choice *c) {
    if (!c->slot) return;
    int n = c->req ? eng_request_wait(c->req, 0, 0) : 0;
    int32_t *ids = n > 0 ? malloc(sizeof *ids * (size_t)n) : NULL;
    eng_token t[32];
    if (!ids) n = 0;
    for (int at = 0; at < n; at += 32) {
        int k = n - at < 32 ? n - at : 32;
        eng_request_tokens(c->req, at, k, t);
        for (int i = 0; i < k; i++) ids[at + i] = t[i].id;
    }
    srv_slot_give(j->srv, j->m, c->slot, j->ids[c->prompt], j->n_ids[c->prompt], ids, n);
    free(ids);
}

static bool keep_token(srv_choice *c, const eng_token *t) {
    if (c->n_toks == c->cap_toks) {
        int cap = c->cap_toks ? 2 * c->cap_toks : 16;
        eng_token *p = realloc(c->toks, sizeof *p * (size_t)cap);
        if (p) c->toks = p;
        size_t *q = p ? realloc(c->tok_chars, sizeof *q * (size_t)cap) : NULL;
        if (!q) return false;
        c->tok_chars = q;
        c->cap_toks = cap;
    }
    c->tok_chars[c->n_toks] = c->chars;
    c->toks[c->n_toks++] = *t;
    return true;
}

/* Characters (code points) in UTF-8 text: its bytes that do not continue a character. */
static size_t utf8_chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static void job_error(srv_job *j, int status, const char *msg) {
    if (j->failed) return;
    j->failed = true;
    srv_fail(&j->err, status, "", "%s", msg);
}

/* The answer has ended (finish: "stop" or "length"): the tool calls it holds, if any,
 * become the choice's (each with its id), and its finish reason "tool_calls". */
static void choice_end(srv_job *j, srv_choice *c, const char *finish) {
    c->finish = finish;
    if (!c->tc_live) return;
    int n = tc_finish(&c->tc);
    if (c->tc.oom) {
        job_error(j, 500, "out of memory");
        return;
    }
    if (n == 0) return;
    c->n_calls = j->p->parallel_tool_calls ? n : 1;
    if (!srv_call_id(j, c, c->n_calls - 1)) {
        job_error(j, 500, "out of memory");
        return;
    }
    c->finish = "tool_calls";
}

const char *srv_call_id(srv_job *j, srv_choice *c, int k) {
    if (k >= c->n_call_ids) {
        char (*ids)[32] = realloc(c->call_ids, sizeof *ids * (size_t)(k + 1));
        if (!ids) return NULL;
        c->call_ids = ids;
        for (int i = c->n_call_ids; i <= k; i++) {
            memset(ids[i], 0, sizeof ids[i]);
            uint64_t h = srv_unique64(j->srv);
            if (j->m->tools_fmt == TC_MISTRAL) { /* its template wants 9 letters and digits */
                static const char an[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
                for (int d = 0; d < 9; d++, h /= 62) ids[i][d] = an[h % 62];
            } else {
                snprintf(ids[i], sizeof ids[i], "call_%016llx%02x", (unsigned long long)h, (unsigned)(i & 0xff));
            }
        }
        c->n_call_ids = k + 1;
    }
    return c->call_ids[k];
}

bool srv_call_deltas(srv_job *j, srv_choice *c, srv_call_fn fn, void *ctx) {
    const tc_parser *tp = &c->tc;
    bool end = c->finish != NULL;
    int n = end ? c->n_calls : tp->n_partial;
    if (!j->p->parallel_tool_calls && n > 1) n = 1;
    if (n > c->calls_begun) {
        size_t *q = realloc(c->args_sent, sizeof *q * (size_t)n);
        if (q) c->args_sent = q;
        if (!q || !srv_call_id(j, c, n - 1)) return false;
    }
    for (int k = c->calls_ended; k < n; k++) {
        const char *name = end ? tp->calls[k].name : tp->partial[k].name;
        if (!name) break;
        if (k > c->calls_ended) { /* call k-1 is whole: it ends as this one begins */
            const char *prev = end ? tp->calls[k - 1].arguments : tp->partial[k - 1].args.p;
            fn(ctx, c, k - 1, SRV_CALL_END, prev ? prev : "", end ? strlen(prev) : tp->partial[k - 1].args.n);
            c->calls_ended = k;
        }
        const char *args = end ? tp->calls[k].arguments : tp->partial[k].args.p;
        size_t len = end ? strlen(args) : tp->partial[k].args.n;
        if (k >= c->calls_begun) {
            fn(ctx, c, k, SRV_CALL_BEGIN, name, strlen(name));
            c->calls_begun = k + 1;
            c->args_sent[k] = 0;
        }
        if (len > c->args_sent[k]) {
            fn(ctx, c, k, SRV_CALL_ARGS, args + c->args_sent[k], len - c->args_sent[k]);
            c->args_sent[k] = len;
        }
        /* the next call waits until this one's arguments are whole (streams send calls
         * one after the other) */
        if (!end && !tp->partial[k].args_whole) break;
    }
    if (end && c->calls_ended < n && c->calls_begun == n) {
        fn(ctx, c, n - 1, SRV_CALL_END, tp->calls[n - 1].arguments, strlen(tp->calls[n - 1].arguments));
        c->calls_ended = n;
    }
    return true;
}

/* A marker of the tool-call format that the detokenizer dropped (a special token): its
 * text (to go after the token's piece[0, len)), or NULL. */
static const char *dropped_marker(srv_job *j, int32_t id, const char *piece, size_t len) {
    const char *const *mk = tc_format_markers(j->m->tools_fmt);
    for (int i = 0; i < TC_MAX_MARKERS && mk[i]; i++) {
        if (id != j->m->tool_marker_ids[i]) continue;
        size_t k = strlen(mk[i]);
        for (size_t at = 0; at + k <= len; at++)
            if (!memcmp(piece + at, mk[i], k)) return NULL;
        return mk[i];
    }
    return NULL;
}

/* Takes the choice's new tokens; true when it made progress (tokens or its end). */
static bool choice_step(srv_job *j, srv_choice *c) {
    if (c->finish) return false;
    const char *why = "";
    eng_finish f = eng_request_finish(c->req, &why); /* before counting: then every token is in */
    int n = eng_request_wait(c->req, c->have, 0);
    bool progressed = false;
    eng_token t[32];
    int take = n;
#ifdef OG_SERVE_TEST_SCRIPT
    /* one token a call, as from a model slower than its reader: a stream then sends each
     * token's text in its own chunk, whatever the machine's load */
    if (take > c->have + 1) take = c->have + 1;
#endif
    while (c->have < take && !c->finish) {
        int k = take - c->have < 32 ? take - c->have : 32;
        eng_request_tokens(c->req, c->have, k, t);
        for (int i = 0; i < k && !c->finish; i++) {
#ifdef OG_SERVE_TEST_SCRIPT
            if (c->have >= c->n_script) { /* the script's end: the end-of-sequence token */
                const char *piece = "";
                size_t len = 0;
                og_status *fs = og_tokenizer_stream_flush_len(c->ts, &piece, &len);
                if (fs) len = 0;
                og_status_free(fs);
                chat_stream_token(&c->cs, -1, piece, len);
                chat_stream_finish(&c->cs);
                eng_request_cancel(c->req);
                choice_end(j, c, "stop");
                progressed = true;
                break;
            }
            t[i].id = c->script[c->have];
#endif
            c->have++;
            j->completion_tokens++;
            progressed = true;
            if (j->p->logprobs >= 0 && !keep_token(c, &t[i])) {
                job_error(j, 500, "out of memory");
                c->finish = "error";
                break;
            }
            const char *piece = "";
            size_t len = 0;
            og_status *st = og_tokenizer_stream_decode_len(c->ts, t[i].id, &piece, &len);
            if (st) {
                job_error(j, 500, og_status_message(st));
                og_status_free(st);
                c->finish = "error";
                break;
            }
            c->chars += utf8_chars(piece, len);
            const char *mk = c->tc_live ? dropped_marker(j, t[i].id, piece, len) : NULL;
            chat_stream_token(&c->cs, t[i].id, piece, len);
            if (mk) chat_stream_token(&c->cs, -1, mk, strlen(mk));
            if (c->cs.stopped) {
                eng_request_cancel(c->req);
                choice_end(j, c, "stop");
            }
        }
    }
    if (!c->finish && f != ENG_RUNNING && c->have >= n) {
        progressed = true;
        if (f == ENG_FINISH_ERROR) {
            job_error(j, 500, why);
            c->finish = "error";
        } else if (f == ENG_FINISH_CANCELLED) {
            job_error(j, 503, "the request was cancelled: the server is shutting down");
            c->finish = "error";
        } else {
            const char *piece = "";
            size_t len = 0;
            og_status *st = og_tokenizer_stream_flush_len(c->ts, &piece, &len);
            if (st) {
                job_error(j, 500, og_status_message(st));
                og_status_free(st);
            } else {
                chat_stream_token(&c->cs, -1, piece, len);
            }
            chat_stream_finish(&c->cs);
            choice_end(j, c, f == ENG_FINISH_STOP ? "stop" : "length");
        }
    }
    if (c->finish && c->cs.oom) job_error(j, 500, "out of memory");
    if (c->finish && c->req && c->index % j->p->n == 0)
        j->cached_tokens += eng_request_cached_tokens(c->req);
    if (progressed && c->have && !j->t_first) j->t_first = srv_now();
    if (progressed && !c->slot && !c->finish) /* submitted while every slot was taken */
        c->slot = srv_slot_take(j->srv, j, c->index, j->n_ids[c->prompt]);
    if (progressed) srv_slot_progress(j->srv, j->m, c->slot, c->have);
    if (c->finish) { /* its place is free for the next request (/slots) */
        give_slot(j, c);
        c->slot = 0;
    }
    return progressed;
}

bool srv_job_pump(srv_job *j, double timeout_s) {
    for (int pass = 0; pass < 2; pass++) {
        bool progressed = false, done = true;
        for (int i = 0; i < j->n_choices; i++) {
            progressed |= choice_step(j, &j->c[i]);
            done &= j->c[i].finish != NULL;
        }
        if (done || progressed || timeout_s <= 0 || pass == 1) return done;
        for (int i = 0; i < j->n_choices; i++)
            if (!j->c[i].finish) {
                eng_request_wait(j->c[i].req, j->c[i].have, timeout_s);
                break;
            }
    }
    return false;
}

bool srv_client_gone(srv_job *j) {
    if (atomic_load(&j->srv->stopping)) return true;
    if (j->fd < 0) return false;
    char b;
    ssize_t r = recv(j->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0) return true;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    return false;
}

void srv_job_free(srv_job *j) {
    for (int i = 0; j->c && i < j->n_choices; i++) {
        srv_choice *c = &j->c[i];
        give_slot(j, c);
        if (c->req) {
            eng_request_cancel(c->req); /* a no-op once it has finished */
            eng_request_release(c->req);
        }
        og_tokenizer_stream_free(c->ts);
        if (c->cs_live) chat_stream_free(&c->cs);
        srv_buf_free(&c->delta[0]);
        srv_buf_free(&c->delta[1]);
        free(c->toks);
        free(c->tok_chars);
        if (c->tc_live) tc_free(&c->tc);
        free(c->call_ids);
        free(c->args_sent);
        og_free(c->script);
    }
    for (int i = 0; j->ids && i < j->n_prompts; i++) og_free(j->ids[i]);
    free(j->ids);
    free(j->n_ids);
    free(j->c);
    guide_grammar_unref(j->grammar);
    j->grammar = NULL;
    j->c = NULL;
    j->ids = NULL;
    j->n_ids = NULL;
}
