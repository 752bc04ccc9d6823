/* Dispatch of the methods: parameter shapes, initialisation, the local step
 * and the class features of each. */
#include "method/methods.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clip/image_encoder.h"
#include "clip/text_encoder.h"
#include "method/fedot.h"
#include "method/fedotp.h"
#include "prompt/losses.h"
#include "prompt/projector.h"

const sdfed_name sdfed_method_names[] = {
    [SDFED_METHOD_ZEROSHOT] = {.name = "zeroshot", .value = SDFED_METHOD_ZEROSHOT},
    [SDFED_METHOD_COOP] = {.name = "coop", .value = SDFED_METHOD_COOP},
    [SDFED_METHOD_PROMPTFL] = {.name = "promptfl", .value = SDFED_METHOD_PROMPTFL},
    [SDFED_METHOD_PROMPTFOLIO] = {.name = "promptfolio", .value = SDFED_METHOD_PROMPTFOLIO},
    [SDFED_METHOD_FEDPHA] = {.name = "fedpha", .value = SDFED_METHOD_FEDPHA},
    [SDFED_METHOD_FEDOT] = {.name = "fedot", .value = SDFED_METHOD_FEDOT},
    [SDFED_METHOD_FEDOTP] = {.name = "fedotp", .value = SDFED_METHOD_FEDOTP},
    [SDFED_METHOD_SDFED] = {.name = "sdfed", .value = SDFED_METHOD_SDFED},
    [SDFED_METHOD_SDFED_NOFILTER] = {.name = "sdfed-nofilter", .value = SDFED_METHOD_SDFED_NOFILTER},
    [SDFED_METHOD_SDFED_NOSTRETCH] = {.name = "sdfed-nostretch", .value = SDFED_METHOD_SDFED_NOSTRETCH},
    [SDFED_METHOD_SDFED_NOSEPARATION] = {.name = "sdfed-noseparation", .value = SDFED_METHOD_SDFED_NOSEPARATION},
};
static_assert(sizeof sdfed_method_names / sizeof sdfed_method_names[0] == SDFED_METHOD_COUNT, "a name per method");

const char *sdfed_method_name(int method) { return sdfed_name_of(sdfed_method_names, SDFED_METHOD_COUNT, method); }

int sdfed_method_from_name(const char *name) { return sdfed_name_value(sdfed_method_names, SDFED_METHOD_COUNT, name); }

sdfed_method_config sdfed_method_defaults(int method) {
    sdfed_method_config c;
    memset(&c, 0, sizeof c);
    c.method = method;
    c.global_len = 8;
    c.local_len = 16;
    c.objective = sdfed_objective_defaults();
    c.theta = 0.2f;
    c.init_std = 0.02f;
    c.sgd = (sdfed_sgd){.lr = 0.01f, .momentum = 0.0f, .weight_decay = 0.0f};
    c.transport = sdfed_transport_defaults();
    switch (method) {
    case SDFED_METHOD_FEDPHA:
        c.objective.projector = SDFED_PROJECTOR_ROWSPACE;
        c.objective.lambda = 0.2f;
        c.objective.gamma = 1.0f;
        break;
    case SDFED_METHOD_SDFED_NOFILTER: c.objective.terms = SDFED_TERM_CE_LOCAL | SDFED_TERM_CE_GLOBAL; break;
    case SDFED_METHOD_SDFED_NOSTRETCH: c.objective.terms = SDFED_TERMS_ALL & ~(unsigned)SDFED_TERM_STRETCH; break;
    case SDFED_METHOD_SDFED_NOSEPARATION: c.objective.terms = SDFED_TERMS_ALL & ~(unsigned)SDFED_TERM_SEPARATION; break;
    }
    return c;
}

int sdfed_method_reads_patches(int method) { return method == SDFED_METHOD_FEDOTP; }

int sdfed_method_feature_size(int method, const sdfed_clip_config *c) {
    return sdfed_method_reads_patches(method) ? (sdfed_image_token_count(c) - 1) * c->embed_dim : c->embed_dim;
}

int sdfed_method_image_features(int method, const sdfed_clip_model *m, const sdfed_kernels *k,
                                const sdfed_image *images, int n, float *features, sdfed_arena *arena,
                                sdfed_error *err) {
    return sdfed_method_reads_patches(method) ? sdfed_image_patch_features(m, k, images, n, features, arena, err)
                                              : sdfed_image_features(m, k, images, n, features, arena, err);
}

/* Methods with a global and a local prompt, trained by the SDFed objective. */
static int is_sdfed_family(int method) {
    return method == SDFED_METHOD_FEDPHA || method == SDFED_METHOD_SDFED || method == SDFED_METHOD_SDFED_NOFILTER ||
           method == SDFED_METHOD_SDFED_NOSTRETCH || method == SDFED_METHOD_SDFED_NOSEPARATION;
}

