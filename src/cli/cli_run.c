/* onnx-genai run DIR            a terminal chat with the model's own chat template
 * onnx-genai generate --chat    one turn of it (-p TEXT or standard input), --json too
 *
 * The conversation is rendered with the package's chat template each turn, and the KV
 * cache is kept between turns: the new prompt's tokens are compared with the tokens the
 * generator already holds, the generator is rewound to where they part (usually the end
 * of the last answer), and only the rest is run. Stop strings cut the answer before
 * them; reasoning (between genai_config's bor/eor tokens, or in the <think> blocks of a
 * template that writes them, as serve splits it) and tool-call tokens (bot/eot) go to
 * their own channels: shown apart from the answer, and in --json's "thinking"
 * (--reasoning-format none keeps the answer's text as the model wrote it;
 * --hide-reasoning prints none). Ctrl-C stops the answer being generated, not the
 * program. */
#include "serve/serve_buf.h"
#include "serve/tool_calls.h"
#include "chat/chat.h"
#include "chat/chat_stream.h"
#include "cli/cli.h"
#include "genai/vision.h"

#include "base/status.h"
#include "onnx_genai.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_STOPS = 16 };

/* A message's image, as Qwen's chat templates write an image content part. */

static const char run_usage[] =
    "usage: onnx-genai run [-m] DIR [options]\n"
    "       onnx-genai generate --chat [-m] DIR [-p TEXT] [options]\n"
    "  A chat with the package's chat template. On a terminal: type a message, Enter to\n"
    "  send; /clear forgets the conversation, /system TEXT sets the system prompt, /image\n"
    "  FILE adds an image to the next message, /exit\n"
    "  (or Ctrl-D) leaves; Ctrl-C stops the answer being written. Not on a terminal: each\n"
    "  line of standard input is a turn, its answer a line of output (/exit and the other\n"
    "  commands work there too); generate --chat reads all of it as one prompt.\n"
    "  -p, --prompt TEXT          (generate --chat) the user message (default: stdin)\n"
    "  --system TEXT              system prompt\n"
    "  --image FILE               a PNG or JPEG with the first message (Qwen vision-language\n"
    "                             packages; repeat for more); /image FILE in the chat adds\n"
    "                             one to the next message\n"
    "  --stop TEXT                stop the answer before TEXT (repeat for more)\n"
    "  --max-new-tokens N         at most N tokens per answer\n"
    "  --max-length N             total tokens of the conversation (default: the package's)\n"
    "  --extra JSON               more template variables, e.g. '{\"enable_thinking\": false}'\n"
    "  --template NAME            one of the package's named chat templates\n"
    "  --template-file FILE       a chat template file instead of the package's\n"
    "  --reasoning-format F       auto (default): the model's reasoning (bor/eor tokens, or\n"
    "                             the template's <think> blocks) apart from the answer,\n"
    "                             dimmed (on a terminal) or on stderr after '[thinking]';\n"
    "                             none: the answer as the model wrote it, blocks and all\n"
    "  --hide-reasoning           print no reasoning (--json still has it in \"thinking\")\n"
    "  --do-sample, --temperature F, --top-k N, --top-p F, --seed N, --repetition-penalty F\n"
    "  --threads N                compute threads (default: all cores)\n"
    "%s"
    "%s"
    "                             (each answer is constrained)\n"
    "%s"
    "%s"
    "  --no-cache-reuse           run the whole conversation again each turn\n"
    "  --verbose                  after each answer: prompt tokens (from the cache /\n"
    "                             prefilled), time to first token, tokens/s\n"
    "  --json                     print one JSON object (generate --chat; run with piped\n"
    "                             input: one a turn, on its line)\n";

typedef struct run_opts {
    const char *model, *prompt, *system, *extra, *tpl_name, *tpl_file;
    const char *images[CLI_MAX_IMAGES]; /* --image: with the first message */
    int n_images;
    const char *stops[MAX_STOPS];
    int n_stops;
    int max_new, max_length, threads;
    bool verbose, json, no_reuse, generate_mode;
    bool reasoning_none, hide_reasoning;
    cli_backend be;
    cli_guidance guide;
    cli_speculative spec;
    cli_adapter adapter;
    /* search options given on the command line */
    bool do_sample, set_temp, set_topk, set_topp, set_seed, set_rep;
    float temperature, top_p, repetition_penalty;
    int top_k;
    long seed;
} run_opts;

