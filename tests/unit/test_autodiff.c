/* Finite-difference checks of every backward op. Each op's forward is also
 * written here in double precision; the test checks (1) that the core's
 * float forward computes that function (rel <= 1e-5) and (2) that the core's
 * float backward equals its derivative, by central differences in double
 * (h = 1e-6 relative, truncation error ~1e-12): rel <= 1e-4, where
 * rel = max |analytic - numeric| / max |numeric|. The loss of every check is
 * L = sum(w * out) with random w, so every output contributes. Ops that use
 * the kernels run on every backend of the build. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check.h"
#include "clip/clip_model.h"
#include "clip/layers.h"
#include "clip/transformer.h"
#include "kernels/kernels.h"
#include "prompt/losses.h"

static double drand_sym(void) { return (double)rand() / RAND_MAX * 2.0 - 1.0; }

static float *randf(size_t n, double scale) {
    float *x = malloc(sizeof *x * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * drand_sym());
    return x;
}

/* A scalar function of x (n doubles) for the numeric derivative. */
typedef double (*scalar_fn)(const double *x, void *ctx);

static double max_rel(const float *analytic, const double *numeric, size_t n) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs(analytic[i] - numeric[i]));
        ref = fmax(ref, fabs(numeric[i]));
    }
    return ref > 0 ? err / ref : err;
}

/* Central differences of f at x (float values, evaluated in double). */
static double *numeric_grad(scalar_fn f, void *ctx, const float *x, size_t n) {
    double *xd = malloc(sizeof *xd * n), *g = malloc(sizeof *g * n);
    for (size_t i = 0; i < n; i++) xd[i] = x[i];
    for (size_t i = 0; i < n; i++) {
        double h = 1e-6 * fmax(1.0, fabs(xd[i]));
        double keep = xd[i];
        xd[i] = keep + h;
        double up = f(xd, ctx);
        xd[i] = keep - h;
        double down = f(xd, ctx);
        xd[i] = keep;
        g[i] = (up - down) / (2 * h);
    }
    free(xd);
    return g;
}

static double weighted_sum(const double *out, const float *w, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += out[i] * w[i];
    return s;
}

static double forward_rel(const float *got, const double *want, size_t n) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs(got[i] - want[i]));
        ref = fmax(ref, fabs(want[i]));
    }
    return ref > 0 ? err / ref : err;
}

/* ---------------------------------------------------------------- layernorm */

typedef struct {
    int n, C;
    const float *w, *b, *wout;
    double *out;
} ln_ctx;

