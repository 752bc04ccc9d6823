/* FedOT: Cayley-parametrised orthogonal transform and cosine classifier. */
#include "method/fedot.h"

#include <math.h>
#include <string.h>

#include "clip/layers.h"
#include "prompt/losses.h"

/* inv (D, D) = (I + A)^-1 by Gauss-Jordan elimination with partial
 * pivoting, in double. */
static int inverse_of_identity_plus(const float *A, int D, double *inv, sdfed_arena *arena, sdfed_error *err) {
    double *a = sdfed_arena_alloc(arena, sizeof *a * (size_t)D * D);
    if (!a) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            a[(size_t)i * D + j] = A[(size_t)i * D + j] + (i == j);
            inv[(size_t)i * D + j] = i == j;
        }
    for (int col = 0; col < D; col++) {
        int pivot = col;
        for (int r = col + 1; r < D; r++)
            if (fabs(a[(size_t)r * D + col]) > fabs(a[(size_t)pivot * D + col])) pivot = r;
        if (a[(size_t)pivot * D + col] == 0.0) return sdfed_fail(err, SDFED_ERR_NUMERIC, "fedot: I + A is singular");
        for (int c = 0; c < D && pivot != col; c++) {
            double t = a[(size_t)col * D + c];
            a[(size_t)col * D + c] = a[(size_t)pivot * D + c];
            a[(size_t)pivot * D + c] = t;
            t = inv[(size_t)col * D + c];
            inv[(size_t)col * D + c] = inv[(size_t)pivot * D + c];
            inv[(size_t)pivot * D + c] = t;
        }
        double p = a[(size_t)col * D + col];
        for (int c = 0; c < D; c++) {
            a[(size_t)col * D + c] /= p;
            inv[(size_t)col * D + c] /= p;
        }
        for (int r = 0; r < D; r++) {
            double f = a[(size_t)r * D + col];
            if (r == col || f == 0.0) continue;
            for (int c = 0; c < D; c++) {
                a[(size_t)r * D + c] -= f * a[(size_t)col * D + c];
                inv[(size_t)r * D + c] -= f * inv[(size_t)col * D + c];
            }
        }
    }
    return SDFED_OK;
}

/* Q = (I - A) M with M = (I + A)^-1; returns M through m_out if not NULL. */
static int cayley(const float *A, int D, float *Q, double **m_out, sdfed_arena *arena, sdfed_error *err) {
    double *M = sdfed_arena_alloc(arena, sizeof *M * (size_t)D * D);
    if (!M) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
    int rc = inverse_of_identity_plus(A, D, M, arena, err);
    if (rc) return rc;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double s = 0.0;
            for (int t = 0; t < D; t++) s += ((i == t) - (double)A[(size_t)i * D + t]) * M[(size_t)t * D + j];
            Q[(size_t)i * D + j] = (float)s;
        }
    if (m_out) *m_out = M;
    return SDFED_OK;
}

int sdfed_cayley(const float *A, int D, float *Q, sdfed_arena *arena, sdfed_error *err) {
    return cayley(A, D, Q, NULL, arena, err);
}