void sdfed_method_shapes(const sdfed_method_config *cfg, const sdfed_clip_model *m, int n_classes, int *width,
                         int *global_rows, int *local_rows) {
    *width = m->cfg.text_width;
    *global_rows = *local_rows = 0;
    switch (cfg->method) {
    case SDFED_METHOD_COOP: *local_rows = cfg->global_len; break;
    case SDFED_METHOD_PROMPTFL: *global_rows = cfg->global_len; break;
    case SDFED_METHOD_FEDOT:
        *width = m->cfg.embed_dim;
        *global_rows = n_classes;
        *local_rows = m->cfg.embed_dim;
        break;
    default:
        if (cfg->method == SDFED_METHOD_PROMPTFOLIO || cfg->method == SDFED_METHOD_FEDOTP ||
            is_sdfed_family(cfg->method)) {
            *global_rows = cfg->global_len;
            *local_rows = cfg->local_len;
        }
    }
}

void sdfed_method_params_free(sdfed_method_params *p) {
    free(p->global);
    free(p->local);
    free(p->global_momentum);
    free(p->local_momentum);
    memset(p, 0, sizeof *p);
}

/* CoOp's context initialisation: rows 0 .. min(T, n) - 1 of a prompt P
 * (T, W) become the token embeddings of the classes' prompt_init tokens
 * (dequantised, without positional embeddings); the other rows keep their
 * random draws. Every row was drawn first, so the random stream (which
 * also orders the client's batches) is the same with or without. */
static void init_from_tokens(const sdfed_clip_model *m, const sdfed_classes *cls, float *P, int T) {
    int W = m->cfg.text_width;
    for (int t = 0; t < T && t < cls->init_len; t++) sdfed_text_token_embedding(m, cls->init_ids[t], P + (size_t)t * W);
}

int sdfed_method_params_init(sdfed_method_params *p, const sdfed_method_config *cfg, const sdfed_clip_model *m,
                             const sdfed_kernels *k, const sdfed_classes *cls, sdfed_rng *rng, sdfed_arena *arena,
                             sdfed_error *err) {
    memset(p, 0, sizeof *p);
    if (!sdfed_method_name(cfg->method))
        return sdfed_fail(err, SDFED_ERR_ARG, "method: unknown method %d", cfg->method);
    sdfed_method_shapes(cfg, m, cls->n_classes, &p->width, &p->global_rows, &p->local_rows);
    size_t ng = (size_t)p->global_rows * p->width, nl = (size_t)p->local_rows * p->width;
    int momentum = cfg->sgd.momentum > 0.0f;
    p->global = calloc(ng + 1, sizeof(float));
    p->local = calloc(nl + 1, sizeof(float));
    if (momentum) {
        p->global_momentum = calloc(ng + 1, sizeof(float));
        p->local_momentum = calloc(nl + 1, sizeof(float));
    }
    if (!p->global || !p->local || (momentum && (!p->global_momentum || !p->local_momentum))) {
        sdfed_method_params_free(p);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "method: out of memory");
    }
    if (cfg->method == SDFED_METHOD_FEDOT) {
        /* classifier = zero-shot text features; transform A = 0 (Q = I) */
        int rc = sdfed_classes_zeroshot(m, k, cls, p->global, arena, err);
        if (rc) sdfed_method_params_free(p);
        return rc;
    }
    for (size_t i = 0; i < ng; i++) p->global[i] = (float)(cfg->init_std * sdfed_rng_normal(rng));
    for (size_t i = 0; i < nl; i++) p->local[i] = (float)(cfg->init_std * sdfed_rng_normal(rng));
    init_from_tokens(m, cls, p->global, p->global_rows);
    init_from_tokens(m, cls, p->local, p->local_rows);
    return SDFED_OK;
}

