/* Images and audio in chat requests: OpenAI's `image_url` and `input_audio` content parts
 * run through the package's processor and encoder (og_generator_set_inputs in the
 * engine's per-sequence mode) instead of reaching the chat template as text.
 *
 * An image is a data: URL (base64 PNG or JPEG); the server fetches nothing, so an
 * http(s) URL or a file path is a 400 saying so. Audio is a base64 WAV. While the
 * messages are checked (srv_messages_json), each such part is decoded into a srv_media
 * and replaced, in the messages the template gets, by {"type": "image"} or
 * {"type": "audio"}, the form vision templates test for (Qwen's write
 * <|vision_start|><|image_pad|><|vision_end|> for it, Gemma 3's <start_of_image>); the
 * payload never reaches the template. After rendering, the placeholders the template
 * wrote must be as many as the images; each is expanded as onnxruntime-genai's processor
 * expands it (Qwen's by the processor's grid, genai/vision.c; Gemma 3's to 256 soft
 * tokens between blank lines), and the prompt goes to the engine with pixel_values (and
 * Qwen's image_grid_thw).
 * A Whisper package has no template: its chat takes one audio part and, optionally, the
 * decoder prompt as text (default <|startoftranscript|><|en|><|transcribe|><|notimestamps|>),
 * and the request gets the audio's features as audio_features. */
#include "serve/serve_internal.h"

#include "genai/model.h"
#include "genai/vision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char WHISPER_PROMPT[] = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>";

/* Qwen's and Gemma 3's placeholders: Phi-3-vision's <|image_N|> prompts are not built
 * here */
bool srv_model_takes_images(const srv_model *m) {
    return m->model && m->model->vision.s && !m->model->vision_phi3;
}
bool srv_model_takes_audio(const srv_model *m) { return m->model && m->model->encoder; }

/* RFC 4648 base64 (white space skipped, padding optional); false on any other byte. */
static bool base64_decode(const char *s, size_t len, unsigned char **out, size_t *n) {
    unsigned char *b = malloc(len / 4 * 3 + 3);
    if (!b) return false;
    size_t k = 0;
    unsigned acc = 0;
    int bits = 0;
    bool pad = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '+' || c == '-') v = 62;
        else if (c == '/' || c == '_') v = 63;
        else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        else if (c == '=') {
            pad = true;
            continue;
        } else {
            free(b);
            return false;
        }
        if (pad) { /* data after padding */
            free(b);
            return false;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b[k++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *out = b;
    *n = k;
    return true;
}

void srv_media_free(srv_media *md) {
    if (!md) return;
    for (int i = 0; i < md->n; i++) free(md->data[i]);
    og_named_tensors_free(md->nt);
    og_tensor_free(md->features);
    memset(md, 0, sizeof *md);
}

/* The bytes of an image part's URL: data:[<mime>][;base64],<data>. */
static bool image_bytes(const char *url, const char *name, unsigned char **out, size_t *n,
                        srv_error *err) {
    if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
        srv_fail(err, 400, name, "'%s' is an image URL to fetch, and this server makes no "
                 "network requests: send the image itself as a data: URL "
                 "(data:image/png;base64,...)", name);
        return false;
    }
    if (strncmp(url, "data:", 5)) {
        srv_fail(err, 400, name, "'%s' must be a data: URL (data:image/png;base64,... or "
                 "data:image/jpeg;base64,...); files and other URLs are not read", name);
        return false;
    }
    const char *comma = strchr(url, ',');
    if (!comma) {
        srv_fail(err, 400, name, "'%s': a data: URL without a comma before its data", name);
        return false;
    }
    size_t head = (size_t)(comma - url);
    if (head < 12 || strncmp(comma - 7, ";base64", 7)) {
        srv_fail(err, 400, name, "'%s': only base64 data: URLs are read (data:image/...;base64,...)",
                 name);
        return false;
    }
    if (!base64_decode(comma + 1, strlen(comma + 1), out, n)) {
        srv_fail(err, 400, name, "'%s': the data is not valid base64", name);
        return false;
    }
    return true;
}

