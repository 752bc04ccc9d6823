/* The SDFed objective and local step on a real model (argv[1], a mini-vit
 * GGUF), on every backend:
 *  - central differences of the whole objective along the gradient and on
 *    the largest coordinates, with R and f(G~_c) held constant as the method
 *    defines (h = 1e-2; float forward, differences in double): relative
 *    error <= 2e-3 along the gradient, <= 2e-2 per coordinate;
 *  - every projector mode;
 *  - SGD, momentum and weight decay with PyTorch's semantics, exactly;
 *  - NaN/Inf in inputs, and a non-finite update, fail with
 *    SDFED_ERR_NUMERIC and leave the prompts bit for bit as they were. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clip_fixture.h"
#include "method/methods.h"
#include "prompt/losses.h"
#include "prompt/projector.h"
#include "text/tokenizer.h"

static sdfed_clip_model model;
static sdfed_classes classes;
enum { S_S = 3, S_L = 6, B = 8, C = 5 };
static int text_width, embed_dim;
static float image[B * 64];
static int32_t labels[B] = {0, 1, 2, 3, 4, 0, 2, 4};

static double gauss(void) {
    double u = ((double)rand() + 1) / ((double)RAND_MAX + 2), v = ((double)rand() + 1) / ((double)RAND_MAX + 2);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static float *random_prompt(int S, double std) {
    float *p = malloc(sizeof *p * (size_t)S * text_width);
    for (int i = 0; i < S * text_width; i++) p[i] = (float)(std * gauss());
    return p;
}

/* The objective with the stretch target T = f(G~_c) held fixed, evaluated
 * with the same pieces as the core (this is what the gradient is of). */
typedef struct fixed_target {
    const sdfed_kernels *k;
    const float *target; /* (C, embed_dim) */
    float gamma;
    int stretch; /* SDFED_STRETCH_* */
} fixed_target;

static double objective_fixed(const fixed_target *ft, const float *Gs, const float *Gc) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float fs[C * 64], fc[C * 64], logits[B * C], probs[B * C], dist[C];
    sdfed_prompt_features(&model, ft->k, &classes, 2, (const float *const[]){Gs, Gc}, (int[]){S_S, S_L},
                          (float *const[]){fs, fc}, NULL, &arena, NULL);
    float scale = expf(model.logit_scale);
    double L = 0;
    sdfed_logits_forward(logits, image, fc, B, C, embed_dim, scale);
    L += sdfed_cross_entropy_forward(probs, logits, labels, B, C, NULL);
    sdfed_logits_forward(logits, image, fs, B, C, embed_dim, scale);
    L += sdfed_cross_entropy_forward(probs, logits, labels, B, C, NULL);
    L += sdfed_stretch_forward(fc, ft->target, C * embed_dim, ft->stretch == SDFED_STRETCH_SUM);
    L += sdfed_separation_forward(dist, fc, fs, C, embed_dim, ft->gamma);
    sdfed_arena_free(&arena);
    return L;
}

