/* LayerNorm, L2 normalisation, the MLP activation, residuals and attention:
 * forward and backward. */
#include "clip/layers.h"

#include <math.h>

#include "base/vectors.h"
#include "clip/clip_model.h"
#include "clip/layers_wide.h"
#include "kernels/dispatch.h"

/* rows that layernorm_rows takes at a time: a row's sums are chains of
 * dependent adds as long as the row (96 of them, 4 cycles each, for a
 * ViT-B row of 768), which a row alone waits out and several rows' chains
 * run side by side (ViT-B/16's 197 rows of 768 1.45x faster on Ice Lake
 * with 4) */
#define LAYERNORM_ROWS 4
_Static_assert(LAYERNORM_ROWS == 4, "layernorm_group's loops over the rows unrolled 4 times, whole");

/* LayerNorm of `rows` rows (at most LAYERNORM_ROWS; a constant where it is
 * inlined, so that their sums stay in registers) in eight-float vectors:
 * each row's mean and variance summed lane by lane, then the lanes in
 * order, the rows' steps interleaved */
static inline __attribute__((always_inline)) void layernorm_group(const int rows, float *out, float *mean, float *rstd,
                                                                  const float *inp, const float *weight,
                                                                  const float *bias, int C, float eps) {
    sdfed_f32x8 sums[LAYERNORM_ROWS] = {{0}};
    float m[LAYERNORM_ROWS], s[LAYERNORM_ROWS];
    SDFED_EACH_F32X8(C, c, count, {
        _Pragma("GCC unroll 4") for (int r = 0; r < rows; r++) {
            sdfed_f32x8 v;
            sdfed_load_f32x8(&v, inp + (size_t)r * C + c, count, 0.0f);
            sums[r] += v;
        }
    });
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) {
        m[r] = sdfed_sum_f32x8(&sums[r]) / (float)C;
        sums[r] = (sdfed_f32x8){0};
    }
    SDFED_EACH_F32X8(C, c, count, {
        _Pragma("GCC unroll 4") for (int r = 0; r < rows; r++) { /* the lanes past the row are m: (m - m)^2 = 0 */
            sdfed_f32x8 v;
            sdfed_load_f32x8(&v, inp + (size_t)r * C + c, count, m[r]);
            sums[r] += (v - m[r]) * (v - m[r]);
        }
    });
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) s[r] = 1.0f / sqrtf(sdfed_sum_f32x8(&sums[r]) / (float)C + eps);
    SDFED_EACH_F32X8(C, c, count, {
        sdfed_f32x8 w, b;
        sdfed_load_f32x8(&w, weight + c, count, 0.0f);
        sdfed_load_f32x8(&b, bias + c, count, 0.0f);
        _Pragma("GCC unroll 4") for (int r = 0; r < rows; r++) {
            sdfed_f32x8 v;
            sdfed_load_f32x8(&v, inp + (size_t)r * C + c, count, 0.0f);
            v = (v - m[r]) * s[r] * w + b;
            sdfed_store_f32x8(out + (size_t)r * C + c, &v, count);
        }
    });
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) {
        if (mean) mean[r] = m[r];
        if (rstd) rstd[r] = s[r];
    }
}

/* LayerNorm of each row (static: see activation_rows) */
SDFED_WIDEST_VECTORS static void layernorm_rows(float *out, float *mean, float *rstd, const float *inp,
                                                const float *weight, const float *bias, int n, int C, float eps) {
    int i = 0;
    for (; i + LAYERNORM_ROWS <= n; i += LAYERNORM_ROWS)
        layernorm_group(LAYERNORM_ROWS, out + (size_t)i * C, mean ? mean + i : NULL, rstd ? rstd + i : NULL,
                        inp + (size_t)i * C, weight, bias, C, eps);
    for (; i < n; i++)
        layernorm_group(1, out + (size_t)i * C, mean ? mean + i : NULL, rstd ? rstd + i : NULL, inp + (size_t)i * C,
                        weight, bias, C, eps);
}

void sdfed_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                             const float *bias, int n, int C, float eps) {
    // inp and out are (n, C), weight and bias are (C), mean and rstd are (n)
    layernorm_rows(out, mean, rstd, inp, weight, bias, n, C, eps);
}

/* LayerNorm's gradient of each row in eight-float vectors, its sums lane by
 * lane (the lanes past the row have dout = weight = 0: they add 0) */
