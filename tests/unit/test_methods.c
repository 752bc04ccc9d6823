/* The methods behind sdfed's comparisons (argv[1]: a mini-vit GGUF):
 *  - every method initialises, trains (the loss on a fixed batch falls over
 *    a few steps) and gives finite class features;
 *  - FedOT's and PromptFolio's gradients against central differences
 *    (along the gradient, as in test_step.c), FedOT's Q orthogonal;
 *  - FedOTP's loss against the cross-entropy of transport scores taken
 *    here, and its gradients against central differences of that loss with
 *    every plan held at its value (FedOTP's no_grad);
 *  - saving and reloading a client's parameters gives the same bits and the
 *    same predictions; damaged files are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clip/image_encoder.h"
#include "clip_fixture.h"
#include "method/fedot.h"
#include "method/fedotp.h"
#include "method/methods_io.h"
#include "text/tokenizer.h"

enum { B = 8, C = 5 };
static sdfed_clip_model model;
static sdfed_classes classes;
static int embed_dim, patch_count; /* the model's, and patches per image */
static float image[B * 64];        /* pooled features */
static float *patches;             /* (B, patch_count, embed_dim) unit rows: what fedotp reads */
static int32_t labels[B] = {0, 1, 2, 3, 4, 0, 2, 4};

/* the batch a method reads */
static sdfed_batch batch_for(int method) {
    return (sdfed_batch){.features = sdfed_method_reads_patches(method) ? patches : image, .labels = labels, .n = B};
}

static double loss_of(const sdfed_method_config *cfg, const sdfed_method_params *p, const sdfed_kernels *k) {
    /* the loss at p, without changing it: evaluate on a copy with lr -> 0 */
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_losses l = {0};
    sdfed_batch batch = batch_for(cfg->method);
    size_t ng = (size_t)p->global_rows * p->width, nl = (size_t)p->local_rows * p->width;
    sdfed_method_params copy = *p;
    copy.global = malloc(sizeof(float) * (ng + 1));
    copy.local = malloc(sizeof(float) * (nl + 1));
    copy.global_momentum = copy.local_momentum = NULL;
    memcpy(copy.global, p->global, sizeof(float) * ng);
    memcpy(copy.local, p->local, sizeof(float) * nl);
    sdfed_method_config probe = *cfg;
    probe.sgd = (sdfed_sgd){.lr = 1e-30f, .momentum = 0.0f, .weight_decay = 0.0f};
    sdfed_method_step(&probe, &model, k, &classes, &copy, &batch, &l, NULL, &arena, NULL);
    free(copy.global);
    free(copy.local);
    sdfed_arena_free(&arena);
    return l.total;
}

static void test_training(const sdfed_kernels *k) {
    for (int method = 0; method < SDFED_METHOD_COUNT; method++) {
        sdfed_method_config cfg = sdfed_method_defaults(method);
        cfg.sgd.lr = 0.05f;
        sdfed_method_params p;
        sdfed_rng rng;
        sdfed_rng_seed(&rng, 1 + (uint64_t)method);
        sdfed_arena arena;
        sdfed_arena_init(&arena);
        sdfed_error err = {0};
        const char *name = sdfed_method_name(method);
        CHECK(sdfed_method_params_init(&p, &cfg, &model, k, &classes, &rng, &arena, &err) == SDFED_OK, "%s init: %s",
              name, err.message);
        CHECK(sdfed_method_from_name(name) == method, "%s: name round trip", name);
        sdfed_classifier clf;
        CHECK(sdfed_method_classifier(&cfg, &model, k, &classes, &p, &clf, &arena, &err) == SDFED_OK,
              "%s classifier: %s", name, err.message);
        int finite = 1, per_class = clf.patches ? SDFED_FEDOTP_PROMPTS * embed_dim : embed_dim;
        for (int i = 0; i < C * per_class; i++) finite &= isfinite(clf.feats[i]);
        CHECK(finite, "%s: class features are finite", name);
        CHECK(clf.patches == (method == SDFED_METHOD_FEDOTP ? patch_count : 0) &&
                  sdfed_method_feature_size(method, &model.cfg) == (clf.patches ? patch_count * embed_dim : embed_dim),
              "%s reads %s", name, clf.patches ? "patch features" : "the pooled feature");
        if (method == SDFED_METHOD_ZEROSHOT) {
            sdfed_batch batch = batch_for(method);
            sdfed_losses l;
            CHECK(sdfed_method_step(&cfg, &model, k, &classes, &p, &batch, &l, NULL, &arena, &err) == SDFED_ERR_ARG,
                  "zeroshot refuses to train");
        } else {
            double before = loss_of(&cfg, &p, k);
            sdfed_batch batch = batch_for(method);
            for (int s = 0; s < 10; s++) {
                sdfed_losses l;
                sdfed_arena_reset(&arena);
                if (sdfed_method_step(&cfg, &model, k, &classes, &p, &batch, &l, NULL, &arena, &err)) break;
            }
            double after = loss_of(&cfg, &p, k);
            CHECK(after < before, "%s (%s): 10 steps lower the loss on their batch (%.4f -> %.4f) %s", name, k->name,
                  before, after, err.message);
        }
        sdfed_method_params_free(&p);
        sdfed_arena_free(&arena);
    }
}

