/* CLIP's text tower: token ids (with prompt vectors spliced in at chosen
 * positions) to text features.
 *
 * Only positions up to each sequence's EOT are computed (the causal mask
 * makes the rest irrelevant), and the positions that every sequence of the
 * batch shares (same ids, or the same spliced vector) are computed once:
 * with a learned prompt [SOT, P_1..P_T] followed by C class names, the
 * prefix runs once and each class only runs its own few tokens. */
#ifndef SDFED_TEXT_ENCODER_H
#define SDFED_TEXT_ENCODER_H

#include <stdint.h>

#include "arena.h"
#include "clip_model.h"

typedef struct sdfed_text_batch {
    int n_seqs;
    const int32_t *ids; /* (n_seqs, stride): SOT ... EOT, anything after EOT ignored */
    int stride;
    const float *splice;   /* (n_splice, text_width) vectors, or NULL */
    const int *splice_pos; /* position each vector replaces, in every sequence */
    int n_splice;
} sdfed_text_batch;

/* The EOT position of a sequence: the first position of the largest id, as
 * CLIP's argmax does. */
int sdfed_text_eot(const int32_t *ids, int n);

/* features (n_seqs, embed_dim) = unnormalised text features at each EOT. */
int sdfed_text_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                      sdfed_arena *arena, sdfed_error *err);

#endif
