/* The stack of pre-LN residual blocks shared by CLIP's text and image
 * towers, forward and backward (gradients with respect to the input):
 *   x = x + out_proj(attention(qkv(ln_1(x))))
 *   x = x + mlp_proj(act(mlp_fc(ln_2(x))))
 * over N rows grouped into attention spans (layers.h). */
#ifndef SDFED_TRANSFORMER_H
#define SDFED_TRANSFORMER_H

#include "base/arena.h"
#include "clip/clip_model.h"
#include "clip/layers.h"

/* What the backward pass needs of one block (weights are frozen, so only
 * the inputs of the non-linear steps are kept). */
typedef struct sdfed_block_acts {
    float *inp;                 /* (N, C) block input */
    float *ln1_mean, *ln1_rstd; /* (N) */
    float *qkv;                 /* (N, 3C) */
    float *att;                 /* attention probabilities, per span */
    float *res;                 /* (N, C) after the attention residual */
    float *ln2_mean, *ln2_rstd; /* (N) */
    float *fc;                  /* (N, 4C) MLP pre-activation */
} sdfed_block_acts;

typedef struct sdfed_transformer {
    const sdfed_clip_block *blocks;
    int n_layers, C, heads, activation, causal;
    float eps;
    const sdfed_attn_span *spans;
    int n_spans;
    int N;
    int int8; /* the linears are the kernels' linear_int8 (a frozen pass), else linear */
    /* filled by sdfed_transformer_forward */
    size_t *att_offset;     /* per span */
    sdfed_block_acts *acts; /* n_layers entries when activations are kept */
} sdfed_transformer;

/* Runs the blocks on x (N, C) in place. With keep_activations every layer's
 * sdfed_block_acts stay in the arena for a backward pass; without, buffers
 * are reused from layer to layer. */
int sdfed_transformer_forward(const sdfed_kernels *k, sdfed_transformer *t, float *x, int keep_activations,
                              sdfed_arena *arena, sdfed_error *err);

/* Backward pass after a forward with keep_activations: dx (N, C) holds the
 * gradient of the loss with respect to the blocks' output and receives the
 * gradient with respect to their input. */
int sdfed_transformer_backward(const sdfed_kernels *k, const sdfed_transformer *t, float *dx, sdfed_arena *arena,
                               sdfed_error *err);

#endif
