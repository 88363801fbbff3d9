/* tokenizer.json and tokenizer_config.json from a GGUF file's tokenizer.ggml.* metadata,
 * in the shapes Hugging Face's converters give the same tokenizers:
 *  - "gpt2": byte-level BPE (the tokens are already in the byte-to-unicode alphabet,
 *    merges given), pre-tokenized by the regex tokenizer.ggml.pre names;
 *  - "llama": SentencePiece BPE over '\u2581'-spaced pieces with <0xNN> byte fallback.
 *    GGUF keeps scores, not merges: llama.cpp (like sentencepiece) merges at each step
 *    the adjacent pair whose concatenation scores best, leftmost on ties, which a BPE
 *    model reproduces when its merges hold every split (a, b) of every piece, with a
 *    and b in the vocabulary, ranked by the piece's score.
 * Control and user-defined tokens become added tokens; the chat template goes into
 * tokenizer_config.json. */
#include "convert/convert_internal.h"

#include "base/arena.h"
#include "base/strmap.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* Split regexes of the byte-level pre-tokenizers, by tokenizer.ggml.pre (with the other
 * names llama.cpp gives the same pre-tokenizer). */
#define QWEN2_RE                                                                            \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"         \
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define LLAMA3_RE                                                                           \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"    \
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
static const struct {
    const char *pre, *regex;
    bool nfc, ignore_merges;
} pretoks[] = {
    {"qwen2", QWEN2_RE, true, false},
    {"deepseek-r1-qwen", QWEN2_RE, true, false},
    {"llama-bpe", LLAMA3_RE, false, true},
    {"llama3", LLAMA3_RE, false, true},
    {"llama-v3", LLAMA3_RE, false, true},
    {"gpt2", NULL, false, false}, /* ByteLevel's own GPT-2 regex */
    {"default", NULL, false, false},
};

typedef struct tok_src {
    const cv_model *m;
    const gguf_kv *tokens, *types, *scores, *merges;
    uint64_t n;
    char **text; /* NUL-terminated copies (arena) */
    arena mem;
} tok_src;

static int ttype(const tok_src *t, uint64_t i) {
    return t->types ? (int)gguf_arr_int(t->types, i) : TT_NORMAL;
}

static cJSON *added_token(const tok_src *t, uint64_t i, bool special) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", (double)i);
    cJSON_AddStringToObject(a, "content", t->text[i]);
    cJSON_AddBoolToObject(a, "single_word", 0);
    cJSON_AddBoolToObject(a, "lstrip", 0);
    cJSON_AddBoolToObject(a, "rstrip", 0);
    cJSON_AddBoolToObject(a, "normalized", 0);
    cJSON_AddBoolToObject(a, "special", special);
    return a;
}

static bool is_added(const tok_src *t, uint64_t i, bool spm) {
    int ty = ttype(t, i);
    return ty == TT_CONTROL || ty == TT_USER || (spm && ty == TT_UNKNOWN);
}

static cJSON *byte_level(const char *type) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "type", type);
    cJSON_AddBoolToObject(d, "add_prefix_space", 0);
    cJSON_AddBoolToObject(d, "trim_offsets", 0);
    cJSON_AddBoolToObject(d, "use_regex", 0);
    return d;
}

static cJSON *seq_item(const char *kind, const char *id, int type_id) {
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, kind);
    cJSON_AddStringToObject(in, "id", id);
    cJSON_AddNumberToObject(in, "type_id", type_id);
    return o;
}

