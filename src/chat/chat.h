/* The chat layer: a Jinja engine for the chat templates that instruction-tuned models
 * ship (tokenizer_config.json `chat_template`, chat_template.jinja), rendering byte for
 * byte what Hugging Face transformers renders: jinja2's ImmutableSandboxedEnvironment
 * with trim_blocks and lstrip_blocks, the loopcontrols extension, transformers'
 * {% generation %} tag and its globals (raise_exception, strftime_now, namespace, dict)
 * and its tojson filter (json.dumps with ensure_ascii=False).
 *
 * A template is parsed once (chat_template_parse) and rendered any number of times
 * with a set of variables (chat_vars). Rendering an untrusted template is bounded by
 * chat_limits; nothing in a template can reach files, the environment or the network
 * (strftime_now reads the clock, or CHAT_TEMPLATE_NOW=YYYY-MM-DDTHH:MM:SS when set, for
 * reproducible output).
 *
 * Errors: a syntax error is OG_ERR_INVALID_MODEL, a construct this engine does not
 * implement OG_ERR_UNSUPPORTED, raise_exception() OG_ERR_INVALID_ARGUMENT (the template
 * refused its input), anything else at render time OG_ERR_RUNTIME. Every message starts
 * with "<origin>:<line>:" and names jinja2's exception class (TypeError, UndefinedError,
 * ...) where jinja2 would raise one. This layer knows nothing of graphs or tokenizers. */
#ifndef OG_CHAT_CHAT_H
#define OG_CHAT_CHAT_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct chat_template chat_template;
typedef struct chat_vars chat_vars;

typedef struct chat_limits {
    size_t max_output;       /* bytes of rendered text (and of any one string) */
    size_t max_memory;       /* bytes the render may allocate for values */
    int max_depth;           /* nested macro / caller / recursive-loop calls */
    uint64_t max_iterations; /* loop iterations in one render, all loops together */
} chat_limits;

/* 32 MiB of output, 256 MiB of values, 128 nested calls, 10 million iterations. */
chat_limits chat_limits_default(void);

/* Parses src[0..len) (UTF-8). origin names the template in messages (a file name or
 * "tokenizer_config.json chat_template"). Free with chat_template_free. */
og_status *chat_template_parse(const char *src, size_t len, const char *origin,
                               chat_template **out);
void chat_template_free(chat_template *t);
const char *chat_template_origin(const chat_template *t);

/* Variables for a render. Free with chat_vars_free. Setting a name again replaces it. */
og_status *chat_vars_new(chat_vars **out);
void chat_vars_free(chat_vars *v);
/* A variable from JSON text (any JSON value; numbers keep Python's int/float split). */
og_status *chat_vars_set_json(chat_vars *v, const char *name, const char *json, size_t len);
og_status *chat_vars_set_string(chat_vars *v, const char *name, const char *s, size_t len);
og_status *chat_vars_set_bool(chat_vars *v, const char *name, bool b);
og_status *chat_vars_set_none(chat_vars *v, const char *name);
/* Every key of a JSON object becomes a variable (extra keyword arguments). */
og_status *chat_vars_update_json(chat_vars *v, const char *json, size_t len);
/* `messages` as transformers passes them: each message loses its keys whose value is
 * null, and reasoning_content / thinking / reasoning are aliased to both "thinking" and
 * "reasoning_content". json must be an array of objects. */
og_status *chat_vars_set_messages_json(chat_vars *v, const char *json, size_t len);
/* The same with null values kept (as None): not what transformers passes, for probing
 * what a template does with them (serve's tool-call format probe: DeepSeek's templates
 * write a call only for an assistant message whose content is None). */
og_status *chat_vars_set_messages_json_nulls(chat_vars *v, const char *json, size_t len);
/* og_chat_template_apply with the messages' null values kept (see above). */
struct og_chat_template;
struct og_chat_options;
og_status *chat_template_apply_nulls(const struct og_chat_template *t, const char *messages_json,
                                     const struct og_chat_options *options, char **text);
/* The text of the template og_chat_template_apply uses without a name or tools (the one,
 * or "default"), NULL when there is none; owned by t. */
const char *chat_template_source(const struct og_chat_template *t);
/* Whether name is set. */
bool chat_vars_has(const chat_vars *v, const char *name);

/* Renders t with vars. lim NULL: chat_limits_default(). *out (NUL-terminated, *len
 * bytes) is the caller's: free with free(). */
og_status *chat_render(const chat_template *t, const chat_vars *vars, const chat_limits *lim,
                       char **out, size_t *len);

#endif
