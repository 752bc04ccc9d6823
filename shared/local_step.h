/* One SDFed local step (Algorithm 1, lines 13-18) as one call: the objective
 * and its gradients at the client's prompts, then SGD on both prompts
 * (sgd.h: PyTorch's semantics, all or nothing). The prompts change only
 * when every loss, gradient and updated value is finite; otherwise the call
 * fails with SDFED_ERR_NUMERIC and leaves them as they were. */
#ifndef SDFED_LOCAL_STEP_H
#define SDFED_LOCAL_STEP_H

#include "objective.h"
#include "sgd.h"

/* A client's trainable state; the caller owns every buffer. */
typedef struct sdfed_client_prompts {
    int width;
    int global_len, local_len;               /* S_s, S_l */
    float *global, *local;                   /* G_s (S_s, W), G_c (S_l, W) */
    float *global_momentum, *local_momentum; /* same shapes; NULL when momentum is 0 */
} sdfed_client_prompts;

int sdfed_local_step(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                     sdfed_client_prompts *p, const sdfed_batch *batch, const sdfed_objective_config *cfg,
                     const sdfed_sgd *sgd, sdfed_losses *losses, sdfed_profile *profile, sdfed_arena *arena,
                     sdfed_error *err);

#endif