/* "<bos> $A" (and "<bos> $A <bos> $B"), as HF writes an add_bos tokenizer's template */
static cJSON *bos_template(const tok_src *t, int64_t bos) {
    const char *b = t->text[bos];
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "TemplateProcessing");
    cJSON *single = cJSON_AddArrayToObject(p, "single"), *pair = cJSON_AddArrayToObject(p, "pair");
    cJSON_AddItemToArray(single, seq_item("SpecialToken", b, 0));
    cJSON_AddItemToArray(single, seq_item("Sequence", "A", 0));
    cJSON_AddItemToArray(pair, seq_item("SpecialToken", b, 0));
    cJSON_AddItemToArray(pair, seq_item("Sequence", "A", 0));
    cJSON_AddItemToArray(pair, seq_item("SpecialToken", b, 1));
    cJSON_AddItemToArray(pair, seq_item("Sequence", "B", 1));
    cJSON *st = cJSON_AddObjectToObject(p, "special_tokens"), *e = cJSON_AddObjectToObject(st, b);
    cJSON_AddStringToObject(e, "id", b);
    cJSON *ids = cJSON_AddArrayToObject(e, "ids"), *toks = cJSON_AddArrayToObject(e, "tokens");
    cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)bos));
    cJSON_AddItemToArray(toks, cJSON_CreateString(b));
    return p;
}

static cJSON *replace(const char *from, const char *to) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "type", "Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "pattern"), "String", from);
    cJSON_AddStringToObject(r, "content", to);
    return r;
}

typedef struct spm_merge {
    float score;
    uint32_t id, cut;
} spm_merge;

static int merge_cmp(const void *a, const void *b) {
    const spm_merge *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->cut < y->cut ? -1 : x->cut > y->cut;
}

static bool is_byte_piece(const tok_src *t, uint64_t i) { return ttype(t, i) == TT_BYTE; }

/* Every split of every ordinary piece into two ordinary pieces, best score first. */
static og_status *spm_merges(tok_src *t, cJSON *merges) {
    strmap ordinary;
    strmap_init(&ordinary);
    for (uint64_t i = 0; i < t->n; i++)
        if (ttype(t, i) == TT_NORMAL && !strmap_put(&ordinary, t->text[i], (int)i)) {
            strmap_free(&ordinary);
            return og_oom();
        }
    spm_merge *list = NULL;
    size_t n = 0, cap = 0;
    og_status *st = NULL;
    char *buf = NULL;
    size_t bufcap = 0;
    for (uint64_t i = 0; i < t->n && !st; i++) {
        if (ttype(t, i) != TT_NORMAL || is_byte_piece(t, i)) continue;
        const char *s = t->text[i];
        size_t len = strlen(s);
        if (len + 1 > bufcap) {
            bufcap = 2 * (len + 1);
            char *nb = realloc(buf, bufcap);
            if (!nb) {
                st = og_oom();
                break;
            }
            buf = nb;
        }
        for (size_t cut = 1; cut < len; cut++) {
            if (((unsigned char)s[cut] & 0xC0) == 0x80) continue; /* whole characters only */
            memcpy(buf, s, cut);
            buf[cut] = 0;
            if (strmap_get(&ordinary, buf, -1) < 0 || strmap_get(&ordinary, s + cut, -1) < 0)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 1024;
                spm_merge *nl = realloc(list, cap * sizeof *nl);
                if (!nl) {
                    st = og_oom();
                    break;
                }
                list = nl;
            }
            list[n++] = (spm_merge){gguf_arr_f32(t->scores, i), (uint32_t)i, (uint32_t)cut};
        }
    }
    if (!st) {
        qsort(list, n, sizeof *list, merge_cmp);
        for (size_t j = 0; j < n; j++) {
            const char *s = t->text[list[j].id];
            cJSON *pair = cJSON_CreateArray();
            cJSON_AddItemToArray(pair, cJSON_CreateString(t->text[list[j].id] + list[j].cut));
            char *a = strndup(s, list[j].cut);
            if (!a) {
                cJSON_Delete(pair);
                st = og_oom();
                break;
            }
            cJSON_InsertItemInArray(pair, 0, cJSON_CreateString(a));
            free(a);
            cJSON_AddItemToArray(merges, pair);
        }
    }
    free(buf);
    free(list);
    strmap_free(&ordinary);
    return st;
}

