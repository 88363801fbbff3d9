/* processor_config.json's image ops, run as onnxruntime-extensions runs them for
 * onnxruntime-genai 0.18 (the arithmetic is theirs: float Rescale by multiplication,
 * Normalize as (x - mean) / std in float, Pillow's resampling; the code is ours). */
#include "media/processor.h"

#include "base/pkg_file.h"
#include "base/tensor.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum op_kind {
    OP_DECODE,       /* DecodeImage: color_space RGB or BGR */
    OP_CONVERT_RGB,  /* ConvertRGB: swaps channels 0 and 2 */
    OP_RESIZE,       /* Resize */
    OP_RESCALE,      /* Rescale: u8 -> float, times rescale_factor */
    OP_NORMALIZE,    /* Normalize */
    OP_PATCH,        /* PatchImage: Qwen-VL patches and image_grid_thw */
    OP_PHI3,         /* Phi3ImageTransform: HD crops + global image */
    OP_PERMUTE       /* Permute3D with dims [2, 0, 1]: HWC -> CHW (Gemma 3) */
} op_kind;

typedef struct op {
    op_kind kind;
    int bgr;                          /* DecodeImage */
    int64_t height, width;            /* Resize: fixed target */
    int smart;                        /* Resize: Qwen smart resize */
    int64_t min_pixels, max_pixels;   /* Resize (smart) */
    int64_t patch, merge, temporal;   /* Resize (smart), PatchImage */
    media_filter filter;              /* Resize */
    float scale;                      /* Rescale */
    float mean[3], std[3];            /* Normalize */
    int swap;                         /* Normalize: qwen2_5_vl / qwen3_vl reads B, G, R */
} op;

struct media_processor {
    char *name;
    char *file;
    int n_ops;
    op ops[16];
};

/* ---- reading processor_config.json ---- */

static og_status *attr_int(const char *file, const char *optype, const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        fabs(v->valuedouble) > 9e15)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s attribute '%s' is not an integer", file,
                         optype, v->string);
    *out = (int64_t)v->valuedouble;
    return NULL;
}

static og_status *attr_floats3(const char *file, const char *optype, const cJSON *v,
                               float out[3]) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s attribute '%s' is not 3 numbers", file,
                         optype, v->string);
    for (int i = 0; i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(e))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s attribute '%s' is not 3 numbers",
                             file, optype, v->string);
        out[i] = (float)e->valuedouble; /* their double -> float */
    }
    return NULL;
}

static og_status *bad_attr(const char *file, const char *optype, const cJSON *a) {
    return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s attribute '%s' is not supported", file, optype,
                     a->string);
}

