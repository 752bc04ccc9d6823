/* FedOTP's objective and scores (Li et al., CVPR 2024; docs/methods.md): a
 * global prompt G (S_g x W, averaged by the server) and a local prompt L
 * (S_l x W, never sent), both in the CoOp layout. For class c the prompts'
 * features y_c = [f(G)_c; f(L)_c] (2 x D) are matched to an image's M patch
 * features x (M x D, unit rows) by the transport t (prompt/transport.h):
 *   logit_c = exp(logit_scale) sum_mn T_mn x_m . y_cn,
 * the plan T a constant for the gradient (FedOTP solves it under no_grad).
 * The loss is the mean cross-entropy over the batch, reported as ce_local
 * and total. A batch's rows are images' patch features (M x D floats each,
 * sdfed_image_patch_features), M = the model's tokens - 1. */
#ifndef SDFED_FEDOTP_H
#define SDFED_FEDOTP_H

#include "base/arena.h"
#include "prompt/objective.h"
#include "prompt/transport.h"

/* The prompts FedOTP matches to patches: N = 2 per class (global, local). */
enum { SDFED_FEDOTP_PROMPTS = 2 };

/* y (C, 2, D): for each class the global then the local prompt's feature. */
int sdfed_fedotp_class_prompts(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                               const float *G, int S_g, const float *L, int S_l, float *y, sdfed_arena *arena,
                               sdfed_error *err);

/* logits (n, C) = scale * the transport score of each image's patches
 * (n, M, D) against each class's prompts y (C, 2, D). plans (n, C, M, 2)
 * receives every plan when not NULL (for the backward pass). */
int sdfed_fedotp_logits(const sdfed_transport *t, const float *y, int C, int D, const float *patches, int n, int M,
                        float scale, float *logits, float *plans, sdfed_arena *arena, sdfed_error *err);

/* Loss and, when grad_G / grad_L are not NULL, the gradients (S_g, W) and
 * (S_l, W) (overwritten). */
int sdfed_fedotp_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                      const sdfed_transport *t, const float *G, int S_g, const float *L, int S_l,
                      const sdfed_batch *batch, sdfed_losses *losses, float *grad_G, float *grad_L, sdfed_arena *arena,
                      sdfed_error *err);

#endif