static void layernorm_d(double *out, const double *x, const float *w, const float *b, int n, int C) {
    for (int i = 0; i < n; i++) {
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[i * C + c];
        m /= C;
        for (int c = 0; c < C; c++) v += (x[i * C + c] - m) * (x[i * C + c] - m);
        v /= C;
        for (int c = 0; c < C; c++) out[i * C + c] = (x[i * C + c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
    }
}

static double ln_loss(const double *x, void *p) {
    ln_ctx *c = p;
    layernorm_d(c->out, x, c->w, c->b, c->n, c->C);
    return weighted_sum(c->out, c->wout, (size_t)c->n * c->C);
}

static void test_layernorm(void) {
    int n = 3, C = 24;
    float *x = randf((size_t)n * C, 2.0), *w = randf(C, 1.0), *b = randf(C, 0.5), *wout = randf((size_t)n * C, 1.0);
    float *out = malloc(sizeof *out * n * C), mean[3], rstd[3], *dx = calloc((size_t)n * C, sizeof *dx);
    double *ref = malloc(sizeof *ref * n * C), *xd = malloc(sizeof *xd * n * C);
    for (int i = 0; i < n * C; i++) xd[i] = x[i];
    sdfed_layernorm_forward(out, mean, rstd, x, w, b, n, C, 1e-5f);
    layernorm_d(ref, xd, w, b, n, C);
    CHECK(forward_rel(out, ref, (size_t)n * C) < 1e-5, "layernorm forward");
    sdfed_layernorm_backward(dx, wout, x, w, mean, rstd, n, C);
    ln_ctx ctx = {.n = n, .C = C, .w = w, .b = b, .wout = wout, .out = ref};
    double *g = numeric_grad(ln_loss, &ctx, x, (size_t)n * C);
    double rel = max_rel(dx, g, (size_t)n * C);
    CHECK(rel < 1e-4, "layernorm backward rel %.2e", rel);
    free(x);
    free(w);
    free(b);
    free(wout);
    free(out);
    free(dx);
    free(ref);
    free(xd);
    free(g);
}

/* LayerNorm over many rows at once (the layer takes several side by side)
 * gives each row the bits it has alone, and the double forward: every count
 * of rows up to 11 (groups and the rows past them), rows of only a part
 * vector, of whole vectors, and of both */
static void test_layernorm_rows(void) {
    const int widths[] = {5, 24, 61};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (int n = 1; n <= 11; n++) {
            int C = widths[wi];
            float *x = randf((size_t)n * C, 3.0), *w = randf(C, 1.0), *b = randf(C, 0.5);
            float *all = malloc(sizeof *all * n * C), *alone = malloc(sizeof *alone * n * C);
            float mean[11], rstd[11], mean1[11], rstd1[11];
            double *ref = malloc(sizeof *ref * n * C), *xd = malloc(sizeof *xd * n * C);
            for (int i = 0; i < n * C; i++) xd[i] = x[i];
            sdfed_layernorm_forward(all, mean, rstd, x, w, b, n, C, 1e-5f);
            for (int i = 0; i < n; i++)
                sdfed_layernorm_forward(alone + (size_t)i * C, mean1 + i, rstd1 + i, x + (size_t)i * C, w, b, 1, C,
                                        1e-5f);
            CHECK(!memcmp(all, alone, sizeof *all * n * C) && !memcmp(mean, mean1, sizeof *mean * n) &&
                      !memcmp(rstd, rstd1, sizeof *rstd * n),
                  "layernorm of %d rows of %d: each row's bits alone", n, C);
            layernorm_d(ref, xd, w, b, n, C);
            CHECK(forward_rel(all, ref, (size_t)n * C) < 1e-5, "layernorm of %d rows of %d forward", n, C);
            free(x);
            free(w);
            free(b);
            free(all);
            free(alone);
            free(ref);
            free(xd);
        }
}

/* --------------------------------------------------------------- activation */

typedef struct {
    int n, act;
    const float *wout;
    double *out;
} act_ctx;

static double act_d(double x, int act) {
    return act == SDFED_ACT_GELU ? 0.5 * x * (1 + erf(x / sqrt(2.0))) : x / (1 + exp(-1.702 * x));
}

static double act_loss(const double *x, void *p) {
    act_ctx *c = p;
    for (int i = 0; i < c->n; i++) c->out[i] = act_d(x[i], c->act);
    return weighted_sum(c->out, c->wout, (size_t)c->n);
}

static void test_activation(int act) {
    int n = 64;
    float *x = randf(n, 4.0), *wout = randf(n, 1.0), out[64], dx[64];
    double ref[64];
    sdfed_activation_forward(out, x, n, act);
    for (int i = 0; i < n; i++) ref[i] = act_d(x[i], act);
    CHECK(forward_rel(out, ref, n) < 1e-5, "%s forward", sdfed_activation_name(act));
    sdfed_activation_backward(dx, wout, x, n, act);
    act_ctx ctx = {.n = n, .act = act, .wout = wout, .out = ref};
    double *g = numeric_grad(act_loss, &ctx, x, n);
    double rel = max_rel(dx, g, n);
    CHECK(rel < 1e-4, "%s backward rel %.2e", sdfed_activation_name(act), rel);
    free(x);
    free(wout);
    free(g);
}

/* ---------------------------------------------------------------- attention */

typedef struct {
    const sdfed_attn_span *spans;
    int n_spans, N, C, heads, causal;
    const float *wout;
    double *out;
} attn_ctx;

static void attention_d(double *out, const double *qkv, const sdfed_attn_span *spans, int n_spans, int C, int heads,
                        int causal) {
    int hd = C / heads;
    for (int s = 0; s < n_spans; s++) {
        const sdfed_attn_span *sp = &spans[s];
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < sp->nq; i++) {
                int qi = sp->q0 + i, n_keys = sp->nc + (causal ? i + 1 : sp->nq);
                double score[256], mx = -INFINITY, sum = 0;
                for (int j = 0; j < n_keys; j++) {
                    int kj = j < sp->nc ? sp->c0 + j : sp->q0 + j - sp->nc;
                    double d = 0;
                    for (int e = 0; e < hd; e++) d += qkv[qi * 3 * C + h * hd + e] * qkv[kj * 3 * C + C + h * hd + e];
                    score[j] = d / sqrt((double)hd);
                    mx = fmax(mx, score[j]);
                }
                for (int j = 0; j < n_keys; j++) sum += (score[j] = exp(score[j] - mx));
                for (int e = 0; e < hd; e++) {
                    double o = 0;
                    for (int j = 0; j < n_keys; j++) {
                        int kj = j < sp->nc ? sp->c0 + j : sp->q0 + j - sp->nc;
                        o += score[j] / sum * qkv[kj * 3 * C + 2 * C + h * hd + e];
                    }
                    out[qi * C + h * hd + e] = o;
                }
            }
    }
}

static double attn_loss(const double *qkv, void *p) {
    attn_ctx *c = p;
    attention_d(c->out, qkv, c->spans, c->n_spans, c->C, c->heads, c->causal);
    return weighted_sum(c->out, c->wout, (size_t)c->N * c->C);
}

static void test_attention(const sdfed_kernels *k, int causal) {
    /* a shared prefix of 4 rows and two continuations of 3 and 2 rows, as the
     * text tower plans them; without the causal mask, three separate spans */
    int N = 9, C = 16, heads = 2;
    sdfed_attn_span text[3] = {{.q0 = 0, .nq = 4, .c0 = 0, .nc = 0},
                               {.q0 = 4, .nq = 3, .c0 = 0, .nc = 4},
                               {.q0 = 7, .nq = 2, .c0 = 0, .nc = 4}};
    sdfed_attn_span image[3] = {{.q0 = 0, .nq = 4, .c0 = 0, .nc = 0},
                                {.q0 = 4, .nq = 3, .c0 = 0, .nc = 0},
                                {.q0 = 7, .nq = 2, .c0 = 0, .nc = 0}};
    const sdfed_attn_span *spans = causal ? text : image;
    size_t offset[3];
    size_t n_att = sdfed_attention_size(spans, offset, 3, heads);
    float *qkv = randf((size_t)N * 3 * C, 1.5), *wout = randf((size_t)N * C, 1.0);
    float *out = malloc(sizeof *out * N * C), *att = malloc(sizeof *att * n_att);
    float *dqkv = calloc((size_t)N * 3 * C, sizeof *dqkv), *scratch = malloc(sizeof *scratch * 64);
    double *ref = malloc(sizeof *ref * N * C), *qd = malloc(sizeof *qd * N * 3 * C);
    for (int i = 0; i < N * 3 * C; i++) qd[i] = qkv[i];
    sdfed_attention_forward(k, out, att, qkv, spans, offset, 3, C, heads, causal);
    attention_d(ref, qd, spans, 3, C, heads, causal);
    CHECK(forward_rel(out, ref, (size_t)N * C) < 1e-5, "%s attention forward (causal %d)", k->name, causal);
    sdfed_attention_backward(k, dqkv, wout, qkv, att, spans, offset, 3, C, heads, scratch);
    attn_ctx ctx = {
        .spans = spans, .n_spans = 3, .N = N, .C = C, .heads = heads, .causal = causal, .wout = wout, .out = ref};
    double *g = numeric_grad(attn_loss, &ctx, qkv, (size_t)N * 3 * C);
    double rel = max_rel(dqkv, g, (size_t)N * 3 * C);
    CHECK(rel < 1e-4, "%s attention backward (causal %d) rel %.2e", k->name, causal, rel);
    free(qkv);
    free(wout);
    free(out);
    free(att);
    free(dqkv);
    free(scratch);
    free(ref);
    free(qd);
    free(g);
}

/* ------------------------------------------------------- transformer blocks */

typedef struct {
    const sdfed_transformer *t;
    const float *wout;
    double *x, *tmp;
} stack_ctx;

static void linear_d(double *y, const double *x, const sdfed_weight *w, const float *bias, int n) {
    const float *W = w->data;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < w->rows; r++) {
            double s = bias ? bias[r] : 0.0;
            for (int c = 0; c < w->cols; c++) s += x[i * w->cols + c] * W[r * w->cols + c];
            y[i * w->rows + r] = s;
        }
}