SDFED_WIDEST_VECTORS static void layernorm_backward_rows(float *dinp, const float *dout, const float *inp,
                                                         const float *weight, const float *mean, const float *rstd,
                                                         int n, int C) {
    for (int i = 0; i < n; i++) {
        const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        sdfed_f32x8 g_sums = {0}, gx_sums = {0};
        SDFED_EACH_F32X8(C, c, count, {
            sdfed_f32x8 xv, dv, wv, g;
            sdfed_load_f32x8(&xv, x + c, count, 0.0f);
            sdfed_load_f32x8(&dv, d + c, count, 0.0f);
            sdfed_load_f32x8(&wv, weight + c, count, 0.0f);
            g = dv * wv;
            g_sums += g;
            gx_sums += g * (xv - m) * s;
        });
        float g_mean = sdfed_sum_f32x8(&g_sums) / (float)C, gx_mean = sdfed_sum_f32x8(&gx_sums) / (float)C;
        SDFED_EACH_F32X8(C, c, count, {
            sdfed_f32x8 xv, dv, wv, acc;
            sdfed_load_f32x8(&xv, x + c, count, 0.0f);
            sdfed_load_f32x8(&dv, d + c, count, 0.0f);
            sdfed_load_f32x8(&wv, weight + c, count, 0.0f);
            sdfed_load_f32x8(&acc, dx + c, count, 0.0f);
            sdfed_f32x8 xhat = (xv - m) * s;
            acc += s * (dv * wv - g_mean - xhat * gx_mean);
            sdfed_store_f32x8(dx + c, &acc, count);
        });
    }
}

void sdfed_layernorm_backward(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                              const float *rstd, int n, int C) {
    // with xhat = (x - mean) * rstd and g = dout * weight:
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
    layernorm_backward_rows(dinp, dout, inp, weight, mean, rstd, n, C);
}

void sdfed_l2_normalize_forward(float *out, float *norms, const float *inp, int n, int D) {
    // inp and out are (n, D), norms is (n)
    for (int i = 0; i < n; i++) {
        const float *x = inp + (size_t)i * D;
        float *o = out + (size_t)i * D;
        double ss = 0.0;
        for (int d = 0; d < D; d++) ss += (double)x[d] * x[d];
        float norm = (float)sqrt(ss);
        float inv = norm > 0.0f ? 1.0f / norm : 0.0f;
        for (int d = 0; d < D; d++) o[d] = x[d] * inv;
        norms[i] = norm;
    }
}

void sdfed_l2_normalize_backward(float *dinp, const float *dout, const float *out, const float *norms, int n, int D) {
    for (int i = 0; i < n; i++) {
        if (norms[i] == 0.0f) continue;
        const float *o = out + (size_t)i * D, *g = dout + (size_t)i * D;
        float *dx = dinp + (size_t)i * D;
        float dot = 0.0f;
        for (int d = 0; d < D; d++) dot += o[d] * g[d];
        float inv = 1.0f / norms[i];
        for (int d = 0; d < D; d++) dx[d] += (g[d] - o[d] * dot) * inv;
    }
}

/* QuickGELU, x sigmoid(1.702 x), and its derivative s(ax) + a x s(ax) (1 -
 * s(ax)), a = 1.702, on the first `count` (<= 8) floats: vectors, whose
 * exponential (base/vectors.h) gives the same bits on every target */
static inline void quick_gelu_lanes(float *out, const float *inp, int count) {
    sdfed_f32x8 x, e;
    sdfed_load_f32x8(&x, inp, count, 0.0f);
    e = x * -1.702f;
    sdfed_exp_f32x8(&e);
    sdfed_f32x8 y = x / (1.0f + e);
    sdfed_store_f32x8(out, &y, count);
}

static inline void quick_gelu_backward_lanes(float *dinp, const float *dout, const float *inp, int count) {
    sdfed_f32x8 x, d, e;
    sdfed_load_f32x8(&x, inp, count, 0.0f);
    sdfed_load_f32x8(&d, dout, count, 0.0f);
    e = x * -1.702f;
    sdfed_exp_f32x8(&e);
    sdfed_f32x8 s = 1.0f / (1.0f + e);
    sdfed_f32x8 g = d * (s + 1.702f * x * s * (1.0f - s));
    sdfed_store_f32x8(dinp, &g, count);
}

