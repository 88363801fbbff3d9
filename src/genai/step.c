/* One run of a model's pipeline of stages (see step.h). */
#include "genai/step.h"

#include "backends/backend.h"
#include "base/half.h"
#include "base/tensor.h"
#include "runtime/og_session.h"

#include <stdlib.h>
#include <string.h>

og_status *gen_step_view(og_dtype dt, const int64_t *dims, int rank, void *data,
                         og_tensor *slot, og_tensor **out) {
    memset(slot, 0, sizeof *slot);
    OG_TRY(tensor_set_shape(slot, dt, rank, dims));
    slot->data = data ? data : tensor_empty_data();
    slot->owns_data = false;
    *out = slot;
    return NULL;
}

void gen_logits_to_f32(og_dtype dt, const void *src, size_t n, float *dst) {
    if (dt == OG_FLOAT32) {
        memcpy(dst, src, sizeof(float) * n);
        return;
    }
    const uint16_t *h = src;
    for (size_t v = 0; v < n; v++) dst[v] = dt == OG_FLOAT16 ? f16_to_f32(h[v]) : bf16_to_f32(h[v]);
}

og_status *gen_step_io_init(gen_step_io *io, const og_model *m) {
    memset(io, 0, sizeof *io);
    int n = 1, outs = 1;
    for (int s = 0; s < m->n_stages; s++) {
        n = m->stages[s].n_feeds > n ? m->stages[s].n_feeds : n;
        outs = m->stages[s].n_outs > outs ? m->stages[s].n_outs : outs;
    }
    n = outs > n ? outs : n;
    io->max_io = n;
    io->max_outs = outs;
    io->n_stages = m->n_stages;
    io->in_views = calloc((size_t)n, sizeof *io->in_views);
    io->out_views = calloc((size_t)n, sizeof *io->out_views);
    io->ins = calloc((size_t)n, sizeof *io->ins);
    io->outs = calloc((size_t)n, sizeof *io->outs);
    io->in_owned = calloc((size_t)n, sizeof *io->in_owned);
    io->in_names = calloc((size_t)n, sizeof *io->in_names);
    io->out_names = calloc((size_t)n, sizeof *io->out_names);
    io->out_of = calloc((size_t)n, sizeof *io->out_of);
    io->vals = calloc((size_t)m->n_stages * (size_t)outs + 1, sizeof *io->vals);
    if (!io->in_views || !io->out_views || !io->ins || !io->outs || !io->in_owned ||
        !io->in_names || !io->out_names || !io->out_of || !io->vals) {
        gen_step_io_free(io);
        return og_oom();
    }
    return NULL;
}

void gen_step_io_free(gen_step_io *io) {
    free(io->in_views);
    free(io->out_views);
    free(io->ins);
    free(io->outs);
    free(io->in_owned);
    free(io->in_names);
    free(io->out_names);
    free(io->out_of);
    free(io->vals);
    memset(io, 0, sizeof *io);
}

/* The int64 values as the graph's dtype: themselves, or converted into v32. */
static void *ints_as(og_dtype dt, int64_t *v, int32_t *v32, size_t n) {
    if (dt != OG_INT32) return v;
    for (size_t i = 0; i < n; i++) v32[i] = (int32_t)v[i];
    return v32;
}