/* the block stack of transformer.h in double; x (N, C) in place */
static void stack_d(const sdfed_transformer *t, double *x, double *tmp) {
    int N = t->N, C = t->C;
    double *ln = tmp, *qkv = ln + N * C, *att = qkv + N * 3 * C, *proj = att + N * C, *fc = proj + N * C;
    for (int l = 0; l < t->n_layers; l++) {
        const sdfed_clip_block *b = &t->blocks[l];
        layernorm_d(ln, x, b->ln1_w, b->ln1_b, N, C);
        linear_d(qkv, ln, &b->attn_qkv, b->attn_qkv_b, N);
        attention_d(att, qkv, t->spans, t->n_spans, C, t->heads, t->causal);
        linear_d(proj, att, &b->attn_out, b->attn_out_b, N);
        for (int i = 0; i < N * C; i++) x[i] += proj[i];
        layernorm_d(ln, x, b->ln2_w, b->ln2_b, N, C);
        linear_d(fc, ln, &b->mlp_fc, b->mlp_fc_b, N);
        for (int i = 0; i < N * 4 * C; i++) fc[i] = act_d(fc[i], t->activation);
        linear_d(proj, fc, &b->mlp_proj, b->mlp_proj_b, N);
        for (int i = 0; i < N * C; i++) x[i] += proj[i];
    }
}

