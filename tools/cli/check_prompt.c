/* check-reference, second group: prompt autodiff in the CoOp layout
 * (prompt.T{1,4,9}.*) and the SDFed objective (sdfed.*): the SVD of G_s,
 * the projector, each loss term and the gradients of the total and of each
 * term with respect to both prompts. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_reference.h"
#include "clip/layers.h"
#include "prompt/losses.h"
#include "prompt/objective.h"
#include "prompt/projector.h"

/* The reference's classes ("class_names" metadata), tokenised as "<name>.". */
static int reference_classes(checker *c, sdfed_classes *cls, sdfed_error *err) {
    char *text = sdfed_safetensors_metadata(&c->ref, "class_names");
    int rc = text ? sdfed_classes_init_json(cls, &c->m->tokenizer, c->m->clip.cfg.context_length, text, strlen(text),
                                            INT_MAX, err)
                  : sdfed_fail(err, SDFED_ERR_NOT_FOUND, "metadata 'class_names' is missing");
    free(text);
    return rc;
}

/* Our CoOp token layout for T slots against prompt.T{T}.token_ids and
 * eot_index: exact. */
static void check_layout(checker *c, const sdfed_classes *cls, int T, const char *prefix) {
    char name[64], detail[120];
    snprintf(name, sizeof name, "%s.token_ids", prefix);
    snprintf(detail, sizeof detail, "%s.token_ids", prefix);
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, detail);
    sdfed_error err = {0};
    if (!t || t->n_dims != 2 || t->shape[0] != cls->n_classes) {
        sdfed_fail(&err, SDFED_ERR_FORMAT, "reference tensor '%s' is missing or mis-shaped", name);
        check_report_error(c, name, &err);
        return;
    }
    int L = (int)t->shape[1], C = cls->n_classes, differ = 0;
    const int32_t *want = check_load(c, name, (size_t)C * L, 1, &err);
    snprintf(detail, sizeof detail, "%s.eot_index", prefix);
    const int32_t *eot = want ? check_load(c, detail, (size_t)C, 1, &err) : NULL;
    if (!eot) {
        check_report_error(c, name, &err);
        return;
    }
    for (int k = 0; k < C; k++) {
        int n = cls->first[k + 1] - cls->first[k];
        for (int p = 0; p < L; p++) {
            int32_t id = 0; /* the context's places and the padding */
            if (p == 0) id = cls->sot;
            if (p > T && p <= T + n) id = cls->ids[cls->first[k] + p - T - 1];
            if (p == T + n + 1) id = cls->eot;
            differ += want[(size_t)k * L + p] != id;
        }
        differ += eot[k] != T + n + 1;
    }
    snprintf(detail, sizeof detail, "%d classes, %s  max_abs %d  (exact)", C,
             differ ? "ids differ" : "ids and EOTs equal", differ);
    check_report(c, name, differ == 0, detail);
}

/* The reference's floats PREFIX.SUFFIX, n of them (check_load), NULL when they are not there */
static const float *reference(checker *c, const char *prefix, const char *suffix, size_t n, sdfed_error *err) {
    char name[80];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    return check_load(c, name, n, 0, err);
}