static void test_gradient(const sdfed_kernels *k, int projector, int stretch) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    float *Gs = random_prompt(S_S, 0.5), *Gc = random_prompt(S_L, 0.5);
    float *gs = malloc(sizeof *gs * S_S * text_width), *gc = malloc(sizeof *gc * S_L * text_width);
    sdfed_objective_config cfg = sdfed_objective_defaults();
    cfg.projector = projector;
    cfg.stretch = stretch;
    cfg.lambda = projector == SDFED_PROJECTOR_ROWSPACE ? 0.4f : 0.6f;
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_losses losses;

    /* gamma between the distances, away from the hinge's kink */
    float fs[C * 64], fc[C * 64], dist[C];
    sdfed_prompt_features(&model, k, &classes, 2, (const float *const[]){Gs, Gc}, (int[]){S_S, S_L},
                          (float *const[]){fs, fc}, NULL, &arena, NULL);
    sdfed_separation_forward(dist, fc, fs, C, embed_dim, 0.0f);
    float lo = INFINITY, hi = 0;
    for (int c = 0; c < C; c++) {
        lo = fminf(lo, dist[c]);
        hi = fmaxf(hi, dist[c]);
    }
    cfg.gamma = 0.5f * (lo + hi);
    int rc =
        sdfed_objective_eval(&model, k, &classes, Gs, S_S, Gc, S_L, &batch, &cfg, &losses, gs, gc, NULL, &arena, &err);
    CHECK(rc == SDFED_OK, "objective: %s", err.message);
    CHECK(losses.stretch > 0 && losses.separation > 0 && losses.ce_local > 0 && losses.ce_global > 0,
          "every term is active (%g %g %g %g)", losses.ce_local, losses.ce_global, losses.stretch, losses.separation);

    /* the stop-gradient target f(G_c R) */
    sdfed_projector R;
    float *refined = malloc(sizeof *refined * S_L * text_width), target[C * 64];
    sdfed_projector_build(Gs, S_S, text_width, projector, cfg.lambda, &R, &arena, &err);
    sdfed_projector_apply(&R, k, Gc, S_L, refined, &arena, &err);
    sdfed_prompt_features(&model, k, &classes, 1, (const float *const[]){refined}, (int[]){S_L},
                          (float *const[]){target}, NULL, &arena, NULL);
    fixed_target ft = {.k = k, .target = target, .gamma = cfg.gamma, .stretch = stretch};
    double L0 = objective_fixed(&ft, Gs, Gc);
    CHECK(fabs(L0 - losses.total) < 1e-5 * losses.total, "%s: the fixed-target objective is the core's (%g vs %g)",
          k->name, L0, losses.total);

    /* along the gradient: d/dh L(x + h g/|g|) = |g| */
    double norm = 0;
    for (int i = 0; i < S_S * text_width; i++) norm += (double)gs[i] * gs[i];
    for (int i = 0; i < S_L * text_width; i++) norm += (double)gc[i] * gc[i];
    norm = sqrt(norm);
    double h = 1e-2;
    float *Gs2 = malloc(sizeof *Gs2 * S_S * text_width), *Gc2 = malloc(sizeof *Gc2 * S_L * text_width);
    double L[2];
    for (int side = 0; side < 2; side++) {
        double step = side ? -h : h;
        for (int i = 0; i < S_S * text_width; i++) Gs2[i] = (float)(Gs[i] + step * gs[i] / norm);
        for (int i = 0; i < S_L * text_width; i++) Gc2[i] = (float)(Gc[i] + step * gc[i] / norm);
        L[side] = objective_fixed(&ft, Gs2, Gc2);
    }
    double numeric = (L[0] - L[1]) / (2 * h);
    CHECK(fabs(numeric - norm) < 2e-3 * norm, "%s %s, %s stretch: derivative along the gradient %.6f, |grad| %.6f",
          k->name, sdfed_projector_name(projector), sdfed_stretch_name(stretch), numeric, norm);

    /* the 6 largest coordinates of each prompt's gradient */
    for (int which = 0; which < 2; which++) {
        float *P = which ? Gc : Gs, *g = which ? gc : gs;
        int n = (which ? S_L : S_S) * text_width, worst_ok = 1;
        char used[1152] = {0};
        for (int t = 0; t < 6; t++) {
            int best = -1;
            for (int i = 0; i < n; i++)
                if (!used[i] && (best < 0 || fabsf(g[i]) > fabsf(g[best]))) best = i;
            used[best] = 1;
            float keep = P[best];
            P[best] = (float)(keep + h);
            double up = objective_fixed(&ft, Gs, Gc);
            P[best] = (float)(keep - h);
            double down = objective_fixed(&ft, Gs, Gc);
            P[best] = keep;
            double num = (up - down) / (2 * h);
            if (fabs(num - g[best]) > 2e-2 * fabs(g[best])) {
                worst_ok = 0;
                fprintf(stderr, "  %s coordinate %d: analytic %.6f numeric %.6f\n", which ? "G_c" : "G_s", best,
                        g[best], num);
            }
        }
        CHECK(worst_ok, "%s %s, %s stretch: largest coordinates of grad %s match central differences", k->name,
              sdfed_projector_name(projector), sdfed_stretch_name(stretch), which ? "G_c" : "G_s");
    }
    sdfed_arena_free(&arena);
    free(Gs);
    free(Gc);
    free(gs);
    free(gc);
    free(refined);
    free(Gs2);
    free(Gc2);
}

