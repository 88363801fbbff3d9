/* What sessions prepared when they opened, the kernels' instruction set and resident
 * memory: shared by `show` and `bench`. */
#include "tools/cli.h"

#include "runtime/session.h"
#include "base/cpu.h"
#include "genai/model.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cli_prep_add(const og_session *s, cli_prep *acc) {
    if (!s) return;
    session_prep_stats p;
    runtime_session_prep_stats(s, &p);
    acc->bytes += p.bytes;
    acc->released += p.released;
    acc->nodes += p.nodes;
    acc->secs += p.secs;
    acc->cpu_secs += p.cpu_secs;
}

void cli_prep_of_model(const og_model *m, cli_prep *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < m->n_stages; i++) cli_prep_add(m->stages[i].s, out);
}

const char *cli_isa_summary(char *buf, size_t size) {
    cpu_isa a = cpu_isa_active(), s = cpu_isa_supported();
    const char *bad = cpu_isa_env_error();
    if (bad[0])
        snprintf(buf, size, "%s (OG_ISA=%s names no level: generic, avx2, avx512, amx)",
                 cpu_isa_name(a), bad);
    else if (a != s)
        snprintf(buf, size, "%s (capped by OG_ISA; the CPU has %s)", cpu_isa_name(a),
                 cpu_isa_name(s));
    else
        snprintf(buf, size, "%s", cpu_isa_name(a));
    return buf;
}

size_t cli_rss_now(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages_total = 0, pages_rss = 0;
    int n = fscanf(f, "%llu %llu", &pages_total, &pages_rss);
    fclose(f);
    return n == 2 ? (size_t)pages_rss * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

size_t cli_rss_peak(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024u;
}
