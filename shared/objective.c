/* The SDFed objective: forward through both prompts, the four terms, and
 * the backward pass to both prompts. */
#include "objective.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "losses.h"
#include "projector.h"

sdfed_objective_config sdfed_objective_defaults(void) {
    sdfed_objective_config c = {SDFED_TERMS_ALL, SDFED_PROJECTOR_COMPLEMENT, 0.6f, 0.8f};
    return c;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static int validate(const sdfed_clip_model *m, const sdfed_classes *cls, const float *Gs, int S_s, const float *Gc,
                    int S_l, const sdfed_batch *batch, const sdfed_objective_config *cfg, sdfed_error *err) {
    int W = m->cfg.text_width, D = m->cfg.embed_dim, C = cls->n_classes;
    if (S_s < 1 || S_l < 1 || S_s > W)
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: bad prompt lengths %d, %d", S_s, S_l);
    if (batch->n < 1 || !batch->features || !batch->labels)
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: empty batch");
    if (cfg->terms == 0 || (cfg->terms & ~(unsigned)SDFED_TERMS_ALL))
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: no valid loss term selected");
    if (!(cfg->gamma >= 0.0f) || !isfinite(cfg->gamma))
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: gamma %g must be finite and >= 0", cfg->gamma);
    for (int i = 0; i < batch->n; i++)
        if (batch->labels[i] < 0 || batch->labels[i] >= C)
            return sdfed_fail(err, SDFED_ERR_ARG, "objective: label %d of row %d is not a class (0..%d)",
                              batch->labels[i], i, C - 1);
    if (!all_finite(Gs, (size_t)S_s * W) || !all_finite(Gc, (size_t)S_l * W))
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: a prompt holds NaN or Inf");
    if (!all_finite(batch->features, (size_t)batch->n * D))
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: image features hold NaN or Inf");
    return SDFED_OK;
}

/* One prompt's share of the work: features, pass, and their gradient. */
typedef struct prompt_side {
    float *feats, *d_feats; /* (C, D) */
    sdfed_prompt_pass pass;
    int needed, has_grad;
} prompt_side;

/* CE of the logits of f against the batch, adding its gradient to d_f. */
static double cross_entropy(const float *f, float *d_f, const sdfed_batch *b, int C, int D, float scale, int *correct,
                            float *logits, float *probs) {
    sdfed_logits_forward(logits, b->features, f, b->n, C, D, scale);
    double loss = sdfed_cross_entropy_forward(probs, logits, b->labels, b->n, C, correct);
    if (d_f) {
        sdfed_cross_entropy_backward(logits, probs, b->labels, b->n, C, 1.0f);
        sdfed_logits_backward(d_f, logits, b->features, b->n, C, D, scale);
    }
    return loss;
}

int sdfed_objective_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *Gs,
                         int S_s, const float *Gc, int S_l, const sdfed_batch *batch, const sdfed_objective_config *cfg,
                         sdfed_losses *losses, float *grad_Gs, float *grad_Gc, sdfed_profile *profile,
                         sdfed_arena *arena, sdfed_error *err) {
    int rc = validate(m, cls, Gs, S_s, Gc, S_l, batch, cfg, err);
    if (rc) return rc;
    int W = m->cfg.text_width, D = m->cfg.embed_dim, C = cls->n_classes, B = batch->n;
    float scale = expf(m->logit_scale);
    unsigned t = cfg->terms;
    sdfed_profile local_profile = {0};
    sdfed_profile *prof = profile ? profile : &local_profile;
    memset(losses, 0, sizeof *losses);

    /* f(G_c) is always evaluated: it gives the batch accuracy */
    prompt_side local = {0}, global = {0};
    local.needed = 1;
    local.has_grad = grad_Gc && (t & (SDFED_TERM_CE_LOCAL | SDFED_TERM_STRETCH | SDFED_TERM_SEPARATION));
    global.needed = (t & (SDFED_TERM_CE_GLOBAL | SDFED_TERM_SEPARATION)) != 0;
    global.has_grad = grad_Gs && global.needed;
    prompt_side *sides[2] = {&local, &global};
    for (int s = 0; s < 2; s++) {
        sides[s]->feats = sdfed_arena_floats(arena, (size_t)C * D);
        sides[s]->d_feats = sdfed_arena_floats(arena, (size_t)C * D);
        if (!sides[s]->feats || !sides[s]->d_feats) return sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");
        memset(sides[s]->d_feats, 0, sizeof(float) * (size_t)C * D);
    }
    float *refined_feats = sdfed_arena_floats(arena, (size_t)C * D);
    float *logits = sdfed_arena_floats(arena, (size_t)B * C), *probs = sdfed_arena_floats(arena, (size_t)B * C);
    float *dist = sdfed_arena_floats(arena, (size_t)C);
    if (!refined_feats || !logits || !probs || !dist)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");

    /* the stretch target: f(G_c R), R from the SVD of G_s */
    if (t & SDFED_TERM_STRETCH) {
        double t0 = now();
        sdfed_projector R;
        rc = sdfed_projector_build(Gs, S_s, W, cfg->projector, cfg->lambda, &R, arena, err);
        double t1 = now();
        float *refined = sdfed_arena_floats(arena, (size_t)S_l * W);
        if (rc == SDFED_OK && !refined) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");
        if (rc == SDFED_OK) rc = sdfed_projector_apply(&R, k, Gc, S_l, refined, arena, err);
        double t2 = now();
        if (rc == SDFED_OK) rc = sdfed_prompt_features(m, k, cls, refined, S_l, refined_feats, NULL, arena, err);
        prof->svd += t1 - t0;
        prof->projection += t2 - t1;
        prof->forward += now() - t2;
        if (rc) return rc;
    }
    double t0 = now();
    rc = sdfed_prompt_features(m, k, cls, Gc, S_l, local.feats, local.has_grad ? &local.pass : NULL, arena, err);
    if (rc == SDFED_OK && global.needed)
        rc = sdfed_prompt_features(m, k, cls, Gs, S_s, global.feats, global.has_grad ? &global.pass : NULL, arena, err);
    prof->forward += now() - t0;
    if (rc) return rc;

    int correct = 0;
    float *d_local = local.has_grad ? local.d_feats : NULL, *d_global = global.has_grad ? global.d_feats : NULL;
    double ce_local = cross_entropy(local.feats, (t & SDFED_TERM_CE_LOCAL) ? d_local : NULL, batch, C, D, scale,
                                    &correct, logits, probs);
    if (t & SDFED_TERM_CE_LOCAL) losses->ce_local = ce_local;
    if (t & SDFED_TERM_CE_GLOBAL)
        losses->ce_global = cross_entropy(global.feats, d_global, batch, C, D, scale, NULL, logits, probs);
    if (t & SDFED_TERM_STRETCH) {
        losses->stretch = sdfed_stretch_forward(local.feats, refined_feats, C * D);
        if (d_local) sdfed_stretch_backward(d_local, local.feats, refined_feats, C * D, 1.0f);
    }
    if (t & SDFED_TERM_SEPARATION) {
        losses->separation = sdfed_separation_forward(dist, local.feats, global.feats, C, D, cfg->gamma);
        sdfed_separation_backward(d_local, d_global, local.feats, global.feats, dist, C, D, cfg->gamma, 1.0f);
    }
    losses->total = losses->ce_local + losses->ce_global + losses->stretch + losses->separation;
    losses->correct = correct;
    if (!isfinite(losses->total)) return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: the loss is not finite");

    t0 = now();
    if (grad_Gc) memset(grad_Gc, 0, sizeof(float) * (size_t)S_l * W);
    if (grad_Gs) memset(grad_Gs, 0, sizeof(float) * (size_t)S_s * W);
    if (local.has_grad) rc = sdfed_prompt_backward(m, k, &local.pass, local.feats, local.d_feats, grad_Gc, arena, err);
    if (rc == SDFED_OK && global.has_grad)
        rc = sdfed_prompt_backward(m, k, &global.pass, global.feats, global.d_feats, grad_Gs, arena, err);
    prof->backward += now() - t0;
    if (rc) return rc;
    if ((grad_Gc && !all_finite(grad_Gc, (size_t)S_l * W)) || (grad_Gs && !all_finite(grad_Gs, (size_t)S_s * W)))
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: a gradient is not finite");
    return SDFED_OK;
}

void sdfed_predict(const float *class_features, int C, int D, const float *img, int n, int32_t *pred) {
    for (int i = 0; i < n; i++) {
        const float *x = img + (size_t)i * D;
        int best = 0;
        float best_score = -INFINITY;
        for (int c = 0; c < C; c++) {
            const float *f = class_features + (size_t)c * D;
            float s = 0.0f;
            for (int d = 0; d < D; d++) s += x[d] * f[d];
            if (s > best_score) {
                best_score = s;
                best = c;
            }
        }
        pred[i] = best;
    }
}
