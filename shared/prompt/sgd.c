/* The all-or-nothing SGD update. */
#include "prompt/sgd.h"

#include <math.h>
#include <string.h>

int sdfed_sgd_validate(const sdfed_sgd *sgd, sdfed_error *err) {
    if (!(sgd->lr > 0.0f) || !isfinite(sgd->lr) || !(sgd->momentum >= 0.0f) || !(sgd->momentum < 1.0f) ||
        !(sgd->weight_decay >= 0.0f) || !isfinite(sgd->weight_decay))
        return sdfed_fail(err, SDFED_ERR_ARG, "sgd: need lr > 0, 0 <= momentum < 1, weight decay >= 0 (got %g, %g, %g)",
                          sgd->lr, sgd->momentum, sgd->weight_decay);
    return SDFED_OK;
}

int sdfed_sgd_apply(const sdfed_sgd *sgd, const sdfed_param *params, int n_params, sdfed_arena *arena,
                    sdfed_error *err) {
    int rc = sdfed_sgd_validate(sgd, err);
    if (rc) return rc;
    int use_momentum = sgd->momentum > 0.0f;
    float **new_value = sdfed_arena_alloc(arena, sizeof *new_value * (size_t)n_params);
    float **new_buf = sdfed_arena_alloc(arena, sizeof *new_buf * (size_t)n_params);
    if (!new_value || !new_buf) return sdfed_fail(err, SDFED_ERR_NOMEM, "sgd: out of memory");
    int finite = 1;
    for (int t = 0; t < n_params; t++) {
        const sdfed_param *p = &params[t];
        if (use_momentum && !p->momentum) return sdfed_fail(err, SDFED_ERR_ARG, "sgd: momentum needs its buffers");
        new_value[t] = sdfed_arena_floats(arena, p->n);
        new_buf[t] = use_momentum ? sdfed_arena_floats(arena, p->n) : NULL;
        if (!new_value[t] || (use_momentum && !new_buf[t]))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "sgd: out of memory");
        for (size_t i = 0; i < p->n; i++) {
            float g = p->grad[i] + sgd->weight_decay * p->value[i];
            if (use_momentum) g = new_buf[t][i] = sgd->momentum * p->momentum[i] + g;
            new_value[t][i] = p->value[i] - sgd->lr * g;
            finite &= isfinite(new_value[t][i]) && isfinite(g);
        }
    }
    if (!finite) return sdfed_fail(err, SDFED_ERR_NUMERIC, "sgd: the update is not finite; parameters left unchanged");
    for (int t = 0; t < n_params; t++) {
        memcpy(params[t].value, new_value[t], sizeof(float) * params[t].n);
        if (use_momentum) memcpy(params[t].momentum, new_buf[t], sizeof(float) * params[t].n);
    }
    return SDFED_OK;
}
