/* onnx-genai generate -m DIR [-p TEXT | --ids 1,2,3 ...] [search options] [--json]
 *
 * Streams generated text to stdout as it is produced (batch 1 without beams), or prints
 * one JSON object with --json. Options not given come from the package's search block. */
#include "cli/cli.h"

#include "base/json_str.h"
#include "chat/chat_stream.h"
#include "genai/model.h"

#include "onnx_genai.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct opts {
    const char *model, *prompt, *profile;
    int32_t *ids[64];
    size_t n_ids[64];
    int n_batches;
    bool json, have_prompt;
    int threads;
    cli_backend be;
    cli_guidance guide;
    cli_speculative spec;
    cli_adapter adapter;
    /* search options: set[] marks those given on the command line */
    og_generator_params p;
    bool set_max, set_min, set_sample, set_topk, set_topp, set_temp, set_seed, set_beams,
        set_ret, set_rep, set_ngram;
    int max_new; /* --max-new-tokens, 0: not given */
    const char *stops[16];
    int n_stops;
    const char *images[CLI_MAX_IMAGES]; /* --image FILE, in order */
    int n_images;
    const char *audio; /* --audio FILE */
} opts;

static const char generate_usage[] =
    "usage: onnx-genai generate [-m] DIR [-p TEXT | --ids 1,2,3 [--ids ...]] [options]\n"
    "  -p, --prompt TEXT          prompt text (default: read standard input)\n"
    "  --ids LIST                 prompt token ids, comma-separated; repeat for a batch\n"
    "  --max-length N             total tokens per sequence, prompt included\n"
    "  --max-new-tokens N         at most N generated tokens (past the longest prompt)\n"
    "  --stop TEXT                stop before TEXT in the generated text (repeat for more;\n"
    "                             one text prompt)\n"
    "  --image FILE               a PNG or JPEG for a Qwen vision-language package (repeat\n"
    "                             for more; the prompt's <|vision_start|>...<|vision_end|>\n"
    "                             places them, else they come first)\n"
    "  --audio FILE               a WAV for a Whisper package (its first 30 s); the prompt\n"
    "                             is the decoder prompt, default <|startoftranscript|><|en|>\n"
    "                             <|transcribe|><|notimestamps|> (onnx-genai transcribe\n"
    "                             takes longer audio)\n"
    "  --min-length N             block EOS while shorter\n"
    "  --do-sample                sample instead of greedy\n"
    "  --top-k N, --top-p F, --temperature F, --seed N\n"
    "  --num-beams N, --num-return-sequences N\n"
    "  --repetition-penalty F, --no-repeat-ngram-size N\n"
    "  --threads N                compute threads (default: all cores)\n"
    "%s"
    "%s"
    "%s"
    "%s"
    "  --json                     print {\"sequences\", \"text\", \"timing\"} instead of streaming\n"
    "  --profile FILE             write a Chrome/Perfetto trace of every node run (JSON)\n"
    "  --chat                     the prompt is a user message: render it with the package's\n"
    "                             chat template, print the answer (--system, --stop,\n"
    "                             --max-new-tokens, --extra ...: see 'onnx-genai run --help')\n";

/* A float option: any spelling strtof reads ("nan" and "inf" included: the generator
 * says what range each option takes); out of float range is an error here. */
static int float_option(const char *flag, const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end) return cli_fail("%s: '%s' is not a number", flag, s);
    if (errno == ERANGE && isinf(v)) return cli_fail("%s: %s is out of range", flag, s);
    *out = v;
    return 0;
}

int cli_parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 16, len = 0;
    int32_t *a = malloc(cap * sizeof *a);
    if (!a) return cli_fail("--ids: out of memory");
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX) {
            free(a);
            return cli_fail("--ids: '%s' is not a comma-separated list of token ids", s);
        }
        if (len == cap) {
            int32_t *b = realloc(a, (cap *= 2) * sizeof *a);
            if (!b) {
                free(a);
                return cli_fail("--ids: out of memory for %zu ids", cap);
            }
            a = b;
        }
        a[len++] = (int32_t)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) {
            free(a);
            return cli_fail("--ids: unexpected '%c' in '%s'", *p, s);
        }
    }
    if (len == 0) {
        free(a);
        return cli_fail("--ids: empty list");
    }
    *ids = a;
    *n = len;
    return 0;
}

#define NEED_ARG()                                                                       \
    do {                                                                                 \
        if (i + 1 >= argc) return cli_fail("%s needs a value (see 'onnx-genai generate --help')", a); \
    } while (0)
