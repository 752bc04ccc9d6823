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
 *   fedotp        global + local prompt matched to the image's patch features by
 *                 partial optimal transport, CE only (fedotp.h); the global
 *                 prompt is averaged
 *   sdfed         global + local prompt, refinement, stretch and separation (prompt/objective.h)
 *   sdfed-nofilter, sdfed-nostretch, sdfed-noseparation: its ablations
 *                 (the two CE terms only; without L_str; without L_sep)
 *
 * A client's parameters are a shared part (`global`, what is uploaded and
 * averaged) and a private part (`local`, never sent). Every method but
 * fedotp reads an image's pooled feature and predicts with C class
 * features, argmax over img . feats; fedotp reads the image's patch
 * features and scores each class by transport (sdfed_classifier). */
#ifndef SDFED_METHODS_H
#define SDFED_METHODS_H

#include <stdint.h>

#include "base/names.h"
#include "base/rng.h"
#include "clip/image_preprocess.h"
#include "prompt/objective.h"
#include "prompt/sgd.h"
#include "prompt/transport.h"

enum {
    SDFED_METHOD_ZEROSHOT,
    SDFED_METHOD_COOP,
    SDFED_METHOD_PROMPTFL,
    SDFED_METHOD_PROMPTFOLIO,
    SDFED_METHOD_FEDPHA,
    SDFED_METHOD_FEDOT,
    SDFED_METHOD_FEDOTP,
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
    sdfed_transport transport;        /* FedOTP's matching of prompts to patches */
    sdfed_sgd sgd;
} sdfed_method_config;

/* DESIGN.md's settings for a method: S_s 8, S_l 16, lr 0.01, no momentum or
 * weight decay, prompts N(0, 0.02^2), and each method's own constants. */
sdfed_method_config sdfed_method_defaults(int method);

/* What a method reads of an image: 1 when it is the patch features
 * (fedotp), 0 for CLIP's pooled feature. */
int sdfed_method_reads_patches(int method);
/* Floats per image it reads: embed_dim, or (tokens - 1) x embed_dim. */
int sdfed_method_feature_size(int method, const sdfed_clip_config *c);
/* features (n, sdfed_method_feature_size): n 8-bit images as the method
 * reads them (clip/image_encoder.h: sdfed_image_features or
 * sdfed_image_patch_features). */
int sdfed_method_image_features(int method, const sdfed_clip_model *m, const sdfed_kernels *k,
                                const sdfed_image *images, int n, float *features, sdfed_arena *arena,
                                sdfed_error *err);

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

/* What a client predicts with, computed once from its parameters: the
 * class features (C, D), or for fedotp each class's two prompt features
 * (C, 2, D) that each image's patches are matched to. */
typedef struct sdfed_classifier {
    const sdfed_method_config *cfg;
    int n_classes, dim, patches; /* patches: M for fedotp, else 0 */
    float scale;                 /* exp(logit_scale) */
    float *feats;                /* in the arena it was made in */
} sdfed_classifier;

int sdfed_method_classifier(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                            const sdfed_classes *cls, const sdfed_method_params *p, sdfed_classifier *out,
                            sdfed_arena *arena, sdfed_error *err);
/* logits (n, C): what training and accuracy use, exp(logit_scale) times
 * the cosine of each image (n rows of sdfed_method_feature_size floats)
 * with each class, or its transport score; argmax is the prediction. */
int sdfed_classifier_logits(const sdfed_classifier *c, const float *features, int n, float *logits, sdfed_arena *arena,
                            sdfed_error *err);
/* pred (n): the class of each image, the first of equal largest scores
 * (for class features, sdfed_predict's cosines). */
int sdfed_classifier_predict(const sdfed_classifier *c, const float *features, int n, int32_t *pred, sdfed_arena *arena,
                             sdfed_error *err);

#endif