int sdfed_promptfolio_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *G,
                           int S_g, const float *L, int S_l, float theta, const sdfed_batch *batch,
                           sdfed_losses *losses, float *grad_G, float *grad_L, sdfed_arena *arena, sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim, B = batch->n, W = m->cfg.text_width;
    for (int i = 0; i < B; i++)
        if (batch->labels[i] < 0 || batch->labels[i] >= C)
            return sdfed_fail(err, SDFED_ERR_ARG, "promptfolio: label %d is not a class", batch->labels[i]);
    float *f[2], *d_f[2];
    for (int i = 0; i < 2; i++) {
        f[i] = sdfed_arena_floats(arena, (size_t)C * D);
        d_f[i] = sdfed_arena_floats(arena, (size_t)C * D);
    }
    float *mix = sdfed_arena_floats(arena, (size_t)C * D), *d_mix = sdfed_arena_floats(arena, (size_t)C * D);
    float *logits = sdfed_arena_floats(arena, (size_t)B * C), *probs = sdfed_arena_floats(arena, (size_t)B * C);
    if (!f[0] || !f[1] || !d_f[0] || !d_f[1] || !mix || !d_mix || !logits || !probs)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "promptfolio: out of memory");
    sdfed_prompt_pass pass;
    const float *P[2] = {G, L};
    int T[2] = {S_g, S_l};
    int rc = sdfed_prompt_features(m, k, cls, 2, P, T, f, grad_G || grad_L ? &pass : NULL, arena, err);
    if (rc) return rc;
    for (size_t i = 0; i < (size_t)C * D; i++) mix[i] = (1.0f - theta) * f[0][i] + theta * f[1][i];
    float scale = expf(m->logit_scale);
    sdfed_logits_forward(logits, batch->features, mix, B, C, D, scale);
    memset(losses, 0, sizeof *losses);
    losses->ce_local = losses->total =
        sdfed_cross_entropy_forward(probs, logits, batch->labels, B, C, &losses->correct);
    if (!isfinite(losses->total)) return sdfed_fail(err, SDFED_ERR_NUMERIC, "promptfolio: the loss is not finite");
    if (!grad_G && !grad_L) return SDFED_OK;
    sdfed_cross_entropy_backward(logits, probs, batch->labels, B, C, 1.0f);
    memset(d_mix, 0, sizeof(float) * (size_t)C * D);
    sdfed_logits_backward(d_mix, logits, batch->features, B, C, D, scale);
    for (size_t i = 0; i < (size_t)C * D; i++) {
        d_f[0][i] = (1.0f - theta) * d_mix[i];
        d_f[1][i] = theta * d_mix[i];
    }
    float *dP[2] = {grad_G, grad_L};
    for (int i = 0; i < 2; i++) {
        if (!dP[i] && !(dP[i] = sdfed_arena_floats(arena, (size_t)T[i] * W)))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "promptfolio: out of memory");
        memset(dP[i], 0, sizeof(float) * (size_t)T[i] * W);
    }
    return sdfed_prompt_backward(m, k, &pass, 2, (const float *const *)f, (const float *const *)d_f, dP, arena, err);
}

int sdfed_method_step(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                      const sdfed_classes *cls, sdfed_method_params *p, const sdfed_batch *batch, sdfed_losses *losses,
                      sdfed_profile *profile, sdfed_arena *arena, sdfed_error *err) {
    if (cfg->method != SDFED_METHOD_FEDOT && p->width != m->cfg.text_width)
        return sdfed_fail(err, SDFED_ERR_ARG, "method: prompts of width %d for a model of width %d", p->width,
                          m->cfg.text_width);
    int rc = sdfed_sgd_validate(&cfg->sgd, err);
    if (rc) return rc;
    size_t ng = (size_t)p->global_rows * p->width, nl = (size_t)p->local_rows * p->width;
    float *grad_g = sdfed_arena_floats(arena, ng + 1), *grad_l = sdfed_arena_floats(arena, nl + 1);
    if (!grad_g || !grad_l) return sdfed_fail(err, SDFED_ERR_NOMEM, "method: out of memory");
    sdfed_param global = {.value = p->global, .momentum = p->global_momentum, .grad = grad_g, .n = ng},
                local = {p->local, p->local_momentum, grad_l, nl};
    sdfed_objective_config ce_only = cfg->objective;
    ce_only.terms = SDFED_TERM_CE_LOCAL;
    switch (cfg->method) {
    case SDFED_METHOD_ZEROSHOT: return sdfed_fail(err, SDFED_ERR_ARG, "method: zeroshot does not train");
    case SDFED_METHOD_COOP: /* the one prompt is private */
        rc = sdfed_objective_eval(m, k, cls, NULL, 0, p->local, p->local_rows, batch, &ce_only, losses, NULL, grad_l,
                                  profile, arena, err);
        return rc ? rc : sdfed_sgd_apply(&cfg->sgd, &local, 1, arena, err);
    case SDFED_METHOD_PROMPTFL: /* the one prompt is shared */
        rc = sdfed_objective_eval(m, k, cls, NULL, 0, p->global, p->global_rows, batch, &ce_only, losses, NULL, grad_g,
                                  profile, arena, err);
        return rc ? rc : sdfed_sgd_apply(&cfg->sgd, &global, 1, arena, err);
    case SDFED_METHOD_PROMPTFOLIO:
        rc = sdfed_promptfolio_eval(m, k, cls, p->global, p->global_rows, p->local, p->local_rows, cfg->theta, batch,
                                    losses, grad_g, grad_l, arena, err);
        break;
    case SDFED_METHOD_FEDOT:
        rc = sdfed_fedot_eval(p->global, p->local, cls->n_classes, p->width, expf(m->logit_scale), batch, losses,
                              grad_g, grad_l, arena, err);
        break;
    case SDFED_METHOD_FEDOTP:
        rc = sdfed_fedotp_eval(m, k, cls, &cfg->transport, p->global, p->global_rows, p->local, p->local_rows, batch,
                               losses, grad_g, grad_l, arena, err);
        break;
    default:
        rc = sdfed_objective_eval(m, k, cls, p->global, p->global_rows, p->local, p->local_rows, batch, &cfg->objective,
                                  losses, grad_g, grad_l, profile, arena, err);
    }
    if (rc) return rc;
    sdfed_param both[2] = {global, local};
    return sdfed_sgd_apply(&cfg->sgd, both, 2, arena, err);
}