#define INT_ARG(field, flag, lo, hi)                                                     \
    do {                                                                                 \
        NEED_ARG();                                                                      \
        int rc_ = cli_int_option(a, argv[++i], lo, hi, &o->p.field);                        \
        if (rc_) return rc_;                                                             \
        o->flag = true;                                                                  \
    } while (0)
#define FLOAT_ARG(field, flag)                                                           \
    do {                                                                                 \
        NEED_ARG();                                                                      \
        int rc_ = float_option(a, argv[++i], &o->p.field);                              \
        if (rc_) return rc_;                                                             \
        o->flag = true;                                                                  \
    } while (0)

static int parse_args(int argc, char **argv, opts *o) {
    cli_backend_init(&o->be);
    cli_speculative_init(&o->spec);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int took = cli_backend_arg(argc, argv, &i, &o->be);
        if (!took) took = cli_guidance_arg(argc, argv, &i, &o->guide);
        if (!took) took = cli_speculative_arg(argc, argv, &i, &o->spec);
        if (!took) took = cli_adapter_arg(argc, argv, &i, &o->adapter);
        if (took) {
            if (took < 0) return -took;
            continue;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED_ARG();
            o->model = argv[++i];
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            NEED_ARG();
            o->prompt = argv[++i];
            o->have_prompt = true;
        } else if (!strcmp(a, "--ids")) {
            NEED_ARG();
            if (o->n_batches == 64) return cli_fail("--ids: at most 64 sequences");
            int rc = cli_parse_ids(argv[++i], &o->ids[o->n_batches], &o->n_ids[o->n_batches]);
            if (rc) return rc;
            o->n_batches++;
        } else if (!strcmp(a, "--max-length")) {
            INT_ARG(max_length, set_max, 1, 1 << 30);
        } else if (!strcmp(a, "--max-new-tokens")) {
            NEED_ARG();
            int rc_ = cli_int_option(a, argv[++i], 1, 1 << 30, &o->max_new);
            if (rc_) return rc_;
        } else if (!strcmp(a, "--stop")) {
            NEED_ARG();
            if (o->n_stops == 16) return cli_fail("--stop: at most 16 stop strings");
            if (!argv[i + 1][0]) return cli_fail("--stop: an empty stop string");
            o->stops[o->n_stops++] = argv[++i];
        } else if (!strcmp(a, "--image")) {
            NEED_ARG();
            if (o->n_images == CLI_MAX_IMAGES)
                return cli_fail("--image: at most %d images", CLI_MAX_IMAGES);
            o->images[o->n_images++] = argv[++i];
        } else if (!strcmp(a, "--audio")) {
            NEED_ARG();
            o->audio = argv[++i];
        } else if (!strcmp(a, "--min-length")) {
            INT_ARG(min_length, set_min, 0, 1 << 30);
        } else if (!strcmp(a, "--do-sample")) {
            o->p.do_sample = 1;
            o->set_sample = true;
        } else if (!strcmp(a, "--top-k")) {
            INT_ARG(top_k, set_topk, 0, 1 << 30);
        } else if (!strcmp(a, "--top-p")) {
            FLOAT_ARG(top_p, set_topp);
        } else if (!strcmp(a, "--temperature")) {
            FLOAT_ARG(temperature, set_temp);
        } else if (!strcmp(a, "--seed")) {
            int seed;
            NEED_ARG();
            int rc_ = cli_int_option(a, argv[++i], 0, INT32_MAX, &seed);
            if (rc_) return rc_;
            o->p.random_seed = seed;
            o->set_seed = true;
        } else if (!strcmp(a, "--num-beams")) {
            INT_ARG(num_beams, set_beams, 1, 1024);
        } else if (!strcmp(a, "--num-return-sequences")) {
            INT_ARG(num_return_sequences, set_ret, 1, 1024);
        } else if (!strcmp(a, "--repetition-penalty")) {
            FLOAT_ARG(repetition_penalty, set_rep);
        } else if (!strcmp(a, "--no-repeat-ngram-size")) {
            INT_ARG(no_repeat_ngram_size, set_ngram, 0, 1 << 20);
        } else if (!strcmp(a, "--threads")) {
            NEED_ARG();
            int rc_ = cli_int_option(a, argv[++i], 0, 4096, &o->threads);
            if (rc_) return rc_;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--profile")) {
            NEED_ARG();
            o->profile = argv[++i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf(generate_usage, cli_backend_usage, cli_guidance_usage, cli_speculative_usage,
                   cli_adapter_usage);
            exit(0);
        } else if (a[0] != '-' && !o->model) {
            o->model = a;
        } else {
            return cli_fail("generate: unknown argument '%s' (see 'onnx-genai generate --help')", a);
        }
    }
    if (!o->model)
        return cli_fail("generate: no model folder given (see 'onnx-genai generate --help')");
    if (o->have_prompt && o->n_batches)
        return cli_fail("generate: give either -p or --ids, not both");
    if (o->n_stops && o->n_batches)
        return cli_fail("generate: --stop cuts generated text: give a text prompt (-p or standard "
                        "input), not --ids");
    if (o->n_stops && o->p.num_beams > 1)
        return cli_fail("generate: --stop with beam search (--num-beams) is not supported");
    return cli_backend_check(&o->be);
}

