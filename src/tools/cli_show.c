/* onnx-genai show FILE.onnx: what a graph is made of, without running it. */
#include "base/pkg_file.h"
#include "genai/config.h"
#include "backends/native/kernels/kernel.h"
#include "onnx/loader.h"
#include "tools/cli.h"

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
    for (int i = 0; i < c->n_warnings; i++) printf("warning:     %s\n", c->warnings[i]);
    int rc = 0;
    if (d->c.filename) {
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

int cli_show(int argc, char **argv) {
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
        bool known = false;
        bool ok = kernel_find(ops[k].domain, ops[k].op, ops[k].opset, &known) != NULL;
        if (!ok) unsupported++;
        printf("  %6d  %s%s%s%s\n", ops[k].count, ops[k].domain[0] ? ops[k].domain : "",
               ops[k].domain[0] ? "." : "", ops[k].op,
               ok ? "" : known ? "   (not implemented at this opset)" : "   (not implemented)");
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
