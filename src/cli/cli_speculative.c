/* --speculative and its options (generate, run, bench): prompt-lookup drafts verified
 * by the target (og_generator_params' speculative_* fields). */
#include "cli/cli.h"

#include "base/status.h"

#include <stdio.h>
#include <string.h>

const char cli_speculative_usage[] =
    "  --speculative ngram        speculative decoding by prompt lookup: drafts copied from\n"
    "                             earlier in the prompt and output, verified in one run;\n"
    "                             the tokens are plain decoding's, only faster when drafts\n"
    "                             hit (batch 1, models without conv/recurrent state)\n"
    "  --speculative draft --draft-model DIR\n"
    "                             drafts from a smaller package with the same tokenizer\n"
    "  --speculative mtp          drafts from the package's MTP head (genai_config's\n"
    "                             model.mtp, the builder's mtp.onnx)\n"
    "  --ngram N                  match the last N - 1 tokens (2..16, default 3)\n"
    "  --draft-tokens K           at most K drafted tokens per verification (1..16, default 4)\n"
    "  --ngram-chained            a draft that runs out goes on from its own end\n"
    "  --draft-fixed              always verify K tokens (default: a cost model picks 0..K\n"
    "                             from measured run times and the acceptance rate)\n";

void cli_speculative_init(cli_speculative *s) {
    memset(s, 0, sizeof *s);
    s->ngram = 3;
    s->draft_tokens = 4;
}

int cli_speculative_arg(int argc, char **argv, int *i, cli_speculative *s) {
    const char *a = argv[*i];
    if (!strcmp(a, "--ngram-chained")) {
        s->chained = true;
        return 1;
    }
    if (!strcmp(a, "--draft-fixed")) {
        s->fixed = true;
        return 1;
    }
    bool known = !strcmp(a, "--speculative") || !strcmp(a, "--ngram") ||
                 !strcmp(a, "--draft-tokens") || !strcmp(a, "--draft-model");
    if (!known) return 0;
    if (*i + 1 >= argc) return -cli_fail("%s needs a value", a);
    const char *v = argv[++*i];
    if (!strcmp(a, "--ngram") || !strcmp(a, "--draft-tokens")) {
        bool ngram = !strcmp(a, "--ngram");
        int rc = cli_int_option(a, v, ngram ? 2 : 1, 16, ngram ? &s->ngram : &s->draft_tokens);
        return rc ? -rc : 1;
    }
    if (!strcmp(a, "--draft-model")) {
        s->draft_dir = v;
        if (s->method == CLI_SPEC_OFF) s->method = CLI_SPEC_DRAFT;
        return 1;
    }
    if (!strcmp(v, "ngram")) s->method = CLI_SPEC_NGRAM;
    else if (!strcmp(v, "draft")) s->method = CLI_SPEC_DRAFT;
    else if (!strcmp(v, "off") || !strcmp(v, "none")) s->method = CLI_SPEC_OFF;
    else if (!strcmp(v, "mtp")) s->method = CLI_SPEC_MTP;
    else
        return -cli_fail("--speculative: '%s' is not a method (ngram, draft, mtp, off)", v);
    return 1;
}

og_status *cli_speculative_open(cli_speculative *s, const og_model_options *mo) {
    if (s->method != CLI_SPEC_DRAFT) return NULL;
    if (!s->draft_dir)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "--speculative draft needs --draft-model DIR "
                         "(a package with the same tokenizer)");
    return og_status_wrap(og_model_open(s->draft_dir, mo, &s->draft), "--draft-model");
}

void cli_speculative_close(cli_speculative *s) {
    og_model_close(s->draft);
    s->draft = NULL;
}

void cli_speculative_set(const cli_speculative *s, og_generator_params *p) {
    if (s->method == CLI_SPEC_OFF) return;
    p->speculative_max_draft_tokens = s->draft_tokens;
    p->speculative_fixed_k = s->fixed;
    if (s->method == CLI_SPEC_DRAFT) {
        p->speculative_draft_model = s->draft;
        return;
    }
    if (s->method == CLI_SPEC_MTP) {
        p->speculative_mtp = 1;
        return;
    }
    p->speculative_ngram_size = s->ngram;
    p->speculative_ngram_chained_lookup = s->chained;
}

void cli_speculative_report(FILE *f, const og_generator *g) {
    og_speculative_stats st;
    if (og_generator_get_speculative_stats(g, &st) || !st.enabled) return;
    fprintf(f, "speculative: %lld verifications, %lld of %lld drafted tokens accepted (%.1f %%), "
            "%.2f tokens per verification, %lld plain steps\n", (long long)st.verifications,
            (long long)st.accepted, (long long)st.drafted,
            st.drafted ? 100.0 * (double)st.accepted / (double)st.drafted : 0.0,
            st.verifications ? (double)st.emitted / (double)st.verifications : 0.0,
            (long long)st.plain_steps);
}