/* The signal handler's flag: Ctrl-C ends the answer being generated. A global because a
 * signal handler can reach nothing else. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool num_arg(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int parse_run_args(int argc, char **argv, run_opts *o) {
    cli_backend_init(&o->be);
    cli_speculative_init(&o->spec);
    for (int i = 1; i < argc; i++) {
        int took = cli_backend_arg(argc, argv, &i, &o->be);
        if (!took) took = cli_guidance_arg(argc, argv, &i, &o->guide);
        if (!took) took = cli_speculative_arg(argc, argv, &i, &o->spec);
        if (!took) took = cli_adapter_arg(argc, argv, &i, &o->adapter);
        if (took) {
            if (took < 0) return -took;
            continue;
        }
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
#define VALUE()                                                                          \
    do {                                                                                 \
        if (!v) return cli_fail("%s needs a value (see 'onnx-genai run --help')", a);    \
        i++;                                                                             \
    } while (0)
#define NUMBER(lo, hi)                                                                   \
    do {                                                                                 \
        VALUE();                                                                         \
        if (!num_arg(v, lo, hi, &x))                                                     \
            return cli_fail("%s: '%s' is not a number in [%g, %g]", a, v, (double)(lo), (double)(hi)); \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf(run_usage, cli_backend_usage, cli_guidance_usage, cli_speculative_usage,
                   cli_adapter_usage);
            exit(0);
        } else if (!strcmp(a, "--chat")) {
            continue;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            VALUE();
            o->model = v;
        } else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && o->generate_mode) {
            VALUE();
            o->prompt = v;
        } else if (!strcmp(a, "--system")) {
            VALUE();
            o->system = v;
        } else if (!strcmp(a, "--image")) {
            VALUE();
            if (o->n_images == CLI_MAX_IMAGES)
                return cli_fail("--image: at most %d images", CLI_MAX_IMAGES);
            o->images[o->n_images++] = v;
        } else if (!strcmp(a, "--stop")) {
            VALUE();
            if (o->n_stops == MAX_STOPS) return cli_fail("--stop: at most %d stop strings", MAX_STOPS);
            if (!*v) return cli_fail("--stop: the stop string is empty");
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "--max-new-tokens")) {
            NUMBER(1, 1 << 30);
            o->max_new = (int)x;
        } else if (!strcmp(a, "--max-length")) {
            NUMBER(1, 1 << 30);
            o->max_length = (int)x;
        } else if (!strcmp(a, "--extra")) {
            VALUE();
            o->extra = v;
        } else if (!strcmp(a, "--template")) {
            VALUE();
            o->tpl_name = v;
        } else if (!strcmp(a, "--template-file")) {
            VALUE();
            o->tpl_file = v;
        } else if (!strcmp(a, "--reasoning-format")) {
            VALUE();
            if (strcmp(v, "auto") && strcmp(v, "none"))
                return cli_fail("--reasoning-format: '%s' is not auto or none", v);
            o->reasoning_none = !strcmp(v, "none");
        } else if (!strcmp(a, "--hide-reasoning")) {
            o->hide_reasoning = true;
        } else if (!strcmp(a, "--threads")) {
            NUMBER(0, 4096);
            o->threads = (int)x;
        } else if (!strcmp(a, "--do-sample")) {
            o->do_sample = true;
        } else if (!strcmp(a, "--temperature")) {
            NUMBER(0, 1e6);
            o->temperature = (float)x;
            o->set_temp = true;
        } else if (!strcmp(a, "--top-k")) {
            NUMBER(0, 1 << 30);
            o->top_k = (int)x;
            o->set_topk = true;
        } else if (!strcmp(a, "--top-p")) {
            NUMBER(0, 1);
            o->top_p = (float)x;
            o->set_topp = true;
        } else if (!strcmp(a, "--seed")) {
            NUMBER(0, 2147483647);
            o->seed = (long)x;
            o->set_seed = true;
        } else if (!strcmp(a, "--repetition-penalty")) {
            NUMBER(0, 1e6);
            o->repetition_penalty = (float)x;
            o->set_rep = true;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--no-cache-reuse")) {
            o->no_reuse = true;
        } else if (a[0] != '-' && !o->model) {
            o->model = a;
        } else {
            return cli_fail("%s: unknown argument '%s' (see 'onnx-genai run --help')",
                            o->generate_mode ? "generate --chat" : "run", a);
        }
#undef NUMBER
#undef VALUE
    }
    if (!o->model) return cli_fail("run: no model folder given (see 'onnx-genai run --help')");
    if (o->json && !o->generate_mode && isatty(STDIN_FILENO))
        return cli_fail("run: --json answers piped input (a terminal chat prints text)");
    return cli_backend_check(&o->be);
}

/* ---- a chat session ------------------------------------------------------------------ */