/* derivative of f along the unit gradient vs |gradient| */
static void check_directional(const char *what, double (*f)(const float *x, void *ctx), void *ctx, float *x,
                              const float *g, size_t n, double h) {
    double norm = 0;
    for (size_t i = 0; i < n; i++) norm += (double)g[i] * g[i];
    norm = sqrt(norm);
    float *y = malloc(sizeof *y * n);
    double L[2];
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < n; i++) y[i] = (float)(x[i] + (side ? -h : h) * g[i] / norm);
        L[side] = f(y, ctx);
    }
    double numeric = (L[0] - L[1]) / (2 * h);
    CHECK(fabs(numeric - norm) < 2e-3 * norm, "%s: derivative along the gradient %.6f, |grad| %.6f", what, numeric,
          norm);
    free(y);
}

typedef struct fedot_ctx {
    int which; /* 0: W varies, 1: A varies */
    const float *W, *A;
} fedot_ctx;

static double fedot_loss(const float *x, void *p) {
    fedot_ctx *c = p;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_losses l;
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_fedot_eval(c->which ? c->W : x, c->which ? x : c->A, C, embed_dim, 14.0f, &batch, &l, NULL, NULL, &arena,
                     NULL);
    sdfed_arena_free(&arena);
    return l.total;
}

static void test_fedot(void) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 9);
    float *W = malloc(sizeof(float) * C * embed_dim), *A = malloc(sizeof(float) * embed_dim * embed_dim);
    float *gW = malloc(sizeof(float) * C * embed_dim), *gA = malloc(sizeof(float) * embed_dim * embed_dim),
          *Q = malloc(sizeof(float) * embed_dim * embed_dim);
    for (int i = 0; i < C * embed_dim; i++) W[i] = (float)sdfed_rng_normal(&rng);
    for (int i = 0; i < embed_dim; i++)
        for (int j = 0; j <= i; j++) {
            float v = i == j ? 0.0f : (float)(0.1 * sdfed_rng_normal(&rng));
            A[i * embed_dim + j] = v;
            A[j * embed_dim + i] = -v;
        }
    sdfed_error err = {0};
    CHECK(sdfed_cayley(A, embed_dim, Q, &arena, &err) == SDFED_OK, "cayley: %s", err.message);
    double orth = 0;
    for (int i = 0; i < embed_dim; i++)
        for (int j = 0; j < embed_dim; j++) {
            double s = 0;
            for (int t = 0; t < embed_dim; t++) s += (double)Q[i * embed_dim + t] * Q[j * embed_dim + t];
            orth = fmax(orth, fabs(s - (i == j)));
        }
    CHECK(orth < 1e-5, "the Cayley map of a skew matrix is orthogonal (%.2e)", orth);
    sdfed_losses l;
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    CHECK(sdfed_fedot_eval(W, A, C, embed_dim, 14.0f, &batch, &l, gW, gA, &arena, &err) == SDFED_OK, "fedot: %s",
          err.message);
    int skew = 1;
    for (int i = 0; i < embed_dim; i++)
        for (int j = 0; j < embed_dim; j++) skew &= gA[i * embed_dim + j] == -gA[j * embed_dim + i];
    CHECK(skew, "the transform's gradient is skew-symmetric");
    fedot_ctx cw = {.which = 0, .W = W, .A = A}, ca = {1, W, A};
    check_directional("fedot classifier", fedot_loss, &cw, W, gW, (size_t)C * embed_dim, 1e-2);
    check_directional("fedot transform", fedot_loss, &ca, A, gA, (size_t)embed_dim * embed_dim, 1e-2);
    free(W);
    free(A);
    free(gW);
    free(gA);
    free(Q);
    sdfed_arena_free(&arena);
}

