/* The element-wise and row-wise layers of a CLIP transformer, llm.c style:
 * a forward and a backward function side by side, plain loops, shapes
 * stated at the top of each. Matrix products go through the kernel
 * interface (kernels/kernels.h). The backward passes give gradients with respect
 * to the inputs only: CLIP's weights are frozen. */
#ifndef SDFED_LAYERS_H
#define SDFED_LAYERS_H

#include "kernels/kernels.h"

/* One attention call's rows: queries are rows [q0, q0 + nq); each query
 * sees all nc context rows [c0, c0 + nc) and, among its own span, the rows
 * up to itself (causal) or all of them. A text prompt's shared prefix is a
 * span with nc = 0; each class continuation is a span whose context is the
 * prefix. */
typedef struct sdfed_attn_span {
    int q0, nq;
    int c0, nc;
} sdfed_attn_span;

/* out (n, C) = layernorm(inp (n, C)) * weight + bias; mean and rstd (n) are
 * saved for the backward pass when not NULL. */
void sdfed_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                             const float *bias, int n, int C, float eps);

/* dinp (n, C) += d layernorm / d inp applied to dout (n, C), from the saved
 * mean and rstd. */
void sdfed_layernorm_backward(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                              const float *rstd, int n, int C);

/* out (n, D) = inp / ||inp|| row-wise; norms (n) keeps the norms. A zero row
 * stays zero. */
void sdfed_l2_normalize_forward(float *out, float *norms, const float *inp, int n, int D);
/* dinp (n, D) += (dout - out (out . dout)) / norm row-wise. */
void sdfed_l2_normalize_backward(float *dinp, const float *dout, const float *out, const float *norms, int n, int D);

/* out = act(inp) element-wise, n values; activation is SDFED_ACT_*. */
void sdfed_activation_forward(float *out, const float *inp, int n, int activation);

/* dinp = act'(inp) * dout element-wise (dinp may alias dout). */
void sdfed_activation_backward(float *dinp, const float *dout, const float *inp, int n, int activation);

/* out (n) += inp (n) */
void sdfed_residual_add(float *out, const float *inp, int n);

/* Multi-head attention over spans.
 * qkv is (N, 3C) (q, k, v for every row), out is (N, C); for span s, att
 * receives its probabilities, (heads, nq, nc + nq) at att + att_offset[s]. */
void sdfed_attention_forward(const sdfed_kernels *k, float *out, float *att, const float *qkv,
                             const sdfed_attn_span *spans, const size_t *att_offset, int n_spans, int C, int heads,
                             int causal);

/* dqkv (N, 3C) += the gradient of the attention output given dout (N, C),
 * from the saved qkv and probabilities. scratch holds the largest
 * nq * (nc + nq) of the spans. */
void sdfed_attention_backward(const sdfed_kernels *k, float *dqkv, const float *dout, const float *qkv,
                              const float *att, const sdfed_attn_span *spans, const size_t *att_offset, int n_spans,
                              int C, int heads, float *scratch);

/* Floats of attention probabilities the spans need, and each span's offset. */
size_t sdfed_attention_size(const sdfed_attn_span *spans, size_t *att_offset, int n_spans, int heads);

#endif
