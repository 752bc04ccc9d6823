/* FedOTP: prompts matched to image patches by optimal transport (fedotp.h). */
#include "method/fedotp.h"

#include <math.h>
#include <string.h>

#include "clip/image_encoder.h"
#include "prompt/losses.h"

enum { N = SDFED_FEDOTP_PROMPTS };

/* y (C, 2, D) from the two prompts' features f[0], f[1] (C, D); and back */
static void interleave(float *y, float *const *f, int C, int D) {
    for (int c = 0; c < C; c++)
        for (int n = 0; n < N; n++) memcpy(y + ((size_t)c * N + n) * D, f[n] + (size_t)c * D, sizeof(float) * D);
}

static void deinterleave(float *const *f, const float *y, int C, int D) {
    for (int c = 0; c < C; c++)
        for (int n = 0; n < N; n++) memcpy(f[n] + (size_t)c * D, y + ((size_t)c * N + n) * D, sizeof(float) * D);
}

/* f[0], f[1] (C, D) in the arena: the prompts' features, kept in pass when
 * it is not NULL */
static int prompt_features(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls, const float *G,
                           int S_g, const float *L, int S_l, float **f, sdfed_prompt_pass *pass, sdfed_arena *arena,
                           sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim;
    for (int n = 0; n < N; n++)
        if (!(f[n] = sdfed_arena_floats(arena, (size_t)C * D)))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "fedotp: out of memory");
    const float *P[N] = {G, L};
    int T[N] = {S_g, S_l};
    return sdfed_prompt_features(m, k, cls, N, P, T, f, pass, arena, err);
}

int sdfed_fedotp_class_prompts(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                               const float *G, int S_g, const float *L, int S_l, float *y, sdfed_arena *arena,
                               sdfed_error *err) {
    float *f[N];
    int rc = prompt_features(m, k, cls, G, S_g, L, S_l, f, NULL, arena, err);
    if (rc == SDFED_OK) interleave(y, f, cls->n_classes, m->cfg.embed_dim);
    return rc;
}

int sdfed_fedotp_logits(const sdfed_transport *t, const float *y, int C, int D, const float *patches, int n, int M,
                        float scale, float *logits, float *plans, sdfed_arena *arena, sdfed_error *err) {
    size_t MN = (size_t)M * N;
    float *sim = sdfed_arena_floats(arena, MN), *one_plan = plans ? NULL : sdfed_arena_floats(arena, MN);
    double *scratch = sdfed_arena_alloc(arena, sizeof(double) * sdfed_transport_scratch_size(M, N));
    if (!sim || (!plans && !one_plan) || !scratch) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedotp: out of memory");
    for (int b = 0; b < n; b++)
        for (int c = 0; c < C; c++) {
            float *plan = plans ? plans + ((size_t)b * C + c) * MN : one_plan;
            double score;
            int rc = sdfed_transport_score_forward(t, &score, sim, plan, patches + (size_t)b * M * D,
                                                   y + (size_t)c * N * D, M, N, D, scratch, err);
            if (rc) return sdfed_fail_context(err, rc, "fedotp: image %d, class %d", b, c);
            logits[(size_t)b * C + c] = (float)(scale * score);
        }
    return SDFED_OK;
}

int sdfed_fedotp_eval(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                      const sdfed_transport *t, const float *G, int S_g, const float *L, int S_l,
                      const sdfed_batch *batch, sdfed_losses *losses, float *grad_G, float *grad_L, sdfed_arena *arena,
                      sdfed_error *err) {
    int C = cls->n_classes, D = m->cfg.embed_dim, B = batch->n, W = m->cfg.text_width;
    int M = sdfed_image_token_count(&m->cfg) - 1;
    for (int i = 0; i < B; i++)
        if (batch->labels[i] < 0 || batch->labels[i] >= C)
            return sdfed_fail(err, SDFED_ERR_ARG, "fedotp: label %d is not a class", batch->labels[i]);
    int rc = sdfed_transport_check(t, err);
    if (rc) return rc;
    int backward = grad_G || grad_L;
    float *f[N], *y = sdfed_arena_floats(arena, (size_t)C * N * D);
    float *logits = sdfed_arena_floats(arena, (size_t)B * C), *probs = sdfed_arena_floats(arena, (size_t)B * C);
    float *plans = backward ? sdfed_arena_floats(arena, (size_t)B * C * M * N) : NULL;
    if (!y || !logits || !probs || (backward && !plans))
        return sdfed_fail(err, SDFED_ERR_NOMEM, "fedotp: out of memory");
    sdfed_prompt_pass pass;
    rc = prompt_features(m, k, cls, G, S_g, L, S_l, f, backward ? &pass : NULL, arena, err);
    if (rc) return rc;
    interleave(y, f, C, D);
    float scale = expf(m->logit_scale);
    rc = sdfed_fedotp_logits(t, y, C, D, batch->features, B, M, scale, logits, plans, arena, err);
    if (rc) return rc;
    memset(losses, 0, sizeof *losses);
    losses->ce_local = losses->total =
        sdfed_cross_entropy_forward(probs, logits, batch->labels, B, C, &losses->correct);
    if (!isfinite(losses->total)) return sdfed_fail(err, SDFED_ERR_NUMERIC, "fedotp: the loss is not finite");
    if (!backward) return SDFED_OK;

    sdfed_cross_entropy_backward(logits, probs, batch->labels, B, C, 1.0f); /* logits now hold dL/dlogits */
    float *d_y = sdfed_arena_floats(arena, (size_t)C * N * D), *d_f[N];
    for (int n = 0; n < N; n++) d_f[n] = sdfed_arena_floats(arena, (size_t)C * D);
    float *dP[N] = {grad_G, grad_L};
    int T[N] = {S_g, S_l};
    for (int n = 0; n < N; n++)
        if (!dP[n]) dP[n] = sdfed_arena_floats(arena, (size_t)T[n] * W);
    if (!d_y || !d_f[0] || !d_f[1] || !dP[0] || !dP[1])
        return sdfed_fail(err, SDFED_ERR_NOMEM, "fedotp: out of memory");
    memset(d_y, 0, sizeof(float) * (size_t)C * N * D);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            sdfed_transport_score_backward(d_y + (size_t)c * N * D, plans + ((size_t)b * C + c) * M * N,
                                           batch->features + (size_t)b * M * D, M, N, D,
                                           scale * logits[(size_t)b * C + c]);
    deinterleave(d_f, d_y, C, D);
    for (int n = 0; n < N; n++) memset(dP[n], 0, sizeof(float) * (size_t)T[n] * W);
    return sdfed_prompt_backward(m, k, &pass, N, (const float *const *)f, (const float *const *)d_f, dP, arena, err);
}
