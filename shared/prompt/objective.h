/* The SDFed objective of one local step (the paper's Algorithm 1, line 16,
 * as ../shared/DESIGN.md states it), with its gradients:
 *
 *   L = CE(f(G_c)) + CE(f(G_s)) + L_str + L_sep
 *   L_str = mean (or sum) over C x D of (f(G_c) - f(G~_c))^2,  G~_c = G_c R (constant)
 *   L_sep = mean over classes k of relu(gamma - ||f(G_c)_k - f(G_s)_k||)
 *
 * f(P) = L2-normalised text features of prompt P per class (prompt.h); CE is
 * the mean cross-entropy of exp(logit_scale) img @ f^T over the batch; R
 * comes from the SVD of G_s (projector.h) and, like f(G~_c), is a constant
 * for the gradient. Terms can be switched off one by one (the ablations and
 * the reference's per-term gradients); switched-off terms are not computed. */
#ifndef SDFED_OBJECTIVE_H
#define SDFED_OBJECTIVE_H

#include <stdint.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/names.h"
#include "clip/clip_model.h"
#include "prompt/prompt.h"

enum {
    SDFED_TERM_CE_LOCAL = 1,
    SDFED_TERM_CE_GLOBAL = 2,
    SDFED_TERM_STRETCH = 4,
    SDFED_TERM_SEPARATION = 8,
    SDFED_TERMS_ALL = 15,
};

/* The two readings of L_str: the paper's Eq. 12 is a squared norm, a sum
 * over the C x D entries; its text calls it an MSE, the mean, which is C x D
 * times smaller. */
enum { SDFED_STRETCH_MEAN, SDFED_STRETCH_SUM, SDFED_STRETCH_COUNT };
extern const sdfed_name sdfed_stretch_names[SDFED_STRETCH_COUNT]; /* "mean", "sum" */
const char *sdfed_stretch_name(int stretch);

typedef struct sdfed_objective_config {
    unsigned terms; /* SDFED_TERM_* bits */
    int projector;  /* SDFED_PROJECTOR_* */
    float lambda;   /* projector size, default 0.6 */
    float gamma;    /* separation margin, default 0.8 */
    int stretch;    /* SDFED_STRETCH_*, default mean */
} sdfed_objective_config;

/* The defaults: all terms, complement projector, lambda 0.6, gamma 0.8, the
 * mean stretch. */
sdfed_objective_config sdfed_objective_defaults(void);

/* A batch of cached image features (unit length) and their labels. */
typedef struct sdfed_batch {
    const float *features; /* (n, embed_dim) */
    const int32_t *labels; /* (n), in [0, C) */
    int n;
} sdfed_batch;

typedef struct sdfed_losses {
    double ce_local, ce_global, stretch, separation, total;
    int correct; /* batch rows the local prompt classifies right */
} sdfed_losses;

/* Seconds spent per phase, summed over calls (zero them to start), on the
 * caller's clock (base/clock.h; NULL: nothing is timed). */
typedef struct sdfed_profile {
    sdfed_clock_fn *clock;
    double svd, projection, forward, backward;
} sdfed_profile;

/* Losses at (G_s, G_c) and, when grad_Gs / grad_Gc are not NULL, the
 * gradients (S_s, W) and (S_l, W) (overwritten). With only the local
 * cross-entropy selected, G_s may be NULL (a single-prompt objective).
 * Inputs holding NaN or Inf, or a non-finite result, give SDFED_ERR_NUMERIC. */
int sdfed_objective_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *Gs,
                         int S_s, const float *Gc, int S_l, const sdfed_batch *batch, const sdfed_objective_config *cfg,
                         sdfed_losses *losses, float *grad_Gs, float *grad_Gc, sdfed_profile *profile,
                         sdfed_arena *arena, sdfed_error *err);

/* Predictions from cached class features (C, D) for images (n, D): the
 * argmax of img @ f^T (the scale does not change it). */
void sdfed_predict(const float *class_features, int C, int D, const float *img, int n, int32_t *pred);

#endif