static og_status *read_op(const char *file, const cJSON *jop, op *o) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(jop, "type");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(jop, "attrs");
    if (!cJSON_IsString(type))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: an operation without a \"type\"", file);
    const char *t = type->valuestring;
    memset(o, 0, sizeof *o);
    const cJSON *a;
    if (strcmp(t, "DecodeImage") == 0) {
        o->kind = OP_DECODE;
        cJSON_ArrayForEach(a, attrs) {
            if (strcmp(a->string, "color_space") != 0 || !cJSON_IsString(a))
                return bad_attr(file, t, a);
            if (strcasecmp(a->valuestring, "BGR") == 0) o->bgr = 1;
            else if (strcasecmp(a->valuestring, "RGB") != 0)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: DecodeImage color_space '%s'", file,
                                 a->valuestring);
        }
    } else if (strcmp(t, "ConvertRGB") == 0) {
        o->kind = OP_CONVERT_RGB;
    } else if (strcmp(t, "Resize") == 0) {
        o->kind = OP_RESIZE;
        o->height = o->width = 256;
        o->filter = MEDIA_FILTER_BICUBIC;
        o->min_pixels = 3136, o->max_pixels = 12845056, o->patch = 14, o->merge = 2;
        cJSON_ArrayForEach(a, attrs) {
            const char *k = a->string;
            int64_t v = 0;
            if (strcmp(k, "interpolation") == 0) {
                const char *s = cJSON_IsString(a) ? a->valuestring : "";
                if (strcmp(s, "LINEAR") == 0) o->filter = MEDIA_FILTER_BILINEAR;
                else if (strcmp(s, "CUBIC") == 0) o->filter = MEDIA_FILTER_BICUBIC;
                else if (strcmp(s, "LANCZOS") == 0) o->filter = MEDIA_FILTER_LANCZOS;
                else return og_errorf(OG_ERR_UNSUPPORTED, "%s: Resize interpolation '%s'",
                                      file, s);
                continue;
            }
            OG_TRY(attr_int(file, t, a, &v));
            if (strcmp(k, "height") == 0) o->height = v;
            else if (strcmp(k, "width") == 0) o->width = v;
            /* keep_aspect_ratio changes nothing in their Resize: the scale it computes
             * compares the target with itself */
            else if (strcmp(k, "keep_aspect_ratio") == 0) (void)v;
            else if (strcmp(k, "smart_resize") == 0) o->smart = v != 0;
            else if (strcmp(k, "min_pixels") == 0) o->min_pixels = v;
            else if (strcmp(k, "max_pixels") == 0) o->max_pixels = v;
            else if (strcmp(k, "patch_size") == 0) o->patch = v;
            else if (strcmp(k, "merge_size") == 0) o->merge = v;
            else return bad_attr(file, t, a);
        }
        if (o->height <= 0 || o->width <= 0 || o->height > MEDIA_MAX_SIDE ||
            o->width > MEDIA_MAX_SIDE || o->patch <= 0 || o->merge <= 0 ||
            o->patch * o->merge > MEDIA_MAX_SIDE || o->min_pixels < 0 ||
            o->max_pixels <= 0 || o->max_pixels > MEDIA_MAX_PIXELS)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: Resize attributes out of range", file);
    } else if (strcmp(t, "Rescale") == 0) {
        o->kind = OP_RESCALE;
        o->scale = 1.0f / 255.0f;
        cJSON_ArrayForEach(a, attrs) {
            if (strcmp(a->string, "rescale_factor") != 0 || !cJSON_IsNumber(a))
                return bad_attr(file, t, a);
            o->scale = (float)a->valuedouble;
        }
    } else if (strcmp(t, "Normalize") == 0) {
        o->kind = OP_NORMALIZE;
        const float m[3] = {0.48145466f, 0.4578275f, 0.40821073f};
        const float s[3] = {0.26862954f, 0.26130258f, 0.27577711f};
        memcpy(o->mean, m, sizeof m);
        memcpy(o->std, s, sizeof s);
        cJSON_ArrayForEach(a, attrs) {
            int64_t v;
            if (strcmp(a->string, "mean") == 0) OG_TRY(attr_floats3(file, t, a, o->mean));
            else if (strcmp(a->string, "std") == 0) OG_TRY(attr_floats3(file, t, a, o->std));
            else if (strcmp(a->string, "qwen2_5_vl") == 0 || strcmp(a->string, "qwen3_vl") == 0) {
                OG_TRY(attr_int(file, t, a, &v));
                o->swap = v != 0;
            } else return bad_attr(file, t, a);
        }
    } else if (strcmp(t, "PatchImage") == 0) {
        o->kind = OP_PATCH;
        o->patch = 14, o->temporal = 2, o->merge = 2;
        cJSON_ArrayForEach(a, attrs) {
            int64_t v;
            OG_TRY(attr_int(file, t, a, &v));
            if (strcmp(a->string, "patch_size") == 0) o->patch = v;
            else if (strcmp(a->string, "temporal_patch_size") == 0) o->temporal = v;
            else if (strcmp(a->string, "merge_size") == 0) o->merge = v;
            else return bad_attr(file, t, a);
        }
        if (o->patch <= 0 || o->patch > 1024 || o->temporal <= 0 || o->temporal > 64 ||
            o->merge <= 0 || o->merge > 64)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: PatchImage attributes out of range",
                             file);
    } else if (strcmp(t, "Permute3D") == 0) {
        o->kind = OP_PERMUTE;
        cJSON_ArrayForEach(a, attrs) {
            if (strcmp(a->string, "dims") != 0 || cJSON_GetArraySize(a) != 3)
                return bad_attr(file, t, a);
            int64_t d[3];
            for (int i = 0; i < 3; i++)
                OG_TRY(attr_int(file, t, cJSON_GetArrayItem(a, i), &d[i]));
            if (d[0] != 2 || d[1] != 0 || d[2] != 1)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: Permute3D dims [%lld, %lld, %lld]; "
                                 "only [2, 0, 1] (to channels first) is implemented", file,
                                 (long long)d[0], (long long)d[1], (long long)d[2]);
        }
    } else if (strcmp(t, "Phi3ImageTransform") == 0) {
        /* Its num_crops and num_img_tokens attributes are read by nobody: the op always
         * makes 16 crops of 336 pixels and counts tokens from the crops. */
        o->kind = OP_PHI3;
    } else {
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: image operation '%s' is not implemented",
                         file, t);
    }
    return NULL;
}

