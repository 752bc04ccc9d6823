/* The SDFed objective: forward through both prompts, the four terms, and
 * the backward pass to both prompts. */
#include "prompt/objective.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "prompt/losses.h"
#include "prompt/projector.h"

const sdfed_name sdfed_stretch_names[] = {
    [SDFED_STRETCH_MEAN] = {.name = "mean", .value = SDFED_STRETCH_MEAN},
    [SDFED_STRETCH_SUM] = {.name = "sum", .value = SDFED_STRETCH_SUM},
};
static_assert(sizeof sdfed_stretch_names / sizeof sdfed_stretch_names[0] == SDFED_STRETCH_COUNT,
              "a name per stretch reading");

const char *sdfed_stretch_name(int stretch) { return sdfed_name_of(sdfed_stretch_names, SDFED_STRETCH_COUNT, stretch); }

sdfed_objective_config sdfed_objective_defaults(void) {
    sdfed_objective_config c = {.terms = SDFED_TERMS_ALL,
                                .projector = SDFED_PROJECTOR_COMPLEMENT,
                                .lambda = 0.6f,
                                .gamma = 0.8f,
                                .stretch = SDFED_STRETCH_MEAN};
    return c;
}

/* Seconds on the profile's clock (0 without one: nothing is timed). */
static double now(const sdfed_profile *prof) { return prof->clock ? 1e-9 * (double)prof->clock() : 0.0; }

