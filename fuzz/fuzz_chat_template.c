/* libFuzzer target: any byte string given as a chat template must parse or fail cleanly,
 * and a template that parses must render or fail cleanly, within small limits, never
 * crash, leak or run away. It renders against a fixed conversation with tools. */
#include "chat/chat.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char messages[] =
    "[{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Weather?\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"type\": \"function\","
    "  \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]},"
    " {\"role\": \"tool\", \"content\": \"22C\"},"
    " {\"role\": \"assistant\", \"reasoning_content\": \"ok\", \"content\": \"Sunny, 22C.\"}]";
static const char tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\":"
    " {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    chat_template *t = NULL;
    og_status *st = chat_template_parse((const char *)data, size, "<fuzz>", &t);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    chat_vars *v = NULL;
    if (!(st = chat_vars_new(&v)) && !(st = chat_vars_set_messages_json(v, messages, strlen(messages))) &&
        !(st = chat_vars_set_json(v, "tools", tools, strlen(tools))) &&
        !(st = chat_vars_set_bool(v, "add_generation_prompt", true)) &&
        !(st = chat_vars_set_string(v, "bos_token", "<s>", 3))) {
        chat_limits lim = chat_limits_default();
        lim.max_output = 1 << 20;
        lim.max_memory = 64 << 20;
        lim.max_depth = 32;
        lim.max_iterations = 100000;
        char *out = NULL;
        size_t len = 0;
        st = chat_render(t, v, &lim, &out, &len);
        free(out);
    }
    if (st) (void)og_status_message(st);
    og_status_free(st);
    chat_vars_free(v);
    chat_template_free(t);
    return 0;
}