static og_status *config_path(const char *path, char **out) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return og_errorf(OG_ERR_NOT_FOUND, "%s: no such file or folder", path);
    if (!S_ISDIR(sb.st_mode)) {
        *out = strdup(path);
        return *out ? NULL : og_oom();
    }
    const char *rel = "processor_config.json";
    char *gpath, *text = NULL;
    size_t len;
    if (asprintf(&gpath, "%s/genai_config.json", path) < 0) return og_oom();
    cJSON *g = NULL;
    /* a folder without genai_config.json (or with an unreadable one) reads
     * processor_config.json */
    og_status *gst = pkg_read_file(gpath, PKG_MAX_JSON_BYTES, &text, &len);
    int have = gst == NULL;
    og_status_free(gst);
    if (have) {
        g = cJSON_ParseWithLength(text, len);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g, "model"),
                                             "vision"),
            "config_filename");
        if (cJSON_IsString(v)) rel = v->valuestring;
    }
    og_status *st = pkg_path_join(path, rel, gpath, "model.vision.config_filename", out);
    cJSON_Delete(g);
    free(text);
    free(gpath);
    return st;
}

og_status *media_processor_open(const char *path, media_processor **out) {
    if (!path || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "image processor: NULL argument");
    char *file;
    OG_TRY(config_path(path, &file));
    char *text;
    size_t len;
    og_status *st = pkg_read_file(file, PKG_MAX_JSON_BYTES, &text, &len);
    if (st) {
        free(file);
        return st;
    }
    media_processor *p = calloc(1, sizeof *p);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!p) {
        st = og_oom();
        goto done;
    }
    p->file = file;
    file = NULL;
    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(root, "processor");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(proc, "name");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(proc, "transforms");
    if (!root || !cJSON_IsArray(list)) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: %s", p->file,
                       root ? "no processor.transforms list" : "not valid JSON");
        goto done;
    }
    p->name = strdup(cJSON_IsString(name) ? name->valuestring : "");
    if (!p->name) {
        st = og_oom();
        goto done;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        if (p->n_ops == (int)(sizeof p->ops / sizeof p->ops[0])) {
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: more than %d operations", p->file,
                           p->n_ops);
            goto done;
        }
        st = read_op(p->file, cJSON_GetObjectItemCaseSensitive(item, "operation"),
                     &p->ops[p->n_ops++]);
        if (st) goto done;
    }
    /* The ops must chain: u8 image ops, then Rescale/Normalize on floats, ending in
     * PatchImage; or Phi3ImageTransform straight after the u8 ops. */
    int floats = 0, ended = 0;
    for (int i = 0; i < p->n_ops && !st; i++) {
        op_kind k = p->ops[i].kind;
        if (ended)
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: operation %d follows the one that makes "
                           "the outputs", p->file, i);
        else if ((k == OP_NORMALIZE || k == OP_PATCH || k == OP_PERMUTE) && !floats)
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: operation %d needs a Rescale before it",
                           p->file, i);
        else if ((k == OP_DECODE || k == OP_CONVERT_RGB || k == OP_RESIZE || k == OP_PHI3 ||
                  k == OP_RESCALE) && floats)
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: operation %d takes 8-bit pixels after a "
                           "Rescale", p->file, i);
        if (k == OP_RESCALE) floats = 1;
        if (k == OP_PATCH || k == OP_PHI3 || k == OP_PERMUTE) ended = 1;
    }
    if (!st && !ended)
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: no PatchImage, Phi3ImageTransform or "
                       "Permute3D makes the model's inputs", p->file);