static double stack_loss(const double *x, void *p) {
    stack_ctx *c = p;
    memcpy(c->x, x, sizeof *x * (size_t)c->t->N * c->t->C);
    stack_d(c->t, c->x, c->tmp);
    return weighted_sum(c->x, c->wout, (size_t)c->t->N * c->t->C);
}

static void random_block(sdfed_clip_block *b, int C) {
    b->ln1_w = randf(C, 1.0);
    b->ln1_b = randf(C, 0.3);
    b->ln2_w = randf(C, 1.0);
    b->ln2_b = randf(C, 0.3);
    b->attn_qkv =
        (sdfed_weight){.type = SDFED_TYPE_F32, .rows = 3 * C, .cols = C, .data = randf((size_t)3 * C * C, 0.25)};
    b->attn_out = (sdfed_weight){.type = SDFED_TYPE_F32, .rows = C, .cols = C, .data = randf((size_t)C * C, 0.25)};
    b->mlp_fc =
        (sdfed_weight){.type = SDFED_TYPE_F32, .rows = 4 * C, .cols = C, .data = randf((size_t)4 * C * C, 0.25)};
    b->mlp_proj =
        (sdfed_weight){.type = SDFED_TYPE_F32, .rows = C, .cols = 4 * C, .data = randf((size_t)4 * C * C, 0.12)};
    b->attn_qkv_b = randf((size_t)3 * C, 0.1);
    b->attn_out_b = randf(C, 0.1);
    b->mlp_fc_b = randf((size_t)4 * C, 0.1);
    b->mlp_proj_b = randf(C, 0.1);
}

