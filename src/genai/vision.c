/* Images through a Qwen vision-language package (see vision.h). */
#include "genai/vision.h"

#include "base/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of pixel_values image k has (t * h * w patches) and rows of features it gets. */
static int64_t grid_patches(const int64_t *g) { return g[0] * g[1] * g[2]; }

static og_status *check_inputs(const og_model *m, const og_tensor *pv, const og_tensor *grid) {
    if (og_tensor_dtype(pv) != OG_FLOAT32 || og_tensor_rank(pv) != 2)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: pixel_values must be float32 [patches, "
                         "values] (the image processor's output)", m->dir);
    if (og_tensor_dtype(grid) != OG_INT64 || og_tensor_rank(grid) != 2 ||
        og_tensor_dims(grid)[1] != 3)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: image_grid_thw must be int64 [images, 3]",
                         m->dir);
    const int64_t *g = og_tensor_data((og_tensor *)grid);
    int64_t n = og_tensor_dims(grid)[0], rows = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t *t = g + 3 * k;
        /* each axis bounded so that the product cannot overflow */
        if (t[0] < 1 || t[1] < 1 || t[2] < 1 || t[0] > 1024 || t[1] > 65536 || t[2] > 65536 ||
            t[1] % m->spatial_merge || t[2] % m->spatial_merge)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: image_grid_thw row %lld (%lld, %lld, "
                             "%lld) is not a grid of whole %dx%d merges", m->dir, (long long)k,
                             (long long)t[0], (long long)t[1], (long long)t[2], m->spatial_merge,
                             m->spatial_merge);
        rows += grid_patches(t);
    }
    if (rows != og_tensor_dims(pv)[0])
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: pixel_values has %lld patches, "
                         "image_grid_thw describes %lld", m->dir,
                         (long long)og_tensor_dims(pv)[0], (long long)rows);
    return NULL;
}

static og_status *run_encoder(og_model *m, og_tensor *pv, og_tensor *grid, og_tensor **out) {
    const char *in_names[2] = {m->vision_pixels, m->vision_grid};
    og_tensor *ins[2] = {pv, grid};
    const char *out_names[1] = {m->vision_features};
    *out = NULL;
    og_status *st = og_session_run(m->vision.s, in_names, ins, 2, out_names, out, 1);
    if (st) return og_status_wrap(st, "%s: the vision encoder (%s)", m->dir, m->vision.file);
    const og_tensor *f = *out;
    int64_t want = 0, mm = (int64_t)m->spatial_merge * m->spatial_merge;
    const int64_t *g = og_tensor_data(grid);
    for (int64_t k = 0; k < og_tensor_dims(grid)[0]; k++) want += grid_patches(g + 3 * k) / mm;
    if (og_tensor_rank(f) != 2 || og_tensor_dims(f)[0] != want ||
        (og_tensor_dtype(f) != OG_FLOAT32 && og_tensor_dtype(f) != OG_FLOAT16 &&
         og_tensor_dtype(f) != OG_BFLOAT16)) {
        og_tensor_free(*out);
        *out = NULL;
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the vision encoder %s returned '%s' of "
                         "another shape than [%lld image tokens, hidden] (float)", m->dir,
                         m->vision.file, m->vision_features, (long long)want);
    }
    return NULL;
}