typedef struct chat_session {
    const run_opts *o;
    og_model *model;
    og_tokenizer *tok;
    og_chat_template *tpl;
    og_generator *gen;
    cli_speculative spec; /* the options', with the draft model once open */
    cli_adapter adapter;  /* the options', with the adapters once loaded */
    cJSON *history; /* user and assistant messages */
    char *system;
    size_t in_cache; /* tokens whose keys/values the generator holds */
    int32_t bor, eor, bot, eot;
    const char *think_open, *think_close; /* the template's <think> markers (NULL: none) */
    bool tty_out, tty_err;
    chat_channel shown; /* the channel the last emitted text belonged to */
    int turn;
    /* The conversation's images in order (each message holds a placeholder per image it
     * brought), of which the last n_pending go with the next message. */
    char *images[CLI_MAX_IMAGES];
    int n_images, n_pending;
} chat_session;

typedef struct turn_result {
    char *answer, *thinking, *tools; /* NUL-terminated, and may hold NUL bytes: */
    size_t answer_n, thinking_n, tools_n; /* their lengths */
    int32_t *ids; /* the generated token ids */
    const char *stop_reason; /* "eos", "stop_string", "max_new_tokens", "max_length", "interrupted" */
    size_t prompt_tokens, reused, prefilled;
    int generated;
    double ttft, prefill_s, decode_s;
} turn_result;

static void turn_result_free(turn_result *r) {
    free(r->ids);
    free(r->answer);
    free(r->thinking);
    free(r->tools);
    memset(r, 0, sizeof *r);
}

/* Where each channel's text goes: the answer to stdout; reasoning and tool calls dimmed
 * / coloured on a terminal, or to stderr with a label when stdout is a pipe. */
static void emit(void *ctx, chat_channel ch, const char *text, size_t len) {
    chat_session *s = ctx;
    if (s->o->json || (ch == CH_THINKING && s->o->hide_reasoning)) return;
    if (ch != s->shown) {
        if (s->tty_out) {
            fputs(ch == CH_THINKING ? "\033[2m" : ch == CH_TOOL ? "\033[36m[tool call] " : "\033[0m", stdout);
        } else {
            if (s->shown != CH_ANSWER) fputc('\n', stderr);
            if (ch != CH_ANSWER) fputs(ch == CH_THINKING ? "[thinking] " : "[tool call] ", stderr);
        }
        s->shown = ch;
    }
    FILE *f = (ch == CH_ANSWER || s->tty_out) ? stdout : stderr;
    fwrite(text, 1, len, f);
    fflush(f);
}

static void end_channels(chat_session *s) {
    if (s->shown != CH_ANSWER) {
        if (s->tty_out) fputs("\033[0m", stdout);
        else fputc('\n', stderr);
        s->shown = CH_ANSWER;
    }
}

/* Adds an image for the next message (the file is read when the message is sent). */
static og_status *add_image(chat_session *s, const char *path) {
    if (s->n_images == CLI_MAX_IMAGES)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "at most %d images in a conversation",
                         CLI_MAX_IMAGES);
    if (!(s->images[s->n_images] = strdup(path))) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    s->n_images++;
    s->n_pending++;
    return NULL;
}

/* Forgets the conversation's last n images. */
static void drop_images(chat_session *s, int n) {
    for (; n > 0 && s->n_images > 0; n--) free(s->images[--s->n_images]);
}