/* Reads all of standard input into a string. */
static char *read_stdin(size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
        }
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static void apply_overrides(const opts *o, og_generator_params *p) {
    if (o->set_max) p->max_length = o->p.max_length;
    if (o->set_min) p->min_length = o->p.min_length;
    if (o->set_sample) p->do_sample = 1;
    if (o->set_topk) p->top_k = o->p.top_k;
    if (o->set_topp) p->top_p = o->p.top_p;
    if (o->set_temp) p->temperature = o->p.temperature;
    if (o->set_seed) p->random_seed = o->p.random_seed;
    if (o->set_beams) p->num_beams = o->p.num_beams;
    if (o->set_ret) p->num_return_sequences = o->p.num_return_sequences;
    if (o->set_rep) p->repetition_penalty = o->p.repetition_penalty;
    if (o->set_ngram) p->no_repeat_ngram_size = o->p.no_repeat_ngram_size;
}

/* --stop: the answer's text as chat_stream releases it (printed when streaming). */
typedef struct stop_text {
    bool print;
} stop_text;

static void emit_text(void *ctx, chat_channel ch, const char *text, size_t len) {
    const stop_text *t = ctx;
    if (t->print && ch == CH_ANSWER) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
}

int cli_generate(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--chat")) return cli_chat_generate(argc, argv);
    opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    chat_stream cs; /* --stop's text (initialized once the generator exists) */
    memset(&cs, 0, sizeof cs);
    og_model *model = NULL;
    og_tokenizer *tok = NULL;
    og_tokenizer_stream *stream = NULL;
    og_generator *gen = NULL;
    og_status *st = NULL;
    int32_t *enc = NULL;
    char *input = NULL;
    size_t input_len = 0;
    og_named_tensors *images = NULL; /* --image: the processor's tensors */
    og_tensor *audio = NULL;         /* --audio: the features */
    if (rc) goto done;
    double t0 = now_s();
    og_model_options mo = og_model_options_default();
    mo.num_threads = o.threads;
    cli_backend_model(&o.be, &mo);
    if ((st = og_model_open(o.model, &mo, &model))) goto done;
    if ((st = cli_speculative_open(&o.spec, &mo))) goto done;
    if ((st = cli_adapter_open(&o.adapter, model))) goto done;
    for (size_t i = 0; i < og_model_warning_count(model); i++)
        fprintf(stderr, "onnx-genai: warning: %s\n", og_model_warning(model, i));
    /* Text in or out needs the tokenizer; with --ids a package may lack one (ids in, ids
     * out), but a tokenizer that is there and broken is an error all the same. */
    og_status *tst = og_tokenizer_create(model, &tok);
    if (tst && (!o.n_batches || og_status_code(tst) != OG_ERR_NOT_FOUND)) {
        st = tst;
        goto done;
    }
    og_status_free(tst);
    double t_load = now_s() - t0;
    if (o.profile && (st = og_model_profile_start(model))) goto done;

    /* The prompt rows, each its own length (the generator never pads inside the model). */
    size_t batch = o.n_batches ? (size_t)o.n_batches : 1, width = 0;
    if (!o.n_batches) {
        size_t len = 0;
        const char *text = o.prompt;
        if (o.audio && !o.have_prompt) { /* the decoder prompt */
            o.prompt = text = cli_whisper_prompt;
            o.have_prompt = true;
        }
        if (!o.have_prompt) {
            input = read_stdin(&len);
            if (!input) {
                rc = cli_fail("cannot read standard input");
                goto done;
            }
            while (len && (input[len - 1] == '\n' || input[len - 1] == '\r')) input[--len] = 0;
            text = input;
            input_len = len;
        } else {
            len = strlen(text);
        }
        size_t n;
        /* a Whisper decoder prompt is its tokens as written: no post-processor specials */
        if ((st = og_tokenizer_encode(tok, text, len, !o.audio, &enc, &n))) goto done;
        if (n == 0) {
            rc = cli_fail("the prompt encodes to no tokens");
            goto done;
        }
        o.ids[0] = enc;
        o.n_ids[0] = n;
        enc = NULL;
        if (o.n_images && (st = cli_images_prepare(model, tok, o.images, o.n_images, text, 1,
                                                   &o.ids[0], &o.n_ids[0], &images)))
            goto done;
    } else if (o.n_images || o.audio) {
        rc = cli_fail("%s takes a text prompt (not --ids)", o.audio ? "--audio" : "--image");
        goto done;
    }
    if (o.audio && o.n_images) {
        rc = cli_fail("--audio and --image do not go together");
        goto done;
    }
    if (o.audio && (st = cli_audio_features(model, o.audio, &audio))) goto done;
    for (size_t b = 0; b < batch; b++) width += o.n_ids[b];
    og_generator_params p = og_generator_params_default(model);
    p.all_logits = 0; /* only the logits tokens are chosen from */
    apply_overrides(&o, &p);
    p.batch_size = (int)batch;
    if (o.max_new) { /* N past the longest prompt, within --max-length and the context */
        size_t longest = 0;
        for (size_t b = 0; b < batch; b++) longest = o.n_ids[b] > longest ? o.n_ids[b] : longest;
        long long want = (long long)longest + o.max_new;
        if (o.set_max && want > p.max_length) want = p.max_length;
        if (model->context_length > 0 && want > model->context_length) want = model->context_length;
        p.max_length = (int)want;
    }
    if ((st = cli_guidance_set(&o.guide, &p))) goto done;
    cli_speculative_set(&o.spec, &p);
    if ((st = og_generator_create(model, &p, &gen))) goto done;
    if ((st = cli_adapter_activate(&o.adapter, gen))) goto done;
    /* Text in, text out as it is generated; ids in (--ids), full id sequences out. */
    bool streaming = !o.json && !o.n_batches && p.num_beams == 1 && tok;
    /* The pieces continue the prompt: decoded after its ids, as the whole sequence is. */
    if ((streaming || o.n_stops) && ((st = og_tokenizer_stream_create(tok, &stream)) ||
                      (st = og_tokenizer_stream_set_context(stream, o.ids[0], o.n_ids[0]))))
        goto done;
    if (streaming) { /* the prompt first, as llama.cpp and Ollama show it */
        if (o.have_prompt) fputs(o.prompt, stdout);
        else fwrite(input, 1, input_len, stdout); /* standard input may hold NUL bytes */
        fflush(stdout);
    }
    stop_text out = {.print = streaming};
    chat_stream_init(&cs, o.stops, o.n_stops, -1, -1, -1, -1, emit_text, &out);
    double t1 = now_s();
    if (audio) {
        if ((st = cli_audio_set(gen, o.ids[0], o.n_ids[0], audio))) goto done;
    } else if (images) {
        if ((st = cli_images_set(gen, o.ids[0], o.n_ids[0], images))) goto done;
    } else if ((st = og_generator_append_token_rows(gen, (const int32_t *const *)o.ids, o.n_ids)))
        goto done;
    double t_prompt = now_s() - t1, t2 = now_s();
    int generated = 0;
    size_t shown = o.n_ids[0];
    while (!og_generator_is_done(gen) && !cs.stopped) {
        if ((st = og_generator_generate_next_token(gen))) goto done;
        generated++;
        if (o.n_stops) { /* the text, held back where a stop string may begin */
            const int32_t *seq;
            size_t len;
            const char *piece;
            size_t n;
            if ((st = og_generator_get_sequence(gen, 0, &seq, &len))) goto done;
            if (len == shown) continue;
            shown = len;
            if ((st = og_tokenizer_stream_decode_len(stream, seq[len - 1], &piece, &n))) goto done;
            chat_stream_token(&cs, seq[len - 1], piece, n);
            if (cs.oom) {
                rc = cli_fail("out of memory");
                goto done;
            }
        } else if (streaming) {
            const int32_t *seq;
            size_t len;
            const char *piece;
            size_t n;
            if ((st = og_generator_get_sequence(gen, 0, &seq, &len))) goto done;
            if (len == shown) continue; /* stopped on EOS, which is not appended */
            shown = len;
            if ((st = og_tokenizer_stream_decode_len(stream, seq[len - 1], &piece, &n))) goto done;
            fwrite(piece, 1, n, stdout); /* a piece may hold NUL bytes */
            fflush(stdout);
        }
    }
    double t_decode = now_s() - t2;
    if (!o.json) cli_speculative_report(stderr, gen);
    if (o.profile && (st = og_model_profile_write(model, o.profile))) goto done;
    if (streaming || o.n_stops) {
        const char *piece;
        size_t n;
        if ((st = og_tokenizer_stream_flush_len(stream, &piece, &n))) goto done;
        if (o.n_stops) {
            if (!cs.stopped) chat_stream_token(&cs, -1, piece, n);
            chat_stream_finish(&cs);
        } else {
            fwrite(piece, 1, n, stdout);
        }
        if (streaming) fputc('\n', stdout);
    }
    size_t n_seq = batch * (size_t)(p.num_beams > 1 ? p.num_return_sequences : 1);
    if (o.json) {
        printf("{\"sequences\": [");
        for (size_t s = 0; s < n_seq; s++) {
            const int32_t *seq;
            size_t len;
            if ((st = og_generator_get_sequence(gen, s, &seq, &len))) goto done;
            printf("%s[", s ? ", " : "");
            for (size_t i = 0; i < len; i++) printf("%s%d", i ? ", " : "", seq[i]);
            printf("]");
        }
        printf("], \"text\": [");
        if (o.n_stops) { /* the prompt, then the answer up to the stop string */
            char *ptext;
            size_t pn;
            if ((st = og_tokenizer_decode_len(tok, o.ids[0], o.n_ids[0], 1, &ptext, &pn))) goto done;
            size_t an = cs.text[CH_ANSWER].n;
            char *all = malloc(pn + an + 1);
            if (all) {
                memcpy(all, ptext, pn);
                memcpy(all + pn, chat_stream_text(&cs, CH_ANSWER), an);
                json_str_fwrite(stdout, all, pn + an);
            }
            og_free(ptext);
            free(all);
            if (!all) {
                rc = cli_fail("out of memory");
                goto done;
            }
        }
        for (size_t s = 0; tok && !o.n_stops && s < n_seq; s++) {
            const int32_t *seq;
            size_t len;
            char *text;
            size_t n;
            if ((st = og_generator_get_sequence(gen, s, &seq, &len))) goto done;
            if ((st = og_tokenizer_decode_len(tok, seq, len, 1, &text, &n))) goto done;
            printf("%s", s ? ", " : "");
            json_str_fwrite(stdout, text, n);
            og_free(text);
        }
        printf("], \"backend\": \"%s\"", og_model_backend(model));
        og_speculative_stats ss;
        if (!og_generator_get_speculative_stats(gen, &ss) && ss.enabled)
            printf(", \"speculative\": {\"verifications\": %lld, \"drafted\": %lld, "
                   "\"accepted\": %lld, \"emitted\": %lld, \"plain_steps\": %lld}",
                   (long long)ss.verifications, (long long)ss.drafted, (long long)ss.accepted,
                   (long long)ss.emitted, (long long)ss.plain_steps);
        printf(", \"timing\": {\"load_s\": %.6f, \"prompt_s\": %.6f, \"prompt_tokens\": %zu, "
               "\"decode_s\": %.6f, \"generated_tokens\": %d, \"decode_tokens_per_s\": %.3f}}\n",
               t_load, t_prompt, width, t_decode, generated,
               t_decode > 0 ? generated / t_decode : 0.0);
    } else if (!streaming) {
        for (size_t s = 0; s < n_seq; s++) {
            const int32_t *seq;
            size_t len;
            if ((st = og_generator_get_sequence(gen, s, &seq, &len))) goto done;
            if (tok && !o.n_batches) {
                char *text;
                size_t n;
                if ((st = og_tokenizer_decode_len(tok, seq, len, 1, &text, &n))) goto done;
                fwrite(text, 1, n, stdout);
                fputc('\n', stdout);
                og_free(text);
            } else {
                for (size_t i = 0; i < len; i++) printf("%s%d", i ? "," : "", seq[i]);
                printf("\n");
            }
        }
    }
    rc = 0;
done:
    if (st) {
        rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
    }
    for (int b = 0; b < 64; b++) free(o.ids[b]);
    chat_stream_free(&cs);
    og_named_tensors_free(images);
    og_tensor_free(audio);
    cli_guidance_free(&o.guide);
    free(enc);
    free(input);
    og_tokenizer_stream_free(stream);
    og_generator_destroy(gen);
    og_tokenizer_free(tok);
    cli_adapter_close(&o.adapter);
    cli_speculative_close(&o.spec);
    og_model_close(model);
    return rc;
}