int sdfed_fedot_eval(const float *W, const float *A, int C, int D, float scale, const sdfed_batch *batch,
                     sdfed_losses *losses, float *grad_W, float *grad_A, sdfed_arena *arena, sdfed_error *err) {
    int B = batch->n;
    for (size_t i = 0; i < (size_t)C * D; i++)
        if (!isfinite(W[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "fedot: the classifier holds NaN or Inf");
    for (size_t i = 0; i < (size_t)D * D; i++)
        if (!isfinite(A[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "fedot: the transform holds NaN or Inf");
    for (int i = 0; i < B; i++)
        if (batch->labels[i] < 0 || batch->labels[i] >= C)
            return sdfed_fail(err, SDFED_ERR_ARG, "fedot: label %d is not a class", batch->labels[i]);
    float *Q = sdfed_arena_floats(arena, (size_t)D * D), *img_q = sdfed_arena_floats(arena, (size_t)B * D);
    float *Wn = sdfed_arena_floats(arena, (size_t)C * D), *norms = sdfed_arena_floats(arena, (size_t)C);
    float *logits = sdfed_arena_floats(arena, (size_t)B * C), *probs = sdfed_arena_floats(arena, (size_t)B * C);
    if (!Q || !img_q || !Wn || !norms || !logits || !probs)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
    double *M;
    int rc = cayley(A, D, Q, &M, arena, err);
    if (rc) return rc;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < D; j++) {
            float s = 0.0f;
            for (int t = 0; t < D; t++) s += batch->features[(size_t)b * D + t] * Q[(size_t)t * D + j];
            img_q[(size_t)b * D + j] = s;
        }
    sdfed_l2_normalize_forward(Wn, norms, W, C, D);
    sdfed_logits_forward(logits, img_q, Wn, B, C, D, scale);
    memset(losses, 0, sizeof *losses);
    losses->ce_local = losses->total =
        sdfed_cross_entropy_forward(probs, logits, batch->labels, B, C, &losses->correct);
    if (!isfinite(losses->total)) return sdfed_fail(err, SDFED_ERR_NUMERIC, "fedot: the loss is not finite");
    if (!grad_W && !grad_A) return SDFED_OK;

    sdfed_cross_entropy_backward(logits, probs, batch->labels, B, C, 1.0f); /* logits now hold dL/dlogits */
    if (grad_W) {
        float *d_wn = sdfed_arena_floats(arena, (size_t)C * D);
        if (!d_wn) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
        memset(d_wn, 0, sizeof *d_wn * (size_t)C * D);
        memset(grad_W, 0, sizeof *grad_W * (size_t)C * D);
        sdfed_logits_backward(d_wn, logits, img_q, B, C, D, scale);
        sdfed_l2_normalize_backward(grad_W, d_wn, Wn, norms, C, D);
    }
    if (grad_A) {
        // d img_q (B, D) = scale * dlogits @ Wn; dQ = img^T d img_q; dA = -(I + Q)^T dQ M^T, made skew
        float *d_imgq = sdfed_arena_floats(arena, (size_t)B * D);
        double *dQ = sdfed_arena_alloc(arena, sizeof *dQ * (size_t)D * D),
               *T = sdfed_arena_alloc(arena, sizeof *T * (size_t)D * D);
        if (!d_imgq || !dQ || !T) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
        for (int b = 0; b < B; b++)
            for (int j = 0; j < D; j++) {
                float s = 0.0f;
                for (int c = 0; c < C; c++) s += logits[(size_t)b * C + c] * Wn[(size_t)c * D + j];
                d_imgq[(size_t)b * D + j] = scale * s;
            }
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) {
                double s = 0.0;
                for (int b = 0; b < B; b++) s += (double)batch->features[(size_t)b * D + i] * d_imgq[(size_t)b * D + j];
                dQ[(size_t)i * D + j] = s;
            }
        /* T = (I + Q)^T dQ */
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) {
                double s = 0.0;
                for (int t = 0; t < D; t++) s += ((t == i) + (double)Q[(size_t)t * D + i]) * dQ[(size_t)t * D + j];
                T[(size_t)i * D + j] = s;
            }
        /* G = -T M^T (into dQ, done with); grad_A = (G - G^T) / 2 */
        double *G = dQ;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) {
                double s = 0.0;
                for (int t = 0; t < D; t++) s -= T[(size_t)i * D + t] * M[(size_t)j * D + t];
                G[(size_t)i * D + j] = s;
            }
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++)
                grad_A[(size_t)i * D + j] = (float)(0.5 * (G[(size_t)i * D + j] - G[(size_t)j * D + i]));
    }
    return SDFED_OK;
}

int sdfed_fedot_class_features(const float *W, const float *A, int C, int D, float *feats, sdfed_arena *arena,
                               sdfed_error *err) {
    float *Q = sdfed_arena_floats(arena, (size_t)D * D), *Wn = sdfed_arena_floats(arena, (size_t)C * D);
    float *norms = sdfed_arena_floats(arena, (size_t)C);
    if (!Q || !Wn || !norms) return sdfed_fail(err, SDFED_ERR_NOMEM, "fedot: out of memory");
    int rc = cayley(A, D, Q, NULL, arena, err);
    if (rc) return rc;
    sdfed_l2_normalize_forward(Wn, norms, W, C, D);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < D; i++) {
            float s = 0.0f;
            for (int t = 0; t < D; t++) s += Wn[(size_t)c * D + t] * Q[(size_t)i * D + t];
            feats[(size_t)c * D + i] = s;
        }
    return SDFED_OK;
}