/* GELU, x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, and its derivative, on the
 * first `count` (<= 8) floats: erf and the exponential in vectors, the
 * same bits on every target (libm's erff differs between glibc and the
 * browser's musl) */
static inline void gelu_lanes(float *out, const float *inp, int count) {
    sdfed_f32x8 x, erf_x;
    sdfed_load_f32x8(&x, inp, count, 0.0f);
    erf_x = x * 0.70710678118654752f;
    sdfed_erf_f32x8(&erf_x);
    sdfed_f32x8 y = 0.5f * x * (1.0f + erf_x);
    sdfed_store_f32x8(out, &y, count);
}

/* d/dx [x Phi(x)] = Phi(x) + x phi(x) */
static inline void gelu_backward_lanes(float *dinp, const float *dout, const float *inp, int count) {
    sdfed_f32x8 x, d, e, erf_x;
    sdfed_load_f32x8(&x, inp, count, 0.0f);
    sdfed_load_f32x8(&d, dout, count, 0.0f);
    e = -0.5f * x * x;
    sdfed_exp_f32x8(&e);
    erf_x = x * 0.70710678118654752f;
    sdfed_erf_f32x8(&erf_x);
    sdfed_f32x8 cdf = 0.5f * (1.0f + erf_x);
    sdfed_f32x8 g = d * (cdf + x * (0.3989422804014327f * e));
    sdfed_store_f32x8(dinp, &g, count);
}

/* the loops over lanes, compiled for the widest vectors the CPU runs (static: clang makes clones of a
 * function only for the calls it sees) */
SDFED_WIDEST_VECTORS static void activation_rows(float *out, const float *inp, int n, int activation) {
#if defined(SDFED_LAYERS_WIDE)
    if (activation == SDFED_ACT_QUICK_GELU && sdfed_layers_wide()) {
        sdfed_quick_gelu_wide(out, inp, n);
        return;
    }
#endif
    if (activation == SDFED_ACT_GELU)
        SDFED_EACH_F32X8(n, i, count, gelu_lanes(out + i, inp + i, count));
    else
        SDFED_EACH_F32X8(n, i, count, quick_gelu_lanes(out + i, inp + i, count));
}

SDFED_WIDEST_VECTORS static void activation_backward_rows(float *dinp, const float *dout, const float *inp, int n,
                                                          int activation) {
    if (activation == SDFED_ACT_GELU)
        SDFED_EACH_F32X8(n, i, count, gelu_backward_lanes(dinp + i, dout + i, inp + i, count));
    else
        SDFED_EACH_F32X8(n, i, count, quick_gelu_backward_lanes(dinp + i, dout + i, inp + i, count));
}

void sdfed_activation_forward(float *out, const float *inp, int n, int activation) {
    activation_rows(out, inp, n, activation);
}

void sdfed_activation_backward(float *dinp, const float *dout, const float *inp, int n, int activation) {
    activation_backward_rows(dinp, dout, inp, n, activation);
}

/* out += inp in vectors (static: see activation_rows) */
SDFED_WIDEST_VECTORS static void add_in_vectors(float *out, const float *inp, int n) {
    SDFED_EACH_F32X8(n, i, count, {
        sdfed_f32x8 o, v;
        sdfed_load_f32x8(&o, out + i, count, 0.0f);
        sdfed_load_f32x8(&v, inp + i, count, 0.0f);
        o += v;
        sdfed_store_f32x8(out + i, &o, count);
    });
}

void sdfed_residual_add(float *out, const float *inp, int n) { add_in_vectors(out, inp, n); }

size_t sdfed_attention_size(const sdfed_attn_span *spans, size_t *att_offset, int n_spans, int heads) {
    size_t total = 0;
    for (int s = 0; s < n_spans; s++) {
        att_offset[s] = total;
        total += (size_t)heads * spans[s].nq * (spans[s].nc + spans[s].nq);
    }
    return total;
}

/* The softmax of a row's first `visible` floats, in place: the largest,
 * then e^(x - max) summed in eight sums lane by lane and the lanes in
 * order, then each scaled by 1 / sum; eight floats a step (the lanes past
 * the row are -inf: they change no maximum, and e^-inf = 0 adds nothing
 * to the sum); inlined into masked_softmax's clones */
