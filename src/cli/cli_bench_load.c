/* onnx-genai bench-load FILE.onnx: how long opening a model takes and how much resident
 * memory it adds before the first run. Weights stay in the file mapping, so the growth
 * should be a small fraction of the file size. */
#include "base/mapped_file.h"
#include "runtime/og_session.h"
#include "cli/cli.h"

#include "onnx_genai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Resident set size now, from /proc/self/statm. */
static long long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lld %lld", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_bench_load(int argc, char **argv) {
    static const char usage[] = "usage: onnx-genai bench-load FILE.onnx [--repeat N]";
    const char *path = NULL;
    int repeat = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("%s\n  opens the graph N times (default 5) on the native executor and prints the\n"
                   "  best open time, bytes mapped and copied, and resident memory growth\n", usage);
            return 0;
        } else if (!strcmp(argv[i], "--repeat")) {
            if (i + 1 >= argc) return cli_fail("--repeat needs a value\n%s", usage);
            int rc = cli_int_option("--repeat", argv[++i], 1, 1000000, &repeat);
            if (rc) return rc;
        } else if (argv[i][0] == '-' || path) {
            return cli_fail("bench-load: unexpected argument '%s'\n%s", argv[i], usage);
        } else {
            path = argv[i];
        }
    }
    if (!path) return cli_fail("%s", usage);
    struct stat stt;
    if (stat(path, &stt) != 0) return cli_fail("%s: cannot stat", path);
    double total_bytes = 0; /* the model file and its external-data files */
    int files = 0;
    size_t copied = 0;
    double best = 1e30;
    long long growth = 0;
    for (int r = 0; r < repeat; r++) {
        long long before = rss_bytes();
        double t0 = now_s();
        og_session *s;
        og_session_options o = og_session_options_default();
        o.num_threads = 1;
        o.backend = OG_BACKEND_NATIVE; /* our loader and executor's preparation */
        og_status *st = og_session_open(path, &o, &s);
        double t = now_s() - t0;
        if (st) {
            int rc = cli_fail("%s", og_status_message(st));
            og_status_free(st);
            return rc;
        }
        long long after = rss_bytes();
        if (t < best) best = t;
        growth = after - before;
        total_bytes = 0;
        const model *md = runtime_session_model(s);
        files = md->n_mappings;
        for (int i = 0; i < md->n_mappings; i++) total_bytes += (double)md->mappings[i].size;
        copied = md->copied_bytes;
        og_session_close(s);
    }
    printf("file: %s (%.1f MB in %d file%s, model and external data)\n", path,
           total_bytes / 1e6, files, files == 1 ? "" : "s");
    printf("load: %.2f ms (best of %d)\n", best * 1e3, repeat);
    printf("copied at load (typed fields, unaligned raw_data): %.1f MB\n", copied / 1e6);
    printf("RSS growth after load: %.2f MB (%.2f%% of the model's bytes)\n", growth / 1e6,
           total_bytes > 0 ? 100.0 * (double)growth / total_bytes : 0.0);
    return 0;
}
