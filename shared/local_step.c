/* The local step: objective, gradients, and an all-or-nothing SGD update. */
#include "local_step.h"

#include <math.h>
#include <string.h>

/* new_p and new_buf receive the updated values; returns 0 if any is not
 * finite. */
static int sgd_update(float *new_p, float *new_buf, const float *p, const float *buf, const float *grad, size_t n,
                      const sdfed_sgd *sgd) {
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] + sgd->weight_decay * p[i];
        if (buf) {
            new_buf[i] = sgd->momentum * buf[i] + g;
            g = new_buf[i];
        }
        new_p[i] = p[i] - sgd->lr * g;
        finite &= isfinite(new_p[i]) && isfinite(g);
    }
    return finite;
}

int sdfed_local_step(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                     sdfed_client_prompts *p, const sdfed_batch *batch, const sdfed_objective_config *cfg,
                     const sdfed_sgd *sgd, sdfed_losses *losses, sdfed_profile *profile, sdfed_arena *arena,
                     sdfed_error *err) {
    int W = p->width;
    if (W != m->cfg.text_width)
        return sdfed_fail(err, SDFED_ERR_ARG, "step: prompts of width %d for a model of width %d", W,
                          m->cfg.text_width);
    if (!(sgd->lr > 0.0f) || !isfinite(sgd->lr) || !(sgd->momentum >= 0.0f) || !(sgd->momentum < 1.0f) ||
        !(sgd->weight_decay >= 0.0f) || !isfinite(sgd->weight_decay))
        return sdfed_fail(err, SDFED_ERR_ARG, "step: need lr > 0, 0 <= momentum < 1, weight decay >= 0");
    int use_momentum = sgd->momentum > 0.0f;
    if (use_momentum && (!p->global_momentum || !p->local_momentum))
        return sdfed_fail(err, SDFED_ERR_ARG, "step: momentum needs its buffers");
    size_t ng = (size_t)p->global_len * W, nl = (size_t)p->local_len * W;
    float *grad_g = sdfed_arena_floats(arena, ng), *grad_l = sdfed_arena_floats(arena, nl);
    float *new_g = sdfed_arena_floats(arena, ng), *new_l = sdfed_arena_floats(arena, nl);
    float *buf_g = sdfed_arena_floats(arena, ng), *buf_l = sdfed_arena_floats(arena, nl);
    if (!grad_g || !grad_l || !new_g || !new_l || !buf_g || !buf_l)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "step: out of memory");
    int rc = sdfed_objective_eval(m, k, cls, p->global, p->global_len, p->local, p->local_len, batch, cfg, losses,
                                  grad_g, grad_l, profile, arena, err);
    if (rc) return rc;
    int finite = sgd_update(new_g, buf_g, p->global, use_momentum ? p->global_momentum : NULL, grad_g, ng, sgd) &
                 sgd_update(new_l, buf_l, p->local, use_momentum ? p->local_momentum : NULL, grad_l, nl, sgd);
    if (!finite) return sdfed_fail(err, SDFED_ERR_NUMERIC, "step: the update is not finite; prompts left unchanged");
    memcpy(p->global, new_g, ng * sizeof *new_g);
    memcpy(p->local, new_l, nl * sizeof *new_l);
    if (use_momentum) {
        memcpy(p->global_momentum, buf_g, ng * sizeof *buf_g);
        memcpy(p->local_momentum, buf_l, nl * sizeof *buf_l);
    }
    return SDFED_OK;
}
