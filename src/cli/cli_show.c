/* onnx-genai show FILE.onnx: what a graph is made of, without running it. */
#include "base/pkg_file.h"
#include "genai/config.h"
#include "genai/model.h"
#include "backends/backend.h"
#include "onnx/loader.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void print_value(const graph_value *v) {
    printf("  %-32s %-8s ", v->name, og_dtype_name(v->dtype));
    if (v->rank < 0) {
        printf("(shape unknown)\n");
        return;
    }
    printf("[");
    for (int d = 0; d < v->rank; d++) {
        if (d) printf(", ");
        if (v->dims[d] >= 0) printf("%lld", (long long)v->dims[d]);
        else printf("%s", v->dim_names[d] ? v->dim_names[d] : "?");
    }
    printf("]\n");
}

typedef struct op_count {
    const char *domain, *op;
    int64_t opset;
    int count;
} op_count;

static int by_count(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->op, y->op);
}

static void human(size_t bytes, char *buf, size_t size) {
    if (bytes >= (size_t)1 << 30) snprintf(buf, size, "%.2f GiB", bytes / 1073741824.0);
    else if (bytes >= (size_t)1 << 20) snprintf(buf, size, "%.2f MiB", bytes / 1048576.0);
    else if (bytes >= 1024) snprintf(buf, size, "%.1f KiB", bytes / 1024.0);
    else snprintf(buf, size, "%zu B", bytes);
}

static int show_graph(const char *path);

static const char *src_name(const og_model *m, const gen_feed *f, char *buf, size_t size) {
    switch (f->src) {
    case GEN_SRC_HIDDEN: return "hidden states (an MTP head: the main model's)";
    case GEN_SRC_IDS: return "token ids";
    case GEN_SRC_MASK: return "attention mask";
    case GEN_SRC_POS:
        return m->position_rank == 3 ? "position ids [3, batch, seq] (mRoPE: text positions on "
                                       "every axis)" : "position ids";
    case GEN_SRC_IMAGE:
        return m->vision.s ? "the vision encoder's rows for the run's image tokens (else empty)"
                           : "empty (no image tokens: text only)";
    case GEN_SRC_PAST:
        snprintf(buf, size, "loop-carried (from %s)", m->cache[f->index].present);
        return buf;
    case GEN_SRC_VALUE:
        snprintf(buf, size, "stage %d (%s) output '%s'", f->index, m->stages[f->index].name,
                 m->stages[f->index].outs[f->out].name);
        return buf;
    case GEN_SRC_PARAM: return "an active adapter's parameter, else the graph's default";
    case GEN_SRC_CROSS:
        snprintf(buf, size, "the encoder's output '%s' (once per request)", m->cross_out[f->index]);
        return buf;
    }
    return "?";
}

/* How the package runs: its sessions, what feeds each input, the state each layer
 * carries, and whether it opened for text only. */