/* The tensor a feed gets: a view in `slot`, or (*owned) a tensor made for this run. */
static og_status *feed_tensor(const og_model *m, const gen_step_io *io,
                              const gen_step_tokens *tk, const gen_step_cache *c,
                              const gen_feed *f, og_tensor *slot, og_tensor **out, bool *owned) {
    size_t rn = (size_t)tk->rows * (size_t)tk->n;
    *owned = false;
    switch (f->src) {
    case GEN_SRC_IDS: {
        int64_t d[2] = {tk->rows, tk->n};
        return gen_step_view(f->dtype, d, 2, ints_as(f->dtype, tk->ids, tk->ids32, rn), slot, out);
    }
    case GEN_SRC_MASK: {
        int64_t d[2] = {tk->rows, tk->mask_cols};
        size_t cnt = (size_t)tk->rows * (size_t)tk->mask_cols;
        return gen_step_view(f->dtype, d, 2, ints_as(f->dtype, tk->mask, tk->mask32, cnt), slot,
                             out);
    }
    case GEN_SRC_POS: {
        int rank = m->position_rank;
        int64_t d3[3] = {3, tk->rows, tk->n}, d2[2] = {tk->rows, tk->n};
        void *p = ints_as(f->dtype, tk->pos, tk->pos32, rn * (rank == 3 ? 3 : 1));
        return gen_step_view(f->dtype, rank == 3 ? d3 : d2, rank, p, slot, out);
    }
    case GEN_SRC_IMAGE:
        if (tk->image_features) {
            const og_tensor *v = tk->image_features;
            return gen_step_view(v->dtype, v->dims, v->rank, v->data, slot, out);
        }
        *owned = true;
        return og_tensor_create(m->image_feature_dtype, m->image_feature_dims,
                                m->image_feature_rank, out);
    case GEN_SRC_PAST:
        return c->past(c->ctx, f->index, slot, out);
    case GEN_SRC_HIDDEN: {
        const og_tensor *v = tk->hidden;
        if (!v || v->rank != 3 || v->dims[0] != tk->rows || v->dims[1] != tk->n)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input '%s' takes hidden states of "
                             "the run's %d x %d tokens, %s", m->dir, f->name, tk->rows, tk->n,
                             v ? "another shape was given" : "none were given (an MTP head "
                             "runs inside a generator that drafts with it)");
        return gen_step_view(v->dtype, v->dims, v->rank, v->data, slot, out);
    }
    case GEN_SRC_PARAM: {
        const og_tensor *v = c->param ? c->param(c->ctx, f->name) : NULL;
        if (!v) v = f->dflt;
        return gen_step_view(v->dtype, v->dims, v->rank, v->data, slot, out);
    }
    case GEN_SRC_CROSS:
        if (!c->cross)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: '%s' is an encoder output, which this "
                             "caller does not keep (an encoder-decoder model runs through a "
                             "generator)", m->dir, f->name);
        return c->cross(c->ctx, f->index, slot, out);
    case GEN_SRC_VALUE: {
        const og_tensor *v = io->vals[f->index * io->max_outs + f->out];
        if (!v)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: '%s' is needed, but the stage that "
                             "makes it did not run in this step", m->dir, f->name);
        return gen_step_view(v->dtype, v->dims, v->rank, v->data, slot, out);
    }
    }
    return og_errorf(OG_ERR_RUNTIME, "%s: feed '%s' has no source", m->dir, f->name);
}

/* Frees the tensors a run made (new outputs, made inputs, values), never a view. */
static void release(gen_step_io *io, gen_step_logits *lg) {
    for (int k = 0; k < io->max_io; k++) {
        if (io->ins[k] && io->in_owned[k]) og_tensor_free(io->ins[k]);
        if (io->outs[k] && io->outs[k] != &io->out_views[k]) og_tensor_free(io->outs[k]);
        io->ins[k] = io->outs[k] = NULL;
        io->in_owned[k] = false;
    }
    for (int k = 0; k < io->n_stages * io->max_outs; k++) {
        og_tensor_free(io->vals[k]);
        io->vals[k] = NULL;
    }
    if (lg && lg->out && lg->out != lg->into) og_tensor_free(lg->out);
    if (lg) lg->out = NULL;
    if (lg) og_tensor_free(lg->hidden);
    if (lg) lg->hidden = NULL;
}