static og_status *chat_session_open(chat_session *s, const run_opts *o) {
    memset(s, 0, sizeof *s);
    s->o = o;
    s->tty_out = isatty(STDOUT_FILENO);
    s->tty_err = isatty(STDERR_FILENO);
    og_model_options mo = og_model_options_default();
    mo.num_threads = o->threads;
    cli_backend_model(&o->be, &mo);
    OG_TRY(og_model_open(o->model, &mo, &s->model));
    s->spec = o->spec;
    OG_TRY(cli_speculative_open(&s->spec, &mo));
    s->adapter = o->adapter;
    OG_TRY(cli_adapter_open(&s->adapter, s->model));
    for (size_t i = 0; i < og_model_warning_count(s->model); i++)
        fprintf(stderr, "onnx-genai: warning: %s\n", og_model_warning(s->model, i));
    OG_TRY(og_tokenizer_create(s->model, &s->tok));
    if (o->tpl_file) {
        OG_TRY(og_chat_template_open(o->tpl_file, &s->tpl));
    } else {
        og_status *st = og_chat_template_create(s->model, &s->tpl);
        if (st && og_status_code(st) == OG_ERR_NOT_FOUND) {
            og_status *r = og_errorf(OG_ERR_NOT_FOUND, "%s (give one with --template-file FILE.jinja)",
                                     og_status_message(st));
            og_status_free(st);
            return r;
        }
        OG_TRY(st);
    }
    og_generator_params p = og_generator_params_default(s->model);
    p.all_logits = 0; /* only the logits tokens are chosen from */
    if (o->max_length) p.max_length = o->max_length;
    if (o->do_sample) p.do_sample = 1;
    if (o->set_temp) p.temperature = o->temperature;
    if (o->set_topk) p.top_k = o->top_k;
    if (o->set_topp) p.top_p = o->top_p;
    if (o->set_seed) p.random_seed = o->seed;
    if (o->set_rep) p.repetition_penalty = o->repetition_penalty;
    p.batch_size = 1;
    p.num_beams = 1;
    p.num_return_sequences = 1;
    OG_TRY(cli_guidance_set(&o->guide, &p));
    cli_speculative_set(&s->spec, &p);
    OG_TRY(og_generator_create(s->model, &p, &s->gen));
    OG_TRY(cli_adapter_activate(&s->adapter, s->gen));
    for (int i = 0; i < o->n_images; i++) OG_TRY(add_image(s, o->images[i]));
    s->history = cJSON_CreateArray();
    if (!s->history) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    if (o->system && !(s->system = strdup(o->system))) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    s->bor = og_model_token_id(s->model, "bor_token_id");
    s->eor = og_model_token_id(s->model, "eor_token_id");
    s->bot = og_model_token_id(s->model, "bot_token_id");
    s->eot = og_model_token_id(s->model, "eot_token_id");
    if (o->reasoning_none) {
        s->bor = s->eor = -1;
    } else if (!o->guide.type) {
        /* no bor/eor tokens, but a template that writes <think> blocks: split as serve
         * does (not under guidance, whose constrained answer is all answer, as serve's) */
        s->think_open = chat_think_markers(chat_template_source(s->tpl), s->bor >= 0 && s->eor >= 0,
                                           &s->think_close);
    }
    return NULL;
}

static void chat_session_close(chat_session *s) {
    drop_images(s, s->n_images);
    cJSON_Delete(s->history);
    free(s->system);
    og_generator_destroy(s->gen);
    og_chat_template_free(s->tpl);
    og_tokenizer_free(s->tok);
    cli_adapter_close(&s->adapter);
    cli_speculative_close(&s->spec);
    og_model_close(s->model);
}

static bool add_message(cJSON *arr, const char *role, const char *content, const char *thinking) {
    cJSON *m = cJSON_CreateObject();
    if (!m) return false;
    cJSON_AddItemToArray(arr, m);
    bool ok = cJSON_AddStringToObject(m, "role", role) && cJSON_AddStringToObject(m, "content", content);
    if (ok && thinking && *thinking) ok = cJSON_AddStringToObject(m, "reasoning_content", thinking) != NULL;
    return ok;
}

/* The conversation as the template sees it: the system prompt, then the history. */
static og_status *render(chat_session *s, char **text) {
    cJSON *msgs = cJSON_CreateArray();
    if (!msgs) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    bool ok = !s->system || add_message(msgs, "system", s->system, NULL);
    const cJSON *m;
    cJSON_ArrayForEach(m, s->history) {
        cJSON *c = ok ? cJSON_Duplicate(m, 1) : NULL;
        ok = c != NULL;
        if (c) cJSON_AddItemToArray(msgs, c);
    }
    char *json = ok ? cJSON_PrintUnformatted(msgs) : NULL;
    cJSON_Delete(msgs);
    if (!json) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    og_chat_options co = og_chat_options_default();
    co.add_generation_prompt = 1;
    co.extra_json = s->o->extra;
    co.template_name = s->o->tpl_name;
    og_status *st = og_chat_template_apply(s->tpl, json, &co, text);
    free(json);
    return st;
}

/* Makes the generator hold ids[0..n): keeps the longest common prefix of what it holds
 * (its keys/values stay in the cache) and runs the rest. */