/* The SDFed local step as clients run it (sdfed_method_step), with the
 * default objective and these SGD settings. */
static int local_step(const sdfed_kernels *k, sdfed_method_params *p, const sdfed_batch *batch, const sdfed_sgd *sgd,
                      sdfed_losses *losses, sdfed_arena *arena, sdfed_error *err) {
    sdfed_method_config cfg = sdfed_method_defaults(SDFED_METHOD_SDFED);
    cfg.sgd = *sgd;
    return sdfed_method_step(&cfg, &model, k, &classes, p, batch, losses, NULL, arena, err);
}

static void test_sgd(const sdfed_kernels *k) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    float *Gs = random_prompt(S_S, 0.02), *Gc = random_prompt(S_L, 0.02);
    float *ms = calloc((size_t)S_S * text_width, sizeof *ms), *mc = calloc((size_t)S_L * text_width, sizeof *mc);
    float *g1s = malloc(sizeof *g1s * S_S * text_width), *g1c = malloc(sizeof *g1c * S_L * text_width);
    float *g2s = malloc(sizeof *g2s * S_S * text_width), *g2c = malloc(sizeof *g2c * S_L * text_width);
    float *Gs0 = malloc(sizeof *Gs0 * S_S * text_width), *Gc0 = malloc(sizeof *Gc0 * S_L * text_width);
    float *Gs1 = malloc(sizeof *Gs1 * S_S * text_width), *Gc1 = malloc(sizeof *Gc1 * S_L * text_width);
    memcpy(Gs0, Gs, sizeof *Gs * S_S * text_width);
    memcpy(Gc0, Gc, sizeof *Gc * S_L * text_width);
    sdfed_objective_config cfg = sdfed_objective_defaults();
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_sgd sgd = {.lr = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f};
    sdfed_method_params p = {.width = text_width,
                             .global_rows = S_S,
                             .local_rows = S_L,
                             .global = Gs,
                             .local = Gc,
                             .global_momentum = ms,
                             .local_momentum = mc};
    sdfed_losses l1, l2;

    sdfed_objective_eval(&model, k, &classes, Gs, S_S, Gc, S_L, &batch, &cfg, &l1, g1s, g1c, NULL, &arena, &err);
    CHECK(local_step(k, &p, &batch, &sgd, &l2, &arena, &err) == SDFED_OK, "step: %s", err.message);
    CHECK(l1.total == l2.total, "the step reports the objective at the old prompts");
    int exact = 1;
    for (int i = 0; i < S_S * text_width; i++) {
        float g = g1s[i] + sgd.weight_decay * Gs0[i];
        exact &= ms[i] == g && Gs[i] == Gs0[i] - sgd.lr * g;
    }
    for (int i = 0; i < S_L * text_width; i++) {
        float g = g1c[i] + sgd.weight_decay * Gc0[i];
        exact &= mc[i] == g && Gc[i] == Gc0[i] - sgd.lr * g;
    }
    CHECK(exact, "%s: first step: buf = grad + wd p, p -= lr buf (bit for bit)", k->name);
    memcpy(Gs1, Gs, sizeof *Gs * S_S * text_width);
    memcpy(Gc1, Gc, sizeof *Gc * S_L * text_width);
    sdfed_arena_reset(&arena);
    sdfed_objective_eval(&model, k, &classes, Gs, S_S, Gc, S_L, &batch, &cfg, &l1, g2s, g2c, NULL, &arena, &err);
    float *ms1 = malloc(sizeof *ms1 * S_S * text_width);
    memcpy(ms1, ms, sizeof *ms * S_S * text_width);
    local_step(k, &p, &batch, &sgd, &l2, &arena, &err);
    exact = 1;
    for (int i = 0; i < S_S * text_width; i++) {
        float buf = sgd.momentum * ms1[i] + (g2s[i] + sgd.weight_decay * Gs1[i]);
        exact &= ms[i] == buf && Gs[i] == Gs1[i] - sgd.lr * buf;
    }
    CHECK(exact, "%s: second step: buf = momentum buf + g (bit for bit)", k->name);
    CHECK(l2.total < l1.total + 1e-3, "the loss does not jump up after a small step (%g -> %g)", l1.total, l2.total);

    /* a plain step without momentum needs no buffers */
    sdfed_sgd plain = {.lr = 0.01f, .momentum = 0.0f, .weight_decay = 0.0f};
    sdfed_method_params q = {.width = text_width,
                             .global_rows = S_S,
                             .local_rows = S_L,
                             .global = Gs,
                             .local = Gc,
                             .global_momentum = NULL,
                             .local_momentum = NULL};
    CHECK(local_step(k, &q, &batch, &plain, &l2, &arena, &err) == SDFED_OK, "step without momentum: %s", err.message);
    sdfed_arena_free(&arena);
    free(Gs);
    free(Gc);
    free(ms);
    free(mc);
    free(g1s);
    free(g1c);
    free(g2s);
    free(g2c);
    free(Gs0);
    free(Gc0);
    free(Gs1);
    free(Gc1);
    free(ms1);
}

