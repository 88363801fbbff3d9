/* Streaming a chat answer: generated tokens become text in three channels (the answer,
 * the model's reasoning between genai_config's bor/eor tokens, tool calls between
 * bot/eot), and stop strings cut the answer before them, even when a stop string spans
 * several tokens: text that could be the start of one is held back until it is known
 * not to be. */
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
} chat_stream;

void chat_stream_init(chat_stream *s, const char *const *stops, int n_stops, int32_t bor,
                      int32_t eor, int32_t bot, int32_t eot, chat_emit_fn emit, void *ctx);
void chat_stream_free(chat_stream *s);
/* One generated token: its id (for the channel tokens) and its decoded text, len bytes
 * (which may hold NUL bytes: a token of the byte 0; stop strings are matched by bytes). */
void chat_stream_token(chat_stream *s, int32_t id, const char *piece, size_t len);
/* The end of the answer: emits what was held back (no stop string came). */
void chat_stream_finish(chat_stream *s);
/* Text of a channel so far (NUL-terminated, "" when empty; s->text[ch].n its length,
 * which a NUL byte in the text does not end). */
const char *chat_stream_text(const chat_stream *s, chat_channel ch);

#endif