static void show_pipeline(const char *dir, const gen_config *c) {
    og_model *m = NULL;
    og_status *st = og_model_open(dir, NULL, &m);
    printf("\nruns as:     ");
    if (st) {
        printf("does not open: [%s] %s\n", og_code_name(og_status_code(st)), og_status_message(st));
        og_status_free(st);
        const gen_decoder *d = &c->model.decoder;
        for (int i = 0; i < d->n_pipeline; i++) {
            const gen_pipeline_stage *p = &d->pipeline[i];
            printf("  config stage %d '%s': %s, inputs", i, p->name, p->filename ? p->filename : "(none)");
            for (int k = 0; k < p->n_inputs; k++) printf(" %s", p->inputs[k]);
            printf("; outputs");
            for (int k = 0; k < p->n_outputs; k++) printf(" %s", p->outputs[k]);
            printf("\n");
        }
        return;
    }
    printf("%d session%s%s\n", m->n_stages, m->n_stages == 1 ? "" : "s",
           m->text_only ? ", text only" : "");
    for (int s = 0; s < m->n_stages; s++) {
        const gen_stage *sg = &m->stages[s];
        printf("  stage %d '%s': %s%s%s\n", s, sg->name, sg->file,
               sg->on_prompt ? "" : " (not on prompts)", sg->on_token ? "" : " (not on tokens)");
        cli_prep pp = {0};
        cli_prep_add(sg->s, &pp);
        if (pp.nodes) {
            char a[32], b[32];
            human(pp.bytes, a, sizeof a);
            human(pp.released, b, sizeof b);
            printf("    prepared at open: %d node%s, %s in %.1f ms (%s of mapped weights "
                   "released)\n", pp.nodes, pp.nodes == 1 ? "" : "s", a, pp.secs * 1e3, b);
        }
        for (int k = 0; k < sg->n_feeds; k++) {
            char buf[600];
            printf("    in  %-34s <- %s\n", sg->feeds[k].name, src_name(m, &sg->feeds[k], buf, sizeof buf));
        }
        for (int k = 0; k < sg->n_outs; k++)
            printf("    out %-34s -> %s\n", sg->outs[k].name,
                   sg->outs[k].sink == GEN_SINK_LOGITS ? "logits"
                   : sg->outs[k].sink == GEN_SINK_PRESENT ? "carried to the next step"
                   : sg->outs[k].sink == GEN_SINK_HIDDEN ? "hidden states (MTP drafting)"
                                                          : "later stages");
    }
    printf("carried:     %d tensor%s; KV rows %s%s\n", m->n_cache, m->n_cache == 1 ? "" : "s",
           m->compact ? "compact (each row's length from the mask)"
                      : "in shared columns (shorter rows masked)",
           m->snapshots ? "; states and windows restored from snapshots on rewind" : "");
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *e = &m->cache[i];
        printf("  layer %-3d %-16s %-8s ", e->layer, e->what, og_dtype_name(e->dtype));
        if (e->kind == GEN_CACHE_KV && e->window) {
            printf("KV [batch, %d heads, window %d, %d]", e->heads, e->window, e->head_size);
        } else if (e->kind == GEN_CACHE_KV) {
            printf("KV [batch, %d heads, seq, %d]", e->heads, e->head_size);
        } else {
            printf("state [batch");
            for (int d = 1; d < e->rank; d++) printf(", %lld", (long long)e->dims[d]);
            printf("]");
        }
        printf("%s\n", e->shareable ? ", written in place" : "");
    }
    if (m->vision.s)
        printf("images:      %s (%s, %s -> %s) once per request; mRoPE positions over each "
               "image's grid\n", m->vision.file, m->vision_pixels, m->vision_grid,
               m->vision_features);
    if (m->text_only) printf("text only:   %s\n", m->text_only);
    og_model_close(m);
}

/* A package folder: what genai_config.json says, then the decoder graph. */
static int show_package(const char *dir) {
    gen_config *c;
    og_status *st = gen_config_load(dir, &c);
    if (st) {
        int rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
        return rc;
    }
    const gen_model *gm = &c->model;
    const gen_decoder *d = &gm->decoder;
    printf("package:     %s\n", c->dir);
    printf("model.type:  %s\n", gm->type);
    printf("vocab_size:  %d   context_length: %d\n", gm->vocab_size, gm->context_length);
    printf("tokens:      bos %d, pad %d, eos", gm->bos_token_id, gm->pad_token_id);
    for (int i = 0; i < gm->n_eos_token_ids; i++) printf(" %d", gm->eos_token_ids[i]);
    printf("\ndecoder:     %s: %d layers, hidden %d, %d heads (%d kv), head_size %d\n",
           d->c.filename ? d->c.filename : "(none)", d->num_hidden_layers, d->hidden_size,
           d->num_attention_heads, d->num_key_value_heads, d->head_size);
    const gen_component *parts[] = {&gm->embedding, &gm->vision, &gm->speech, &gm->encoder};
    const char *names[] = {"embedding", "vision", "speech", "encoder"};
    for (int i = 0; i < 4; i++)
        if (parts[i]->present)
            printf("%-12s %s\n", names[i], parts[i]->filename ? parts[i]->filename : "(none)");
    const gen_search *sr = &c->search;
    printf("search:      max_length %d, %s, top_k %d, top_p %g, temperature %g, beams %d, "
           "past_present_share_buffer %s\n", sr->max_length, sr->do_sample ? "sampling" : "greedy",
           sr->top_k, sr->top_p, sr->temperature, sr->num_beams,
           sr->past_present_share_buffer ? "true" : "false");
    cli_show_chat(c->dir);
    for (int i = 0; i < c->n_warnings; i++) printf("warning:     %s\n", c->warnings[i]);
    show_pipeline(dir, c);
    int rc = 0;
    if (d->c.filename && !d->n_pipeline) {
        char *path = NULL;
        st = pkg_path_join(c->dir, d->c.filename, c->path, "model.decoder.filename", &path);
        if (st) {
            rc = cli_fail("%s", og_status_message(st));
            og_status_free(st);
        } else {
            printf("\n");
            rc = show_graph(path);
        }
        free(path);
    }
    gen_config_free(c);
    return rc;
}

