/* sdfed check-reference: the checker shared by the groups of checks
 * (check_clip.c: tokenizer and encoders; check_prompt.c: prompt autodiff,
 * SVD and the SDFed objective). Each check prints one line with its max abs
 * error, relative error (max abs error / max abs expected value) and
 * PASS/FAIL; the driver ends with "reference: N passed, M failed".
 *
 * Tolerances, from ../shared/clip/README.md, by kind of value:
 *   features and logits   rel <= 1e-4   (F16 x10; Q8_0: cosine >= 0.999 per feature
 *                                        vector, >= 0.99 per row of C logits)
 *   losses                rel <= 1e-4   (F16 x10; Q8_0: rel <= 1e-2)
 *   gradients             rel <= 1e-3   (F16 x10; Q8_0: cosine >= 0.99 over the tensor)
 *   model-free maths      rel <= 1e-4 whatever the weights (SVD, projector)
 *
 * F16 and Q8_0 weights perturb the features themselves (by ~5e-4 and ~2e-2),
 * and two SDFed quantities are ill-conditioned in the features at the
 * reference point, which sits 1e-3 from the separation hinge:
 *   - the stretch and separation losses are small differences of O(1)
 *     values; for F16 and Q8_0 their error is measured against the scale of
 *     what they are made of (gamma for the distances in the hinge, the mean
 *     square 1/D of the unit features for stretch), with the same tolerance;
 *   - when a class's hinge margin |gamma - d_k| is smaller than twice the
 *     error of the normalised prompt features measured in prompt.T*, the
 *     weights decide which side of the hinge the class is on. The separation
 *     term's gradients depend on gamma only through that side, so they are
 *     also compared with the class moved to the other side (gamma moved just
 *     past d_k); the line says which side matched.
 * F32 models are judged by the README's definitions alone. */
#ifndef SDFED_CLI_CHECK_REFERENCE_H
#define SDFED_CLI_CHECK_REFERENCE_H

#include "base/arena.h"
#include "cli.h"
#include "format/safetensors.h"

typedef enum { KIND_FEATURES, KIND_LOSS, KIND_GRADIENT, KIND_MODEL_FREE } check_kind;

typedef struct checker {
    native_model *m;
    const sdfed_kernels *k;
    sdfed_safetensors ref;
    sdfed_arena arena;
    int passed, failed;
    double feature_error; /* largest L2 error of normalised prompt features so far */
} checker;

void check_report(checker *c, const char *name, int pass, const char *detail);
void check_report_error(checker *c, const char *name, const sdfed_error *err);
/* Reference tensor `name` with exactly n_values values, as f32 or int32 in
 * the arena; NULL (and err set) if missing or mis-sized. */
void *check_load(checker *c, const char *name, size_t n_values, int integer, sdfed_error *err);
typedef struct {
    int pass;
    char detail[200];
} check_result;

/* Measures n vectors of dim values against the reference under `kind`;
 * check_compare also reports the result. */
check_result check_measure(checker *c, const float *got, const float *want, int n, int dim, check_kind kind);
void check_compare(checker *c, const char *name, const float *got, const float *want, int n, int dim, check_kind kind);
/* A loss whose error is judged against `scale` (the size of what it is made
 * of) for F16 and Q8_0 models, and against its value for F32. */
void check_compare_scaled_loss(checker *c, const char *name, float got, float want, double scale,
                               const char *scale_name);

void check_tokenizer(checker *c);
void check_text_features(checker *c);
void check_image_features(checker *c);
void check_prompts(checker *c);
void check_sdfed(checker *c);

#endif
