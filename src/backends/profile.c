/* The node profiler (see profile.h): records in one growing array, shapes in a second
 * (per record: n_in, n_out, then per tensor dtype, rank and dims; an omitted tensor is
 * dtype -1), formatted only when the trace or the table is written. */
#include "backends/profile.h"

#include "base/json_str.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* About 100 MB of records at most; past it node records are counted as dropped. */
enum { MAX_RECORDS = 1 << 20, MAX_DIMS = 1 << 23 };

typedef struct prof_rec {
    const graph_node *node; /* NULL: a whole og_session_run */
    const char *label;
    int64_t t0, t1;
    int32_t tid, tag;
    uint32_t shape_off;     /* into dims; UINT32_MAX: none kept */
    int32_t jobs, threads;  /* parallel_for calls handed to the pool; the pool's size */
} prof_rec;

struct og_profiler {
    pthread_mutex_t mu;
    prof_rec *rec;
    size_t n, cap, nodes, dropped;
    int64_t *dims;
    size_t n_dims, cap_dims;
    int64_t origin;
    int tag;
};

int64_t profiler_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int32_t thread_id(void) {
    static _Thread_local int32_t tid;
    if (!tid) tid = (int32_t)syscall(SYS_gettid);
    return tid;
}

og_status *profiler_create(og_profiler **out) {
    og_profiler *p = calloc(1, sizeof *p);
    if (!p) return og_oom_context(og_oom(), "the profiler");
    pthread_mutex_init(&p->mu, NULL);
    p->origin = profiler_now_ns();
    *out = p;
    return NULL;
}

void profiler_free(og_profiler *p) {
    if (!p) return;
    pthread_mutex_destroy(&p->mu);
    free(p->rec);
    free(p->dims);
    free(p);
}

static bool grow(void **buf, size_t *cap, size_t need, size_t elem, size_t limit) {
    if (need <= *cap) return true;
    if (need > limit) return false;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    if (c > limit) c = limit;
    void *b = realloc(*buf, c * elem);
    if (!b) return false;
    *buf = b;
    *cap = c;
    return true;
}

static prof_rec *add_rec(og_profiler *p) {
    if (!grow((void **)&p->rec, &p->cap, p->n + 1, sizeof *p->rec, MAX_RECORDS)) return NULL;
    return &p->rec[p->n++];
}

/* Appends the shapes of the tensors; returns their offset or UINT32_MAX. */
static uint32_t add_shapes(og_profiler *p, int n_in, const tensor *const *in, int n_out,
                           const tensor *const *out) {
    size_t need = 2;
    for (int i = 0; i < n_in; i++) need += 2 + (in[i] ? (size_t)in[i]->rank : 0);
    for (int i = 0; i < n_out; i++) need += 2 + (out[i] ? (size_t)out[i]->rank : 0);
    if (!grow((void **)&p->dims, &p->cap_dims, p->n_dims + need, sizeof *p->dims, MAX_DIMS))
        return UINT32_MAX;
    uint32_t off = (uint32_t)p->n_dims;
    int64_t *d = p->dims + p->n_dims;
    *d++ = n_in;
    *d++ = n_out;
    for (int k = 0; k < n_in + n_out; k++) {
        const tensor *t = k < n_in ? in[k] : out[k - n_in];
        *d++ = t ? (int64_t)t->dtype : -1;
        *d++ = t ? t->rank : 0;
        for (int r = 0; t && r < t->rank; r++) *d++ = t->dims[r];
    }
    p->n_dims = (size_t)(d - p->dims);
    return off;
}

void profiler_node(og_profiler *p, const char *label, const graph_node *node, int64_t t0,
                   int64_t t1, int jobs, int threads, int n_in, const tensor *const *in,
                   int n_out, const tensor *const *out) {
    pthread_mutex_lock(&p->mu);
    p->nodes++;
    prof_rec *r = add_rec(p);
    if (r) {
        *r = (prof_rec){node, label, t0, t1, thread_id(), p->tag,
                        add_shapes(p, n_in, in, n_out, out), jobs, threads};
    } else {
        p->dropped++;
    }
    pthread_mutex_unlock(&p->mu);
}

void profiler_run(og_profiler *p, const char *label, int64_t t0, int64_t t1) {
    pthread_mutex_lock(&p->mu);
    prof_rec *r = add_rec(p);
    if (r) *r = (prof_rec){NULL, label, t0, t1, thread_id(), p->tag, UINT32_MAX, 0, 0};
    pthread_mutex_unlock(&p->mu);
}

void profiler_set_tag(og_profiler *p, int tag) {
    pthread_mutex_lock(&p->mu);
    p->tag = tag;
    pthread_mutex_unlock(&p->mu);
}
size_t profiler_node_count(const og_profiler *p) { return p->nodes; }
size_t profiler_dropped(const og_profiler *p) { return p->dropped; }

/* ---- the trace --------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s) { json_str_fwrite(f, s, strlen(s)); }

static void op_name(FILE *f, const graph_node *n) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
             n->op_type);
    json_string(f, buf);
}

/* "inputs": [{"dtype": "float32", "shape": [1, 4]}, null, ...], "outputs": [...] */
static void shapes_json(FILE *f, const int64_t *d) {
    int n_in = (int)d[0], n_out = (int)d[1];
    d += 2;
    for (int k = 0; k < n_in + n_out; k++) {
        if (k == 0) fputs("\"inputs\": [", f);
        if (k == n_in) fputs("], \"outputs\": [", f);
        else if (k) fputs(", ", f);
        int64_t dt = *d++, rank = *d++;
        if (dt < 0) {
            fputs("null", f);
            continue;
        }
        fprintf(f, "{\"dtype\": \"%s\", \"shape\": [", og_dtype_name((og_dtype)dt));
        for (int64_t r = 0; r < rank; r++) fprintf(f, "%s%lld", r ? ", " : "", (long long)*d++);
        fputs("]}", f);
    }
    if (n_in + n_out == 0) fputs("\"inputs\": [", f);
    if (n_out == 0) fputs("], \"outputs\": [", f);
    fputc(']', f);
}

