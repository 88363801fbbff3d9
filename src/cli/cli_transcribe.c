/* onnx-genai transcribe: a WAV file through a Whisper package, greedy, by 30 s windows.
 *
 * The clip's log-mel features are computed whole (og_audios_whisper_features_whole, as
 * transformers computes them for long-form decoding: the clamp over the whole clip) and
 * cut into consecutive windows of 3000 frames, the last zero-padded to 3000 as
 * transformers pads a segment. Each window is one request (og_generator_set_inputs with
 * the decoder prompt); its tokens after the prompt, less a final EOS, are appended to the
 * transcript. Without timestamps a window advances by 30 s. With --timestamps the next
 * window starts where transformers' sequential long-form decoding seeks to
 * (WhisperGenerationMixin._retrieve_segment): after the last pair of consecutive timestamp
 * tokens, at the first of them (its position times the encoder's stride of 2 frames), the
 * tokens after that pair dropped; a window ending in a single timestamp, or without a
 * pair, advances by its whole length. Whisper's timestamp logits rules are not applied
 * (onnxruntime-genai applies none either). */
#include "cli/cli.h"

#include "base/status.h"
#include "genai/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 3000 };

static const char transcribe_usage[] =
    "usage: onnx-genai transcribe [-m] DIR FILE.wav [options]\n"
    "  --language XX        the language token <|XX|> (default en)\n"
    "  --task T             transcribe (default) or translate\n"
    "  --timestamps         leave <|notimestamps|> out of the decoder prompt, and seek\n"
    "                       by the timestamps as transformers' long form does\n"
    "  --max-length N       tokens per 30 s window, prompt included (default the\n"
    "                       model's context_length)\n"
    "  --ids                print the generated ids (comma-separated) instead of text\n";

typedef struct transcribe_opts {
    const char *dir, *wav, *language, *task;
    int timestamps, print_ids, max_length;
} transcribe_opts;

static int parse(int argc, char **argv, transcribe_opts *o) {
    *o = (transcribe_opts){.language = "en", .task = "transcribe"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(transcribe_usage, stdout);
            return 0;
        } else if (!strcmp(a, "-m") && more) {
            o->dir = argv[++i];
        } else if (!strcmp(a, "--language") && more) {
            o->language = argv[++i];
        } else if (!strcmp(a, "--task") && more) {
            o->task = argv[++i];
            if (strcmp(o->task, "transcribe") && strcmp(o->task, "translate"))
                return cli_fail("--task: transcribe or translate, not '%s'", o->task);
        } else if (!strcmp(a, "--max-length") && more) {
            if (cli_int_option("--max-length", argv[++i], 1, 1 << 20, &o->max_length)) return 2;
        } else if (!strcmp(a, "--timestamps")) {
            o->timestamps = 1;
        } else if (!strcmp(a, "--ids")) {
            o->print_ids = 1;
        } else if (a[0] != '-' && !o->dir) {
            o->dir = a;
        } else if (a[0] != '-' && !o->wav) {
            o->wav = a;
        } else {
            fprintf(stderr, "transcribe: unknown or incomplete option '%s'\n%s", a,
                    transcribe_usage);
            return 2;
        }
    }
    if (!o->dir || !o->wav) {
        fputs(transcribe_usage, stderr);
        return 2;
    }
    return -1;
}

/* Where transformers' long-form decoding seeks after a window's tokens t[0..n) (its
 * _retrieve_segment): the frames to advance, and in *keep the tokens the transcript keeps.
 * ts0 is <|0.00|>'s id, frames the window's frames (3000, or fewer for the clip's last);
 * eos: an EOS followed t (transformers keeps it in the clip's last window, where it is
 * the last token: no single timestamp ending then). */
static int64_t seek_advance(const int32_t *t, size_t n, int32_t ts0, int64_t frames, bool eos,
                            size_t *keep) {
    *keep = n;
    size_t last_pair = 0; /* index of the second timestamp of the last pair, + 1; 0: none */
    for (size_t i = 0; i + 1 < n; i++)
        if (t[i] >= ts0 && t[i + 1] >= ts0) last_pair = i + 2;
    bool single_ending = !eos && n >= 2 && t[n - 2] < ts0 && t[n - 1] >= ts0;
    if (!last_pair || single_ending) return frames;
    *keep = last_pair;
    int64_t advance = (int64_t)(t[last_pair - 2] - ts0) * 2; /* the encoder's stride */
    return advance > 0 ? advance : frames; /* <|0.00|> would not move: the whole window */
}

/* One window's greedy tokens after the prompt, less a final EOS, appended to *out from
 * index *n_out (which the caller may cut back). */