static void free_block(sdfed_clip_block *b) {
    free((void *)b->ln1_w);
    free((void *)b->ln1_b);
    free((void *)b->ln2_w);
    free((void *)b->ln2_b);
    free((void *)b->attn_qkv.data);
    free((void *)b->attn_out.data);
    free((void *)b->mlp_fc.data);
    free((void *)b->mlp_proj.data);
    free((void *)b->attn_qkv_b);
    free((void *)b->attn_out_b);
    free((void *)b->mlp_fc_b);
    free((void *)b->mlp_proj_b);
}

static void test_stack(const sdfed_kernels *k, int activation) {
    enum { N = 9, C = 32, LAYERS = 2 };
    sdfed_clip_block blocks[LAYERS];
    for (int l = 0; l < LAYERS; l++) random_block(&blocks[l], C);
    sdfed_attn_span spans[3] = {{.q0 = 0, .nq = 4, .c0 = 0, .nc = 0},
                                {.q0 = 4, .nq = 3, .c0 = 0, .nc = 4},
                                {.q0 = 7, .nq = 2, .c0 = 0, .nc = 4}};
    sdfed_transformer t = {.blocks = blocks,
                           .n_layers = LAYERS,
                           .C = C,
                           .heads = 2,
                           .activation = activation,
                           .causal = 1,
                           .eps = 1e-5f,
                           .spans = spans,
                           .n_spans = 3,
                           .N = N,
                           .int8 = 0,
                           .att_offset = NULL,
                           .acts = NULL};
    float *x = randf((size_t)N * C, 1.0), *wout = randf((size_t)N * C, 1.0), *y = malloc(sizeof *y * N * C);
    memcpy(y, x, sizeof *x * N * C);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    CHECK(sdfed_transformer_forward(k, &t, y, 1, &arena, &err) == SDFED_OK, "stack forward: %s", err.message);
    double *xd = malloc(sizeof *xd * N * C), *tmp = malloc(sizeof *tmp * N * C * 10);
    for (int i = 0; i < N * C; i++) xd[i] = x[i];
    stack_d(&t, xd, tmp);
    CHECK(forward_rel(y, xd, (size_t)N * C) < 1e-5, "%s block stack forward (%s)", k->name,
          sdfed_activation_name(activation));
    float *dx = malloc(sizeof *dx * N * C);
    memcpy(dx, wout, sizeof *dx * N * C);
    CHECK(sdfed_transformer_backward(k, &t, dx, &arena, &err) == SDFED_OK, "stack backward: %s", err.message);
    stack_ctx ctx = {.t = &t, .wout = wout, .x = xd, .tmp = tmp};
    double *g = numeric_grad(stack_loss, &ctx, x, (size_t)N * C);
    double rel = max_rel(dx, g, (size_t)N * C);
    CHECK(rel < 1e-4, "%s block stack backward (%s) rel %.2e", k->name, sdfed_activation_name(activation), rel);
    sdfed_arena_free(&arena);
    for (int l = 0; l < LAYERS; l++) free_block(&blocks[l]);
    free(x);
    free(wout);
    free(y);
    free(xd);
    free(tmp);
    free(dx);
    free(g);
}

/* ------------------------------------------------- normalisation and losses */

typedef struct {
    int n, D, B, C;
    const float *wout, *img, *other;
    const int32_t *labels;
    double *out;
    float gamma;
} loss_ctx;

static double l2_loss(const double *x, void *p) {
    loss_ctx *c = p;
    double s = 0;
    for (int i = 0; i < c->n; i++) {
        double norm = 0;
        for (int d = 0; d < c->D; d++) norm += x[i * c->D + d] * x[i * c->D + d];
        for (int d = 0; d < c->D; d++) s += x[i * c->D + d] / sqrt(norm) * c->wout[i * c->D + d];
    }
    return s;
}