static og_status *sync_prompt(chat_session *s, const int32_t *ids, size_t n, turn_result *r) {
    const int32_t *cur;
    size_t len;
    OG_TRY(og_generator_get_sequence(s->gen, 0, &cur, &len));
    size_t p = 0;
    if (!s->o->no_reuse)
        while (p < len && p < n && cur[p] == ids[p]) p++;
    if (p == n) p = n - 1; /* at least one token must run, for the next token's logits */
    if (p < len) {
        OG_TRY(og_generator_rewind_to(s->gen, p));
        size_t kept = p ? p - 1 : 0; /* a rewind runs the last kept token again */
        if (s->in_cache > kept) s->in_cache = kept;
    }
    r->prompt_tokens = n;
    r->reused = s->in_cache;
    r->prefilled = n - s->in_cache;
    double t0 = now_s();
    OG_TRY(og_generator_append_tokens(s->gen, ids + p, n - p));
    r->prefill_s = now_s() - t0;
    s->in_cache = n;
    return NULL;
}

/* A conversation with images: the whole prompt and every image again (the generator takes
 * images with a prompt from its start), the placeholders of the rendered text expanded. */
static og_status *sync_images(chat_session *s, const char *prompt, int32_t **ids, size_t *n,
                              turn_result *r) {
    og_named_tensors *nt = NULL;
    OG_TRY(cli_images_prepare(s->model, s->tok, (const char *const *)s->images, s->n_images,
                              prompt, 0, ids, n, &nt));
    og_status *st = og_generator_rewind_to(s->gen, 0);
    r->prompt_tokens = *n;
    r->reused = 0;
    r->prefilled = *n;
    double t0 = now_s();
    if (!st) st = cli_images_set(s->gen, *ids, *n, nt);
    r->prefill_s = now_s() - t0;
    s->in_cache = st ? 0 : *n;
    og_named_tensors_free(nt);
    return st;
}

/* A channel's text, whole (a NUL byte in it does not end it). */
static og_status *dup_text(const chat_stream *cs, chat_channel ch, char **out, size_t *n) {
    *n = cs->text[ch].n;
    *out = malloc(*n + 1);
    if (!*out) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(*out, chat_stream_text(cs, ch), *n + 1);
    return NULL;
}