/* A failing step must leave every buffer bit for bit unchanged. */
static void expect_refused(const sdfed_kernels *k, sdfed_method_params *p, const sdfed_batch *batch,
                           const sdfed_sgd *sgd, int want_rc, const char *what) {
    size_t ns = (size_t)S_S * text_width * sizeof(float), nl = (size_t)S_L * text_width * sizeof(float);
    void *copy[4] = {malloc(ns), malloc(nl), malloc(ns), malloc(nl)};
    memcpy(copy[0], p->global, ns);
    memcpy(copy[1], p->local, nl);
    memcpy(copy[2], p->global_momentum, ns);
    memcpy(copy[3], p->local_momentum, nl);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_losses losses;
    int rc = local_step(k, p, batch, sgd, &losses, &arena, &err);
    CHECK(rc == want_rc && err.message[0], "%s: %s gives status %d '%s'", k->name, what, rc, err.message);
    CHECK(!memcmp(copy[0], p->global, ns) && !memcmp(copy[1], p->local, nl) &&
              !memcmp(copy[2], p->global_momentum, ns) && !memcmp(copy[3], p->local_momentum, nl),
          "%s: %s leaves the prompts and momentum unchanged", k->name, what);
    sdfed_arena_free(&arena);
    for (int i = 0; i < 4; i++) free(copy[i]);
}