og_status *profiler_write_trace(const og_profiler *p, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return og_errorf(OG_ERR_IO, "profile: cannot write '%s'", path);
    fputs("{\"traceEvents\": [\n", f);
    int32_t seen[64];
    int n_seen = 0;
    bool first = true;
    for (size_t i = 0; i < p->n; i++) { /* thread names, once each */
        int32_t tid = p->rec[i].tid;
        bool known = false;
        for (int k = 0; k < n_seen && !known; k++) known = seen[k] == tid;
        if (known || n_seen == 64) continue;
        seen[n_seen++] = tid;
        fprintf(f, "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %d, "
                "\"args\": {\"name\": \"onnx-genai thread %d\"}}", first ? "" : ",\n", tid, tid);
        first = false;
    }
    for (size_t i = 0; i < p->n; i++) {
        const prof_rec *r = &p->rec[i];
        fprintf(f, "%s{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, ",
                first ? "" : ",\n", r->tid, (double)(r->t0 - p->origin) / 1e3,
                (double)(r->t1 - r->t0) / 1e3);
        first = false;
        if (!r->node) {
            fputs("\"cat\": \"run\", \"name\": ", f);
            json_string(f, r->label);
            fputs(", \"args\": {\"graph\": ", f);
            json_string(f, r->label);
            fputs("}}", f);
            continue;
        }
        const graph_node *n = r->node;
        fputs("\"cat\": \"node\", \"name\": ", f);
        if (n->name[0]) {
            json_string(f, n->name);
        } else {
            char buf[256];
            snprintf(buf, sizeof buf, "%s #%d", n->op_type, n->file_index);
            json_string(f, buf);
        }
        fputs(", \"args\": {\"op\": ", f);
        op_name(f, n);
        fputs(", \"graph\": ", f);
        json_string(f, r->label);
        fprintf(f, ", \"threads\": %d, \"pool_jobs\": %d", r->threads, r->jobs);
        if (r->shape_off != UINT32_MAX) {
            fputs(", ", f);
            shapes_json(f, p->dims + r->shape_off);
        }
        fputs("}}", f);
    }
    fprintf(f, "\n], \"displayTimeUnit\": \"ms\", \"otherData\": {\"producer\": \"onnx-genai\", "
            "\"node_slices\": %zu, \"dropped_node_slices\": %zu}}\n", p->nodes - p->dropped,
            p->dropped);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return og_errorf(OG_ERR_IO, "profile: error writing '%s'", path);
    return NULL;
}

/* ---- ops by total time --------------------------------------------------------------- */

typedef struct op_total {
    const graph_node *first; /* names the op */
    int64_t ns, calls, worst_ns;
    const graph_node *worst;
} op_total;

static bool same_op(const graph_node *a, const graph_node *b) {
    return a == b || (strcmp(a->op_type, b->op_type) == 0 && strcmp(a->domain, b->domain) == 0);
}

static int by_time(const void *a, const void *b) {
    const op_total *x = a, *y = b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

int64_t profiler_print_ops(const og_profiler *p, int tag, double per, const char *unit,
                           FILE *f) {
    op_total ops[256];
    int n_ops = 0, last = -1;
    int64_t total = 0;
    if (per <= 0) per = 1;
    for (size_t i = 0; i < p->n; i++) {
        const prof_rec *r = &p->rec[i];
        if (!r->node || r->tag != tag) continue;
        int k = last >= 0 && same_op(ops[last].first, r->node) ? last : -1;
        for (int j = 0; j < n_ops && k < 0; j++)
            if (same_op(ops[j].first, r->node)) k = j;
        if (k < 0) {
            if (n_ops == 256) continue;
            k = n_ops++;
            ops[k] = (op_total){.first = r->node};
        }
        last = k;
        int64_t ns = r->t1 - r->t0;
        ops[k].ns += ns;
        ops[k].calls++;
        if (ns > ops[k].worst_ns) ops[k].worst_ns = ns, ops[k].worst = r->node;
        total += ns;
    }
    qsort(ops, (size_t)n_ops, sizeof *ops, by_time);
    fprintf(f, "| %-36s | %8s | %10s | %6s | %9s | %-40s |\n", "op", "calls", unit, "share",
            "mean µs", "slowest node");
    fprintf(f, "|%s|%s|%s|%s|%s|%s|\n", "--------------------------------------",
            "---------:", "-----------:", "-------:", "----------:",
            "------------------------------------------");
    for (int k = 0; k < n_ops; k++) {
        const graph_node *n = ops[k].first;
        char op[128], worst[128];
        snprintf(op, sizeof op, "%s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
                 n->op_type);
        snprintf(worst, sizeof worst, "%s", ops[k].worst && ops[k].worst->name[0]
                                                ? ops[k].worst->name : "-");
        fprintf(f, "| %-36s | %8.6g | %10.4f | %5.1f%% | %9.2f | %-40s |\n", op,
                (double)ops[k].calls / per, (double)ops[k].ns / 1e6 / per,
                total ? 100.0 * (double)ops[k].ns / (double)total : 0.0,
                (double)ops[k].ns / 1e3 / (double)ops[k].calls, worst);
    }
    if (p->dropped) fprintf(f, "(%zu node records past the memory cap are not in this table)\n",
                            p->dropped);
    return total;
}