int srv_media_part(const srv_model *m, cJSON *part, const char *name, srv_media *md,
                   srv_error *err) {
    const cJSON *type = cJSON_IsObject(part) ? cJSON_GetObjectItemCaseSensitive(part, "type") : NULL;
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    bool image = !strcmp(t, "image_url") || !strcmp(t, "image") || !strcmp(t, "input_image");
    bool audio = !strcmp(t, "input_audio") || !strcmp(t, "audio");
    if (!image && !audio) return 0;
    bool takes = image ? srv_model_takes_images(m) : srv_model_takes_audio(m);
    if (!takes) {
        const char *why = m->model && m->model->text_only ? m->model->text_only
                          : image ? "images are taken by Qwen vision-language packages here"
                                  : "audio is taken by Whisper packages";
        srv_fail(err, 400, name, "'%s' is an %s part, but model '%.100s' takes no %s (%s)", name,
                 t, m->name, image ? "images" : "audio", why);
        return -1;
    }
    if (md->n == SRV_MAX_MEDIA) {
        srv_fail(err, 400, name, "'%s': a request holds at most %d images and audio parts", name,
                 SRV_MAX_MEDIA);
        return -1;
    }
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (image) {
        /* {"image_url": {"url": ...}} (or the URL as a string), Responses' "image_url": URL */
        const cJSON *iu = cJSON_GetObjectItemCaseSensitive(part, "image_url");
        const cJSON *url = cJSON_IsObject(iu) ? cJSON_GetObjectItemCaseSensitive(iu, "url") : iu;
        if (!cJSON_IsString(url)) {
            srv_fail(err, 400, name, "'%s' must have image_url.url, a data: URL", name);
            return -1;
        }
        if (!image_bytes(url->valuestring, name, &bytes, &n, err)) return -1;
    } else {
        const cJSON *ia = cJSON_GetObjectItemCaseSensitive(part, "input_audio");
        const cJSON *data = cJSON_IsObject(ia) ? cJSON_GetObjectItemCaseSensitive(ia, "data") : NULL;
        const cJSON *fmt = cJSON_IsObject(ia) ? cJSON_GetObjectItemCaseSensitive(ia, "format") : NULL;
        if (!cJSON_IsString(data)) {
            srv_fail(err, 400, name, "'%s' must have input_audio.data, base64 WAV bytes", name);
            return -1;
        }
        if (fmt && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "wav"))) {
            srv_fail(err, 400, name, "'%s': input_audio.format '%.20s' is not read; send \"wav\"",
                     name, cJSON_IsString(fmt) ? fmt->valuestring : "?");
            return -1;
        }
        if (!base64_decode(data->valuestring, strlen(data->valuestring), &bytes, &n)) {
            srv_fail(err, 400, name, "'%s': input_audio.data is not valid base64", name);
            return -1;
        }
    }
    md->data[md->n] = bytes;
    md->size[md->n] = n;
    md->audio[md->n] = audio;
    snprintf(md->names[md->n], sizeof md->names[0], "%s", name);
    md->n++;
    if (audio) md->n_audio++;
    else md->n_images++;
    /* what the template gets: the part without its payload */
    while (part->child) cJSON_Delete(cJSON_DetachItemViaPointer(part, part->child));
    cJSON_AddStringToObject(part, "type", audio ? "audio" : "image");
    return 1;
}

/* The image or audio parts' bytes, in order, and their names (kind: audio or not). */
static int gather(const srv_media *md, bool audio, const void **data, size_t *size,
                  const char **names) {
    int k = 0;
    for (int i = 0; i < md->n; i++)
        if (md->audio[i] == audio) {
            data[k] = md->data[i];
            size[k] = md->size[i];
            names[k++] = md->names[i];
        }
    return k;
}

/* The images decoded; a file that does not decode is named by its part. */
static bool load_images(const srv_media *md, og_images **im, srv_error *err) {
    const void *data[SRV_MAX_MEDIA] = {0};
    size_t size[SRV_MAX_MEDIA] = {0};
    const char *names[SRV_MAX_MEDIA] = {0};
    int n = gather(md, false, data, size, names);
    og_status *st = og_images_load(data, size, (size_t)n, im);
    if (!st) return true;
    for (int i = 0; i < n; i++) { /* which one */
        og_images *one = NULL;
        og_status *s1 = og_images_load(&data[i], &size[i], 1, &one);
        og_images_free(one);
        if (s1) {
            og_status_free(st);
            srv_fail_status(err, s1, names[i], names[i]);
            return false;
        }
    }
    srv_fail_status(err, st, "messages", "decoding the images");
    return false;
}

static bool encode(srv_model *m, const char *text, int32_t **ids, size_t *n, srv_error *err) {
    og_status *st = og_tokenizer_encode(m->tok, text, strlen(text), 0, ids, n);
    if (st) {
        srv_fail_status(err, st, "messages", "tokenizing the rendered messages");
        return false;
    }
    return true;
}