/* Binds stage sg's feeds and outputs; *sel is set when its logits are selected rows. */
static og_status *bind_stage(const og_model *m, gen_step_io *io, const gen_step_tokens *tk,
                             const gen_step_cache *c, const gen_step_logits *lg,
                             const gen_stage *sg, int *ni, int *no, og_output_rows *sel) {
    *ni = *no = 0;
    for (int k = 0; k < sg->n_feeds; k++) {
        OG_TRY(feed_tensor(m, io, tk, c, &sg->feeds[k], &io->in_views[*ni], &io->ins[*ni],
                           &io->in_owned[*ni]));
        io->in_names[(*ni)++] = sg->feeds[k].name;
    }
    for (int k = 0; k < sg->n_outs; k++) {
        const gen_out *o = &sg->outs[k];
        og_tensor **slot = &io->outs[*no];
        *slot = NULL;
        if (o->sink == GEN_SINK_PRESENT) {
            bool skip = false;
            OG_TRY(c->present(c->ctx, o->index, &io->out_views[*no], slot, &skip));
            if (skip) continue;
        } else if (o->sink == GEN_SINK_LOGITS) {
            if (lg->into) {
                *slot = &io->out_views[*no];
                **slot = *lg->into;
                (*slot)->owns_data = false;
            }
            if (lg->select) *sel = (og_output_rows){o->name, lg->rows, lg->n_rows};
        } else if (o->sink == GEN_SINK_HIDDEN && !lg->want_hidden) {
            continue;
        }
        io->out_of[*no] = k;
        io->out_names[(*no)++] = o->name;
    }
    return NULL;
}

uint8_t gen_step_form_in_run(int64_t i, int64_t L) {
    if (L == 1) return BACKEND_ROW_ALONE;
    return L % 128 == 1 && i == L - 1 ? BACKEND_ROW_LAST : BACKEND_ROW_MANY;
}

uint8_t gen_step_form_at(int64_t p, int64_t P) {
    return p >= P ? BACKEND_ROW_ALONE : gen_step_form_in_run(p, P);
}

og_status *gen_step_run(og_model *m, gen_step_io *io, const gen_step_tokens *tk,
                        const gen_step_cache *c, gen_step_logits *lg) {
    og_status *st = NULL;
    lg->out = NULL;
    lg->hidden = NULL;
    for (int s = 0; s < m->n_stages && !st; s++) {
        const gen_stage *sg = &m->stages[s];
        if ((tk->n > 1 && !sg->on_prompt) || (tk->n == 1 && !sg->on_token)) continue;
        int ni, no;
        og_output_rows sel = {NULL, NULL, 0};
        st = bind_stage(m, io, tk, c, lg, sg, &ni, &no, &sel);
        if (!st && c->stage_begin) st = c->stage_begin(c->ctx, sg);
        if (!st) {
            runtime_session_set_row_forms(sg->s, tk->forms, (int64_t)tk->rows * tk->n);
            st = og_session_run_rows(sg->s, io->in_names, io->ins, (size_t)ni, io->out_names,
                                     io->outs, (size_t)no, sel.output ? &sel : NULL);
            runtime_session_set_row_forms(sg->s, NULL, 0);
            if (c->stage_end) c->stage_end(c->ctx, sg);
        }
        for (int k = 0; k < io->max_io; k++) {
            if (io->ins[k] && io->in_owned[k]) og_tensor_free(io->ins[k]);
            io->ins[k] = NULL;
            io->in_owned[k] = false;
        }
        for (int k = 0; k < no && !st; k++) {
            const gen_out *o = &sg->outs[io->out_of[k]];
            og_tensor *t = io->outs[k];
            bool view = t == &io->out_views[k];
            io->outs[k] = NULL;
            if (o->sink == GEN_SINK_VALUE) {
                io->vals[s * io->max_outs + io->out_of[k]] = t;
                continue;
            }
            if (o->sink == GEN_SINK_LOGITS) {
                if (lg->out && lg->out != lg->into) og_tensor_free(lg->out);
                lg->out = view ? lg->into : t;
                continue;
            }
            if (o->sink == GEN_SINK_HIDDEN) {
                og_tensor_free(lg->hidden);
                lg->hidden = t;
                continue;
            }
            if (c->took_present) c->took_present(c->ctx, o->index, t, view);
            if (!view) og_tensor_free(t);
        }
    }
    if (st) {
        release(io, lg);
        return st;
    }
    release(io, NULL);
    return NULL;
}