done:
    cJSON_Delete(root);
    free(file);
    if (st) {
        media_processor_free(p);
        return st;
    }
    *out = p;
    return NULL;
}

void media_processor_free(media_processor *p) {
    if (!p) return;
    free(p->name);
    free(p->file);
    free(p);
}

const char *media_processor_name(const media_processor *p) { return p ? p->name : ""; }

/* ---- one image through the ops ---- */

typedef struct work {
    int h, w;
    uint8_t *u8; /* (h, w, 3) before Rescale */
    float *f;    /* (h, w, 3) after */
    /* results */
    float *pixels;     /* PatchImage: (rows, cols); Phi3: (17, 3, 336, 336) */
    int64_t rows, cols;
    int64_t grid[3];   /* PatchImage */
    int64_t sizes[2];  /* Phi3 */
    int64_t tokens;
} work;

static void work_free(work *w) {
    free(w->u8);
    free(w->f);
    free(w->pixels);
    memset(w, 0, sizeof *w);
}

static void swap_rb(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t t = p[i * 3];
        p[i * 3] = p[i * 3 + 2];
        p[i * 3 + 2] = t;
    }
}

/* Qwen2-VL's smart_resize: the sides rounded to multiples of patch * merge, then scaled
 * into [min_pixels, max_pixels] keeping the aspect ratio. */
static og_status *smart_size(const char *file, const op *o, int64_t h, int64_t w, int64_t *oh,
                             int64_t *ow) {
    int64_t f = o->patch * o->merge;
    double ratio = (double)(h > w ? h : w) / (double)(h > w ? w : h);
    if (ratio > 200.0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: Resize: an image of %lldx%lld has an "
                         "aspect ratio of %.1f, more than 200", file, (long long)w, (long long)h,
                         ratio);
    int64_t hb = (int64_t)(round((double)h / f) * f), wb = (int64_t)(round((double)w / f) * f);
    if (hb < f) hb = f;
    if (wb < f) wb = f;
    if (hb * wb > o->max_pixels) {
        double beta = sqrt((double)(h * w) / o->max_pixels);
        hb = (int64_t)(floor((double)(int64_t)(h / beta) / f) * f);
        wb = (int64_t)(floor((double)(int64_t)(w / beta) / f) * f);
    } else if (hb * wb < o->min_pixels) {
        double beta = sqrt((double)o->min_pixels / (double)(h * w));
        hb = (int64_t)(ceil((double)(int64_t)(h * beta) / f) * f);
        wb = (int64_t)(ceil((double)(int64_t)(w * beta) / f) * f);
    }
    if (hb <= 0 || wb <= 0 || hb > MEDIA_MAX_SIDE || wb > MEDIA_MAX_SIDE)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: Resize: an image of %lldx%lld resizes to "
                         "%lldx%lld", file, (long long)w, (long long)h, (long long)wb,
                         (long long)hb);
    *oh = hb;
    *ow = wb;
    return NULL;
}

static og_status *run_resize(const char *file, const op *o, work *wk) {
    int64_t oh = o->height, ow = o->width;
    if (o->smart) OG_TRY(smart_size(file, o, wk->h, wk->w, &oh, &ow));
    uint8_t *dst = malloc((size_t)oh * ow * 3);
    if (!dst) return og_oom_for((size_t)oh * ow * 3, "Resize to %lldx%lld", (long long)ow,
                                (long long)oh);
    og_status *st = media_resize_u8(wk->u8, wk->w, wk->h, 3, dst, (int)ow, (int)oh, o->filter);
    if (st) {
        free(dst);
        return st;
    }
    free(wk->u8);
    wk->u8 = dst;
    wk->h = (int)oh;
    wk->w = (int)ow;
    return NULL;
}

