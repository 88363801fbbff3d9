/* Integer options, one reading for every command. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool cli_parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

int cli_int_option(const char *flag, const char *s, long lo, long hi, int *out) {
    if (cli_parse_int(s, lo, hi, out)) return 0;
    char *end;
    double d = strtod(s, &end);
    if (end == s || *end || isnan(d)) return cli_fail("%s: '%s' is not a number", flag, s);
    if (d != floor(d)) return cli_fail("%s: '%s' is not an integer", flag, s);
    if (d > (double)hi) return cli_fail("%s: %s is too large: at most %ld", flag, s, hi);
    return cli_fail("%s: %s is too small: at least %ld", flag, s, lo);
}