/* One turn: the user's message, the answer streamed. On success the history holds both. */
static og_status *run_turn(chat_session *s, const char *user, turn_result *r) {
    memset(r, 0, sizeof *r);
    double t0 = now_s();
    /* the message's images as the model's placeholders in front of its text (what Qwen's
     * and Gemma 3's templates write for an image part) */
    int added = s->n_pending;
    s->n_pending = 0;
    const char *ph = gen_vision_placeholder(s->model);
    size_t ul = strlen(user), pl = strlen(ph);
    char *content = malloc(ul + (size_t)added * pl + 1);
    if (!content) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < added; i++) memcpy(content + (size_t)i * pl, ph, pl);
    memcpy(content + (size_t)added * pl, user, ul + 1);
    bool added_msg = add_message(s->history, "user", content, NULL);
    free(content);
    if (!added_msg) {
        drop_images(s, added);
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    }
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    og_tokenizer_stream *ts = NULL;
    chat_stream cs;
    chat_stream_init(&cs, s->o->stops, s->o->n_stops, s->bor, s->eor, s->bot, s->eot, emit, s);
    og_status *st = render(s, &prompt);
    if (!st && s->think_open) /* a prompt that ends inside a block (DeepSeek-R1's) starts in it */
        chat_stream_think(&cs, s->think_open, s->think_close,
                          chat_text_in_block(prompt, s->think_open, s->think_close));
    if (!st && s->n_images) {
        st = sync_images(s, prompt, &ids, &n, r);
    } else {
        if (!st) st = og_tokenizer_encode(s->tok, prompt, strlen(prompt), 0, &ids, &n);
        if (!st && n == 0) st = og_errorf(OG_ERR_INVALID_ARGUMENT, "the rendered prompt is empty");
        if (!st) st = sync_prompt(s, ids, n, r);
    }
    if (!st) st = og_tokenizer_stream_create(s->tok, &ts);
    /* the answer continues the rendered prompt (its assistant header) */
    if (!st) st = og_tokenizer_stream_set_context(ts, ids, n);
    double t_first = 0;
    while (!st) {
        if (cs.stopped) {
            r->stop_reason = "stop_string";
            break;
        }
        if (interrupted) {
            r->stop_reason = "interrupted";
            break;
        }
        if (s->o->max_new && r->generated >= s->o->max_new) {
            r->stop_reason = "max_new_tokens";
            break;
        }
        if (og_generator_is_done(s->gen)) {
            r->stop_reason = "max_length";
            break;
        }
        const int32_t *seq;
        size_t before, len;
        if ((st = og_generator_get_sequence(s->gen, 0, &seq, &before))) break;
        if ((st = og_generator_generate_next_token(s->gen))) break;
        s->in_cache = before; /* every token held before the step has now been run */
        if ((st = og_generator_get_sequence(s->gen, 0, &seq, &len))) break;
        if (len == before) { /* an EOS id: not part of the sequence */
            r->stop_reason = "eos";
            break;
        }
        if (r->generated == 0) {
            t_first = now_s();
            r->ttft = t_first - t0;
        }
        int32_t *grown = realloc(r->ids, sizeof *grown * ((size_t)r->generated + 1));
        if (!grown) {
            st = og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        r->ids = grown;
        r->ids[r->generated++] = seq[len - 1];
        const char *piece;
        size_t piece_n; /* a piece may hold NUL bytes */
        if ((st = og_tokenizer_stream_decode_len(ts, seq[len - 1], &piece, &piece_n))) break;
        chat_stream_token(&cs, seq[len - 1], piece, piece_n);
    }
    if (!st) {
        const char *piece;
        size_t piece_n;
        st = og_tokenizer_stream_flush_len(ts, &piece, &piece_n);
        if (!st) chat_stream_token(&cs, -1, piece, piece_n);
        chat_stream_finish(&cs);
        if (cs.oom) st = og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    }
    end_channels(s);
    r->decode_s = r->generated > 1 ? now_s() - t_first : 0;
    if (!st) st = dup_text(&cs, CH_ANSWER, &r->answer, &r->answer_n);
    if (!st) st = dup_text(&cs, CH_THINKING, &r->thinking, &r->thinking_n);
    if (!st) st = dup_text(&cs, CH_TOOL, &r->tools, &r->tools_n);
    /* (the history, a cJSON document the template reads, holds text up to a NUL byte) */
    if (!st && !add_message(s->history, "assistant", r->answer, r->thinking))
        st = og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory");
    if (st) { /* the turn did not happen: forget its messages, images (and its results) */
        turn_result_free(r);
        drop_images(s, added);
        int k = cJSON_GetArraySize(s->history);
        while (k > 0) {
            cJSON *last = cJSON_GetArrayItem(s->history, k - 1);
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
            cJSON_DeleteItemFromArray(s->history, --k);
            if (cJSON_IsString(role) && !strcmp(role->valuestring, "user")) break;
        }
    }
    s->turn++;
    chat_stream_free(&cs);
    og_tokenizer_stream_free(ts);
    og_free(ids);
    og_free(prompt);
    return st;
}

static void print_stats(const chat_session *s, const turn_result *r) {
    fflush(stdout);
    double tps = r->decode_s > 0 ? (r->generated - 1) / r->decode_s : 0;
    fprintf(stderr, "[turn %d: prompt %zu tokens (%zu from the cache, %zu prefilled in %.1f ms), "
            "TTFT %.1f ms, %d tokens, %.1f tokens/s, stop: %s", s->turn, r->prompt_tokens,
            r->reused, r->prefilled, r->prefill_s * 1e3, r->ttft * 1e3, r->generated, tps,
            r->stop_reason);
    og_speculative_stats ss; /* (over the conversation so far) */
    if (!og_generator_get_speculative_stats(s->gen, &ss) && ss.enabled && ss.verifications)
        fprintf(stderr, ", speculative: %lld of %lld drafted tokens kept", (long long)ss.accepted,
                (long long)ss.drafted);
    fputs("]\n", stderr);
}

/* The calls in the tool-call channel's text (between genai_config's bot/eot tokens: JSON
 * objects {"name", "arguments" | "parameters"}, one per call) as OpenAI lists them:
 * [{"type": "function", "function": {"name", "arguments": JSON text}}]; [] when the text
 * holds none (what it holds is "tool_call_text" beside). */
static void no_content(void *ctx, const char *text, size_t len) {
    (void)ctx, (void)text, (void)len;
}

static cJSON *tool_calls_json(const char *text, size_t n) {
    cJSON *list = cJSON_CreateArray();
    tc_parser p;
    tc_init(&p, TC_LLAMA3, no_content, NULL); /* bare JSON calls, as after Llama's python tag */
    tc_feed(&p, text ? text : "", text ? n : 0);
    int calls = tc_finish(&p);
    for (int i = 0; list && i < calls; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "function");
        cJSON *f = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(f, "name", p.calls[i].name);
        cJSON_AddStringToObject(f, "arguments", p.calls[i].arguments);
        cJSON_AddItemToArray(list, c);
    }
    tc_free(&p);
    return list;
}