static inline void softmax_row(float *row, int visible) {
    sdfed_f32x8 maxes = {0}, sums = {0};
    maxes -= INFINITY;
    SDFED_EACH_F32X8(visible, j, count, {
        sdfed_f32x8 v;
        sdfed_load_f32x8(&v, row + j, count, -INFINITY);
        maxes = SDFED_SELECT_F32X8(v > maxes, v, maxes);
    });
    float max = -INFINITY; /* the largest in any order */
    for (int l = 0; l < 8; l++) max = maxes[l] > max ? maxes[l] : max;
    SDFED_EACH_F32X8(visible, j, count, {
        sdfed_f32x8 v;
        sdfed_load_f32x8(&v, row + j, count, -INFINITY);
        v = v - max;
        sdfed_exp_f32x8(&v);
        sums += v;
        sdfed_store_f32x8(row + j, &v, count);
    });
    float inv = 1.0f / sdfed_sum_f32x8(&sums);
    SDFED_EACH_F32X8(visible, j, count, {
        sdfed_f32x8 v;
        sdfed_load_f32x8(&v, row + j, count, 0.0f);
        v = v * inv;
        sdfed_store_f32x8(row + j, &v, count);
    });
}

/* Softmax of each row of S (nq, ld) over its first nc + visible columns,
 * where a causal row i sees its own span's columns up to i (the rest of
 * the row 0), in sixteen-float vectors where layers_wide.h's run. */
SDFED_WIDEST_VECTORS static void masked_softmax(float *S, int nq, int nc, int ld, int causal) {
#if defined(SDFED_LAYERS_WIDE)
    int wide = sdfed_layers_wide();
#endif
    for (int i = 0; i < nq; i++) {
        float *row = S + (size_t)i * ld;
        int visible = causal ? nc + i + 1 : ld;
#if defined(SDFED_LAYERS_WIDE)
        if (wide)
            sdfed_softmax_row_wide(row, visible);
        else
#endif
            softmax_row(row, visible);
        for (int j = visible; j < ld; j++) row[j] = 0.0f;
    }
}

/* Attention's blocks, items s * heads + h, a range of them per thread:
 * each one's scores, their softmax and its products, whose outputs (its
 * block of att, its head's columns of out) no other item writes. */
typedef struct attention_task {
    const sdfed_kernels *k;
    float *out, *att;
    const float *qkv;
    const sdfed_attn_span *spans;
    const size_t *att_offset;
    int C, heads, causal;
} attention_task;

static void attention_blocks(void *ctx, int begin, int end) {
    const attention_task *t = ctx;
    const sdfed_kernels *k = t->k;
    int C = t->C, hd = C / t->heads, ld_qkv = 3 * C;
    float scale = 1.0f / sqrtf((float)hd);
    for (int item = begin; item < end; item++) {
        const sdfed_attn_span *sp = &t->spans[item / t->heads];
        int h = item % t->heads, ld = sp->nc + sp->nq;
        const float *q = t->qkv + (size_t)sp->q0 * ld_qkv + h * hd;
        const float *k_own = q + C, *k_ctx = t->qkv + (size_t)sp->c0 * ld_qkv + C + h * hd;
        const float *v_own = k_own + C, *v_ctx = k_ctx + C;
        float *S = t->att + t->att_offset[item / t->heads] + (size_t)h * sp->nq * ld;
        float *o = t->out + (size_t)sp->q0 * C + h * hd;
        if (sp->nc > 0) k->gemm(0, 1, sp->nq, sp->nc, hd, scale, q, ld_qkv, k_ctx, ld_qkv, 0.0f, S, ld);
        k->gemm(0, 1, sp->nq, sp->nq, hd, scale, q, ld_qkv, k_own, ld_qkv, 0.0f, S + sp->nc, ld);
        masked_softmax(S, sp->nq, sp->nc, ld, t->causal);
        if (sp->nc > 0) k->gemm(0, 0, sp->nq, hd, sp->nc, 1.0f, S, ld, v_ctx, ld_qkv, 0.0f, o, C);
        k->gemm(0, 0, sp->nq, hd, sp->nq, 1.0f, S + sp->nc, ld, v_own, ld_qkv, sp->nc > 0 ? 1.0f : 0.0f, o, C);
    }
}

/* multiply-adds of a linear layer that an exponential and its softmax
 * steps cost as much as, about: what a block's softmax adds to its work */
#define SOFTMAX_WORK_PER_VALUE 300.0