static void check_prompt(checker *c, const sdfed_classes *cls, int T, const float *img, const int32_t *labels, int B) {
    const sdfed_clip_config *cfg = &c->m->clip.cfg;
    int W = cfg->text_width, D = cfg->embed_dim, C = cls->n_classes;
    char prefix[32], name[80];
    snprintf(prefix, sizeof prefix, "prompt.T%d", T);
    check_layout(c, cls, T, prefix);
    sdfed_error err = {0};
    const float *ctx = reference(c, prefix, "ctx", (size_t)T * W, &err);
    const float *want_features = ctx ? reference(c, prefix, "text_features", (size_t)C * D, &err) : NULL;
    const float *want_logits = want_features ? reference(c, prefix, "logits", (size_t)B * C, &err) : NULL;
    const float *want_loss = want_logits ? reference(c, prefix, "loss", 1, &err) : NULL;
    const float *want_grad = want_loss ? reference(c, prefix, "grad_ctx", (size_t)T * W, &err) : NULL;
    float *feats = sdfed_arena_floats(&c->arena, (size_t)C * D),
          *d_feats = sdfed_arena_floats(&c->arena, (size_t)C * D);
    float *logits = sdfed_arena_floats(&c->arena, (size_t)B * C), *probs = sdfed_arena_floats(&c->arena, (size_t)B * C);
    float *grad = sdfed_arena_floats(&c->arena, (size_t)T * W);
    sdfed_prompt_pass pass;
    snprintf(name, sizeof name, "%s.text_features", prefix);
    if (!want_grad || !feats || !d_feats || !logits || !probs || !grad ||
        sdfed_prompt_features(&c->m->clip, c->k, cls, 1, &ctx, &T, &feats, &pass, &c->arena, &err)) {
        if (!err.message[0]) sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
        check_report_error(c, name, &err);
        return;
    }
    check_compare(c, name, pass.raw[0], want_features, C, D, KIND_FEATURES);
    float *want_unit = sdfed_arena_floats(&c->arena, (size_t)C * D), *norms = sdfed_arena_floats(&c->arena, (size_t)C);
    if (want_unit && norms) {
        sdfed_l2_normalize_forward(want_unit, norms, want_features, C, D);
        for (int k = 0; k < C; k++) {
            double e = 0.0;
            for (int d = 0; d < D; d++) e += pow((double)feats[k * D + d] - want_unit[k * D + d], 2);
            c->feature_error = fmax(c->feature_error, sqrt(e));
        }
    }
    float scale = expf(c->m->clip.logit_scale);
    sdfed_logits_forward(logits, img, feats, B, C, D, scale);
    snprintf(name, sizeof name, "%s.logits", prefix);
    check_compare(c, name, logits, want_logits, B, C, KIND_FEATURES);
    float loss = (float)sdfed_cross_entropy_forward(probs, logits, labels, B, C, NULL);
    snprintf(name, sizeof name, "%s.loss", prefix);
    check_compare(c, name, &loss, want_loss, 1, 1, KIND_LOSS);

    sdfed_cross_entropy_backward(logits, probs, labels, B, C, 1.0f);
    memset(d_feats, 0, sizeof *d_feats * (size_t)C * D);
    memset(grad, 0, sizeof *grad * (size_t)T * W);
    sdfed_logits_backward(d_feats, logits, img, B, C, D, scale);
    snprintf(name, sizeof name, "%s.grad_ctx", prefix);
    if (sdfed_prompt_backward(&c->m->clip, c->k, &pass, 1, (const float *const *)&feats, (const float *const *)&d_feats,
                              &grad, &c->arena, &err))
        check_report_error(c, name, &err);
    else
        check_compare(c, name, grad, want_grad, 1, T * W, KIND_GRADIENT);
}

/* The reference's image features and labels, shared by prompt.* and sdfed.*. */
static int reference_batch(checker *c, sdfed_classes *cls, float **img, int32_t **labels, int *B, sdfed_error *err) {
    const sdfed_st_tensor *t = sdfed_safetensors_find(&c->ref, "prompt.labels");
    *B = t ? (int)t->n_elements : 0;
    if (!*B) return sdfed_fail(err, SDFED_ERR_NOT_FOUND, "reference tensor 'prompt.labels' is missing");
    *labels = check_load(c, "prompt.labels", (size_t)*B, 1, err);
    *img = *labels ? check_load(c, "prompt.image_features", (size_t)*B * c->m->clip.cfg.embed_dim, 0, err) : NULL;
    if (!*img) return err->code;
    return reference_classes(c, cls, err);
}

void check_prompts(checker *c) {
    sdfed_classes cls;
    float *img;
    int32_t *labels;
    int B;
    sdfed_error err = {0};
    if (reference_batch(c, &cls, &img, &labels, &B, &err)) {
        check_report_error(c, "prompt", &err);
        return;
    }
    static const int lengths[] = {1, 4, 9};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) check_prompt(c, &cls, lengths[i], img, labels, B);
    sdfed_classes_free(&cls);
}

