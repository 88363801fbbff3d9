/* Resident memory of this process: what the CLI's benchmarks and the server's model
 * budget measure. Linux /proc; 0 where it is not mounted. */
#ifndef OG_BASE_PROC_MEM_H
#define OG_BASE_PROC_MEM_H

#include <stddef.h>

/* Resident memory now, in bytes (0 when /proc is not there). */
size_t proc_rss_now(void);
/* The most this process has had resident since it started or exec'd (VmHWM, per address
 * space; getrusage's ru_maxrss survives exec, so under a launcher it reports the parent's
 * size). 0 when /proc is not there. */
size_t proc_rss_peak(void);

#endif
