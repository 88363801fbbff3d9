/* Streaming a chat answer: generated tokens become text in three channels (the answer,
 * the model's reasoning between genai_config's bor/eor tokens, tool calls between
 * bot/eot), and stop strings cut the answer before them, even when a stop string spans
 * several tokens: text that could be the start of one is held back until it is known
 * not to be.
 *
 * Reasoning may also be marked in the text (chat_stream_think: "<think>" ... "</think>"
 * as Qwen3's, QwQ's and DeepSeek-R1's templates have it, where genai_config names no
 * bor/eor tokens): a block that opens the answer (only white space before it), or that
 * the prompt left open, goes to the reasoning channel without its markers, the newlines
 * at its two ends and those after its close dropped (what the templates strip when they
 * read a past answer back); text that could still become a marker is held back. An
 * answer that ends inside the block is all reasoning. */
#ifndef OG_CHAT_CHAT_STREAM_H
#define OG_CHAT_CHAT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum chat_channel { CH_ANSWER, CH_THINKING, CH_TOOL } chat_channel;

/* Receives text as it becomes final, in order, tagged with its channel. */
typedef void (*chat_emit_fn)(void *ctx, chat_channel ch, const char *text, size_t len);

typedef struct chat_text {
    char *p;
    size_t n, cap;
} chat_text;

typedef struct chat_stream {
    const char *const *stops; /* borrowed */
    int n_stops;
    int32_t bor, eor, bot, eot; /* -1 when the package has none */
    chat_channel ch;
    chat_text text[3];  /* everything each channel received (the answer cut at a stop) */
    size_t emitted;     /* bytes of the answer already emitted */
    bool stopped;       /* a stop string was found */
    int stop;           /* which (an index into stops) when stopped (Anthropic's answers
                           name it) */
    bool oom;
    chat_emit_fn emit;
    void *ctx;
    /* reasoning marked in the text (chat_stream_think; NULL: none) */
    const char *think_open, *think_close;
    int think_state;    /* 0: the answer's start (a block may open), 1: inside, 2: past */
    bool think_lead;    /* inside, nothing emitted yet: leading newlines are dropped */
    bool answer_lead;   /* past a close, no answer text yet: leading newlines are dropped */
    chat_text pend;     /* text held while it may become a marker (or trailing newlines) */
} chat_stream;

void chat_stream_init(chat_stream *s, const char *const *stops, int n_stops, int32_t bor,
                      int32_t eor, int32_t bot, int32_t eot, chat_emit_fn emit, void *ctx);
void chat_stream_free(chat_stream *s);
/* Reasoning marked by the texts open and close (borrowed; both non-empty); inside: the
 * prompt ended inside a block (DeepSeek-R1's and QwQ's generation prompts end with
 * "<think>\n"), so the answer starts in it. Call after chat_stream_init. */
void chat_stream_think(chat_stream *s, const char *open, const char *close, bool inside);
/* The reasoning markers of a chat template that writes <think> blocks (its source has
 * both "<think>" and "</think>": Qwen3's, QwQ's, DeepSeek-R1's), for a package whose
 * genai_config names no bor/eor tokens (has_tokens: it names both; then NULL): *close set
 * to "</think>" and "<think>" returned; NULL when the template writes none. */
const char *chat_think_markers(const char *template_source, bool has_tokens, const char **close);
/* Whether text (a rendered prompt) ends inside a block of open / close: its last open
 * marker has no close after it. */
bool chat_text_in_block(const char *text, const char *open, const char *close);
/* One generated token: its id (for the channel tokens) and its decoded text, len bytes
 * (which may hold NUL bytes: a token of the byte 0; stop strings are matched by bytes). */
void chat_stream_token(chat_stream *s, int32_t id, const char *piece, size_t len);
/* The end of the answer: emits what was held back (no stop string came). */
void chat_stream_finish(chat_stream *s);
/* Text of a channel so far (NUL-terminated, "" when empty; s->text[ch].n its length,
 * which a NUL byte in the text does not end). */
const char *chat_stream_text(const chat_stream *s, chat_channel ch);

#endif