typedef struct folio_ctx {
    const sdfed_kernels *k;
    int which;
    const float *G, *L;
    int S_g, S_l;
} folio_ctx;

static double folio_loss(const float *x, void *p) {
    folio_ctx *c = p;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_losses l;
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_promptfolio_eval(&model, c->k, &classes, c->which ? c->G : x, c->S_g, c->which ? x : c->L, c->S_l, 0.2f,
                           &batch, &l, NULL, NULL, &arena, NULL);
    sdfed_arena_free(&arena);
    return l.total;
}

/* A prompt of `rows` context vectors of `width` values, each 0.5 times a
 * normal draw of rng (allocated). */
static float *random_prompt(sdfed_rng *rng, int rows, int width) {
    float *p = malloc(sizeof(float) * rows * width);
    for (int i = 0; i < rows * width; i++) p[i] = (float)(0.5 * sdfed_rng_normal(rng));
    return p;
}

static void test_promptfolio(const sdfed_kernels *k) {
    int W = model.cfg.text_width, S_g = 4, S_l = 6;
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 10);
    float *G = random_prompt(&rng, S_g, W), *L = random_prompt(&rng, S_l, W);
    float *gG = malloc(sizeof(float) * S_g * W), *gL = malloc(sizeof(float) * S_l * W);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_losses l;
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_error err = {0};
    CHECK(sdfed_promptfolio_eval(&model, k, &classes, G, S_g, L, S_l, 0.2f, &batch, &l, gG, gL, &arena, &err) ==
              SDFED_OK,
          "promptfolio: %s", err.message);
    folio_ctx cg = {.k = k, .which = 0, .G = G, .L = L, .S_g = S_g, .S_l = S_l}, cl = {k, 1, G, L, S_g, S_l};
    char what[64];
    snprintf(what, sizeof what, "%s promptfolio global", k->name);
    check_directional(what, folio_loss, &cg, G, gG, (size_t)S_g * W, 1e-2);
    snprintf(what, sizeof what, "%s promptfolio local", k->name);
    check_directional(what, folio_loss, &cl, L, gL, (size_t)S_l * W, 1e-2);
    free(G);
    free(L);
    free(gG);
    free(gL);
    sdfed_arena_free(&arena);
}

typedef struct fedotp_ctx {
    const sdfed_kernels *k;
    int which; /* 0: G varies, 1: L varies */
    const float *G, *L;
    int S_g, S_l;
    const float *plans; /* (B, C, patch_count, 2) held constant */
} fedotp_ctx;

/* FedOTP's loss computed here: mean over the batch of the cross-entropy of
 * logit_bc = exp(logit_scale) sum_mn T_bcmn x_bm . y_cn, in double, with the
 * given plans */
static double fedotp_frozen_loss(const float *x, void *p) {
    fedotp_ctx *c = p;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float *y = malloc(sizeof(float) * C * SDFED_FEDOTP_PROMPTS * embed_dim);
    sdfed_fedotp_class_prompts(&model, c->k, &classes, c->which ? c->G : x, c->S_g, c->which ? x : c->L, c->S_l, y,
                               &arena, NULL);
    double loss = 0, scale = exp(model.logit_scale);
    for (int b = 0; b < B; b++) {
        double logit[C], top = -INFINITY, sum = 0;
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int m = 0; m < patch_count; m++)
                for (int n = 0; n < SDFED_FEDOTP_PROMPTS; n++) {
                    double dot = 0;
                    for (int d = 0; d < embed_dim; d++)
                        dot += (double)patches[((size_t)b * patch_count + m) * embed_dim + d] *
                               y[((size_t)k * SDFED_FEDOTP_PROMPTS + n) * embed_dim + d];
                    s += c->plans[(((size_t)b * C + k) * patch_count + m) * SDFED_FEDOTP_PROMPTS + n] * dot;
                }
            logit[k] = scale * s;
            top = fmax(top, logit[k]);
        }
        for (int k = 0; k < C; k++) sum += exp(logit[k] - top);
        loss += top + log(sum) - logit[labels[b]];
    }
    free(y);
    sdfed_arena_free(&arena);
    return loss / B;
}

