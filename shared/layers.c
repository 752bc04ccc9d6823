/* Forward passes of LayerNorm, the MLP activation, residuals and attention. */
#include "layers.h"

#include <math.h>

#include "clip_model.h"

void sdfed_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                             const float *bias, int n, int C, float eps) {
    // inp and out are (n, C), weight and bias are (C), mean and rstd are (n)
    for (int i = 0; i < n; i++) {
        const float *x = inp + (size_t)i * C;
        float *o = out + (size_t)i * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= (float)C;
        float v = 0.0f;
        for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        if (mean) mean[i] = m;
        if (rstd) rstd[i] = s;
    }
}

void sdfed_activation_forward(float *out, const float *inp, int n, int activation) {
    if (activation == SDFED_ACT_GELU) {
        for (int i = 0; i < n; i++) out[i] = 0.5f * inp[i] * (1.0f + erff(inp[i] * 0.70710678118654752f));
    } else {
        /* QuickGELU: x * sigmoid(1.702 x) */
        for (int i = 0; i < n; i++) out[i] = inp[i] / (1.0f + expf(-1.702f * inp[i]));
    }
}

void sdfed_residual_add(float *out, const float *inp, int n) {
    for (int i = 0; i < n; i++) out[i] += inp[i];
}

size_t sdfed_attention_size(const sdfed_attn_span *spans, size_t *att_offset, int n_spans, int heads) {
    size_t total = 0;
    for (int s = 0; s < n_spans; s++) {
        att_offset[s] = total;
        total += (size_t)heads * spans[s].nq * (spans[s].nc + spans[s].nq);
    }
    return total;
}

/* Softmax of each row of S (nq, ld) over its first nc + visible columns,
 * where a causal row i sees its own span's columns up to i. */
static void masked_softmax(float *S, int nq, int nc, int ld, int causal) {
    for (int i = 0; i < nq; i++) {
        float *row = S + (size_t)i * ld;
        int visible = causal ? nc + i + 1 : ld;
        float maxv = -INFINITY;
        for (int j = 0; j < visible; j++) maxv = row[j] > maxv ? row[j] : maxv;
        float sum = 0.0f;
        for (int j = 0; j < visible; j++) {
            row[j] = expf(row[j] - maxv);
            sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < visible; j++) row[j] *= inv;
        for (int j = visible; j < ld; j++) row[j] = 0.0f;
    }
}

void sdfed_attention_forward(const sdfed_kernels *k, float *out, float *att, const float *qkv,
                             const sdfed_attn_span *spans, const size_t *att_offset, int n_spans, int C, int heads,
                             int causal) {
    // qkv is (N, 3C), out is (N, C); per span and head, S = softmax(q k^T / sqrt(hd)) and o = S v
    int hd = C / heads;
    float scale = 1.0f / sqrtf((float)hd);
    int ld_qkv = 3 * C;
    for (int s = 0; s < n_spans; s++) {
        const sdfed_attn_span *sp = &spans[s];
        int ld = sp->nc + sp->nq;
        for (int h = 0; h < heads; h++) {
            const float *q = qkv + (size_t)sp->q0 * ld_qkv + h * hd;
            const float *k_own = q + C, *v_own = q + 2 * C;
            const float *k_ctx = qkv + (size_t)sp->c0 * ld_qkv + C + h * hd;
            const float *v_ctx = k_ctx + C;
            float *S = att + att_offset[s] + (size_t)h * sp->nq * ld;
            float *o = out + (size_t)sp->q0 * C + h * hd;
            if (sp->nc > 0) k->gemm(0, 1, sp->nq, sp->nc, hd, scale, q, ld_qkv, k_ctx, ld_qkv, 0.0f, S, ld);
            k->gemm(0, 1, sp->nq, sp->nq, hd, scale, q, ld_qkv, k_own, ld_qkv, 0.0f, S + sp->nc, ld);
            masked_softmax(S, sp->nq, sp->nc, ld, causal);
            if (sp->nc > 0) k->gemm(0, 0, sp->nq, hd, sp->nc, 1.0f, S, ld, v_ctx, ld_qkv, 0.0f, o, C);
            k->gemm(0, 0, sp->nq, hd, sp->nq, 1.0f, S + sp->nc, ld, v_own, ld_qkv, sp->nc > 0 ? 1.0f : 0.0f, o, C);
        }
    }
}