/* The distances d_k = ||f(G_c)_k - f(G_s)_k|| of the separation hinge
 * (class k is inside it when d_k < gamma); NULL if they cannot be computed. */
static float *hinge_distances(checker *c, const sdfed_classes *cls, const float *Gs, int S_s, const float *Gc, int S_l,
                              float gamma) {
    int C = cls->n_classes, D = c->m->clip.cfg.embed_dim;
    float *fs = sdfed_arena_floats(&c->arena, (size_t)C * D), *fc = sdfed_arena_floats(&c->arena, (size_t)C * D);
    float *dist = sdfed_arena_floats(&c->arena, (size_t)C);
    if (!fs || !fc || !dist ||
        sdfed_prompt_features(&c->m->clip, c->k, cls, 2, (const float *const[]){Gs, Gc}, (int[]){S_s, S_l},
                              (float *const[]){fs, fc}, NULL, &c->arena, NULL))
        return NULL;
    sdfed_separation_forward(dist, fc, fs, C, D, gamma);
    return dist;
}

typedef struct {
    const sdfed_classes *cls;
    const float *Gs, *Gc;
    int S_s, S_l;
    const sdfed_batch *batch;
} term_point;

/* The gradients of the given loss terms alone at the point, with this gamma. */
static int term_gradients(checker *c, const term_point *p, unsigned terms, float gamma, float *grad_s, float *grad_l,
                          sdfed_error *err) {
    sdfed_objective_config cfg = sdfed_objective_defaults();
    cfg.terms = terms;
    cfg.gamma = gamma;
    sdfed_losses losses;
    return sdfed_objective_eval(&c->m->clip, c->k, p->cls, p->Gs, p->S_s, p->Gc, p->S_l, p->batch, &cfg, &losses,
                                grad_s, grad_l, NULL, &c->arena, err);
}

/* The separation term's gradients depend on gamma only through which classes
 * are inside the hinge. A class whose margin |gamma - d_k| is within twice the
 * feature error of these weights may sit on either side of it here and in the
 * reference, so each such class is also tried on its other side (gamma moved
 * just past d_k, which moves any class between them too); the first
 * assignment under which both gradients pass is reported, a moved class
 * named in the line. */
static void check_separation(checker *c, const term_point *p, float gamma, const float *want_s, const float *want_l,
                             float *grad_s, float *grad_l) {
    int C = p->cls->n_classes, W = c->m->clip.cfg.text_width;
    const float *dist = hinge_distances(c, p->cls, p->Gs, p->S_s, p->Gc, p->S_l, gamma);
    /* candidate gammas, each with the class it moves to the other side (-1: none) */
    float *gammas = sdfed_arena_floats(&c->arena, (size_t)(1 + C));
    int *moves = sdfed_arena_alloc(&c->arena, sizeof *moves * (size_t)(1 + C));
    sdfed_error err = {0};
    if (!dist || !gammas || !moves) {
        sdfed_fail(&err, SDFED_ERR_NOMEM, "the hinge distances could not be computed");
        check_report_error(c, "sdfed.term.separation.grad_Gs", &err);
        return;
    }
    int n = 0;
    gammas[n] = gamma;
    moves[n++] = -1;
    for (int k = 0; k < C; k++)
        if (fabs((double)gamma - dist[k]) < 2.0 * c->feature_error) {
            gammas[n] = dist[k] < gamma ? dist[k] : nextafterf(dist[k], INFINITY);
            moves[n++] = k;
        }
    check_result best_s = {0}, best_l = {0};
    int moved = -1;
    for (int i = 0; i < n; i++) {
        if (term_gradients(c, p, SDFED_TERM_SEPARATION, gammas[i], grad_s, grad_l, &err)) {
            check_report_error(c, "sdfed.term.separation.grad_Gs", &err);
            return;
        }
        check_result r_s = check_measure(c, grad_s, want_s, 1, p->S_s * W, KIND_GRADIENT),
                     r_l = check_measure(c, grad_l, want_l, 1, p->S_l * W, KIND_GRADIENT);
        if (i == 0 || (r_s.pass && r_l.pass)) {
            best_s = r_s;
            best_l = r_l;
            moved = moves[i];
        }
        if (r_s.pass && r_l.pass) break;
    }
    char side[160] = "";
    if (moved >= 0)
        snprintf(side, sizeof side, "  [class %d, d %.6f vs gamma %.6f, counted %s]", moved, dist[moved], gamma,
                 dist[moved] < gamma ? "outside" : "inside");
    char detail[sizeof best_s.detail + sizeof side];
    snprintf(detail, sizeof detail, "%s%s", best_s.detail, side);
    check_report(c, "sdfed.term.separation.grad_Gs", best_s.pass, detail);
    snprintf(detail, sizeof detail, "%s%s", best_l.detail, side);
    check_report(c, "sdfed.term.separation.grad_Gc", best_l.pass, detail);
}

