/* CLIP's text tower: token ids (with prompt vectors spliced in at chosen
 * positions) to text features, and the gradient of a loss on those features
 * with respect to the spliced vectors.
 *
 * Only positions up to each sequence's EOT are computed (the causal mask
 * makes the rest irrelevant), and the positions that every sequence of the
 * batch shares (same ids, or the same spliced vector) are computed once:
 * with a learned prompt [SOT, P_1..P_T] followed by C class names, the
 * prefix runs once, forward and backward, and each class only runs its own
 * few tokens. */
#ifndef SDFED_TEXT_ENCODER_H
#define SDFED_TEXT_ENCODER_H

#include <stdint.h>

#include "base/arena.h"
#include "clip/clip_model.h"
#include "clip/transformer.h"

typedef struct sdfed_text_batch {
    int n_seqs;
    const int32_t *ids; /* (n_seqs, stride): SOT ... EOT, anything after EOT ignored */
    int stride;
    const float *splice;   /* (n_splice, text_width) vectors, or NULL */
    const int *splice_pos; /* position each vector replaces, in every sequence */
    int n_splice;
} sdfed_text_batch;

/* One batch's rows within a pass: rows [base, base + N). Rows
 * [base, base + prefix) are the positions every sequence of the batch
 * shares; sequence s owns rows first[s] .. first[s] + eot[s] - prefix
 * (positions prefix .. eot[s]). */
typedef struct sdfed_text_plan {
    const sdfed_text_batch *batch;
    int base, prefix, N;
    int *eot, *first;
    int span0, n_spans; /* its attention spans within the pass */
    int seq0;           /* its first sequence among the pass's EOT rows */
} sdfed_text_plan;

/* What a forward pass keeps for its backward pass (all in the arena).
 * Several batches can run as one pass: their rows are stacked (attention
 * never crosses batches) so that every weight matrix is read once. */
typedef struct sdfed_text_pass {
    int n_batches;
    sdfed_text_plan *plans;
    sdfed_attn_span *spans;
    int n_spans, n_seqs;
    sdfed_transformer blocks;
    float *eot_rows;            /* (n_seqs, W): block output at each EOT */
    float *lnf_mean, *lnf_rstd; /* (n_seqs) */
} sdfed_text_pass;

/* The EOT position of a sequence: the first position of the largest id, as
 * CLIP's argmax does. */
int sdfed_text_eot(const int32_t *ids, int n);

/* out (W) = the token embedding row of id (dequantised from the model's
 * F32, F16 or Q8_0 rows), without the positional embedding; id must be
 * < vocab_size. */
void sdfed_text_token_embedding(const sdfed_clip_model *m, int32_t id, float *out);

/* features (n_seqs, embed_dim) = unnormalised text features at each EOT. */
int sdfed_text_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                      sdfed_arena *arena, sdfed_error *err);

/* n batches as one pass; features[b] receives batch b's features. When
 * pass is not NULL it keeps what sdfed_text_backward needs (the batches must
 * stay valid until then). */
int sdfed_text_forward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batches, int n,
                       float *const *features, sdfed_text_pass *pass, sdfed_arena *arena, sdfed_error *err);

/* Gradients for the first n_grad batches of the pass (later batches are
 * constants and cost nothing): d_splice[b] (n_splice, W) += d loss / d
 * spliced vectors, given d_features[b] (n_seqs, embed_dim). */
int sdfed_text_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_pass *pass, int n_grad,
                        const float *const *d_features, float *const *d_splice, sdfed_arena *arena, sdfed_error *err);

#endif