static void test_l2_normalize(void) {
    int n = 4, D = 12;
    float *x = randf((size_t)n * D, 2.0), *wout = randf((size_t)n * D, 1.0), out[48], norms[4], dx[48] = {0};
    sdfed_l2_normalize_forward(out, norms, x, n, D);
    sdfed_l2_normalize_backward(dx, wout, out, norms, n, D);
    loss_ctx ctx = {.n = n,
                    .D = D,
                    .B = 0,
                    .C = 0,
                    .wout = wout,
                    .img = NULL,
                    .other = NULL,
                    .labels = NULL,
                    .out = NULL,
                    .gamma = 0};
    double *g = numeric_grad(l2_loss, &ctx, x, (size_t)n * D);
    double rel = max_rel(dx, g, (size_t)n * D);
    CHECK(rel < 1e-4, "l2 normalize backward rel %.2e", rel);
    free(x);
    free(wout);
    free(g);
}

/* CE of logits = scale img f^T, as a function of f */
static double ce_loss(const double *f, void *p) {
    loss_ctx *c = p;
    double total = 0;
    for (int b = 0; b < c->B; b++) {
        double z[16], mx = -INFINITY, sum = 0;
        for (int k = 0; k < c->C; k++) {
            z[k] = 0;
            for (int d = 0; d < c->D; d++) z[k] += 7.0 * c->img[b * c->D + d] * f[k * c->D + d];
            mx = fmax(mx, z[k]);
        }
        for (int k = 0; k < c->C; k++) sum += exp(z[k] - mx);
        total += log(sum) + mx - z[c->labels[b]];
    }
    return total / c->B;
}

static void test_cross_entropy(void) {
    enum { B = 6, C = 5, D = 10 };
    float *img = randf(B * D, 1.0), *f = randf(C * D, 1.0), logits[B * C], probs[B * C], df[C * D] = {0};
    int32_t labels[B] = {0, 4, 2, 2, 1, 3};
    sdfed_logits_forward(logits, img, f, B, C, D, 7.0f);
    double loss = sdfed_cross_entropy_forward(probs, logits, labels, B, C, NULL);
    loss_ctx ctx = {.n = 0,
                    .D = D,
                    .B = B,
                    .C = C,
                    .wout = NULL,
                    .img = img,
                    .other = NULL,
                    .labels = labels,
                    .out = NULL,
                    .gamma = 0};
    double *fd = malloc(sizeof *fd * C * D);
    for (int i = 0; i < C * D; i++) fd[i] = f[i];
    CHECK(fabs(loss - ce_loss(fd, &ctx)) < 1e-5 * fabs(loss), "cross-entropy forward");
    sdfed_cross_entropy_backward(logits, probs, labels, B, C, 1.0f);
    sdfed_logits_backward(df, logits, img, B, C, D, 7.0f);
    double *g = numeric_grad(ce_loss, &ctx, f, C * D);
    double rel = max_rel(df, g, C * D);
    CHECK(rel < 1e-4, "cosine logits + cross-entropy backward rel %.2e", rel);
    free(img);
    free(f);
    free(fd);
    free(g);
}

static double stretch_loss(const double *a, void *p) {
    loss_ctx *c = p;
    double s = 0;
    for (int i = 0; i < c->n; i++) s += (a[i] - c->other[i]) * (a[i] - c->other[i]);
    return s / c->n;
}

static double separation_loss(const double *ab, void *p) {
    /* ab holds a then b, both (C, D) */
    loss_ctx *c = p;
    double s = 0;
    for (int k = 0; k < c->C; k++) {
        double d2 = 0;
        for (int d = 0; d < c->D; d++) d2 += pow(ab[k * c->D + d] - ab[(c->C + k) * c->D + d], 2);
        s += fmax(0.0, c->gamma - sqrt(d2));
    }
    return s / c->C;
}

