/* The pieces of the prompt-learning objectives, each a forward and a
 * backward function: cosine logits, cross-entropy, the stretch loss (summed
 * or mean squared distance to a constant target) and the separation loss (a hinge on
 * the distance between two feature sets). The L2 normalisation of features
 * is a CLIP layer (clip/layers.h).
 * Losses are computed in double and returned; backward functions add the
 * gradient scaled by `weight` into their outputs. */
#ifndef SDFED_LOSSES_H
#define SDFED_LOSSES_H

#include <stdint.h>

/* logits (B, C) = scale * img (B, D) @ f (C, D)^T */
void sdfed_logits_forward(float *logits, const float *img, const float *f, int B, int C, int D, float scale);
/* d_f (C, D) += scale * d_logits (B, C)^T @ img (B, D) */
void sdfed_logits_backward(float *d_f, const float *d_logits, const float *img, int B, int C, int D, float scale);

/* p (C) = softmax of one row of logits z (C); returns the argmax (the first
 * of equals); *sum (if not NULL) receives sum_c exp(z_c - max z). */
int sdfed_softmax_forward(float *p, const float *z, int C, double *sum);
/* Mean cross-entropy of logits (B, C) against labels; probs (B, C) receives
 * the softmax; *correct (if not NULL) counts rows whose argmax is the label. */
double sdfed_cross_entropy_forward(float *probs, const float *logits, const int32_t *labels, int B, int C,
                                   int *correct);
/* d_logits (B, C) = weight * (probs - onehot(labels)) / B */
void sdfed_cross_entropy_backward(float *d_logits, const float *probs, const int32_t *labels, int B, int C,
                                  float weight);

/* the sum (sum != 0) or the mean over n values of (a - target)^2, target
 * held constant */
double sdfed_stretch_forward(const float *a, const float *target, int n, int sum);
/* d_a (n) += weight * 2 (a - target), divided by n for the mean */
void sdfed_stretch_backward(float *d_a, const float *a, const float *target, int n, int sum, float weight);

/* mean over the C rows of relu(gamma - ||a_k - b_k||); dist (C) keeps the
 * distances. */
double sdfed_separation_forward(float *dist, const float *a, const float *b, int C, int D, float gamma);
/* d_a += weight * d/da, d_b += weight * d/db (either may be NULL); rows
 * outside the hinge, or at distance 0, get no gradient. */
void sdfed_separation_backward(float *d_a, float *d_b, const float *a, const float *b, const float *dist, int C, int D,
                               float gamma, float weight);

#endif
