/* The prompt-learning methods that run in sdfed, behind one interface so
 * the simulator, the aggregator and the browser treat them alike:
 *
 *   zeroshot      CLIP's hand-written prompts "a photo of a <class>.", no training
 *   coop          one prompt per client, trained with CE, never shared
 *   promptfl      one prompt, CE, averaged by the server (FedAvg)
 *   promptfolio   global + local prompt, logits from (1 - theta) f(G) + theta f(L)
 *                 (not renormalised), CE only; the global prompt is averaged
 *   fedpha        as sdfed with the rowspace projector, lambda 0.2 (its null-space
 *                 ratio 0.8), margin 1.0
 *   fedot         global cosine classifier on image features from the zero-shot
 *                 features + local Cayley orthogonal transform (fedot.h); the
 *                 classifier is averaged
 *   sdfed         global + local prompt, refinement, stretch and separation (prompt/objective.h)
 *   sdfed-nofilter, sdfed-nostretch, sdfed-noseparation: its ablations
 *                 (the two CE terms only; without L_str; without L_sep)
 *
 * A client's parameters are a shared part (`global`, what is uploaded and
 * averaged) and a private part (`local`, never sent). Prediction always goes
 * through C class features, argmax over img . feats. */
#ifndef SDFED_METHODS_H
#define SDFED_METHODS_H

#include <stdint.h>

#include "base/names.h"
#include "base/rng.h"
#include "prompt/objective.h"
#include "prompt/sgd.h"

enum {
    SDFED_METHOD_ZEROSHOT,
    SDFED_METHOD_COOP,
    SDFED_METHOD_PROMPTFL,
    SDFED_METHOD_PROMPTFOLIO,
    SDFED_METHOD_FEDPHA,
    SDFED_METHOD_FEDOT,
    SDFED_METHOD_SDFED,
    SDFED_METHOD_SDFED_NOFILTER,
    SDFED_METHOD_SDFED_NOSTRETCH,
    SDFED_METHOD_SDFED_NOSEPARATION,
    SDFED_METHOD_COUNT
};

/* The methods' names, indexed by SDFED_METHOD_*. */
extern const sdfed_name sdfed_method_names[SDFED_METHOD_COUNT];
const char *sdfed_method_name(int method);
int sdfed_method_from_name(const char *name); /* -1 if unknown */

typedef struct sdfed_method_config {
    int method;
    int global_len, local_len;        /* S_s and S_l (single-prompt methods use S_s) */
    sdfed_objective_config objective; /* the SDFed family's terms, projector, lambda, gamma */
    float theta;                      /* PromptFolio's weight of the local features */
    float init_std;                   /* prompts start N(0, init_std^2) */
    sdfed_sgd sgd;
} sdfed_method_config;

/* DESIGN.md's settings for a method: S_s 8, S_l 16, lr 0.01, no momentum or
 * weight decay, prompts N(0, 0.02^2), and each method's own constants. */
sdfed_method_config sdfed_method_defaults(int method);

/* A client's parameters (heap, owned by the caller through init/free). */
typedef struct sdfed_method_params {
    int width;                               /* floats per row */
    int global_rows, local_rows;             /* either may be 0 */
    float *global, *local;                   /* (rows, width) */
    float *global_momentum, *local_momentum; /* NULL without momentum */
} sdfed_method_params;

/* Shapes of a method's parameters for a model and C classes. */
void sdfed_method_shapes(const sdfed_method_config *cfg, const sdfed_clip_model *m, int n_classes, int *width,
                         int *global_rows, int *local_rows);

/* Allocates and initialises: prompts from rng, N(0, init_std^2) for every
 * row, then, when the classes carry prompt_init tokens (n of them), rows
 * 0 .. min(T, n) - 1 of each prompt of T rows replaced by those tokens'
 * embeddings (CoOp's context initialisation; the rng draws the same values
 * either way); FedOT's classifier from the zero-shot features and its
 * transform at zero. */
int sdfed_method_params_init(sdfed_method_params *p, const sdfed_method_config *cfg, const sdfed_clip_model *m,
                             const sdfed_kernels *k, const sdfed_classes *cls, sdfed_rng *rng, sdfed_arena *arena,
                             sdfed_error *err);
void sdfed_method_params_free(sdfed_method_params *p);

/* One local step on a batch (nothing for zeroshot); all or nothing. */
int sdfed_method_step(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, sdfed_method_params *p, const sdfed_batch *batch, sdfed_losses *losses,
                      sdfed_profile *profile, sdfed_arena *arena, sdfed_error *err);

/* PromptFolio's objective: CE of exp(logit_scale) img @ ((1 - theta) f(G) +
 * theta f(L))^T, with its gradients when grad_G / grad_L are not NULL. */
int sdfed_promptfolio_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *G,
                           int S_g, const float *L, int S_l, float theta, const sdfed_batch *batch,
                           sdfed_losses *losses, float *grad_G, float *grad_L, sdfed_arena *arena, sdfed_error *err);

/* feats (C, D): the class features the client predicts with. */
int sdfed_method_class_features(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                                const sdfed_classes *cls, const sdfed_method_params *p, float *feats,
                                sdfed_arena *arena, sdfed_error *err);

#endif