static og_status *gpt2_merges(tok_src *t, cJSON *merges) {
    if (!t->merges)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key 'tokenizer.ggml.merges' is missing (a "
                         "gpt2 tokenizer needs its merges)", t->m->path);
    OG_TRY(gguf_expect_array(t->merges, GGUF_STRING, 0));
    for (uint64_t i = 0; i < t->merges->n; i++) {
        const char *s;
        size_t len;
        gguf_arr_str(t->merges, i, &s, &len);
        const char *sp = memchr(s, ' ', len);
        if (!sp || sp == s || sp == s + len - 1)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: tokenizer.ggml.merges[%" PRIu64
                             "] is not 'A B'", t->m->path, i);
        char *a = strndup(s, (size_t)(sp - s)), *b = strndup(sp + 1, len - (size_t)(sp - s) - 1);
        if (!a || !b) {
            free(a);
            free(b);
            return og_oom();
        }
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateString(a));
        cJSON_AddItemToArray(pair, cJSON_CreateString(b));
        cJSON_AddItemToArray(merges, pair);
        free(a);
        free(b);
    }
    return NULL;
}

static bool key_bool(const gguf_file *g, const char *key, bool dflt) {
    int64_t v;
    og_status *st = gguf_get_i64_or(g, key, dflt, &v);
    if (st) {
        og_status_free(st);
        return dflt;
    }
    return v != 0;
}

static og_status *check_id(const tok_src *t, const char *key, int64_t id) {
    if (id < 0 || (uint64_t)id >= t->n)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %" PRId64 ", outside the %" PRIu64
                         " tokens", t->m->path, key, id, t->n);
    return NULL;
}

static og_status *write_config(tok_src *t, const char *dir, bool spm, bool add_bos, int64_t unk) {
    const cv_model *m = t->m;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddBoolToObject(c, "add_bos_token", add_bos);
    cJSON_AddBoolToObject(c, "add_eos_token", key_bool(m->g, "tokenizer.ggml.add_eos_token", 0));
    cJSON *dec = cJSON_AddObjectToObject(c, "added_tokens_decoder");
    for (uint64_t i = 0; i < t->n; i++) {
        if (!is_added(t, i, spm)) continue;
        char id[24];
        snprintf(id, sizeof id, "%" PRIu64, i);
        cJSON *a = cJSON_AddObjectToObject(dec, id);
        cJSON_AddStringToObject(a, "content", t->text[i]);
        cJSON_AddBoolToObject(a, "lstrip", 0);
        cJSON_AddBoolToObject(a, "normalized", 0);
        cJSON_AddBoolToObject(a, "rstrip", 0);
        cJSON_AddBoolToObject(a, "single_word", 0);
        cJSON_AddBoolToObject(a, "special", ttype(t, i) != TT_USER);
    }
    cJSON_AddStringToObject(c, "bos_token", t->text[m->bos]);
    cJSON_AddStringToObject(c, "eos_token", t->text[m->eos]);
    cJSON_AddStringToObject(c, "pad_token", t->text[m->pad]);
    if (unk >= 0) cJSON_AddStringToObject(c, "unk_token", t->text[unk]);
    const char *tpl;
    size_t len;
    if (gguf_find(m->g, "tokenizer.chat_template")) {
        OG_TRY(gguf_get_str(m->g, "tokenizer.chat_template", &tpl, &len));
        char *s = strndup(tpl, len);
        if (!s) {
            cJSON_Delete(c);
            return og_oom();
        }
        cJSON_AddStringToObject(c, "chat_template", s);
        free(s);
    }
    cJSON_AddBoolToObject(c, "clean_up_tokenization_spaces", 0);
    cJSON_AddNumberToObject(c, "model_max_length", (double)m->context);
    cJSON_AddStringToObject(c, "tokenizer_class", spm ? "LlamaTokenizer" : "PreTrainedTokenizerFast");
    return cv_write_json(dir, "tokenizer_config.json", c, true);
}

