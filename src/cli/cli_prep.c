/* What sessions prepared when they opened, the kernels' instruction set and resident
 * memory: shared by `show` and `bench`. */
#include "cli/cli.h"

#include "runtime/og_session.h"
#include "base/isa.h"
#include "genai/model.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void cli_prep_add(const og_session *s, cli_prep *acc) {
    if (!s) return;
    backend_prep_stats p;
    runtime_session_prep_stats(s, &p);
    acc->bytes += p.bytes;
    acc->released += p.released;
    acc->nodes += p.nodes;
    acc->secs += p.secs;
    acc->cpu_secs += p.cpu_secs;
    if (!acc->cache || (p.cache && strcmp(p.cache, "off"))) acc->cache = p.cache ? p.cache : "off";
}

void cli_prep_of_model(const og_model *m, cli_prep *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < m->n_stages; i++) cli_prep_add(m->stages[i].s, out);
}

const char *cli_isa_summary(char *buf, size_t size) {
    isa_level a = isa_active(), s = isa_supported();
    const char *bad = isa_env_error();
    if (bad[0])
        snprintf(buf, size, "%s (OG_ISA=%s names no level: generic, avx2, avx512, amx)",
                 isa_name(a), bad);
    else if (a != s)
        snprintf(buf, size, "%s (capped by OG_ISA; the CPU has %s)", isa_name(a),
                 isa_name(s));
    else
        snprintf(buf, size, "%s", isa_name(a));
    return buf;
}