static void check_terms(checker *c, const term_point *p, float gamma) {
    int W = c->m->clip.cfg.text_width;
    static const struct {
        const char *name;
        unsigned terms;
    } terms[] = {{"ce_local", SDFED_TERM_CE_LOCAL},
                 {"ce_global", SDFED_TERM_CE_GLOBAL},
                 {"stretch", SDFED_TERM_STRETCH},
                 {"separation", SDFED_TERM_SEPARATION}};
    float *grad_s = sdfed_arena_floats(&c->arena, (size_t)p->S_s * W),
          *grad_l = sdfed_arena_floats(&c->arena, (size_t)p->S_l * W);
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++) {
        char name_s[80], name_l[80];
        sdfed_error err = {0};
        snprintf(name_s, sizeof name_s, "sdfed.term.%s.grad_Gs", terms[i].name);
        snprintf(name_l, sizeof name_l, "sdfed.term.%s.grad_Gc", terms[i].name);
        const float *want_s = check_load(c, name_s, (size_t)p->S_s * W, 0, &err);
        const float *want_l = want_s ? check_load(c, name_l, (size_t)p->S_l * W, 0, &err) : NULL;
        if (!want_l || !grad_s || !grad_l) {
            if (!err.message[0]) sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
            check_report_error(c, name_s, &err);
        } else if (terms[i].terms == SDFED_TERM_SEPARATION) {
            check_separation(c, p, gamma, want_s, want_l, grad_s, grad_l);
        } else if (term_gradients(c, p, terms[i].terms, gamma, grad_s, grad_l, &err)) {
            check_report_error(c, name_s, &err);
        } else {
            check_compare(c, name_s, grad_s, want_s, 1, p->S_s * W, KIND_GRADIENT);
            check_compare(c, name_l, grad_l, want_l, 1, p->S_l * W, KIND_GRADIENT);
        }
    }
}