bool srv_media_images_prompt(srv_model *m, srv_media *md, const char *text, int32_t **ids,
                             size_t *n, srv_error *err) {
    bool gemma = m->model->vision_gemma3;
    size_t found = gemma ? gen_vision_gemma_placeholders(text) : gen_vision_placeholders(text);
    if (found != (size_t)md->n_images) {
        srv_fail(err, 400, "messages", "the chat template wrote %zu image placeholder%s "
                 "(%s) for the %d image%s of the messages; it must write one for "
                 "each {\"type\": \"image\"} part", found, found == 1 ? "" : "s",
                 gemma ? "<start_of_image>" : "<|vision_start|>", md->n_images,
                 md->n_images == 1 ? "" : "s");
        return false;
    }
    og_images *im = NULL;
    og_image_processor *pr = NULL;
    char *expanded = NULL;
    if (!load_images(md, &im, err)) return false;
    og_status *st = og_image_processor_open(m->dir, &pr);
    if (!st) st = og_image_processor_process(pr, im, &md->nt);
    og_tensor *grid = st ? NULL : og_named_tensors_find(md->nt, "image_grid_thw");
    og_tensor *pv = st ? NULL : og_named_tensors_find(md->nt, "pixel_values");
    if (!st && (!pv || (!grid && !gemma)))
        st = og_errorf(OG_ERR_UNSUPPORTED, "the processor (%s) gives no pixel_values%s",
                       og_image_processor_name(pr), gemma ? "" : " and image_grid_thw");
    if (!st && gemma) st = gen_vision_expand_gemma(text, md->n_images, false, &expanded);
    if (!st && !gemma)
        st = gen_vision_expand_prompt(m->model, text, og_tensor_data(grid), md->n_images, false,
                                      &expanded);
    og_image_processor_free(pr);
    og_images_free(im);
    if (st) {
        srv_fail_status(err, st, "messages", "preprocessing the images");
        return false;
    }
    bool ok = encode(m, expanded, ids, n, err);
    free(expanded);
    md->count = gemma ? 1 : 2;
    md->input_names[0] = "pixel_values";
    md->inputs[0] = pv;
    md->input_names[1] = "image_grid_thw";
    md->inputs[1] = grid;
    return ok;
}

/* The decoder prompt of a Whisper chat: the text of the messages' text parts and string
 * contents (system messages aside), else the default. */
static bool whisper_text(const char *messages_json, char **out, srv_error *err) {
    cJSON *msgs = cJSON_Parse(messages_json);
    srv_buf b = {0};
    const cJSON *msg;
    cJSON_ArrayForEach(msg, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (cJSON_IsString(role) && !strcmp(role->valuestring, "system")) continue;
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content"), *part;
        if (cJSON_IsString(c)) srv_buf_add(&b, c->valuestring, strlen(c->valuestring));
        if (!cJSON_IsArray(c)) continue;
        cJSON_ArrayForEach(part, c) {
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (cJSON_IsString(tx)) srv_buf_add(&b, tx->valuestring, strlen(tx->valuestring));
        }
    }
    cJSON_Delete(msgs);
    const char *t = b.p ? b.p : "";
    while (*t == ' ' || *t == '\n') t++;
    if (*t && strncmp(t, "<|startoftranscript|>", 21)) {
        srv_fail(err, 400, "messages", "a Whisper package's chat takes an audio part and, "
                 "optionally, its decoder prompt as text (e.g. %s); this text is not one",
                 WHISPER_PROMPT);
        srv_buf_free(&b);
        return false;
    }
    *out = strdup(*t ? t : WHISPER_PROMPT);
    srv_buf_free(&b);
    if (!*out) srv_fail(err, 500, "", "out of memory");
    return *out != NULL;
}

bool srv_media_audio_prompt(srv_model *m, srv_media *md, const char *messages_json,
                            int32_t **ids, size_t *n, srv_error *err) {
    if (md->n_audio != 1 || md->n_images) {
        srv_fail(err, 400, "messages", "a Whisper package's chat takes one audio part (the "
                 "messages have %d, and %d images)", md->n_audio, md->n_images);
        return false;
    }
    const void *data[1] = {0};
    size_t size[1] = {0};
    const char *names[1] = {0};
    gather(md, true, data, size, names);
    og_audios *a = NULL;
    og_status *st = og_audios_load(data, size, 1, &a);
    if (st) {
        srv_fail_status(err, st, names[0], names[0]);
        return false;
    }
    const og_model *om = m->model;
    st = og_audios_whisper_features(a, om->encoder_mels > 0 ? (int)om->encoder_mels : 80,
                                    &md->features);
    og_audios_free(a);
    if (st) {
        srv_fail_status(err, st, names[0], names[0]);
        return false;
    }
    char *text = NULL;
    if (!whisper_text(messages_json, &text, err)) return false;
    bool ok = encode(m, text, ids, n, err);
    free(text);
    md->count = 1;
    md->input_names[0] = "audio_features"; /* onnxruntime-genai's name */
    md->inputs[0] = md->features;
    return ok;
}
