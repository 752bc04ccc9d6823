/* FedOT's objective, as DESIGN.md states it: a global linear classifier W
 * (C x D) on image features, initialised from zero-shot text features, and
 * a local orthogonal transform Q = (I - A)(I + A)^-1, the Cayley map of a
 * skew-symmetric A (D x D); cross-entropy only:
 *   logits = exp(logit_scale) * (img Q) @ normalize(W)^T
 * (rows of W normalised, so the classifier is a cosine one like CLIP's).
 * Gradients: dL/dW through the normalisation; dL/dA = skew part of
 * -(I + Q)^T (dL/dQ) (I + A)^-T, which keeps A skew-symmetric under SGD. */
#ifndef SDFED_FEDOT_H
#define SDFED_FEDOT_H

#include "base/arena.h"
#include "prompt/objective.h"

/* Q (D, D) = cayley(A); A must be skew-symmetric (I + A is then invertible). */
int sdfed_cayley(const float *A, int D, float *Q, sdfed_arena *arena, sdfed_error *err);

/* Loss (reported as ce_local and total) and, when not NULL, the gradients
 * (C, D) and (D, D). */
int sdfed_fedot_eval(const float *W, const float *A, int C, int D, float scale, const sdfed_batch *batch,
                     sdfed_losses *losses, float *grad_W, float *grad_A, sdfed_arena *arena, sdfed_error *err);

/* Class features for prediction: argmax img Q W^T = argmax img (W_n Q^T)^T,
 * so feats (C, D) = normalize(W) Q^T. */
int sdfed_fedot_class_features(const float *W, const float *A, int C, int D, float *feats, sdfed_arena *arena,
                               sdfed_error *err);

#endif
