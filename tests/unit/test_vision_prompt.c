/* gen_vision_expand_prompt: each <|vision_start|> placeholder of a Qwen-VL prompt becomes
 * start, t * h * w / merge^2 <|image_pad|>, end; a placeholder's own end marker (and what
 * lies between) is replaced, an end marker after the next placeholder is not its own. */
#include "testing.h"

#include "genai/model.h"
#include "genai/vision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VS "<|vision_start|>"
#define VE "<|vision_end|>"
#define PAD "<|image_pad|>"

static void expands(const char *text, int n, const char *want) {
    og_model m;
    memset(&m, 0, sizeof m);
    m.spatial_merge = 2;
    int64_t grid[6] = {1, 2, 2, 1, 4, 2}; /* 1 and 2 pads */
    char *out = NULL;
    CHECK_OK(gen_vision_expand_prompt(&m, text, grid, n, false, &out));
    CHECK(out && strcmp(out, want) == 0);
    if (out && strcmp(out, want)) fprintf(stderr, "    got %s\n    want %s\n", out, want);
    free(out);
}

TEST(vision_prompt_placeholders_expand) {
    expands("a " VS VE " b", 1, "a " VS PAD VE " b");
    expands(VS "x" VE VS VE "!", 2, VS PAD VE VS PAD PAD VE "!");
}

/* a stray start marker: the first placeholder has no end of its own (the end after the
 * second start belongs to the second); before the fix the first skipped to it and the
 * second placeholder was searched past it (a negative copy length) */
TEST(vision_prompt_end_marker_of_the_next_placeholder) {
    expands(VS "A" VS "B" VE, 2, VS PAD VE "A" VS PAD PAD VE);
}