static void test_fedotp(const sdfed_kernels *k) {
    int W = model.cfg.text_width, S_g = 4, S_l = 6;
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 12);
    float *G = random_prompt(&rng, S_g, W), *L = random_prompt(&rng, S_l, W);
    float *gG = malloc(sizeof(float) * S_g * W), *gL = malloc(sizeof(float) * S_l * W);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_losses l;
    sdfed_batch batch = {.features = patches, .labels = labels, .n = B};
    sdfed_error err = {0};
    sdfed_transport t = sdfed_transport_defaults();
    CHECK(sdfed_fedotp_eval(&model, k, &classes, &t, G, S_g, L, S_l, &batch, &l, gG, gL, &arena, &err) == SDFED_OK,
          "fedotp: %s", err.message);
    /* the plans at this point, every one from the transport of its cosines */
    float *y = malloc(sizeof(float) * C * SDFED_FEDOTP_PROMPTS * embed_dim), *logits = malloc(sizeof(float) * B * C);
    float *plans = malloc(sizeof(float) * B * C * patch_count * SDFED_FEDOTP_PROMPTS);
    sdfed_fedotp_class_prompts(&model, k, &classes, G, S_g, L, S_l, y, &arena, &err);
    CHECK(sdfed_fedotp_logits(&t, y, C, embed_dim, patches, B, patch_count, expf(model.logit_scale), logits, plans,
                              &arena, &err) == SDFED_OK,
          "fedotp logits: %s", err.message);
    fedotp_ctx cg = {.k = k, .which = 0, .G = G, .L = L, .S_g = S_g, .S_l = S_l, .plans = plans},
               cl = {k, 1, G, L, S_g, S_l, plans};
    double here = fedotp_frozen_loss(G, &cg);
    CHECK(fabs(here - l.total) < 1e-5 * fabs(here), "%s fedotp: the loss %.7f is the CE of transport scores %.7f",
          k->name, l.total, here);
    /* the partial plan moves mass 0.8: each column sums to 0.4 */
    double worst = 0;
    for (int p = 0; p < B * C; p++)
        for (int n = 0; n < SDFED_FEDOTP_PROMPTS; n++) {
            double col = 0;
            for (int m = 0; m < patch_count; m++)
                col += plans[((size_t)p * patch_count + m) * SDFED_FEDOTP_PROMPTS + n];
            worst = fmax(worst, fabs(col - t.mass / SDFED_FEDOTP_PROMPTS));
        }
    CHECK(worst < 1e-5, "%s fedotp: every plan gives each prompt mass/2 (worst %.2e)", k->name, worst);
    char what[64];
    snprintf(what, sizeof what, "%s fedotp global (plans held)", k->name);
    check_directional(what, fedotp_frozen_loss, &cg, G, gG, (size_t)S_g * W, 1e-2);
    snprintf(what, sizeof what, "%s fedotp local (plans held)", k->name);
    check_directional(what, fedotp_frozen_loss, &cl, L, gL, (size_t)S_l * W, 1e-2);
    free(G);
    free(L);
    free(gG);
    free(gL);
    free(y);
    free(logits);
    free(plans);
    sdfed_arena_free(&arena);
}

static void test_save_load(const sdfed_kernels *k) {
    sdfed_method_config cfg = sdfed_method_defaults(SDFED_METHOD_SDFED);
    cfg.sgd.momentum = 0.9f;
    sdfed_method_params p, q;
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 11);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    sdfed_method_params_init(&p, &cfg, &model, k, &classes, &rng, &arena, &err);
    sdfed_batch batch = {.features = image, .labels = labels, .n = B};
    sdfed_losses l;
    for (int s = 0; s < 3; s++) sdfed_method_step(&cfg, &model, k, &classes, &p, &batch, &l, NULL, &arena, &err);
    sdfed_buffer buf = {0};
    sdfed_sink sink = sdfed_buffer_sink(&buf);
    CHECK(sdfed_method_params_save(cfg.method, &p, &sink, &err) == SDFED_OK, "save: %s", err.message);
    int method = -1;
    CHECK(sdfed_method_params_load(buf.data, buf.size, &method, &q, &err) == SDFED_OK, "load: %s", err.message);
    size_t ng = (size_t)p.global_rows * p.width, nl = (size_t)p.local_rows * p.width;
    CHECK(method == cfg.method && q.width == p.width && q.global_rows == p.global_rows &&
              q.local_rows == p.local_rows && !memcmp(q.global, p.global, ng * 4) &&
              !memcmp(q.local, p.local, nl * 4) && q.global_momentum &&
              !memcmp(q.global_momentum, p.global_momentum, ng * 4) &&
              !memcmp(q.local_momentum, p.local_momentum, nl * 4),
          "a reloaded client has the same bits");
    sdfed_classifier fp, fq;
    int32_t pp[B], pq[B];
    sdfed_method_classifier(&cfg, &model, k, &classes, &p, &fp, &arena, &err);
    sdfed_method_classifier(&cfg, &model, k, &classes, &q, &fq, &arena, &err);
    sdfed_classifier_predict(&fp, image, B, pp, &arena, &err);
    sdfed_classifier_predict(&fq, image, B, pq, &arena, &err);
    CHECK(!memcmp(fp.feats, fq.feats, sizeof(float) * C * embed_dim) && !memcmp(pp, pq, sizeof pp),
          "and the same predictions");
    /* damaged files are refused, never half-loaded */
    sdfed_method_params_free(&q);
    buf.data[buf.size / 2] ^= 0xff;
    int rc = sdfed_method_params_load(buf.data, buf.size - 100, &method, &q, &err);
    CHECK(rc != SDFED_OK && q.global == NULL, "a truncated file is refused: %s", err.message);
    sdfed_method_params_free(&q);
    sdfed_method_params_free(&p);
    sdfed_buffer_free(&buf);
    sdfed_arena_free(&arena);
}

