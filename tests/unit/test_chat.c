/* The chat-template C API: finding a package's template(s) and special tokens as
 * transformers does, and errors that name the construct and its line. (Rendering itself
 * is compared with jinja2 by tests/chat.) */
#include "testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *make_dir(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), name);
    mkdir(path, 0755);
    return path;
}

static const char user_msg[] = "[{\"role\": \"user\", \"content\": \"Hi\"}]";

/* Renders and compares; frees everything. */
static int render_is(og_chat_template *ct, const char *msgs, const og_chat_options *o,
                     const char *want) {
    char *text = NULL;
    og_status *st = og_chat_template_apply(ct, msgs, o, &text);
    if (st) {
        fprintf(stderr, "    apply failed: %s\n", og_status_message(st));
        og_status_free(st);
        return 0;
    }
    int same = strcmp(text, want) == 0;
    if (!same) fprintf(stderr, "    got '%s', want '%s'\n", text, want);
    og_free(text);
    return same;
}

TEST(chat_from_string) {
    og_chat_template *ct;
    const char *src = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                      "{% if add_generation_prompt %}<assistant>{% endif %}";
    CHECK_OK(og_chat_template_from_string(src, strlen(src), &ct));
    og_chat_options o = og_chat_options_default();
    o.add_generation_prompt = 1;
    int ok = render_is(ct, user_msg, &o, "<user>Hi<assistant>");
    CHECK(ok);
    ok = render_is(ct, user_msg, NULL, "<user>Hi");
    og_chat_template_free(ct);
    CHECK(ok);
}

TEST(chat_package_tokens) {
    const char *dir = make_dir("chat_pkg_tokens");
    write_file(dir, "tokenizer_config.json",
               "{\"bos_token\": {\"content\": \"<|begin|>\", \"lstrip\": false},"
               " \"eos_token\": \"<|end|>\", \"pad_token\": null,"
               " \"additional_special_tokens\": [\"<a>\", {\"content\": \"<b>\"}],"
               " \"chat_template\": \"{{ bos_token }}{% for m in messages %}{{ m.content }}"
               "{{ eos_token }}{% endfor %}{{ pad_token is defined }}{{ additional_special_tokens }}\"}");
    og_chat_template *ct;
    CHECK_OK(og_chat_template_open(dir, &ct));
    CHECK_EQ_INT(og_chat_template_count(ct), 1);
    CHECK(!strcmp(og_chat_template_name(ct, 0), "default"));
    CHECK(strstr(og_chat_template_origin(ct, 0), "tokenizer_config.json chat_template") != NULL);
    CHECK(!strcmp(og_chat_template_token(ct, "bos_token"), "<|begin|>"));
    int ok = render_is(ct, user_msg, NULL, "<|begin|>Hi<|end|>False['<a>', '<b>']");
    og_chat_template_free(ct);
    CHECK(ok);
}

TEST(chat_package_named_templates) {
    const char *dir = make_dir("chat_pkg_named");
    write_file(dir, "tokenizer_config.json",
               "{\"chat_template\": [{\"name\": \"default\", \"template\": \"plain\"},"
               " {\"name\": \"tool_use\", \"template\": \"tools:{{ tools|length }}\"}]}");
    og_chat_template *ct;
    CHECK_OK(og_chat_template_open(dir, &ct));
    CHECK_EQ_INT(og_chat_template_count(ct), 2);
    og_chat_options o = og_chat_options_default();
    int ok = render_is(ct, user_msg, &o, "plain");
    o.tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]";
    ok = ok && render_is(ct, user_msg, &o, "tools:1"); /* tools given: tool_use */
    o.template_name = "default";
    ok = ok && render_is(ct, user_msg, &o, "plain");
    o.template_name = "nope";
    char *text = NULL;
    og_status *st = og_chat_template_apply(ct, user_msg, &o, &text);
    og_chat_template_free(ct);
    CHECK(ok);
    CHECK_ERR(st, OG_ERR_NOT_FOUND, "no chat template named 'nope' (the package has 'default', 'tool_use')");
}

TEST(chat_jinja_file_wins) {
    const char *dir = make_dir("chat_pkg_jinja");
    write_file(dir, "tokenizer_config.json", "{\"eos_token\": \"</s>\", \"chat_template\": \"old\"}");
    write_file(dir, "chat_template.jinja", "new{{ eos_token }}\n");
    og_chat_template *ct;
    CHECK_OK(og_chat_template_open(dir, &ct));
    int ok = render_is(ct, user_msg, NULL, "new</s>");
    CHECK(strstr(og_chat_template_origin(ct, 0), "chat_template.jinja") != NULL);
    og_chat_template_free(ct);
    CHECK(ok);
    /* the file itself, with the tokens of the tokenizer_config.json beside it */
    char path[1100];
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    CHECK_OK(og_chat_template_open(path, &ct));
    ok = render_is(ct, user_msg, NULL, "new</s>");
    og_chat_template_free(ct);
    CHECK(ok);
}