static og_status *run_patch(const char *file, const op *o, work *wk) {
    int64_t P = o->patch, M = o->merge, T = o->temporal, C = 3;
    if (wk->h % (P * M) || wk->w % (P * M))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: PatchImage: a %dx%d image is not made "
                         "of %lldx%lld merged patches", file, wk->w, wk->h, (long long)(P * M),
                         (long long)(P * M));
    int64_t gh = wk->h / P, gw = wk->w / P;
    int64_t rows = gh * gw, cols = C * T * P * P;
    float *out = malloc(sizeof(float) * rows * cols);
    if (!out) return og_oom_for(sizeof(float) * rows * cols, "PatchImage");
    /* One frame repeated temporal times. Rows run over the merge blocks (row-major),
     * then the patches inside a block; columns over channel, frame, patch row, column. */
    int64_t r = 0;
    for (int64_t bh = 0; bh < gh / M; bh++)
        for (int64_t bw = 0; bw < gw / M; bw++)
            for (int64_t m1 = 0; m1 < M; m1++)
                for (int64_t m2 = 0; m2 < M; m2++, r++) {
                    int64_t y0 = (bh * M + m1) * P, x0 = (bw * M + m2) * P;
                    float *dst = out + r * cols;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t t = 0; t < T; t++)
                            for (int64_t py = 0; py < P; py++)
                                for (int64_t px = 0; px < P; px++)
                                    *dst++ = wk->f[((y0 + py) * wk->w + x0 + px) * C + c];
                }
    wk->pixels = out;
    wk->rows = rows;
    wk->cols = cols;
    wk->grid[0] = 1;
    wk->grid[1] = gh;
    wk->grid[2] = gw;
    wk->tokens = gh * gw / (M * M);
    return NULL;
}

#define PHI3_SIDE 336
#define PHI3_CROPS 16

/* Phi-3-vision's HD transform: the image scaled (bilinear) so that its long side holds
 * `scale` tiles of 336, the short side padded with white to whole tiles, normalised with
 * CLIP's mean and std; the global view is that normalised image resized (bicubic, per
 * channel in float) to 336x336. */