og_status *gen_vision_encode(og_model *m, const og_tensor *pixel_values, const og_tensor *grid,
                             og_tensor **out) {
    *out = NULL;
    if (!m->vision.s)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the package takes no images (%s)", m->dir,
                         m->text_only ? m->text_only : "no vision encoder");
    OG_TRY(check_inputs(m, pixel_values, grid));
    int64_t n = og_tensor_dims(grid)[0], cols = og_tensor_dims(pixel_values)[1];
    const int64_t *g = og_tensor_data((og_tensor *)grid);
    const float *px = og_tensor_data((og_tensor *)pixel_values);
    size_t row_bytes = (size_t)cols * sizeof(float);
    /* first[k]: the earlier image k repeats, or k; off[k]: its first patch row */
    int64_t *first = calloc((size_t)n + 1, sizeof *first), *off = calloc((size_t)n + 1,
                                                                           sizeof *off);
    if (!first || !off) {
        free(first);
        free(off);
        return og_oom();
    }
    int64_t distinct = 0, keep_rows = 0;
    for (int64_t k = 0; k < n; k++) {
        off[k + 1] = off[k] + grid_patches(g + 3 * k);
        first[k] = k;
        for (int64_t j = 0; j < k && first[k] == k; j++)
            if (first[j] == j && !memcmp(g + 3 * j, g + 3 * k, 3 * sizeof *g) &&
                !memcmp(px + off[j] * cols, px + off[k] * cols,
                        (size_t)grid_patches(g + 3 * k) * row_bytes))
                first[k] = j;
        if (first[k] == k) {
            distinct++;
            keep_rows += grid_patches(g + 3 * k);
        }
    }
    og_status *st = NULL;
    if (distinct == n) { /* every image once: the encoder on the tensors as given */
        st = run_encoder(m, (og_tensor *)pixel_values, (og_tensor *)grid, out);
        free(first);
        free(off);
        return st;
    }
    /* the distinct images only, then each image's rows from its first occurrence */
    og_tensor *dpv = NULL, *dgrid = NULL, *dfeat = NULL, *feat = NULL;
    int64_t pd[2] = {keep_rows, cols}, gd[2] = {distinct, 3};
    st = og_tensor_create(OG_FLOAT32, pd, 2, &dpv);
    if (!st) st = og_tensor_create(OG_INT64, gd, 2, &dgrid);
    if (!st) {
        float *dp = og_tensor_data(dpv);
        int64_t *dg = og_tensor_data(dgrid), r = 0, i = 0;
        for (int64_t k = 0; k < n; k++) {
            if (first[k] != k) continue;
            memcpy(dp + r * cols, px + off[k] * cols, (size_t)grid_patches(g + 3 * k) * row_bytes);
            memcpy(dg + 3 * i++, g + 3 * k, 3 * sizeof *g);
            r += grid_patches(g + 3 * k);
        }
        st = run_encoder(m, dpv, dgrid, &dfeat);
    }
    if (!st) {
        int64_t mm = (int64_t)m->spatial_merge * m->spatial_merge, total = 0;
        for (int64_t k = 0; k < n; k++) total += grid_patches(g + 3 * k) / mm;
        int64_t fd[2] = {total, og_tensor_dims(dfeat)[1]};
        st = og_tensor_create(og_tensor_dtype(dfeat), fd, 2, &feat);
        if (!st) {
            size_t fr = (size_t)fd[1] * dtype_size(og_tensor_dtype(dfeat));
            const char *src = og_tensor_data(dfeat);
            char *dst = og_tensor_data(feat);
            /* where each distinct image's features start in dfeat */
            int64_t *dstart = off; /* reused: off[] is no longer needed past here */
            int64_t at = 0, w = 0;
            for (int64_t k = 0; k < n; k++) {
                int64_t rows = grid_patches(g + 3 * k) / mm;
                if (first[k] == k) {
                    dstart[k] = at;
                    at += rows;
                }
                memcpy(dst + (size_t)w * fr, src + (size_t)dstart[first[k]] * fr,
                       (size_t)rows * fr);
                w += rows;
            }
        }
    }
    og_tensor_free(dpv);
    og_tensor_free(dgrid);
    og_tensor_free(dfeat);
    free(first);
    free(off);
    if (st) {
        og_tensor_free(feat);
        return st;
    }
    *out = feat;
    return NULL;
}