TEST(chat_no_template) {
    const char *dir = make_dir("chat_pkg_none");
    write_file(dir, "tokenizer_config.json", "{\"eos_token\": \"</s>\"}");
    og_chat_template *ct = NULL;
    CHECK_ERR(og_chat_template_open(dir, &ct), OG_ERR_NOT_FOUND, "no chat template");
    CHECK_ERR(og_chat_template_open("/nonexistent/dir", &ct), OG_ERR_NOT_FOUND, "no such file");
}

/* Applies src to user_msg and checks the error. */
static og_status *apply_src(const char *src, const char *extra) {
    og_chat_template *ct;
    og_status *st = og_chat_template_from_string(src, strlen(src), &ct);
    if (st) return st;
    og_chat_options o = og_chat_options_default();
    o.extra_json = extra;
    char *text = NULL;
    st = og_chat_template_apply(ct, user_msg, &o, &text);
    og_free(text);
    og_chat_template_free(ct);
    return st;
}

TEST(chat_errors_name_construct_and_line) {
    CHECK_ERR(apply_src("a\n{% for m in messages %}\n{{ m }}", NULL), OG_ERR_INVALID_MODEL,
              ":2: TemplateSyntaxError: unclosed 'for' block: the template ended while looking for 'endfor' or 'else'");
    CHECK_ERR(apply_src("\n\n{{ messages|frobnicate }}", NULL), OG_ERR_INVALID_MODEL,
              ":3: TemplateAssertionError: No filter named 'frobnicate'.");
    CHECK_ERR(apply_src("{% if true %}\n{% endfor %}", NULL), OG_ERR_INVALID_MODEL,
              ":2: TemplateSyntaxError: unexpected 'endfor'");
    CHECK_ERR(apply_src("{{ [1]|groupby('a') }}", NULL), OG_ERR_UNSUPPORTED,
              ":1: the filter 'groupby' is not implemented");
    CHECK_ERR(apply_src("{% block b %}{% endblock %}", NULL), OG_ERR_UNSUPPORTED,
              ":1: the '{% block %}' statement is not implemented");
    CHECK_ERR(apply_src("x\n{{ raise_exception('Only user and assistant roles') }}", NULL),
              OG_ERR_INVALID_ARGUMENT, ":2: TemplateError: Only user and assistant roles");
    CHECK_ERR(apply_src("{{ messages[0].nope.deeper }}", NULL), OG_ERR_RUNTIME,
              ":1: UndefinedError: 'dict object' has no attribute 'nope'");
    CHECK_ERR(apply_src("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", NULL),
              OG_ERR_RUNTIME, "RecursionError: more than 128 nested macro calls");
    CHECK_ERR(apply_src("{% for i in range(10 ** 9) %}{% endfor %}", NULL), OG_ERR_RUNTIME,
              "OverflowError: Range too big");
    CHECK_ERR(apply_src("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", NULL),
              OG_ERR_RUNTIME, "LimitError: more than 10000000 loop iterations");
    CHECK_ERR(apply_src("{{ 'x' * (2 ** 40) }}", NULL), OG_ERR_RUNTIME, "LimitError");
    CHECK_ERR(apply_src("{{ x }}", "{\"messages\": []}"), OG_ERR_INVALID_ARGUMENT,
              "'messages' is set by its own parameter");
    CHECK_ERR(apply_src("{{ x }}", "[1]"), OG_ERR_INVALID_ARGUMENT, "expected a JSON object");
    CHECK_ERR(apply_src("{{ x }}", "{bad"), OG_ERR_INVALID_ARGUMENT, "not valid JSON");
}

TEST(chat_extra_variables) {
    og_chat_template *ct;
    const char *src = "{{ enable_thinking }}|{{ bos_token }}|{{ n|default(0) + 1 }}|{{ f }}";
    CHECK_OK(og_chat_template_from_string(src, strlen(src), &ct));
    CHECK_OK(og_chat_template_set_token(ct, "bos_token", "<s>"));
    og_chat_options o = og_chat_options_default();
    o.extra_json = "{\"enable_thinking\": false, \"n\": 41, \"f\": 2.50}";
    int ok = render_is(ct, user_msg, &o, "False|<s>|42|2.5");
    o.extra_json = "{\"bos_token\": \"<override>\"}"; /* extra wins over a token, as in transformers */
    ok = ok && render_is(ct, user_msg, &o, "|<override>|1|");
    og_chat_template_free(ct);
    CHECK(ok);
}
