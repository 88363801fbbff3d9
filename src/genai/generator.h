/* The generator's state (see generator.c for how the decode loop uses it). */
#ifndef OG_GENAI_GENERATOR_H
#define OG_GENAI_GENERATOR_H

#include "genai/model.h"
#include "genai/search.h"

#include <stdbool.h>
#include <stdint.h>

struct og_generator {
    og_model *m;
    og_generator_params p;
    int rows;            /* batch_size * num_beams */
    int max_len;
    int32_t *seq;        /* [rows][max_len] tokens */
    uint8_t *mask;       /* [rows][max_len] 1 = real token, 0 = padding */
    int len;             /* tokens in every sequence */
    int fed;             /* of which already in the KV cache */
    bool *done;          /* [rows] hit an EOS id (greedy / sampling) */
    float *logits;       /* [rows][vocab] next-token logits, valid when has_logits */
    bool has_logits;
    float *work;         /* [2 * vocab] sampling scratch */
    int64_t *feed_ids, *feed_mask, *feed_pos; /* [rows * max_len] graph input staging */
    void *step_logits; /* [rows][vocab] logits output of a one-token step, bound each run so
                          that decode allocates nothing for them */
    /* KV cache: kv[b][i] is buffer b of cache tensor i, each kv_bytes long. With a
     * shared buffer only kv[0] exists; otherwise kv[kv_cur] holds the past. */
    void **kv[2];
    size_t kv_bytes;
    int kv_cur;
    bool share_buffer;
    /* outputs of the last run kept for og_generator_get_output */
    og_tensor **outputs;
    const char **output_names;
    int n_outputs;
    gen_rng rng;
    gen_beam *beam;      /* NULL unless num_beams > 1 */
    gen_beam_options beam_opts;
    bool finalized;
    int32_t *final_seqs; /* [batch * num_return][max_len] after beam search */
    int *final_lens;
};

og_status *gen_generator_alloc(og_generator *g);
void gen_generator_free(og_generator *g);

#endif
