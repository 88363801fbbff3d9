/* Resident memory of this process, read from /proc (see proc_mem.h). */
#include "base/proc_mem.h"

#include <stdio.h>
#include <unistd.h>

size_t proc_rss_now(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages_total = 0, pages_rss = 0;
    int n = fscanf(f, "%llu %llu", &pages_total, &pages_rss);
    fclose(f);
    return n == 2 ? (size_t)pages_rss * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

size_t proc_rss_peak(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024u;
}