static void json_out(const turn_result *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON *timing = cJSON_CreateObject();
    if (!j || !timing) {
        cJSON_Delete(j);
        cJSON_Delete(timing);
        return;
    }
    /* model text whole, NUL bytes as \u0000 (cJSON's own strings would end there) */
    cJSON_AddItemToObject(j, "text", srv_json_text(r->answer, r->answer_n));
    cJSON_AddItemToObject(j, "thinking", srv_json_text(r->thinking, r->thinking_n));
    cJSON_AddItemToObject(j, "tool_calls", tool_calls_json(r->tools, r->tools_n));
    cJSON_AddItemToObject(j, "tool_call_text", srv_json_text(r->tools, r->tools_n));
    cJSON_AddStringToObject(j, "stop_reason", r->stop_reason);
    cJSON_AddNumberToObject(j, "prompt_tokens", (double)r->prompt_tokens);
    cJSON_AddNumberToObject(j, "generated_tokens", r->generated);
    cJSON *ids = cJSON_CreateArray();
    for (int i = 0; ids && i < r->generated; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->ids[i]));
    if (ids) cJSON_AddItemToObject(j, "tokens", ids);
    cJSON_AddNumberToObject(timing, "ttft_s", r->ttft);
    cJSON_AddNumberToObject(timing, "prefill_s", r->prefill_s);
    cJSON_AddNumberToObject(timing, "decode_s", r->decode_s);
    cJSON_AddItemToObject(j, "timing", timing);
    char *text = cJSON_PrintUnformatted(j);
    if (text) puts(text);
    free(text);
    cJSON_Delete(j);
}

/* ---- the two ways in ------------------------------------------------------------------ */

static int one_shot(chat_session *s, const char *text) {
    turn_result r;
    og_status *st = run_turn(s, text, &r);
    if (st) {
        int rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
        return rc;
    }
    if (s->o->json) json_out(&r);
    else fputc('\n', stdout);
    if (s->o->verbose) print_stats(s, &r);
    turn_result_free(&r);
    return 0;
}

static void strip_newlines(char *t) {
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\n' || t[n - 1] == '\r')) t[--n] = 0;
}

/* The conversation, a turn per line of standard input: at a terminal with a prompt and
 * its notes (tty), else (piped) each answer on its line of standard output (or its JSON
 * object with --json), notes on standard error, and the first turn that fails ends it
 * with status 1. The commands (/exit, /clear, /system) work in both. */
static int repl(chat_session *s, bool tty) {
    FILE *notes = tty ? stdout : stderr;
    if (tty) printf("onnx-genai run: %s  (/help for commands, Ctrl-D to leave)\n", s->o->model);
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        interrupted = 0;
        if (tty) {
            fputs(">>> ", stdout);
            fflush(stdout);
        }
        if (getline(&line, &cap, stdin) < 0) {
            if (interrupted && tty) { /* Ctrl-C at the prompt: a fresh prompt */
                clearerr(stdin);
                fputc('\n', stdout);
                continue;
            }
            if (tty) fputc('\n', stdout);
            break;
        }
        strip_newlines(line);
        if (!line[0]) continue;
        if (!strcmp(line, "/exit") || !strcmp(line, "/bye")) break;
        if (!strcmp(line, "/help")) {
            fputs("/clear          forget the conversation (and the cache)\n"
                  "/system TEXT    set the system prompt (no TEXT: none)\n"
                  "/image FILE     add a PNG or JPEG to the next message\n"
                  "/exit           leave (also Ctrl-D)\n"
                  "Ctrl-C          stop the answer being written\n", notes);
            continue;
        }
        if (!strncmp(line, "/image ", 7) && line[7]) {
            og_status *st = add_image(s, line + 7);
            if (st) {
                fprintf(notes, "%s\n", og_status_message(st));
                og_status_free(st);
            } else {
                fprintf(notes, "(image %s with the next message)\n", line + 7);
            }
            continue;
        }
        if (!strcmp(line, "/clear")) {
            drop_images(s, s->n_images);
            s->n_pending = 0;
            cJSON_Delete(s->history);
            s->history = cJSON_CreateArray();
            og_status *st = og_generator_rewind_to(s->gen, 0);
            og_status_free(st);
            s->in_cache = 0;
            fputs("(conversation cleared)\n", notes);
            if (!s->history) {
                rc = cli_fail("out of memory");
                break;
            }
            continue;
        }
        if (!strncmp(line, "/system", 7) && (line[7] == 0 || line[7] == ' ')) {
            free(s->system);
            const char *t = line[7] ? line + 8 : "";
            s->system = *t ? strdup(t) : NULL;
            fputs(*t ? "(system prompt set)\n" : "(system prompt removed)\n", notes);
            continue;
        }
        if (line[0] == '/') {
            fprintf(notes, "unknown command %s (/help)\n", line);
            continue;
        }
        if (!tty) { /* as one_shot answers */
            if ((rc = one_shot(s, line)) != 0) break;
            continue;
        }
        turn_result r;
        og_status *st = run_turn(s, line, &r);
        if (interrupted && !st) fputs(" [stopped]", stdout);
        fputc('\n', stdout);
        if (st) {
            fprintf(stderr, "onnx-genai: %s\n", og_status_message(st));
            og_status_free(st);
            continue;
        }
        if (s->o->verbose) print_stats(s, &r);
        turn_result_free(&r);
    }
    free(line);
    return rc;
}