int main(int argc, char **argv) {
    sdfed_tokenizer tok;
    unsigned char *data = load_clip_fixture(argc > 1 ? argv[1] : NULL, &model, &tok, "test_methods MODEL.gguf");
    if (!data) return 2;
    sdfed_error err = {0};
    embed_dim = model.cfg.embed_dim;
    const char *names[C] = {"t-shirt/top", "trouser", "pullover", "dress", "ankle boot"};
    CHECK(sdfed_classes_init(&classes, &tok, model.cfg.context_length, names, C, &err) == SDFED_OK, "classes: %s",
          err.message);
    /* classes from JSON, as the page and the reference give them */
    sdfed_classes from_json;
    const char *good = "[\"t-shirt/top\", \"trouser\", \"pullover\", \"dress\", \"ankle boot\"]";
    CHECK(sdfed_classes_init_json(&from_json, &tok, model.cfg.context_length, good, strlen(good), 5, &err) ==
                  SDFED_OK &&
              from_json.n_classes == C && from_json.first[C] == classes.first[C] &&
              !memcmp(from_json.ids, classes.ids, sizeof(int32_t) * (size_t)classes.first[C]),
          "classes from JSON equal the same names given directly: %s", err.message);
    sdfed_classes_free(&from_json);
    const char *bad[] = {"[]", "[\"a\", 3]", "{\"a\": \"b\"}", "[\"a\"", good};
    for (int i = 0; i < 5; i++) {
        sdfed_error e = {0};
        CHECK(sdfed_classes_init_json(&from_json, &tok, model.cfg.context_length, bad[i], strlen(bad[i]), 4, &e) !=
                      SDFED_OK &&
                  e.message[0],
              "classes JSON %s (at most 4) refused with a message: '%s'", bad[i], e.message);
    }
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 8);
    for (int b = 0; b < B; b++) {
        double n = 0;
        for (int d = 0; d < embed_dim; d++) n += pow(image[b * embed_dim + d] = (float)sdfed_rng_normal(&rng), 2);
        for (int d = 0; d < embed_dim; d++) image[b * embed_dim + d] /= (float)sqrt(n);
    }
    patch_count = sdfed_image_token_count(&model.cfg) - 1;
    patches = malloc(sizeof(float) * B * patch_count * embed_dim);
    for (int r = 0; r < B * patch_count; r++) {
        double n = 0;
        for (int d = 0; d < embed_dim; d++) n += pow(patches[r * embed_dim + d] = (float)sdfed_rng_normal(&rng), 2);
        for (int d = 0; d < embed_dim; d++) patches[r * embed_dim + d] /= (float)sqrt(n);
    }
    sdfed_method_config fedpha = sdfed_method_defaults(SDFED_METHOD_FEDPHA);
    CHECK(fedpha.objective.lambda == 0.2f && fedpha.objective.gamma == 1.0f && fedpha.objective.projector == 2,
          "FedPHA's constants");
    test_fedot();
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        test_training(*k);
        test_promptfolio(*k);
        test_fedotp(*k);
        test_save_load(*k);
    }
    free(patches);
    sdfed_classes_free(&classes);
    sdfed_tokenizer_free(&tok);
    sdfed_clip_free(&model);
    free(data);
    return check_report("test_methods");
}