void sdfed_attention_forward(const sdfed_kernels *k, float *out, float *att, const float *qkv,
                             const sdfed_attn_span *spans, const size_t *att_offset, int n_spans, int C, int heads,
                             int causal) {
    // qkv is (N, 3C), out is (N, C); per span and head, S = softmax(q k^T / sqrt(hd)) and o = S v,
    // the blocks split over the kernels' threads
    attention_task task = {.k = k,
                           .out = out,
                           .att = att,
                           .qkv = qkv,
                           .spans = spans,
                           .att_offset = att_offset,
                           .C = C,
                           .heads = heads,
                           .causal = causal};
    double values = 0.0; /* of one head's blocks */
    for (int s = 0; s < n_spans; s++) values += (double)spans[s].nq * (spans[s].nc + spans[s].nq);
    double work = values / n_spans * (SOFTMAX_WORK_PER_VALUE + 2.0 * (C / heads));
    sdfed_kernels_parallel(k, n_spans * heads, work, attention_blocks, &task);
}

void sdfed_attention_backward(const sdfed_kernels *k, float *dqkv, const float *dout, const float *qkv,
                              const float *att, const sdfed_attn_span *spans, const size_t *att_offset, int n_spans,
                              int C, int heads, float *scratch) {
    // per span and head, with o = P v and P = softmax(S), S = scale q k^T:
    // dP = do v^T, dv += P^T do, dS = P * (dP - rowsum(dP * P)), dq = scale dS k, dk += scale dS^T q
    int hd = C / heads;
    float scale = 1.0f / sqrtf((float)hd);
    int ld_qkv = 3 * C;
    for (int s = 0; s < n_spans; s++) {
        const sdfed_attn_span *sp = &spans[s];
        int ld = sp->nc + sp->nq;
        for (int h = 0; h < heads; h++) {
            size_t own = (size_t)sp->q0 * ld_qkv + h * hd, ctx = (size_t)sp->c0 * ld_qkv + h * hd;
            const float *q = qkv + own, *k_own = q + C, *v_own = q + 2 * C;
            const float *k_ctx = qkv + ctx + C, *v_ctx = k_ctx + C;
            float *dq = dqkv + own, *dk_own = dq + C, *dv_own = dq + 2 * C;
            float *dk_ctx = dqkv + ctx + C, *dv_ctx = dk_ctx + C;
            const float *P = att + att_offset[s] + (size_t)h * sp->nq * ld;
            const float *dO = dout + (size_t)sp->q0 * C + h * hd;
            float *dS = scratch;
            if (sp->nc > 0) {
                k->gemm(0, 1, sp->nq, sp->nc, hd, 1.0f, dO, C, v_ctx, ld_qkv, 0.0f, dS, ld);
                k->gemm(1, 0, sp->nc, hd, sp->nq, 1.0f, P, ld, dO, C, 1.0f, dv_ctx, ld_qkv);
            }
            k->gemm(0, 1, sp->nq, sp->nq, hd, 1.0f, dO, C, v_own, ld_qkv, 0.0f, dS + sp->nc, ld);
            k->gemm(1, 0, sp->nq, hd, sp->nq, 1.0f, P + sp->nc, ld, dO, C, 1.0f, dv_own, ld_qkv);
            for (int i = 0; i < sp->nq; i++) {
                const float *p_i = P + (size_t)i * ld;
                float *ds_i = dS + (size_t)i * ld;
                float dot = 0.0f;
                for (int j = 0; j < ld; j++) dot += p_i[j] * ds_i[j];
                /* masked entries have p = 0, so their gradient is 0 */
                for (int j = 0; j < ld; j++) ds_i[j] = p_i[j] * (ds_i[j] - dot) * scale;
            }
            if (sp->nc > 0) {
                k->gemm(0, 0, sp->nq, hd, sp->nc, 1.0f, dS, ld, k_ctx, ld_qkv, 1.0f, dq, ld_qkv);
                k->gemm(1, 0, sp->nc, hd, sp->nq, 1.0f, dS, ld, q, ld_qkv, 1.0f, dk_ctx, ld_qkv);
            }
            k->gemm(0, 0, sp->nq, hd, sp->nq, 1.0f, dS + sp->nc, ld, k_own, ld_qkv, 1.0f, dq, ld_qkv);
            k->gemm(1, 0, sp->nq, hd, sp->nq, 1.0f, dS + sp->nc, ld, q, ld_qkv, 1.0f, dk_own, ld_qkv);
        }
    }
}
