/* String formats as regular expressions over the decoded text, in the languages
 * llguidance's JSON compiler gives them (learnt from its verdicts; built here from the
 * RFCs' grammars): RFC 3339 dates (days per month, no leap-year rule), times (leap
 * second, required offset, 't' and 'z' in either case) and durations; RFC 1123 host
 * names; dotted IPv4 without leading zeros; IPv6 in full or compressed form (without an
 * embedded IPv4); RFC 5321 mailboxes (dot-string local part, a domain or a bracketed
 * IPv4); RFC 3986 URIs; "unknown" is any string. None of these languages holds a
 * character JSON must escape except "unknown", whose body is written from
 * JSON_CHAR_RE; for the others the text is also the JSON string's body. */
#include "guide/json_internal.h"

#include <string.h>

#define DIGITS "[0-9]+"
#define HEX "[0-9a-fA-F]"
#define DATE_RE                                                                          \
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"                          \
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|[12][0-9]))"
#define TIME_RE                                                                          \
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?"                    \
    "(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
/* RFC 3339 appendix A: dur-second / dur-minute / dur-hour, then the date parts */
#define DUR_TIME "T(?:" DIGITS "H(?:" DIGITS "M(?:" DIGITS "S)?)?|" DIGITS "M(?:" DIGITS \
                 "S)?|" DIGITS "S)"
#define DUR_DATE "(?:" DIGITS "Y(?:" DIGITS "M(?:" DIGITS "D)?)?|" DIGITS "M(?:" DIGITS \
                 "D)?|" DIGITS "D)"
#define DURATION_RE "P(?:" DUR_DATE "(?:" DUR_TIME ")?|" DUR_TIME "|" DIGITS "W)"
#define OCTET "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#define IPV4_RE OCTET "(?:\\." OCTET "){3}"
#define H16 HEX "{1,4}"
/* compressed: p groups before "::" and s after, p + s <= 7 */
#define IPV6_RE                                                                          \
    "(?:(?:" H16 ":){7}" H16 "|(?:(?:" H16 ":){0,6}" H16 ")?::"                          \
    "|(?:(?:" H16 ":){0,5}" H16 ")?::" H16 "|(?:(?:" H16 ":){0,4}" H16 ")?::(?:" H16     \
    ":){1}" H16 "|(?:(?:" H16 ":){0,3}" H16 ")?::(?:" H16 ":){2}" H16 "|(?:(?:" H16      \
    ":){0,2}" H16 ")?::(?:" H16 ":){3}" H16 "|(?:" H16 ")?::(?:" H16 ":){4}" H16         \
    "|(?:(?:" H16 ":){0,0}" H16 ")?::(?:" H16 ":){5}" H16 "|::(?:" H16 ":){6}" H16 ")"
#define LABEL "[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
#define LABEL63 "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
#define ATEXT "[a-zA-Z0-9!#$%&'*+\\-/=?^_`{|}~]+"
#define EMAIL_RE                                                                         \
    ATEXT "(?:\\." ATEXT ")*@(?:" LABEL "(?:\\." LABEL ")*|\\[" IPV4_RE "\\])"
/* RFC 3986 */
#define UNRESERVED "a-zA-Z0-9\\-._~"
#define SUB_DELIMS "!$&'()*+,;="
#define PCT "%" HEX "{2}"
#define PCHAR "(?:[" UNRESERVED SUB_DELIMS ":@]|" PCT ")"
#define SEGMENT PCHAR "*"
#define SEGMENT_NZ PCHAR "+"
#define IP_LITERAL "\\[(?:" IPV6_RE "|v" HEX "+\\.[" UNRESERVED SUB_DELIMS ":]+)\\]"
#define REG_NAME "(?:[" UNRESERVED SUB_DELIMS "]|" PCT ")*"
#define AUTHORITY                                                                        \
    "(?:(?:[" UNRESERVED SUB_DELIMS ":]|" PCT ")*@)?(?:" IP_LITERAL "|" IPV4_RE "|"      \
    REG_NAME ")(?::[0-9]*)?"
#define URI_RE                                                                           \
    "[a-zA-Z][a-zA-Z0-9+\\-.]*:(?://" AUTHORITY "(?:/" SEGMENT ")*|/(?:" SEGMENT_NZ      \
    "(?:/" SEGMENT ")*)?|" SEGMENT_NZ "(?:/" SEGMENT ")*|)(?:\\?(?:" PCHAR "|[/?])*)?"    \
    "(?:#(?:" PCHAR "|[/?])*)?"

static const struct {
    const char *name, *re;
} k_formats[] = {
    {"date", DATE_RE},
    {"time", TIME_RE},
    {"date-time", DATE_RE "[tT]" TIME_RE},
    {"duration", DURATION_RE},
    {"email", EMAIL_RE},
    {"hostname", LABEL63 "(?:\\." LABEL63 ")*"},
    {"ipv4", IPV4_RE},
    {"ipv6", IPV6_RE},
    {"uuid", HEX "{8}-" HEX "{4}-" HEX "{4}-" HEX "{4}-" HEX "{12}"},
    {"uri", URI_RE},
};

bool json_format_known(const char *format) {
    for (size_t i = 0; i < sizeof k_formats / sizeof k_formats[0]; i++)
        if (!strcmp(format, k_formats[i].name)) return true;
    return !strcmp(format, "unknown");
}

og_status *json_re_format_body(jbuf *out, const char *format, const char *where) {
    if (!strcmp(format, "unknown")) {
        jbuf_printf(out, "%s*", JSON_CHAR_RE);
        return out->oom ? og_oom() : NULL;
    }
    for (size_t i = 0; i < sizeof k_formats / sizeof k_formats[0]; i++)
        if (!strcmp(format, k_formats[i].name)) {
            jbuf_puts(out, "(?:");
            jbuf_puts(out, k_formats[i].re);
            jbuf_putc(out, ')');
            return out->oom ? og_oom() : NULL;
        }
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at %s: unknown format '%s'",
                     where[0] ? where : "/", format);
}
