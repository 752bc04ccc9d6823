/* The SDFed local step: objective, gradients, one SGD update of both prompts. */
#include "local_step.h"

int sdfed_local_step(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                     sdfed_client_prompts *p, const sdfed_batch *batch, const sdfed_objective_config *cfg,
                     const sdfed_sgd *sgd, sdfed_losses *losses, sdfed_profile *profile, sdfed_arena *arena,
                     sdfed_error *err) {
    int W = p->width;
    if (W != m->cfg.text_width)
        return sdfed_fail(err, SDFED_ERR_ARG, "step: prompts of width %d for a model of width %d", W, m->cfg.text_width);
    int rc = sdfed_sgd_validate(sgd, err);
    if (rc) return rc;
    size_t ng = (size_t)p->global_len * W, nl = (size_t)p->local_len * W;
    float *grad_g = sdfed_arena_floats(arena, ng), *grad_l = sdfed_arena_floats(arena, nl);
    if (!grad_g || !grad_l) return sdfed_fail(err, SDFED_ERR_NOMEM, "step: out of memory");
    rc = sdfed_objective_eval(m, k, cls, p->global, p->global_len, p->local, p->local_len, batch, cfg, losses, grad_g,
                              grad_l, profile, arena, err);
    if (rc) return rc;
    sdfed_param params[2] = {{p->global, p->global_momentum, grad_g, ng}, {p->local, p->local_momentum, grad_l, nl}};
    return sdfed_sgd_apply(sgd, params, 2, arena, err);
}
