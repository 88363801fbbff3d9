/* String formats as regular expressions over the decoded text, in the language
 * llguidance's JSON compiler gives each (learnt from its verdicts: RFC 3339 dates with
 * days per month but no leap-year rule, times with a leap second and a required offset,
 * lower-case 't' and 'z' allowed). None of these languages holds a character JSON must
 * escape, so the text is also the JSON string's body. */
#include "guide/json_internal.h"

#include <string.h>

#define DATE_RE                                                                          \
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"                          \
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|[12][0-9]))"
#define TIME_RE                                                                          \
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?"                    \
    "(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
#define HEX "[0-9a-fA-F]"

static const struct {
    const char *name, *re;
} k_formats[] = {
    {"date", DATE_RE},
    {"time", TIME_RE},
    {"date-time", DATE_RE "[tT]" TIME_RE},
    {"uuid", HEX "{8}-" HEX "{4}-" HEX "{4}-" HEX "{4}-" HEX "{12}"},
};

/* Formats llguidance knows whose languages are not learnt here yet. */
static const char *const k_not_yet[] = {"duration", "email", "hostname", "ipv4",
                                        "ipv6",     "uri",   "unknown"};

og_status *json_re_format_body(jbuf *out, const char *format, const char *where) {
    for (size_t i = 0; i < sizeof k_formats / sizeof k_formats[0]; i++)
        if (!strcmp(format, k_formats[i].name)) {
            jbuf_puts(out, k_formats[i].re);
            return out->oom ? og_oom() : NULL;
        }
    for (size_t i = 0; i < sizeof k_not_yet / sizeof k_not_yet[0]; i++)
        if (!strcmp(format, k_not_yet[i]))
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "JSON schema at %s: format '%s' is not supported yet", where[0] ? where : "/",
                             format);
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at %s: unknown format '%s'",
                     where[0] ? where : "/", format);
}
