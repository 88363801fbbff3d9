/* String formats as regular expressions over the decoded text. */
#include "guide/json_internal.h"

og_status *json_re_format_body(jbuf *out, const char *format, const char *where) {
    (void)out;
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at %s: format '%s' is not supported yet",
                     where[0] ? where : "/", format);
}
