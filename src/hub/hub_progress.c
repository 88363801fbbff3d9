/* A download's progress bar on stderr, redrawn in place at most ten times a second, and
 * only on a terminal: logs and pipes get the one summary line pull prints itself. */
#include "hub/hub.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct hub_bar {
    char name[48];
    long long total, start, done;
    double t0, last;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void human(double bytes, char *out, size_t cap) {
    const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) bytes /= 1000, u++;
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

static void draw(hub_bar *b, bool final) {
    double t = now();
    if (!final && t - b->last < 0.1) return;
    b->last = t;
    char done[24], total[24], rate[24];
    human((double)b->done, done, sizeof done);
    human((double)b->total, total, sizeof total);
    double secs = t - b->t0;
    human(secs > 0 ? (double)(b->done - b->start) / secs : 0, rate, sizeof rate);
    char bar[31];
    int fill = b->total > 0 ? (int)(30.0 * (double)b->done / (double)b->total) : 0;
    if (fill > 30) fill = 30;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(30 - fill));
    bar[30] = 0;
    if (b->total > 0)
        fprintf(stderr, "\r%-40s [%s] %3d%% %s / %s  %s/s\033[K", b->name, bar,
                (int)(100.0 * (double)b->done / (double)b->total), done, total, rate);
    else
        fprintf(stderr, "\r%-40s %s  %s/s\033[K", b->name, done, rate);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

hub_bar *hub_bar_start(const char *name, long long total, long long done) {
    if (!isatty(STDERR_FILENO)) return NULL;
    hub_bar *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    /* Long paths keep their end: the file name says more than the folders. */
    size_t n = strlen(name);
    snprintf(b->name, sizeof b->name, "%s%s", n > 40 ? "..." : "", n > 40 ? name + n - 37 : name);
    b->total = total;
    b->start = b->done = done;
    b->t0 = now();
    b->last = 0;
    draw(b, false);
    return b;
}

void hub_bar_update(hub_bar *b, long long done) {
    if (!b) return;
    b->done = done;
    draw(b, false);
}

void hub_bar_end(hub_bar *b) {
    if (!b) return;
    draw(b, true);
    free(b);
}