og_status *gen_vision_rope_index(const og_model *m, const int32_t *ids, int64_t n,
                                 const int64_t *grid, int64_t n_images, int64_t *pos,
                                 int64_t *delta) {
    int64_t st = 0, max_pos = 0, image = 0;
    int64_t merge = m->spatial_merge;
    for (;;) {
        /* the next image: a vision-start token followed by the image token */
        int64_t ed = -1;
        for (int64_t s = st; s + 1 < n && ed < 0; s++) {
            if (ids[s] != m->vision_start_id) continue;
            if (ids[s + 1] == m->image_token_id) ed = s + 1;
            else if (ids[s + 1] == m->video_token_id)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: the prompt has a video at token %lld; "
                                 "video input is not supported", m->dir, (long long)s + 1);
        }
        if (ed < 0) break;
        if (image >= n_images)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: the prompt has more images (vision "
                             "start + image token) than the %lld given", m->dir,
                             (long long)n_images);
        const int64_t *g = grid + 3 * image;
        int64_t gt = g[0], gh = g[1] / merge, gw = g[2] / merge, len = gt * gh * gw;
        if (ed + len > n)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: image %lld needs %lld image tokens "
                             "from token %lld, past the prompt's %lld", m->dir, (long long)image,
                             (long long)len, (long long)ed, (long long)n);
        /* text up to and with the vision-start token, on from the next free position */
        int64_t p = image > 0 ? max_pos + 1 : 0;
        for (int64_t s = st; s < ed; s++, p++) {
            pos[s] = pos[n + s] = pos[2 * n + s] = p;
            max_pos = p;
        }
        int64_t base = max_pos + 1;
        for (int64_t s = 0; s < len; s++) {
            /* an image's frames are 0 seconds apart: its temporal index is base throughout
             * (a video's would advance by tokens_per_second a second) */
            int64_t h = (s / gw) % gh, w = s % gw;
            int64_t tp = base, hp = base + h, wp = base + w;
            pos[ed + s] = tp;
            pos[n + ed + s] = hp;
            pos[2 * n + ed + s] = wp;
            if (tp > max_pos) max_pos = tp;
            if (hp > max_pos) max_pos = hp;
            if (wp > max_pos) max_pos = wp;
        }
        st = ed + len;
        image++;
    }
    if (st < n) {
        int64_t p = max_pos == 0 && st == 0 ? 0 : max_pos + 1;
        for (int64_t s = st; s < n; s++, p++) {
            pos[s] = pos[n + s] = pos[2 * n + s] = p;
            max_pos = p;
        }
    }
    *delta = max_pos + 1 - n;
    return NULL;
}

static const char VSTART[] = "<|vision_start|>", VEND[] = "<|vision_end|>",
                  VPAD[] = "<|image_pad|>";

size_t gen_vision_placeholders(const char *text) {
    size_t found = 0;
    for (const char *p = strstr(text, VSTART); p; p = strstr(p + 1, VSTART)) found++;
    return found;
}

og_status *gen_vision_expand_prompt(const og_model *m, const char *text, const int64_t *grid,
                                    int n, bool add_missing, char **out) {
    size_t tl = strlen(text), pads = 0, found = gen_vision_placeholders(text);
    int64_t merge = m->spatial_merge > 0 ? m->spatial_merge : 1;
    if (found != (size_t)n && (found || !add_missing))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "the prompt has %zu image placeholder%s (%s) "
                         "for %d image%s", found, found == 1 ? "" : "s", VSTART, n,
                         n == 1 ? "" : "s");
    for (int k = 0; k < n; k++)
        pads += (size_t)(grid[3 * k] * grid[3 * k + 1] * grid[3 * k + 2] / (merge * merge));
    size_t cap = tl + (size_t)n * (sizeof VSTART + sizeof VEND) + pads * (sizeof VPAD - 1) + 1;
    char *buf = malloc(cap), *w = buf;
    if (!buf) return og_oom();
    const char *pos = text;
    for (int k = 0; k < n; k++) {
        const char *at = found ? strstr(pos, VSTART) : pos;
        memcpy(w, pos, (size_t)(at - pos));
        w += at - pos;
        w += sprintf(w, "%s", VSTART);
        int64_t np = grid[3 * k] * grid[3 * k + 1] * grid[3 * k + 2] / (merge * merge);
        for (int64_t i = 0; i < np; i++) w += sprintf(w, "%s", VPAD);
        w += sprintf(w, "%s", VEND);
        pos = at;
        if (found) {
            /* the placeholder's own end marker, not one after the next placeholder */
            pos = at + strlen(VSTART);
            const char *end = strstr(pos, VEND), *next = strstr(pos, VSTART);
            if (end && (!next || end < next)) pos = end + strlen(VEND);
        }
    }
    strcpy(w, pos);
    *out = buf;
    return NULL;
}

