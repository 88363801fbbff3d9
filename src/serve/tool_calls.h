/* Tool calls in a model's answer: the formats the chat templates teach, found in the text
 * as it streams, turned into OpenAI's {name, arguments} pairs.
 *
 *   TC_HERMES   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one or more
 *               (Qwen2/2.5/3, QwQ, Hermes 2 Pro)
 *   TC_LLAMA3   {"name": ..., "parameters": {...}} as the whole answer, or after
 *               <|python_tag|>; several separated by ';' (Llama 3.1/3.2)
 *   TC_MISTRAL  [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...] (Mistral, Mixtral, Nemo)
 *   TC_GRANITE  <|tool_call|> [{"name": ..., "arguments": {...}}, ...] (Granite 3.x)
 *   TC_DEEPSEEK <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
 *               ```json {...} ```<｜tool▁call▁end｜>..., <｜tool▁calls▁end｜> (DeepSeek V3, R1)
 *   TC_COMMAND_R Action: ```json [{"tool_name": ..., "parameters": {...}}, ...] ``` (Command-R)
 *   TC_PYTHONIC <|tool_call_start|>[name(key=value, ...), ...]<|tool_call_end|> (LFM2), or
 *               the bare list as the whole answer; the values Python literals (strings,
 *               numbers, True/False/None, lists, dicts), turned into a JSON object
 * and TC_MISTRAL also as [TOOL_CALLS]NAME[ARGS]{...} per call (Mistral's newer tokenizers,
 * [CALL_ID]ID before [ARGS] in some), TC_LLAMA3 also as a bare Python list (Llama 3.2).
 *
 * The parser passes the text before a call through as content as soon as it is known not
 * to start one (white space and a possible opener's first bytes are held back), and holds
 * everything from the opener to the end of the answer. At the end the held text either
 * parses, every call of it (then the calls are the answer's tool calls), or it does not
 * (malformed JSON, a call without a name, text between calls): then it is content, as if
 * no opener had come. Feeding the text in any pieces gives what feeding it whole gives.
 *
 * While the call text is held, the parser also reads it as far as it goes (p->partial):
 * each call whose name is whole, and the part of its arguments written so far, so that a
 * stream can send the name first and then the arguments a piece at a time, as OpenAI's
 * streams do. What it reads is always a prefix of what tc_finish gives: a call's arguments
 * are the JSON object the model wrote with the white space outside its strings taken out
 * (numbers and escapes as written), or, where the model wrote something else (Python
 * literals, a string of JSON), the whole arguments once the call has ended. The held text
 * is read again after each piece up to 16 KiB of it; past that the rest comes at the end.
 * It may still turn out malformed at the end; then what was read was not a call after all. */
#ifndef OG_SERVE_TOOL_CALLS_H
#define OG_SERVE_TOOL_CALLS_H

#include "serve/serve_buf.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum tc_format {
    TC_NONE, TC_HERMES, TC_LLAMA3, TC_MISTRAL, TC_GRANITE, TC_DEEPSEEK, TC_COMMAND_R, TC_PYTHONIC
} tc_format;

/* "none", "hermes", "llama3_json", "mistral", "granite", "deepseek", "command_r", "pythonic". */
const char *tc_format_name(tc_format f);
/* The format whose markers text shows (a template's rendering of a tool call, or its tool
 * instructions): TC_NONE when none does. */
tc_format tc_format_in_text(const char *text);
/* Whether the model's vocabulary has a token of this text (NULL: not known). */
typedef bool (*tc_has_token_fn)(void *ctx, const char *text);
/* The format a chat template teaches: it renders a probe conversation (a tool, a user
 * question, an assistant turn calling the tool with content "", then None, the tool's
 * answer) and looks for the markers in what it writes, then in its tool instructions.
 * A template that lists the tools but shows no format: the vocabulary's call markers
 * (has_token, may be NULL) tell it (<|tool_call_start|> / <|tool_call_end|>: pythonic).
 * *args_object: the template takes a call's arguments as an object (it renders them so;
 * Qwen's and Llama's `arguments | tojson`), else as the JSON text OpenAI's clients send
 * (DeepSeek's `+ arguments`). */
struct og_chat_template;
tc_format tc_detect(const struct og_chat_template *t, tc_has_token_fn has_token, void *ctx,
                    bool *args_object);
/* A tc_has_token_fn over an og_tokenizer (ctx). */
bool tc_tokenizer_has(void *tok, const char *text);
#define TC_MAX_MARKERS 8
/* The special tokens of format f that a tokenizer may drop when decoding (NULL-terminated,
 * at most TC_MAX_MARKERS). */
const char *const *tc_format_markers(tc_format f);

typedef struct tc_call {
    char *name;      /* the function's name */
    char *arguments; /* a JSON object, as text */
} tc_call;

/* A call as far as the held text shows it (see above). */
typedef struct tc_partial {
    char *name;       /* NULL until the name is whole */
    srv_buf args;     /* the arguments so far: a prefix of the call's arguments at the end */
    bool args_whole;  /* args is all of them */
} tc_partial;

/* Receives content text as it becomes final, in order. */
typedef void (*tc_content_fn)(void *ctx, const char *text, size_t len);

typedef struct tc_parser {
    tc_format fmt;
    srv_buf buf;       /* everything fed */
    const char *text;  /* buf's bytes, n of them */
    size_t n;
    size_t emitted;    /* bytes of text passed on as content */
    size_t start;      /* where the held call text begins (when in_call) */
    bool in_call;
    bool finished;
    bool oom;
    tc_call *calls;    /* after tc_finish */
    int n_calls;
    tc_partial *partial; /* the calls the held text shows so far, in order */
    int n_partial, cap_partial;
    tc_content_fn emit;
    void *ctx;
} tc_parser;

void tc_init(tc_parser *p, tc_format fmt, tc_content_fn emit, void *ctx);
void tc_feed(tc_parser *p, const char *text, size_t len);
/* The end of the answer: parses what was held; returns the number of calls (0: the held
 * text, if any, was passed on as content). */
int tc_finish(tc_parser *p);
void tc_free(tc_parser *p);

#endif
