/* A GroupQueryAttention node's attributes and new rows (see attention.h), shared by the
 * contiguous kernel (attention_gqa.c) and the paged one (attention_paged.c). */
#include "backends/native/kernels/attention/attention.h"

#include <math.h>

og_status *gqa_read_node(kernel_ctx *ctx, gqa_node *g) {
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0], *key = kernel_input(ctx, 1), *val = kernel_input(ctx, 2);
    const tensor *cosc = kernel_input(ctx, 7), *sinc = kernel_input(ctx, 8);
    og_dtype dt = q->dtype;
    /* the past is checked by each kernel: its cache may be stored narrower (kv_rows.h) */
    static const char *names[] = {"query", "key", "value", "", "", "", "",
                                  "cos_cache", "sin_cache", "", "attention_bias", "head_sink"};
    for (int i = 1; i < 12; i++)
        if (names[i][0]) OG_TRY(cpu_want_dtype(ctx, i, names[i], dt));
    *g = (gqa_node){.N = graph_attr_int(node, "num_heads", 0),
                    .KV = graph_attr_int(node, "kv_num_heads", 0),
                    .causal = graph_attr_int(node, "causal", 1) != 0,
                    .rotary = graph_attr_int(node, "do_rotary", 0) != 0,
                    .interleaved = graph_attr_int(node, "rotary_interleaved", 0) != 0,
                    .smooth = graph_attr_int(node, "smooth_softmax", 0) != 0,
                    .window = graph_attr_int(node, "local_window_size", -1),
                    .softcap = graph_attr_float(node, "softcap", 0.0f)};
    int64_t N = g->N, KV = g->KV;
    char a[96];
    if (N <= 0 || KV <= 0 || N % KV)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "num_heads %lld and kv_num_heads %lld "
                             "must be positive and num_heads a multiple of kv_num_heads",
                             (long long)N, (long long)KV);
    if (q->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (query) has shape %s, "
                             "expected (batch, sequence, hidden)",
                             shape_str(q->dims, q->rank, a, sizeof a));
    g->B = q->dims[0], g->S = q->dims[1], g->H = q->dims[2];
    g->packed = key == NULL;
    if (g->packed != (val == NULL))
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "key (input 1) and value (input 2) must "
                            "be given together, or both omitted for packed QKV");
    if (g->packed) {
        if (g->H % (N + 2 * KV))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "packed QKV width %lld is not a "
                                 "multiple of num_heads + 2 * kv_num_heads = %lld",
                                 (long long)g->H, (long long)(N + 2 * KV));
        g->D = g->H / (N + 2 * KV);
    } else {
        if (g->H % N)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "query width %lld is not a "
                                 "multiple of num_heads %lld", (long long)g->H, (long long)N);
        g->D = g->H / N;
        int64_t kd[3] = {g->B, g->S, KV * g->D};
        OG_TRY(cpu_want_shape(ctx, 1, "key", 3, kd));
        OG_TRY(cpu_want_shape(ctx, 2, "value", 3, kd));
    }
    float sc = graph_attr_float(node, "scale", 0.0f);
    g->scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)g->D);
    if (g->rotary) {
        if (!cosc || !sinc)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "do_rotary=1 needs cos_cache (input 7) "
                                "and sin_cache (input 8)");
        g->half = cosc->rank == 2 ? cosc->dims[1] : -1;
        if (g->half <= 0 || 2 * g->half > g->D)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 7 (cos_cache) has shape %s, "
                                 "expected (max_position, rotary_dim / 2) with rotary_dim <= %lld",
                                 shape_str(cosc->dims, cosc->rank, a, sizeof a), (long long)g->D);
        OG_TRY(cpu_want_shape(ctx, 8, "sin_cache", 2, cosc->dims));
        g->max_pos = cosc->dims[0];
        OG_TRY(cpu_in_f32(ctx, 7, &g->cos));
        OG_TRY(cpu_in_f32(ctx, 8, &g->sin));
    }
    if (kernel_input(ctx, 11)) {
        OG_TRY(cpu_want_shape(ctx, 11, "head_sink", 1, &g->N));
        OG_TRY(cpu_in_f32(ctx, 11, &g->sink));
    }
    return NULL;
}

og_status *gqa_bind_rows(kernel_ctx *ctx, const gqa_node *g, gqa_rows *r) {
    OG_TRY(cpu_in_f32(ctx, 0, &r->q));
    if (g->packed) {
        r->q_ld = r->k_ld = r->v_ld = g->H;
        r->k = r->q + g->N * g->D;
        r->v = r->q + (g->N + g->KV) * g->D;
        return NULL;
    }
    r->q_ld = g->N * g->D;
    r->k_ld = r->v_ld = g->KV * g->D;
    OG_TRY(cpu_in_f32(ctx, 1, &r->k));
    return cpu_in_f32(ctx, 2, &r->v);
}