/* feats (C, D): the class features of a method that predicts with them. */
static int class_features(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                          const sdfed_classes *cls, const sdfed_method_params *p, float *feats, sdfed_arena *arena,
                          sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim;
    switch (cfg->method) {
    case SDFED_METHOD_ZEROSHOT: return sdfed_classes_zeroshot(m, k, cls, feats, arena, err);
    case SDFED_METHOD_PROMPTFL:
        return sdfed_prompt_features(m, k, cls, 1, (const float *const *)&p->global, &p->global_rows, &feats, NULL,
                                     arena, err);
    case SDFED_METHOD_FEDOT: return sdfed_fedot_class_features(p->global, p->local, C, D, feats, arena, err);
    case SDFED_METHOD_PROMPTFOLIO: {
        float *local = sdfed_arena_floats(arena, (size_t)C * D);
        if (!local) return sdfed_fail(err, SDFED_ERR_NOMEM, "method: out of memory");
        float *f[2] = {feats, local};
        const float *P[2] = {p->global, p->local};
        int T[2] = {p->global_rows, p->local_rows};
        int rc = sdfed_prompt_features(m, k, cls, 2, P, T, f, NULL, arena, err);
        for (size_t i = 0; rc == SDFED_OK && i < (size_t)C * D; i++)
            feats[i] = (1.0f - cfg->theta) * feats[i] + cfg->theta * local[i];
        return rc;
    }
    default: /* coop and the SDFed family predict with the local prompt */
        return sdfed_prompt_features(m, k, cls, 1, (const float *const *)&p->local, &p->local_rows, &feats, NULL, arena,
                                     err);
    }
}

int sdfed_method_classifier(const sdfed_method_config *cfg, const sdfed_clip_model *m, const sdfed_kernels *k,
                            const sdfed_classes *cls, const sdfed_method_params *p, sdfed_classifier *out,
                            sdfed_arena *arena, sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim, patches = sdfed_method_reads_patches(cfg->method);
    *out = (sdfed_classifier){.cfg = cfg,
                              .n_classes = C,
                              .dim = D,
                              .patches = patches ? sdfed_image_token_count(&m->cfg) - 1 : 0,
                              .scale = expf(m->logit_scale),
                              .feats = sdfed_arena_floats(arena, (size_t)C * D * (patches ? SDFED_FEDOTP_PROMPTS : 1))};
    if (!out->feats) return sdfed_fail(err, SDFED_ERR_NOMEM, "method: out of memory");
    if (patches)
        return sdfed_fedotp_class_prompts(m, k, cls, p->global, p->global_rows, p->local, p->local_rows, out->feats,
                                          arena, err);
    return class_features(cfg, m, k, cls, p, out->feats, arena, err);
}

int sdfed_classifier_logits(const sdfed_classifier *c, const float *features, int n, float *logits, sdfed_arena *arena,
                            sdfed_error *err) {
    if (c->patches)
        return sdfed_fedotp_logits(&c->cfg->transport, c->feats, c->n_classes, c->dim, features, n, c->patches,
                                   c->scale, logits, NULL, arena, err);
    sdfed_logits_forward(logits, features, c->feats, n, c->n_classes, c->dim, c->scale);
    return SDFED_OK;
}

int sdfed_classifier_predict(const sdfed_classifier *c, const float *features, int n, int32_t *pred, sdfed_arena *arena,
                             sdfed_error *err) {
    int C = c->n_classes;
    if (!c->patches) {
        sdfed_predict(c->feats, C, c->dim, features, n, pred);
        return SDFED_OK;
    }
    float *logits = sdfed_arena_floats(arena, (size_t)n * C);
    if (!logits) return sdfed_fail(err, SDFED_ERR_NOMEM, "method: out of memory");
    int rc = sdfed_classifier_logits(c, features, n, logits, arena, err);
    for (int i = 0; rc == SDFED_OK && i < n; i++) {
        const float *row = logits + (size_t)i * C;
        pred[i] = 0;
        for (int k = 1; k < C; k++)
            if (row[k] > row[pred[i]]) pred[i] = k;
    }
    return rc;
}