static void test_refusals(const sdfed_kernels *k) {
    float *Gs = random_prompt(S_S, 0.02), *Gc = random_prompt(S_L, 0.02);
    float *ms = random_prompt(S_S, 0.01), *mc = random_prompt(S_L, 0.01);
    sdfed_method_params p = {.width = text_width,
                             .global_rows = S_S,
                             .local_rows = S_L,
                             .global = Gs,
                             .local = Gc,
                             .global_momentum = ms,
                             .local_momentum = mc};
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_sgd sgd = {.lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.0f};

    float keep = Gs[7];
    Gs[7] = NAN;
    expect_refused(k, &p, &batch, &sgd, SDFED_ERR_NUMERIC, "NaN in G_s");
    Gs[7] = keep;
    keep = Gc[3];
    Gc[3] = INFINITY;
    expect_refused(k, &p, &batch, &sgd, SDFED_ERR_NUMERIC, "Inf in G_c");
    Gc[3] = keep;
    float bad_image[B * 64];
    memcpy(bad_image, image, sizeof bad_image);
    bad_image[5] = NAN;
    sdfed_batch nan_batch = {.features = bad_image, .labels = labels, .n = B};
    expect_refused(k, &p, &nan_batch, &sgd, SDFED_ERR_NUMERIC, "NaN in image features");
    int32_t bad_labels[B];
    memcpy(bad_labels, labels, sizeof bad_labels);
    bad_labels[2] = C;
    sdfed_batch label_batch = {.features = image, .labels = bad_labels, .n = B};
    expect_refused(k, &p, &label_batch, &sgd, SDFED_ERR_ARG, "a label outside the classes");
    /* finite prompts whose rows overflow a float sum inside the encoder's
     * LayerNorm: the loss is not finite */
    float *huge = random_prompt(S_L, 1.0);
    for (int i = 0; i < S_L * text_width; i++) huge[i] = 3e38f;
    sdfed_method_params big = {.width = text_width,
                               .global_rows = S_S,
                               .local_rows = S_L,
                               .global = Gs,
                               .local = huge,
                               .global_momentum = ms,
                               .local_momentum = mc};
    expect_refused(k, &big, &batch, &sgd, SDFED_ERR_NUMERIC, "a non-finite loss");
    /* a finite loss whose update overflows */
    sdfed_sgd wild = {.lr = 3e38f, .momentum = 0.9f, .weight_decay = 0.0f};
    expect_refused(k, &p, &batch, &wild, SDFED_ERR_NUMERIC, "an update that overflows");
    sdfed_sgd bad = {.lr = -1.0f, .momentum = 0.9f, .weight_decay = 0.0f};
    expect_refused(k, &p, &batch, &bad, SDFED_ERR_ARG, "a negative learning rate");
    free(Gs);
    free(Gc);
    free(ms);
    free(mc);
    free(huge);
}

static void test_predict(const sdfed_kernels *k) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float *Gc = random_prompt(S_L, 0.02), f[C * 64], logits[B * C];
    int32_t pred[B];
    sdfed_prompt_features(&model, k, &classes, 1, (const float *const[]){Gc}, (int[]){S_L}, (float *const[]){f}, NULL,
                          &arena, NULL);
    sdfed_predict(f, C, embed_dim, image, B, pred);
    sdfed_logits_forward(logits, image, f, B, C, embed_dim, expf(model.logit_scale));
    int same = 1;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) same &= logits[b * C + c] <= logits[b * C + pred[b]];
    CHECK(same, "%s: predictions are the argmax of the local prompt's logits", k->name);
    sdfed_arena_free(&arena);
    free(Gc);
}

int main(int argc, char **argv) {
    sdfed_tokenizer tok;
    unsigned char *data = load_clip_fixture(argc > 1 ? argv[1] : NULL, &model, &tok, "test_step MODEL.gguf");
    if (!data) return 2;
    sdfed_error err = {0};
    text_width = model.cfg.text_width;
    embed_dim = model.cfg.embed_dim;
    const char *names[C] = {"t-shirt/top", "trouser", "pullover", "dress", "ankle boot"};
    CHECK(sdfed_classes_init(&classes, &tok, model.cfg.context_length, names, C, &err) == SDFED_OK, "classes");
    srand(7);
    for (int b = 0; b < B; b++) {
        double n = 0;
        for (int d = 0; d < embed_dim; d++) n += pow(image[b * embed_dim + d] = (float)gauss(), 2);
        for (int d = 0; d < embed_dim; d++) image[b * embed_dim + d] /= (float)sqrt(n);
    }
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        test_gradient(*k, SDFED_PROJECTOR_COMPLEMENT, SDFED_STRETCH_MEAN);
        test_gradient(*k, SDFED_PROJECTOR_PAPER, SDFED_STRETCH_MEAN);
        test_gradient(*k, SDFED_PROJECTOR_ROWSPACE, SDFED_STRETCH_MEAN);
        test_gradient(*k, SDFED_PROJECTOR_COMPLEMENT, SDFED_STRETCH_SUM);
        test_sgd(*k);
        test_refusals(*k);
        test_predict(*k);
    }
    sdfed_classes_free(&classes);
    sdfed_tokenizer_free(&tok);
    sdfed_clip_free(&model);
    free(data);
    return check_report("test_step");
}