void check_sdfed(checker *c) {
    int W = c->m->clip.cfg.text_width;
    sdfed_classes cls;
    float *img;
    int32_t *labels;
    int B;
    sdfed_error err = {0};
    const sdfed_st_tensor *ts = sdfed_safetensors_find(&c->ref, "sdfed.Gs"),
                          *tl = sdfed_safetensors_find(&c->ref, "sdfed.Gc");
    int S_s = ts && ts->n_dims == 2 ? (int)ts->shape[0] : 0, S_l = tl && tl->n_dims == 2 ? (int)tl->shape[0] : 0;
    if (!S_s || !S_l) sdfed_fail(&err, SDFED_ERR_NOT_FOUND, "reference tensors 'sdfed.Gs' and 'sdfed.Gc' are missing");
    const float *Gs = S_s ? check_load(c, "sdfed.Gs", (size_t)S_s * W, 0, &err) : NULL;
    const float *Gc = Gs && S_l ? check_load(c, "sdfed.Gc", (size_t)S_l * W, 0, &err) : NULL;
    const float *gamma = Gc ? check_load(c, "sdfed.gamma", 1, 0, &err) : NULL;
    const float *want_sigma = gamma ? check_load(c, "sdfed.singular_values", (size_t)S_s, 0, &err) : NULL;
    const float *want_R = want_sigma ? check_load(c, "sdfed.R", (size_t)W * W, 0, &err) : NULL;
    if (!want_R || reference_batch(c, &cls, &img, &labels, &B, &err)) {
        check_report_error(c, "sdfed", &err);
        return;
    }

    /* the reference projector removes all thin directions of G_s: the
     * complement mode with the default lambda (r >= rank) */
    sdfed_projector R;
    float *sigma = sdfed_arena_floats(&c->arena, (size_t)S_s), *dense = sdfed_arena_floats(&c->arena, (size_t)W * W);
    if (!sigma || !dense || sdfed_projector_build(Gs, S_s, W, SDFED_PROJECTOR_COMPLEMENT, 0.6f, &R, &c->arena, &err)) {
        check_report_error(c, "sdfed.singular_values", &err);
    } else {
        for (int i = 0; i < S_s; i++) sigma[i] = (float)R.svd.sigma[i];
        check_compare(c, "sdfed.singular_values", sigma, want_sigma, 1, S_s, KIND_MODEL_FREE);
        sdfed_projector_matrix(&R, dense);
        check_compare(c, "sdfed.R", dense, want_R, W, W, KIND_MODEL_FREE);
    }

    sdfed_batch batch = {.features = img, .labels = labels, .n = B};
    sdfed_objective_config cfg = sdfed_objective_defaults();
    cfg.gamma = gamma[0];
    sdfed_losses losses;
    float *grad_s = sdfed_arena_floats(&c->arena, (size_t)S_s * W),
          *grad_l = sdfed_arena_floats(&c->arena, (size_t)S_l * W);
    if (!grad_s || !grad_l ||
        sdfed_objective_eval(&c->m->clip, c->k, &cls, Gs, S_s, Gc, S_l, &batch, &cfg, &losses, grad_s, grad_l, NULL,
                             &c->arena, &err)) {
        check_report_error(c, "sdfed.loss_total", &err);
    } else {
        /* stretch and separation are judged against the scale of what they
         * are made of (see check_reference.h); scale 0 means their own value */
        const struct {
            const char *name;
            double value, scale;
            const char *scale_name;
        } values[] = {{"sdfed.loss_ce_local", losses.ce_local, 0, NULL},
                      {"sdfed.loss_ce_global", losses.ce_global, 0, NULL},
                      {"sdfed.loss_stretch", losses.stretch, 1.0 / c->m->clip.cfg.embed_dim, "(1/D)"},
                      {"sdfed.loss_separation", losses.separation, gamma[0], "gamma"},
                      {"sdfed.loss_total", losses.total, 0, NULL}};
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
            const float *want = check_load(c, values[i].name, 1, 0, &err);
            float got = (float)values[i].value;
            if (!want)
                check_report_error(c, values[i].name, &err);
            else if (values[i].scale > 0)
                check_compare_scaled_loss(c, values[i].name, got, *want, values[i].scale, values[i].scale_name);
            else
                check_compare(c, values[i].name, &got, want, 1, 1, KIND_LOSS);
        }
        const float *want_s = check_load(c, "sdfed.grad_Gs", (size_t)S_s * W, 0, &err);
        const float *want_l = want_s ? check_load(c, "sdfed.grad_Gc", (size_t)S_l * W, 0, &err) : NULL;
        if (want_l) {
            check_compare(c, "sdfed.grad_Gs", grad_s, want_s, 1, S_s * W, KIND_GRADIENT);
            check_compare(c, "sdfed.grad_Gc", grad_l, want_l, 1, S_l * W, KIND_GRADIENT);
        } else {
            check_report_error(c, "sdfed.grad_Gs", &err);
        }
    }
    check_terms(c, &(term_point){.cls = &cls, .Gs = Gs, .Gc = Gc, .S_s = S_s, .S_l = S_l, .batch = &batch}, gamma[0]);
    sdfed_classes_free(&cls);
}