static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static int validate(const sdfed_clip_model *m, const sdfed_classes *cls, const float *Gs, int S_s, const float *Gc,
                    int S_l, const sdfed_batch *batch, const sdfed_objective_config *cfg, sdfed_error *err) {
    int W = m->cfg.text_width, D = m->cfg.embed_dim, C = cls->n_classes;
    if (cfg->terms == 0 || (cfg->terms & ~(unsigned)SDFED_TERMS_ALL))
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: no valid loss term selected");
    /* G_s is needed by every term but the local cross-entropy */
    int uses_global = (cfg->terms & ~(unsigned)SDFED_TERM_CE_LOCAL) != 0;
    if (S_l < 1 || !Gc || (uses_global && (S_s < 1 || S_s > W || !Gs)))
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: bad prompts (lengths %d, %d)", S_s, S_l);
    if (batch->n < 1 || !batch->features || !batch->labels)
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: empty batch");
    if (!(cfg->gamma >= 0.0f) || !isfinite(cfg->gamma))
        return sdfed_fail(err, SDFED_ERR_ARG, "objective: gamma %g must be finite and >= 0", cfg->gamma);
    for (int i = 0; i < batch->n; i++)
        if (batch->labels[i] < 0 || batch->labels[i] >= C)
            return sdfed_fail(err, SDFED_ERR_ARG, "objective: label %d of row %d is not a class (0..%d)",
                              batch->labels[i], i, C - 1);
    if ((uses_global && !all_finite(Gs, (size_t)S_s * W)) || !all_finite(Gc, (size_t)S_l * W))
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: a prompt holds NaN or Inf");
    if (!all_finite(batch->features, (size_t)batch->n * D))
        return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: image features hold NaN or Inf");
    return SDFED_OK;
}

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

    /* One pass of the text tower evaluates, in this order: f(G_c) (always: it
     * gives the batch accuracy), f(G_s) when a term uses it, and the stretch
     * target f(G~_c), a constant, last so the backward pass can leave it out. */
    enum { LOCAL, GLOBAL, REFINED };
    int need_global = (t & (SDFED_TERM_CE_GLOBAL | SDFED_TERM_SEPARATION)) != 0,
        need_refined = (t & SDFED_TERM_STRETCH) != 0;
    int local_grad = grad_Gc && (t & (SDFED_TERM_CE_LOCAL | SDFED_TERM_STRETCH | SDFED_TERM_SEPARATION));
    int global_grad = grad_Gs && need_global;
    int n_grad = global_grad ? 2 : local_grad; /* local_grad is 0 or 1 */
    const float *P[3] = {Gc, Gs, NULL};
    int T[3] = {S_l, S_s, S_l}, slot[3] = {0, 1, need_global ? 2 : 1}, n = 1 + need_global + need_refined;
    float *feats[3], *d_feats[2];
    for (int i = 0; i < 3; i++) feats[i] = sdfed_arena_floats(arena, (size_t)C * D);
    for (int i = 0; i < 2; i++) d_feats[i] = sdfed_arena_floats(arena, (size_t)C * D);
    float *logits = sdfed_arena_floats(arena, (size_t)B * C), *probs = sdfed_arena_floats(arena, (size_t)B * C);
    float *dist = sdfed_arena_floats(arena, (size_t)C);
    if (!feats[0] || !feats[1] || !feats[2] || !d_feats[0] || !d_feats[1] || !logits || !probs || !dist)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");
    memset(d_feats[0], 0, sizeof(float) * (size_t)C * D);
    memset(d_feats[1], 0, sizeof(float) * (size_t)C * D);

    if (need_refined) { /* G~_c = G_c R, R from the SVD of G_s */
        double t0 = now(prof);
        sdfed_projector R;
        rc = sdfed_projector_build(Gs, S_s, W, cfg->projector, cfg->lambda, &R, arena, err);
        double t1 = now(prof);
        float *refined = sdfed_arena_floats(arena, (size_t)S_l * W);
        if (rc == SDFED_OK && !refined) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");
        if (rc == SDFED_OK) rc = sdfed_projector_apply(&R, k, Gc, S_l, refined, arena, err);
        prof->svd += t1 - t0;
        prof->projection += now(prof) - t1;
        if (rc) return rc;
        P[slot[REFINED]] = refined;
        T[slot[REFINED]] = S_l;
    }
    float *f_local = feats[0], *f_global = feats[slot[GLOBAL]], *f_refined = feats[slot[REFINED]];
    double t0 = now(prof);
    sdfed_prompt_pass pass;
    rc = sdfed_prompt_features(m, k, cls, n, P, T, feats, n_grad ? &pass : NULL, arena, err);
    prof->forward += now(prof) - t0;
    if (rc) return rc;

    int correct = 0;
    float *d_local = local_grad ? d_feats[0] : NULL, *d_global = global_grad ? d_feats[1] : NULL;
    double ce_local =
        cross_entropy(f_local, (t & SDFED_TERM_CE_LOCAL) ? d_local : NULL, batch, C, D, scale, &correct, logits, probs);
    if (t & SDFED_TERM_CE_LOCAL) losses->ce_local = ce_local;
    if (t & SDFED_TERM_CE_GLOBAL)
        losses->ce_global = cross_entropy(f_global, d_global, batch, C, D, scale, NULL, logits, probs);
    if (t & SDFED_TERM_STRETCH) {
        int sum = cfg->stretch == SDFED_STRETCH_SUM;
        losses->stretch = sdfed_stretch_forward(f_local, f_refined, C * D, sum);
        if (d_local) sdfed_stretch_backward(d_local, f_local, f_refined, C * D, sum, 1.0f);
    }
    if (t & SDFED_TERM_SEPARATION) {
        losses->separation = sdfed_separation_forward(dist, f_local, f_global, C, D, cfg->gamma);
        sdfed_separation_backward(d_local, d_global, f_local, f_global, dist, C, D, cfg->gamma, 1.0f);
    }
    losses->total = losses->ce_local + losses->ce_global + losses->stretch + losses->separation;
    losses->correct = correct;
    if (!isfinite(losses->total)) return sdfed_fail(err, SDFED_ERR_NUMERIC, "objective: the loss is not finite");

    t0 = now(prof);
    if (grad_Gc) memset(grad_Gc, 0, sizeof(float) * (size_t)S_l * W);
    if (grad_Gs && Gs) memset(grad_Gs, 0, sizeof(float) * (size_t)S_s * W);
    if (n_grad) {
        /* a prompt that needs no gradient of its own may still sit before one
         * that does: its gradient goes to scratch */
        float *dP[2] = {grad_Gc, grad_Gs};
        if (!dP[0] && !(dP[0] = sdfed_arena_floats(arena, (size_t)S_l * W)))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "objective: out of memory");
        if (!grad_Gc) memset(dP[0], 0, sizeof(float) * (size_t)S_l * W);
        rc = sdfed_prompt_backward(m, k, &pass, n_grad, (const float *const *)feats, (const float *const *)d_feats, dP,
                                   arena, err);
    }
    prof->backward += now(prof) - t0;
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
