/* onnx-genai show FILE.onnx: what a graph is made of, without running it. */
#include "kernels/kernel.h"
#include "onnx/loader.h"
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_show(int argc, char **argv) {
    if (argc != 2) return cli_fail("usage: onnx-genai show FILE.onnx");
    model *m;
    og_status *st = onnx_load_file(argv[1], &m);
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