static const char show_usage[] =
    "usage: onnx-genai show FILE.onnx | PACKAGE_DIR\n"
    "  FILE.onnx     the graph: opsets, inputs, outputs, op counts, ops without a kernel\n"
    "  PACKAGE_DIR   the package: config, sessions, what feeds each input, state per layer\n";

int cli_show(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(show_usage, stdout);
        return 0;
    }
    if (argc != 2) return cli_fail("usage: onnx-genai show FILE.onnx | PACKAGE_DIR");
    struct stat sb;
    if (stat(argv[1], &sb) == 0 && S_ISDIR(sb.st_mode)) return show_package(argv[1]);
    return show_graph(argv[1]);
}

static int show_graph(const char *path) {
    model *m;
    og_status *st = onnx_load_file(path, &m);
    if (st) {
        int rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
        return rc;
    }
    const graph *g = m->graph;
    printf("file:        %s\n", m->path);
    printf("ir_version:  %lld\n", (long long)m->ir_version);
    if (m->producer_name && m->producer_name[0])
        printf("producer:    %s %s\n", m->producer_name, m->producer_version ? m->producer_version : "");
    printf("opsets:     ");
    for (int i = 0; i < m->n_opsets; i++)
        printf(" %s=%lld", m->opsets[i].domain[0] ? m->opsets[i].domain : "ai.onnx",
               (long long)m->opsets[i].version);
    printf("\n\ninputs (%d):\n", g->n_inputs);
    for (int i = 0; i < g->n_inputs; i++) print_value(&g->values[g->inputs[i]]);
    printf("\noutputs (%d):\n", g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++) print_value(&g->values[g->outputs[i]]);

    op_count *ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    int n_ops = 0, unsupported = 0;
    for (int i = 0; ops && i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        int k = 0;
        for (; k < n_ops; k++)
            if (strcmp(ops[k].op, n->op_type) == 0 && strcmp(ops[k].domain, n->domain) == 0) break;
        if (k == n_ops) ops[n_ops++] = (op_count){n->domain, n->op_type, n->opset, 0};
        ops[k].count++;
    }
    qsort(ops, (size_t)n_ops, sizeof *ops, by_count);
    printf("\nnodes: %d (%d op types)\n", g->n_nodes, n_ops);
    for (int k = 0; k < n_ops; k++) {
        backend_op_support sup = backend_native.op_support(ops[k].domain, ops[k].op, ops[k].opset);
        if (sup != BACKEND_OP_RUNS) unsupported++;
        printf("  %6d  %s%s%s%s\n", ops[k].count, ops[k].domain[0] ? ops[k].domain : "",
               ops[k].domain[0] ? "." : "", ops[k].op,
               sup == BACKEND_OP_RUNS           ? ""
               : sup == BACKEND_OP_OTHER_OPSET ? "   (not implemented at this opset)"
                                               : "   (not implemented)");
    }
    free(ops);
    char a[32], b[32];
    human(m->initializer_bytes, a, sizeof a);
    human(m->copied_bytes, b, sizeof b);
    printf("\ninitializers: %d, %s (%s copied at load, the rest used in place from the file "
           "mapping)\n", g->n_initializers, a, b);
    printf("external data files: %d\n", m->n_external_files);
    for (int i = 0; i < m->n_external_files; i++) printf("  %s\n", m->external_files[i]);
    if (unsupported)
        printf("\n%d op type%s cannot run on this build yet.\n", unsupported, unsupported == 1 ? "" : "s");
    model_free(m);
    return 0;
}