og_status *gen_vision_encode_plain(og_model *m, const og_tensor *pixel_values,
                                   const og_tensor *sizes, og_tensor **out) {
    *out = NULL;
    bool phi3 = m->vision_phi3;
    if (!m->vision.s || (!phi3 && !m->vision_gemma3))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the package takes no Phi-3-vision or Gemma 3 "
                         "images (%s)", m->dir, m->text_only ? m->text_only : "no such encoder");
    const int64_t *pd = og_tensor_dims(pixel_values);
    int rank = phi3 ? 5 : 4;
    if (og_tensor_dtype(pixel_values) != OG_FLOAT32 || og_tensor_rank(pixel_values) != rank ||
        pd[rank - 3] != 3)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: pixel_values must be float32 [images, %s3, "
                         "height, width] (the image processor's output)", m->dir,
                         phi3 ? "crops, " : "");
    if (phi3) {
        const int64_t *sd = og_tensor_dims(sizes);
        if (og_tensor_dtype(sizes) != OG_INT64 || og_tensor_rank(sizes) != 2 || sd[1] != 2 ||
            sd[0] != pd[0])
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: image_sizes must be int64 [%lld, 2], "
                             "one row per image of pixel_values", m->dir, (long long)pd[0]);
    }
    const char *in_names[2] = {m->vision_pixels, m->vision_grid};
    og_tensor *ins[2] = {(og_tensor *)pixel_values, (og_tensor *)sizes};
    const char *out_names[1] = {m->vision_features};
    og_status *st = og_session_run(m->vision.s, in_names, ins, phi3 ? 2 : 1, out_names, out, 1);
    if (st) return og_status_wrap(st, "%s: the vision encoder (%s)", m->dir, m->vision.file);
    og_dtype dt = og_tensor_dtype(*out);
    if (og_tensor_rank(*out) != 2 || (dt != OG_FLOAT32 && dt != OG_FLOAT16 && dt != OG_BFLOAT16)) {
        og_tensor_free(*out);
        *out = NULL;
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the vision encoder %s returned '%s' that is "
                         "not [image tokens, hidden] (float)", m->dir, m->vision.file,
                         m->vision_features);
    }
    return NULL;
}

static const char GEMMA_IMAGE[] = "<start_of_image>", GEMMA_SOFT[] = "<image_soft_token>",
                  GEMMA_END[] = "<end_of_image>";
enum { GEMMA_SOFT_TOKENS = 256 };

const char *gen_vision_placeholder(const og_model *m) {
    return m->vision_gemma3 ? GEMMA_IMAGE : "<|vision_start|><|image_pad|><|vision_end|>";
}

size_t gen_vision_gemma_placeholders(const char *text) {
    size_t n = 0;
    for (const char *p = strstr(text, GEMMA_IMAGE); p; p = strstr(p + 1, GEMMA_IMAGE)) n++;
    return n;
}

og_status *gen_vision_expand_gemma(const char *text, int n, bool add_missing, char **out) {
    size_t found = gen_vision_gemma_placeholders(text), count = found ? found : (size_t)n;
    if (found != (size_t)n && (found || !add_missing))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "the prompt has %zu image placeholder%s (%s) "
                         "for %d image%s", found, found == 1 ? "" : "s", GEMMA_IMAGE, n,
                         n == 1 ? "" : "s");
    size_t one = 2 + strlen(GEMMA_IMAGE) + GEMMA_SOFT_TOKENS * strlen(GEMMA_SOFT) +
                 strlen(GEMMA_END) + 2;
    char *buf = malloc(strlen(text) + count * one + 1), *w = buf;
    if (!buf) return og_oom();
    const char *p = text;
    for (size_t k = 0; k < count; k++) {
        const char *at = found ? strstr(p, GEMMA_IMAGE) : p;
        memcpy(w, p, (size_t)(at - p));
        w += at - p;
        w += sprintf(w, "\n\n%s", GEMMA_IMAGE);
        for (int i = 0; i < GEMMA_SOFT_TOKENS; i++) w += sprintf(w, "%s", GEMMA_SOFT);
        w += sprintf(w, "%s\n\n", GEMMA_END);
        p = found ? at + strlen(GEMMA_IMAGE) : at;
    }
    strcpy(w, p);
    *out = buf;
    return NULL;
}