static og_status *build(tok_src *t, const char *dir) {
    const cv_model *m = t->m;
    const gguf_file *g = m->g;
    const char *s;
    size_t len;
    OG_TRY(gguf_get_str(g, "tokenizer.ggml.model", &s, &len));
    bool spm = len == 5 && !memcmp(s, "llama", 5);
    if (!spm && !(len == 4 && !memcmp(s, "gpt2", 4)))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model '%.*s' is not converted "
                         "(gpt2 and llama are)", m->path, (int)(len > 32 ? 32 : len), s);
    int pre = -1;
    if (!spm) {
        const char *p = "default";
        size_t plen = 7;
        if (gguf_find(g, "tokenizer.ggml.pre")) OG_TRY(gguf_get_str(g, "tokenizer.ggml.pre", &p, &plen));
        for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++)
            if (strlen(pretoks[i].pre) == plen && !memcmp(pretoks[i].pre, p, plen)) pre = (int)i;
        if (pre < 0)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: tokenizer.ggml.pre '%.*s' is not converted "
                             "(qwen2, deepseek-r1-qwen, llama-bpe, llama3, gpt2 and default are)", m->path,
                             (int)(plen > 32 ? 32 : plen), p);
    }
    t->tokens = gguf_find(g, "tokenizer.ggml.tokens");
    if (!t->tokens) return og_errorf(OG_ERR_INVALID_MODEL, "%s: key 'tokenizer.ggml.tokens' is missing", m->path);
    OG_TRY(gguf_expect_array(t->tokens, GGUF_STRING, 0));
    t->n = t->tokens->n;
    if ((int64_t)t->n > m->vocab)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %" PRIu64 " tokens but the embedding has %"
                         PRId64 " rows", m->path, t->n, m->vocab);
    if ((t->types = gguf_find(g, "tokenizer.ggml.token_type")))
        OG_TRY(gguf_expect_array(t->types, GGUF_I32, t->n));
    if ((t->scores = gguf_find(g, "tokenizer.ggml.scores")))
        OG_TRY(gguf_expect_array(t->scores, GGUF_F32, t->n));
    if (spm && !t->scores)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key 'tokenizer.ggml.scores' is missing (a "
                         "llama tokenizer needs them)", m->path);
    t->merges = gguf_find(g, "tokenizer.ggml.merges");
    t->text = arena_alloc(&t->mem, (size_t)t->n * sizeof *t->text);
    if (!t->text && t->n) return og_oom();
    for (uint64_t i = 0; i < t->n; i++) {
        gguf_arr_str(t->tokens, i, &s, &len);
        if (memchr(s, 0, len))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: token %" PRIu64 " holds a NUL byte", m->path, i);
        if (!(t->text[i] = arena_strndup(&t->mem, s, len))) return og_oom();
    }
    OG_TRY(check_id(t, "tokenizer.ggml.bos_token_id", m->bos));
    OG_TRY(check_id(t, "tokenizer.ggml.eos_token_id", m->eos));
    OG_TRY(check_id(t, "tokenizer.ggml.padding_token_id", m->pad));
    int64_t unk = -1;
    if (spm) {
        OG_TRY(gguf_get_i64_or(g, "tokenizer.ggml.unknown_token_id", 0, &unk));
        OG_TRY(check_id(t, "tokenizer.ggml.unknown_token_id", unk));
    }
    bool add_bos = key_bool(g, "tokenizer.ggml.add_bos_token", spm);

    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "version", "1.0");
    cJSON_AddNullToObject(j, "truncation");
    cJSON_AddNullToObject(j, "padding");
    cJSON *added = cJSON_AddArrayToObject(j, "added_tokens");
    for (uint64_t i = 0; i < t->n; i++)
        if (is_added(t, i, spm)) cJSON_AddItemToArray(added, added_token(t, i, ttype(t, i) != TT_USER));
    cJSON *model = cJSON_CreateObject();
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (spm) {
        cJSON *norm = cJSON_AddObjectToObject(j, "normalizer");
        cJSON_AddStringToObject(norm, "type", "Sequence");
        cJSON *ns = cJSON_AddArrayToObject(norm, "normalizers");
        if (key_bool(g, "tokenizer.ggml.add_space_prefix", true)) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "type", "Prepend");
            cJSON_AddStringToObject(p, "prepend", "\xe2\x96\x81");
            cJSON_AddItemToArray(ns, p);
        }
        cJSON_AddItemToArray(ns, replace(" ", "\xe2\x96\x81"));
        cJSON_AddNullToObject(j, "pre_tokenizer");
        if (add_bos) cJSON_AddItemToObject(j, "post_processor", bos_template(t, m->bos));
        else cJSON_AddNullToObject(j, "post_processor");
        cJSON *d = cJSON_AddObjectToObject(j, "decoder");
        cJSON_AddStringToObject(d, "type", "Sequence");
        cJSON *ds = cJSON_AddArrayToObject(d, "decoders");
        cJSON_AddItemToArray(ds, replace("\xe2\x96\x81", " "));
        cJSON *bf = cJSON_CreateObject(), *fu = cJSON_CreateObject(), *sp = cJSON_CreateObject();
        cJSON_AddStringToObject(bf, "type", "ByteFallback");
        cJSON_AddStringToObject(fu, "type", "Fuse");
        cJSON_AddStringToObject(sp, "type", "Strip");
        cJSON_AddStringToObject(sp, "content", " ");
        cJSON_AddNumberToObject(sp, "start", 1);
        cJSON_AddNumberToObject(sp, "stop", 0);
        cJSON_AddItemToArray(ds, bf);
        cJSON_AddItemToArray(ds, fu);
        cJSON_AddItemToArray(ds, sp);
        cJSON_AddStringToObject(model, "unk_token", t->text[unk]);
        cJSON_AddNullToObject(model, "continuing_subword_prefix");
        cJSON_AddNullToObject(model, "end_of_word_suffix");
        cJSON_AddBoolToObject(model, "fuse_unk", 1);
        cJSON_AddBoolToObject(model, "byte_fallback", 1);
        cJSON_AddBoolToObject(model, "ignore_merges", 0);
    } else {
        if (pretoks[pre].nfc) {
            cJSON *norm = cJSON_AddObjectToObject(j, "normalizer");
            cJSON_AddStringToObject(norm, "type", "NFC");
        } else {
            cJSON_AddNullToObject(j, "normalizer");
        }
        if (pretoks[pre].regex) {
            cJSON *pt = cJSON_AddObjectToObject(j, "pre_tokenizer");
            cJSON_AddStringToObject(pt, "type", "Sequence");
            cJSON *ps = cJSON_AddArrayToObject(pt, "pretokenizers");
            cJSON *split = cJSON_CreateObject();
            cJSON_AddStringToObject(split, "type", "Split");
            cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex",
                                    pretoks[pre].regex);
            cJSON_AddStringToObject(split, "behavior", "Isolated");
            cJSON_AddBoolToObject(split, "invert", 0);
            cJSON_AddItemToArray(ps, split);
            cJSON_AddItemToArray(ps, byte_level("ByteLevel"));
        } else {
            cJSON *bl = byte_level("ByteLevel");
            cJSON_ReplaceItemInObject(bl, "use_regex", cJSON_CreateBool(1));
            cJSON_AddItemToObject(j, "pre_tokenizer", bl);
        }
        if (add_bos) cJSON_AddItemToObject(j, "post_processor", bos_template(t, m->bos));
        else cJSON_AddItemToObject(j, "post_processor", byte_level("ByteLevel"));
        cJSON_AddItemToObject(j, "decoder", byte_level("ByteLevel"));
        cJSON_AddNullToObject(model, "unk_token");
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
        cJSON_AddStringToObject(model, "end_of_word_suffix", "");
        cJSON_AddBoolToObject(model, "fuse_unk", 0);
        cJSON_AddBoolToObject(model, "byte_fallback", 0);
        cJSON_AddBoolToObject(model, "ignore_merges", pretoks[pre].ignore_merges);
    }
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (uint64_t i = 0; i < t->n; i++) cJSON_AddNumberToObject(vocab, t->text[i], (double)i);
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    og_status *st = spm ? spm_merges(t, merges) : gpt2_merges(t, merges);
    cJSON_AddItemToObject(j, "model", model);
    if (st) {
        cJSON_Delete(j);
        return st;
    }
    OG_TRY(cv_write_json(dir, "tokenizer.json", j, false));
    return write_config(t, dir, spm, add_bos, unk);
}

og_status *cv_write_tokenizer(const cv_model *m, const char *out_dir) {
    tok_src t = {.m = m};
    arena_init(&t.mem);
    og_status *st = build(&t, out_dir);
    arena_free(&t.mem);
    return st;
}