static og_status *window(og_model *m, const transcribe_opts *o, og_tensor *feats,
                         og_tensor *prompt, int32_t **out, size_t *n_out, bool *had_eos) {
    *had_eos = false;
    og_generator_params p = og_generator_params_default(m);
    p.max_length = o->max_length;
    p.do_sample = 0;
    og_generator *g = NULL;
    OG_TRY(og_generator_create(m, &p, &g));
    const char *names[2] = {"audio_features", "input_ids"};
    const og_tensor *ts[2] = {feats, prompt};
    og_status *st = og_generator_set_inputs(g, names, ts, 2);
    while (!st && !og_generator_is_done(g)) st = og_generator_generate_next_token(g);
    const int32_t *seq = NULL;
    size_t len = 0, skip = (size_t)og_tensor_element_count(prompt);
    if (!st) st = og_generator_get_sequence(g, 0, &seq, &len);
    const int32_t *eos = NULL;
    size_t n_eos = og_model_eos_token_ids(m, &eos);
    for (size_t k = 0; !st && len > skip && k < n_eos; k++)
        if (seq[len - 1] == eos[k]) {
            len--;
            *had_eos = true;
            break;
        }
    if (!st && len > skip) {
        int32_t *grown = realloc(*out, (*n_out + len - skip) * sizeof *grown);
        if (!grown) st = og_oom();
        else {
            memcpy(grown + *n_out, seq + skip, (len - skip) * sizeof *grown);
            *out = grown;
            *n_out += len - skip;
        }
    }
    og_generator_destroy(g);
    return st;
}

static og_status *transcribe(og_model *m, const transcribe_opts *o, int32_t **ids,
                             size_t *n_ids) {
    if (!m->encoder)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s is not a Whisper package "
                         "(model.type '%s')", o->dir, og_model_type(m));
    og_tokenizer *tok = NULL;
    og_audios *audio = NULL;
    og_tensor *whole = NULL, *win = NULL, *prompt = NULL;
    int32_t *pids = NULL;
    size_t n_p = 0;
    char text[160];
    snprintf(text, sizeof text, "<|startoftranscript|><|%s|><|%s|>%s", o->language, o->task,
             o->timestamps ? "" : "<|notimestamps|>");
    int mels = m->encoder_mels > 0 ? (int)m->encoder_mels : 80;
    og_status *st = og_tokenizer_create(m, &tok);
    char lang[64];
    snprintf(lang, sizeof lang, "<|%s|>", o->language);
    if (!st && og_tokenizer_token_to_id(tok, lang) < 0)
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "--language: the tokenizer has no %s token",
                       lang);
    if (!st) st = og_tokenizer_encode(tok, text, strlen(text), 0, &pids, &n_p);
    /* timestamps: <|0.00|> and the ids after it are timestamp tokens */
    int32_t ts0 = !st && o->timestamps ? og_tokenizer_token_to_id(tok, "<|0.00|>") : -1;
    if (!st) {
        int64_t d[2] = {1, (int64_t)n_p};
        st = og_tensor_wrap(OG_INT32, d, 2, pids, n_p * sizeof *pids, &prompt);
    }
    if (!st) st = og_audios_open(&o->wav, 1, &audio);
    if (!st) st = og_audios_whisper_features_whole(audio, mels, &whole);
    int64_t frames = st ? 0 : og_tensor_dims(whole)[2];
    int64_t wd[3] = {1, mels, WINDOW};
    if (!st) st = og_tensor_create(OG_FLOAT32, wd, 3, &win);
    int64_t advance = WINDOW;
    for (int64_t at = 0; !st && (at == 0 || at < frames); at += advance) {
        int64_t take = frames - at < WINDOW ? frames - at : WINDOW;
        const float *src = og_tensor_data(whole);
        float *dst = og_tensor_data(win);
        memset(dst, 0, sizeof(float) * (size_t)mels * WINDOW);
        for (int b = 0; b < mels; b++)
            memcpy(dst + (size_t)b * WINDOW, src + (size_t)b * (size_t)frames + (size_t)at,
                   sizeof(float) * (size_t)take);
        size_t before = *n_ids, keep;
        bool had_eos = false, last = at + take >= frames;
        st = window(m, o, win, prompt, ids, n_ids, &had_eos);
        advance = WINDOW;
        if (!st && ts0 >= 0) {
            advance = seek_advance(*ids + before, *n_ids - before, ts0, take, had_eos && last,
                                   &keep);
            *n_ids = before + keep;
        }
    }
    og_tensor_free(win);
    og_tensor_free(whole);
    og_tensor_free(prompt);
    og_free(pids);
    og_audios_free(audio);
    og_tokenizer_free(tok);
    return st;
}

int cli_transcribe(int argc, char **argv) {
    transcribe_opts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    og_model *m = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    char *text = NULL;
    og_tokenizer *tok = NULL;
    og_status *st = og_model_open(o.dir, NULL, &m);
    if (!st) st = transcribe(m, &o, &ids, &n);
    if (!st && o.print_ids) {
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
        printf("\n");
    } else if (!st) {
        st = og_tokenizer_create(m, &tok);
        if (!st) st = og_tokenizer_decode(tok, ids, n, 1, &text);
        if (!st) printf("%s\n", text);
    }
    og_free(text);
    og_tokenizer_free(tok);
    free(ids);
    og_model_close(m);
    if (st) {
        rc = cli_fail("transcribe: %s", og_status_message(st));
        og_status_free(st);
        return rc;
    }
    return 0;
}