static og_status *run_phi3(const char *file, work *wk) {
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    static const float stdv[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    int w = wk->w, h = wk->h;
    double ratio = w >= h ? (double)w / h : (double)h / w;
    int scale = 1;
    while (scale * ceil(scale / ratio) <= PHI3_CROPS) scale++;
    scale--;
    int64_t nw = (int64_t)scale * PHI3_SIDE, nh = (int64_t)(nw / ratio);
    if (w < h) {
        int64_t t = nw;
        nw = nh;
        nh = t;
    }
    if (nw <= 0 || nh <= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: Phi3ImageTransform: a %dx%d image "
                         "scales to %lldx%lld", file, w, h, (long long)nw, (long long)nh);
    uint8_t *scaled = malloc((size_t)nw * nh * 3);
    if (!scaled) return og_oom_for((size_t)nw * nh * 3, "Phi3ImageTransform");
    og_status *st = media_resize_u8(wk->u8, w, h, 3, scaled, (int)nw, (int)nh,
                                    MEDIA_FILTER_BILINEAR);
    if (st) {
        free(scaled);
        return st;
    }
    /* pad the short side to whole tiles, the image centred (the top/left pad rounds down) */
    int64_t ph = nh, pw = nw, top = 0, left = 0;
    if (w < h) {
        pw = (nw + PHI3_SIDE - 1) / PHI3_SIDE * PHI3_SIDE;
        left = (pw - nw) / 2;
    } else {
        ph = (nh + PHI3_SIDE - 1) / PHI3_SIDE * PHI3_SIDE;
        top = (ph - nh) / 2;
    }
    size_t plane = (size_t)ph * pw;
    float *chw = malloc(sizeof(float) * plane * 3);
    size_t crop = (size_t)PHI3_SIDE * PHI3_SIDE;
    float *out = calloc((PHI3_CROPS + 1) * 3 * crop, sizeof(float));
    if (!chw || !out) {
        free(scaled), free(chw), free(out);
        return og_oom_for(sizeof(float) * plane * 3, "Phi3ImageTransform");
    }
    float white[3];
    for (int c = 0; c < 3; c++) white[c] = ((float)255 / 255.f - mean[c]) / stdv[c];
    for (int c = 0; c < 3; c++)
        for (int64_t y = 0; y < ph; y++)
            for (int64_t x = 0; x < pw; x++) {
                int64_t sy = y - top, sx = x - left;
                float v = white[c];
                if (sy >= 0 && sy < nh && sx >= 0 && sx < nw)
                    v = ((float)scaled[(sy * nw + sx) * 3 + c] / 255.f - mean[c]) / stdv[c];
                chw[c * plane + y * pw + x] = v;
            }
    free(scaled);
    for (int c = 0; c < 3 && !st; c++)
        st = media_resize_f32(chw + c * plane, (int)pw, (int)ph, out + c * crop, PHI3_SIDE,
                              PHI3_SIDE, MEDIA_FILTER_BICUBIC);
    int64_t m = ph / PHI3_SIDE, n = pw / PHI3_SIDE;
    for (int64_t i = 0; i < m && !st; i++)
        for (int64_t j = 0; j < n; j++)
            for (int c = 0; c < 3; c++) {
                float *dst = out + ((1 + i * n + j) * 3 + c) * crop;
                for (int y = 0; y < PHI3_SIDE; y++)
                    memcpy(dst + (size_t)y * PHI3_SIDE,
                           chw + c * plane + (i * PHI3_SIDE + y) * pw + j * PHI3_SIDE,
                           sizeof(float) * PHI3_SIDE);
            }
    free(chw);
    if (st) {
        free(out);
        return st;
    }
    wk->pixels = out;
    wk->sizes[0] = ph;
    wk->sizes[1] = pw;
    wk->tokens = (m * n + 1) * 144 + 1 + (m + 1) * 12;
    return NULL;
}

static og_status *run_one(const media_processor *p, const media_image *img, work *wk) {
    size_t npix = (size_t)img->width * img->height;
    wk->h = img->height;
    wk->w = img->width;
    wk->u8 = malloc(npix * 3);
    if (!wk->u8) return og_oom_for(npix * 3, "an image of %dx%d", img->width, img->height);
    memcpy(wk->u8, img->rgb, npix * 3);
    for (int i = 0; i < p->n_ops; i++) {
        const op *o = &p->ops[i];
        size_t n = (size_t)wk->h * wk->w;
        switch (o->kind) {
        case OP_DECODE:
            if (o->bgr) swap_rb(wk->u8, n);
            break;
        case OP_CONVERT_RGB: swap_rb(wk->u8, n); break;
        case OP_RESIZE: OG_TRY(run_resize(p->file, o, wk)); break;
        case OP_RESCALE:
            wk->f = malloc(sizeof(float) * n * 3);
            if (!wk->f) return og_oom_for(sizeof(float) * n * 3, "Rescale");
            for (size_t j = 0; j < n * 3; j++) wk->f[j] = (float)wk->u8[j] * o->scale;
            break;
        case OP_NORMALIZE:
            for (size_t j = 0; j < n; j++) {
                float *px = wk->f + j * 3;
                float a = px[0], b = px[1], c = px[2];
                if (o->swap) a = px[2], c = px[0];
                px[0] = (a - o->mean[0]) / o->std[0];
                px[1] = (b - o->mean[1]) / o->std[1];
                px[2] = (c - o->mean[2]) / o->std[2];
            }
            break;
        case OP_PATCH: OG_TRY(run_patch(p->file, o, wk)); break;
        case OP_PHI3: OG_TRY(run_phi3(p->file, wk)); break;
        case OP_PERMUTE: {
            float *chw = malloc(sizeof(float) * n * 3);
            if (!chw) return og_oom_for(sizeof(float) * n * 3, "Permute3D");
            for (size_t j = 0; j < n; j++)
                for (int c = 0; c < 3; c++) chw[c * n + j] = wk->f[j * 3 + c];
            wk->pixels = chw;
            break;
        }
        }
    }
    return NULL;
}

/* ---- gathering ---- */

static og_status *add_output(media_outputs *o, const char *name, og_dtype dt,
                             const int64_t *dims, int rank, og_tensor **t) {
    OG_TRY(og_tensor_create(dt, dims, rank, t));
    o->names[o->count] = name;
    o->tensors[o->count++] = *t;
    return NULL;
}

og_status *media_processor_run(const media_processor *p, const media_image *images, size_t n,
                               media_outputs *out) {
    if (!p || !out || (n && !images))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "image processor: NULL argument");
    if (n == 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "image processor: no images");
    memset(out, 0, sizeof *out);
    work *wk = calloc(n, sizeof *wk);
    if (!wk) return og_oom();
    og_status *st = NULL;
    for (size_t i = 0; i < n && !st; i++) {
        st = run_one(p, &images[i], &wk[i]);
        if (st) st = og_status_wrap(st, "image %zu", i);
    }
    op_kind last = p->ops[p->n_ops - 1].kind;
    og_tensor *t;
    if (!st && last == OP_PERMUTE) {
        /* (images, 3, h, w): one size for all, as a fixed-size Resize makes them */
        for (size_t i = 1; i < n && !st; i++)
            if (wk[i].h != wk[0].h || wk[i].w != wk[0].w)
                st = og_errorf(OG_ERR_UNSUPPORTED, "image processor: images %dx%d and %dx%d "
                               "in one call, and the config resizes to no fixed size",
                               wk[0].w, wk[0].h, wk[i].w, wk[i].h);
        int64_t pd[4] = {(int64_t)n, 3, wk[0].h, wk[0].w};
        size_t each = (size_t)3 * wk[0].h * wk[0].w;
        if (!st) st = add_output(out, "pixel_values", OG_FLOAT32, pd, 4, &t);
        for (size_t i = 0; i < n && !st; i++)
            memcpy((float *)t->data + i * each, wk[i].pixels, each * sizeof(float));
    } else if (!st && last == OP_PHI3) {
        int64_t pd[5] = {(int64_t)n, PHI3_CROPS + 1, 3, PHI3_SIDE, PHI3_SIDE};
        size_t each = (size_t)(PHI3_CROPS + 1) * 3 * PHI3_SIDE * PHI3_SIDE;
        st = add_output(out, "pixel_values", OG_FLOAT32, pd, 5, &t);
        for (size_t i = 0; i < n && !st; i++)
            memcpy((float *)t->data + i * each, wk[i].pixels, each * sizeof(float));
        int64_t sd[2] = {(int64_t)n, 2}, kd[2] = {(int64_t)n, 1};
        if (!st) st = add_output(out, "image_sizes", OG_INT64, sd, 2, &t);
        for (size_t i = 0; i < n && !st; i++) memcpy((int64_t *)t->data + 2 * i, wk[i].sizes, 16);
        if (!st) st = add_output(out, "num_image_tokens", OG_INT64, kd, 2, &t);
        for (size_t i = 0; i < n && !st; i++) ((int64_t *)t->data)[i] = wk[i].tokens;
    } else if (!st) {
        int64_t rows = 0, tokens = 0;
        for (size_t i = 0; i < n; i++) rows += wk[i].rows, tokens += wk[i].tokens;
        int64_t pd[2] = {rows, wk[0].cols}, gd[2] = {(int64_t)n, 3}, kd[1] = {1};
        st = add_output(out, "pixel_values", OG_FLOAT32, pd, 2, &t);
        size_t at = 0;
        for (size_t i = 0; i < n && !st; i++) {
            size_t sz = (size_t)wk[i].rows * wk[i].cols;
            memcpy((float *)t->data + at, wk[i].pixels, sz * sizeof(float));
            at += sz;
        }
        if (!st) st = add_output(out, "image_grid_thw", OG_INT64, gd, 2, &t);
        for (size_t i = 0; i < n && !st; i++) memcpy((int64_t *)t->data + 3 * i, wk[i].grid, 24);
        if (!st) st = add_output(out, "num_image_tokens", OG_INT64, kd, 1, &t);
        if (!st) ((int64_t *)t->data)[0] = tokens;
    }
    for (size_t i = 0; i < n; i++) work_free(&wk[i]);
    free(wk);
    if (st) media_outputs_free(out);
    return st;
}

void media_outputs_free(media_outputs *o) {
    if (!o) return;
    for (int i = 0; i < o->count; i++) og_tensor_free(o->tensors[i]);
    memset(o, 0, sizeof *o);
}
