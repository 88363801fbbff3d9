/* chat_stream's reasoning marked in the text (<think> ... </think>, chat_stream_think): each
 * answer fed whole, byte by byte and in pieces of 3 gives the same reasoning and content,
 * which are what Qwen3's / QwQ's templates take back from an answer: reasoning =
 * answer.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n'), content =
 * answer.split('</think>')[-1].lstrip('\n') (for a block that opens the answer; written out
 * by hand below from those expressions). Stop strings still cut the answer only. */
#include "testing.h"

#include "chat/chat_stream.h"

#include <stdlib.h>
#include <string.h>

typedef struct got {
    char text[3][512];
    size_t n[3];
} got;

static void collect(void *ctx, chat_channel ch, const char *t, size_t len) {
    got *g = ctx;
    if (g->n[ch] + len < sizeof g->text[ch]) {
        memcpy(g->text[ch] + g->n[ch], t, len);
        g->n[ch] += len;
        g->text[ch][g->n[ch]] = 0;
    }
}

/* Feeds answer in pieces of `step` bytes (0: whole); 1 when reasoning and content are as
 * expected. */
static int split_is(const char *answer, bool inside, size_t step, const char *stop, const char *reasoning,
                    const char *content) {
    got g;
    memset(&g, 0, sizeof g);
    chat_stream s;
    const char *stops[1] = {stop};
    chat_stream_init(&s, stops, stop ? 1 : 0, -1, -1, -1, -1, collect, &g);
    chat_stream_think(&s, "<think>", "</think>", inside);
    size_t n = strlen(answer);
    for (size_t i = 0; i < n;) {
        size_t k = step && n - i > step ? step : n - i;
        chat_stream_token(&s, -1, answer + i, k);
        i += k;
    }
    chat_stream_finish(&s);
    int ok = !strcmp(g.text[CH_THINKING], reasoning) && !strcmp(g.text[CH_ANSWER], content) &&
             !strcmp(chat_stream_text(&s, CH_THINKING), reasoning) && !strcmp(chat_stream_text(&s, CH_ANSWER), content);
    if (!ok)
        fprintf(stderr, "    %s (step %zu): reasoning '%s' content '%s', expected '%s' / '%s'\n", answer, step,
                g.text[CH_THINKING], g.text[CH_ANSWER], reasoning, content);
    chat_stream_free(&s);
    return ok;
}

static int all_steps(const char *answer, bool inside, const char *stop, const char *reasoning, const char *content) {
    return split_is(answer, inside, 0, stop, reasoning, content) && split_is(answer, inside, 1, stop, reasoning, content) &&
           split_is(answer, inside, 3, stop, reasoning, content);
}

TEST(chat_stream_think_blocks) {
    /* Qwen3: the block opens the answer, newlines around it dropped */
    CHECK(all_steps("<think>\nThe user greets me.\nI greet back.\n</think>\n\nHello!", false, NULL,
                    "The user greets me.\nI greet back.", "Hello!"));
    /* white space before the block, none inside or after */
    CHECK(all_steps("  \n<think>x</think>y", false, NULL, "x", "y"));
    /* an empty block (Qwen3 with enable_thinking false writes one into the prompt; a
     * model may write one too) */
    CHECK(all_steps("<think>\n\n</think>\n\nJust the answer.", false, NULL, "", "Just the answer."));
    /* no block: the answer as it is, white space kept */
    CHECK(all_steps("  Plain answer with <think> later.", false, NULL, "", "  Plain answer with <think> later."));
    CHECK(all_steps("<thinking is not the marker>", false, NULL, "", "<thinking is not the marker>"));
    CHECK(all_steps("<thi", false, NULL, "", "<thi"));
    /* DeepSeek-R1 / QwQ: the prompt ends with "<think>\n", the answer starts inside */
    CHECK(all_steps("Let me think.\n\nStep 2.\n</think>\n\nThe answer is 4.", true, NULL,
                    "Let me think.\n\nStep 2.", "The answer is 4."));
    /* an answer that ends inside the block is all reasoning */
    CHECK(all_steps("<think>\nstill thinking\n\n", false, NULL, "still thinking", ""));
    CHECK(all_steps("half a clo</thi", true, NULL, "half a clo</thi", ""));
    /* a second block is content (the templates split on the first close) */
    CHECK(all_steps("<think>a</think>b<think>c</think>", false, NULL, "a", "b<think>c</think>"));
    /* stop strings cut the answer, not the reasoning */
    CHECK(all_steps("<think>STOP here is fine</think>\nanswer STOP cut", false, "STOP", "STOP here is fine", "answer "));
    /* newlines inside the reasoning stay; only its two ends lose them */
    CHECK(all_steps("<think>\n\na\n\nb\n\n</think>c\n", false, NULL, "a\n\nb", "c\n"));
}