static void test_stretch_and_separation(void) {
    enum { C = 6, D = 8 };
    float *a = randf(C * D, 0.5), *target = randf(C * D, 0.5), da[C * D] = {0};
    sdfed_stretch_backward(da, a, target, C * D, 0, 1.0f);
    loss_ctx ctx = {.n = C * D,
                    .D = D,
                    .B = 0,
                    .C = C,
                    .wout = NULL,
                    .img = NULL,
                    .other = target,
                    .labels = NULL,
                    .out = NULL,
                    .gamma = 0};
    double *g = numeric_grad(stretch_loss, &ctx, a, C * D);
    CHECK(max_rel(da, g, C * D) < 1e-4, "stretch backward");
    /* the sum reading: C x D times the mean, and so its gradient */
    float da_sum[C * D] = {0};
    sdfed_stretch_backward(da_sum, a, target, C * D, 1, 1.0f);
    for (int i = 0; i < C * D; i++) g[i] *= C * D;
    double mean = sdfed_stretch_forward(a, target, C * D, 0), sum = sdfed_stretch_forward(a, target, C * D, 1);
    CHECK(fabs(sum - C * D * mean) <= 1e-12 * sum && max_rel(da_sum, g, C * D) < 1e-4, "stretch, summed: %g vs %g x %d",
          sum, mean, C * D);
    free(g);

    /* gamma between the distances so some classes are inside the hinge;
     * no distance within 1e-3 of gamma (the kink) */
    float ab[2 * C * D], dab[2 * C * D] = {0}, dist[C];
    memcpy(ab, a, sizeof(float) * C * D);
    memcpy(ab + C * D, target, sizeof(float) * C * D);
    sdfed_separation_forward(dist, ab, ab + C * D, C, D, 0.0f);
    float sorted[C];
    memcpy(sorted, dist, sizeof sorted);
    for (int i = 0; i < C; i++)
        for (int j = i + 1; j < C; j++)
            if (sorted[j] < sorted[i]) {
                float t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    ctx.gamma = 0.5f * (sorted[2] + sorted[3]);
    double loss = sdfed_separation_forward(dist, ab, ab + C * D, C, D, ctx.gamma);
    sdfed_separation_backward(dab, dab + C * D, ab, ab + C * D, dist, C, D, ctx.gamma, 1.0f);
    double abd[2 * C * D];
    for (int i = 0; i < 2 * C * D; i++) abd[i] = ab[i];
    CHECK(fabs(loss - separation_loss(abd, &ctx)) < 1e-6, "separation forward");
    g = numeric_grad(separation_loss, &ctx, ab, 2 * C * D);
    double rel = max_rel(dab, g, 2 * C * D);
    CHECK(rel < 1e-4, "separation backward (both sides) rel %.2e", rel);
    int inactive_zero = 1;
    for (int k = 0; k < C; k++)
        if (dist[k] >= ctx.gamma)
            for (int d = 0; d < D; d++) inactive_zero &= dab[k * D + d] == 0.0f;
    CHECK(inactive_zero, "classes outside the hinge get no gradient");
    free(a);
    free(target);
    free(g);
}

int main(void) {
    srand(6);
    if (check_case("layernorm")) test_layernorm();
    if (check_case("activations")) {
        test_activation(SDFED_ACT_QUICK_GELU);
        test_activation(SDFED_ACT_GELU);
    }
    if (check_case("l2_normalize")) test_l2_normalize();
    if (check_case("cross_entropy")) test_cross_entropy();
    if (check_case("stretch_and_separation")) test_stretch_and_separation();
    /* each backend's attention and layer stack, in the order their random inputs were drawn in */
    if (check_case("attention_and_stack")) {
        for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
            test_attention(*k, 1);
            test_attention(*k, 0);
            test_stack(*k, SDFED_ACT_QUICK_GELU);
            test_stack(*k, SDFED_ACT_GELU);
        }
    }
    if (check_case("layernorm_rows")) test_layernorm_rows();
    return check_report("test_autodiff");
}