static int run_main(int argc, char **argv, bool generate_mode) {
    run_opts o;
    memset(&o, 0, sizeof o);
    o.generate_mode = generate_mode;
    int rc = parse_run_args(argc, argv, &o);
    if (rc) {
        cli_guidance_free(&o.guide);
        return rc;
    }
    chat_session s;
    og_status *st = chat_session_open(&s, &o);
    if (st) {
        rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
        chat_session_close(&s);
        cli_guidance_free(&o.guide);
        return rc;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint; /* no SA_RESTART: a read at the prompt returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    if (o.prompt) {
        rc = one_shot(&s, o.prompt);
    } else if (!generate_mode) {
        rc = repl(&s, isatty(STDIN_FILENO));
    } else {
        char *text = cli_read_all("-");
        if (!text) {
            rc = cli_fail("cannot read standard input");
        } else {
            strip_newlines(text);
            rc = text[0] ? one_shot(&s, text) : cli_fail("the prompt on standard input is empty");
            free(text);
        }
    }
    chat_session_close(&s);
    cli_guidance_free(&o.guide);
    return rc;
}

int cli_run(int argc, char **argv) { return run_main(argc, argv, false); }

int cli_chat_generate(int argc, char **argv) { return run_main(argc, argv, true); }

/* For `show`: the package's chat template(s), its special tokens, and genai_config's
 * reasoning / tool-call token ids. */
void cli_show_chat(const char *dir) {
    og_chat_template *ct;
    og_status *st = og_chat_template_open(dir, &ct);
    if (st) {
        printf("chat:        no template (%s)\n", og_status_message(st));
        og_status_free(st);
    } else {
        for (size_t i = 0; i < og_chat_template_count(ct); i++)
            printf("chat:        template '%s' from %s\n", og_chat_template_name(ct, i),
                   og_chat_template_origin(ct, i));
        const char *keys[] = {"bos_token", "eos_token", "pad_token", "unk_token"};
        bool any = false;
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const char *v = og_chat_template_token(ct, keys[i]);
            if (!v) continue;
            printf("%s%s %s", any ? ", " : "chat tokens: ", keys[i], v);
            any = true;
        }
        if (any) printf("\n");
        bool args_object = false;
        og_tokenizer *tok = NULL; /* its vocabulary's call markers, where the template shows none */
        og_status_free(og_tokenizer_open(dir, &tok));
        tc_format f = tc_detect(ct, tok ? tc_tokenizer_has : NULL, tok, &args_object);
        og_tokenizer_free(tok);
        if (f == TC_NONE)
            printf("tool calls:  none this template teaches (serve leaves such text in content)\n");
        else
            printf("tool calls:  %s (read off the template; serve returns them as tool_calls)\n",
                   tc_format_name(f));
        og_chat_template_free(ct);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/genai_config.json", dir);
    char *text = cli_read_all(path);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cfg, "model");
    const char *ids[] = {"bor_token_id", "eor_token_id", "bot_token_id", "eot_token_id"};
    bool any = false;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, ids[i]);
        if (!cJSON_IsNumber(v)) continue;
        printf("%s%s %d", any ? ", " : "chat ids:    ", ids[i], v->valueint);
        any = true;
    }
    if (any) printf("   (reasoning between bor/eor, tool calls between bot/eot)\n");
    cJSON_Delete(cfg);
}
